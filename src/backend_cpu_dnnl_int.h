/* What the files that speak oneDNN share (backend_cpu_dnnl*.c: its 2.x
 * API, the *_desc_init calls gone in 3.x, is spoken there and nowhere
 * else, so that moving to 3.x is those files): the engine and stream, and
 * the few calls each kernel's primitives are made and run with. Defined in
 * backend_cpu_dnnl.c; the kernels in backend_cpu_dnnl_conv.c, _bn.c and
 * _mm.c. */
#pragma once
#include "check.h"

#include <oneapi/dnnl/dnnl.h>

#define DNNL_CHECK(call)                                                       \
	do {                                                                   \
		dnnl_status_t dnnl_check_rc_ = (call);                         \
		if (dnnl_check_rc_ != dnnl_success)                            \
			check_fail("oneDNN", #call, dn_status_text(dnnl_check_rc_), \
				   __FILE__, __LINE__);                        \
	} while (0)

const char *dn_status_text(dnnl_status_t s);
/* The CPU engine, made on first use (with its stream and threads). */
dnnl_engine_t dn_engine(void);
/* Memory of layout md: allocated by oneDNN when own, else a handle to set. */
dnnl_memory_t dn_mem(const dnnl_memory_desc_t *md, int own);
/* A reorder from layout a to b (a conversion too); NULL when they are one. */
dnnl_primitive_t dn_reorder(const dnnl_memory_desc_t *a, const dnnl_memory_desc_t *b);
/* The primitive of an op's descriptor (hint: the forward's, for a
 * backward); its primitive descriptor in *pd_out when asked for. */
dnnl_primitive_t dn_make(const_dnnl_op_desc_t desc, const_dnnl_primitive_attr_t attr,
			 const_dnnl_primitive_desc_t hint, dnnl_primitive_desc_t *pd_out);
void dn_set(dnnl_memory_t m, const void *p);
void dn_run(dnnl_primitive_t p, int n, const dnnl_exec_arg_t *args);
void dn_destroy(dnnl_primitive_t p);
void dn_drop(dnnl_memory_t m);
/* Appends p to a growing array of n (capacity *cap) pointers; p. */
void *dn_keep(void ***array, int *n, int *cap, void *p);
/* release (a file's primitives and buffers) runs at cpu_dnnl_release;
 * each file registers its own with its first shape. */
void dn_on_release(void (*release)(void));
