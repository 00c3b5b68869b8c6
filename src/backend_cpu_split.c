/* How many threads a CPU rank computes on (backend_cpu_threads sets it;
 * backend.h's backend_cpu_thread_count reads it) and how CPU_SPLIT
 * (backend_cpu_seq.h) shares a loop out over them. Apart from the rest of
 * the backend, so that every file of it can ask without a circle. */
#include "backend.h"
#include "backend_cpu_seq.h"

static int threads = 1;

int backend_cpu_thread_count(void) { return threads; }

void cpu_split_set_threads(int n) { threads = n < 1 ? 1 : n; }

int cpu_split_parts(size_t n, size_t grain)
{
	size_t parts = grain ? n / grain : n;
	if (threads < 2 || parts < 2)
		return 1;
	return parts < (size_t)threads ? (int)parts : threads;
}
