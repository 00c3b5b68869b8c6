/* oneDNN's engine and the calls the files that speak oneDNN share
 * (backend_cpu_dnnl_int.h), and what the CPU backend asks of oneDNN as a
 * whole (backend_cpu_dnnl.h): its threads, its instruction set, the
 * release of every file's primitives. One OpenMP thread unless
 * backend_cpu_threads sets more, as for OpenBLAS. */
#include "backend_cpu_dnnl.h"
#include "backend_cpu_dnnl_int.h"

#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *dn_status_text(dnnl_status_t s)
{
	switch (s) {
	case dnnl_out_of_memory: return "out of memory";
	case dnnl_invalid_arguments: return "invalid arguments";
	case dnnl_unimplemented: return "unimplemented";
	default: return "error";
	}
}

static int threads = 1;

static struct {
	dnnl_engine_t engine;
	dnnl_stream_t stream;
	void (*release[8])(void); /* each file's, registered with its first shape */
	int n_release;
} g;

dnnl_engine_t dn_engine(void)
{
	if (!g.engine) {
		DNNL_CHECK(dnnl_engine_create(&g.engine, dnnl_cpu, 0));
		DNNL_CHECK(dnnl_stream_create(&g.stream, g.engine, dnnl_stream_default_flags));
		omp_set_num_threads(threads);
	}
	return g.engine;
}

void cpu_dnnl_threads(int n)
{
	threads = n;
	omp_set_num_threads(n);
}

dnnl_memory_t dn_mem(const dnnl_memory_desc_t *md, int own)
{
	dnnl_memory_t m;
	DNNL_CHECK(dnnl_memory_create(&m, md, dn_engine(),
				      own ? DNNL_MEMORY_ALLOCATE : DNNL_MEMORY_NONE));
	return m;
}

dnnl_primitive_t dn_reorder(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b)
{
	if (dnnl_memory_desc_equal(a, b))
		return NULL;
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t p;
	DNNL_CHECK(dnnl_reorder_primitive_desc_create(&pd, a, dn_engine(), b, dn_engine(), NULL));
	DNNL_CHECK(dnnl_primitive_create(&p, pd));
	DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
	return p;
}

dnnl_primitive_t dn_make(const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr,
			 const_dnnl_primitive_desc_t hint, dnnl_primitive_desc_t *pd_out)
{
	dnnl_primitive_desc_t pd;
	dnnl_primitive_t p;
	DNNL_CHECK(dnnl_primitive_desc_create(&pd, desc, attr, dn_engine(), hint));
	DNNL_CHECK(dnnl_primitive_create(&p, pd));
	if (pd_out)
		*pd_out = pd;
	else
		DNNL_CHECK(dnnl_primitive_desc_destroy(pd));
	return p;
}

void dn_set(dnnl_memory_t m, const void *p)
{
	DNNL_CHECK(dnnl_memory_set_data_handle(m, (void *)p));
}

void dn_run(dnnl_primitive_t p, int n, const dnnl_exec_arg_t *args)
{
	DNNL_CHECK(dnnl_primitive_execute(p, g.stream, n, args));
}

void dn_destroy(dnnl_primitive_t p)
{
	if (p)
		dnnl_primitive_destroy(p);
}

void dn_drop(dnnl_memory_t m)
{
	if (m)
		dnnl_memory_destroy(m);
}

void *dn_keep(void ***array, int *n, int *cap, void *p)
{
	if (*n == *cap) {
		*cap = *cap ? 2 * *cap : 16;
		*array = realloc(*array, (size_t)*cap * sizeof(**array));
		ALLOC_CHECK(*array);
	}
	return (*array)[(*n)++] = p;
}

int cpu_dnnl_has_bf16(void)
{
	static int has = -1;
	if (has < 0) { /* the ISAs are sets of bits, each holding the ones below */
		unsigned isa = dnnl_get_effective_cpu_isa(), bf16 = dnnl_cpu_isa_avx512_core_bf16;
		has = (isa & bf16) == bf16;
	}
	return has;
}

int cpu_dnnl_sgemm_wins(void)
{
	static int wins = -1;
	if (wins < 0) {
		unsigned isa = dnnl_get_effective_cpu_isa(), avx512 = dnnl_cpu_isa_avx512_core;
		wins = (isa & avx512) == avx512;
	}
	return wins;
}

void dn_on_release(void (*release)(void))
{
	for (int i = 0; i < g.n_release; i++)
		if (g.release[i] == release)
			return;
	if (g.n_release == (int)(sizeof(g.release) / sizeof(g.release[0])))
		check_fail("oneDNN", "dn_on_release", "more files than places", __FILE__, __LINE__);
	g.release[g.n_release++] = release;
}

const char *cpu_dnnl_kernels(void)
{
	static char text[64];
	if (text[0])
		return text;
	const dnnl_version_t *v = dnnl_version();
	const char *isa;
	switch (dnnl_get_effective_cpu_isa()) {
	case dnnl_cpu_isa_sse41: isa = "sse4.1"; break;
	case dnnl_cpu_isa_avx: isa = "avx"; break;
	case dnnl_cpu_isa_avx2: isa = "avx2"; break;
	case dnnl_cpu_isa_avx2_vnni: isa = "avx2 vnni"; break;
	case dnnl_cpu_isa_avx512_core: isa = "avx512"; break;
	case dnnl_cpu_isa_avx512_core_vnni: isa = "avx512 vnni"; break;
	case dnnl_cpu_isa_avx512_core_bf16: isa = "avx512 bf16"; break;
	case dnnl_cpu_isa_avx512_core_amx: isa = "avx512 amx"; break;
	default: isa = "generic"; break;
	}
	snprintf(text, sizeof(text), "oneDNN %d.%d.%d, %s", v->major, v->minor, v->patch, isa);
	return text;
}

void cpu_dnnl_release(void)
{
	for (int i = 0; i < g.n_release; i++)
		g.release[i]();
	if (g.stream)
		dnnl_stream_destroy(g.stream);
	if (g.engine)
		dnnl_engine_destroy(g.engine);
	memset(&g, 0, sizeof(g));
}
