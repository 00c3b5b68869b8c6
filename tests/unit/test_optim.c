/* Optimizer updates (sgd, momentum, Nesterov, adam, adamw, lion) and the
 * learning-rate schedule against values worked out by hand or in double;
 * each optimizer's default hyper-parameters; every kind has its own update. */
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

/* Lion as lion-pytorch writes it, in double, for one element:
 *   p *= 1 - lr * wd; update = sign(beta1 * m + (1 - beta1) * g);
 *   p -= lr * update; m = beta2 * m + (1 - beta2) * g */
static double lion_ref(double p, double g, double *m, double lr, double beta1, double beta2,
		       double wd)
{
	p *= 1.0 - lr * wd;
	double c = *m * beta1 + g * (1.0 - beta1);
	p -= lr * (c > 0 ? 1.0 : c < 0 ? -1.0 : 0.0);
	*m = *m * beta2 + g * (1.0 - beta2);
	return p;
}

/* Lion over a vector for 6 steps of changing gradients (signs that flip, a
 * zero), against lion_ref; its defaults (betas 0.9/0.99, no decay), its one
 * slot "<var>/Lion", and explicit betas and weight decay overriding them. */
static void check_lion_run(float beta1, float beta2, float wd)
{
	const struct backend *be = backend_cpu();
	struct config cfg;
	config_defaults(&cfg);
	cfg.optim = OPTIM_LION;
	cfg.beta1 = beta1;
	cfg.beta2 = beta2;
	cfg.weight_decay = wd;
	enum { N = 11, STEPS = 6 };
	struct optim o;
	optim_init(&o, be, &cfg, N);
	double b1 = o.hp.beta1, b2 = o.hp.beta2, d = o.hp.weight_decay;
	float w[N], g[N], m[N];
	double rw[N], rm[N];
	for (int i = 0; i < N; i++) {
		w[i] = 0.5f - 0.1f * (float)i;
		rw[i] = w[i];
		rm[i] = 0.0;
	}
	float *bw = be->alloc(be, sizeof(w)), *bg = be->alloc(be, sizeof(g));
	be->copy_in(be, bw, w, sizeof(w));
	double worst_w = 0, worst_m = 0;
	for (int t = 1; t <= STEPS; t++) {
		float lr = 0.01f * (float)t;
		for (int i = 0; i < N; i++) /* element 5 sees g = 0 at step 1 */
			g[i] = (float)((i - 5) * (t % 2 ? 1 : -2)) * 0.25f / (float)t +
			       (t > 1 ? 0.125f : 0.0f);
		be->copy_in(be, bg, g, sizeof(g));
		optim_step(&o, bw, bg, t, lr);
		be->copy_out(be, w, bw, sizeof(w));
		be->copy_out(be, m, o.slot[0], sizeof(m));
		if (t == 1) /* element 5: w 0, g 0, m 0: sign(0) is 0, it stays */
			EXPECT(w[5] == 0.0f && m[5] == 0.0f);
		for (int i = 0; i < N; i++) {
			rw[i] = lion_ref(rw[i], g[i], &rm[i], lr, b1, b2, d);
			worst_w = fmax(worst_w, fabs(w[i] - rw[i]));
			worst_m = fmax(worst_m, fabs(m[i] - rm[i]));
		}
	}
	EXPECT_NEAR(worst_w, 0.0, 1e-6);
	EXPECT_NEAR(worst_m, 0.0, 1e-7);
	EXPECT(w[5] != 0.0f); /* and moved later */
	be->free(be, bw);
	be->free(be, bg);
	optim_free(&o);
}

static void check_lion(void)
{
	struct rig r;
	rig_init(&r, OPTIM_LION, -1.0f, 0);
	EXPECT(r.o.n_slots == 1);
	EXPECT_STR(r.o.slot_suffix[0], "Lion");
	EXPECT(r.o.slot[1] == NULL);
	EXPECT(r.o.hp.beta1 == 0.9f && r.o.hp.beta2 == 0.99f); /* Lion's, not Adam's */
	EXPECT(r.o.hp.weight_decay == 0.0f);
	/* lr 0.1, w 1, g 0.5: c = 0.05 > 0, w = 1 - 0.1 = 0.9, m = 0.005;
	 * g -2: c = 0.0045 - 0.2 < 0, w = 0.9 + 0.1 = 1.0, m = 0.00495 - 0.02 */
	EXPECT_NEAR(rig_step(&r, 0.5f, 1, 0.1f), 0.9, TOL);
	EXPECT_NEAR(rig_slot(&r, 0), 0.005, 1e-8);
	EXPECT_NEAR(rig_step(&r, -2.0f, 2, 0.1f), 1.0, TOL);
	EXPECT_NEAR(rig_slot(&r, 0), -0.01505, 1e-7);
	rig_free(&r);

	check_lion_run(-1.0f, -1.0f, -1.0f); /* the defaults */
	check_lion_run(0.5f, 0.9f, 0.3f);    /* set: they win */
}

/* The defaults each optimizer's row gives when --beta1, --beta2 and
 * --weight-decay are left 'default' (-1), and explicit values winning. */
static void check_defaults(void)
{
	static const struct {
		enum optim_kind kind;
		float beta1, beta2, wd;
	} want[] = {
		{OPTIM_ADAM, 0.9f, 0.999f, 0.0f},
		{OPTIM_ADAMW, 0.9f, 0.999f, 0.01f},
		{OPTIM_LION, 0.9f, 0.99f, 0.0f},
		{OPTIM_SGD, 0.9f, 0.999f, 0.0f},
	};
	for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
		struct rig r;
		rig_init(&r, want[k].kind, -1.0f, 0);
		EXPECT(r.cfg.beta1 < 0 && r.cfg.beta2 < 0); /* config_defaults: 'default' */
		EXPECT(r.o.hp.beta1 == want[k].beta1 && r.o.hp.beta2 == want[k].beta2);
		EXPECT(r.o.hp.weight_decay == want[k].wd);
		rig_free(&r);
	}
	struct rig r;
	rig_init(&r, OPTIM_LION, 0.2f, 0);
	r.cfg.beta1 = 0.5f;
	r.cfg.beta2 = 0.0f; /* an explicit 0 stays 0 */
	optim_free(&r.o);
	optim_init(&r.o, r.be, &r.cfg, 1);
	EXPECT(r.o.hp.beta1 == 0.5f && r.o.hp.beta2 == 0.0f && r.o.hp.weight_decay == 0.2f);
	rig_free(&r);
}

/* Every kind of OPTIM_KINDS has its own case in optim_elem: one step of
 * each from w 1, g 0.5 moves w, and none gives the NaN that a kind without
 * a case would. Adam's and AdamW's first step differ (AdamW decays). */
static void check_every_kind(void)
{
	float seen[16];
	int n = 0;
	for (; optim_names[n]; n++) {
		struct rig r;
		rig_init(&r, (enum optim_kind)n, -1.0f, 0);
		seen[n] = rig_step(&r, 0.5f, 1, 0.1f);
		EXPECT(isfinite(seen[n]) && seen[n] < 1.0f);
		rig_free(&r);
	}
	EXPECT(n >= 5 && n <= 16);
	EXPECT(seen[OPTIM_ADAM] != seen[OPTIM_ADAMW]);
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
	check_lion();
	check_defaults();
	check_every_kind();
	check_vector();
	check_schedule();
	return unit_done("test_optim");
}
