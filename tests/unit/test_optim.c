/* Optimizer updates (sgd, momentum, Nesterov, adam, adamw) and the
 * learning-rate schedule against values worked out by hand. */
#include "backend.h"
#include "config.h"
#include "optim.h"
#include "unit.h"

#define TOL 1e-6

/* An optimizer of the given kind over one parameter w = 1, and its state. */
struct rig {
	const struct backend *be;
	struct config cfg;
	struct optim o;
	float *w, *g; /* (1) backend memory */
};

static void rig_init(struct rig *r, enum optim_kind kind, float weight_decay, int nesterov)
{
	r->be = backend_cpu();
	config_defaults(&r->cfg);
	r->cfg.optim = kind;
	r->cfg.weight_decay = weight_decay;
	r->cfg.nesterov = nesterov;
	optim_init(&r->o, r->be, &r->cfg, 1);
	r->w = r->be->alloc(r->be, sizeof(float));
	r->g = r->be->alloc(r->be, sizeof(float));
	const float one = 1.0f;
	r->be->copy_in(r->be, r->w, &one, sizeof(one));
}

/* One step t with gradient g and rate lr; returns the new w. */
static float rig_step(struct rig *r, float g, long t, float lr)
{
	r->be->copy_in(r->be, r->g, &g, sizeof(g));
	optim_step(&r->o, r->w, r->g, t, lr);
	float w;
	r->be->copy_out(r->be, &w, r->w, sizeof(w));
	return w;
}

static float rig_slot(const struct rig *r, int i)
{
	float v;
	r->be->copy_out(r->be, &v, r->o.slot[i], sizeof(v));
	return v;
}

static void rig_free(struct rig *r)
{
	optim_free(&r->o);
	r->be->free(r->be, r->w);
	r->be->free(r->be, r->g);
}

static void check_sgd(void)
{
	struct rig r;
	rig_init(&r, OPTIM_SGD, 0.0f, 0);
	EXPECT(r.o.n_slots == 0);
	EXPECT(r.o.slot[0] == NULL && r.o.slot[1] == NULL);
	EXPECT_NEAR(rig_step(&r, 0.5f, 1, 0.1f), 0.95, TOL);  /* 1 - 0.1 * 0.5 */
	EXPECT_NEAR(rig_step(&r, 0.5f, 2, 0.1f), 0.90, TOL);  /* 0.95 - 0.05 */
	rig_free(&r);

	rig_init(&r, OPTIM_SGD, 0.1f, 0);
	EXPECT_NEAR(rig_step(&r, 0.5f, 1, 0.1f), 0.94, TOL);  /* 1 - 0.1 * (0.5 + 0.1 * 1) */
	rig_free(&r);
}

/* PyTorch momentum, mu 0.9, lr 0.1, w 1, g 0.5 twice:
 *   plain:    buf 0.5,  w 1 - 0.05 = 0.95;     buf 0.95, w 0.95 - 0.095 = 0.855
 *   nesterov: buf 0.5,  w 1 - 0.1 (0.5 + 0.45) = 0.905;
 *             buf 0.95, w 0.905 - 0.1 (0.5 + 0.855) = 0.7695 */
static void check_momentum(void)
{
	struct rig r;
	rig_init(&r, OPTIM_MOMENTUM, 0.0f, 0);
	EXPECT(r.o.n_slots == 1);
	EXPECT_STR(r.o.slot_suffix[0], "Momentum");
	EXPECT(r.o.slot[1] == NULL);
	EXPECT_NEAR(r.o.hp.momentum, 0.9, TOL);
	EXPECT_NEAR(rig_step(&r, 0.5f, 1, 0.1f), 0.95, TOL);
	EXPECT_NEAR(rig_slot(&r, 0), 0.5, TOL);
	EXPECT_NEAR(rig_step(&r, 0.5f, 2, 0.1f), 0.855, TOL);
	EXPECT_NEAR(rig_slot(&r, 0), 0.95, TOL);
	rig_free(&r);

	rig_init(&r, OPTIM_MOMENTUM, 0.0f, 1);
	EXPECT_NEAR(rig_step(&r, 0.5f, 1, 0.1f), 0.905, TOL);
	EXPECT_NEAR(rig_slot(&r, 0), 0.5, TOL);
	EXPECT_NEAR(rig_step(&r, 0.5f, 2, 0.1f), 0.7695, TOL);
	EXPECT_NEAR(rig_slot(&r, 0), 0.95, TOL);
	rig_free(&r);

	/* Coupled L2: g' = g + wd w = 0.5 + 0.1 = 0.6; buf 0.6; w 1 - 0.06 = 0.94 */
	rig_init(&r, OPTIM_MOMENTUM, 0.1f, 0);
	EXPECT_NEAR(rig_step(&r, 0.5f, 1, 0.1f), 0.94, TOL);
	EXPECT_NEAR(rig_slot(&r, 0), 0.6, TOL);
	rig_free(&r);
}

/* Adam, lr 0.01, betas 0.9/0.999, eps 1e-8, w 1:
 * step 1, g 0.5:   m = 0.05, v = 0.00025, bc1 = 0.1, bc2 = 0.001
 *                  w = 1 - (0.01/0.1) * 0.05 / (sqrt(0.25) + eps) = 0.99
 *                  (the first step moves by lr * g/|g|)
 * step 2, g -0.25: m = 0.045 - 0.025 = 0.02, v = 0.00024975 + 0.0000625 = 0.00031225
 *                  bc1 = 0.19, bc2 = 0.001999
 *                  w = 0.99 - 0.01 * (0.02/0.19) / sqrt(0.00031225/0.001999)
 *                    = 0.99 - 0.01 * 0.105263158 / 0.395225382 = 0.98733663 */
static void check_adam(void)
{
	struct rig r;
	rig_init(&r, OPTIM_ADAM, -1.0f, 0);
	EXPECT(r.o.n_slots == 2);
	EXPECT_STR(r.o.slot_suffix[0], "Adam");
	EXPECT_STR(r.o.slot_suffix[1], "Adam_1");
	EXPECT_NEAR(r.o.hp.weight_decay, 0.0, 0.0); /* adam's default: none */
	EXPECT_NEAR(rig_step(&r, 0.5f, 1, 0.01f), 0.99, TOL);
	EXPECT_NEAR(rig_slot(&r, 0), 0.05, 1e-7);
	EXPECT_NEAR(rig_slot(&r, 1), 0.00025, 1e-8);
	EXPECT_NEAR(rig_step(&r, -0.25f, 2, 0.01f), 0.98733663, TOL);
	EXPECT_NEAR(rig_slot(&r, 0), 0.02, 1e-7);
	EXPECT_NEAR(rig_slot(&r, 1), 0.00031225, 1e-8);
	rig_free(&r);

	/* Adam's weight decay is L2, added to the gradient:
	 * step 1: g' = 0.5 + 0.1 = 0.6, m = 0.06, v = 0.00036, w = 1 - 0.01 = 0.99
	 * step 2: g' = -0.25 + 0.099 = -0.151, m = 0.0389, v = 0.000382441
	 *         w = 0.99 - 0.01 * (0.0389/0.19) / sqrt(0.000382441/0.001999) = 0.98531920 */
	rig_init(&r, OPTIM_ADAM, 0.1f, 0);
	EXPECT_NEAR(rig_step(&r, 0.5f, 1, 0.01f), 0.99, TOL);
	EXPECT_NEAR(rig_slot(&r, 0), 0.06, 1e-7);
	EXPECT_NEAR(rig_step(&r, -0.25f, 2, 0.01f), 0.98531920, TOL);
	EXPECT_NEAR(rig_slot(&r, 0), 0.0389, 1e-7);
	rig_free(&r);
}

/* AdamW decays first, decoupled: w -= lr * wd * w, then the Adam step on the
 * raw gradient. Default wd 0.01, lr 0.01:
 * step 1: w = 1 - 0.0001 = 0.9999, then - 0.01 = 0.9899 (m = 0.05 untouched by wd)
 * step 2: w = 0.9899 (1 - 0.0001) = 0.98980101, then - 0.0026633711 = 0.98713764 */
static void check_adamw(void)
{
	struct config cfg;
	config_defaults(&cfg);
	cfg.optim = OPTIM_ADAMW;
	cfg.weight_decay = -1.0f;
	EXPECT_NEAR(optim_weight_decay(&cfg), 0.01, 1e-9);
	cfg.weight_decay = 0.05f;
	EXPECT_NEAR(optim_weight_decay(&cfg), 0.05, 1e-9);
	cfg.weight_decay = 0.0f;
	EXPECT(optim_weight_decay(&cfg) == 0.0f); /* an explicit 0 stays 0 */
	cfg.optim = OPTIM_ADAM;
	cfg.weight_decay = -1.0f;
	EXPECT(optim_weight_decay(&cfg) == 0.0f);
	cfg.optim = OPTIM_SGD;
	EXPECT(optim_weight_decay(&cfg) == 0.0f);
	cfg.optim = OPTIM_MOMENTUM;
	EXPECT(optim_weight_decay(&cfg) == 0.0f);

	struct rig r;
	rig_init(&r, OPTIM_ADAMW, -1.0f, 0);
	EXPECT(r.o.n_slots == 2);
	EXPECT_STR(r.o.slot_suffix[0], "Adam");
	EXPECT_STR(r.o.slot_suffix[1], "Adam_1");
	EXPECT_NEAR(r.o.hp.weight_decay, 0.01, 1e-9);
	EXPECT_NEAR(rig_step(&r, 0.5f, 1, 0.01f), 0.9899, TOL);
	EXPECT_NEAR(rig_slot(&r, 0), 0.05, 1e-7);
	EXPECT_NEAR(rig_step(&r, -0.25f, 2, 0.01f), 0.98713764, TOL);
	EXPECT_NEAR(rig_slot(&r, 0), 0.02, 1e-7);
	rig_free(&r);
}

/* A whole vector goes through one update: element i of w and g independent. */
static void check_vector(void)
{
	const struct backend *be = backend_cpu();
	struct config cfg;
	config_defaults(&cfg);
	cfg.optim = OPTIM_SGD;
	cfg.weight_decay = 0.0f;
	struct optim o;
	enum { N = 37 };
	optim_init(&o, be, &cfg, N);
	EXPECT(o.n == N);
	float w[N], g[N];
	for (int i = 0; i < N; i++) {
		w[i] = (float)i;
		g[i] = (float)(N - i);
	}
	float *bw = be->alloc(be, sizeof(w)), *bg = be->alloc(be, sizeof(g));
	be->copy_in(be, bw, w, sizeof(w));
	be->copy_in(be, bg, g, sizeof(g));
	optim_step(&o, bw, bg, 1, 0.5f);
	be->copy_out(be, w, bw, sizeof(w));
	int ok = 1;
	for (int i = 0; i < N; i++)
		ok &= fabsf(w[i] - ((float)i - 0.5f * (float)(N - i))) < 1e-5f;
	EXPECT(ok);
	be->free(be, bw);
	be->free(be, bg);
	optim_free(&o);
}

static void check_schedule(void)
{
	struct config cfg;
	config_defaults(&cfg);
	cfg.lr = 0.1f;

	/* Constant. */
	EXPECT_NEAR(optim_lr(&cfg, 0, 100), 0.1, 1e-7);
	EXPECT_NEAR(optim_lr(&cfg, 99, 100), 0.1, 1e-7);
	EXPECT_NEAR(optim_lr(&cfg, 1000, 100), 0.1, 1e-7);

	/* Warm-up: lr * (step + 1) / warmup, then the schedule. */
	cfg.warmup = 10;
	EXPECT_NEAR(optim_lr(&cfg, 0, 100), 0.01, 1e-7);
	EXPECT_NEAR(optim_lr(&cfg, 4, 100), 0.05, 1e-7);
	EXPECT_NEAR(optim_lr(&cfg, 9, 100), 0.1, 1e-7);
	EXPECT_NEAR(optim_lr(&cfg, 10, 100), 0.1, 1e-7);
	EXPECT_NEAR(optim_lr(&cfg, 60, 100), 0.1, 1e-7);

	/* Cosine from lr to lr_min over the steps after warm-up (90 here). */
	cfg.schedule = SCHED_COSINE;
	cfg.lr_min = 0.001f;
	EXPECT_NEAR(optim_lr(&cfg, 4, 100), 0.05, 1e-7);      /* still warming up */
	EXPECT_NEAR(optim_lr(&cfg, 10, 100), 0.1, 1e-7);      /* start: lr */
	EXPECT_NEAR(optim_lr(&cfg, 55, 100), 0.0505, 1e-7);   /* middle: (lr + lr_min) / 2 */
	EXPECT_NEAR(optim_lr(&cfg, 100, 100), 0.001, 1e-7);   /* end: lr_min */
	cfg.warmup = 0;
	EXPECT_NEAR(optim_lr(&cfg, 0, 100), 0.1, 1e-7);
	/* a quarter of the way: lr_min + (lr - lr_min)(1 + cos(pi/4))/2 = 0.08550179 */
	EXPECT_NEAR(optim_lr(&cfg, 25, 100), 0.08550179, 1e-7);
	EXPECT_NEAR(optim_lr(&cfg, 50, 100), 0.0505, 1e-7);
	EXPECT_NEAR(optim_lr(&cfg, 100, 100), 0.001, 1e-7);
	for (long s = 1; s <= 100; s++) /* never increases */
		if (optim_lr(&cfg, s, 100) > optim_lr(&cfg, s - 1, 100)) {
			EXPECT(!"cosine schedule increased");
			break;
		}

	/* Step: lr * gamma^floor((step - warmup) / lr_step_every). */
	cfg.schedule = SCHED_STEP;
	cfg.lr_gamma = 0.5f;
	cfg.lr_step_every = 10;
	EXPECT_NEAR(optim_lr(&cfg, 0, 100), 0.1, 1e-7);
	EXPECT_NEAR(optim_lr(&cfg, 9, 100), 0.1, 1e-7);
	EXPECT_NEAR(optim_lr(&cfg, 10, 100), 0.05, 1e-7);
	EXPECT_NEAR(optim_lr(&cfg, 25, 100), 0.025, 1e-7);
	EXPECT_NEAR(optim_lr(&cfg, 30, 100), 0.0125, 1e-7);
	cfg.warmup = 5; /* the period counts from the end of warm-up */
	EXPECT_NEAR(optim_lr(&cfg, 14, 100), 0.1, 1e-7);
	EXPECT_NEAR(optim_lr(&cfg, 15, 100), 0.05, 1e-7);
}

int main(void)
{
	check_sgd();
	check_momentum();
	check_adam();
	check_adamw();
	check_vector();
	check_schedule();
	return unit_done("test_optim");
}
