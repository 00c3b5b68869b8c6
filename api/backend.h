/* The backend interface: every tensor operation the model, optimizer, EMA and
 * training loop need, as a table of function pointers. backend_cpu() is the
 * reference; a CUDA backend fills the same table for device memory. Pointers
 * passed to the ops are "backend memory" (host for the CPU, device for CUDA);
 * only copy_in/copy_out cross between host and backend memory.
 *
 * Shapes use these letters: R rows of a batch, I layer inputs (fan_in),
 * O layer outputs (fan_out), C classes, P parameter count. All matrices are
 * row-major float32. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "mathfn.h"
#include "mathfn_seq.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where a dropout mask comes from: the run's seed, the global step, the
 * first of these rows in the global batch, and the rate. */
struct dropout_key {
	uint64_t seed;
	uint64_t step;
	uint64_t row0;
	float rate;
};

/* What a backend's pointers are: host memory, or CUDA device memory. */
enum backend_memory { BACKEND_HOST, BACKEND_CUDA };

/* A batch of products over two axes, attention's rows and heads: floats
 * from one row's operand to the next (sa, sb, sc) and from one head's to
 * the next (ha, hb, hc). */
struct batch2 {
	int rows, heads;
	size_t sa, sb, sc;
	size_t ha, hb, hc;
};

/* Self-attention's shape for the fused ops: rows of T tokens, H heads of
 * K values each (a row's width D = H K), the scores' scale, whether the
 * causal mask applies, and dropout on the probabilities (drop.rate 0:
 * none), keyed as the dropout op keys a batch of rows of H T T units. */
struct attn_dims {
	int rows, T, H, K;
	float scale;
	int causal;
	struct dropout_key drop;
};

/* The floats an operand of rows x cols (row-major, ld apart) spans over a
 * batch2, from its first to its last: s from one row of the batch to the
 * next, h from one head to the next (what a copy of it must hold). */
static inline size_t batch2_span(int rows_of_batch, int heads, size_t s, size_t h, int rows,
				 int cols, int ld)
{
	return (size_t)(rows_of_batch - 1) * s + (size_t)(heads - 1) * h +
	       (size_t)(rows - 1) * (size_t)ld + (size_t)cols;
}

/* Every op takes the backend itself first: its context (a CUDA stream and
 * cuBLAS handle, say) travels with it, never in a global. */
struct backend {
	const char *name;           /* "cpu", "cuda" */
	enum backend_memory memory; /* what the pointers below are */
	void *ctx;                  /* the implementation's own state */
	size_t cols_budget;         /* floats of conv2d's im2col windows one product
				     * takes at most (a whole image's, if more):
				     * the CPU's fit its cache, so that the product
				     * reads them from there; 0: the whole batch's */

	/* Memory. alloc returns zeroed backend memory or aborts; free(NULL) is a
	 * no-op. copy_in/out move bytes between host and backend memory (src
	 * may be reused as soon as copy_in returns; copy_out returns with the
	 * bytes in place); copy moves bytes within backend memory. */
	void *(*alloc)(const struct backend *be, size_t bytes);
	void (*free)(const struct backend *be, void *p);
	void (*copy_in)(const struct backend *be, void *dst, const void *src_host, size_t bytes);
	void (*copy_out)(const struct backend *be, void *dst_host, const void *src, size_t bytes);
	void (*copy)(const struct backend *be, void *dst, const void *src, size_t bytes);
	/* Host memory the backend copies from fastest (pinned for CUDA),
	 * zeroed; free_host(NULL) is a no-op. */
	void *(*alloc_host)(const struct backend *be, size_t bytes);
	void (*free_host)(const struct backend *be, void *p);
	/* copy_in from alloc_host memory that may still be under way on
	 * return: src must stay unchanged until the backend has done the ops
	 * queued so far (a synchronize, a copy_out or a collective's wait). */
	void (*copy_in_async)(const struct backend *be, void *dst, const void *src_host,
			      size_t bytes);

	/* c (M,N) = op(a) (M,K) @ op(b) (K,N) + beta * c, where op transposes
	 * when ta/tb is set (a is then stored (K,M), b (N,K)). */
	void (*matmul)(const struct backend *be, float *c, const float *a, const float *b, int m,
		       int n, int k, int ta, int tb, float beta);
	/* z (R,O) += bias (O); then a = act(z) unless a is NULL. */
	void (*bias_act)(const struct backend *be, float *a, float *z, const float *bias,
			 int rows, int cols, enum act_kind act);
	/* dz (n) = act'(z) * da, elementwise; dz may alias da. */
	void (*act_backward)(const struct backend *be, float *dz, const float *da, const float *z,
			     size_t n, enum act_kind act);
	/* a (n) = act(z), elementwise; a may alias z. */
	void (*act_forward)(const struct backend *be, float *a, const float *z, size_t n,
			    enum act_kind act);
	/* y (R,O) = x * dropout_scale(seed, step, row0 + r, j, rate) (mathfn.h)
	 * for row r and unit j: forward and backward alike (the same key gives
	 * the same mask); y may alias x. */
	void (*dropout)(const struct backend *be, float *y, const float *x, int rows, int cols,
			const struct dropout_key *key);
	/* cols (R*oh*ow, kh*kw*c) = the windows of x (R, h, w, c): win_im2col. */
	void (*im2col)(const struct backend *be, float *cols, const float *x, int rows,
		       const struct window *w);
	/* dx (R, h, w, c) = the sums of cols' entries over the windows that
	 * took each value: win_col2im (overwrites dx). */
	void (*col2im)(const struct backend *be, float *dx, const float *cols, int rows,
		       const struct window *w);
	/* conv2d in kernels of the backend's own, where it has them (NULL: the
	 * layer composes im2col, matmul and col2im). x (R, h, w, c), kernel
	 * [kh, kw, c, f] (Keras' layout), y (R, oh, ow, f), as im2col then a
	 * product computes them, to rounding. conv: y = the windows of x
	 * times kernel, plus bias (f). conv_backward_data: dx (R, h, w, c) =
	 * dy's windows folded back (overwritten). conv_backward_weights:
	 * dkernel and dbias (f), summed over the rows (overwritten). A
	 * conv_backward_data right after conv_backward_weights of the same dy,
	 * unchanged in between (as the conv2d layer calls them), may reuse
	 * what the first made of dy (the CPU's bf16 copy). */
	void (*conv)(const struct backend *be, float *y, const float *x, const float *kernel,
		     const float *bias, int rows, const struct window *w, int filters);
	void (*conv_backward_data)(const struct backend *be, float *dx, const float *dy,
				   const float *kernel, int rows, const struct window *w,
				   int filters);
	void (*conv_backward_weights)(const struct backend *be, float *dkernel, float *dbias,
				      const float *x, const float *dy, int rows,
				      const struct window *w, int filters);
	/* What computes conv (the start line names it), e.g. "oneDNN 2.6.3
	 * (avx2)"; NULL where conv is NULL. */
	const char *(*conv_kernels)(void);
	/* What computes matmul (dense's products), for the start line; NULL
	 * where there is nothing to say. */
	const char *(*matmul_kernels)(void);
	/* y (R, oh, ow, c) = each window's max (max) or mean of x: win_pool. */
	void (*pool)(const struct backend *be, float *y, const float *x, int rows,
		     const struct window *w, int max);
	/* dx (R, h, w, c) from dy (R, oh, ow, c) and the pool's input x:
	 * win_pool_bwd (overwrites dx). */
	void (*pool_backward)(const struct backend *be, float *dx, const float *dy, const float *x,
			      int rows, const struct window *w, int max);
	/* Batch normalization over the last axis of x (R,C) (R: every
	 * position of every row, C channels), mathfn.h's bn_* formulas.
	 * col_moment: m (C) = scale * sum over rows of x, or with center
	 * (C) scale * sum of (x - center)^2. */
	void (*col_moment)(const struct backend *be, float *m, const float *x, const float *center,
			   int rows, int cols, float scale);
	/* y (R,C) = gamma * (x - mean) / sqrt(var + eps) + beta; y may alias x.
	 * An activation fused after it: a (R,C) = act(y) in the same pass
	 * unless a is NULL; then y may be NULL (only a written). */
	void (*bn_forward)(const struct backend *be, float *y, const float *x, const float *mean,
			   const float *var, const float *gamma, const float *beta, int rows,
			   int cols, float eps, float *a, enum act_kind act);
	/* Batch normalization's forward in training, the batch's own
	 * statistics, in kernels of the backend's own where it has them (NULL:
	 * col_moment twice, then bn_forward): mean and var (C) = each
	 * channel's over the rows of x (R,C), the variance biased; then y and
	 * a as bn_forward writes them. */
	void (*bn_train_forward)(const struct backend *be, float *y, float *mean, float *var,
				 const float *x, const float *gamma, const float *beta, int rows,
				 int cols, float eps, float *a, enum act_kind act);
	/* sums (2C) = {sum over rows of dy * xhat (dgamma), of dy (dbeta)}. With
	 * z (R,C) not NULL, dy is the gradient of act(z), z bn_forward's y, and
	 * act'(z) * dy stands for dy (an activation fused after it); for relu
	 * z may be act(y) instead (the same sign). */
	void (*bn_backward_sums)(const struct backend *be, float *sums, const float *dy,
				 const float *x, const float *mean, const float *var, int rows,
				 int cols, float eps, const float *z, enum act_kind act);
	/* dx (R,C) = bn_dx with sums (2C) taken over inv_n's 1 / N values, dy as
	 * bn_backward_sums takes it (z, act); dx may alias dy. */
	void (*bn_backward)(const struct backend *be, float *dx, const float *dy, const float *x,
			    const float *mean, const float *var, const float *gamma,
			    const float *sums, int rows, int cols, float eps, float inv_n,
			    const float *z, enum act_kind act);
	/* y (n) = a + b, elementwise; y may alias a or b (an add layer, and
	 * the gradients a layer's input gets from several layers); out (n) =
	 * act(y) in the same pass unless out is NULL (an activation fused
	 * after it). */
	void (*add)(const struct backend *be, float *y, const float *a, const float *b, size_t n,
		    float *out, enum act_kind act);
	/* x (n) *= alpha. */
	void (*scale)(const struct backend *be, float *x, size_t n, float alpha);
	/* dbias (O) = sum over rows of dz (R,O). */
	void (*bias_grad)(const struct backend *be, float *dbias, const float *dz, int rows,
			  int cols);
	/* The attention's products, one per (row, head): for b in [0, batch),
	 * c_b (M,N) = op(a_b) (M,K) @ op(b_b) (K,N) + beta * c_b, where
	 * a_b = a + b * sa, b_b = b + b * sb, c_b = c + b * sc, each a
	 * row-major matrix whose rows lie lda, ldb, ldc floats apart (a head's
	 * columns of a row's [T, D] tokens: ld D). */
	void (*matmul_batched)(const struct backend *be, float *c, const float *a, const float *b,
			       int m, int n, int k, int ta, int tb, float beta, int batch, int lda,
			       int ldb, int ldc, size_t sa, size_t sb, size_t sc);
	/* matmul_batched over rows and heads at once: for r < rows, h < heads,
	 * c + r sc + h hc = op(a + r sa + h ha) @ op(b + r sb + h hb) + beta
	 * c, the same results as a call of matmul_batched a head. NULL: the
	 * attention layer makes those calls. */
	void (*matmul_heads)(const struct backend *be, float *c, const float *a, const float *b,
			     int m, int n, int k, int ta, int tb, float beta, int lda, int ldb,
			     int ldc, const struct batch2 *bt);
	/* Attention's heads fused, a row and a head at a time with its scores
	 * in cache (optional: NULL, or a return of 0, and the attention layer
	 * composes matmul_heads, softmax and dropout). q, k, v, o (R, T, D),
	 * head h in columns h K .. h K + K - 1 (D = H K); p, pd (R, H, T, T):
	 * p_h = softmax(scale q_h k_h^T, causal), pd_h = dropout(p_h) (pd may
	 * be p when d->drop.rate is 0), o_h = pd_h v_h. */
	int (*attn_forward)(const struct backend *be, float *o, float *p, float *pd,
			    const float *q, const float *k, const float *v,
			    const struct attn_dims *d);
	/* Its backward from p, pd and do (R, T, D): dq, dk, dv (R, T, D). */
	int (*attn_backward)(const struct backend *be, float *dq, float *dk, float *dv,
			     const float *dout, const float *q, const float *k, const float *v,
			     const float *p, const float *pd, const struct attn_dims *d);
	/* y (R,C) = softmax(scale * x) over each row; with causal, row r is
	 * query i = r % C of a C x C block and its keys j > i get 0
	 * (attn_masked). y may alias x. */
	void (*softmax)(const struct backend *be, float *y, const float *x, int rows, int cols,
			float scale, int causal);
	/* dx (R,C) = scale * y * (dy - sum over the row of dy * y): softmax's
	 * backward from its output y; dx may alias dy. */
	void (*softmax_backward)(const struct backend *be, float *dx, const float *dy,
				 const float *y, int rows, int cols, float scale);
	/* Layer normalization of each row of x (R,C) (mathfn_seq.h): y (R,C),
	 * and the row's mean and rstd (R each) kept for the backward. */
	void (*ln_forward)(const struct backend *be, float *y, float *mean, float *rstd,
			   const float *x, const float *gamma, const float *beta, int rows,
			   int cols, float eps);
	/* Its backward: dx (R,C) unless NULL (may alias dy), and dgamma,
	 * dbeta (C) summed over the rows (overwritten). */
	void (*ln_backward)(const struct backend *be, float *dx, float *dgamma, float *dbeta,
			    const float *dy, const float *x, const float *mean, const float *rstd,
			    const float *gamma, int rows, int cols);
	/* y (N,C) = row embed_row(ids[i]) of table (V,C) for each of the N ids
	 * (token ids held as floats). */
	void (*embed)(const struct backend *be, float *y, const float *ids, const float *table,
		      int n, int cols, int vocab);
	/* dtable (V,C) = the sum of dy's rows (N,C) at each row's id, in id
	 * order: overwritten (rows no id names are 0), or added to when add is
	 * set (a table an unembed uses too). */
	void (*embed_backward)(const struct backend *be, float *dtable, const float *dy,
			       const float *ids, int n, int cols, int vocab, int add);
	/* Softmax cross-entropy of logits (R,C) against labels (R). stats (2)
	 * accumulates {sum of losses, number of correct argmax predictions}.
	 * When dlogits (R,C) is not NULL it receives scale * (softmax - onehot). */
	void (*xent)(const struct backend *be, float *dlogits, float *stats, const float *logits,
		     const int32_t *labels, int rows, int classes, float scale);
	/* One optimizer update over P parameters; slot1/slot2 are the optimizer's
	 * state (momentum buffer, Adam moments) and may be NULL when unused. */
	void (*optim_update)(const struct backend *be, float *w, const float *g, float *slot1,
			     float *slot2, size_t n, const struct optim_hp *hp);
	/* shadow (P) -= (1 - decay) * (shadow - w). */
	void (*ema_update)(const struct backend *be, float *shadow, const float *w, size_t n,
			   float decay);
	/* Whether any of x (n) is NaN or infinite; waits for the ops queued
	 * so far. */
	int (*nonfinite)(const struct backend *be, const float *x, size_t n);
	/* The sum of x (n)'s squares, in double, in an order fixed by n alone
	 * (every rank's alike for the same x); NaN or infinite when any of x
	 * is. Waits for the ops queued so far. */
	double (*sumsq)(const struct backend *be, const float *x, size_t n);
	/* Waits until every queued op has finished. */
	void (*synchronize)(const struct backend *be);
	/* The compute stream (a cudaStream_t) that a device communicator
	 * orders its collectives against; NULL for host memory. */
	void *(*stream)(const struct backend *be);
	/* Sets the precision of matrix products; 0, or -1 if unsupported. */
	int (*set_precision)(const struct backend *be, enum precision p);
	/* Writes an identifier of the device this rank computes on, unique on
	 * its node (the GPU's PCI bus id); 0, or -1 for the CPU. */
	int (*device_id)(const struct backend *be, char *buf, int len);
	/* Releases what the backend holds (its stream, handles, workspace);
	 * the backend is not used afterwards. Memory from alloc must be freed
	 * first. */
	void (*close)(const struct backend *be);
};

/* Called first in main, before MPI starts: when OpenBLAS fell back to its
 * Prescott (SSE3) kernels because it does not know this CPU (0.3.21 and a
 * Xeon newer than it: sgemm 4-5x slower) and the user set no
 * OPENBLAS_CORETYPE, it sets the one the CPU can run (SkylakeX with
 * AVX-512, Haswell with AVX2 and FMA) and starts this program again with
 * argv; otherwise it returns. */
void backend_cpu_pick_kernels(char **argv);
/* The CPU reference backend (OpenBLAS sgemm, oneDNN's convolutions and
 * batch norm's forward, one thread per rank until backend_cpu_threads). It flushes denormal floats to zero on the calling
 * thread (x86: FTZ, DAZ). */
const struct backend *backend_cpu(void);
/* The same with mtrain's kernels alone, none of oneDNN's (--cpu-kernels
 * own): conv2d as im2col, OpenBLAS sgemm and col2im, batch norm's forward
 * in three passes. */
const struct backend *backend_cpu_own(void);
/* The threads the CPU backend's products and convolutions run on (OpenBLAS
 * and oneDNN; one until set): n, or with n = 0 the cores this process's
 * CPU affinity holds, divided among the local_size ranks of its node where
 * the affinity holds every core (a rank not bound to cores). Returns the
 * count it set. */
int backend_cpu_threads(int n, int local_size);
/* The count backend_cpu_threads set last (1 before). */
int backend_cpu_thread_count(void);
/* Whether this CPU multiplies bf16 itself (x86: AVX512_BF16). */
int backend_cpu_has_bf16(void);
/* Opens an accelerator backend (a row of ACCEL_KINDS, base/kinds.h) on
 * this rank: for CUDA, GPU local_rank % (visible GPUs) (the only one when
 * a rank sees one, as under a per-rank CUDA_VISIBLE_DEVICES). NULL when
 * this build has none or this rank sees no device, with *why saying which;
 * *fatal is set when a device exists but cannot be used, an error even
 * under --device auto. Whether two ranks landed on one device is the
 * caller's check (device_id), since it needs the other ranks. Release it
 * with backend_close. */
typedef const struct backend *backend_open_fn(int local_rank, int local_size, const char **why,
					      int *fatal);
/* Each accelerator's open function, by its row: backend_cuda_open. */
#define BACKEND_OPEN_DECL(id, name, open) backend_open_fn open;
ACCEL_KINDS(BACKEND_OPEN_DECL)
#undef BACKEND_OPEN_DECL
/* GPUs visible to this process (0 without CUDA or without a driver). */
int backend_cuda_devices(void);
/* be->close(be); NULL is a no-op. */
void backend_close(const struct backend *be);

struct config;
struct comm;
/* The backend every rank uses, and the communicator's data plane to match:
 * the accelerator cfg->device names (CUDA + NCCL), or under auto the first
 * of ACCEL_KINDS that every rank has a device of its own for; the CPU +
 * MPI otherwise. NULL after a user error
 * (reported through comm_user_errors). Collective. */
const struct backend *backend_select(const struct config *cfg, struct comm *c);
/* Undoes backend_select: the data plane back to MPI, the backend closed.
 * NULL is a no-op. */
void backend_unselect(const struct backend *be, struct comm *c);

#ifdef __cplusplus
}
#endif
