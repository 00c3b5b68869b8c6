/* The checkpointed state of state.h: save, load and the resume policy. */
#include "state.h"
#include "check.h"
#include "ema.h"
#include "layer_spec.h"
#include "log.h"
#include "model.h"
#include "version.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void state_init(struct state *s, const struct backend *be, const struct params *reg,
		float **w, float **shadow, const struct optim *o, const struct shard *slots,
		int host_staging)
{
	memset(s, 0, sizeof(*s));
	s->be = be;
	s->kinds = 2 + (o ? o->n_slots : 0);
	for (int k = 0; k < s->kinds; k++)
		s->n[k] = k ? reg->trainable : reg->total;
	if (slots)
		s->slots = *slots;
	else
		shard_plan(&s->slots, reg->trainable, 0, 1);
	s->live[0] = w;
	s->live[1] = shadow;
	const char *suffix[STATE_KINDS] = {NULL, EMA_SUFFIX};
	for (int k = 2; k < s->kinds; k++) {
		s->live[k] = (float **)&o->slot[k - 2];
		suffix[k] = o->slot_suffix[k - 2];
	}
	for (int k = 0; host_staging && k < s->kinds; k++)
		s->host[k] = xcalloc(s->n[k], sizeof(float));
	s->vars = xcalloc((size_t)(s->kinds * reg->n), sizeof(*s->vars));
	for (int k = 0; k < s->kinds; k++)
		for (int i = 0; i < (k ? reg->n_trainable : reg->n); i++) {
			struct ckpt_var *v = &s->vars[s->n_vars++];
			const struct param *p = &reg->p[i];
			if (suffix[k])
				params_slot_name(p->name, suffix[k], v->name, sizeof(v->name));
			else
				snprintf(v->name, sizeof(v->name), "%s", p->name);
			v->ndim = p->ndim;
			memcpy(v->shape, p->shape, sizeof(v->shape));
			v->data = s->host[k] ? s->host[k] + p->offset : NULL;
		}
}

void state_free(struct state *s)
{
	for (int k = 0; k < STATE_KINDS; k++)
		free(s->host[k]);
	free(s->vars);
	memset(s, 0, sizeof(*s));
}

/* Kind k is split over the ranks: the optimizer's slots under ZeRO-1. */
static int sharded(const struct state *s, int k) { return k >= 2 && s->slots.ranks > 1; }

/* Every rank's shard of kind k into rank 0's staging. Collective. */
static void gather_shards(struct state *s, int k, struct comm *c)
{
	float *mine = xmalloc((s->slots.len ? s->slots.len : 1) * sizeof(float));
	s->be->copy_out(s->be, mine, *s->live[k], s->slots.len * sizeof(float));
	comm_gather_shards(c, mine, s->host[k], s->slots.total, s->slots.each, 0);
	free(mine);
}

/* Rank 0's staging of kind k, each rank's shard of it into its buffer. */
static void scatter_shards(struct state *s, int k, struct comm *c)
{
	float *mine = xmalloc((s->slots.len ? s->slots.len : 1) * sizeof(float));
	comm_scatter_shards(c, s->host[k], mine, s->slots.total, s->slots.each, 0);
	s->be->copy_in(s->be, *s->live[k], mine, s->slots.len * sizeof(float));
	free(mine);
}

int state_save(struct state *s, struct ckpt_meta *meta, const char *dir, int keep,
	       struct comm *c)
{
	int failed = 0;
	for (int k = 0; k < s->kinds; k++)
		if (sharded(s, k))
			gather_shards(s, k, c);
	if (c->rank == 0) {
		for (int k = 0; k < s->kinds; k++)
			if (!sharded(s, k))
				s->be->copy_out(s->be, s->host[k], *s->live[k],
						s->n[k] * sizeof(float));
		time_t secs = time(NULL);
		strftime(meta->created, sizeof(meta->created), "%Y-%m-%dT%H:%M:%SZ",
			 gmtime(&secs));
		snprintf(meta->version, sizeof(meta->version), "%s", MTRAIN_VERSION);
		failed = ckpt_write(dir, s->vars, s->n_vars, meta) != 0;
	}
	if (c->rank == 0 && !failed) {
		char path[FILE_PATH_LEN], json[JSON_PATH_LEN];
		ckpt_path(dir, meta->global_step, path, sizeof(path));
		log_info("checkpoint %s step %ld", path, meta->global_step);
		metrics_write("{\"event\":\"checkpoint\",\"step\":%ld,\"path\":\"%s\"}",
			      meta->global_step, json_escape(path, json, sizeof(json)));
		ckpt_prune(dir, keep, meta->global_step);
	}
	return comm_any(c, failed) ? -1 : 0;
}

int state_read(struct state *s, const char *path, int allow_extra, struct ckpt_meta *meta)
{
	return ckpt_read(path, s->vars, s->n_vars, allow_extra, meta);
}

void state_send(struct state *s, struct comm *c)
{
	for (int k = 0; k < s->kinds; k++) {
		if (sharded(s, k)) {
			scatter_shards(s, k, c);
			continue;
		}
		if (c->rank == 0)
			s->be->copy_in(s->be, *s->live[k], s->host[k], s->n[k] * sizeof(float));
		c->ops->bcast(c, *s->live[k], s->n[k], 0);
	}
}

/* With --resume never or FILE, checkpoints of another run above the start
 * step stay in --ckpt-dir (pruning leaves them alone), and a later --resume
 * auto would take them: say so. */
static void warn_newer_checkpoints(const char *dir, long start)
{
	int n;
	struct ckpt_file *files = ckpt_list(dir, &n);
	if (n > 0 && files[0].step > start)
		log_warn("%s holds %s from another run, past this run's step %ld: a later "
			 "--resume auto would continue that run", dir, files[0].path, start);
	free(files);
}

/* The layers a configuration text asks for, canonical, into buf: 0, or -1
 * (buf "") when there is no text or this mtrain cannot parse it. */
static int model_of(const char *text, char *buf, size_t len)
{
	struct config cfg;
	struct layer_spec spec[MODEL_MAX_LAYERS];
	int n = 0;
	buf[0] = 0;
	config_defaults(&cfg);
	int rc = !text || config_parse_text(&cfg, text, "the checkpoint's config") ||
		 model_specs(&cfg, spec, &n) ? -1 : 0;
	if (rc == 0)
		layer_spec_text(spec, n, buf, len);
	user_error_clear();
	return rc;
}

/* Rank 0: the user error of --resume auto when the newest checkpoint of the
 * folder is not corrupt but does not read (state_read's RC_USER). When it
 * holds another model's variables (one line per variable), one line
 * instead: both models' layers (or, when they read the same, the first
 * variable that differs) and what to do. Any other error stays as it was. */
static void another_model(const char *path, const struct resume_run *run)
{
	char *was = strdup(user_error_text());
	ALLOC_CHECK(was);
	char first[512], theirs[1024] = "", ours[1024], why[2200];
	const char *colon = strstr(was, ": ");
	snprintf(first, sizeof(first), "%.*s", (int)strcspn(colon ? colon + 2 : was, "\n"),
		 colon ? colon + 2 : was);
	struct ckpt_meta m;
	user_error_clear();
	if (ckpt_read_meta(path, &m) == 0)
		model_of(m.config, theirs, sizeof(theirs));
	user_error_clear();
	ckpt_meta_free(&m);
	model_of(run->config_text, ours, sizeof(ours));
	int other_model = theirs[0] && strcmp(theirs, ours);
	int mismatch = strstr(was, " vs model ") != NULL; /* ckpt_read's lines */
	if (other_model)
		snprintf(why, sizeof(why), "was written by another model (%s; this run: %s)", theirs,
			 ours);
	else if (mismatch)
		snprintf(why, sizeof(why), "holds other variables than this run's (%s%s)", first,
			 strchr(was, '\n') ? ", and more" : "");
	if (other_model || mismatch)
		user_error("%s, the newest checkpoint in %s, %s: give this run another "
			   "--ckpt-dir, or --resume never to start afresh", path, run->cfg->ckpt_dir,
			   why);
	else
		user_error("%s", was);
	free(was);
}

/* Rank 0: the checkpoint --resume names, read into the staging; its path
 * in used ("" for none: a fresh start). */
static void find_checkpoint(struct state *s, const struct resume_run *run, struct ckpt_meta *m,
			    char *used, size_t len)
{
	const struct config *cfg = run->cfg;
	if (!strcmp(cfg->resume, "never"))
		return;
	if (strcmp(cfg->resume, "auto")) {
		if (state_read(s, cfg->resume, 0, m) == 0)
			snprintf(used, len, "%s", cfg->resume);
		return;
	}
	int n;
	struct ckpt_file *files = ckpt_list(cfg->ckpt_dir, &n);
	for (int i = 0; i < n && !used[0]; i++) {
		int rc = state_read(s, files[i].path, 0, m);
		if (rc == 0)
			snprintf(used, len, "%s", files[i].path);
		else if (rc == RC_CORRUPT) {
			log_warn("skipping checkpoint: %s", user_error_text());
			user_error_clear();
		} else {
			another_model(files[i].path, run);
			break;
		}
	}
	free(files);
}

/* Rank 0: whether the checkpoint at used fits run; a user error if not. */
static void check_fit(const char *used, const struct ckpt_meta *m, const struct resume_run *run)
{
	const struct config *cfg = run->cfg;
	enum order_kind order;
	if (m->batch != cfg->batch)
		user_error("%s: written with --batch %d, this run has --batch %d (the data "
			   "position counts in global batches)", used, m->batch, cfg->batch);
	else if (m->seed != cfg->seed)
		user_error("%s: written with --seed %llu, this run has --seed %llu", used,
			   (unsigned long long)m->seed, (unsigned long long)cfg->seed);
	else if (m->train_rows != run->train_rows)
		user_error("%s: written for a training set of %ld rows, --data %s has %ld (the "
			   "data position counts in its rows)", used, m->train_rows, cfg->data,
			   run->train_rows);
	else if (order_parse(m->order, &order))
		user_error("%s: made with order '%s' of the rows, which this mtrain does not know",
			   used, m->order);
	else if (m->global_step < 0 || m->epoch < 0 || m->step_in_epoch < 0 ||
		 m->global_step / run->steps_per_epoch != m->epoch ||
		 m->global_step % run->steps_per_epoch != m->step_in_epoch)
		user_error("%s: global_step %ld, epoch %ld and step_in_epoch %ld do not agree "
			   "with %ld steps per epoch (edited or corrupt)", used, m->global_step,
			   m->epoch, m->step_in_epoch, run->steps_per_epoch);
	/* Other hyper-parameters are allowed (a longer run, a lower rate) but
	 * should not pass unnoticed: name the first. */
	char a[PATH_LEN + 64], b[PATH_LEN + 64];
	if (!user_error_pending() && m->config &&
	    config_diff(m->config, run->config_text, OPT_MAY_CHANGE, a, b, sizeof(a)))
		log_warn("%s was written with '%s'; this run has '%s'", used, a, b);
}

int state_resume(struct state *s, const struct resume_run *run, struct position *at,
		 struct comm *c)
{
	struct ckpt_meta m;
	memset(&m, 0, sizeof(m));
	memset(at, 0, sizeof(*at));
	char used[FILE_PATH_LEN] = "";
	enum order_kind order = ORDER_FEISTEL; /* a fresh run's */
	if (c->rank == 0) {
		find_checkpoint(s, run, &m, used, sizeof(used));
		if (used[0])
			check_fit(used, &m, run);
		if (used[0] && !user_error_pending())
			order_parse(m.order, &order); /* check_fit: it knows the name */
		/* auto took the newest it could read; newer ones were warned of */
		if (!user_error_pending() && strcmp(run->cfg->resume, "auto"))
			warn_newer_checkpoints(run->cfg->ckpt_dir, used[0] ? m.global_step : 0);
	}
	ckpt_meta_free(&m);
	if (comm_user_errors(c))
		return -1;
	long pos[5] = {used[0] != 0, m.global_step, m.epoch, m.step_in_epoch, order};
	comm_bcast_host(c, pos, sizeof(pos), 0);
	comm_bcast_host(c, used, sizeof(used), 0);
	at->order = (int)pos[4];
	if (!pos[0])
		return 0;
	state_send(s, c);
	*at = (struct position){pos[1], pos[2], pos[3], (int)pos[4], 1};
	log_info("resumed from %s at step %ld (epoch %ld, batch %ld of it, order %s)", used,
		 at->global_step, at->epoch + 1, at->pos, order_name((enum order_kind)at->order));
	return 0;
}
