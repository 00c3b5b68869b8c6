/* The training loop of train.h: one global step, one EMA owner (rank 0), one
 * name registry; every rank runs the same code on its slice of each global
 * batch. */
#include "train.h"
#include "check.h"
#include "ckpt.h"
#include "dataset.h"
#include "ema.h"
#include "hash.h"
#include "log.h"
#include "model.h"
#include "optim.h"
#include "rng.h"
#include "version.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define RNG_STREAM_EPOCH 1000 /* + epoch: each epoch's sample order */
#define FASHION_DIR "/usr/share/datasets/fashion-mnist"

/* Seconds spent per phase, summed over steps (rank-local). */
struct timing {
	double data, forward, backward, allreduce, optimizer, ema;
	double rows; /* rows this rank computed */
};

struct trainer {
	struct config *cfg;
	struct comm *comm;
	const struct backend *be;
	struct dataset train, eval;   /* train: all rows; eval: this rank's slice */
	int has_eval;
	struct model model;
	struct optim optim;
	struct ema ema;
	uint32_t *perm;               /* (N) the order of epoch order_epoch */
	long order_epoch;             /* -1 before the first */
	struct staged {               /* a batch gathered on the host */
		float *x;             /* (R, D) alloc_host memory */
		int32_t *y;           /* (R) */
		int rows;
	} staged[2];                  /* this step's and the next one's */
	int slot;                     /* staged[slot] is this step's */
	int have_next;                /* staged[slot] is already filled */
	float *host_x;                /* (R, D) evaluation batches */
	int32_t *host_y;              /* (R) */
	float *host_state[4];         /* (P) each: w, shadow, slot 0, slot 1 (rank 0) */
	struct ckpt_var vars[4 * PARAM_MAX];
	int n_vars;
	char *config_text;
	long steps_per_epoch, total_steps;
	long global_step, epoch, pos; /* pos: global batches done in epoch */
	long last_ckpt_step;          /* step of the newest checkpoint written */
	struct timing t;
	int profile;
};

static volatile sig_atomic_t g_stop_signal;

static void on_stop_signal(int sig) { g_stop_signal = sig; }

void train_catch_stop_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

/* A phase boundary: waits for the backend when profiling so the time lands
 * in the right phase. */
static double mark(struct trainer *t)
{
	if (t->profile)
		t->be->synchronize();
	return log_now();
}

static int file_exists(const char *path) { return access(path, F_OK) == 0; }

int train_default_data(struct config *cfg, struct comm *c)
{
	if (cfg->data[0])
		return 0;
	const char *dir = getenv("MTRAIN_DATA_DIR") ? getenv("MTRAIN_DATA_DIR") : "data";
	const char *part[2] = {"train", "t10k"}, *name[2] = {"train", "test"};
	char out[2][PATH_LEN];
	for (int i = 0; i < 2; i++)
		snprintf(out[i], PATH_LEN, "%s/fashion-mnist-%s.h5", dir, name[i]);
	if (c->rank == 0) {
		for (int i = 0; i < 2 && !user_error_pending(); i++) {
			if (file_exists(out[i]))
				continue;
			char img[PATH_LEN], lab[PATH_LEN];
			snprintf(img, PATH_LEN, FASHION_DIR "/%s-images-idx3-ubyte.gz", part[i]);
			snprintf(lab, PATH_LEN, FASHION_DIR "/%s-labels-idx1-ubyte.gz", part[i]);
			if (!file_exists(img)) {
				user_error("no --data given and %s is missing: install Debian's "
					   "dataset-fashion-mnist package or pass --data FILE", img);
				break;
			}
			if (mkdir(dir, 0777) && errno != EEXIST) {
				user_error("%s: cannot create the data cache folder: %s", dir, strerror(errno));
				break;
			}
			log_info("importing %s into %s (once)", img, out[i]);
			dataset_import_idx(img, lab, out[i]);
		}
	}
	if (comm_user_errors(c))
		return -1;
	snprintf(cfg->data, PATH_LEN, "%s", out[0]);
	if (!cfg->eval_data[0])
		snprintf(cfg->eval_data, PATH_LEN, "%s", out[1]);
	return 0;
}

/* What every rank must agree on about its data: ranks on other nodes read
 * files of the same name that may not be the same files. */
struct data_print {
	long train_rows, eval_rows;
	int dim, classes, eval_dim;
	uint64_t train_sum; /* FNV-1a of the whole training set, x then y */
};

static struct data_print data_print_of(const struct trainer *t)
{
	struct data_print p;
	memset(&p, 0, sizeof(p));
	const struct dataset *d = &t->train;
	p.train_rows = d->n;
	p.dim = d->dim;
	p.classes = d->classes;
	size_t cells = (size_t)d->n * d->dim;
	p.train_sum = d->x8 ? fnv1a64(FNV1A64_INIT, d->x8, cells)
			    : fnv1a64(FNV1A64_INIT, d->xf, cells * sizeof(float));
	p.train_sum = fnv1a64(p.train_sum, d->y, (size_t)d->n * sizeof(int32_t));
	p.eval_rows = t->has_eval ? t->eval.n_total : 0;
	p.eval_dim = t->has_eval ? t->eval.dim : 0;
	return p;
}

/* Each rank compares its data with rank 0's (collective). */
static void check_same_data(struct trainer *t)
{
	struct comm *c = t->comm;
	const struct config *cfg = t->cfg;
	struct data_print mine = data_print_of(t), root = mine;
	comm_bcast_host(c, &root, sizeof(root), 0);
	if (mine.train_rows != root.train_rows || mine.dim != root.dim ||
	    mine.classes != root.classes || mine.train_sum != root.train_sum)
		user_error("--data %s is not rank 0's file: %ld rows of %d, %d classes, checksum "
			   "%016llx here; %ld rows of %d, %d classes, %016llx on rank 0 (every rank "
			   "must read the same data)", cfg->data, mine.train_rows, mine.dim,
			   mine.classes, (unsigned long long)mine.train_sum, root.train_rows,
			   root.dim, root.classes, (unsigned long long)root.train_sum);
	else if (mine.eval_rows != root.eval_rows || mine.eval_dim != root.eval_dim)
		user_error("--eval-data %s is not rank 0's file: %ld rows of %d here, %ld rows of "
			   "%d on rank 0 (every rank must read the same data)", cfg->eval_data,
			   mine.eval_rows, mine.eval_dim, root.eval_rows, root.eval_dim);
}

/* Data on every rank: the whole training set, this rank's eval slice. */
static int load_data(struct trainer *t)
{
	struct config *cfg = t->cfg;
	struct comm *c = t->comm;
	t->has_eval = cfg->eval_data[0] && strcmp(cfg->eval_data, "none");
	if (dataset_load(&t->train, cfg->data, 0, 1) == 0 && t->has_eval &&
	    dataset_load(&t->eval, cfg->eval_data, c->rank, c->size) == 0) {
		if (t->eval.dim != t->train.dim)
			user_error("%s: inputs have %d features but the training set %s has %d",
				   cfg->eval_data, t->eval.dim, cfg->data, t->train.dim);
		else
			dataset_check_labels(&t->eval, t->train.classes, "the training set");
	}
	/* Collective, so every rank takes part even after its own error. */
	if (comm_user_errors(c))
		return -1;
	check_same_data(t);
	if (!user_error_pending()) {
		if (cfg->batch > t->train.n)
			user_error("--batch %d is larger than the training set %s (%ld rows)",
				   cfg->batch, cfg->data, t->train.n);
		else if (cfg->batch < c->size)
			user_error("--batch %d is smaller than the number of ranks (%d): every "
				   "rank needs at least one row", cfg->batch, c->size);
		else if (t->train.classes < 2)
			user_error("%s: labels hold %d class; need at least 2", cfg->data,
				   t->train.classes);
	}
	return comm_user_errors(c) ? -1 : 0;
}

/* Every rank checks its registry against rank 0's: same names, same shapes,
 * same order. */
static int check_registry(struct trainer *t)
{
	struct comm *c = t->comm;
	struct params *root = xmalloc(sizeof(*root));
	const struct params *mine = &t->model.reg;
	if (c->rank == 0)
		*root = *mine;
	comm_bcast_host(c, root, sizeof(*root), 0);
	int n = root->n > mine->n ? root->n : mine->n;
	for (int i = 0; i < n; i++) {
		const struct param *a = i < root->n ? &root->p[i] : NULL;
		const struct param *b = i < mine->n ? &mine->p[i] : NULL;
		char sa[64] = "absent", sb[64] = "absent";
		if (a)
			params_shape_text(a->ndim, a->shape, sa, sizeof(sa));
		if (b)
			params_shape_text(b->ndim, b->shape, sb, sizeof(sb));
		if (a && b && !strcmp(a->name, b->name) && !strcmp(sa, sb))
			continue;
		if (a && b && strcmp(a->name, b->name))
			user_error("rank %d's model differs from rank 0's at variable %d: rank 0 "
				   "'%s' %s vs rank %d '%s' %s", c->rank, i, a->name, sa, c->rank,
				   b->name, sb);
		else
			user_error("rank %d's model differs from rank 0's: %s: rank 0 %s vs rank %d %s",
				   c->rank, a ? a->name : b->name, sa, c->rank, sb);
		break;
	}
	free(root);
	return comm_user_errors(c) ? -1 : 0;
}

/* The checkpoint's variable list: variables, EMA shadows, optimizer slots,
 * all pointing into rank 0's host staging. */
static void build_ckpt_vars(struct trainer *t)
{
	const struct params *reg = &t->model.reg;
	const char *suffix[4] = {NULL, EMA_SUFFIX, t->optim.slot_suffix[0], t->optim.slot_suffix[1]};
	int kinds = 2 + t->optim.n_slots;
	t->n_vars = 0;
	for (int k = 0; k < kinds; k++)
		for (int i = 0; i < reg->n; i++) {
			struct ckpt_var *v = &t->vars[t->n_vars++];
			const struct param *p = &reg->p[i];
			if (suffix[k])
				params_slot_name(p->name, suffix[k], v->name, sizeof(v->name));
			else
				snprintf(v->name, sizeof(v->name), "%s", p->name);
			v->ndim = p->ndim;
			v->shape[0] = p->shape[0];
			v->shape[1] = p->ndim > 1 ? p->shape[1] : 0;
			v->data = t->host_state[k] + p->offset;
		}
}

/* Backend buffers in the order of host_state. */
static void state_buffers(struct trainer *t, float *buf[4])
{
	buf[0] = t->model.w;
	buf[1] = t->ema.shadow;
	buf[2] = t->optim.slot[0];
	buf[3] = t->optim.slot[1];
}

static int save_checkpoint(struct trainer *t)
{
	struct comm *c = t->comm;
	ema_sync(&t->ema, c);
	int failed = 0;
	if (c->rank == 0) {
		float *buf[4];
		state_buffers(t, buf);
		size_t bytes = t->model.reg.total * sizeof(float);
		for (int k = 0; k < 2 + t->optim.n_slots; k++)
			t->be->copy_out(t->host_state[k], buf[k], bytes);
		struct ckpt_meta m = {
			.global_step = t->global_step,
			.epoch = t->epoch,
			.step_in_epoch = t->pos,
			.batch = t->cfg->batch,
			.seed = t->cfg->seed,
			.world_size = c->size,
			.input_dim = t->train.dim,
			.classes = t->train.classes,
			.train_rows = t->train.n,
			.config = t->config_text,
		};
		time_t secs = time(NULL);
		strftime(m.created, sizeof(m.created), "%Y-%m-%dT%H:%M:%SZ", gmtime(&secs));
		snprintf(m.version, sizeof(m.version), "%s", MTRAIN_VERSION);
		failed = ckpt_write(t->cfg->ckpt_dir, t->vars, t->n_vars, &m) != 0;
		if (!failed) {
			char path[1100];
			ckpt_path(t->cfg->ckpt_dir, t->global_step, path, sizeof(path));
			log_info("checkpoint %s step %ld", path, t->global_step);
			char json[JSON_PATH_LEN];
			metrics_write("{\"event\":\"checkpoint\",\"step\":%ld,\"path\":\"%s\"}",
				      t->global_step, json_escape(path, json, sizeof(json)));
			ckpt_prune(t->cfg->ckpt_dir, t->cfg->keep, t->global_step);
		}
	}
	t->last_ckpt_step = t->global_step;
	return comm_any(c, failed) ? -1 : 0;
}

/* With --resume never or FILE, checkpoints of another run above the start
 * step stay in --ckpt-dir (pruning leaves them alone), and a later --resume
 * auto would take them: say so. */
static void warn_newer_checkpoints(struct trainer *t, long start)
{
	char (*paths)[1024] = xmalloc(sizeof(*paths) * CKPT_MAX_FILES);
	long newest = -1;
	int n = ckpt_list(t->cfg->ckpt_dir, paths, CKPT_MAX_FILES);
	if (n > 0)
		sscanf(strrchr(paths[0], '/') + 1, "ckpt-%ld.h5", &newest);
	if (n > 0 && newest > start)
		log_warn("%s holds %s from another run, past this run's step %ld: a later "
			 "--resume auto would continue that run", t->cfg->ckpt_dir, paths[0], start);
	free(paths);
}

/* Rank 0 finds and reads the checkpoint --resume names; every rank then
 * receives the state. Returns 0 (resumed or fresh start) or -1 (user error). */
static int resume(struct trainer *t)
{
	struct config *cfg = t->cfg;
	struct comm *c = t->comm;
	struct ckpt_meta m;
	memset(&m, 0, sizeof(m));
	char used[1024] = "";
	if (c->rank == 0 && strcmp(cfg->resume, "never")) {
		if (strcmp(cfg->resume, "auto")) {
			if (ckpt_read(cfg->resume, t->vars, t->n_vars, 0, &m) == 0)
				snprintf(used, sizeof(used), "%s", cfg->resume);
		} else {
			char (*paths)[1024] = xmalloc(sizeof(*paths) * CKPT_MAX_FILES);
			int n = ckpt_list(cfg->ckpt_dir, paths, CKPT_MAX_FILES);
			for (int i = 0; i < n && !used[0]; i++) {
				int rc = ckpt_read(paths[i], t->vars, t->n_vars, 0, &m);
				if (rc == 0)
					snprintf(used, sizeof(used), "%s", paths[i]);
				else if (rc == -2) {
					log_warn("skipping checkpoint: %s", user_error_text());
					user_error_clear();
				} else
					break;
			}
			free(paths);
		}
		if (used[0] && m.batch != cfg->batch)
			user_error("%s: written with --batch %d, this run has --batch %d (the data "
				   "position counts in global batches)", used, m.batch, cfg->batch);
		else if (used[0] && m.seed != cfg->seed)
			user_error("%s: written with --seed %llu, this run has --seed %llu", used,
				   (unsigned long long)m.seed, (unsigned long long)cfg->seed);
		else if (used[0] && m.train_rows != t->train.n)
			user_error("%s: written for a training set of %ld rows, --data %s has %ld (the "
				   "data position counts in its rows)", used, m.train_rows, cfg->data,
				   t->train.n);
		else if (used[0] && (m.global_step < 0 || m.epoch < 0 || m.step_in_epoch < 0 ||
				     m.global_step / t->steps_per_epoch != m.epoch ||
				     m.global_step % t->steps_per_epoch != m.step_in_epoch))
			user_error("%s: global_step %ld, epoch %ld and step_in_epoch %ld do not agree "
				   "with %ld steps per epoch (edited or corrupt)", used, m.global_step,
				   m.epoch, m.step_in_epoch, t->steps_per_epoch);
		/* Other hyper-parameters are allowed (a longer run, a lower
		 * rate) but should not pass unnoticed: name the first. */
		char a[PATH_LEN + 64], b[PATH_LEN + 64];
		if (used[0] && !user_error_pending() && m.config &&
		    config_diff(m.config, t->config_text, OPT_MAY_CHANGE, a, b, sizeof(a)))
			log_warn("%s was written with '%s'; this run has '%s'", used, a, b);
	}
	if (c->rank == 0 && !user_error_pending())
		warn_newer_checkpoints(t, used[0] ? m.global_step : 0);
	if (comm_user_errors(c)) {
		free(m.config);
		return -1;
	}
	long pos[4] = {used[0] != 0, m.global_step, m.epoch, m.step_in_epoch};
	comm_bcast_host(c, pos, sizeof(pos), 0);
	comm_bcast_host(c, used, sizeof(used), 0);
	free(m.config);
	if (!pos[0])
		return 0;
	float *buf[4];
	state_buffers(t, buf);
	size_t n = t->model.reg.total;
	for (int k = 0; k < 2 + t->optim.n_slots; k++) {
		if (c->rank == 0)
			t->be->copy_in(buf[k], t->host_state[k], n * sizeof(float));
		c->ops->bcast(c, buf[k], n, 0);
	}
	t->global_step = pos[1];
	t->epoch = pos[2];
	t->pos = pos[3];
	t->last_ckpt_step = t->global_step;
	log_info("resumed from %s at step %ld (epoch %ld, batch %ld of it)", used,
		 t->global_step, t->epoch + 1, t->pos);
	return 0;
}

/* Evaluates the current weights (raw, or EMA when swapped in) on the eval
 * set, sharded across ranks. out = {mean loss, accuracy}. Collective. */
static void evaluate(struct model *m, const struct dataset *d, float *hx, int32_t *hy,
		     struct comm *c, double out[2])
{
	float before[2], stats[2];
	model_take_stats(m, before); /* training's, kept for its next line */
	for (long begin = 0; begin < d->n; begin += m->max_rows) {
		int rows = (int)(d->n - begin < m->max_rows ? d->n - begin : m->max_rows);
		dataset_rows(d, begin, rows, hx, hy);
		model_set_batch(m, hx, hy, rows);
		model_forward(m, rows, 0.0f);
	}
	model_take_stats(m, stats);
	m->be->copy_in(m->stats, before, sizeof(before));
	double sums[3] = {stats[0], stats[1], (double)d->n};
	comm_sum_host(c, sums, 3);
	out[0] = sums[2] ? sums[0] / sums[2] : 0.0;
	out[1] = sums[2] ? sums[1] / sums[2] : 0.0;
}

static void run_eval(struct trainer *t)
{
	double raw[2], ema[2];
	ema_sync(&t->ema, t->comm);
	evaluate(&t->model, &t->eval, t->host_x, t->host_y, t->comm, raw);
	ema_swap(&t->ema, &t->model.w);
	evaluate(&t->model, &t->eval, t->host_x, t->host_y, t->comm, ema);
	ema_swap(&t->ema, &t->model.w);
	log_info("eval step %ld epoch %ld raw_loss %.4f raw_acc %.4f ema_loss %.4f ema_acc %.4f",
		 t->global_step, t->epoch + (t->pos ? 1 : 0), raw[0], raw[1], ema[0], ema[1]);
	char n[4][32];
	metrics_write("{\"event\":\"eval\",\"step\":%ld,\"epoch\":%ld,\"raw_loss\":%s,"
		      "\"raw_acc\":%s,\"ema_loss\":%s,\"ema_acc\":%s}",
		      t->global_step, t->epoch + (t->pos ? 1 : 0), json_num(raw[0], n[0], 32),
		      json_num(raw[1], n[1], 32), json_num(ema[0], n[2], 32), json_num(ema[1], n[3], 32));
}

/* A layer's gradients are final: start reducing them (grad_ready_fn). */
static void start_bucket(void *comm, float *g, size_t n)
{
	struct comm *c = comm;
	c->ops->allreduce_start(c, g, n);
}

static void build_order(struct trainer *t, long epoch)
{
	struct rng r;
	rng_init(&r, t->cfg->seed, RNG_STREAM_EPOCH + (uint64_t)epoch);
	rng_permutation(&r, t->perm, (size_t)t->train.n);
	t->order_epoch = epoch;
}

/* Gathers this rank's rows [r*B/N, (r+1)*B/N) of global batch pos of epoch
 * into s. */
static void stage(struct trainer *t, long epoch, long pos, struct staged *s)
{
	struct comm *c = t->comm;
	long batch = t->cfg->batch;
	if (t->order_epoch != epoch)
		build_order(t, epoch);
	long lo = pos * batch + batch * c->rank / c->size;
	long hi = pos * batch + batch * (c->rank + 1) / c->size;
	s->rows = (int)(hi - lo);
	dataset_gather(&t->train, t->perm + lo, s->rows, s->x, s->y);
}

/* One optimizer step on this rank's slice of global batch t->pos. While the
 * backend runs backward, the host gathers the next step's batch into the
 * other staging buffer. That buffer's last copy, a step ago, is done: the
 * host has since waited for that step's all-reduce, which follows it. */
static void train_step(struct trainer *t, long *rows_since_log)
{
	struct config *cfg = t->cfg;
	struct comm *c = t->comm;
	struct model *m = &t->model;
	double t0 = mark(t);
	struct staged *cur = &t->staged[t->slot];
	if (!t->have_next)
		stage(t, t->epoch, t->pos, cur);
	int rows = cur->rows;
	model_set_batch_async(m, cur->x, cur->y, rows);
	double t1 = mark(t);
	/* Scaling by 1/B here makes the all-reduced sum the global-batch mean. */
	model_forward(m, rows, 1.0f / (float)cfg->batch);
	*rows_since_log += rows;
	double t2 = mark(t);
	model_backward(m, rows, start_bucket, c);
	double t3 = mark(t);
	t->have_next = t->global_step + 1 < t->total_steps;
	if (t->have_next) {
		long pos = t->pos + 1, epoch = t->epoch;
		if (pos == t->steps_per_epoch)
			pos = 0, epoch++;
		stage(t, epoch, pos, &t->staged[t->slot ^ 1]);
		t->slot ^= 1;
	}
	double t3b = mark(t);
	t->t.data += t3b - t3;
	c->ops->allreduce_wait(c);
	double t4 = mark(t);
	float lr = optim_lr(cfg, t->global_step, t->total_steps);
	optim_step(&t->optim, m->w, m->g, t->global_step + 1, lr);
	t->global_step++;
	double t5 = mark(t);
	ema_update(&t->ema, m->w, t->global_step);
	if (t->global_step % cfg->ema_sync_every == 0)
		ema_sync(&t->ema, c);
	double t6 = mark(t);
	t->t.data += t1 - t0;
	t->t.forward += t2 - t1;
	t->t.backward += t3 - t2;
	t->t.allreduce += t4 - t3b;
	t->t.optimizer += t5 - t4;
	t->t.ema += t6 - t5;
	t->t.rows += rows;
}


/* Forward plus backward FLOPs for one sample. */
static double flops_per_sample(const struct model *m)
{
	double f = 0;
	for (int l = 0; l < m->n_layers; l++) {
		double mac = (double)m->layer[l].in * m->layer[l].out;
		f += 2 * mac * (l ? 3 : 2); /* forward, weight grad, input grad */
	}
	return f;
}

/* The closing line: rank 0's time per step by phase, then the steady-state
 * step time and samples/s (evaluation and checkpoints left out). Phase times
 * and GFLOP/s are exact only when every phase boundary waits for the
 * backend (MTRAIN_PROFILE=1; on the CPU they always are). */
static void report_timing(struct trainer *t, long steps, double wall)
{
	if (steps <= 0)
		return;
	double ms = 1e3 / (double)steps;
	double compute = t->t.forward + t->t.backward;
	char gflops[32] = "n/a";
	if (t->profile || !t->be->stream())
		snprintf(gflops, sizeof(gflops), "%.2f",
			 compute > 0 ? flops_per_sample(&t->model) * t->t.rows / compute * 1e-9 : 0.0);
	log_info("timing ms/step data %.3f forward %.3f backward %.3f allreduce %.3f "
		 "optimizer %.3f ema %.3f total %.3f samples/s %.0f gflops %s",
		 t->t.data * ms, t->t.forward * ms, t->t.backward * ms, t->t.allreduce * ms,
		 t->t.optimizer * ms, t->t.ema * ms, wall * ms,
		 (double)t->cfg->batch * (double)steps / wall, gflops);
}

/* Whether path (a folder when dir) exists writable, or could be created in
 * a writable parent or in new_dir (NULL: none). 0, or -1 with a user_error. */
static int check_writable(const char *flag, const char *path, int dir, const char *new_dir)
{
	struct stat st;
	if (stat(path, &st) == 0) {
		if (dir && !S_ISDIR(st.st_mode))
			return user_error("%s %s: exists and is not a folder", flag, path);
		if (!dir && S_ISDIR(st.st_mode))
			return user_error("%s %s: is a folder", flag, path);
		if (access(path, W_OK))
			return user_error("%s %s: not writable: %s", flag, path, strerror(errno));
		return 0;
	}
	char parent[PATH_LEN];
	snprintf(parent, sizeof(parent), "%s", path);
	char *slash = strrchr(parent, '/');
	if (!slash)
		snprintf(parent, sizeof(parent), ".");
	else if (slash == parent)
		slash[1] = 0;
	else
		*slash = 0;
	/* Inside a folder this run will create (--metrics in --ckpt-dir). */
	if (new_dir && !strcmp(parent, new_dir))
		return 0;
	if (access(parent, W_OK))
		return user_error("%s %s: cannot create it in %s: %s", flag, path, parent,
				  strerror(errno));
	return 0;
}

/* Whether two ranks of one node got the same GPU (collective). With
 * is_error, the later of the two records a user error naming both. The
 * node is the one NCCL sees: NCCL_HOSTID when it is set (NCCL then takes
 * the ranks for different hosts and connects them over the network, which
 * works on one GPU, slowly), the host name otherwise. */
static int shared_gpu(const struct backend *be, struct comm *c, int is_error)
{
	struct who {
		char host[64];
		char device[64];
	} me, *all = xcalloc((size_t)c->size, sizeof(*all));
	memset(&me, 0, sizeof(me));
	const char *nccl_host = getenv("NCCL_HOSTID");
	snprintf(me.host, sizeof(me.host), "%s", nccl_host && *nccl_host ? nccl_host : c->host);
	be->device_id(me.device, sizeof(me.device));
	comm_allgather_host(c, &me, all, sizeof(me));
	int shared = 0;
	for (int j = 0; j < c->size; j++)
		for (int i = 0; i < j; i++)
			if (!strcmp(all[i].host, all[j].host) && !strcmp(all[i].device, all[j].device)) {
				if (is_error && j == c->rank && !shared)
					user_error("--device cuda: ranks %d and %d on %s would share GPU %s; "
						   "start at most one rank per GPU (check "
						   "CUDA_VISIBLE_DEVICES)", i, j, c->host, me.device);
				shared = 1;
			}
	free(all);
	return shared;
}

/* The backend every rank uses, and the communicator's data plane to match:
 * CUDA + NCCL when asked for, or under auto when every rank sees a GPU;
 * the CPU + MPI otherwise. NULL after a user error (collective). */
static const struct backend *select_backend(const struct config *cfg, struct comm *c)
{
	const struct backend *cuda = NULL, *be = backend_cpu();
	const char *why = "";
	int fatal = 0;
	if (cfg->device != DEVICE_CPU) {
		cuda = backend_cuda_open(c->local_rank, c->local_size, &why, &fatal);
		if (fatal || (cfg->device == DEVICE_CUDA && !cuda))
			user_error("--device %s: %s", kind_name(device_names, cfg->device), why);
	}
	if (comm_user_errors(c))
		return NULL;
	int every_rank = !comm_any(c, cuda == NULL);
	if (cuda && every_rank && shared_gpu(cuda, c, cfg->device == DEVICE_CUDA)) {
		if (comm_user_errors(c))
			return NULL;
		log_info("two ranks would share a GPU: every rank computes on the CPU");
	} else if (cuda && every_rank)
		be = cuda;
	else if (cuda)
		log_info("some ranks see no GPU: every rank computes on the CPU");
	if (be->set_precision((enum precision)cfg->precision))
		user_error("--precision bf16: the %s backend computes in fp32 only (use --device cuda)",
			   be->name);
	if (comm_user_errors(c))
		return NULL;
	comm_attach_device(c, be);
	return be;
}

static int setup(struct trainer *t)
{
	struct config *cfg = t->cfg;
	struct comm *c = t->comm;
	t->be = select_backend(cfg, c);
	if (!t->be)
		return -1;
	/* Outputs are checked first, created last: nothing is written (the
	 * default data's cache aside) unless the whole set-up succeeds. */
	if (c->rank == 0 && !check_writable("--ckpt-dir", cfg->ckpt_dir, 1, NULL) && cfg->metrics[0])
		check_writable("--metrics", cfg->metrics, 0, cfg->ckpt_dir);
	if (comm_user_errors(c) || train_default_data(cfg, c) || load_data(t))
		return -1;
	t->steps_per_epoch = t->train.n / cfg->batch;
	t->total_steps = cfg->steps ? cfg->steps : (long)cfg->epochs * t->steps_per_epoch;
	int local_max = (cfg->batch + c->size - 1) / c->size;
	/* Evaluation batches need no more rows than this rank's eval slice. */
	long eval_rows = t->eval.n < cfg->eval_batch ? t->eval.n : cfg->eval_batch;
	int max_rows = local_max > eval_rows ? local_max : (int)eval_rows;
	model_init(&t->model, t->be, t->train.dim, t->train.classes, cfg->hidden, cfg->n_hidden,
		   (enum act_kind)cfg->act, max_rows);
	if (check_registry(t))
		return -1;
	size_t P = t->model.reg.total;
	optim_init(&t->optim, t->be, cfg, P);
	t->perm = xmalloc(sizeof(uint32_t) * (size_t)t->train.n);
	t->host_x = xmalloc(sizeof(float) * (size_t)max_rows * t->train.dim);
	t->host_y = xmalloc(sizeof(int32_t) * (size_t)max_rows);
	t->order_epoch = -1;
	for (int i = 0; i < 2; i++) {
		t->staged[i].x = t->be->alloc_host(sizeof(float) * (size_t)local_max * t->train.dim);
		t->staged[i].y = t->be->alloc_host(sizeof(int32_t) * (size_t)local_max);
	}
	for (int k = 0; k < 4; k++)
		t->host_state[k] = c->rank == 0 ? xcalloc(P, sizeof(float)) : NULL;
	/* Initial weights: rank 0's, broadcast as DDP does. */
	float *init = xmalloc(sizeof(float) * P);
	model_glorot(&t->model, cfg->seed, init);
	t->be->copy_in(t->model.w, init, P * sizeof(float));
	free(init);
	c->ops->bcast(c, t->model.w, P, 0);
	ema_init(&t->ema, t->be, t->model.w, P, cfg->ema_decay, cfg->ema_num_updates,
		 c->rank == 0);
	build_ckpt_vars(t);
	t->config_text = config_to_text(cfg);
	if (resume(t))
		return -1;
	/* Nothing is written before this point. */
	if (c->rank == 0) {
		int made = mkdir(cfg->ckpt_dir, 0777) == 0;
		if (!made && errno != EEXIST)
			user_error("--ckpt-dir %s: cannot create: %s", cfg->ckpt_dir, strerror(errno));
		else if (metrics_open(cfg->metrics) && made)
			rmdir(cfg->ckpt_dir); /* the run did not start: leave nothing */
	}
	return comm_user_errors(c) ? -1 : 0;
}

static void teardown(struct trainer *t)
{
	metrics_close();
	ema_free(&t->ema);
	optim_free(&t->optim);
	model_free(&t->model);
	dataset_free(&t->train);
	dataset_free(&t->eval);
	free(t->perm);
	free(t->host_x);
	free(t->host_y);
	for (int i = 0; t->be && i < 2; i++) {
		t->be->free_host(t->staged[i].x);
		t->be->free_host(t->staged[i].y);
	}
	for (int k = 0; k < 4; k++)
		free(t->host_state[k]);
	free(t->config_text);
}

static void log_start(struct trainer *t)
{
	struct config *cfg = t->cfg;
	char layers[256];
	config_hidden_text(cfg, layers, sizeof(layers));
	for (char *p = layers; *p; p++)
		if (*p == ',')
			*p = '-';
	char backend[64];
	snprintf(backend, sizeof(backend), "%s%s", t->be->name,
		 cfg->precision == PRECISION_BF16 ? " bf16" : "");
	/* Rank r takes rows [r*B/N, (r+1)*B/N): B/N each, or its floor and ceiling. */
	int low = cfg->batch / t->comm->size, high = (cfg->batch + t->comm->size - 1) / t->comm->size;
	char per_rank[32];
	if (low == high)
		snprintf(per_rank, sizeof(per_rank), "%d", low);
	else
		snprintf(per_rank, sizeof(per_rank), "%d-%d", low, high);
	log_info("mtrain %s: %d rank%s, backend %s, communicator %s; model %d-%s-%d %s, "
		 "%zu parameters; %s lr %g, batch %d (%s per rank), %ld steps (%ld per epoch)",
		 MTRAIN_VERSION, t->comm->size, t->comm->size == 1 ? "" : "s", backend,
		 t->comm->ops->name, t->train.dim, layers, t->train.classes,
		 kind_name(act_names, cfg->act), params_count(&t->model.reg),
		 kind_name(optim_names, cfg->optim),
		 cfg->lr, cfg->batch, per_rank, t->total_steps, t->steps_per_epoch);
	log_info("data %s (%ld rows), eval %s", cfg->data, t->train.n,
		 t->has_eval ? cfg->eval_data : "none");
	char data[JSON_PATH_LEN], eval[JSON_PATH_LEN];
	metrics_write("{\"event\":\"start\",\"step\":%ld,\"total_steps\":%ld,\"ranks\":%d,"
		      "\"backend\":\"%s\",\"batch\":%d,\"data\":\"%s\",\"eval_data\":\"%s\"}",
		      t->global_step, t->total_steps, t->comm->size, backend, cfg->batch,
		      json_escape(cfg->data, data, sizeof(data)),
		      json_escape(t->has_eval ? cfg->eval_data : "none", eval, sizeof(eval)));
}

static int train_loop(struct trainer *t)
{
	struct config *cfg = t->cfg;
	struct comm *c = t->comm;
	long first_step = t->global_step, interval_steps = 0;
	long rows = 0; /* this rank's rows since the last progress line */
	double t_interval = log_now();
	/* The closing timing line is steady state: it leaves out the first
	 * steps (lazy start-up on a GPU), evaluations and checkpoints. */
	long warm = t->total_steps - first_step > 50 ? 5 : 0;
	double t_start = t_interval, t_aside = 0, aside_in_interval = 0;
	while (t->global_step < t->total_steps) {
		train_step(t, &rows);
		interval_steps++;
		if (t->global_step - first_step == warm && warm) {
			t->be->synchronize();
			memset(&t->t, 0, sizeof(t->t));
			t_start = log_now();
			t_aside = 0;
		}
		t->pos++;
		int epoch_end = t->pos == t->steps_per_epoch;
		if (epoch_end) {
			t->epoch++;
			t->pos = 0;
		}
		int last = t->global_step == t->total_steps;
		if (t->global_step % cfg->log_every == 0 || last) {
			float stats[2];
			model_take_stats(&t->model, stats);
			double sums[2] = {stats[0], (double)rows};
			comm_sum_host(c, sums, 2);
			/* Evaluations and checkpoints are not training speed. */
			double tn = log_now(), dt = tn - t_interval - aside_in_interval;
			double per_step = dt / (double)interval_steps;
			float lr = optim_lr(cfg, t->global_step - 1, t->total_steps);
			log_info("step %ld/%ld epoch %ld loss %.4f lr %.3e samples/s %.0f eta %.0fs",
				 t->global_step, t->total_steps, t->epoch + (t->pos ? 1 : 0),
				 sums[0] / sums[1], lr, sums[1] / dt,
				 per_step * (double)(t->total_steps - t->global_step));
			char n[3][32];
			metrics_write("{\"event\":\"train\",\"step\":%ld,\"epoch\":%ld,\"loss\":%s,"
				      "\"lr\":%s,\"samples_per_s\":%s}",
				      t->global_step, t->epoch + (t->pos ? 1 : 0),
				      json_num(sums[0] / sums[1], n[0], 32), json_num(lr, n[1], 32),
				      json_num(sums[1] / dt, n[2], 32));
			rows = 0;
			interval_steps = 0;
			t_interval = tn;
			aside_in_interval = 0;
		}
		int eval = t->has_eval && (epoch_end || last);
		int ckpt = epoch_end || last || (cfg->ckpt_every && t->global_step % cfg->ckpt_every == 0);
		if (eval || ckpt) {
			t->be->synchronize(); /* pending steps count as training */
			double t0 = log_now();
			if (eval)
				run_eval(t);
			if (ckpt && save_checkpoint(t))
				return 1;
			double aside = log_now() - t0;
			t_aside += aside;
			aside_in_interval += aside;
		}
		/* Every rank stops at the same step: agreement on the signal flag. */
		if (comm_any(c, g_stop_signal) && !last) {
			if (t->last_ckpt_step != t->global_step && save_checkpoint(t))
				return 1;
			log_info("stopped by signal at step %ld; resume with --resume auto",
				 t->global_step);
			metrics_write("{\"event\":\"end\",\"step\":%ld,\"reason\":\"signal\"}",
				      t->global_step);
			return 0;
		}
	}
	t->be->synchronize();
	report_timing(t, t->global_step - first_step - warm, log_now() - t_start - t_aside);
	metrics_write("{\"event\":\"end\",\"step\":%ld,\"reason\":\"done\"}", t->global_step);
	return 0;
}

/* Every rank must run the same job: ranks started with other flags would
 * take other branches and wait in different collectives. --layers is left
 * to check_registry, which names the first differing variable. */
static int check_same_config(const struct config *cfg, struct comm *c)
{
	char *mine = config_to_text(cfg);
	long len = (long)strlen(mine) + 1;
	comm_bcast_host(c, &len, sizeof(len), 0);
	char *root = xmalloc((size_t)len);
	if (c->rank == 0)
		memcpy(root, mine, (size_t)len);
	comm_bcast_host(c, root, (size_t)len, 0);
	char a[PATH_LEN + 64], b[PATH_LEN + 64];
	if (config_diff(root, mine, OPT_SHAPE, a, b, sizeof(a)))
		user_error("started with other options than rank 0: rank 0 has '%s', rank %d '%s'",
			   a, c->rank, b);
	free(root);
	free(mine);
	return comm_user_errors(c) ? -1 : 0;
}

int train_main(struct config *cfg, struct comm *c)
{
	struct trainer t;
	memset(&t, 0, sizeof(t));
	t.cfg = cfg;
	t.comm = c;
	t.profile = getenv("MTRAIN_PROFILE") != NULL;
	c->timeout = cfg->comm_timeout;
	int status = EXIT_USER;
	if (check_same_config(cfg, c) == 0 && setup(&t) == 0) {
		log_start(&t);
		if (t.global_step >= t.total_steps)
			log_info("nothing to do: step %ld already reaches the %ld steps asked for",
				 t.global_step, t.total_steps);
		status = train_loop(&t);
	}
	teardown(&t);
	return status;
}

int eval_main(const char *ckpt, const char *eval_data, const char *which, int device,
	      struct comm *c)
{
	struct config cfg;
	struct ckpt_meta m;
	memset(&m, 0, sizeof(m));
	config_defaults(&cfg);
	int want_raw = strcmp(which, "ema") != 0, want_ema = strcmp(which, "raw") != 0;
	if (strcmp(which, "raw") && strcmp(which, "ema") && strcmp(which, "both"))
		user_error("--weights: '%s' is not one of raw|ema|both", which);
	else if (c->rank == 0 && ckpt_read_meta(ckpt, &m) == 0)
		config_parse_text(&cfg, m.config ? m.config : "", ckpt);
	if (comm_user_errors(c))
		return EXIT_USER;
	/* The checkpoint's configuration and dimensions, on every rank. */
	comm_bcast_host(c, &cfg, sizeof(cfg), 0);
	c->timeout = cfg.comm_timeout;
	int dims[2] = {m.input_dim, m.classes};
	comm_bcast_host(c, dims, sizeof(dims), 0);
	free(m.config);
	cfg.device = device;
	cfg.precision = PRECISION_FP32; /* evaluate exactly, wherever it trained */
	if (eval_data)
		snprintf(cfg.eval_data, PATH_LEN, "%s", eval_data);
	struct trainer t;
	memset(&t, 0, sizeof(t));
	t.cfg = &cfg;
	t.comm = c;
	t.be = select_backend(&cfg, c);
	if (!t.be)
		return EXIT_USER;
	if (!cfg.eval_data[0] || !strcmp(cfg.eval_data, "none"))
		user_error("%s: the checkpoint names no eval data; pass --eval-data FILE", ckpt);
	else if (dataset_load(&t.eval, cfg.eval_data, c->rank, c->size) == 0) {
		if (t.eval.dim != dims[0])
			user_error("%s: inputs have %d features; the checkpoint's model takes %d",
				   cfg.eval_data, t.eval.dim, dims[0]);
		else
			dataset_check_labels(&t.eval, dims[1], "the checkpoint's model");
	}
	if (comm_user_errors(c)) {
		dataset_free(&t.eval);
		return EXIT_USER;
	}
	model_init(&t.model, t.be, dims[0], dims[1], cfg.hidden, cfg.n_hidden,
		   (enum act_kind)cfg.act, cfg.eval_batch);
	size_t P = t.model.reg.total;
	t.ema.be = t.be;
	t.ema.n = P;
	t.ema.shadow = t.be->alloc(P * sizeof(float));
	for (int k = 0; k < 2; k++)
		t.host_state[k] = xcalloc(P, sizeof(float));
	t.host_x = xmalloc(sizeof(float) * (size_t)cfg.eval_batch * dims[0]);
	t.host_y = xmalloc(sizeof(int32_t) * (size_t)cfg.eval_batch);
	build_ckpt_vars(&t); /* no optimizer: variables and shadows only */
	if (c->rank == 0 && ckpt_read(ckpt, t.vars, t.n_vars, 1, &m) == 0)
		free(m.config);
	int status = EXIT_USER;
	if (!comm_user_errors(c)) {
		float *buf[4];
		state_buffers(&t, buf);
		for (int k = 0; k < 2; k++) {
			t.be->copy_in(buf[k], t.host_state[k], P * sizeof(float));
			c->ops->bcast(c, buf[k], P, 0);
		}
		double res[2];
		if (want_raw) {
			evaluate(&t.model, &t.eval, t.host_x, t.host_y, c, res);
			log_info("eval %s raw loss %.4f acc %.4f (%ld rows)", ckpt, res[0], res[1],
				 t.eval.n_total);
		}
		if (want_ema) {
			ema_swap(&t.ema, &t.model.w);
			evaluate(&t.model, &t.eval, t.host_x, t.host_y, c, res);
			ema_swap(&t.ema, &t.model.w);
			log_info("eval %s ema loss %.4f acc %.4f (%ld rows)", ckpt, res[0], res[1],
				 t.eval.n_total);
		}
		status = 0;
	}
	ema_free(&t.ema);
	teardown(&t);
	return status;
}
