/* A run's set-up and tear-down for the training loop of train.c: the
 * backend, the data, the model with its optimizer, EMA and checkpointed
 * state, the resume, and the outputs, all checked before anything is
 * written. */
#include "trainer.h"
#include "agree.h"
#include "check.h"
#include "ckpt.h"
#include "default_data.h"
#include "init_from.h"
#include "log.h"
#include "paths.h"
#include "resources.h"
#include "tensorboard.h"
#include "timeline.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* The timeline is written whole at the end: it must not replace a file
 * the run reads or writes, nor sit among the checkpoints. */
static int check_timeline(const struct config *cfg)
{
	const char *flag[5] = {"--data", "--eval-data", "--metrics", "--config", "--resume"};
	int named = strcmp(cfg->resume, "auto") && strcmp(cfg->resume, "never");
	const char *path[5] = {cfg->data, cfg->eval_data, cfg->metrics, cfg->config_file,
			       named ? cfg->resume : ""};
	for (int i = 0; i < 5; i++)
		if (path_same_file(cfg->timeline, path[i]))
			return user_error("--timeline %s: is also %s; it would be overwritten",
					  cfg->timeline, flag[i]);
	if (path_in_folder(cfg->timeline, cfg->ckpt_dir))
		return user_error("--timeline %s: is in --ckpt-dir %s, which holds checkpoints only",
				  cfg->timeline, cfg->ckpt_dir);
	return 0;
}

/* Every output cfg names (--ckpt-dir, --metrics, --tensorboard,
 * --timeline) can be written, and the timeline replaces no input or other
 * output. 0, or -1 with a user_error. */
static int check_outputs(const struct config *cfg)
{
	if (path_check_writable("--ckpt-dir", cfg->ckpt_dir, 1, NULL) ||
	    ckpt_check_names(cfg->ckpt_dir))
		return -1;
	if (cfg->metrics[0] && path_check_writable("--metrics", cfg->metrics, 0, cfg->ckpt_dir))
		return -1;
	if (cfg->tensorboard[0] && path_check_writable("--tensorboard", cfg->tensorboard, 1, NULL))
		return -1;
	if (cfg->timeline[0] && (path_check_writable("--timeline", cfg->timeline, 0, NULL) ||
				 check_timeline(cfg)))
		return -1;
	return 0;
}

/* The most rows a training call takes: a rank's share of the batch (its
 * ceiling), or of a micro-batch of it under --accumulate. */
static int train_call_rows(const struct config *cfg, const struct comm *c)
{
	int share = (cfg->batch + c->size - 1) / c->size;
	return (share + cfg->accumulate - 1) / cfg->accumulate;
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
	    augment_init(&t->aug, cfg->augment, in) == 0 &&
	    model_specs(cfg, spec, &n_spec) == 0 &&
	    model_check_images(cfg, spec, n_spec, t->train.shape) == 0 &&
	    model_plan_vocab(&t->model, spec, n_spec, in, t->train.classes,
			     t->train.tokens ? t->train.classes : 0, cfg->seed) == 0 &&
	    model_check_targets(&t->model, dataset_labels(&t->train), t->train.path) == 0) {
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
		/* A training call takes this rank's rows of a batch; evaluation up
		 * to max_rows (--eval-batch), forward only. */
		t->model.train_rows = train_call_rows(cfg, c);
		double P = (double)t->model.reg.total;
		/* With the reader's ring: read_ahead + 1 of this rank's batches. */
		double ring = (cfg->read_ahead + 1.0) * ((cfg->batch + c->size - 1) / c->size) *
			      (4.0 * t->train.dim + 4.0 * dataset_labels(&t->train) + 4.0);
		resources_check("the model", model_bytes(&t->model, max_rows) + ring +
			4.0 * ((double)t->shard.len * optim_slots(cfg) + P *
			       (1 + (c->rank ? 0 : STATE_KINDS) + (cfg->accumulate > 1))));
	}
	if (comm_user_errors(c))
		return -1;
	model_alloc(&t->model, be, max_rows);
	if (agree_registry(&t->model.reg, c))
		return -1;
	size_t P = t->model.reg.total, T = t->model.reg.trainable;
	optim_init(&t->optim, be, cfg, t->shard.len);
	optim_set_decay(&t->optim, &t->model.reg, t->shard.first, cfg->decay_on);
	t->gacc = cfg->accumulate > 1 ? be->alloc(be, T * sizeof(float)) : NULL;
	if (cfg->sync_bn)
		model_sync_bn(&t->model, sum_over_ranks, c, cfg->batch);
	loader_init(&t->loader, be, &t->train, cfg->seed, cfg->batch, c->rank, c->size,
		    cfg->read_ahead);
	t->loader.aug = t->aug.n ? &t->aug : NULL; /* training rows only, never eval's */
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
	rows_log_open(&t->rows_log, &t->train, c->rank, (cfg->batch + c->size - 1) / c->size);
	return 0;
}

/* --init-from on a fresh run: rank 0 reads the file over its fresh
 * weights, every rank receives them, the shadows start from them. A
 * resumed run keeps its checkpoint's and says so. 0, or -1 after a user
 * error every rank knows of. */
static int init_from(struct trainer *t)
{
	struct config *cfg = t->cfg;
	struct comm *c = t->comm;
	if (!cfg->init_from[0])
		return 0;
	if (t->at.resumed) {
		if (c->rank == 0)
			log_info("init-from %s: not used: the run resumed from its checkpoint",
				 cfg->init_from);
		return 0;
	}
	size_t P = t->model.reg.total;
	if (c->rank == 0) {
		float *host = xmalloc(sizeof(float) * P);
		t->be->copy_out(t->be, host, t->model.w, P * sizeof(float));
		if (init_from_read(cfg, &t->model, host) == 0)
			t->be->copy_in(t->be, t->model.w, host, P * sizeof(float));
		free(host);
	}
	if (comm_user_errors(c))
		return -1;
	c->ops->bcast(c, t->model.w, P, 0);
	ema_restart(&t->ema, t->model.w);
	t->initialized = 1;
	return 0;
}

int trainer_setup(struct trainer *t)
{
	struct config *cfg = t->cfg;
	struct comm *c = t->comm;
	t->be = backend_select(cfg, c);
	if (!t->be)
		return -1;
	/* Outputs are checked first, created last: nothing is written (the
	 * default data's cache aside) unless the whole set-up succeeds. */
	if (c->rank == 0)
		check_outputs(cfg);
	if (comm_user_errors(c) || default_data_prepare(cfg, c) ||
	    agree_load_data(cfg, c, &t->train, &t->eval, &t->has_eval))
		return -1;
	t->steps_per_epoch = t->train.n / cfg->batch;
	t->total_steps = cfg->steps ? cfg->steps : (long)cfg->epochs * t->steps_per_epoch;
	int local_max = train_call_rows(cfg, c);
	/* Evaluation batches need no more rows than this rank's eval slice. */
	long ev_rows = t->has_eval ? eval_rows(&t->eval, cfg->eval_batch) : 0;
	if (build(t, local_max > ev_rows ? local_max : (int)ev_rows))
		return -1;
	t->config_text = config_to_text(cfg);
	struct resume_run run = {cfg, t->config_text, t->train.n, t->steps_per_epoch};
	if (state_resume(&t->state, &run, &t->at, c) || init_from(t))
		return -1;
	loader_set_order(&t->loader, (enum order_kind)t->at.order); /* the run's, carried on */
	/* The last step's batch, numbered as the loader numbers them. */
	loader_set_end(&t->loader, t->total_steps - t->at.global_step +
				   t->at.epoch * t->steps_per_epoch + t->at.pos);
	t->last_ckpt_step = t->at.global_step;
	t->last_ckpt_time = log_now();
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

void trainer_teardown(struct trainer *t)
{
	metrics_close();
	tensorboard_close();
	eval_free(&t->evaluator);
	state_free(&t->state);
	ema_free(&t->ema);
	optim_free(&t->optim);
	if (t->gacc)
		t->be->free(t->be, t->gacc);
	model_free(&t->model);
	loader_free(&t->loader); /* its reader thread first: it reads train */
	dataset_free(&t->train);
	dataset_free(&t->eval);
	augment_free(&t->aug);
	rows_log_close(&t->rows_log);
	free(t->config_text);
	free(t->replica_host);
	ckpt_unlock(t->cfg->ckpt_dir, t->lock);
	backend_unselect(t->be, t->comm);
}
