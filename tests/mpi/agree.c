/* Start-up agreement (src/agree.c) on 3 ranks: equal options, registries
 * and data pass; one rank's difference fails the check on every rank, with
 * the user error recorded on the differing rank only and naming it and
 * both values (options that shape the model are left to the registry's
 * check); agree_load_data refuses a batch larger than the data or smaller
 * than the ranks, an evaluation set of another width and a single class;
 * --check-replicas finds one flipped bit in one rank's trainable weights
 * (rank 0 names the rank and variable) and ignores non-trainable state.
 * Run under mpirun with 3 ranks; exits non-zero on any failed check. */
#include "agree.h"
#include "backend.h"
#include "comm.h"
#include "log.h"
#include "unit.h"
#include "fixtures.h"

#include <fcntl.h>
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

enum { RANKS = 3, ROWS = 12, DIM = 3, CLASSES = 3 };

static struct comm comm;

/* The ranks with a pending user error, as a bit mask (bit r: rank r);
 * clears this rank's. */
static int pending_ranks(void)
{
	int mine = user_error_pending(), all[RANKS], mask = 0;
	comm_allgather_host(&comm, &mine, all, sizeof(int));
	for (int r = 0; r < RANKS; r++)
		mask |= all[r] ? 1 << r : 0;
	return mask;
}

/* On a rank whose bit of ranks is set: its user error holds want. Then
 * every rank's error is cleared. */
static void expect_error_on(int ranks, const char *want)
{
	int mask = pending_ranks();
	EXPECT(mask == ranks);
	if (ranks & 1 << comm.rank)
		EXPECT(contains(user_error_text(), want));
	user_error_clear();
}

static void check_config(void)
{
	struct config base, cfg;
	config_defaults(&base);
	cfg = base;
	EXPECT(agree_config(&cfg, &comm) == 0);
	expect_error_on(0, "");
	if (comm.rank == 2)
		cfg.ema_sync_every = 2;
	EXPECT(agree_config(&cfg, &comm) == -1); /* on every rank */
	expect_error_on(1 << 2, "started with other options than rank 0: rank 0 has "
				"'ema-sync-every = 100', rank 2 'ema-sync-every = 2'");
	/* Options a resume may change still must agree between ranks. */
	cfg = base;
	if (comm.rank == 1)
		cfg.steps = 5;
	EXPECT(agree_config(&cfg, &comm) == -1);
	expect_error_on(1 << 1, "rank 0 has 'steps = 0', rank 1 'steps = 5'");
	/* Two ranks differ: both record it (the lowest prints it). */
	cfg = base;
	cfg.lr = comm.rank ? 0.5f : cfg.lr;
	EXPECT(agree_config(&cfg, &comm) == -1);
	expect_error_on(1 << 1 | 1 << 2, "'lr = 0.5'");
	/* The model's shape is agree_registry's to compare. */
	cfg = base;
	if (comm.rank == 1)
		cfg.hidden[0] = 17;
	EXPECT(agree_config(&cfg, &comm) == 0);
	expect_error_on(0, "");
}

/* dense/kernel [3,kernel_out], dense/bias [2] and, with extra, dense_1/kernel
 * [2,2]; bias_name for the second. */
static void registry(struct params *reg, long kernel_out, const char *bias_name, int extra)
{
	const long kernel[2] = {3, kernel_out}, bias[1] = {2}, more[2] = {2, 2};
	params_init(reg);
	params_add(reg, "dense/kernel", 2, kernel);
	params_add(reg, bias_name, 1, bias);
	if (extra)
		params_add(reg, "dense_1/kernel", 2, more);
}

static void check_registry(void)
{
	struct params reg;
	registry(&reg, 2, "dense/bias", 0);
	EXPECT(agree_registry(&reg, &comm) == 0);
	expect_error_on(0, "");
	registry(&reg, comm.rank == 2 ? 3 : 2, "dense/bias", 0);
	EXPECT(agree_registry(&reg, &comm) == -1);
	expect_error_on(1 << 2, "dense/kernel: rank 0 [3,2] vs rank 2 [3,3]");
	registry(&reg, 2, comm.rank == 2 ? "dense/beta" : "dense/bias", 0);
	EXPECT(agree_registry(&reg, &comm) == -1);
	expect_error_on(1 << 2, "at variable 1: rank 0 'dense/bias' [2] vs rank 2 'dense/beta' [2]");
	registry(&reg, 2, "dense/bias", comm.rank == 1); /* rank 1 has one more */
	EXPECT(agree_registry(&reg, &comm) == -1);
	expect_error_on(1 << 1, "dense_1/kernel: rank 0 absent vs rank 1 [2,2]");
	registry(&reg, 2, "dense/bias", comm.rank != 1); /* rank 1 has one fewer */
	EXPECT(agree_registry(&reg, &comm) == -1);
	expect_error_on(1 << 1, "dense_1/kernel: rank 0 [2,2] vs rank 1 absent");
}

/* rows rows of DIM floats, row i = (i, 2i, 3i) + salt, y = i % CLASSES. */
static void data_make(struct dataset *d, long rows, float salt)
{
	fixture_dataset(d, rows, DIM, CLASSES);
	for (long i = 0; i < rows; i++) {
		for (int j = 0; j < DIM; j++)
			d->xf[i * DIM + j] = (float)(i * (j + 1)) + salt;
		d->y[i] = (int32_t)(i % CLASSES);
	}
}

/* agree_data with rank `who` holding train (or eval, when of_eval) changed
 * by change; expects the error on that rank, holding want. */
static void data_differs(const struct config *cfg, int who, int of_eval,
			 void (*change)(struct dataset *), const char *want)
{
	struct dataset train, eval;
	data_make(&train, ROWS, 0);
	data_make(&eval, 6, 0.5f);
	if (comm.rank == who)
		change(of_eval ? &eval : &train);
	agree_data(cfg, &train, &eval, &comm);
	expect_error_on(1 << who, want);
	dataset_free(&train);
	dataset_free(&eval);
}

static void one_label(struct dataset *d) { d->y[ROWS - 1] = 0; }
static void one_value(struct dataset *d) { d->xf[5] += 1e-6f; }
static void fewer_rows(struct dataset *d) { d->n = d->n_total = ROWS - 1; }
static void image_rows(struct dataset *d) { d->shape[0] = DIM, d->shape[2] = 1; }
static void eval_rows(struct dataset *d) { d->n_total = 7; }

static void check_data(void)
{
	struct config cfg;
	config_defaults(&cfg);
	snprintf(cfg.data, sizeof(cfg.data), "train.h5");
	snprintf(cfg.eval_data, sizeof(cfg.eval_data), "eval.h5");
	struct dataset train, eval;
	data_make(&train, ROWS, 0);
	data_make(&eval, 6, 0.5f);
	agree_data(&cfg, &train, &eval, &comm);
	agree_data(&cfg, &train, NULL, &comm);
	expect_error_on(0, "");
	dataset_free(&train);
	dataset_free(&eval);
	data_differs(&cfg, 1, 0, one_label, "--data train.h5 is not rank 0's file");
	data_differs(&cfg, 2, 0, one_value, "--data train.h5 is not rank 0's file");
	data_differs(&cfg, 2, 0, fewer_rows, "11 rows of [3], 3 classes");
	data_differs(&cfg, 1, 0, image_rows, "12 rows of [3,1,1]");
	data_differs(&cfg, 2, 1, eval_rows, "--eval-data eval.h5 is not rank 0's file: 7 rows");
}

/* Writes dir/name: rows rows of width dim (row i: i/rows...), labels
 * i % classes. */
static void write_data(const char *dir, const char *name, long rows, int dim, int classes,
		       float salt)
{
	char path[700];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	float *x = malloc(sizeof(float) * (size_t)(rows * dim)); /* (rows, dim) */
	int32_t *y = malloc(sizeof(int32_t) * (size_t)rows);     /* (rows) */
	for (long i = 0; i < rows * dim; i++)
		x[i] = (float)i / (float)(rows * dim) + salt;
	for (long i = 0; i < rows; i++)
		y[i] = (int32_t)(i % classes);
	const int row[3] = {1, 1, dim};
	EXPECT(dataset_write(path, NULL, x, y, rows, row, classes) == 0);
	free(x);
	free(y);
}

/* agree_load_data of --data train, --eval-data eval and --batch batch
 * (names in dir); 0 or -1. */
static int load(const char *dir, const char *train_name, const char *eval_name, int batch,
		int *has_eval, long *eval_rows)
{
	struct config cfg;
	config_defaults(&cfg);
	cfg.batch = batch;
	snprintf(cfg.data, sizeof(cfg.data), "%s/%s", dir, train_name);
	snprintf(cfg.eval_data, sizeof(cfg.eval_data), "%s%s%s", strcmp(eval_name, "none") ? dir : "",
		 strcmp(eval_name, "none") ? "/" : "", eval_name);
	struct dataset train, eval;
	memset(&train, 0, sizeof(train));
	memset(&eval, 0, sizeof(eval));
	int rc = agree_load_data(&cfg, &comm, &train, &eval, has_eval);
	*eval_rows = eval.n;
	dataset_free(&train);
	dataset_free(&eval);
	return rc;
}

static void check_load_data(void)
{
	char dir[512] = "";
	if (comm.rank == 0 && fixture_tmpdir(dir, sizeof(dir), "agree"))
		comm_abort(&comm, 1);
	comm_bcast_host(&comm, dir, sizeof(dir), 0);
	if (comm.rank == 0) {
		write_data(dir, "train.h5", ROWS, DIM, CLASSES, 0);
		write_data(dir, "other.h5", ROWS, DIM, CLASSES, 1);
		write_data(dir, "eval.h5", 6, DIM, CLASSES, 0);
		write_data(dir, "wide.h5", 6, DIM + 1, CLASSES, 0);
		write_data(dir, "single.h5", ROWS, DIM, 1, 0);
	}
	comm_barrier(&comm);
	int has_eval = -1;
	long eval_rows = -1;
	EXPECT(load(dir, "train.h5", "eval.h5", 6, &has_eval, &eval_rows) == 0);
	EXPECT(has_eval == 1 && eval_rows == 2); /* each rank its slice */
	expect_error_on(0, "");
	EXPECT(load(dir, "train.h5", "none", ROWS, &has_eval, &eval_rows) == 0);
	EXPECT(has_eval == 0);
	expect_error_on(0, "");
	EXPECT(load(dir, "train.h5", "none", ROWS + 1, &has_eval, &eval_rows) == -1);
	expect_error_on(7, "--batch 13 is larger than the training set");
	EXPECT(load(dir, "train.h5", "none", RANKS - 1, &has_eval, &eval_rows) == -1);
	expect_error_on(7, "--batch 2 is smaller than the number of ranks (3)");
	EXPECT(load(dir, "train.h5", "none", RANKS, &has_eval, &eval_rows) == 0);
	expect_error_on(0, "");
	EXPECT(load(dir, "train.h5", "wide.h5", 6, &has_eval, &eval_rows) == -1);
	expect_error_on(7, "inputs have 4 features but the training set");
	EXPECT(load(dir, "single.h5", "none", 6, &has_eval, &eval_rows) == -1);
	expect_error_on(7, "labels hold 1 class; need at least 2");
	EXPECT(load(dir, comm.rank == 2 ? "other.h5" : "train.h5", "none", 6, &has_eval,
		    &eval_rows) == -1);
	expect_error_on(1 << 2, "other.h5 is not rank 0's file: 12 rows of [3], 3 classes, digest");
	comm_barrier(&comm);
	if (comm.rank == 0)
		fixture_rmtree(dir);
}

/* agree_replicas over buf with rank 0's stderr captured into err. */
static int replicas(const float *buf, const struct params *reg, char *err, size_t len)
{
	float *host = malloc(sizeof(float) * reg->total);
	char path[64];
	snprintf(path, sizeof(path), "/tmp/mtrain-agree-%d.err", (int)getpid());
	fflush(stderr);
	int saved = dup(2), fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	dup2(fd, 2);
	int rc = agree_replicas(backend_cpu(), buf, reg, host, "weights", 12, &comm);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	ssize_t got = pread(fd, err, len - 1, 0);
	err[got > 0 ? got : 0] = 0;
	close(fd);
	unlink(path);
	fputs(err, stderr);
	free(host);
	return rc;
}

static void check_replicas(void)
{
	const struct backend *be = backend_cpu();
	struct params reg;
	registry(&reg, 2, "dense/bias", 0);
	const long stat[1] = {2};
	params_add_state(&reg, "batch_normalization/moving_mean", 1, stat);
	float *w = be->alloc(be, sizeof(float) * reg.total); /* (P) */
	for (size_t i = 0; i < reg.total; i++)
		w[i] = 0.25f * (float)i;
	char err[1024];
	EXPECT(replicas(w, &reg, err, sizeof(err)) == 0);
	EXPECT(err[0] == 0);
	/* Non-trainable state differs between ranks by design. */
	const struct param *mean = params_find(&reg, "batch_normalization/moving_mean");
	if (comm.rank == 1)
		w[mean->offset] += 1.0f;
	EXPECT(replicas(w, &reg, err, sizeof(err)) == 0);
	/* One bit of rank 2's dense/bias. */
	const struct param *bias = params_find(&reg, "dense/bias");
	if (comm.rank == 2) {
		uint32_t bits;
		memcpy(&bits, &w[bias->offset + 1], sizeof(bits));
		bits ^= 1;
		memcpy(&w[bias->offset + 1], &bits, sizeof(bits));
	}
	EXPECT(replicas(w, &reg, err, sizeof(err)) == -1); /* on every rank */
	if (comm.rank == 0)
		EXPECT(contains(err, "replicas drifted at step 12: rank 2's weights of dense/bias "
				     "differ from rank 0's"));
	else
		EXPECT(err[0] == 0); /* rank 0 alone says it */
	be->free(be, w);
}

int main(int argc, char **argv)
{
	comm_init(&comm, &argc, &argv);
	if (comm.size != RANKS) {
		if (comm.rank == 0)
			fprintf(stderr, "agree: run it on %d ranks (mpirun -np %d)\n", RANKS, RANKS);
		comm_abort(&comm, 1);
	}
	check_config();
	check_registry();
	check_data();
	check_load_data();
	check_replicas();
	int counts[2] = {unit_failures, unit_checks};
	MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	if (comm.rank == 0)
		printf("agree: %d ranks, %d checks, %d failed\n", comm.size, counts[1], counts[0]);
	comm_finalize(&comm);
	return counts[0] || counts[1] == 0 ? 1 : 0;
}
