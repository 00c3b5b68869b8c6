/* The run configuration: one table of options drives the command-line flags,
 * the --config key = value file, --help, validation and the text stored in
 * every checkpoint. */
#pragma once
#include <regex.h>
#include <stdint.h>
#include <stdio.h>

#include "kinds.h"
#include "mtrain.h"

#define MAX_HIDDEN 16

struct config {
	int dataset;              /* enum dataset_kind: the built-in data when data
				   * is not given */
	char data[PATH_LEN];      /* training set, e.g. "data/fashion-mnist-train.h5" */
	char eval_data[PATH_LEN]; /* evaluation set, "" for none */
	int hidden[MAX_HIDDEN];   /* hidden widths, e.g. {256, 256} */
	int n_hidden;             /* e.g. 2 */
	int act;                  /* enum act_kind, e.g. ACT_RELU */
	char model[PATH_LEN];     /* --model, e.g. "conv2d:32:3,relu,flatten,dense";
				   * "" for the MLP of hidden and act */
	int sync_bn;              /* 1: batchnorm's statistics over the global batch */
	char augment[PATH_LEN];   /* --augment, e.g. "crop:4,flip"; "" for none */
	int read_ahead;           /* batches the reader stages ahead of the step, e.g. 4 */
	int verify_data;          /* 1: start-up reads and compares every row */
	int context;              /* T: the tokens a row of a file of tokens holds,
				   * e.g. 256 */
	char input_shape[PATH_LEN]; /* "H,W,C" of a flat row, e.g. "28,28,1"; "" for [D] */
	int optim;                /* enum optim_kind, e.g. OPTIM_ADAM */
	float lr;                 /* peak learning rate, e.g. 1e-3 */
	float momentum;           /* momentum optimizer, e.g. 0.9 */
	int nesterov;             /* 0/1 */
	float beta1, beta2;       /* adam/adamw/lion, e.g. 0.9, 0.999; < 0: the
				   * optimizer's default */
	float eps;                /* adam/adamw, e.g. 1e-8 */
	float weight_decay;       /* e.g. 0; < 0 means the optimizer's default */
	int decay_on;             /* enum decay_kind: which variables it applies to */
	int accumulate;           /* micro-batches a rank's rows of a step are
				   * computed in, their gradients summed, e.g. 1 */
	float clip_norm;          /* > 0: the global gradient's L2 norm is scaled
				   * down to this when over it; 0: off */
	int schedule;             /* enum lr_schedule */
	long warmup;              /* linear warm-up steps, e.g. 0 */
	float lr_min;             /* cosine floor, e.g. 0 */
	long lr_step_every;       /* step schedule period in steps, e.g. 1000 */
	float lr_gamma;           /* step schedule factor, e.g. 0.1 */
	int batch;                /* global batch over all ranks, e.g. 128 */
	int eval_batch;           /* rows per rank per evaluation batch, e.g. 1000 */
	long eval_every;          /* steps; 0: end of each epoch and of the run */
	int epochs;               /* e.g. 5 */
	long steps;               /* total optimizer steps; 0: epochs' worth */
	uint64_t seed;            /* e.g. 42 */
	float ema_decay;          /* e.g. 0.999 */
	int ema_num_updates;      /* 1: decay = min(decay, (1+t)/(10+t)) */
	long ema_sync_every;      /* steps between shadow broadcasts, e.g. 100 */
	char ckpt_dir[PATH_LEN];  /* e.g. "checkpoints" */
	long ckpt_every;          /* steps; 0: end of each epoch and of the run */
	float ckpt_every_min;     /* minutes by rank 0's clock, e.g. 30; 0: none */
	int keep;                 /* newest checkpoints kept, e.g. 5 */
	char resume[PATH_LEN];    /* "auto", "never" or a checkpoint path */
	long log_every;           /* steps between progress lines, e.g. 50 */
	char metrics[PATH_LEN];   /* JSON-lines metrics file, "" for none */
	char tensorboard[PATH_LEN]; /* TensorBoard event folder, e.g. "tb", "" for none */
	char timeline[PATH_LEN];  /* Chrome trace file, e.g. "trace.json", "" for none */
	char timeline_steps[PATH_LEN]; /* "A:B": the steps it records, e.g. "100:120"; "" all */
	int device;               /* enum device_kind */
	int zero;                 /* enum zero_kind, e.g. ZERO_AUTO */
	int precision;            /* enum precision: matrix products, e.g. PRECISION_FP32 */
	int cpu_kernels;             /* enum cpu_kernels_kind: conv2d's kernels on the CPU */
	int threads;              /* --threads: a CPU rank's threads; 0: auto */
	int force_bf16;           /* --force-bf16: bf16 on a CPU without AVX512_BF16 */
	float comm_timeout;       /* seconds one collective may take, e.g. 300 */
	int max_bad_steps;        /* NaN/Inf steps in a row before stopping, e.g. 5 */
	long check_replicas;      /* steps between replica comparisons; 0: never */
	long restart;             /* an elastic job's restart this run is, e.g. 1; 0: none */
	char restart_lost[PATH_LEN]; /* the nodes it lost, e.g. "node3", "" unnamed */
	char init_from[PATH_LEN]; /* a fresh run's weights, e.g. "model.keras", "" none */
	char init_skip[PATH_LEN]; /* the variables it leaves fresh, e.g. "dense_2/.*" */
	char config_file[PATH_LEN]; /* the --config file, "" for none */
};

/* Fills cfg with the defaults of the default job. */
void config_defaults(struct config *cfg);
/* Applies --config FILE (if named) then the flags argv[0..argc), flags
 * winning. Returns 0, or -1 with a user_error recorded. *help / *version are
 * set when those flags appear. */
int config_parse_args(struct config *cfg, int argc, char **argv, int *help,
		      int *version);
/* Applies "key = value" lines from text, as config_write writes them (a
 * --config file is read so too, but may not give an OPT_NOT_EMPTY option
 * ""); where names the source in errors (e.g. "run.conf"). Returns 0 or -1
 * with a user_error recorded. */
int config_parse_text(struct config *cfg, const char *text, const char *where);
/* The steps --timeline records: first..last inclusive (last -1: to the end).
 * 0, or -1 when --timeline-steps is not "A:B" with 0 <= A <= B. */
int config_timeline_steps(const struct config *cfg, long *first, long *last);
/* Cross-option checks (ranges that depend on each other). 0 or -1. */
int config_validate(const struct config *cfg);
/* --init-skip compiled into re (matching whole names; regfree it). 0, or
 * -1 with a user_error. */
int config_init_skip(const struct config *cfg, regex_t *re);
/* Writes every option as "key = value" lines, readable by config_parse_text. */
void config_write(const struct config *cfg, FILE *f);
/* config_write into a malloc'd string. */
char *config_to_text(const struct config *cfg);
/* Option flags, a column of the option table. */
enum {
	OPT_MAY_CHANGE = 1, /* a resumed run may change it without a word */
	OPT_SHAPE = 2,      /* shapes the model: ranks compare the registry instead */
	OPT_NOT_STORED = 4, /* not part of the configuration text (--config) */
	OPT_NOT_EMPTY = 8,  /* a flag or --config line may not give it "" (the
			     * stored text writes "" for its default) */
};
/* Compares two config_write texts key by key, skipping the options with a
 * flag of skip (OPT_*; 0 skips none). Returns 0 when equal; else 1 with the
 * first differing pair, "key = a" and "key = b" ("(nothing)" for a key one
 * text lacks, unless the other gives it its default: a text from before the
 * option existed), in line_a / line_b. */
int config_diff(const char *a, const char *b, unsigned skip, char *line_a, char *line_b,
		size_t len);
/* Prints the option reference for --help. */
void config_print_help(FILE *f);
/* f as a user writes it: the shortest decimal that the option parser reads
 * back (strtod, then float) as f bitwise, e.g. "0.001" (not 0.00100000005),
 * "0.0003", "300", "1e-8", "3.4028235e38"; into buf (32 bytes hold any);
 * returns buf. --help's defaults and the stored text write floats so. */
const char *config_float_text(float f, char *buf, size_t len);
/* "256,256" for the hidden widths. */
void config_hidden_text(const struct config *cfg, char *buf, size_t len);
