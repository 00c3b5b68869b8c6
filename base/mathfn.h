/* Per-element formulas shared by the CPU backend and the CUDA kernels:
 * activations, optimizer updates and the EMA step. Written once here so the
 * CPU tests exercise the arithmetic the GPU runs. */
#pragma once
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "kinds.h"

#ifdef __CUDACC__
#define MT_FN __host__ __device__ static inline
#else
#define MT_FN static inline
#endif

/* e^x in float arithmetic without a call or a branch, so that the CPU's
 * loops over it vectorise: x = n ln2 + r (|r| <= ln2 / 2, Cody and Waite's
 * two-part ln2), e^r by its Taylor polynomial of degree 7 (relative error
 * under 3e-8 there), times 2^n built in the exponent bits. x is clamped
 * to [-87, 88]: below, a tiny normal value stands for 0 (the CPU flushes
 * denormals anyway). Within 2 ulp of a correctly rounded expf. */
MT_FN float mt_expf(float x)
{
	x = x < -87.0f ? -87.0f : x > 88.0f ? 88.0f : x;
	/* n = round(x / ln2): adding 1.5 * 2^23 rounds to an integer */
	float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
	float r = (x - n * 0.693145751953125f) - n * 1.42860676533018704e-6f;
	float p = 1.0f / 5040.0f;
	p = p * r + 1.0f / 720.0f;
	p = p * r + 1.0f / 120.0f;
	p = p * r + 1.0f / 24.0f;
	p = p * r + 1.0f / 6.0f;
	p = p * r + 0.5f;
	p = p * r + 1.0f;
	p = p * r + 1.0f;
	union {
		uint32_t u;
		float f;
	} scale = {.u = (uint32_t)((int32_t)n + 127) << 23};
	return p * scale.f;
}

/* Phi(x) = (1 + erf(x / sqrt 2)) / 2, the normal distribution's CDF (gelu's
 * exact form), given e = e^(-x^2 / 2), which gelu's derivative needs as
 * well (its pdf): Abramowitz and Stegun's 7.1.26 for erf(u), u = |x| /
 * sqrt 2, 1 - t (a1 + t (a2 + ...)) e^(-u^2), t = 1 / (1 + p u), with the
 * sign restored; absolute error under 1.5e-7 (float's own rounding near
 * 1). No call or branch: the loops over it vectorise. */
MT_FN float mt_phi_e(float x, float e)
{
	float ax = (x < 0.0f ? -x : x) * 0.70710678118654752f;
	float t = 1.0f / (1.0f + 0.3275911f * ax);
	float y = 1.061405429f;
	y = y * t - 1.453152027f;
	y = y * t + 1.421413741f;
	y = y * t - 0.284496736f;
	y = y * t + 0.254829592f;
	float erf_ax = 1.0f - y * t * e;
	return 0.5f * (1.0f + (x < 0.0f ? -erf_ax : erf_ax));
}

/* tanh(x) = 1 - 2 / (e^2x + 1), vectorisable (gelu's tanh form). */
MT_FN float mt_tanhf(float x) { return 1.0f - 2.0f / (mt_expf(2.0f * x) + 1.0f); }

/* SplitMix64's finaliser: a 64-bit mix, for counter-based random numbers. */
MT_FN uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Dropout's key for row `row` of the global batch at global step `step`,
 * made once a row (dropout_scale_at). */
MT_FN uint64_t dropout_row_key(uint64_t seed, uint64_t step, uint64_t row)
{
	return mix64(seed ^ mix64(step ^ mix64(row)));
}

/* Dropout's multiplier for unit `unit` of the row whose key is key: 0
 * (dropped, with probability rate) or 1 / (1 - rate), from the unit-th
 * output of SplitMix64 started at the key: one mix a unit (the key's three
 * once a row; four a unit cost a quarter of a GPT's step with dropout). */
MT_FN float dropout_scale_at(uint64_t key, uint64_t unit, float rate)
{
	uint64_t h = mix64(key + unit * 0x9e3779b97f4a7c15ull);
	float u = (float)(h >> 40) * (1.0f / 16777216.0f); /* 24 bits: [0, 1) */
	return u < rate ? 0.0f : 1.0f / (1.0f - rate);
}

/* The same for unit `unit` of row `row` of the global batch at global step
 * `step`. A function of (seed, step, row, unit) only, never of the rank:
 * the same global batch gets the same masks on any number of ranks and
 * backends. */
MT_FN float dropout_scale(uint64_t seed, uint64_t step, uint64_t row, uint64_t unit, float rate)
{
	return dropout_scale_at(dropout_row_key(seed, step, row), unit, rate);
}

/* A window sliding over channels-last (NHWC) rows: conv2d's kernel or a
 * pool's. Out-of-bounds positions (padding) read as 0. */
struct window {
	int h, w, c;  /* one input row, e.g. 28, 28, 1 */
	int kh, kw;   /* the window, e.g. 3, 3 */
	int sh, sw;   /* strides */
	int pt, pl;   /* padding before: top and left rows and columns */
	int oh, ow;   /* one output row's positions */
};

/* im2col: element i of cols (R * oh * ow, kh * kw * c): the input value
 * under window position (oy, ox) at kernel offset (ky, kx), channel ch. */
MT_FN float win_im2col(const float *x, const struct window *w, size_t i)
{
	size_t k = (size_t)w->kh * w->kw * w->c;
	size_t pos = i / k, col = i % k;
	int ch = (int)(col % w->c), kx = (int)(col / w->c % w->kw), ky = (int)(col / w->c / w->kw);
	int ox = (int)(pos % w->ow), oy = (int)(pos / w->ow % w->oh);
	size_t r = pos / w->ow / w->oh;
	int iy = oy * w->sh + ky - w->pt, ix = ox * w->sw + kx - w->pl;
	if (iy < 0 || iy >= w->h || ix < 0 || ix >= w->w)
		return 0.0f;
	return x[((r * w->h + iy) * w->w + ix) * w->c + ch];
}

/* Whether input (iy, ix) sits at offset (ky, kx) of a window, and which
 * window: (*oy, *ox). */
MT_FN int win_at(const struct window *w, int iy, int ix, int ky, int kx, int *oy, int *ox)
{
	int ty = iy + w->pt - ky, tx = ix + w->pl - kx;
	if (ty < 0 || ty % w->sh || ty / w->sh >= w->oh || tx < 0 || tx % w->sw ||
	    tx / w->sw >= w->ow)
		return 0;
	*oy = ty / w->sh;
	*ox = tx / w->sw;
	return 1;
}

/* col2im: element i of dx (R, h, w, c): the sum of the cols entries that
 * im2col took from it, in a fixed order (ky, then kx). */
MT_FN float win_col2im(const float *cols, const struct window *w, size_t i)
{
	int ch = (int)(i % w->c), ix = (int)(i / w->c % w->w), iy = (int)(i / w->c / w->w % w->h);
	size_t r = i / w->c / w->w / w->h;
	size_t k = (size_t)w->kh * w->kw * w->c;
	float sum = 0.0f;
	int oy, ox;
	for (int ky = 0; ky < w->kh; ky++)
		for (int kx = 0; kx < w->kw; kx++)
			if (win_at(w, iy, ix, ky, kx, &oy, &ox))
				sum += cols[((r * w->oh + oy) * w->ow + ox) * k +
					    ((size_t)ky * w->kw + kx) * w->c + ch];
	return sum;
}

/* The part of window (oy, ox) inside the input: rows [*ya, *yb), columns
 * [*xa, *xb) (empty when *ya >= *yb or *xa >= *xb). */
MT_FN void win_clip(const struct window *w, int oy, int ox, int *ya, int *yb, int *xa, int *xb)
{
	int y0 = oy * w->sh - w->pt, x0 = ox * w->sw - w->pl;
	*ya = y0 > 0 ? y0 : 0;
	*xa = x0 > 0 ? x0 : 0;
	*yb = y0 + w->kh < w->h ? y0 + w->kh : w->h;
	*xb = x0 + w->kw < w->w ? x0 + w->kw : w->w;
}

/* The first position (ky * kw + kx) of the largest value in window
 * (oy, ox) of row r, channel ch: ties go to the first, as in TF. */
MT_FN int win_argmax(const float *x, const struct window *w, size_t r, int oy, int ox, int ch)
{
	int best = -1, ya, yb, xa, xb;
	float top = 0.0f;
	win_clip(w, oy, ox, &ya, &yb, &xa, &xb);
	for (int iy = ya; iy < yb; iy++)
		for (int ix = xa; ix < xb; ix++) {
			float v = x[((r * w->h + iy) * w->w + ix) * w->c + ch];
			if (best < 0 || v > top) {
				top = v;
				best = (iy - oy * w->sh + w->pt) * w->kw + ix - ox * w->sw + w->pl;
			}
		}
	return best;
}

/* Pooling: element i of y (R, oh, ow, c), the window's max or mean (over
 * the positions inside the input). */
MT_FN float win_pool(const float *x, const struct window *w, int max, size_t i)
{
	int ch = (int)(i % w->c), ox = (int)(i / w->c % w->ow), oy = (int)(i / w->c / w->ow % w->oh);
	size_t r = i / w->c / w->ow / w->oh;
	if (max) {
		int a = win_argmax(x, w, r, oy, ox, ch);
		int iy = oy * w->sh + a / w->kw - w->pt, ix = ox * w->sw + a % w->kw - w->pl;
		return x[((r * w->h + iy) * w->w + ix) * w->c + ch];
	}
	int ya, yb, xa, xb;
	win_clip(w, oy, ox, &ya, &yb, &xa, &xb);
	float sum = 0.0f;
	for (int iy = ya; iy < yb; iy++)
		for (int ix = xa; ix < xb; ix++)
			sum += x[((r * w->h + iy) * w->w + ix) * w->c + ch];
	return ya < yb && xa < xb ? sum / (float)((yb - ya) * (xb - xa)) : 0.0f;
}

/* Pooling backward: element i of dx (R, h, w, c), gathered from the
 * windows that hold it: dy where it is the window's (first) max, or dy
 * over the window's count for the mean. */
MT_FN float win_pool_bwd(const float *dy, const float *x, const struct window *w, int max,
			 size_t i)
{
	int ch = (int)(i % w->c), ix = (int)(i / w->c % w->w), iy = (int)(i / w->c / w->w % w->h);
	size_t r = i / w->c / w->w / w->h;
	float sum = 0.0f;
	int oy, ox;
	for (int ky = 0; ky < w->kh; ky++)
		for (int kx = 0; kx < w->kw; kx++) {
			if (!win_at(w, iy, ix, ky, kx, &oy, &ox))
				continue;
			float g = dy[((r * w->oh + oy) * w->ow + ox) * w->c + ch];
			if (max) {
				if (win_argmax(x, w, r, oy, ox, ch) == ky * w->kw + kx)
					sum += g;
				continue;
			}
			int ya, yb, xa, xb;
			win_clip(w, oy, ox, &ya, &yb, &xa, &xb);
			sum += g / (float)((yb - ya) * (xb - xa));
		}
	return sum;
}

/* Batch normalization over channel j, from its mean and variance (the
 * batch's while training, the moving ones when evaluating):
 *   invstd = 1 / sqrt(var + eps)      xhat = (x - mean) * invstd
 *   y = gamma * xhat + beta
 * and, backward, with dgamma = sum dy * xhat and dbeta = sum dy over the N
 * values the statistics came from:
 *   dx = gamma * invstd * (dy - (dbeta + xhat * dgamma) / N) */
MT_FN float bn_invstd(float var, float eps) { return 1.0f / sqrtf(var + eps); }

MT_FN float bn_xhat(float x, float mean, float invstd) { return (x - mean) * invstd; }

MT_FN float bn_y(float x, float mean, float invstd, float gamma, float beta)
{
	return gamma * bn_xhat(x, mean, invstd) + beta;
}

/* A value's term in its channel's moment: x itself (the mean's sum), or
 * its squared distance from center (the variance's), in double so that a
 * huge distance does not square to infinity. */
MT_FN double bn_moment_term(float x, float center, int squared)
{
	double d = (double)x - (double)center;
	return squared ? d * d : d;
}

MT_FN float bn_dx(float dy, float xhat, float gamma, float invstd, float dgamma, float dbeta,
		  float inv_n)
{
	return gamma * invstd * (dy - (dbeta + xhat * dgamma) * inv_n);
}

/* gelu's tanh form (GPT-2, llm.c; PyTorch's GELU(approximate='tanh')):
 * 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3). */
#define GELU_TANH_C 0.79788456080286536f /* sqrt(2 / pi) */

/* act(x): relu, gelu (exact, erf form as in PyTorch and Keras), tanh,
 * silu (x * sigmoid(x), PyTorch's nn.SiLU), gelu_tanh. No default:
 * -Wswitch stops the build when a kind of ACT_KINDS has no case. */
MT_FN float act_fwd(enum act_kind act, float x)
{
	switch (act) {
	case ACT_RELU: return x > 0.0f ? x : 0.0f;
	case ACT_GELU: return x * mt_phi_e(x, mt_expf(-0.5f * x * x));
	case ACT_TANH: return tanhf(x);
	case ACT_SILU: return x / (1.0f + expf(-x));
	case ACT_GELU_TANH:
		return 0.5f * x * (1.0f + mt_tanhf(GELU_TANH_C * (x + 0.044715f * x * x * x)));
	}
	return NAN; /* not a kind: loud in the loss */
}

/* d act(x) / dx * dy. */
MT_FN float act_bwd(enum act_kind act, float x, float dy)
{
	switch (act) {
	case ACT_RELU: return x > 0.0f ? dy : 0.0f;
	case ACT_GELU: { /* Phi(x) + x phi(x), one exponential for both */
		float e = mt_expf(-0.5f * x * x);
		return dy * (mt_phi_e(x, e) + x * 0.39894228040143268f * e);
	}
	case ACT_TANH: {
		float t = tanhf(x);
		return dy * (1.0f - t * t);
	}
	case ACT_SILU: {
		float s = 1.0f / (1.0f + expf(-x));
		return dy * s * (1.0f + x * (1.0f - s));
	}
	case ACT_GELU_TANH: {
		float t = mt_tanhf(GELU_TANH_C * (x + 0.044715f * x * x * x));
		float du = GELU_TANH_C * (1.0f + 3.0f * 0.044715f * x * x);
		return dy * (0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du);
	}
	}
	return NAN;
}

/* The gradient an op takes when an activation is fused after it: act'(z[i])
 * * dy[i], z being the op's output; dy[i] itself without one (z NULL). */
MT_FN float fused_act_dy(enum act_kind act, const float *z, const float *dy, size_t i)
{
	return z ? act_bwd(act, z[i], dy[i]) : dy[i];
}

/* Softmax cross-entropy of one row of logits l (C) against class y: returns
 * log(sum exp(l - max)) - (l[y] - max), sets *correct to whether the argmax
 * is y, and, unless dl is NULL, writes dl (C) = scale * (softmax - onehot). */
MT_FN float xent_row(const float *l, int classes, int y, float scale, float *dl,
		     int *correct)
{
	int best = 0;
	float mx = l[0];
	for (int j = 1; j < classes; j++)
		if (l[j] > mx) {
			mx = l[j];
			best = j;
		}
	float sum = 0.0f;
	for (int j = 0; j < classes; j++)
		sum += expf(l[j] - mx);
	*correct = best == y;
	if (dl) {
		float inv = 1.0f / sum;
		for (int j = 0; j < classes; j++)
			dl[j] = scale * (expf(l[j] - mx) * inv - (j == y ? 1.0f : 0.0f));
	}
	return logf(sum) - (l[y] - mx);
}

/* One SGD step with coupled L2 weight decay (PyTorch's SGD). */
MT_FN float sgd_step(float w, float g, float lr, float wd)
{
	return w - lr * (g + wd * w);
}

/* One momentum step, PyTorch form: buf = mu * buf + g; w -= lr * buf
 * (Nesterov: w -= lr * (g + mu * buf)). Updates *buf, returns the new w. */
MT_FN float momentum_step(float w, float g, float *buf, float lr, float mu,
			  int nesterov, float wd)
{
	g += wd * w;
	float b = mu * *buf + g;
	*buf = b;
	return w - lr * (nesterov ? g + mu * b : b);
}

/* One Adam/AdamW step, PyTorch form: m, v moments; bias corrections bc1, bc2
 * precomputed for this step; AdamW decays w by lr * wd first (decoupled),
 * Adam adds wd * w to the gradient (L2). Updates *m, *v, returns the new w. */
MT_FN float adam_step(float w, float g, float *m, float *v, float lr,
		      float beta1, float beta2, float eps, float wd,
		      float bc1, float bc2, int decoupled)
{
	if (decoupled)
		w -= lr * wd * w;
	else
		g += wd * w;
	float mm = beta1 * *m + (1.0f - beta1) * g;
	float vv = beta2 * *v + (1.0f - beta2) * g * g;
	*m = mm;
	*v = vv;
	float denom = sqrtf(vv) / sqrtf(bc2) + eps;
	return w - (lr / bc1) * mm / denom;
}

/* One Lion step (Chen et al. 2023), lion-pytorch's form: the update is the
 * sign of beta1 * m + (1 - beta1) * g (0 at 0, as torch.sign); w decays by
 * lr * wd first (decoupled), then moves by lr * update; the momentum m then
 * becomes beta2 * m + (1 - beta2) * g. Updates *m, returns the new w. */
MT_FN float lion_step(float w, float g, float *m, float lr, float beta1, float beta2,
		      float wd)
{
	float c = beta1 * *m + (1.0f - beta1) * g;
	float update = (float)((c > 0.0f) - (c < 0.0f));
	*m = beta2 * *m + (1.0f - beta2) * g;
	return w * (1.0f - lr * wd) - lr * update;
}

/* Hyper-parameters of one optimizer update, bias corrections precomputed on
 * the host for the step being taken. */
struct optim_hp {
	enum optim_kind kind;
	float lr;           /* learning rate for this step, e.g. 1e-3 */
	float momentum;     /* momentum: mu, e.g. 0.9 */
	int nesterov;       /* momentum: 1 for Nesterov */
	float beta1, beta2; /* adam/adamw, e.g. 0.9, 0.999; lion, e.g. 0.9, 0.99 */
	float eps;          /* adam/adamw, e.g. 1e-8 */
	float weight_decay; /* L2 for sgd/momentum/adam, decoupled for adamw/lion */
	float bc1, bc2;     /* adam: 1 - beta1^t, 1 - beta2^t */
};

/* Parameter i's update by optimizer kind (hp->kind, passed apart so that a
 * caller can make it a constant) with hp's hyper-parameters, slot1/slot2
 * as that optimizer uses them (unused ones may be NULL). The CPU loops and
 * the CUDA kernel both call this. Every kind has its case: no default, and
 * a missing case is a compile error (-Wswitch made an error here, in C and
 * in the CUDA kernels' host pass); a value outside the enum gives NaN, which
 * the next step's non-finite check stops on. */
#pragma GCC diagnostic push
#pragma GCC diagnostic error "-Wswitch"
MT_FN float optim_elem(enum optim_kind kind, const struct optim_hp *hp, size_t i, const float *w,
		       const float *g, float *slot1, float *slot2)
{
	switch (kind) {
	case OPTIM_SGD: return sgd_step(w[i], g[i], hp->lr, hp->weight_decay);
	case OPTIM_MOMENTUM:
		return momentum_step(w[i], g[i], &slot1[i], hp->lr, hp->momentum, hp->nesterov,
				     hp->weight_decay);
	case OPTIM_ADAM:
	case OPTIM_ADAMW:
		return adam_step(w[i], g[i], &slot1[i], &slot2[i], hp->lr, hp->beta1, hp->beta2,
				 hp->eps, hp->weight_decay, hp->bc1, hp->bc2, kind == OPTIM_ADAMW);
	case OPTIM_LION:
		return lion_step(w[i], g[i], &slot1[i], hp->lr, hp->beta1, hp->beta2,
				 hp->weight_decay);
	}
	return NAN;
}
#pragma GCC diagnostic pop

/* 1 when the float whose bits these are is NaN or infinite (all exponent
 * bits set), else 0: an integer test, so a sum of them vectorises. */
MT_FN unsigned nonfinite_bits(unsigned bits)
{
	return (bits & 0x7f800000u) == 0x7f800000u;
}

/* One EMA step: shadow -= (1 - decay) * (shadow - w). */
MT_FN float ema_step(float shadow, float w, float decay)
{
	return shadow - (1.0f - decay) * (shadow - w);
}
