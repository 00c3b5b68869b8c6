/* Prints how many GPUs this process sees, after opening the first as the
 * trainer would: exits 77 (CTest's skip) when there is none, 1 when one is
 * there but cannot be used, so GPU shell tests skip only for a real reason. */
#include "gpu.h"

int main(void)
{
	gpu_or_skip("gpu_probe", 0, 1);
	printf("%d\n", backend_cuda_devices());
	return 0;
}
