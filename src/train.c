/* The training loop of train.h: the step (with batch staging and its
 * timing), when to evaluate and save, and stopping on a signal at a step
 * every rank agrees on (set-up: train_setup.c). One global step, one EMA owner (rank 0), one name
 * registry; every rank runs the same code on its slice of each global
 * batch. */
#include "train.h"
#include "trainer.h"
#include "agree.h"
#include "log.h"
#include "tensorboard.h"
#include "timeline.h"

#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

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

/* Ends step s's current phase, begun at *at: its time goes to the
 * timeline as span (NULL: none) and into *sum, and the next phase begins
 * now. */
static void phase_end(struct trainer *t, double *at, const char *span, double *sum, long s)
{
	double now = mark(t);
	if (span)
		timeline_span(span, *at, now, s);
	*sum += now - *at;
	*at = now;
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
	snprintf(m.order, sizeof(m.order), "%s", order_name(t->loader.order));
	snprintf(m.input_shape, sizeof(m.input_shape), "%d,%d,%d", t->model.in[0], t->model.in[1],
		 t->model.in[2]);
	t->last_ckpt_step = t->at.global_step;
	int rc = state_save(&t->state, &m, cfg->ckpt_dir, cfg->keep, t->comm);
	tensorboard_flush();
	t->last_ckpt_time = log_now(); /* the next interval counts from here */
	return rc;
}

/* A layer's gradients are final: start reducing them (grad_ready_fn). */
static void start_bucket(void *comm, float *g, size_t n)
{
	struct comm *c = comm;
	c->ops->allreduce_start(c, g, n);
}

/* The step's gradients hold NaN or Inf on some rank (gradients_bad), and
 * every rank skips the step alike, each saying so: nothing changes (weights,
 * slots, shadows, step and data position), the retry asks the loader for
 * the same batch, and the loss summed since the last line is dropped. */
static void skip_step(struct trainer *t, struct progress *p)
{
	float dropped[2];
	model_take_stats(&t->model, dropped);
	p->rows = 0;
	t->bad_in_row++;
	t->skipped++;
	long step = t->at.global_step + 1;
	log_each("step %ld: gradients hold NaN or Inf (a loss diverged or inputs overflowed on "
		 "some rank); skipped, %d in a row", step, t->bad_in_row);
	metrics_write("{\"event\":\"skip\",\"step\":%ld,\"in_a_row\":%d}", step, t->bad_in_row);
}

/* The last micro-batch's gradients are final as the backward gives them
 * once the others' sums are added: then they start reducing. */
static void add_then_start(void *trainer, float *g, size_t n)
{
	struct trainer *t = trainer;
	t->be->add(t->be, g, g, t->gacc + (g - t->model.g), n, NULL, ACT_RELU);
	start_bucket(t->comm, g, n);
}

/* Forward and backward over this rank's rows of the step, cur, in
 * --accumulate micro-batches (each keyed by its rows' place in the global
 * batch, as one would be: dropout's key, never the rank), their gradients
 * summed into m->g; unsharded, the last micro-batch's start reducing as
 * they are final. */
static void forward_backward(struct trainer *t, const struct staged *cur, long s, double *at)
{
	struct model *m = &t->model;
	int n = t->cfg->accumulate, rows = cur->rows, sharded = t->shard.ranks > 1;
	size_t T = m->reg.trainable;
	/* Scaling by 1/B here makes the all-reduced sum the global-batch mean
	 * (over its B * T targets for a model of tokens). */
	float scale = 1.0f / ((float)t->cfg->batch * (float)m->targets);
	long row0 = t->loader.rank * t->loader.batch / t->loader.size;
	for (int k = 0; k < n; k++) {
		int lo = rows * k / n, hi = rows * (k + 1) / n, last = k == n - 1;
		/* (the model's buffers hold a micro-batch: train_call_rows) */
		model_set_batch_async(m, cur->x + (size_t)lo * m->in_dim,
				      cur->y + (size_t)lo * m->targets, hi - lo);
		model_set_position(m, t->at.global_step, row0 + lo);
		model_forward(m, hi - lo, 1, scale);
		phase_end(t, at, "forward", &t->t.forward, s);
		grad_ready_fn ready = sharded || (!last && n > 1) ? NULL
				      : n > 1			    ? add_then_start
								    : start_bucket;
		model_backward(m, hi - lo, ready, ready == add_then_start ? (void *)t : t->comm);
		if (!last && k == 0)
			m->be->copy(m->be, t->gacc, m->g, T * sizeof(float));
		else if (!last || (sharded && n > 1))
			m->be->add(m->be, last ? m->g : t->gacc, t->gacc, m->g, T, NULL, ACT_RELU);
		phase_end(t, at, "backward", &t->t.backward, s);
	}
}

/* This step's rows of the global batch, staged (forward_backward gives
 * them to the model); the rows record told. */
static const struct staged *stage_batch(struct trainer *t)
{
	double waited = t->loader.wait;
	struct staged *cur = loader_current(&t->loader, t->at.epoch, t->at.pos);
	t->t.data_wait += t->loader.wait - waited;
	t->data_bad = cur->bad ? cur->why : NULL;
	rows_log_stage(&t->rows_log, cur->x, cur->y, cur->rows);
	return cur;
}

/* After the update: batch norm's moving statistics follow the batch, and
 * the global step becomes s. */
static void advance(struct trainer *t, long s)
{
	struct model *m = &t->model;
	model_update_state(m);
	t->stats_apart = m->reg.total > m->reg.trainable && !t->cfg->sync_bn && t->comm->size > 1;
	t->at.global_step = s;
	t->comm->step = s; /* for other ranks' roll calls */
}

/* Whether step s's summed gradients hold NaN or Inf on any rank: each
 * rank judges the sums it holds (all, or its ZeRO-1 shard), and the ranks
 * agree, so they skip alike even when one rank's sums alone went bad. The
 * same collective carries the stop signal's agreement (t->stop), whether
 * any rank's batch could not be read (t->data_failed: bad too), and
 * whether --ckpt-every-min has passed by rank 0's clock (t->ckpt_due: the
 * other ranks' clocks never decide, so every rank saves at the same step). */
static int gradients_bad(struct trainer *t, long s)
{
	struct model *m = &t->model;
	const struct shard *sh = &t->shard;
	int sharded = sh->ranks > 1;
	fault_nan_grad(&t->fault, t->be, m->g, sh->total,
		       fault_holds_last(&t->fault, t->comm->rank, sharded,
					sh->len && sh->first + sh->len == sh->total), s);
	double every = 60.0 * t->cfg->ckpt_every_min;
	int due = t->comm->rank == 0 && every > 0 && log_now() - t->last_ckpt_time >= every;
	/* --clip-norm: the reduced gradient's squares, each shard's once (whole
	 * on every rank unsharded: rank 0's). */
	int norm = t->cfg->clip_norm > 0 && (sharded || t->comm->rank == 0);
	double flags[5] = {m->be->nonfinite(m->be, m->g + sh->first, sh->len),
			   g_stop_signal != 0, t->data_bad != NULL, due,
			   norm ? m->be->sumsq(m->be, m->g + sh->first, sh->len) : 0.0};
	comm_sum_host(t->comm, flags, 5);
	t->grad_norm = sqrt(flags[4]);
	t->stop = flags[1] > 0;
	t->data_failed = flags[2] > 0;
	t->ckpt_due = flags[3] > 0;
	return flags[0] > 0 || t->data_failed;
}

/* One optimizer step, the one that makes global_step s; returns 0 when it
 * was skipped (skip_step), -1 when a rank's batch could not be read. */
static int train_step(struct trainer *t, struct progress *p)
{
	struct config *cfg = t->cfg;
	struct comm *c = t->comm;
	struct model *m = &t->model;
	struct timing *tm = &t->t;
	const struct shard *sh = &t->shard;
	int sharded = sh->ranks > 1;
	long s = t->at.global_step + 1; /* as progress lines count */
	t->tracing = timeline_wants(s);
	timeline_at(s);
	double start = mark(t), at = start;
	const struct staged *cur = stage_batch(t);
	phase_end(t, &at, "data", &tm->data, s);
	/* Unsharded, each layer's gradients start reducing as they are final;
	 * sharded, one reduce-scatter follows (a shard spans layers). */
	forward_backward(t, cur, s, &at);
	p->rows += cur->rows;
	if (sharded)
		c->ops->reduce_scatter(c, m->g, sh->total, sh->each);
	else
		c->ops->allreduce_wait(c);
	phase_end(t, &at, sharded ? "reduce-scatter wait" : "allreduce wait", &tm->allreduce, s);
	if (gradients_bad(t, s)) {
		if (t->data_failed)
			return -1;
		skip_step(t, p);
		return 0;
	}
	t->bad_in_row = 0;
	if (cfg->clip_norm > 0) { /* as torch.nn.utils.clip_grad_norm_ */
		p->norm = t->grad_norm;
		double coef = cfg->clip_norm / (t->grad_norm + 1e-6);
		if (coef < 1.0) {
			m->be->scale(m->be, m->g + sh->first, sh->len, (float)coef);
			p->clipped++;
		}
	}
	float lr = optim_lr(cfg, t->at.global_step, t->total_steps);
	optim_step(&t->optim, m->w + sh->first, m->g + sh->first, s, lr);
	phase_end(t, &at, "optimizer", &tm->optimizer, s);
	if (sharded) {
		c->ops->allgather(c, m->w, sh->total, sh->each);
		phase_end(t, &at, "all-gather wait", &tm->allreduce, s);
	}
	advance(t, s);
	rows_log_commit(&t->rows_log, s, t->at.epoch, t->at.pos);
	phase_end(t, &at, NULL, &tm->optimizer, s); /* the moving statistics */
	ema_update(&t->ema, m->w, s);
	phase_end(t, &at, "ema update", &tm->ema, s);
	if (s % cfg->ema_sync_every == 0) {
		sync_replicas(t);
		phase_end(t, &at, "ema sync", &tm->ema, s);
	}
	timeline_span("step", start, at, s);
	tm->rows += cur->rows;
	return 1;
}

/* After a step: the position moves on; at the end of an epoch or of the
 * run, evaluation and a checkpoint, an evaluation every --eval-every steps,
 * and a checkpoint every --ckpt-every
 * steps and when --ckpt-every-min minutes have passed, timed as aside. 0,
 * or the exit status: EXIT_FAIL when the checkpoint could not be written
 * or replicas drifted, EXIT_USER when evaluation rows could not be read. */
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
		return EXIT_FAIL;
	int eval = t->has_eval &&
		   (epoch_end || last || (cfg->eval_every && step % cfg->eval_every == 0));
	int ckpt = epoch_end || last || (cfg->ckpt_every && step % cfg->ckpt_every == 0) ||
		   t->ckpt_due;
	if (!eval && !ckpt)
		return 0;
	t->be->synchronize(t->be); /* pending steps count as training */
	double t0 = log_now();
	int eval_failed = 0; /* its rows could not be read (said): stop, once saved */
	if (eval) {
		mean_moving_stats(t);
		eval_failed = eval_report(&t->evaluator, &t->model, &t->ema, step, shown, c) != 0;
	}
	double t1 = log_now();
	if (ckpt && save_checkpoint(t))
		return EXIT_FAIL;
	double spent = log_now() - t0;
	if (eval)
		timeline_span("evaluation", t0, t1, step);
	if (ckpt)
		timeline_span("checkpoint", t1, t0 + spent, step);
	*aside += spent;
	p->aside += spent;
	return eval_failed ? EXIT_USER : 0;
}

/* What a stopping run leaves: "the newest checkpoint, step N, is intact",
 * or, before this run or an earlier one wrote any, that there is none. */
static const char *newest_checkpoint(const struct trainer *t, char *buf, size_t len)
{
	if (t->last_ckpt_step == 0 && !t->at.resumed)
		snprintf(buf, len, "no checkpoint written yet");
	else
		snprintf(buf, len, "the newest checkpoint, step %ld, is intact", t->last_ckpt_step);
	return buf;
}

/* A rank's batch of the next step could not be read (a bad row, a file
 * that changed): the ranks stop alike, before the step's update, and print
 * its reason once. */
static int data_stop(struct trainer *t)
{
	char kept[64];
	if (t->data_bad)
		user_error("%s (the batch of step %ld; stopping, %s)", t->data_bad,
			   t->at.global_step + 1, newest_checkpoint(t, kept, sizeof(kept)));
	comm_user_errors(t->comm);
	metrics_write("{\"event\":\"end\",\"step\":%ld,\"reason\":\"data\"}",
		      t->at.global_step);
	return EXIT_USER;
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
		int trained = train_step(t, &p);
		if (trained < 0)
			return data_stop(t);
		if (!trained) {
			if (t->bad_in_row < t->cfg->max_bad_steps)
				continue;
			char kept[64];
			if (t->comm->rank == 0) /* every rank decided alike: one line */
				log_error("%d steps in a row at step %ld had NaN or Inf gradients "
					  "(--max-bad-steps); stopping, %s", t->bad_in_row,
					  t->at.global_step + 1,
					  newest_checkpoint(t, kept, sizeof(kept)));
			metrics_write("{\"event\":\"end\",\"step\":%ld,\"reason\":\"nan\","
				      "\"skipped\":%ld}", t->at.global_step, t->skipped);
			return EXIT_FAIL;
		}
		p.steps++;
		fault_after_step(&t->fault, t->be, t->model.w, c->rank, t->at.global_step);
		if (t->at.global_step - first_step == warm && warm) {
			t->be->synchronize(t->be);
			memset(&t->t, 0, sizeof(t->t));
			t_start = log_now();
			t_aside = 0;
		}
		int status = after_step(t, &p, &t_aside);
		if (status)
			return status;
		/* Every rank stops at the same step: agreement on the signal flag. */
		if (t->stop && t->at.global_step != t->total_steps) {
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
	if (agree_config(cfg, c) == 0 && trainer_setup(&t) == 0) {
		report_start(cfg, c, t.be, &t.model, &t.shard, &t.train, t.has_eval, t.at.global_step,
			     t.total_steps, t.steps_per_epoch);
		/* Where a fine-tuning starts from: the file's weights evaluated
		 * (its rows unreadable: said, and the run stops). */
		int eval_failed = t.initialized && t.has_eval &&
				  eval_report(&t.evaluator, &t.model, &t.ema, 0, 0, c) != 0;
		if (!eval_failed && t.at.global_step >= t.total_steps)
			log_info("nothing to do: step %ld already reaches the %ld steps asked for",
				 t.at.global_step, t.total_steps);
		status = eval_failed ? EXIT_USER : train_loop(&t);
		if (timeline_write(c) && status == EXIT_OK)
			status = EXIT_FAIL;
	}
	trainer_teardown(&t);
	return status;
}

