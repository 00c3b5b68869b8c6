/* mtrain's command line: train (the default), import, inspect, eval. */
#include "backend.h"
#include "check.h"
#include "ckpt.h"
#include "comm.h"
#include "config.h"
#include "dataset.h"
#include "default_data.h"
#include "eval.h"
#include "export.h"
#include "generate.h"
#include "image.h"
#include "log.h"
#include "model.h"
#include "preview.h"
#include "resources.h"
#include "train.h"
#include "version.h"

#include <hdf5.h>
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static void usage(FILE *f)
{
	fprintf(f,
		"mtrain %s: data-parallel neural-network training on MPI ranks\n\n"
		"usage:\n"
		"  mpirun -np N mtrain [train] [options]   train (no options: the default job,\n"
		"                                          Fashion-MNIST, MLP 784-256-256-10)\n"
		"  mtrain import --images F --labels F --out FILE.h5\n"
		"                                          convert IDX (.gz) files to HDF5\n"
		"  mtrain import --image-dir DIR --out FILE.h5 [--size H,W]\n"
		"                                          convert class folders of PNG/JPEG\n"
		"  mtrain import --text FILE... --out FILE.h5 [--val-fraction X]\n"
		"                [--tokenizer bytes|bpe:N]\n"
		"                                          text as byte tokens, or BPE of N\n"
		"                                          pieces (the last X, default 0.1,\n"
		"                                          for validation)\n"
		"  mtrain import --llmc|--uint16 FILE... --out FILE.h5 [--vocab N]\n"
		"                [--val FILE | --val-fraction X]\n"
		"                                          llm.c's token shards, nanoGPT's\n"
		"                                          uint16 .bin files\n"
		"  mtrain inspect FILE.h5 [--json]         list a checkpoint's variables\n"
		"  mtrain export FILE.h5 --out F.safetensors [--weights raw|ema]\n"
		"                [--format safetensors|keras|keras-weights]\n"
		"                                          the model for deployment (keras:\n"
		"                                          F.keras, keras-weights: F.weights.h5)\n"
		"  mpirun -np N mtrain eval --ckpt FILE.h5 [--eval-data F] [--weights raw|ema|both]\n"
		"                                          evaluate a checkpoint\n"
		"  mtrain generate --ckpt F [--prompt TEXT] [--tokens N] [--temperature X]\n"
		"                  [--top-k K] [--seed S] [--weights ema|raw] [--data F]\n"
		"                                          text from a language model\n"
		"  mtrain preview --data F [--input-shape H,W,C] [--augment LIST] [--rows N]\n"
		"                 [--seed S] [--epoch E] --out GRID.png\n"
		"                                          training rows as the step sees them\n"
		"  mtrain --help | --version\n\n"
		"training options (also as 'key = value' lines in --config FILE):\n",
		MTRAIN_VERSION);
	config_print_help(f);
	fprintf(f, "\nenvironment: MTRAIN_DATA_DIR (default data cache folder, 'data'),\n"
		   "MTRAIN_PROFILE=1 (time each phase exactly). Exit status 2: bad input.\n");
}

/* Parses "--key value" pairs of a subcommand into the named slots. */
static int sub_args(int argc, char **argv, const char **keys, const char **vals, int n)
{
	for (int i = 0; i < argc; i++) {
		int k = 0;
		while (k < n && strcmp(argv[i] + (strncmp(argv[i], "--", 2) ? 0 : 2), keys[k]))
			k++;
		if (strncmp(argv[i], "--", 2) || k == n)
			return user_error("unexpected argument '%s' (see mtrain --help)", argv[i]);
		if (i + 1 == argc)
			return user_error("%s: missing value", argv[i]);
		vals[k] = argv[++i];
	}
	return 0;
}

/* --size H,W into size; 0, or -1 with a user_error. */
static int parse_size(const char *text, int size[2])
{
	char end;
	if (sscanf(text, "%d,%d%c", &size[0], &size[1], &end) != 2 || size[0] < 1 ||
	    size[1] < 1 || size[0] > 65500 || size[1] > 65500)
		return user_error("--size: '%s' is not H,W (two sides of 1 to 65500 pixels)", text);
	return 0;
}

/* import --text|--llmc|--uint16 FILE... --out F [--val FILE]
 * [--val-fraction X] [--vocab N]: a file of tokens. */
static int import_tokens(int argc, char **argv, struct comm *c)
{
	static const char *const kinds[3] = {"--text", "--llmc", "--uint16"};
	char **files = xcalloc((size_t)argc, sizeof(char *));
	const char *out = NULL, *frac = NULL, *val = NULL, *vocab = NULL, *tokenizer = "bytes";
	int n = 0, kind = -1;
	for (int i = 0; i < argc; i++) /* which import: the first of kinds named */
		for (int k = 0; k < 3 && kind < 0; k++)
			kind = strcmp(argv[i], kinds[k]) ? -1 : k;
	for (int i = 0; i < argc && !user_error_pending(); i++) {
		int k = 0;
		while (k < 3 && strcmp(argv[i], kinds[k]))
			k++;
		if (k < 3 && k != kind) {
			user_error("import: %s and %s are one import each", kinds[kind], kinds[k]);
		} else if (k < 3) {
			while (i + 1 < argc && strncmp(argv[i + 1], "--", 2))
				files[n++] = argv[++i];
			continue;
		}
		const char **slot = !strcmp(argv[i], "--out")		 ? &out
				    : !strcmp(argv[i], "--val-fraction") ? &frac
				    : !strcmp(argv[i], "--val") && kind > 0 ? &val
				    : !strcmp(argv[i], "--vocab") && kind > 0 ? &vocab
				    : !strcmp(argv[i], "--tokenizer") && kind == 0 ? &tokenizer
									 : NULL;
		if (user_error_pending())
			;
		else if (!slot)
			user_error("import %s: unexpected argument '%s' (see mtrain --help)", kinds[kind],
				   argv[i]);
		else if (i + 1 == argc)
			user_error("%s: missing value", argv[i]);
		else
			*slot = argv[++i];
	}
	char *frac_end = NULL, *vocab_end = NULL;
	double fraction = frac ? strtod(frac, &frac_end) : kind == 0 || !val ? 0.1 : 0.0;
	long words = vocab ? strtol(vocab, &vocab_end, 10) : kind == 1 ? 50257 : 0;
	char *bpe_end = NULL;
	long bpe = !strncmp(tokenizer, "bpe:", 4) ? strtol(tokenizer + 4, &bpe_end, 10) : 0;
	if (user_error_pending())
		;
	else if (strcmp(tokenizer, "bytes") &&
		 (!bpe_end || bpe_end == tokenizer + 4 || *bpe_end || bpe < 2 || bpe > 1 << 20))
		user_error("import: --tokenizer '%s' is not bytes or bpe:N (a vocabulary of N "
			   "pieces, 2 to %d)", tokenizer, 1 << 20);
	else if (!n)
		user_error("import: %s needs at least one file", kinds[kind]);
	else if (!out)
		user_error("import: --out is required");
	else if (frac && (frac_end == frac || *frac_end || !(fraction >= 0 && fraction < 1)))
		user_error("import: --val-fraction '%s' is not a number in [0, 1)", frac);
	else if (kind == 2 && !vocab)
		user_error("import --uint16: --vocab N is required (nanoGPT's meta.pkl says it: 65 "
			   "for Shakespeare's characters, 50257 for GPT-2's tokens)");
	else if (vocab && (vocab_end == vocab || *vocab_end || words < 2 || words > 65536))
		user_error("import: --vocab '%s' is not a number from 2 to 65536", vocab);
	else if (c->rank == 0 &&
		 (kind == 0 ? dataset_import_text(files, n, fraction, (int)bpe, out)
			    : dataset_import_shards(files, n, val, kind == 2, (int)words, fraction,
						    out)) == 0)
		log_info("wrote %s", out);
	free(files);
	return comm_user_errors(c) ? EXIT_USER : 0;
}

static int cmd_import(int argc, char **argv, struct comm *c)
{
	for (int i = 0; i < argc; i++)
		if (!strcmp(argv[i], "--text") || !strcmp(argv[i], "--llmc") ||
		    !strcmp(argv[i], "--uint16"))
			return import_tokens(argc, argv, c);
	const char *keys[5] = {"images", "labels", "out", "image-dir", "size"}, *vals[5] = {0};
	int size[2];
	if (!sub_args(argc, argv, keys, vals, 5)) {
		if (vals[3] && (vals[0] || vals[1]))
			user_error("import: --image-dir is instead of --images and --labels");
		else if (vals[4] && !vals[3])
			user_error("import: --size goes with --image-dir");
		else if (vals[4])
			parse_size(vals[4], size);
		for (int k = vals[3] ? 2 : 0; k < 3 && !user_error_pending(); k++)
			if (!vals[k])
				user_error("import: --%s is required", keys[k]);
	}
	if (!user_error_pending() && c->rank == 0 &&
	    (vals[3] ? dataset_import_image_dir(vals[3], vals[2], vals[4] ? size : NULL)
		     : dataset_import_idx(vals[0], vals[1], vals[2])) == 0)
		log_info("wrote %s", vals[2]);
	return comm_user_errors(c) ? EXIT_USER : 0;
}

/* inspect's picture of the checkpoint's model (model_summary), laid out
 * from its configuration for rows of its input_shape (format 4), else of
 * its configuration's --input-shape, else flat; a line saying why where it
 * cannot be. */
static void inspect_model(const char *path)
{
	struct ckpt_meta meta;
	struct model m;
	const char *why = NULL;
	if (ckpt_read_meta(path, &meta))
		return;
	export_plan_model(path, &meta, &m, &why);
	printf("\nmodel");
	if (why) {
		printf(": not shown: %s\n", why);
	} else {
		printf(" (its configuration's, on its input %dx%dx%d):\n", m.in[0], m.in[1], m.in[2]);
		model_summary(&m, stdout);
	}
	ckpt_meta_free(&meta);
}

static int cmd_inspect(int argc, char **argv, struct comm *c)
{
	/* FILE [--json], or --json FILE. */
	int json = argc == 2 && (!strcmp(argv[0], "--json") || !strcmp(argv[1], "--json"));
	const char *file = json && !strcmp(argv[0], "--json") ? argv[1] : argv[0];
	if (argc != 1 && !json)
		user_error("inspect: expected one checkpoint file (and --json), got %d arguments",
			   argc);
	else if (c->rank == 0 && ckpt_inspect(file, json, stdout) == 0 && !json)
		inspect_model(file);
	return comm_user_errors(c) ? EXIT_USER : 0;
}

static volatile sig_atomic_t noted_signal;
static void note_signal(int sig) { noted_signal = sig; }

static int cmd_export(int argc, char **argv, struct comm *c)
{
	const char *keys[3] = {"out", "weights", "format"}, *vals[3] = {0};
	static const char *const weights[] = {"raw", "ema", NULL};
	static const char *const formats[] = {"safetensors", "keras", "keras-weights", NULL};
	char list[32];
	int which = 0, format = 0;
	if (argc < 1 || !strncmp(argv[0], "--", 2))
		user_error("export: expected a checkpoint file first (mtrain export CKPT --out FILE)");
	else if (sub_args(argc - 1, argv + 1, keys, vals, 3) == 0) {
		if (!vals[0])
			user_error("export: --out FILE is required");
		else if (vals[1] && (which = kind_parse(weights, vals[1])) < 0)
			user_error("--weights: '%s' is not one of %s", vals[1],
				   kind_choices(weights, list, sizeof(list)));
		else if (vals[2] && (format = kind_parse(formats, vals[2])) < 0)
			user_error("--format: '%s' is not one of %s", vals[2],
				   kind_choices(formats, list, sizeof(list)));
	}
	/* Keras opens a model by its suffix only: a name it would refuse is ours to refuse. */
	static const char *const suffixes[] = {NULL, ".keras", ".weights.h5"};
	const char *suffix = user_error_pending() ? NULL : suffixes[format]; /* format is valid */
	size_t out_len = suffix ? strlen(vals[0]) : 0, suffix_len = suffix ? strlen(suffix) : 0;
	if (suffix && (out_len <= suffix_len || strcmp(vals[0] + out_len - suffix_len, suffix)))
		user_error("export --format %s --out %s: Keras opens only a file whose name ends in %s",
			   formats[format], vals[0], suffix);
	/* A stop signal waits for the write to end: the file at --out is then
	 * whole or absent, and no temporary file is left beside it. MPI's
	 * threads may be the ones to take it (a mask here would not cover
	 * them): a handler notes it, and it is raised again after. */
	static const int stops[] = {SIGINT, SIGTERM, SIGHUP};
	struct sigaction hold, old[3];
	memset(&hold, 0, sizeof(hold));
	hold.sa_handler = note_signal;
	sigemptyset(&hold.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(stops[i], &hold, &old[i]);
	if (!user_error_pending() && c->rank == 0 &&
	    (format ? export_keras(argv[0], vals[0], (enum export_weights)which, format == 1)
		    : export_safetensors(argv[0], vals[0], (enum export_weights)which)) == 0)
		log_info("wrote %s (%s, %s weights of %s)", vals[0], formats[format], weights[which],
			 argv[0]);
	for (int i = 0; i < 3; i++)
		sigaction(stops[i], &old[i], NULL);
	if (noted_signal)
		raise(noted_signal);
	return comm_user_errors(c) ? EXIT_USER : EXIT_OK;
}

static int cmd_eval(int argc, char **argv, struct comm *c)
{
	const char *keys[4] = {"ckpt", "eval-data", "weights", "device"}, *vals[4] = {0};
	int device = DEVICE_AUTO;
	if (!sub_args(argc, argv, keys, vals, 4)) {
		if (!vals[0])
			user_error("eval: --ckpt FILE is required");
		else if (vals[3] && (device = kind_parse(device_names, vals[3])) < 0) {
			char list[64];
			user_error("--device: '%s' is not one of %s", vals[3],
				   kind_choices(device_names, list, sizeof(list)));
		}
	}
	if (comm_user_errors(c))
		return EXIT_USER;
	return eval_main(vals[0], vals[1], vals[2] ? vals[2] : "both", device, c);
}

/* --help's picture of the model the options describe, for rows of
 * --input-shape (of the default data's 784 values), else the default
 * data's 28x28x1 images, and its 10 classes: a run's data decides both. 0,
 * or -1 with a user_error for a model that cannot be laid out. */
static int help_model(const struct config *cfg)
{
	struct layer_spec spec[MODEL_MAX_LAYERS];
	struct model m;
	int n = 0, in[3];
	const int flat[3] = {1, 1, DEFAULT_DATA_DIM};
	const int image[3] = {DEFAULT_DATA_SIDE, DEFAULT_DATA_SIDE, 1};
	if (model_input_shape(cfg, "the default data", cfg->input_shape[0] ? flat : image, in) ||
	    model_specs(cfg, spec, &n) ||
	    model_plan(&m, spec, n, in, DEFAULT_DATA_CLASSES, cfg->seed))
		return -1;
	printf("\nthe model (for rows of %dx%dx%d and %d classes: --input-shape, else the default "
	       "data's; a run's data decides):\n", in[0], in[1], in[2], DEFAULT_DATA_CLASSES);
	model_summary(&m, stdout);
	return 0;
}

/* A number of [lo, hi] from --name's text into *v; 0, or -1 with a
 * user_error. */
static int number_arg(const char *name, const char *text, double lo, double hi, double *v)
{
	char *end;
	*v = strtod(text, &end);
	if (end == text || *end || !(*v >= lo && *v <= hi))
		return user_error("--%s: '%s' is not a number from %g to %g", name, text, lo, hi);
	return 0;
}

static int cmd_generate(int argc, char **argv, struct comm *c)
{
	enum { CKPT, DATA, WEIGHTS, PROMPT, TOKENS, TEMP, TOP_K, SEED, DEVICE, N };
	const char *keys[N] = {"ckpt", "data", "weights", "prompt", "tokens", "temperature",
			       "top-k", "seed", "device"};
	const char *vals[N] = {0};
	/* nanoGPT's sample.py's: temperature 0.8, top-k 200, seed 1337 */
	struct gen_opts o = {.weights = "ema", .prompt = "\n", .tokens = 256, .temperature = 0.8,
			     .top_k = 200, .seed = 1337, .device = DEVICE_AUTO};
	double v;
	if (!sub_args(argc, argv, keys, vals, N)) {
		if (!vals[CKPT])
			user_error("generate: --ckpt FILE is required");
		if (vals[TOKENS] && !number_arg(keys[TOKENS], vals[TOKENS], 0, 1e9, &v))
			o.tokens = (long)v;
		if (vals[TEMP] && !number_arg(keys[TEMP], vals[TEMP], 0, 100, &v))
			o.temperature = v;
		if (vals[TOP_K] && !number_arg(keys[TOP_K], vals[TOP_K], 0, 1 << 24, &v))
			o.top_k = (int)v;
		if (vals[SEED] && !number_arg(keys[SEED], vals[SEED], 0, 0x1p63, &v))
			o.seed = (uint64_t)v;
		if (vals[DEVICE] && (o.device = kind_parse(device_names, vals[DEVICE])) < 0) {
			char list[64];
			user_error("--device: '%s' is not one of %s", vals[DEVICE],
				   kind_choices(device_names, list, sizeof(list)));
		}
	}
	if (comm_user_errors(c))
		return EXIT_USER;
	o.ckpt = vals[CKPT];
	o.data = vals[DATA];
	o.weights = vals[WEIGHTS] ? vals[WEIGHTS] : o.weights;
	o.prompt = vals[PROMPT] ? vals[PROMPT] : o.prompt;
	return generate_main(&o, c);
}

static int cmd_train(int argc, char **argv, struct comm *c)
{
	struct config cfg;
	int help = 0, version = 0;
	config_defaults(&cfg);
	if (config_parse_args(&cfg, argc, argv, &help, &version) == 0 && !help && !version)
		config_validate(&cfg);
	if (comm_user_errors(c))
		return EXIT_USER;
	if (help || version) {
		if (c->rank == 0) {
			if (help) {
				usage(stdout);
				help_model(&cfg);
			} else {
				printf("mtrain %s\n", MTRAIN_VERSION);
			}
		}
		return comm_user_errors(c) ? EXIT_USER : 0;
	}
	return train_main(&cfg, c);
}

int main(int argc, char **argv)
{
	/* HDF5's clean-up at exit closes files still open; one whose close
	 * failed (a checkpoint on a full disk, already reported and removed)
	 * makes it crash. The process is ending: let it. */
	H5dont_atexit();
	const char *cmd = argc > 1 ? argv[1] : "";
	if (strcmp(cmd, "import") && strcmp(cmd, "inspect") && strcmp(cmd, "eval") &&
	    strcmp(cmd, "export") && strcmp(cmd, "preview") && strcmp(cmd, "generate"))
		train_catch_stop_signals();
	/* OpenBLAS's kernels may make mtrain start itself again: a stop
	 * signal then would find no handler and kill the rank. Held across
	 * that exec (the mask and pending signals carry over), it waits for
	 * the handler the new start sets. */
	train_hold_stop_signals(1);
	backend_cpu_pick_kernels(argv);
	train_hold_stop_signals(0);
	struct comm comm;
	comm_init(&comm, &argc, &argv);
	resources_init(comm.local_size);
	check_catch_crashes();
	cmd = argc > 1 ? argv[1] : "";
	int status;
	if (!strcmp(cmd, "import"))
		status = cmd_import(argc - 2, argv + 2, &comm);
	else if (!strcmp(cmd, "inspect"))
		status = cmd_inspect(argc - 2, argv + 2, &comm);
	else if (!strcmp(cmd, "eval"))
		status = cmd_eval(argc - 2, argv + 2, &comm);
	else if (!strcmp(cmd, "export"))
		status = cmd_export(argc - 2, argv + 2, &comm);
	else if (!strcmp(cmd, "generate"))
		status = cmd_generate(argc - 2, argv + 2, &comm);
	else if (!strcmp(cmd, "preview"))
		status = preview_main(argc - 2, argv + 2, &comm);
	else if (!strcmp(cmd, "train"))
		status = cmd_train(argc - 2, argv + 2, &comm);
	else
		status = cmd_train(argc - 1, argv + 1, &comm);
	comm_finalize(&comm);
	return status;
}
