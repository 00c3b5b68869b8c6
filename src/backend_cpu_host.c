/* The CPU backend's dealings with the machine (backend.h): the OpenBLAS
 * kernels this CPU should get, the threads a rank computes on, and whether
 * the CPU multiplies bf16 itself. */
#include "backend.h"
#include "backend_cpu_dnnl.h"
#include "backend_cpu_seq.h"

#include <cblas.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void backend_cpu_pick_kernels(char **argv)
{
#if defined(__x86_64__) && defined(__GNUC__)
	if (getenv("OPENBLAS_CORETYPE") || strcmp(openblas_get_corename(), "Prescott"))
		return;
	/* /proc/self/exe must be this program, not a loader running it
	 * (ld.so ./mtrain, qemu-user, valgrind) */
	char self[4096], named[4096];
	if (!argv[0] || (strchr(argv[0], '/') && (!realpath("/proc/self/exe", self) ||
						   !realpath(argv[0], named) || strcmp(self, named))))
		return; /* (a name without '/' was found on PATH: it is this) */
	__builtin_cpu_init();
	int avx512 = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
		     __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
	const char *core = avx512 ? "SkylakeX"
			   : __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")
				   ? "Haswell"
				   : NULL;
	if (!core)
		return; /* a CPU as old as its Prescott fallback */
	/* OpenBLAS picks its kernels when it is loaded: only a new start
	 * with the variable set takes it (the same process, so mpirun and
	 * Slurm see nothing). */
	if (setenv("OPENBLAS_CORETYPE", core, 1))
		return; /* no variable, no new start: it would start again */
	execv("/proc/self/exe", argv);
	unsetenv("OPENBLAS_CORETYPE"); /* no exec: carry on with Prescott's */
#else
	(void)argv;
#endif
}

int backend_cpu_threads(int n, int local_size)
{
	if (n <= 0) {
		cpu_set_t set;
		long online = sysconf(_SC_NPROCESSORS_ONLN);
		n = sched_getaffinity(0, sizeof(set), &set) ? 1 : CPU_COUNT(&set);
		if (n >= online && local_size > 1) /* not bound: the node's cores shared */
			n /= local_size;
		n = n < 1 ? 1 : n;
	}
	backend_cpu();
	openblas_set_num_threads(n);
	cpu_dnnl_threads(n);
	cpu_split_set_threads(n);
	return n;
}

/* oneDNN's answer: the kernels that would run (its ONEDNN_MAX_CPU_ISA
 * included). */
int backend_cpu_has_bf16(void) { return cpu_dnnl_has_bf16(); }
