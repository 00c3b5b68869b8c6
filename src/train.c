/* The training loop of train.h: set-up, the step (with batch staging and
 * its timing), when to evaluate and save, and stopping on a signal at a step every
 * rank agrees on. One global step, one EMA owner (rank 0), one name
 * registry; every rank runs the same code on its slice of each global
 * batch. */
#include "train.h"
#include "agree.h"
#include "check.h"
#include "ckpt.h"
#include "dataset.h"
#include "default_data.h"
#include "ema.h"
#include "eval.h"
#include "fault.h"
#include "log.h"
#include "model.h"
#include "optim.h"
#include "paths.h"
#include "report.h"
#include "resources.h"
#include "loader.h"
#include "state.h"
#include "tensorboard.h"
#include "timeline.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


struct trainer {
	struct config *cfg;
	struct comm *comm;
	const struct backend *be;
	struct dataset train, eval;   /* train: all rows; eval: this rank's slice */
	int has_eval;
	struct model model;
	struct optim optim;           /* over this rank's shard */
	struct shard shard;           /* the trainable values this rank's
				       * optimizer updates: all of them, or its
				       * ZeRO-1 shard */
	struct ema ema;
	struct state state;           /* what a checkpoint holds */
	struct evaluator evaluator;
	struct loader loader;         /* this rank's rows of each batch */
	char *config_text;
	long steps_per_epoch, total_steps;
	struct position at;           /* global step, epoch, batch in epoch */
	long last_ckpt_step;          /* step of the newest checkpoint written */
	struct timing t;
	int profile;
	int tracing;                  /* the timeline records this step */
	int lock;                     /* rank 0: --ckpt-dir's lock, or -1 */
	int bad_in_row;               /* steps skipped in a row (NaN/Inf) */
	float *replica_host;          /* (P) --check-replicas scratch, or NULL */
	int stats_apart;              /* the ranks' moving statistics may differ
				       * (local batchnorm statistics, a step
				       * since the last mean_moving_stats) */
	struct test_fault fault;      /* a test's (MTRAIN_TEST_FAULT), or none */
	long skipped;                 /* steps skipped in all */
};

static volatile sig_atomic_t g_stop_signal;

static void on_stop_signal(int sig) { g_stop_signal = sig; }

static const int stop_signals[] = {SIGUSR1, SIGTERM};

void train_catch_stop_signals(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
		sigaction(stop_signals[i], &sa, NULL);
}

void train_hold_stop_signals(int hold)
{
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(stop_signals) / sizeof(stop_signals[0]); i++)
		sigaddset(&set, stop_signals[i]);
	sigprocmask(hold ? SIG_BLOCK : SIG_UNBLOCK, &set, NULL);
}

/* A phase boundary: waits for the backend when profiling or tracing this
 * step, so the time lands in the right phase. */
static double mark(struct trainer *t)
{
	if (t->profile || t->tracing)
		t->be->synchronize(t->be);
	return log_now();
}

/* --check-replicas: the weights (and the shadows, just synced) agree
 * bitwise on every rank. 0, or -1 after rank 0 named the first drift. */
static int check_replicas(struct trainer *t, int shadows)
{
	if (!t->replica_host)
		return 0;
	const struct params *reg = &t->model.reg;
	long step = t->at.global_step;
	return agree_replicas(t->be, t->model.w, reg, t->replica_host, "weights", step, t->comm) ||
	       (shadows && agree_replicas(t->be, t->ema.shadow, reg, t->replica_host,
					  "EMA shadows", step, t->comm));
}

/* Each rank's non-trainable variables (the moving statistics of batchnorm
 * with each rank's own batch statistics) = their mean over the ranks: one
 * copy under one name, whichever rank writes or evaluates. */
static void mean_moving_stats(struct trainer *t)
{
	if (t->stats_apart)
		ema_mean_state(&t->ema, t->model.w, t->comm);
	t->stats_apart = 0;
}

/* Rank 0's EMA shadows on every rank, and the moving statistics averaged. */
static void sync_replicas(struct trainer *t)
{
	ema_sync(&t->ema, t->comm);
	mean_moving_stats(t);
}

/* --sync-bn's sum over ranks (sum_fn). Gradient buckets in flight are
 * completed first: the MPI plane joins adjacent buffers into one call, and
 * buf is not a gradient. */
static void sum_over_ranks(void *comm, float *buf, size_t n)
{
	struct comm *c = comm;
	c->ops->allreduce_wait(c);
	c->ops->allreduce_start(c, buf, n);
	c->ops->allreduce_wait(c);
}

static int save_checkpoint(struct trainer *t)
{
	const struct config *cfg = t->cfg;
	sync_replicas(t);
	if (check_replicas(t, 1))
		return -1; /* no checkpoint of replicas that disagree */
	struct ckpt_meta m = {
		.global_step = t->at.global_step,
		.epoch = t->at.epoch,
		.step_in_epoch = t->at.pos,
		.batch = cfg->batch,
		.seed = cfg->seed,
		.world_size = t->comm->size,
		.input_dim = t->train.dim,
		.classes = t->train.classes,
		.train_rows = t->train.n,
		.config = t->config_text,
	};
	t->last_ckpt_step = t->at.global_step;
	int rc = state_save(&t->state, &m, cfg->ckpt_dir, cfg->keep, t->comm);
	tensorboard_flush();
	return rc;
}

/* A layer's gradients are final: start reducing them (grad_ready_fn). */
static void start_bucket(void *comm, float *g, size_t n)
{
	struct comm *c = comm;
	c->ops->allreduce_start(c, g, n);
}

/* The step's gradients (summed over ranks, so the same on every rank and
 * every rank decides alike) hold NaN or Inf: nothing changes (weights,
 * slots, shadows, step and data position), the staged batch is kept for
 * the retry, and the loss summed since the last line is dropped. */
static void skip_step(struct trainer *t, struct progress *p)
{
	loader_retry(&t->loader);
	float dropped[2];
	model_take_stats(&t->model, dropped);
	p->rows = 0;
	t->bad_in_row++;
	t->skipped++;
	long step = t->at.global_step + 1;
	log_info("step %ld: gradients hold NaN or Inf (a loss diverged or inputs overflowed on "
		 "some rank); skipped, %d in a row", step, t->bad_in_row);
	metrics_write("{\"event\":\"skip\",\"step\":%ld,\"in_a_row\":%d}", step, t->bad_in_row);
}

/* One optimizer step; returns 0 when it was skipped (skip_step). */
static int train_step(struct trainer *t, struct progress *p)
{
	struct config *cfg = t->cfg;
	struct comm *c = t->comm;
	struct model *m = &t->model;
	/* Step N is the one that makes global_step N, as progress lines count. */
	t->tracing = timeline_wants(t->at.global_step + 1);
	timeline_at(t->at.global_step + 1);
	double t0 = mark(t);
	struct staged *cur = loader_current(&t->loader, t->at.epoch, t->at.pos);
	int rows = cur->rows;
	model_set_batch_async(m, cur->x, cur->y, rows);
	/* Dropout's key: this step and where this rank's rows start in the
	 * global batch, never the rank itself. */
	model_set_position(m, t->at.global_step, t->loader.rank * t->loader.batch / t->loader.size);
	double t1 = mark(t);
	/* Scaling by 1/B here makes the all-reduced sum the global-batch mean. */
	model_forward(m, rows, 1.0f / (float)cfg->batch);
	p->rows += rows;
	double t2 = mark(t);
	/* Unsharded, each layer's gradients start reducing as they are final;
	 * sharded, one reduce-scatter follows (a shard spans layers). */
	const struct shard *sh = &t->shard;
	int sharded = sh->ranks > 1;
	model_backward(m, rows, sharded ? NULL : start_bucket, c);
	double t3 = mark(t);
	if (t->at.global_step + 1 < t->total_steps) {
		long pos = t->at.pos + 1, epoch = t->at.epoch;
		if (pos == t->steps_per_epoch)
			pos = 0, epoch++;
		loader_prefetch(&t->loader, epoch, pos);
	}
	double t3b = mark(t);
	t->t.data += t3b - t3;
	if (sharded)
		c->ops->reduce_scatter(c, m->g, sh->total, sh->each);
	else
		c->ops->allreduce_wait(c);
	double t4 = mark(t);
	/* Each rank judges its shard of the sums; the ranks agree. */
	int bad = m->be->nonfinite(m->be, m->g + sh->first, sh->len);
	if (sharded ? comm_any(c, bad) : bad) {
		skip_step(t, p);
		return 0;
	}
	t->bad_in_row = 0;
	float lr = optim_lr(cfg, t->at.global_step, t->total_steps);
	optim_step(&t->optim, m->w + sh->first, m->g + sh->first, t->at.global_step + 1, lr);
	double t4b = mark(t);
	if (sharded)
		c->ops->allgather(c, m->w, sh->total, sh->each);
	double t4c = mark(t);
	model_update_state(m);
	t->stats_apart = m->reg.total > m->reg.trainable && !cfg->sync_bn && c->size > 1;
	t->at.global_step++;
	c->step = t->at.global_step; /* for other ranks' roll calls */
	fault_inject(&t->fault, t->be, t->model.w, t->comm->rank, t->at.global_step);
	double t5 = mark(t);
	ema_update(&t->ema, m->w, t->at.global_step);
	double t5b = mark(t), t6 = t5b;
	if (t->at.global_step % cfg->ema_sync_every == 0) {
		sync_replicas(t);
		t6 = mark(t);
	}
	long s = t->at.global_step;
	timeline_span("step", t0, t6, s);
	timeline_span("data", t0, t1, s);
	timeline_span("forward", t1, t2, s);
	timeline_span("backward", t2, t3, s);
	timeline_span("data (next batch)", t3, t3b, s);
	timeline_span(sharded ? "reduce-scatter wait" : "allreduce wait", t3b, t4, s);
	timeline_span("optimizer", t4, t4b, s);
	if (sharded)
		timeline_span("all-gather wait", t4b, t4c, s);
	timeline_span("ema update", t5, t5b, s);
	if (t6 > t5b)
		timeline_span("ema sync", t5b, t6, s);
	t->t.data += t1 - t0;
	t->t.forward += t2 - t1;
	t->t.backward += t3 - t2;
	t->t.allreduce += t4 - t3b + t4c - t4b;
	t->t.optimizer += t5 - t4 - (t4c - t4b);
	t->t.ema += t6 - t5;
	t->t.rows += rows;
	return 1;
}



/* The model, optimizer, EMA, checkpointed state and host buffers, for
 * batches of up to max_rows; initial weights are rank 0's, broadcast as
 * DDP does. 0, or -1 when the ranks' registries differ. */
static int build(struct trainer *t, int max_rows)
{
	struct config *cfg = t->cfg;
	struct comm *c = t->comm;
	const struct backend *be = t->be;
	/* Known before allocating: w, g and activations, shadows and slots,
	 * and rank 0's staging of every kind for checkpoints. */
	struct layer_spec spec[MODEL_MAX_LAYERS];
	int n_spec = 0;
	int in[3];
	if (model_input_shape(cfg, cfg->data, t->train.shape, in) == 0 &&
	    model_specs(cfg, spec, &n_spec) == 0 &&
	    model_plan(&t->model, spec, n_spec, in, t->train.classes, cfg->seed) == 0) {
		/* ZeRO-1 where asked for, or where it pays (comm.h) and
		 * --check-replicas does not want whole replicas: under ZeRO-1
		 * each step's all-gather overwrites a rank's copy of the others'
		 * shards, drifted or not. */
		int zero = c->size > 1 && (cfg->zero == ZERO_ON ||
					   (cfg->zero == ZERO_AUTO && c->zero_pays &&
					    !cfg->check_replicas));
		if (zero && cfg->check_replicas && c->rank == 0)
			log_warn("--check-replicas with --zero 1: each step's all-gather gives every "
				 "rank its owner's copy of each shard, so a rank's drift lasts one "
				 "step and is seen only when a comparison falls on it");
		shard_plan(&t->shard, t->model.reg.trainable, zero ? c->rank : 0, zero ? c->size : 1);
		t->model.room = (size_t)t->shard.ranks * t->shard.each;
		double P = (double)t->model.reg.total;
		resources_check("the model", model_bytes(&t->model, max_rows) +
			4.0 * ((double)t->shard.len * optim_slots(cfg) + P *
			       (1 + (c->rank ? 0 : STATE_KINDS))));
	}
	if (comm_user_errors(c))
		return -1;
	model_alloc(&t->model, be, max_rows);
	if (agree_registry(&t->model.reg, c))
		return -1;
	size_t P = t->model.reg.total, T = t->model.reg.trainable;
	optim_init(&t->optim, be, cfg, t->shard.len);
	if (cfg->sync_bn)
		model_sync_bn(&t->model, sum_over_ranks, c, cfg->batch);
	loader_init(&t->loader, be, &t->train, cfg->seed, cfg->batch, c->rank, c->size);
	float *init = xmalloc(sizeof(float) * P);
	model_glorot(&t->model, cfg->seed, init);
	be->copy_in(be, t->model.w, init, P * sizeof(float));
	free(init);
	c->ops->bcast(c, t->model.w, P, 0);
	ema_init(&t->ema, be, t->model.w, T, P, cfg->ema_decay, cfg->ema_num_updates,
		 c->rank == 0);
	state_init(&t->state, be, &t->model.reg, &t->model.w, &t->ema.shadow, &t->optim,
		   &t->shard, c->rank == 0);
	eval_init(&t->evaluator, &t->eval, &t->model);
	if (cfg->check_replicas)
		t->replica_host = xmalloc(sizeof(float) * P);
	fault_read(&t->fault);
	return 0;
}

static int setup(struct trainer *t)
{
	struct config *cfg = t->cfg;
	struct comm *c = t->comm;
	t->be = backend_select(cfg, c);
	if (!t->be)
		return -1;
	/* Outputs are checked first, created last: nothing is written (the
	 * default data's cache aside) unless the whole set-up succeeds. */
	if (c->rank == 0)
		paths_check_outputs(cfg);
	if (comm_user_errors(c) || default_data_prepare(cfg, c) ||
	    agree_load_data(cfg, c, &t->train, &t->eval, &t->has_eval))
		return -1;
	t->steps_per_epoch = t->train.n / cfg->batch;
	t->total_steps = cfg->steps ? cfg->steps : (long)cfg->epochs * t->steps_per_epoch;
	int local_max = (cfg->batch + c->size - 1) / c->size;
	/* Evaluation batches need no more rows than this rank's eval slice. */
	long eval_rows = t->eval.n < cfg->eval_batch ? t->eval.n : cfg->eval_batch;
	if (build(t, local_max > eval_rows ? local_max : (int)eval_rows))
		return -1;
	t->config_text = config_to_text(cfg);
	struct resume_run run = {cfg, t->config_text, t->train.n, t->steps_per_epoch};
	if (state_resume(&t->state, &run, &t->at, c))
		return -1;
	t->last_ckpt_step = t->at.global_step;
	/* Nothing is written before this point. */
	if (c->rank == 0) {
		int made = mkdir(cfg->ckpt_dir, 0777) == 0;
		if (!made && errno != EEXIST)
			user_error("--ckpt-dir %s: cannot create: %s", cfg->ckpt_dir, strerror(errno));
		else if ((t->lock = ckpt_lock(cfg->ckpt_dir)) < 0 || metrics_open(cfg->metrics) ||
			 tensorboard_open(cfg->tensorboard, t->at.global_step)) {
			ckpt_unlock(cfg->ckpt_dir, t->lock);
			t->lock = -1;
			if (made)
				rmdir(cfg->ckpt_dir); /* the run did not start: leave nothing */
		}
	}
	if (comm_user_errors(c))
		return -1;
	long first, last;
	config_timeline_steps(cfg, &first, &last);
	timeline_init(cfg->timeline, first, last, c);
	return 0;
}

static void teardown(struct trainer *t)
{
	metrics_close();
	tensorboard_close();
	eval_free(&t->evaluator);
	state_free(&t->state);
	ema_free(&t->ema);
	optim_free(&t->optim);
	model_free(&t->model);
	dataset_free(&t->train);
	dataset_free(&t->eval);
	loader_free(&t->loader);
	free(t->config_text);
	free(t->replica_host);
	ckpt_unlock(t->cfg->ckpt_dir, t->lock);
	backend_unselect(t->be, t->comm);
}

/* After a step: the position moves on, and at the end of an epoch or
 * of the run, or every --ckpt-every steps, evaluation and a checkpoint,
 * timed as aside. 0, or -1 when the checkpoint could not be written. */
static int after_step(struct trainer *t, struct progress *p, double *aside)
{
	const struct config *cfg = t->cfg;
	struct comm *c = t->comm;
	int epoch_end = ++t->at.pos == t->steps_per_epoch;
	if (epoch_end) {
		t->at.epoch++;
		t->at.pos = 0;
	}
	long step = t->at.global_step, shown = t->at.epoch + (t->at.pos ? 1 : 0);
	int last = step == t->total_steps;
	if (step % cfg->log_every == 0 || last)
		report_progress(p, &t->model, c, step, shown, t->total_steps,
				optim_lr(cfg, step - 1, t->total_steps));
	if (cfg->check_replicas && step % cfg->check_replicas == 0 && check_replicas(t, 0))
		return -1;
	int eval = t->has_eval && (epoch_end || last);
	int ckpt = epoch_end || last || (cfg->ckpt_every && step % cfg->ckpt_every == 0);
	if (!eval && !ckpt)
		return 0;
	t->be->synchronize(t->be); /* pending steps count as training */
	double t0 = log_now();
	if (eval) {
		mean_moving_stats(t);
		eval_report(&t->evaluator, &t->model, &t->ema, step, shown, c);
	}
	double t1 = log_now();
	if (ckpt && save_checkpoint(t))
		return -1;
	double spent = log_now() - t0;
	if (eval)
		timeline_span("evaluation", t0, t1, step);
	if (ckpt)
		timeline_span("checkpoint", t1, t0 + spent, step);
	*aside += spent;
	p->aside += spent;
	return 0;
}

static int train_loop(struct trainer *t)
{
	struct comm *c = t->comm;
	long first_step = t->at.global_step;
	struct progress p = {.since = log_now()};
	/* The closing timing line is steady state: it leaves out the first
	 * steps (lazy start-up on a GPU), evaluations and checkpoints. */
	long warm = t->total_steps - first_step > 50 ? 5 : 0;
	double t_start = p.since, t_aside = 0;
	while (t->at.global_step < t->total_steps) {
		if (!train_step(t, &p)) {
			if (t->bad_in_row < t->cfg->max_bad_steps)
				continue;
			if (t->comm->rank == 0) /* every rank decided alike: one line */
				log_error("%d steps in a row at step %ld had NaN or Inf gradients "
					  "(--max-bad-steps); stopping, the newest checkpoint (step %ld) "
					  "is intact", t->bad_in_row, t->at.global_step + 1,
					  t->last_ckpt_step);
			metrics_write("{\"event\":\"end\",\"step\":%ld,\"reason\":\"nan\","
				      "\"skipped\":%ld}", t->at.global_step, t->skipped);
			return EXIT_FAIL;
		}
		p.steps++;
		if (t->at.global_step - first_step == warm && warm) {
			t->be->synchronize(t->be);
			memset(&t->t, 0, sizeof(t->t));
			t_start = log_now();
			t_aside = 0;
		}
		if (after_step(t, &p, &t_aside))
			return EXIT_FAIL;
		/* Every rank stops at the same step: agreement on the signal flag. */
		if (comm_any(c, g_stop_signal) && t->at.global_step != t->total_steps) {
			if (t->last_ckpt_step != t->at.global_step && save_checkpoint(t))
				return EXIT_FAIL;
			log_info("stopped by signal at step %ld; resume with --resume auto",
				 t->at.global_step);
			metrics_write("{\"event\":\"end\",\"step\":%ld,\"reason\":\"signal\"}",
				      t->at.global_step);
			return EXIT_OK;
		}
	}
	t->be->synchronize(t->be);
	/* Phase times, and so GFLOP/s, are exact only when every phase boundary
	 * waits for the backend (MTRAIN_PROFILE=1; on the CPU they always do). */
	int exact = t->profile || t->be->memory == BACKEND_HOST;
	report_timing(&t->t, t->at.global_step - first_step - warm, log_now() - t_start - t_aside,
		      t->cfg->batch, exact ? model_flops_per_row(&t->model) : 0.0);
	metrics_write("{\"event\":\"end\",\"step\":%ld,\"reason\":\"done\",\"skipped\":%ld}",
		      t->at.global_step, t->skipped);
	return EXIT_OK;
}

int train_main(struct config *cfg, struct comm *c)
{
	struct trainer t;
	memset(&t, 0, sizeof(t));
	t.cfg = cfg;
	t.comm = c;
	t.profile = getenv("MTRAIN_PROFILE") != NULL;
	t.lock = -1;
	c->timeout = cfg->comm_timeout;
	int status = EXIT_USER;
	if (agree_config(cfg, c) == 0 && setup(&t) == 0) {
		report_start(cfg, c, t.be, &t.model, &t.shard, &t.train, t.has_eval, t.at.global_step,
			     t.total_steps, t.steps_per_epoch);
		if (t.at.global_step >= t.total_steps)
			log_info("nothing to do: step %ld already reaches the %ld steps asked for",
				 t.at.global_step, t.total_steps);
		status = train_loop(&t);
		if (timeline_write(c) && status == EXIT_OK)
			status = EXIT_FAIL;
	}
	teardown(&t);
	return status;
}

