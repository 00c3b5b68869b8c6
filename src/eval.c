/* Evaluation of eval.h, and the `mtrain eval` subcommand. */
#include "eval.h"
#include "check.h"
#include "ckpt.h"
#include "kinds.h"
#include "log.h"
#include "state.h"
#include "tensorboard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void eval_init(struct evaluator *ev, const struct dataset *data, const struct model *m)
{
	ev->data = data;
	ev->host_x = xmalloc(sizeof(float) * (size_t)m->max_rows * m->in_dim);
	ev->host_y = xmalloc(sizeof(int32_t) * (size_t)m->max_rows * (size_t)m->targets);
}

long eval_rows(const struct dataset *d, int eval_batch)
{
	long rows = d->n < eval_batch ? d->n : eval_batch;
	if (d->tokens && rows > EVAL_TOKENS / d->window)
		rows = EVAL_TOKENS / d->window;
	return rows > 0 ? rows : 1;
}

void eval_free(struct evaluator *ev)
{
	free(ev->host_x);
	free(ev->host_y);
	memset(ev, 0, sizeof(*ev));
}

int eval_run(struct evaluator *ev, struct model *m, struct comm *c, double out[3])
{
	const struct dataset *d = ev->data;
	float before[2], stats[2];
	char why[DATASET_WHY_LEN];
	int bad = 0;
	model_take_stats(m, before); /* training's, kept for its next line */
	for (long begin = 0; begin < d->n && !bad; begin += m->max_rows) {
		int rows = (int)(d->n - begin < m->max_rows ? d->n - begin : m->max_rows);
		bad = dataset_read_range(d, begin, rows, ev->host_x, ev->host_y, why) != 0;
		if (!bad) {
			model_set_batch(m, ev->host_x, ev->host_y, rows);
			model_forward(m, rows, 0, 0.0f);
		}
	}
	model_take_stats(m, stats);
	m->be->copy_in(m->be, m->stats, before, sizeof(before));
	/* Every rank's rows once: the slices are disjoint and cover the set. */
	double sums[4] = {stats[0], stats[1], (double)d->n * m->targets, bad};
	comm_sum_host(c, sums, 4);
	out[0] = sums[2] ? sums[0] / sums[2] : 0.0;
	out[1] = sums[2] ? sums[1] / sums[2] : 0.0;
	out[2] = sums[2];
	if (bad)
		user_error("%s; found while evaluating", why);
	return sums[3] > 0 ? -1 : 0;
}

int eval_report(struct evaluator *ev, struct model *m, struct ema *e, long step,
		long epoch, struct comm *c)
{
	double raw[3], avg[3];
	ema_sync(e, c);
	int rc = eval_run(ev, m, c, raw);
	ema_swap(e, &m->w);
	rc = rc ? rc : eval_run(ev, m, c, avg);
	ema_swap(e, &m->w);
	if (rc) {
		comm_user_errors(c); /* the line, once */
		return -1;
	}
	/* A language model's perplexity, and bits per byte where the text's
	 * bytes are known: in the line, TensorBoard and the metrics. */
	char tokens[96] = "", extra[128] = "", n[6][32];
	if (m->targets > 1) {
		const struct dataset *d = ev->data;
		double per_byte = d->text_bytes > 0 ? (double)d->n_tokens / (double)d->text_bytes
				  : !strcmp(d->tokenizer, "bytes") ? 1.0 : 0.0;
		double ppl = exp(avg[0]), bpb = avg[0] * per_byte / M_LN2;
		int used = snprintf(tokens, sizeof(tokens), " ema_ppl %.3f", ppl);
		tensorboard_scalar("eval/ema_ppl", step, ppl);
		used = snprintf(extra, sizeof(extra), ",\"ema_ppl\":%s", json_num(ppl, n[4], 32));
		if (per_byte > 0) {
			snprintf(tokens + strlen(tokens), sizeof(tokens) - strlen(tokens),
				 " ema_bpb %.4f", bpb);
			tensorboard_scalar("eval/ema_bpb", step, bpb);
			snprintf(extra + used, sizeof(extra) - (size_t)used, ",\"ema_bpb\":%s",
				 json_num(bpb, n[5], 32));
		}
	}
	log_info("eval step %ld epoch %ld raw_loss %.4f raw_acc %.4f ema_loss %.4f ema_acc %.4f%s",
		 step, epoch, raw[0], raw[1], avg[0], avg[1], tokens);
	const char *tags[4] = {"eval/raw_loss", "eval/raw_acc", "eval/ema_loss", "eval/ema_acc"};
	double values[4] = {raw[0], raw[1], avg[0], avg[1]};
	for (int i = 0; i < 4; i++)
		tensorboard_scalar(tags[i], step, values[i]);
	tensorboard_flush();
	metrics_write("{\"event\":\"eval\",\"step\":%ld,\"epoch\":%ld,\"raw_loss\":%s,"
		      "\"raw_acc\":%s,\"ema_loss\":%s,\"ema_acc\":%s%s}",
		      step, epoch, json_num(raw[0], n[0], 32), json_num(raw[1], n[1], 32),
		      json_num(avg[0], n[2], 32), json_num(avg[1], n[3], 32), extra);
	return 0;
}

/* The checkpoint's configuration and model dimensions on every rank, with
 * the options of the command line. 0 or -1 (user error). */
static int ckpt_config(const char *ckpt, int device, struct comm *c, struct config *cfg,
		       int dims[2])
{
	struct ckpt_meta m;
	memset(&m, 0, sizeof(m));
	config_defaults(cfg);
	if (c->rank == 0 && ckpt_read_meta(ckpt, &m) == 0)
		config_parse_text(cfg, m.config ? m.config : "", ckpt);
	ckpt_meta_free(&m);
	if (comm_user_errors(c))
		return -1;
	comm_bcast_host(c, cfg, sizeof(*cfg), 0);
	c->timeout = cfg->comm_timeout;
	dims[0] = m.input_dim;
	dims[1] = m.classes;
	comm_bcast_host(c, dims, 2 * sizeof(int), 0);
	cfg->device = device;
	cfg->precision = PRECISION_FP32; /* evaluate exactly, wherever it trained */
	return 0;
}

/* This rank's slice of split of path, checked against the model's
 * dimensions. 0 or -1 (user error, collected). */
static int data_load(const char *ckpt, const struct config *cfg, const char *path, int split,
		     const int dims[2], struct dataset *d, struct comm *c)
{
	if (!path[0] || !strcmp(path, "none"))
		user_error("%s: the checkpoint names no %s; pass %s FILE", ckpt,
			   split == DATASET_EVAL ? "eval data" : "data",
			   split == DATASET_EVAL ? "--eval-data" : "--data");
	else if (dataset_open_split(d, path, split, cfg->context, c->rank, c->size) == 0) {
		if (d->dim != dims[0])
			user_error("%s: inputs have %d features; the checkpoint's model takes %d",
				   path, d->dim, dims[0]);
		else /* labels are checked against the model's as they are read */
			d->classes = dims[1];
	}
	return comm_user_errors(c) ? -1 : 0;
}

int ckpt_model_open(struct ckpt_model *cm, const char *ckpt, const char *data, int split,
		    int device, int rows, struct comm *c)
{
	memset(cm, 0, sizeof(*cm));
	if (ckpt_config(ckpt, device, c, &cm->cfg, cm->dims))
		return -1;
	struct config *cfg = &cm->cfg;
	if (data && split == DATASET_EVAL)
		snprintf(cfg->eval_data, PATH_LEN, "%s", data);
	cm->be = backend_select(cfg, c);
	if (!cm->be)
		return -1;
	/* The checkpoint's model, laid out before anything is allocated, for
	 * rows shaped as the data's: images [N, H, W, C] carry the shape a
	 * model trained on them without --input-shape took. */
	struct layer_spec spec[MODEL_MAX_LAYERS];
	int n_spec = 0, in[3];
	const char *path = split == DATASET_EVAL ? cfg->eval_data : data ? data : cfg->data;
	if (data_load(ckpt, cfg, path, split, cm->dims, &cm->data, c) == 0 &&
	    model_input_shape(cfg, path, cm->data.shape, in) == 0 &&
	    model_specs(cfg, spec, &n_spec) == 0)
		if (model_plan_vocab(&cm->model, spec, n_spec, in, cm->dims[1],
				     cm->data.tokens ? cm->dims[1] : 0, cfg->seed) == 0)
			model_check_targets(&cm->model, dataset_labels(&cm->data), path);
	if (comm_user_errors(c)) {
		dataset_free(&cm->data);
		backend_unselect(cm->be, c);
		return -1;
	}
	struct model *m = &cm->model;
	m->train_rows = 1; /* it never trains: the arena is evaluation's */
	model_alloc(m, cm->be, rows > 0 ? rows : (int)eval_rows(&cm->data, cfg->eval_batch));
	/* Not an owner: the shadows are the checkpoint's, never updated. */
	ema_init(&cm->ema, cm->be, m->w, m->reg.trainable, m->reg.total, cfg->ema_decay,
		 cfg->ema_num_updates, 0);
	state_init(&cm->state, cm->be, &m->reg, &m->w, &cm->ema.shadow, NULL, NULL, c->rank == 0);
	struct ckpt_meta meta;
	if (c->rank == 0 && state_read(&cm->state, ckpt, 1, &meta) == 0)
		ckpt_meta_free(&meta);
	cm->open = 1;
	if (comm_user_errors(c)) {
		ckpt_model_close(cm, c);
		return -1;
	}
	state_send(&cm->state, c);
	return 0;
}

void ckpt_model_close(struct ckpt_model *cm, struct comm *c)
{
	if (cm->open) {
		state_free(&cm->state);
		ema_free(&cm->ema);
		model_free(&cm->model);
		dataset_free(&cm->data);
		backend_unselect(cm->be, c);
	}
	memset(cm, 0, sizeof(*cm));
}

/* One line of figures for the weights now in m. */
static int eval_print(struct evaluator *ev, struct model *m, const char *ckpt,
		      const char *which, struct comm *c)
{
	double res[3];
	if (eval_run(ev, m, c, res)) {
		comm_user_errors(c); /* the line, once */
		return -1;
	}
	/* The rows the ranks evaluated, summed: each once, the set's count (of
	 * targets, for a model of tokens: a row's every token's next one). */
	if (m->targets > 1)
		log_info("eval %s %s loss %.4f acc %.4f ppl %.3f (%.0f tokens)", ckpt, which, res[0],
			 res[1], exp(res[0]), res[2]);
	else
		log_info("eval %s %s loss %.4f acc %.4f (%.0f rows)", ckpt, which, res[0], res[1],
			 res[2]);
	return 0;
}

int eval_main(const char *ckpt, const char *eval_data, const char *which, int device,
	      struct comm *c)
{
	/* Which weights: raw, ema or both (bit 0 raw, bit 1 ema, + 1). */
	static const char *const weights[] = {"raw", "ema", "both", NULL};
	char list[32];
	int want = kind_parse(weights, which) + 1;
	if (!want)
		user_error("--weights: '%s' is not one of %s", which,
			   kind_choices(weights, list, sizeof(list)));
	struct ckpt_model cm;
	if (comm_user_errors(c) || ckpt_model_open(&cm, ckpt, eval_data, DATASET_EVAL, device, 0, c))
		return EXIT_USER;
	struct evaluator ev;
	eval_init(&ev, &cm.data, &cm.model);
	int rc = (want & 1) ? eval_print(&ev, &cm.model, ckpt, weights[0], c) : 0;
	ema_swap(&cm.ema, &cm.model.w);
	if (!rc && (want & 2))
		rc = eval_print(&ev, &cm.model, ckpt, weights[1], c);
	ema_swap(&cm.ema, &cm.model.w);
	eval_free(&ev);
	ckpt_model_close(&cm, c);
	return rc ? EXIT_USER : EXIT_OK;
}
