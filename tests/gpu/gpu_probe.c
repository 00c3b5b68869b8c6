/* Prints how many GPUs this process sees; exits 77 (CTest's skip) when none,
 * so the GPU shell tests skip cleanly on machines without one. */
#include "backend.h"

#include <stdio.h>

int main(void)
{
	int n = backend_cuda_devices();
	printf("%d\n", n);
	return n > 0 ? 0 : 77;
}
