/* The CPU backend's window ops: conv2d's im2col and col2im, and pooling,
 * as loops over runs of window rows (backend_cpu_conv.h). */
#include "backend_cpu_conv.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The kernel columns [*ka, *kb) of window row ky at (oy, ox) that fall
 * inside the input (a run of consecutive input columns: kx moves ix by 1);
 * -1 in *iy when the row itself is outside. */
static void win_run(const struct window *w, int oy, int ox, int ky, int *iy, int *ka, int *kb)
{
	int y = oy * w->sh + ky - w->pt, x0 = ox * w->sw - w->pl;
	*iy = y >= 0 && y < w->h ? y : -1;
	*ka = x0 < 0 ? -x0 : 0;
	*kb = x0 + w->kw > w->w ? w->w - x0 : w->kw;
	if (*ka > w->kw) /* all in the padding: an empty run */
		*ka = w->kw;
	if (*kb < *ka)
		*kb = *ka;
}

/* im2col and col2im: win_im2col and win_col2im of mathfn.h, written as
 * copies of runs of a window row (kernel columns side by side are
 * neighbouring input columns; the formula per element divides too often to
 * be fast). col2im adds in another order than win_col2im's, so the CPU and
 * a GPU differ by rounding there. */
void cpu_im2col(const struct backend *be, float *cols, const float *x, int rows,
		const struct window *w)
{
	size_t c = (size_t)w->c, k = (size_t)w->kh * w->kw * c;
	for (int r = 0; r < rows; r++) {
		const float *xr = x + (size_t)r * w->h * w->w * c;
		for (int oy = 0; oy < w->oh; oy++)
			for (int ox = 0; ox < w->ow; ox++) {
				float *out = cols + (((size_t)r * w->oh + oy) * w->ow + ox) * k;
				for (int ky = 0; ky < w->kh; ky++, out += (size_t)w->kw * c) {
					int iy, ka, kb;
					win_run(w, oy, ox, ky, &iy, &ka, &kb);
					if (iy < 0)
						ka = kb = 0;
					/* out[j] is input value at + j: a short run, so
					 * loops, not a call per value (c is often 1) */
					ptrdiff_t at = ((ptrdiff_t)(iy < 0 ? 0 : iy) * w->w + ox * w->sw -
							w->pl) * (ptrdiff_t)c;
					for (size_t j = 0; j < (size_t)ka * c; j++)
						out[j] = 0.0f;
					for (size_t j = (size_t)ka * c; j < (size_t)kb * c; j++)
						out[j] = xr[at + (ptrdiff_t)j];
					for (size_t j = (size_t)kb * c; j < (size_t)w->kw * c; j++)
						out[j] = 0.0f;
				}
			}
	}
}

void cpu_col2im(const struct backend *be, float *dx, const float *cols, int rows,
		const struct window *w)
{
	size_t c = (size_t)w->c, k = (size_t)w->kh * w->kw * c;
	memset(dx, 0, (size_t)rows * w->h * w->w * c * sizeof(float));
	for (int r = 0; r < rows; r++) {
		float *dr = dx + (size_t)r * w->h * w->w * c;
		for (int oy = 0; oy < w->oh; oy++)
			for (int ox = 0; ox < w->ow; ox++) {
				const float *in = cols + (((size_t)r * w->oh + oy) * w->ow + ox) * k;
				for (int ky = 0; ky < w->kh; ky++, in += (size_t)w->kw * c) {
					int iy, ka, kb;
					win_run(w, oy, ox, ky, &iy, &ka, &kb);
					if (iy < 0)
						continue;
					ptrdiff_t at = ((ptrdiff_t)iy * w->w + ox * w->sw - w->pl) *
						       (ptrdiff_t)c;
					for (size_t j = (size_t)ka * c; j < (size_t)kb * c; j++)
						dr[at + (ptrdiff_t)j] += in[j];
				}
			}
	}
}

/* Pooling, as win_pool and win_pool_bwd compute it, a window at a time and
 * a block of channels at once (channels are contiguous: the loops over them
 * vectorise; the formula per element recomputes its window and is 5x
 * slower). The window is clipped to the input; max takes the first of equal
 * values, as win_argmax does, and the mean sums in win_pool's order, so
 * the forward results are win_pool's bit for bit. Backward scatters each
 * window's gradient (to its first max, or evenly) instead of gathering it,
 * so overlapping windows add in another order than a GPU's. */
#define POOL_BLOCK 64

/* out[0, nc) = the window's max or mean over channels [c0, c0 + nc) of the
 * row xr (h, w, c); for max, at[j] = the input position (iy * w + ix) of
 * channel j's first max (at may be NULL). */
static void pool_window(float *restrict out, int *restrict at, const float *restrict xr,
			const struct window *w, int oy, int ox, int c0, int nc, int max)
{
	int ya, yb, xa, xb;
	win_clip(w, oy, ox, &ya, &yb, &xa, &xb);
	int first = 1;
	for (int iy = ya; iy < yb; iy++)
		for (int ix = xa; ix < xb; ix++) {
			const float *v = xr + ((size_t)iy * w->w + ix) * w->c + c0;
			int pos = iy * w->w + ix;
			if (first) {
				for (int j = 0; j < nc; j++)
					out[j] = v[j];
				if (at)
					for (int j = 0; j < nc; j++)
						at[j] = pos;
				first = 0;
			} else if (max && at) {
				for (int j = 0; j < nc; j++) { /* branch-free: vectorises */
					float o = out[j], x = v[j];
					int take = -(x > o); /* all ones or zero */
					at[j] = (at[j] & ~take) | (pos & take);
					out[j] = x > o ? x : o;
				}
			} else if (max) {
				for (int j = 0; j < nc; j++)
					out[j] = v[j] > out[j] ? v[j] : out[j];
			} else {
				for (int j = 0; j < nc; j++)
					out[j] += v[j];
			}
		}
	if (first) { /* no position inside: win_pool's 0 */
		for (int j = 0; j < nc; j++)
			out[j] = 0.0f;
	} else if (!max) {
		float count = (float)((yb - ya) * (xb - xa));
		for (int j = 0; j < nc; j++)
			out[j] /= count;
	}
}

void cpu_pool(const struct backend *be, float *y, const float *x, int rows,
	      const struct window *w, int max)
{
	size_t c = (size_t)w->c;
	for (int r = 0; r < rows; r++) {
		const float *xr = x + (size_t)r * w->h * w->w * c;
		for (int oy = 0; oy < w->oh; oy++)
			for (int ox = 0; ox < w->ow; ox++) {
				float *out = y + (((size_t)r * w->oh + oy) * w->ow + ox) * c;
				for (int c0 = 0; c0 < w->c; c0 += POOL_BLOCK) {
					int nc = w->c - c0 < POOL_BLOCK ? w->c - c0 : POOL_BLOCK;
					pool_window(out + c0, NULL, xr, w, oy, ox, c0, nc, max);
				}
			}
	}
}

/* o[j] = g[j] where at[j] is pos, else +0, for j < n: by masking the
 * bits (a select compiled as a branch mispredicted on every window and
 * made max pooling's backward 3x slower). */
static void gradient_at(float *restrict o, const float *restrict g, const int *restrict at,
			int pos, int n)
{
	for (int j = 0; j < n; j++) {
		uint32_t bits;
		memcpy(&bits, &g[j], sizeof(bits));
		bits &= -(uint32_t)(at[j] == pos);
		memcpy(&o[j], &bits, sizeof(bits));
	}
}

/* Max pooling whose windows do not overlap (strides at least the window,
 * as maxpool2d:2's) writes each window's positions once, the gradient at
 * the first max and 0 elsewhere (the scatter's values), and zeroes dx
 * first only where some position is in no window: 1.82 ms against the
 * scatter's 2.08 for the CNN's two (bench_layers, 64 rows). Otherwise dx
 * is zeroed and each window's gradient scattered into it. */
void cpu_pool_backward(const struct backend *be, float *dx, const float *dy, const float *x,
		       int rows, const struct window *w, int max)
{
	size_t c = (size_t)w->c;
	int apart = max && w->sh >= w->kh && w->sw >= w->kw;
	int tiled = w->pt == 0 && w->pl == 0 && w->kh == w->sh && w->kw == w->sw &&
		    w->oh * w->sh == w->h && w->ow * w->sw == w->w;
	if (!(apart && tiled))
		memset(dx, 0, (size_t)rows * w->h * w->w * c * sizeof(float));
	for (int r = 0; r < rows; r++) {
		const float *xr = x + (size_t)r * w->h * w->w * c;
		float *dr = dx + (size_t)r * w->h * w->w * c;
		for (int oy = 0; oy < w->oh; oy++)
			for (int ox = 0; ox < w->ow; ox++) {
				const float *g = dy + (((size_t)r * w->oh + oy) * w->ow + ox) * c;
				int ya, yb, xa, xb;
				win_clip(w, oy, ox, &ya, &yb, &xa, &xb);
				if (ya >= yb || xa >= xb)
					continue;
				for (int c0 = 0; c0 < w->c; c0 += POOL_BLOCK) {
					int nc = w->c - c0 < POOL_BLOCK ? w->c - c0 : POOL_BLOCK;
					if (max) {
						float top[POOL_BLOCK];
						int at[POOL_BLOCK];
						pool_window(top, at, xr, w, oy, ox, c0, nc, 1);
						if (apart)
							for (int iy = ya; iy < yb; iy++)
								for (int ix = xa; ix < xb; ix++) {
									int pos = iy * w->w + ix;
									gradient_at(dr + (size_t)pos * c + c0,
										    g + c0, at, pos, nc);
								}
						else
							for (int j = 0; j < nc; j++)
								dr[(size_t)at[j] * c + c0 + j] += g[c0 + j];
						continue;
					}
					float share[POOL_BLOCK];
					for (int j = 0; j < nc; j++)
						share[j] = g[c0 + j] / (float)((yb - ya) * (xb - xa));
					for (int iy = ya; iy < yb; iy++)
						for (int ix = xa; ix < xb; ix++) {
							float *o = dr + ((size_t)iy * w->w + ix) * c + c0;
							for (int j = 0; j < nc; j++)
								o[j] += share[j];
						}
				}
			}
	}
}
