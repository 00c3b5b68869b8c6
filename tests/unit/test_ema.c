/* The EMA registry: TF's num_updates decay rule, the shadow updates on the
 * owner only, swapping shadows with the variables, and the shadow names. */
#include "backend.h"
#include "ema.h"
#include "params.h"
#include "unit.h"

/* d = min(decay, (1 + t) / (10 + t)), worked out by hand for decay 0.999. */
static void check_decay_rule(void)
{
	EXPECT_NEAR(ema_decay_at(0.999f, 1, 0), 0.1, 1e-7);          /* 1/10 */
	EXPECT_NEAR(ema_decay_at(0.999f, 1, 1), 2.0 / 11.0, 1e-7);   /* 0.181818 */
	EXPECT_NEAR(ema_decay_at(0.999f, 1, 2), 0.25, 1e-7);         /* 3/12 */
	EXPECT_NEAR(ema_decay_at(0.999f, 1, 90), 0.91, 1e-7);        /* 91/100 */
	EXPECT_NEAR(ema_decay_at(0.999f, 1, 990), 0.991, 1e-7);      /* 991/1000 */
	EXPECT_NEAR(ema_decay_at(0.999f, 1, 10000), 0.999, 1e-7);    /* 10001/10010 > 0.999 */
	EXPECT_NEAR(ema_decay_at(0.999f, 1, 8991), 0.999, 1e-7);     /* 8992/9001 = 0.999000111 */
	EXPECT_NEAR(ema_decay_at(0.999f, 1, 8989), 0.99899989, 1e-7); /* 8990/8999 just below */
	/* num_updates off: the decay itself, whatever the step. */
	EXPECT_NEAR(ema_decay_at(0.999f, 0, 0), 0.999, 1e-7);
	EXPECT_NEAR(ema_decay_at(0.999f, 0, 1), 0.999, 1e-7);
	EXPECT_NEAR(ema_decay_at(0.999f, 0, 10000), 0.999, 1e-7);
	/* A small decay wins over the rule once the rule exceeds it. */
	EXPECT_NEAR(ema_decay_at(0.5f, 1, 0), 0.1, 1e-7);
	EXPECT_NEAR(ema_decay_at(0.5f, 1, 100), 0.5, 1e-7);
}

/* shadow -= (1 - d) (shadow - w) with w = 0 is shadow *= d:
 *   start           {1, 2}
 *   t=1, d = 2/11:  {2/11, 4/11}   = {0.181818182, 0.363636364}
 *   t=2, d = 1/4:   {1/22, 2/22}   = {0.0454545455, 0.0909090909}
 *   t=3, d = 4/13:  {2/143, 4/143} = {0.013986014, 0.027972028} */
static void check_shadow_sequence(const struct backend *be)
{
	const float w0[2] = {1.0f, 2.0f}, zero[2] = {0.0f, 0.0f};
	float *w = be->alloc(be, sizeof(w0));
	be->copy_in(be, w, w0, sizeof(w0));
	struct ema e;
	ema_init(&e, be, w, 2, 2, 0.999f, 1, 1);
	EXPECT(e.shadow != w);
	float s[2];
	be->copy_out(be, s, e.shadow, sizeof(s));
	EXPECT(s[0] == 1.0f && s[1] == 2.0f);

	be->copy_in(be, w, zero, sizeof(zero));
	const double want[3][2] = {{0.181818182, 0.363636364},
				   {0.0454545455, 0.0909090909},
				   {0.013986014, 0.027972028}};
	for (long t = 1; t <= 3; t++) {
		ema_update(&e, w, t);
		be->copy_out(be, s, e.shadow, sizeof(s));
		EXPECT_NEAR(s[0], want[t - 1][0], 1e-7);
		EXPECT_NEAR(s[1], want[t - 1][1], 1e-7);
	}
	ema_free(&e);

	/* A moving target with a fixed decay 0.5 (num_updates off):
	 *   shadow {1, 2}, w {3, -2}: {2, 0}; then w {4, 4}: {3, 2} */
	be->copy_in(be, w, w0, sizeof(w0));
	ema_init(&e, be, w, 2, 2, 0.5f, 0, 1);
	const float w1[2] = {3.0f, -2.0f}, w2[2] = {4.0f, 4.0f};
	be->copy_in(be, w, w1, sizeof(w1));
	ema_update(&e, w, 1);
	be->copy_out(be, s, e.shadow, sizeof(s));
	EXPECT_NEAR(s[0], 2.0, 1e-7);
	EXPECT_NEAR(s[1], 0.0, 1e-7);
	be->copy_in(be, w, w2, sizeof(w2));
	ema_update(&e, w, 2);
	be->copy_out(be, s, e.shadow, sizeof(s));
	EXPECT_NEAR(s[0], 3.0, 1e-7);
	EXPECT_NEAR(s[1], 2.0, 1e-7);
	ema_free(&e);
	be->free(be, w);
}

/* Ranks other than the owner keep their shadows until ema_sync. */
static void check_non_owner(const struct backend *be)
{
	const float w0[2] = {1.0f, 2.0f}, zero[2] = {0.0f, 0.0f};
	float *w = be->alloc(be, sizeof(w0));
	be->copy_in(be, w, w0, sizeof(w0));
	struct ema e;
	ema_init(&e, be, w, 2, 2, 0.999f, 1, 0);
	be->copy_in(be, w, zero, sizeof(zero));
	for (long t = 1; t <= 3; t++)
		ema_update(&e, w, t);
	float s[2];
	be->copy_out(be, s, e.shadow, sizeof(s));
	EXPECT(s[0] == 1.0f && s[1] == 2.0f);
	ema_free(&e);
	be->free(be, w);
}

/* ema_swap exchanges pointers (no copy); a second swap restores both. */
static void check_swap(const struct backend *be)
{
	const float w0[2] = {1.0f, 2.0f}, w1[2] = {5.0f, 6.0f};
	float *w = be->alloc(be, sizeof(w0));
	be->copy_in(be, w, w0, sizeof(w0));
	struct ema e;
	ema_init(&e, be, w, 2, 2, 0.999f, 1, 1);
	be->copy_in(be, w, w1, sizeof(w1));
	float *orig_w = w, *orig_shadow = e.shadow;

	ema_swap(&e, &w);
	EXPECT(w == orig_shadow);
	EXPECT(e.shadow == orig_w);
	float v[2];
	be->copy_out(be, v, w, sizeof(v));
	EXPECT(v[0] == 1.0f && v[1] == 2.0f); /* the variables now read the shadows */

	ema_swap(&e, &w);
	EXPECT(w == orig_w);
	EXPECT(e.shadow == orig_shadow);
	be->copy_out(be, v, w, sizeof(v));
	EXPECT(v[0] == 5.0f && v[1] == 6.0f);
	ema_free(&e);
	EXPECT(e.shadow == NULL);
	be->free(be, w);
}

static void check_names(void)
{
	char buf[PARAM_NAME_LEN];
	params_slot_name("dense/kernel", EMA_SUFFIX, buf, sizeof(buf));
	EXPECT_STR(buf, "dense/kernel/ExponentialMovingAverage");
	params_slot_name("dense_2/bias", EMA_SUFFIX, buf, sizeof(buf));
	EXPECT_STR(buf, "dense_2/bias/ExponentialMovingAverage");
}

int main(void)
{
	const struct backend *be = backend_cpu();
	check_decay_rule();
	check_shadow_sequence(be);
	check_non_owner(be);
	check_swap(be);
	check_names();
	return unit_done("test_ema");
}
