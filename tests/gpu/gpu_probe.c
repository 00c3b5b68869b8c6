/* Prints how many GPUs this process sees, after opening the first as the
 * trainer would: exits 77 (CTest's skip) with "gpu_probe: SKIPPED: why" on
 * stdout when this machine has none, 1 when it has one that this build or
 * this process cannot use (gpu.h), so GPU shell tests skip only for a real
 * reason, and say it. */
#include "gpu.h"

int main(void)
{
	gpu_or_skip("gpu_probe", 0, 1);
	printf("%d\n", backend_cuda_devices());
	return 0;
}
