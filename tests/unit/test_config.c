/* The run configuration: defaults, flags, --config files and precedence,
 * one-line errors for bad input, the text round trip, and --help. */
#include "config.h"
#include "log.h"
#include "unit.h"
#include "fixtures.h"

#include <stdlib.h>

static char tmpdir[512];

/* Parses argv (NULL-terminated, no program name) over fresh defaults. */
static int parse(struct config *cfg, char **argv)
{
	int argc = 0, help, version;
	while (argv[argc])
		argc++;
	config_defaults(cfg);
	user_error_clear();
	return config_parse_args(cfg, argc, argv, &help, &version);
}

/* parse(argv) fails with -1 and a message containing each of parts. */
#define EXPECT_ERROR(argv, ...)                                                \
	do {                                                                   \
		struct config c_;                                              \
		const char *parts_[] = {__VA_ARGS__};                          \
		EXPECT(parse(&c_, argv) == -1);                                \
		for (size_t i_ = 0; i_ < sizeof(parts_) / sizeof(parts_[0]); i_++) \
			EXPECT(contains(user_error_text(), parts_[i_]));       \
	} while (0)

/* Writes text to tmpdir/name into path. */
static void write_conf(const char *name, const char *text, char *path, size_t len)
{
	snprintf(path, len, "%s/%s", tmpdir, name);
	EXPECT(fixture_write_file(path, text, strlen(text)) == 0);
}

static void check_defaults(void)
{
	struct config cfg;
	char *none[] = {NULL};
	int help = -1, version = -1;
	config_defaults(&cfg);
	EXPECT(config_parse_args(&cfg, 0, none, &help, &version) == 0);
	EXPECT(help == 0 && version == 0);
	EXPECT(cfg.n_hidden == 2 && cfg.hidden[0] == 256 && cfg.hidden[1] == 256);
	EXPECT(cfg.act == ACT_RELU);
	EXPECT(cfg.optim == OPTIM_ADAM);
	EXPECT(cfg.lr == 1e-3f);
	EXPECT(cfg.momentum == 0.9f && cfg.eps == 1e-8f && cfg.lr_gamma == 0.1f);
	EXPECT(cfg.comm_timeout == 300.0f && cfg.max_bad_steps == 5 && cfg.keep == 5);
	/* 'default': the optimizer's row gives them (test_optim checks which) */
	EXPECT(cfg.beta1 < 0 && cfg.beta2 < 0 && cfg.weight_decay < 0);
	EXPECT(cfg.batch == 128);
	EXPECT(cfg.epochs == 5);
	EXPECT(cfg.steps == 0);
	EXPECT(cfg.seed == 42);
	EXPECT(cfg.ema_decay == 0.999f);
	EXPECT(cfg.ema_num_updates == 1);
	EXPECT(cfg.schedule == SCHED_CONSTANT);
	EXPECT(cfg.device == DEVICE_AUTO);
	EXPECT_STR(cfg.ckpt_dir, "checkpoints");
	EXPECT_STR(cfg.resume, "auto");
	EXPECT_STR(cfg.config_file, "");
	EXPECT(config_validate(&cfg) == 0);
	char buf[64];
	config_hidden_text(&cfg, buf, sizeof(buf));
	EXPECT_STR(buf, "256,256");
	EXPECT_STR(kind_name(optim_names, cfg.optim), "adam");
	EXPECT_STR(kind_name(act_names, ACT_TANH), "tanh");
	EXPECT_STR(kind_name(device_names, DEVICE_CUDA), "cuda");
	EXPECT_STR(kind_name(device_names, 3), "?");
	EXPECT(kind_parse(schedule_names, "cosine") == SCHED_COSINE);
	EXPECT(kind_parse(schedule_names, "linear") == -1);
}

static void check_flags(void)
{
	struct config cfg;
	char *lr[] = {"--lr", "0.01", NULL};
	EXPECT(parse(&cfg, lr) == 0 && cfg.lr == 0.01f);
	char *lr_eq[] = {"--lr=0.02", NULL};
	EXPECT(parse(&cfg, lr_eq) == 0 && cfg.lr == 0.02f);
	char *layers[] = {"--layers", "64,32,16", NULL};
	EXPECT(parse(&cfg, layers) == 0);
	EXPECT(cfg.n_hidden == 3 && cfg.hidden[0] == 64 && cfg.hidden[1] == 32 &&
	       cfg.hidden[2] == 16);
	char *one_layer[] = {"--layers=10", NULL};
	EXPECT(parse(&cfg, one_layer) == 0 && cfg.n_hidden == 1 && cfg.hidden[0] == 10);
	char *opt[] = {"--optimizer", "momentum", "--activation", "gelu", "--device", "cpu", NULL};
	EXPECT(parse(&cfg, opt) == 0);
	EXPECT(cfg.optim == OPTIM_MOMENTUM && cfg.act == ACT_GELU && cfg.device == DEVICE_CPU);

	/* A bare boolean means on, and does not swallow the next flag. */
	char *bare[] = {"--nesterov", NULL};
	EXPECT(parse(&cfg, bare) == 0 && cfg.nesterov == 1);
	char *bare_then[] = {"--nesterov", "--lr", "0.5", NULL};
	EXPECT(parse(&cfg, bare_then) == 0 && cfg.nesterov == 1 && cfg.lr == 0.5f);
	char *nest_off[] = {"--nesterov", "off", NULL};
	EXPECT(parse(&cfg, nest_off) == 0 && cfg.nesterov == 0);
	char *ema_off[] = {"--ema-num-updates", "off", NULL};
	EXPECT(parse(&cfg, ema_off) == 0 && cfg.ema_num_updates == 0);
	char *ema_eq[] = {"--ema-num-updates=false", "--ema-decay", "0.9999", NULL};
	EXPECT(parse(&cfg, ema_eq) == 0 && cfg.ema_num_updates == 0 && cfg.ema_decay == 0.9999f);

	char *many[] = {"--batch", "256", "--epochs", "2", "--steps", "1000", "--seed",
			"18446744073709551615", "--ckpt-dir", "/tmp/c", "--ckpt-every", "100",
			"--keep", "3", "--resume", "never", "--log-every", "10", "--metrics",
			"m.jsonl", "--schedule", "cosine", "--warmup", "50", "--lr-min", "1e-5",
			"--data", "train.h5", "--eval-data", "none", NULL};
	EXPECT(parse(&cfg, many) == 0);
	EXPECT(cfg.batch == 256 && cfg.epochs == 2 && cfg.steps == 1000);
	EXPECT(cfg.seed == 18446744073709551615ull);
	EXPECT_STR(cfg.ckpt_dir, "/tmp/c");
	EXPECT(cfg.ckpt_every == 100 && cfg.keep == 3 && cfg.log_every == 10);
	EXPECT_STR(cfg.resume, "never");
	EXPECT_STR(cfg.metrics, "m.jsonl");
	EXPECT(cfg.schedule == SCHED_COSINE && cfg.warmup == 50 && cfg.lr_min == 1e-5f);
	EXPECT_STR(cfg.data, "train.h5");
	EXPECT_STR(cfg.eval_data, "none");

	/* The last of a repeated flag wins. */
	char *twice[] = {"--batch", "8", "--batch", "16", NULL};
	EXPECT(parse(&cfg, twice) == 0 && cfg.batch == 16);

	int help = 0, version = 0;
	char *hv[] = {"--help", "--version", NULL};
	config_defaults(&cfg);
	EXPECT(config_parse_args(&cfg, 2, hv, &help, &version) == 0);
	EXPECT(help == 1 && version == 1);
}

/* --config FILE applies first wherever it stands; flags override it. */
static void check_config_file(void)
{
	char path[1100];
	write_conf("run.conf",
		   "# a run\n"
		   "\n"
		   "ema_decay = 0.99   # underscores work like dashes\n"
		   "  lr=0.005\n"
		   "layers = 32,16\n"
		   "batch = 64\n"
		   "optimizer = sgd\n"
		   "ema-num-updates = off\n"
		   "eval_data = held out.h5\n",
		   path, sizeof(path));
	struct config cfg;
	char *only[] = {"--config", path, NULL};
	EXPECT(parse(&cfg, only) == 0);
	EXPECT(cfg.ema_decay == 0.99f);
	EXPECT(cfg.lr == 0.005f);
	EXPECT(cfg.n_hidden == 2 && cfg.hidden[0] == 32 && cfg.hidden[1] == 16);
	EXPECT(cfg.batch == 64);
	EXPECT(cfg.optim == OPTIM_SGD);
	EXPECT(cfg.ema_num_updates == 0);
	EXPECT_STR(cfg.eval_data, "held out.h5");
	EXPECT_STR(cfg.config_file, path);
	EXPECT(cfg.epochs == 5); /* untouched keys keep their defaults */

	char *after[] = {"--lr", "0.1", "--config", path, NULL};
	EXPECT(parse(&cfg, after) == 0);
	EXPECT(cfg.lr == 0.1f && cfg.batch == 64);
	char eq[1200];
	snprintf(eq, sizeof(eq), "--config=%s", path);
	char *before[] = {eq, "--batch", "32", "--layers", "8", NULL};
	EXPECT(parse(&cfg, before) == 0);
	EXPECT(cfg.batch == 32 && cfg.lr == 0.005f && cfg.n_hidden == 1 && cfg.hidden[0] == 8);
}

static void check_errors(void)
{
	/* Unknown flags: near misses get a suggestion, far ones the help. */
	char *optimiser[] = {"--optimiser", "adam", NULL};
	EXPECT_ERROR(optimiser, "unknown flag '--optimiser'", "did you mean '--optimizer'");
	char *epoch[] = {"--epoch", "3", NULL};
	EXPECT_ERROR(epoch, "did you mean '--epochs'");
	/* "lerning-rate" is near the alias learning-rate, which means --lr. */
	char *lerning[] = {"--lerning-rate", "0.1", NULL};
	EXPECT_ERROR(lerning, "unknown flag '--lerning-rate'", "did you mean '--lr'");
	/* Far from every option and alias: the help, no guess. */
	char *far[] = {"--zzzzzzzz", "0.1", NULL};
	EXPECT_ERROR(far, "unknown flag '--zzzzzzzz'", "see mtrain --help");
	/* Within 3 edits but more than half the name: no guess either. */
	char *zzzz[] = {"--zzzz", "1", NULL};
	EXPECT_ERROR(zzzz, "unknown flag '--zzzz'", "see mtrain --help");
	/* Other trainers' spellings: DeepSpeed's --zero-stage (an option and
	 * more), Hugging Face's underscores, an alias, a unique start. */
	char *zero_stage[] = {"--zero-stage", "1", NULL};
	EXPECT_ERROR(zero_stage, "unknown flag '--zero-stage'", "did you mean '--zero'?");
	char *wd_[] = {"--weight_decay=0.1", NULL};
	EXPECT_ERROR(wd_, "unknown flag '--weight_decay'", "did you mean '--weight-decay'?");
	char *sched[] = {"--lr_scheduler_type", "cosine", NULL};
	EXPECT_ERROR(sched, "did you mean '--schedule'?");
	char *warm[] = {"--warmup-steps", "10", NULL};
	EXPECT_ERROR(warm, "did you mean '--warmup'?");
	char *optim[] = {"--optim", "adamw", NULL};
	EXPECT_ERROR(optim, "did you mean '--optimizer'?");
	char *rate[] = {"--ema-decay-rate", "0.9", NULL}; /* an option, then more */
	EXPECT_ERROR(rate, "did you mean '--ema-decay'?");
	char *check[] = {"--check", "10", NULL}; /* the start of one option */
	EXPECT_ERROR(check, "did you mean '--check-replicas'?");
	char *ckpt[] = {"--ckpt", "x", NULL}; /* starts two options: no guess */
	EXPECT_ERROR(ckpt, "see mtrain --help");
	char *positional[] = {"train.h5", NULL};
	EXPECT_ERROR(positional, "unexpected argument 'train.h5'");

	/* Out of range, not numbers, bad enums and lists, missing values. */
	char *batch0[] = {"--batch", "0", NULL};
	EXPECT_ERROR(batch0, "--batch", "out of range");
	char *decay[] = {"--ema-decay", "1.5", NULL};
	EXPECT_ERROR(decay, "--ema-decay", "1.5", "out of range");
	char *lr_abc[] = {"--lr", "abc", NULL};
	EXPECT_ERROR(lr_abc, "--lr", "'abc' is not a number");
	char *lr_inf[] = {"--lr", "inf", NULL};
	EXPECT_ERROR(lr_inf, "--lr", "not a number");
	char *epochs[] = {"--epochs", "2.5", NULL};
	EXPECT_ERROR(epochs, "--epochs", "not an integer");
	char *seed[] = {"--seed", "-1", NULL};
	EXPECT_ERROR(seed, "--seed", "not a non-negative integer");
	char *act[] = {"--activation", "swish", NULL};
	EXPECT_ERROR(act, "--activation", "'swish'", "relu|gelu|tanh");
	char *boolean[] = {"--nesterov=maybe", NULL};
	EXPECT_ERROR(boolean, "--nesterov", "not on or off");
	char *missing[] = {"--batch", "64", "--lr", NULL};
	EXPECT_ERROR(missing, "--lr: missing value");
	char *layers[] = {"--layers", "256,,x", NULL};
	EXPECT_ERROR(layers, "--layers", "256,,x", "comma-separated");
	char *width[] = {"--layers", "256,0", NULL};
	EXPECT_ERROR(width, "--layers", "out of range");
	char *no_file[] = {"--config", "/nonexistent/run.conf", NULL};
	EXPECT_ERROR(no_file, "/nonexistent/run.conf", "cannot open");

	/* Config file errors carry file:line. */
	char path[1100], where[1200];
	write_conf("unknown.conf", "lr = 0.1\n# fine\nlearning_rate = 0.1\n", path, sizeof(path));
	char *unknown[] = {"--config", path, NULL};
	snprintf(where, sizeof(where), "%s:3:", path);
	EXPECT_ERROR(unknown, where, "unknown config key 'learning-rate'");
	write_conf("typo.conf", "optimiser = adam\n", path, sizeof(path));
	char *typo[] = {"--config", path, NULL};
	EXPECT_ERROR(typo, "did you mean 'optimizer'");
	write_conf("noeq.conf", "lr = 0.1\nbatch 64\n", path, sizeof(path));
	char *noeq[] = {"--config", path, NULL};
	snprintf(where, sizeof(where), "%s:2:", path);
	EXPECT_ERROR(noeq, where, "expected 'key = value'", "batch 64");
	write_conf("range.conf", "\n\nema_decay = 1.5\n", path, sizeof(path));
	char *range[] = {"--config", path, NULL};
	snprintf(where, sizeof(where), "%s:3: ema-decay", path);
	EXPECT_ERROR(range, where, "out of range");
	/* An empty --model is no model (it trained --layers' MLP without a
	 * word), from a flag or a config file; the stored text's "model = "
	 * (the MLP) still reads (check_round_trip). */
	char *empty_model[] = {"--model", "", NULL};
	EXPECT_ERROR(empty_model, "--model: must not be empty");
	char *empty_eq[] = {"--model=", NULL};
	EXPECT_ERROR(empty_eq, "--model: must not be empty");
	write_conf("model.conf", "lr = 0.1\nmodel =   # none\n", path, sizeof(path));
	char *conf_model[] = {"--config", path, NULL};
	snprintf(where, sizeof(where), "%s:2: model: must not be empty", path);
	EXPECT_ERROR(conf_model, where);
	/* A config file may not name another. */
	write_conf("nested.conf", "config = other.conf\n", path, sizeof(path));
	char *nested[] = {"--config", path, NULL};
	EXPECT_ERROR(nested, "cannot name another");

	/* Cross-option checks. */
	struct config cfg;
	config_defaults(&cfg);
	cfg.lr_min = 0.01f; /* above lr 1e-3 */
	user_error_clear();
	EXPECT(config_validate(&cfg) == -1 && contains(user_error_text(), "--lr-min"));
	config_defaults(&cfg);
	cfg.lr = 0.0f;
	user_error_clear();
	EXPECT(config_validate(&cfg) == -1 && contains(user_error_text(), "--lr"));
	config_defaults(&cfg);
	snprintf(cfg.restart_lost, sizeof(cfg.restart_lost), "node3"); /* without --restart */
	user_error_clear();
	EXPECT(config_validate(&cfg) == -1 && contains(user_error_text(), "--restart-lost"));
	cfg.restart = 1;
	user_error_clear();
	EXPECT(config_validate(&cfg) == 0);
	user_error_clear();
	/* --init-skip: a regular expression, and only with --init-from. */
	snprintf(cfg.init_skip, sizeof(cfg.init_skip), "dense_2/.*");
	EXPECT(config_validate(&cfg) == -1 && contains(user_error_text(), "give --init-from FILE too"));
	user_error_clear();
	snprintf(cfg.init_from, sizeof(cfg.init_from), "model.keras");
	EXPECT(config_validate(&cfg) == 0);
	regex_t re;
	EXPECT(config_init_skip(&cfg, &re) == 0);
	EXPECT(regexec(&re, "dense_2/kernel", 0, NULL, 0) == 0);
	EXPECT(regexec(&re, "dense_2", 0, NULL, 0) != 0);        /* the whole name */
	EXPECT(regexec(&re, "xdense_2/kernel", 0, NULL, 0) != 0);
	regfree(&re);
	snprintf(cfg.init_skip, sizeof(cfg.init_skip), "dense_[");
	EXPECT(config_validate(&cfg) == -1 &&
	       contains(user_error_text(), "--init-skip: 'dense_[' is not a regular expression"));
	user_error_clear();
}

/* config_to_text is read back by config_parse_text into the same struct:
 * checkpoints rebuild the run from it. */
static void check_round_trip(void)
{
	struct config cfg, back;
	char *argv[] = {"--layers", "64,32,16", "--activation", "tanh", "--optimizer", "adamw",
			"--lr", "0.0123456789", "--momentum", "0.95", "--nesterov", "on",
			"--beta1", "0.8", "--beta2", "0.99", "--eps", "1e-7", "--weight-decay",
			"0.02", "--schedule", "step", "--warmup", "7", "--lr-min", "1e-6",
			"--lr-step-every", "300", "--lr-gamma", "0.3", "--batch", "96",
			"--eval-batch", "500", "--epochs", "9", "--steps", "12345", "--seed",
			"9007199254740993", "--ema-decay", "0.9995", "--ema-num-updates", "off",
			"--ema-sync-every", "17", "--ckpt-dir", "/tmp/my ckpts", "--ckpt-every",
			"250", "--keep", "2", "--resume", "never", "--log-every", "5", "--metrics",
			"out/metrics.jsonl", "--device", "cpu", "--data", "train.h5",
			"--eval-data", "test.h5", NULL};
	EXPECT(parse(&cfg, argv) == 0);
	char *text = config_to_text(&cfg);
	config_defaults(&back);
	user_error_clear();
	EXPECT(config_parse_text(&back, text, "roundtrip") == 0);
	EXPECT(memcmp(&cfg, &back, sizeof(cfg)) == 0);
	char *again = config_to_text(&back);
	EXPECT_STR(again, text);
	EXPECT(contains(text, "layers = 64,32,16\n"));
	EXPECT(contains(text, "seed = 9007199254740993\n"));
	free(text);
	free(again);

	/* Defaults round-trip too (weight decay -1: the optimizer's default). */
	config_defaults(&cfg);
	text = config_to_text(&cfg);
	config_defaults(&back);
	back.lr = 0.5f;
	back.weight_decay = 0.0f;
	EXPECT(config_parse_text(&back, text, "defaults") == 0);
	EXPECT(memcmp(&cfg, &back, sizeof(cfg)) == 0);
	free(text);

	/* A path with '#' in it is a path, not a comment: eval from a checkpoint
	 * reads eval_data back from this text. */
	config_defaults(&cfg);
	snprintf(cfg.eval_data, PATH_LEN, "/data/run#2/eval.h5");
	text = config_to_text(&cfg);
	config_defaults(&back);
	EXPECT(config_parse_text(&back, text, "hash") == 0);
	EXPECT_STR(back.eval_data, "/data/run#2/eval.h5");
	free(text);

	/* weight-decay: "default" round-trips; "-1" is how checkpoints written
	 * before that word wrote it; any other negative is an error. */
	config_defaults(&back);
	EXPECT(config_parse_text(&back, "weight-decay = 0.5\n", "wd") == 0);
	EXPECT_NEAR(back.weight_decay, 0.5, 0);
	EXPECT(config_parse_text(&back, "weight-decay = -1\n", "old") == 0);
	EXPECT(back.weight_decay < 0);
	EXPECT(config_parse_text(&back, "weight-decay = -0.5\n", "neg") != 0);
	EXPECT(contains(user_error_text(), "-0.5 is out of range"));
	user_error_clear();
	/* beta1 and beta2 take 'default' too; a value replaces it. */
	EXPECT(config_parse_text(&back, "beta1 = 0.8\nbeta2 = default\n", "betas") == 0);
	EXPECT(back.beta1 == 0.8f && back.beta2 < 0);
	text = config_to_text(&back);
	EXPECT(contains(text, "beta1 = 0.800000012\nbeta2 = default\n"));
	free(text);
}

/* config_diff: a checkpoint written before --beta1 took 'default' says
 * "beta1 = 0.899999976"; under adam that is what 'default' means, so no
 * difference; under lion (0.9, 0.99) beta2 = 0.999 is one. */
static void check_diff_default(void)
{
	char a[256], b[256];
	const char *old = "optimizer = adam\nbeta1 = 0.899999976\nbeta2 = 0.999000013\n"
			  "weight-decay = default\n";
	const char *now = "optimizer = adam\nbeta1 = default\nbeta2 = default\n"
			  "weight-decay = 0\n";
	EXPECT(config_diff(old, now, 0, a, b, sizeof(a)) == 0);
	const char *lion = "optimizer = lion\nbeta1 = default\nbeta2 = default\n"
			   "weight-decay = default\n";
	const char *lion_old = "optimizer = lion\nbeta1 = 0.899999976\nbeta2 = 0.999000013\n"
			       "weight-decay = default\n";
	EXPECT(config_diff(lion_old, lion, 0, a, b, sizeof(a)) == 1);
	EXPECT_STR(a, "beta2 = 0.999000013");
	EXPECT_STR(b, "beta2 = default");
	EXPECT(config_diff(now, "optimizer = adam\nbeta1 = 0.8\nbeta2 = default\n"
				"weight-decay = 0\n", 0, a, b, sizeof(a)) == 1);
	EXPECT_STR(a, "beta1 = default");
	/* A text from before --augment existed ran without it: only a run
	 * that augments differs from it, either way round. */
	const char *aug = "optimizer = adam\naugment = \n";
	EXPECT(config_diff("optimizer = adam\n", aug, 0, a, b, sizeof(a)) == 0);
	EXPECT(config_diff(aug, "optimizer = adam\n", 0, a, b, sizeof(a)) == 0);
	EXPECT(config_diff("optimizer = adam\n", "optimizer = adam\naugment = flip\n", 0, a, b,
			   sizeof(a)) == 1);
	EXPECT_STR(a, "(nothing)");
	EXPECT_STR(b, "augment = flip");
}

static void check_help(void)
{
	static const char *flags[] = {"data", "eval-data", "layers", "activation", "optimizer",
				      "lr", "batch", "epochs", "steps", "seed", "ema-decay",
				      "ckpt-dir", "ckpt-every", "keep", "resume", "log-every",
				      "metrics", "device", "config"};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	config_print_help(f);
	fclose(f);
	for (size_t i = 0; i < sizeof(flags) / sizeof(flags[0]); i++) {
		char flag[64];
		snprintf(flag, sizeof(flag), "--%s ", flags[i]);
		EXPECT(contains(text, flag));
	}
	EXPECT(contains(text, "[default: 256,256]"));
	EXPECT(contains(text, "relu|gelu|tanh"));
	EXPECT(contains(text, "sgd|momentum|adam|adamw|lion"));
	/* Optimizer-given defaults: the common value, then those that differ. */
	EXPECT(contains(text, "--beta1 X|default"));
	EXPECT(contains(text, "[default: 0.999; lion 0.99]"));
	EXPECT(contains(text, "[default: 0; adamw 0.01]"));
	free(text);
}

int main(void)
{
	if (fixture_tmpdir(tmpdir, sizeof(tmpdir), "config"))
		return 1;
	check_defaults();
	check_flags();
	check_config_file();
	check_errors();
	check_round_trip();
	check_diff_default();
	check_help();
	fixture_rmtree(tmpdir);
	return unit_done("test_config");
}
