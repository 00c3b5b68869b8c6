/* Option table, parsing of flags and key = value files, validation, help and
 * serialisation of struct config. */
#include "config.h"
#include "augment.h"
#include "check.h"
#include "log.h"
#include "options.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define OFF(f) offsetof(struct config, f)
/* Columns: name, type, field, default (written as a flag's value; NULL: 0 or
 * ""), range, flags (OPT_*, M below), help. */
#define OPT(n, t, f, def, lo, hi, fl, h) {n, t, OFF(f), def, lo, hi, NULL, OPTIM_HP_NONE, fl, h, NULL}
#define OPT_ENUM(n, f, list, def, fl, h) {n, T_ENUM, OFF(f), def, 0, 0, list, OPTIM_HP_NONE, fl, h, NULL}
/* A hyper-parameter whose default is a column of the optimizer's row (kinds.h). */
#define OPT_OPTIM(n, f, lo, hi, hp, h) {n, T_FLOAT, OFF(f), OPT_OPTIM_DEFAULT, lo, hi, NULL, hp, 0, h, NULL}
/* The "may change" column: M, a resumed run may change it without a word
 * (where files are, how long to run, how to log, on what to compute); the
 * others are named in a warning when they differ from the checkpoint's. */
#define M OPT_MAY_CHANGE
const struct option_def options[] = {
	OPT("data", T_STR, data, NULL, 0, 0, M, "training set: HDF5 with x [N,D] or [N,H,W,C] and y [N] (default: Fashion-MNIST, imported on first use)"),
	OPT_ENUM("dataset", dataset, dataset_names, "fashion-mnist", M, "the built-in data a run without --data trains on, imported into $MTRAIN_DATA_DIR on first use: fashion-mnist (Debian's dataset-fashion-mnist) or jargon (the Jargon File from Debian's jargon-text, its bytes as tokens, the last tenth the validation split)"),
	OPT("eval-data", T_STR, eval_data, NULL, 0, 0, M, "evaluation set, same layout; 'none' for no evaluation"),
	OPT("layers", T_LIST, hidden, "256,256", 1, 65536, OPT_SHAPE, "hidden layer widths, comma-separated"),
	OPT_ENUM("activation", act, act_names, "relu", 0, "hidden activation"),
	{"input-shape", T_STR, OFF(input_shape), NULL, 0, 0, NULL, OPTIM_HP_NONE, OPT_SHAPE, "the image each data row of D = H*W*C values is (channels last), e.g. 28,28,1; default: the data's, a flat row for x [N,D]", "H,W,C"},
	{"model", T_STR, OFF(model), NULL, 0, 0, NULL, OPTIM_HP_NONE, OPT_SHAPE | OPT_NOT_EMPTY, "the layers, e.g. conv2d:32:3,relu,maxpool2d:2,flatten,dense:128,relu,dropout:0.3,dense (replaces --layers and --activation; docs/models.md)", "LAYER,LAYER,..."},
	{"augment", T_STR, OFF(augment), NULL, 0, 0, NULL, OPTIM_HP_NONE, 0, "training rows' augmentation, in order: flip (mirror, p 1/2), crop:PAD (zero-pad, random crop back); images only; each row's choices a function of (seed, epoch, row) only; a resumed run may change it (named in a warning)", "LIST"},
	OPT("read-ahead", T_INT, read_ahead, "4", 1, 1024, M, "batches the reader thread stages ahead of the step (each rank's memory: this many of its batches, whatever the data set's size)"),
	OPT("verify-data", T_BOOL, verify_data, "off", 0, 1, M, "at start-up, read and check every training row and compare the whole set's digest across ranks (on|off); off: a seeded sample of rows, each row checked when first read"),
	OPT("context", T_INT, context, "256", 1, 1 << 20, 0, "a file of tokens' rows: windows of this many tokens (the inputs) and the next token after each (the targets); a language model's context length"),
	OPT("sync-bn", T_BOOL, sync_bn, "off", 0, 1, 0, "batchnorm normalises with the whole global batch's statistics (an all-reduce per layer, forward and backward) instead of each rank's own (on|off)"),
	OPT_ENUM("optimizer", optim, optim_names, "adam", 0, "optimizer"),
	OPT("lr", T_FLOAT, lr, "0.001", 0, 100, 0, "peak learning rate"),
	OPT("momentum", T_FLOAT, momentum, "0.9", 0, 0.999999, 0, "momentum coefficient (momentum optimizer)"),
	OPT("nesterov", T_BOOL, nesterov, "off", 0, 1, 0, "Nesterov momentum (on|off)"),
	OPT_OPTIM("beta1", beta1, 0, 0.999999, OPTIM_HP_BETA1, "Adam's first-moment decay; Lion's interpolation of the update"),
	OPT_OPTIM("beta2", beta2, 0, 0.999999, OPTIM_HP_BETA2, "Adam's second-moment decay; Lion's momentum decay"),
	OPT("eps", T_FLOAT, eps, "1e-8", 0, 1, 0, "Adam epsilon"),
	OPT_OPTIM("weight-decay", weight_decay, 0, 10, OPTIM_HP_WEIGHT_DECAY, "weight decay: L2 for sgd/momentum/adam, decoupled (PyTorch's AdamW form) for the others"),
	OPT_ENUM("schedule", schedule, schedule_names, "constant", 0, "learning-rate schedule after warm-up"),
	OPT("warmup", T_LONG, warmup, "0", 0, 1e12, 0, "linear warm-up steps"),
	OPT("lr-min", T_FLOAT, lr_min, "0", 0, 100, 0, "cosine schedule floor"),
	OPT("lr-step-every", T_LONG, lr_step_every, "1000", 1, 1e12, 0, "step schedule: steps between decays"),
	OPT("lr-gamma", T_FLOAT, lr_gamma, "0.1", 0, 1, 0, "step schedule: decay factor"),
	OPT("batch", T_INT, batch, "128", 1, 1 << 24, 0, "global batch size, split across ranks"),
	OPT("accumulate", T_INT, accumulate, "1", 1, 1 << 16, M, "compute each rank's rows of a step in this many micro-batches, their gradients summed before the one reduction (--batch stays the global batch of a step; activations take a micro-batch's memory)"),
	OPT_ENUM("weight-decay-on", decay_on, decay_names, "matrices", M, "the variables --weight-decay applies to: matrices (kernels and embeddings, as nanoGPT; not biases, gamma or beta) or all"),
	OPT("clip-norm", T_FLOAT, clip_norm, "0", 0, 1e30, M, "scale the global gradient (after the reduction, before the optimizer) down to this L2 norm when it is over it, as PyTorch's clip_grad_norm_; its norm in the progress lines; 0: off"),
	OPT("eval-batch", T_INT, eval_batch, "1000", 1, 1 << 20, M, "evaluation rows per rank per batch"),
	OPT("eval-every", T_LONG, eval_every, "0", 0, 1e12, M, "steps between evaluations, besides those at the end of every epoch and of the run (nanoGPT's eval_interval); 0: only those"),
	OPT("epochs", T_INT, epochs, "5", 1, 1e6, M, "epochs to train (ignored when --steps is set)"),
	OPT("steps", T_LONG, steps, "0", 0, 1e12, M, "total optimizer steps; 0: as many as --epochs make"),
	OPT("seed", T_U64, seed, "42", 0, 0, 0, "seed of the initial weights and of each epoch's order"),
	OPT("ema-decay", T_FLOAT, ema_decay, "0.999", 0, 0.9999999, 0, "EMA decay (below 1 in float32)"),
	OPT("ema-num-updates", T_BOOL, ema_num_updates, "on", 0, 1, 0, "decay = min(decay, (1+step)/(10+step)) (on|off)"),
	OPT("ema-sync-every", T_LONG, ema_sync_every, "100", 1, 1e12, M, "steps between broadcasts of rank 0's EMA shadows"),
	OPT("ckpt-dir", T_STR, ckpt_dir, "checkpoints", 0, 0, M, "checkpoint folder"),
	OPT("ckpt-every", T_LONG, ckpt_every, "0", 0, 1e12, M, "steps between checkpoints, besides those at the end of every epoch and of the run; 0: only those"),
	OPT("ckpt-every-min", T_FLOAT, ckpt_every_min, "0", 0, 1e6, M, "minutes between checkpoints by rank 0's clock (every rank saves at the same step), besides --ckpt-every's and those at the end of every epoch and of the run; 0: none by time"),
	OPT("keep", T_INT, keep, "5", 1, 1e6, M, "newest checkpoints kept"),
	OPT("resume", T_STR, resume, "auto", 0, 0, M, "auto (newest valid checkpoint in --ckpt-dir), never, or a checkpoint file"),
	{"init-from", T_STR, OFF(init_from), NULL, 0, 0, NULL, OPTIM_HP_NONE, M, "a new run's starting weights: every variable from its name in this mtrain checkpoint, safetensors, .keras or Keras .weights.h5 file (EMA shadows start from them; optimizer and step fresh); ignored, with a line, when the run resumes", "FILE"},
	{"init-skip", T_STR, OFF(init_skip), NULL, 0, 0, NULL, OPTIM_HP_NONE, M, "with --init-from: the variables that keep their fresh values, a regular expression (POSIX extended) matching the whole name, e.g. 'dense_2/.*'", "REGEX"},
	OPT("log-every", T_LONG, log_every, "50", 1, 1e12, M, "steps between progress lines"),
	OPT("metrics", T_STR, metrics, NULL, 0, 0, M, "append JSON-lines metrics to this file (rank 0)"),
	OPT_ENUM("device", device, device_names, "auto", M, "where each rank computes: cuda (one GPU per rank, NCCL), cpu (MPI), auto (cuda if every rank sees a GPU)"),
	OPT_ENUM("zero", zero, zero_names, "auto", M, "ZeRO stage 1: 1 splits the optimizer's update and slots over the ranks (gradients reduce-scattered, weights all-gathered), 0 keeps a whole copy on every rank, auto: 1 where it is faster (one node, or NCCL)"),
	OPT_ENUM("precision", precision, precision_names, "fp32", M, "matrix products and convolutions: bf16 multiplies bf16 operands with fp32 sums (tensor cores on CUDA; on the CPU oneDNN's AVX512_BF16 kernels, or with --force-bf16 on other CPUs its operands rounded for the fp32 kernels; weights, gradients, slots and shadows stay fp32)"),
	OPT("force-bf16", T_BOOL, force_bf16, "off", 0, 1, M, "run --precision bf16 on a CPU without AVX512_BF16 anyway (slower than fp32: for its numerics) (on|off)"),
	OPT("threads", T_INT, threads, "0", 0, 1024, M, "threads a CPU rank computes on: its products and convolutions (OpenBLAS, oneDNN) and its own loops over rows (attention's heads, activations, layer normalization, softmax, dropout, the optimizer, the EMA; the same bits on any count); 0: the cores its CPU affinity holds, shared by the ranks of its node where it is not bound (one where mpirun or Slurm binds each rank to a core)"),
	OPT_ENUM("cpu-kernels", cpu_kernels, cpu_kernels_names, "onednn", M, "the CPU's kernels: onednn (oneDNN's where they measured faster: conv2d, batch norm's forward, bf16's products) or own (mtrain's alone: conv2d as im2col, OpenBLAS sgemm and col2im); the same results to rounding"),
	OPT("comm-timeout", T_FLOAT, comm_timeout, "300", 1, 86400, M, "seconds one collective may take before the job aborts with a message (a rank stalled or died)"),
	OPT("max-bad-steps", T_INT, max_bad_steps, "5", 1, 1e6, M, "steps in a row whose gradients hold NaN or Inf (skipped, retried) before the job stops"),
	OPT("check-replicas", T_LONG, check_replicas, "0", 0, 1e12, M, "every N steps and at each checkpoint, stop if any rank's weights (or shadows after a sync) differ bitwise from rank 0's; 0: never"),
	OPT("tensorboard", T_STR, tensorboard, NULL, 0, 0, M, "write TensorBoard scalars to an event file in this folder (rank 0)"),
	OPT("timeline", T_STR, timeline, NULL, 0, 0, M, "write a Chrome trace of every rank's phases to this file (Perfetto, chrome://tracing)"),
	{"timeline-steps", T_STR, OFF(timeline_steps), NULL, 0, 0, NULL, OPTIM_HP_NONE, M, "the steps the timeline records, as progress lines count them (default: all)", "A:B"},
	OPT("restart", T_LONG, restart, "0", 0, 1e6, OPT_NOT_STORED, "which restart of an elastic job this run is (jobs/elastic.sh gives it): rank 0 prints a line naming it, the nodes lost and the step it resumes from, and writes a restart event; 0: not a restart"),
	{"restart-lost", T_STR, OFF(restart_lost), NULL, 0, 0, NULL, OPTIM_HP_NONE, OPT_NOT_STORED, "with --restart: the nodes the job lost, comma-separated (jobs/elastic.sh gives it)", "NODES"},
	OPT("config", T_STR, config_file, NULL, 0, 0, OPT_NOT_STORED, "key = value file of these options; flags override it"),
};
#undef M
#define N_OPTIONS (sizeof(options) / sizeof(options[0]))
const size_t n_options = N_OPTIONS;

const struct option_def *config_find_option(const char *name)
{
	for (size_t i = 0; i < n_options; i++)
		if (!strcmp(options[i].name, name))
			return &options[i];
	return NULL;
}

/* Spellings users bring from other trainers (Hugging Face, DeepSpeed,
 * Megatron, timm, Keras), for "did you mean"; '_' is compared as '-'. */
static const char *const aliases[][2] = {
	{"learning-rate", "lr"}, {"batch-size", "batch"}, {"num-epochs", "epochs"},
	{"max-steps", "steps"}, {"optimiser", "optimizer"}, {"act", "activation"},
	{"hidden", "layers"}, {"checkpoint-dir", "ckpt-dir"}, {"save-every", "ckpt-every"},
	{"ema", "ema-decay"}, {"wd", "weight-decay"}, {"train-data", "data"},
	{"val-data", "eval-data"}, {"test-data", "eval-data"}, {"zero-stage", "zero"},
	{"lr-scheduler", "schedule"}, {"lr-scheduler-type", "schedule"},
	{"lr-decay-style", "schedule"}, {"warmup-steps", "warmup"}, {"min-lr", "lr-min"},
	{"train-iters", "steps"}, {"block-size", "context"}, {"grad-clip", "clip-norm"}, {"gradient-accumulation-steps", "accumulate"}, {"max-grad-norm", "clip-norm"}, {"seq-len", "context"}, {"global-batch-size", "batch"}, {"optim", "optimizer"},
	{"per-device-train-batch-size", "batch"}, {"num-train-epochs", "epochs"},
	{"adam-beta1", "beta1"}, {"adam-beta2", "beta2"}, {"adam-epsilon", "eps"},
	{"adam-eps", "eps"}, {"save-steps", "ckpt-every"}, {"save-interval", "ckpt-every"},
	{"save-total-limit", "keep"}, {"output-dir", "ckpt-dir"}, {"logging-steps", "log-every"},
	{"log-interval", "log-every"}, {"resume-from-checkpoint", "resume"}, {"bf16", "precision"},
	{"lr-warmup-iters", "warmup"}, {"lr-warmup-steps", "warmup"}, {"lr-decay", "lr-gamma"},
};

/* The option nearest flag, by kind_near_answer's rules over the aliases
 * (first) and the options; NULL when none is near. */
static const char *closest_option(const char *flag)
{
	struct kind_near k;
	kind_near_start(&k, flag);
	for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
		kind_near_offer(&k, aliases[i][0], aliases[i][1]);
	for (size_t i = 0; i < n_options; i++)
		kind_near_offer(&k, options[i].name, options[i].name);
	return kind_near_answer(&k);
}

static int unknown_option(const char *where, const char *prefix, const char *name)
{
	const char *near = closest_option(name);
	if (near)
		return user_error("%sunknown %s '%s%s' (did you mean '%s%s'?)", where,
				  *prefix ? "flag" : "config key", prefix, name, prefix, near);
	return user_error("%sunknown %s '%s%s' (see mtrain --help)", where,
			  *prefix ? "flag" : "config key", prefix, name);
}

static int parse_bool(const char *v, int *out)
{
	static const char *yes[] = {"on", "true", "yes", "1"}, *no[] = {"off", "false", "no", "0"};
	for (int i = 0; i < 4; i++) {
		if (!strcmp(v, yes[i]))
			return *out = 1, 0;
		if (!strcmp(v, no[i]))
			return *out = 0, 0;
	}
	return -1;
}

/* Sets one option from its text value; where is "--lr" or "run.conf:3: lr". */
static int set_option(struct config *cfg, const struct option_def *o, const char *v,
		      const char *where)
{
	char *base = (char *)cfg + o->offset;
	char *end = NULL;
	errno = 0;
	switch (o->type) {
	case T_STR:
		if (strlen(v) >= PATH_LEN)
			return user_error("%s: value is longer than %d characters", where, PATH_LEN - 1);
		snprintf(base, PATH_LEN, "%s", v);
		return 0;
	case T_BOOL:
		if (parse_bool(v, (int *)base))
			return user_error("%s: '%s' is not on or off", where, v);
		return 0;
	case T_ENUM: {
		int i = kind_parse(o->names, v);
		char list[128];
		if (i < 0)
			return user_error("%s: '%s' is not one of %s", where, v,
					  kind_choices(o->names, list, sizeof(list)));
		*(int *)base = i;
		return 0;
	}
	case T_LIST: {
		int n = 0;
		const char *p = v;
		while (*p) {
			long w = strtol(p, &end, 10);
			if (end == p || (*end && *end != ','))
				return user_error("%s: '%s' is not a comma-separated list of widths (e.g. 256,256)", where, v);
			if (w < o->min || w > o->max)
				return user_error("%s: width %ld is out of range (%g..%g)", where, w, o->min, o->max);
			if (n == MAX_HIDDEN)
				return user_error("%s: more than %d hidden layers", where, MAX_HIDDEN);
			((int *)base)[n++] = (int)w;
			if (*end == ',' && !end[1])
				return user_error("%s: '%s' ends in a comma", where, v);
			p = *end ? end + 1 : end;
		}
		if (n == 0)
			return user_error("%s: needs at least one hidden width (e.g. 256,256)", where);
		cfg->n_hidden = n;
		return 0;
	}
	case T_U64: {
		if (*v == '-')
			return user_error("%s: '%s' is not a non-negative integer", where, v);
		unsigned long long u = strtoull(v, &end, 10);
		if (!*v || *end || errno)
			return user_error("%s: '%s' is not a non-negative integer", where, v);
		*(uint64_t *)base = u;
		return 0;
	}
	default: {
		double d;
		/* "-1": how checkpoints before 'default' existed wrote it. */
		if (o->per_optim && (!strcmp(v, OPT_OPTIM_DEFAULT) || !strcmp(v, "-1")))
			return *(float *)base = -1.0f, 0;
		if (o->type == T_FLOAT)
			d = strtod(v, &end);
		else
			d = (double)strtoll(v, &end, 10);
		if (!*v || *end || errno || (o->type == T_FLOAT && !isfinite(d)))
			return user_error("%s: '%s' is not %s", where, v,
					  o->type == T_FLOAT ? "a number" : "an integer");
		if (d < o->min || d > o->max)
			return user_error("%s: %s is out of range (%g..%g)", where, v, o->min, o->max);
		if (o->type == T_FLOAT)
			*(float *)base = (float)d;
		else if (o->type == T_INT)
			*(int *)base = (int)d;
		else
			*(long *)base = (long)d;
		return 0;
	}
	}
}

/* set_option for a value a user gave (a flag, a --config line). */
static int set_given(struct config *cfg, const struct option_def *o, const char *v,
		     const char *where)
{
	if ((o->flags & OPT_NOT_EMPTY) && !*v)
		return user_error("%s: must not be empty (leave it out for the default)", where);
	return set_option(cfg, o, v, where);
}

void config_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < n_options; i++)
		if (options[i].def && set_option(cfg, &options[i], options[i].def, options[i].name))
			check_fail("mtrain", options[i].name, "its default in the option table",
				   __FILE__, __LINE__);
}

/* The next line of *p (advancing it, counting *lineno) into buf, its
 * comment cut off and its blanks trimmed: 0, or -1 with a user_error when
 * it does not fit. */
static int config_line(const char **p, char *buf, size_t len, int *lineno, const char *where)
{
	++*lineno;
	size_t n = strcspn(*p, "\n");
	if (n >= len)
		return user_error("%s:%d: line too long", where, *lineno);
	memcpy(buf, *p, n);
	buf[n] = 0;
	*p += n + ((*p)[n] == '\n');
	/* A comment starts a line or follows a blank: "run#2.h5" is a value. */
	for (char *h = strchr(buf, '#'); h; h = strchr(h + 1, '#'))
		if (h == buf || isspace((unsigned char)h[-1])) {
			*h = 0;
			break;
		}
	char *s = buf;
	while (isspace((unsigned char)*s))
		s++;
	n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = 0;
	memmove(buf, s, n + 1);
	return 0;
}

/* config_parse_text; given: the text is a user's --config file (set_given). */
static int parse_text(struct config *cfg, const char *text, const char *where, int given)
{
	int lineno = 0, set_at[N_OPTIONS] = {0}; /* the line that set each option */
	const char *p = text;
	while (*p) {
		char line[4 * PATH_LEN], more[PATH_LEN + 128];
		if (config_line(&p, line, sizeof(line), &lineno, where))
			return -1;
		char *s = line;
		size_t n = strlen(s);
		if (!*s)
			continue;
		int first = lineno; /* errors name the line the key is on */
		/* A value that ends in ',', '(', '[' or '|' (a model spread over
		 * lines) goes on on the next line that is not blank. */
		while (strchr(",([|", s[n - 1]) && *p) {
			if (config_line(&p, more, sizeof(more), &lineno, where))
				return -1;
			if (!*more)
				continue;
			if (n + 1 + strlen(more) >= sizeof(line))
				return user_error("%s:%d: the value begun at line %d is too long", where,
						  lineno, first);
			s[n++] = ' ';
			strcpy(s + n, more);
			n += strlen(more);
		}
		char *eq = strchr(s, '=');
		if (!eq)
			return user_error("%s:%d: expected 'key = value', got '%s'", where, first, s);
		*eq = 0;
		char *key = s, *val = eq + 1;
		for (n = strlen(key); n && isspace((unsigned char)key[n - 1]);)
			key[--n] = 0;
		while (isspace((unsigned char)*val))
			val++;
		for (char *k = key; *k; k++)
			if (*k == '_')
				*k = '-';
		char loc[PATH_LEN + 128];
		snprintf(loc, sizeof(loc), "%s:%d: ", where, first);
		const struct option_def *o = config_find_option(key);
		if (o && !strcmp(key, "config"))
			return user_error("%sa config file cannot name another (config = ...)", loc);
		if (!o)
			return unknown_option(loc, "", key);
		if (set_at[o - options])
			return user_error("%s'%s' is already set at line %d", loc, o->name,
					  set_at[o - options]);
		set_at[o - options] = first;
		snprintf(loc, sizeof(loc), "%s:%d: %.64s", where, first, o->name);
		if (given ? set_given(cfg, o, val, loc) : set_option(cfg, o, val, loc))
			return -1;
	}
	return 0;
}

int config_parse_text(struct config *cfg, const char *text, const char *where)
{
	return parse_text(cfg, text, where, 0);
}

/* Config files are a page of key = value lines: 1 MiB is far beyond one. */
#define CONFIG_FILE_MAX (1 << 20)

static int load_config_file(struct config *cfg, const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return user_error("--config %s: cannot open: %s", path, strerror(errno));
	char *text = xmalloc(CONFIG_FILE_MAX + 1);
	size_t n = fread(text, 1, CONFIG_FILE_MAX + 1, f);
	int bad = ferror(f);
	fclose(f);
	text[n > CONFIG_FILE_MAX ? CONFIG_FILE_MAX : n] = 0;
	int rc = bad		      ? user_error("--config %s: read error", path)
		 : n > CONFIG_FILE_MAX ? user_error("--config %s: larger than %d bytes; not a config "
						    "file?", path, CONFIG_FILE_MAX)
		 : strlen(text) != n   ? user_error("--config %s: holds a NUL byte at offset %zu; "
						    "not a text file", path, strlen(text))
				       : parse_text(cfg, text, path, 1);
	free(text);
	return rc;
}

int config_parse_args(struct config *cfg, int argc, char **argv, int *help, int *version)
{
	*help = *version = 0;
	/* The config file first, wherever --config stands, so flags win. */
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!strncmp(a, "--config=", 9))
			snprintf(cfg->config_file, PATH_LEN, "%s", a + 9);
		else if (!strcmp(a, "--config") && i + 1 < argc)
			snprintf(cfg->config_file, PATH_LEN, "%s", argv[i + 1]);
	}
	if (cfg->config_file[0] && load_config_file(cfg, cfg->config_file))
		return -1;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			*help = 1;
			continue;
		}
		if (!strcmp(a, "--version")) {
			*version = 1;
			continue;
		}
		if (strncmp(a, "--", 2))
			return user_error("unexpected argument '%s' (options start with --; see mtrain --help)", a);
		char name[128];
		const char *eq = strchr(a, '=');
		size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
		snprintf(name, sizeof(name), "%.*s", (int)(len < 127 ? len : 127), a + 2);
		const struct option_def *o = config_find_option(name);
		if (!o)
			return unknown_option("", "--", name);
		const char *val = eq ? eq + 1 : NULL;
		if (!val && o->type == T_BOOL) {
			int b;
			if (i + 1 < argc && !parse_bool(argv[i + 1], &b))
				val = argv[++i];
			else
				val = "on";
		}
		if (!val) {
			if (i + 1 >= argc)
				return user_error("--%s: missing value", name);
			val = argv[++i];
		}
		char where[160];
		snprintf(where, sizeof(where), "--%s", name);
		if (set_given(cfg, o, val, where))
			return -1;
	}
	return 0;
}

int config_timeline_steps(const struct config *cfg, long *first, long *last)
{
	*first = 0;
	*last = -1;
	const char *s = cfg->timeline_steps;
	if (!s[0])
		return 0;
	char tail;
	if (sscanf(s, "%ld:%ld%c", first, last, &tail) != 2 || *first < 0 || *last < *first)
		return -1;
	return 0;
}

int config_init_skip(const struct config *cfg, regex_t *re)
{
	char whole[PATH_LEN + 8], why[160];
	snprintf(whole, sizeof(whole), "^(%s)$", cfg->init_skip);
	int rc = regcomp(re, whole, REG_EXTENDED | REG_NOSUB);
	if (!rc)
		return 0;
	regerror(rc, re, why, sizeof(why));
	return user_error("--init-skip: '%s' is not a regular expression (%s)", cfg->init_skip, why);
}

int config_validate(const struct config *cfg)
{
	long first, last;
	if (config_timeline_steps(cfg, &first, &last))
		return user_error("--timeline-steps: '%s' is not A:B, the first and last global "
				  "steps to record (e.g. 100:120)", cfg->timeline_steps);
	if (!cfg->ckpt_dir[0])
		return user_error("--ckpt-dir: must not be empty");
	if (cfg->lr_min > cfg->lr)
		return user_error("--lr-min: %g is above --lr %g", cfg->lr_min, cfg->lr);
	if (!cfg->resume[0])
		return user_error("--resume: must be auto, never or a checkpoint file");
	if (cfg->lr <= 0.0f)
		return user_error("--lr: must be above 0");
	if (cfg->restart_lost[0] && !cfg->restart)
		return user_error("--restart-lost: names the nodes a restart lost; give --restart N too");
	if (cfg->init_skip[0] && !cfg->init_from[0])
		return user_error("--init-skip: names variables --init-from leaves fresh; give "
				  "--init-from FILE too");
	regex_t re;
	if (cfg->init_skip[0] && config_init_skip(cfg, &re))
		return -1;
	if (cfg->init_skip[0])
		regfree(&re);
	struct augment a;
	return augment_parse(&a, cfg->augment);
}
