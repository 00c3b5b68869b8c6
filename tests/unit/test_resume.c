/* The resume policy (state_resume, src/state.c): which checkpoint --resume
 * auto, never and FILE take (auto skips a corrupt newest one with a
 * warning), and whether it fits the run: a changed batch, seed, row count
 * or an inconsistent position is refused with one error line; an option
 * the option table marks "may change" (OPT_MAY_CHANGE) changes without a
 * word; any other stored option is accepted and named in one warning line.
 * The order of the rows is the run's: a fresh run's is the computed one, a
 * checkpoint's is what it records, one made before the order was recorded
 * (format 1 or 2) resumes with the stored permutation, whose batches the
 * loader then stages, and an order this mtrain does not know is refused.
 * A 1-rank MPI job (singleton): state_resume is collective. */
#include "backend.h"
#include "comm.h"
#include "config.h"
#include "log.h"
#include "options.h"
#include "state.h"
#include "unit.h"
#include "fixtures.h"

#include "loader.h"

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <unistd.h>

enum { ROWS = 20, BATCH = 4, SPE = ROWS / BATCH }; /* 5 steps an epoch */

static char dir[512];
static struct comm comm;

/* A model of two variables, its weights and shadows, and the state that
 * saves and resumes them. */
struct fixture {
	struct params reg;
	float *w, *shadow; /* (P), (T) backend memory */
	struct state s;
	struct config cfg; /* the run that wrote the checkpoints */
	char *text;        /* config_to_text(&cfg) */
	const char *order; /* the order save_step records; NULL: "feistel-1" */
};

/* The value of weight i in the checkpoint of step (shadows: negated). */
static float value_at(long step, size_t i) { return (float)step + 0.01f * (float)i; }

static void fixture_init(struct fixture *f)
{
	const struct backend *be = backend_cpu();
	const long kernel[2] = {3, 2}, bias[1] = {2};
	params_init(&f->reg);
	params_add(&f->reg, "dense/kernel", 2, kernel);
	params_add(&f->reg, "dense/bias", 1, bias);
	f->w = be->alloc(be, f->reg.total * sizeof(float));
	f->shadow = be->alloc(be, f->reg.trainable * sizeof(float));
	state_init(&f->s, be, &f->reg, &f->w, &f->shadow, NULL, NULL, 1);
	config_defaults(&f->cfg);
	f->cfg.batch = BATCH;
	f->cfg.seed = 7;
	f->cfg.steps = 100;
	snprintf(f->cfg.ckpt_dir, sizeof(f->cfg.ckpt_dir), "%s", dir);
	f->text = config_to_text(&f->cfg);
}

static void fixture_free(struct fixture *f)
{
	const struct backend *be = backend_cpu();
	state_free(&f->s);
	be->free(be, f->w);
	be->free(be, f->shadow);
	free(f->text);
}

/* Writes the checkpoint of step (value_at) into dir; 0 or -1. */
static int save_step(struct fixture *f, long step)
{
	for (size_t i = 0; i < f->reg.total; i++)
		f->w[i] = value_at(step, i);
	for (size_t i = 0; i < f->reg.trainable; i++)
		f->shadow[i] = -value_at(step, i);
	struct ckpt_meta m;
	memset(&m, 0, sizeof(m));
	m.global_step = step;
	m.epoch = step / SPE;
	m.step_in_epoch = step % SPE;
	m.batch = BATCH;
	m.seed = f->cfg.seed;
	m.world_size = 1;
	m.input_dim = 3;
	m.classes = 2;
	m.train_rows = ROWS;
	m.config = f->text;
	snprintf(m.order, sizeof(m.order), "%s", f->order ? f->order : "feistel-1");
	return state_save(&f->s, &m, dir, 100, &comm);
}

/* What one state_resume did. */
struct outcome {
	int rc;
	struct position at;
	long weights_of;  /* the step whose weights and shadows are live; -1: none */
	char err[4096];   /* what it wrote to stderr */
	int lines;        /* lines of err */
};

/* The step whose values w and shadow hold, or -1 (the zeros the test sets
 * before each resume, or a mixture). */
static long weights_step(const struct fixture *f)
{
	long step = (long)f->w[0];
	if (f->w[0] == 0.0f)
		return -1;
	for (int v = 0; v < f->reg.n; v++) { /* the padding between them aside */
		const struct param *p = &f->reg.p[v];
		for (size_t i = p->offset; i < p->offset + p->size; i++)
			if (f->w[i] != value_at(step, i) ||
			    (p->trainable && f->shadow[i] != -value_at(step, i)))
				return -1;
	}
	return step;
}

/* state_resume for a run of cfg (its configuration text: text, or cfg's
 * when NULL) on rows rows at spe steps an epoch, stderr captured. */
static void resume(struct fixture *f, const struct config *cfg, const char *text, long rows,
		   long spe, struct outcome *o)
{
	memset(o, 0, sizeof(*o));
	memset(f->w, 0, f->reg.total * sizeof(float));
	memset(f->shadow, 0, f->reg.trainable * sizeof(float));
	char *own = text ? NULL : config_to_text(cfg);
	struct resume_run run = {cfg, text ? text : own, rows, spe};
	char path[600];
	snprintf(path, sizeof(path), "%s/stderr.txt", dir);
	fflush(stderr);
	int saved = dup(2), fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	dup2(fd, 2);
	o->rc = state_resume(&f->s, &run, &o->at, &comm);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ssize_t got = pread(fd, o->err, sizeof(o->err) - 1, 0);
	o->err[got > 0 ? got : 0] = 0;
	close(fd);
	unlink(path);
	for (const char *p = o->err; *p; p++)
		o->lines += *p == '\n';
	o->weights_of = weights_step(f);
	user_error_clear();
	free(own);
	if (o->lines)
		fprintf(stderr, "  (said: %s", o->err); /* the test's log shows each line */
}

static int at_is(const struct position *at, long step, long epoch, long pos)
{
	return at->global_step == step && at->epoch == epoch && at->pos == pos;
}

/* Accepted: rc 0, position and weights of step, and lines lines on stderr. */
#define EXPECT_RESUMED(o, step, n_lines)                                            \
	do {                                                                        \
		EXPECT((o).rc == 0);                                                \
		EXPECT(at_is(&(o).at, step, (step) / SPE, (step) % SPE));           \
		EXPECT((o).weights_of == (step));                                   \
		EXPECT((o).lines == (n_lines));                                     \
	} while (0)

/* Refused: rc -1, nothing resumed, one error line holding why. */
#define EXPECT_REFUSED(o, why)                                                      \
	do {                                                                        \
		EXPECT((o).rc == -1);                                               \
		EXPECT(at_is(&(o).at, 0, 0, 0) && (o).weights_of == -1);            \
		EXPECT((o).lines == 1);                                             \
		EXPECT(contains((o).err, "mtrain: error: "));                       \
		EXPECT(contains((o).err, why));                                     \
	} while (0)

/* --resume auto, never and FILE pick their checkpoint; auto skips a
 * corrupt newest one. */
static void check_pick(struct fixture *f)
{
	struct outcome o;
	struct config cfg = f->cfg;
	resume(f, &cfg, NULL, ROWS, SPE, &o);
	EXPECT(o.rc == 0 && at_is(&o.at, 0, 0, 0) && o.weights_of == -1 && o.lines == 0);
	EXPECT(save_step(f, 3) == 0);
	EXPECT(save_step(f, 7) == 0);
	resume(f, &cfg, NULL, ROWS, SPE, &o); /* auto: the newest */
	EXPECT_RESUMED(o, 7, 0);
	snprintf(cfg.resume, sizeof(cfg.resume), "%s/ckpt-00000003.h5", dir);
	resume(f, &cfg, NULL, ROWS, SPE, &o); /* a file: that one, the newer named */
	EXPECT_RESUMED(o, 3, 1);
	EXPECT(contains(o.err, "mtrain: warning: ") && contains(o.err, "ckpt-00000007.h5"));
	snprintf(cfg.resume, sizeof(cfg.resume), "never");
	resume(f, &cfg, NULL, ROWS, SPE, &o); /* a fresh start, the checkpoints named */
	EXPECT(o.rc == 0 && at_is(&o.at, 0, 0, 0) && o.weights_of == -1 && o.lines == 1);
	EXPECT(contains(o.err, "ckpt-00000007.h5") && contains(o.err, "--resume auto"));
	snprintf(cfg.resume, sizeof(cfg.resume), "%s/ckpt-00000005.h5", dir);
	resume(f, &cfg, NULL, ROWS, SPE, &o);
	EXPECT_REFUSED(o, "ckpt-00000005.h5");
	/* A truncated newest checkpoint: auto warns and takes the one before;
	 * named as the file to resume, it is refused. */
	EXPECT(save_step(f, 9) == 0);
	char path[600];
	snprintf(path, sizeof(path), "%s/ckpt-00000009.h5", dir);
	EXPECT(truncate(path, 3000) == 0);
	snprintf(cfg.resume, sizeof(cfg.resume), "auto");
	resume(f, &cfg, NULL, ROWS, SPE, &o);
	EXPECT_RESUMED(o, 7, 1);
	EXPECT(contains(o.err, "mtrain: warning: skipping checkpoint: ") &&
	       contains(o.err, "ckpt-00000009.h5"));
	snprintf(cfg.resume, sizeof(cfg.resume), "%s", path);
	resume(f, &cfg, NULL, ROWS, SPE, &o);
	EXPECT_REFUSED(o, "ckpt-00000009.h5");
	unlink(path);
}

/* What must not change: refused with one line naming it. */
static void check_must_fit(struct fixture *f)
{
	struct outcome o;
	struct config cfg = f->cfg;
	cfg.batch = BATCH + 1;
	resume(f, &cfg, NULL, ROWS, ROWS / (BATCH + 1), &o);
	EXPECT_REFUSED(o, "written with --batch 4, this run has --batch 5");
	cfg = f->cfg;
	cfg.seed = 8;
	resume(f, &cfg, NULL, ROWS, SPE, &o);
	EXPECT_REFUSED(o, "written with --seed 7, this run has --seed 8");
	cfg = f->cfg;
	resume(f, &cfg, NULL, ROWS + 1, SPE, &o);
	EXPECT_REFUSED(o, "training set of 20 rows");
	resume(f, &cfg, NULL, ROWS, SPE + 1, &o); /* step 7 is not epoch 1, batch 2 */
	EXPECT_REFUSED(o, "do not agree with 6 steps per epoch");
}

/* text with the value of option key changed (a "9" appended; a float's
 * written the shortest way first, since a 10th digit after "%.9g"'s nine
 * may read back as the same float). */
static char *text_changed(const char *text, const char *key)
{
	char want[80], shortest[64] = "";
	snprintf(want, sizeof(want), "\n%s = ", key);
	size_t len = strlen(text);
	const char *line = !strncmp(text, want + 1, strlen(want + 1)) ? text : strstr(text, want);
	if (!line)
		return NULL;
	const char *value = strchr(line + 1, '=') + 2, *end = strchr(line + 1, '\n');
	char *stop;
	float f = strtof(value, &stop);
	if (stop == end && strpbrk(value, ".e") && strpbrk(value, ".e") < end)
		config_float_text(f, shortest, sizeof(shortest));
	size_t head = (size_t)((shortest[0] ? value : end) - text), add = strlen(shortest);
	char *out = malloc(len + add + 2);
	memcpy(out, text, head);
	memcpy(out + head, shortest, add);
	out[head + add] = '9';
	memcpy(out + head + add + 1, end, len - (size_t)(end - text) + 1);
	return out;
}

/* Every stored option of the table, changed alone: those marked "may
 * change" resume without a word; the others resume with one warning
 * naming the option, its old and its new value. */
static void check_options(struct fixture *f)
{
	int may = 0, warned = 0;
	for (size_t i = 0; i < n_options; i++) {
		const struct option_def *opt = &options[i];
		/* --batch and --seed: refused by their values (check_must_fit)
		 * before the texts are compared. */
		if ((opt->flags & OPT_NOT_STORED) || !strcmp(opt->name, "batch") ||
		    !strcmp(opt->name, "seed"))
			continue;
		char *text = text_changed(f->text, opt->name);
		EXPECT(text != NULL);
		if (!text)
			continue;
		struct outcome o;
		resume(f, &f->cfg, text, ROWS, SPE, &o);
		free(text);
		if (opt->flags & OPT_MAY_CHANGE) {
			may++;
			EXPECT_RESUMED(o, 7, 0);
			if (o.lines)
				fprintf(stderr, "--%s may change, but was named\n", opt->name);
			continue;
		}
		warned++;
		char was[160];
		snprintf(was, sizeof(was), "ckpt-00000007.h5 was written with '%s = ", opt->name);
		EXPECT_RESUMED(o, 7, 1);
		EXPECT(contains(o.err, "mtrain: warning: ") && contains(o.err, was) &&
		       contains(o.err, "9'"));
	}
	/* Both kinds exist (e.g. --steps may change, --lr is named). */
	EXPECT(may >= 10 && warned >= 10);
	printf("%d options may change on resume, %d are named when they do\n", may, warned);
}

/* A copy of src at dst as an older mtrain wrote it: format 1 (no digest of
 * the root attributes), no order attribute. 0, or -1. */
static int make_format1(const char *src, const char *dst)
{
	size_t n = 0;
	unsigned char *bytes = fixture_read_file(src, &n);
	int rc = bytes && !fixture_write_file(dst, bytes, n) ? 0 : -1;
	free(bytes);
	hid_t file = rc ? -1 : H5Fopen(dst, H5F_ACC_RDWR, H5P_DEFAULT);
	const int64_t one = 1;
	hid_t a = -1;
	rc = file < 0 || H5Adelete(file, "order") < 0 || H5Adelete(file, "meta_fnv1a64") < 0 ||
	     (a = H5Aopen(file, "format_version", H5P_DEFAULT)) < 0 ||
	     H5Awrite(a, H5T_NATIVE_INT64, &one) < 0 ? -1 : 0;
	if (a >= 0)
		H5Aclose(a);
	if (file >= 0 && H5Fclose(file) < 0)
		rc = -1;
	return rc;
}

/* The batch a loader of order k stages at the position at (rank 0 of 1)
 * is the rows loader_rows(k) puts there; for ORDER_LEGACY, loader_order's
 * permutation (the batch the run that wrote the checkpoint would take). */
static int stages_order(const struct position *at, enum order_kind k)
{
	enum { DIM = 3 };
	struct dataset d;
	fixture_dataset(&d, ROWS, DIM, 2);
	for (long i = 0; i < ROWS; i++)
		d.xf[i * DIM] = (float)i;
	struct loader l;
	loader_init(&l, backend_cpu(), &d, 7, BATCH, 0, 1, 2);
	loader_set_order(&l, (enum order_kind)at->order);
	struct staged *s = loader_current(&l, at->epoch, at->pos);
	uint32_t perm[ROWS];
	if (k == ORDER_LEGACY)
		loader_order(7, at->epoch, perm, ROWS);
	else
		loader_rows(k, 7, at->epoch, 0, ROWS, ROWS, perm);
	int same = s->rows == BATCH;
	for (int i = 0; same && i < s->rows; i++)
		same = s->x[i * DIM] == (float)perm[at->pos * BATCH + i];
	loader_free(&l);
	dataset_free(&d);
	return same;
}

/* The run's order: fresh, what a checkpoint records, the stored one for a
 * checkpoint from before format 3, refused when unknown. */
static void check_order(struct fixture *f)
{
	struct outcome o;
	struct config cfg = f->cfg;
	snprintf(cfg.resume, sizeof(cfg.resume), "never");
	resume(f, &cfg, NULL, ROWS, SPE, &o);
	EXPECT(o.rc == 0 && o.at.order == ORDER_FEISTEL);
	snprintf(cfg.resume, sizeof(cfg.resume), "%s/ckpt-00000007.h5", dir);
	resume(f, &cfg, NULL, ROWS, SPE, &o);
	EXPECT_RESUMED(o, 7, 0);
	EXPECT(o.at.order == ORDER_FEISTEL && stages_order(&o.at, ORDER_FEISTEL));
	char old[700];
	snprintf(old, sizeof(old), "%s/old", dir);
	EXPECT(mkdir(old, 0700) == 0);
	snprintf(old, sizeof(old), "%s/old/ckpt-00000007.h5", dir);
	EXPECT(make_format1(cfg.resume, old) == 0);
	snprintf(cfg.resume, sizeof(cfg.resume), "%s", old);
	resume(f, &cfg, NULL, ROWS, SPE, &o);
	EXPECT_RESUMED(o, 7, 0);
	EXPECT(o.at.order == ORDER_LEGACY);
	EXPECT(stages_order(&o.at, ORDER_LEGACY) && !stages_order(&o.at, ORDER_FEISTEL));
	unlink(old);
	/* a run carries its order on: the legacy one is recorded by name */
	f->order = order_name(ORDER_LEGACY);
	EXPECT(save_step(f, 8) == 0);
	snprintf(cfg.resume, sizeof(cfg.resume), "%s/ckpt-00000008.h5", dir);
	resume(f, &cfg, NULL, ROWS, SPE, &o);
	EXPECT_RESUMED(o, 8, 0);
	EXPECT(o.at.order == ORDER_LEGACY);
	f->order = "shuffle-9";
	EXPECT(save_step(f, 8) == 0);
	resume(f, &cfg, NULL, ROWS, SPE, &o);
	EXPECT_REFUSED(o, "made with order 'shuffle-9' of the rows, which this mtrain does "
			  "not know");
	f->order = NULL;
	unlink(cfg.resume);
}

int main(int argc, char **argv)
{
	comm_init(&comm, &argc, &argv);
	if (comm.size != 1 || fixture_tmpdir(dir, sizeof(dir), "resume")) {
		fprintf(stderr, "test_resume: run it as one process\n");
		comm_abort(&comm, 1);
	}
	struct fixture f = {0}; /* f.order NULL: save_step records "feistel-1" */
	fixture_init(&f);
	check_pick(&f);
	check_must_fit(&f);
	check_options(&f);
	check_order(&f);
	fixture_free(&f);
	fixture_rmtree(dir);
	int rc = unit_done("test_resume");
	comm_finalize(&comm);
	return rc;
}
