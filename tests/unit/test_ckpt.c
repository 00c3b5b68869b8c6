/* HDF5 checkpoints as mtrain writes them: bitwise round trip, the root
 * attributes' file format, a file of format 2, strict name/shape checks,
 * listing, pruning and inspecting, variables of rank 1 to 4, and reading
 * while other threads allocate. Files edited after writing (attributes
 * removed or rewritten, bytes flipped or cut, a rank mtrain never writes)
 * are test_ckpt_edited.c. */
#include "ckpt.h"
#include "log.h"
#include "unit.h"
#include "fixtures.h"
#include "ckpt_fixture.h"

#include <dirent.h>
#include <hdf5.h>
#include <pthread.h>
#include <stdatomic.h>
#include <unistd.h>

static int lacks(const char *text, const char *part)
{
	int ok = text && strstr(text, part) == NULL;
	if (!ok)
		fprintf(stderr, "did not expect \"%s\" in \"%s\"\n", part, text ? text : "(null)");
	return ok;
}

/* Names in dir that look like leftover temporary files. */
static int temp_files_in(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, ".ckpt-", 6) || strstr(e->d_name, ".tmp"))
			n++;
	closedir(d);
	return n;
}

static void check_round_trip(const char *dir, struct ckpt_fixture *f, char *path, size_t len)
{
	EXPECT(ckpt_write(dir, f->vars, N_VARS, &f->meta) == 0);
	ckpt_path(dir, 42, path, len);
	char want[1100];
	snprintf(want, sizeof(want), "%s/ckpt-00000042.h5", dir);
	EXPECT_STR(path, want);
	EXPECT(access(path, R_OK) == 0);
	EXPECT(temp_files_in(dir) == 0);

	struct ckpt_var got[N_VARS];
	struct ckpt_meta m;
	vars_like(got, f->vars, N_VARS);
	EXPECT(ckpt_read(path, got, N_VARS, 0, &m) == 0);
	for (int i = 0; i < N_VARS; i++)
		EXPECT(memcmp(got[i].data, f->vars[i].data, var_bytes(&f->vars[i])) == 0);
	EXPECT(m.global_step == 42);
	EXPECT(m.epoch == 3);
	EXPECT(m.step_in_epoch == 7);
	EXPECT(m.batch == 128);
	EXPECT(m.seed == 0xdeadbeefcafeull);
	EXPECT(m.world_size == 4);
	EXPECT(m.input_dim == 3);
	EXPECT(m.classes == 32);
	EXPECT(m.config && !strcmp(m.config, f->meta.config));
	EXPECT_STR(m.created, "2025-01-02T03:04:05Z");
	EXPECT_STR(m.version, "0.1.0-test");
	EXPECT(m.format_version == CKPT_FORMAT_VERSION);
	ckpt_meta_free(&m);

	/* Order of the variables asked for does not matter: reading is by name. */
	struct ckpt_var rev[N_VARS];
	for (int i = 0; i < N_VARS; i++)
		rev[i] = got[N_VARS - 1 - i];
	memset(rev[0].data, 0, var_bytes(&rev[0]));
	EXPECT(ckpt_read(path, rev, N_VARS, 0, &m) == 0);
	EXPECT(memcmp(rev[0].data, f->vars[N_VARS - 1].data, var_bytes(&rev[0])) == 0);
	ckpt_meta_free(&m);
	vars_free(got, N_VARS);

	struct ckpt_meta only;
	EXPECT(ckpt_read_meta(path, &only) == 0);
	EXPECT(only.global_step == 42 && only.seed == 0xdeadbeefcafeull);
	EXPECT(only.config && !strcmp(only.config, f->meta.config));
	ckpt_meta_free(&only);
}

/* The root attributes as mtrain writes them: 11 int64 scalars (format 2
 * added the digest of the others) and 6 fixed-length strings (format 3
 * added order, format 4 input_shape), nothing else. */
static void check_attr_format(const char *path, const struct ckpt_fixture *f)
{
	static const char *const nums[] = {"format_version", "global_step", "epoch",
		"step_in_epoch", "batch", "seed", "world_size", "input_dim", "classes", "train_rows",
		"meta_fnv1a64"};
	const char *strs[][2] = {{"format", CKPT_FORMAT}, {"config", f->meta.config},
		{"created", f->meta.created}, {"mtrain_version", f->meta.version},
		{"order", f->meta.order}, {"input_shape", f->meta.input_shape}};
	hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
	EXPECT(file >= 0);
	H5O_info_t info;
	EXPECT(H5Oget_info_by_name(file, ".", &info, H5P_DEFAULT) >= 0 && info.num_attrs == 17);
	for (int i = 0; i < 17; i++) {
		int num = i < 11;
		const char *key = num ? nums[i] : strs[i - 11][0];
		hid_t a = H5Aopen(file, key, H5P_DEFAULT), t = H5Aget_type(a), sp = H5Aget_space(a);
		int ok = a >= 0 && H5Sget_simple_extent_type(sp) == H5S_SCALAR;
		if (num)
			ok = ok && H5Tequal(t, H5T_NATIVE_INT64) > 0;
		else
			ok = ok && H5Tget_class(t) == H5T_STRING && H5Tis_variable_str(t) == 0 &&
			     H5Tget_size(t) == strlen(strs[i - 11][1]) + 1;
		if (!ok)
			fprintf(stderr, "root attribute %s: not as mtrain writes it\n", key);
		EXPECT(ok);
		H5Sclose(sp);
		H5Tclose(t);
		H5Aclose(a);
	}
	int64_t seed = 0;
	hid_t a = H5Aopen(file, "seed", H5P_DEFAULT);
	EXPECT(H5Aread(a, H5T_NATIVE_INT64, &seed) >= 0 && seed == (int64_t)f->meta.seed);
	H5Aclose(a);
	H5Fclose(file);
}

/* A file mtrain wrote before format 3 (tests/unit/data/ckpt-format2.h5,
 * format 2, no order attribute) reads, its digest intact, as made with the
 * stored order; inspect says so. */
static void check_format2(void)
{
	const char *path = MTRAIN_SOURCE_DIR "/tests/unit/data/ckpt-format2.h5";
	struct ckpt_meta m;
	user_error_clear();
	EXPECT(ckpt_read_meta(path, &m) == 0 && m.format_version == 2 && m.global_step == 2);
	EXPECT_STR(m.order, "fisher-yates-1");
	ckpt_meta_free(&m);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	EXPECT(ckpt_inspect(path, 0, out) == 0);
	fclose(out);
	EXPECT(contains(text, "\ntrain_rows      84\norder           fisher-yates-1\nconfig  "));
	free(text);
}

/* Shape, missing and extra mismatches: -1 and one line per variable. */
static void check_strict(const char *path, const struct ckpt_fixture *f)
{
	struct ckpt_var got[N_VARS + 1];
	struct ckpt_meta m;

	user_error_clear();
	vars_like(got, f->vars, N_VARS);
	free(got[0].data);
	got[0].shape[1] = 5; /* dense/kernel [3,5] against [3,4] in the file */
	got[0].data = calloc(15, sizeof(float));
	EXPECT(ckpt_read(path, got, N_VARS, 0, &m) == -1);
	EXPECT(contains(user_error_text(), "dense/kernel: checkpoint [3,4] vs model [3,5]"));
	EXPECT(m.config == NULL);
	vars_free(got, N_VARS);

	/* 1-D in the model, 2-D in the file. */
	user_error_clear();
	vars_like(got, f->vars, N_VARS);
	got[0].ndim = 1;
	got[0].shape[0] = 12;
	got[0].shape[1] = 0;
	EXPECT(ckpt_read(path, got, N_VARS, 0, &m) == -1);
	EXPECT(contains(user_error_text(), "dense/kernel: checkpoint [3,4] vs model [12]"));
	vars_free(got, N_VARS);

	/* The same values, another rank: a flattened conv2d kernel. */
	user_error_clear();
	vars_like(got, f->vars, N_VARS);
	got[CONV].ndim = 2;
	got[CONV].shape[0] = 9;
	got[CONV].shape[1] = 32;
	got[CONV].shape[2] = got[CONV].shape[3] = 0;
	EXPECT(ckpt_read(path, got, N_VARS, 0, &m) == -1);
	EXPECT(contains(user_error_text(), "conv2d/kernel: checkpoint [3,3,1,32] vs model [9,32]"));
	vars_free(got, N_VARS);

	/* A variable the model has and the checkpoint lacks. */
	user_error_clear();
	vars_like(got, f->vars, N_VARS);
	got[N_VARS] = f->vars[1];
	snprintf(got[N_VARS].name, sizeof(got[N_VARS].name), "dense_9/bias");
	got[N_VARS].data = calloc(4, sizeof(float));
	EXPECT(ckpt_read(path, got, N_VARS + 1, 0, &m) == -1);
	EXPECT(contains(user_error_text(), "dense_9/bias"));
	EXPECT(contains(user_error_text(), "missing"));
	EXPECT(ckpt_read(path, got, N_VARS + 1, 1, &m) == -1); /* allow_extra is not allow_missing */
	vars_free(got, N_VARS + 1);

	/* A variable the checkpoint has and the model lacks: dense/bias. */
	user_error_clear();
	vars_like(got, f->vars, N_VARS);
	struct ckpt_var fewer[N_VARS - 1] = {got[0], got[2], got[3], got[4]};
	EXPECT(ckpt_read(path, fewer, N_VARS - 1, 0, &m) == -1);
	EXPECT(contains(user_error_text(), "dense/bias"));
	EXPECT(lacks(user_error_text(), "global_step")); /* not a model variable */
	user_error_clear();
	EXPECT(ckpt_read(path, fewer, N_VARS - 1, 1, &m) == 0);
	EXPECT(!user_error_pending());
	EXPECT(memcmp(fewer[1].data, f->vars[2].data, var_bytes(&f->vars[2])) == 0);
	ckpt_meta_free(&m);
	vars_free(got, N_VARS);

	/* Two mismatches: both reported. */
	user_error_clear();
	vars_like(got, f->vars, N_VARS);
	got[1].shape[0] = 3;
	got[3].shape[0] = 31;
	EXPECT(ckpt_read(path, got, N_VARS, 0, &m) == -1);
	EXPECT(contains(user_error_text(), "dense/bias: checkpoint [4] vs model [3]"));
	EXPECT(contains(user_error_text(), "dense_1/bias/Adam: checkpoint [32] vs model [31]"));
	vars_free(got, N_VARS);
	user_error_clear();
}

/* ckpt_inspect names every dataset, the metadata and the dtypes. */
static void check_inspect(const char *path, const struct ckpt_fixture *f)
{
	char *text = NULL, want[1300];
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	EXPECT(ckpt_inspect(path, 0, out) == 0);
	fclose(out);
	for (int i = 0; i < N_VARS; i++)
		EXPECT(contains(text, f->vars[i].name));
	EXPECT(contains(text, "[64,32]"));
	EXPECT(contains(text, "\nconv2d/kernel                                [3,3,1,32]   float32  "));
	EXPECT(contains(text, "float32"));
	snprintf(want, sizeof(want), "file            %s\nformat          mtrain-checkpoint %d\n"
		 "global_step     42\nepoch           3\n", path, CKPT_FORMAT_VERSION);
	EXPECT(text && !strncmp(text, want, strlen(want)));
	EXPECT(contains(text, "\nseed            244837814094590\nworld_size      4\n"));
	int lines = 0;
	for (const char *c = f->meta.config; *c; c++)
		lines += *c == '\n';
	snprintf(want, sizeof(want), "\nconfig          %d lines\ncreated         "
		 "2025-01-02T03:04:05Z\nmtrain_version  0.1.0-test\ninput_shape     28,28,1\n"
		 "meta_fnv1a64    ", lines);
	EXPECT(lines > 10 && contains(text, want));
	EXPECT(contains(text, "\nglobal_step                                  [1]          int64    "));
	free(text);

	text = NULL;
	out = open_memstream(&text, &len);
	EXPECT(ckpt_inspect(path, 1, out) == 0);
	fclose(out);
	EXPECT(contains(text, "{\"name\":\"conv2d/kernel\",\"shape\":[3,3,1,32],\"dtype\":\"float32\""));
	EXPECT(contains(text, "{\"name\":\"dense/bias\",\"shape\":[4],"));
	free(text);
}

/* ckpt_list: newest first by step; ckpt_prune keeps the newest. */
static void check_list_prune(const char *root, struct ckpt_fixture *f)
{
	char dir[1100], path[1200];
	snprintf(dir, sizeof(dir), "%s/list", root);
	EXPECT(mkdir(dir, 0700) == 0);
	const long steps[3] = {40, 5, 300};
	struct ckpt_meta meta = f->meta;
	for (int i = 0; i < 3; i++) {
		meta.global_step = steps[i];
		EXPECT(ckpt_write(dir, f->vars, 2, &meta) == 0);
	}
	/* Not checkpoints: skipped by the listing and left alone by pruning. */
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	EXPECT(fixture_write_file(path, "x", 1) == 0);
	snprintf(path, sizeof(path), "%s/ckpt-00000007.h5.tmp", dir);
	EXPECT(fixture_write_file(path, "x", 1) == 0);

	int n;
	struct ckpt_file *files = ckpt_list(dir, &n);
	EXPECT(n == 3);
	const char *want[3] = {"ckpt-00000300.h5", "ckpt-00000040.h5", "ckpt-00000005.h5"};
	const long want_step[3] = {300, 40, 5};
	for (int i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, want[i]);
		EXPECT(i < n && !strcmp(files[i].path, path) && files[i].step == want_step[i]);
	}
	free(files);

	/* Files above the step given belong to another run: left alone. */
	ckpt_prune(dir, 1, 40);
	free(ckpt_list(dir, &n));
	EXPECT(n == 2);
	snprintf(path, sizeof(path), "%s/%s", dir, want[2]);
	EXPECT(access(path, F_OK) != 0);
	meta.global_step = 5;
	EXPECT(ckpt_write(dir, f->vars, 2, &meta) == 0);
	/* A crashed write's temporary file goes too. */
	snprintf(path, sizeof(path), "%s/.ckpt-00000009.h5.tmp", dir);
	EXPECT(fixture_write_file(path, "x", 1) == 0);
	ckpt_prune(dir, 2, 1000);
	EXPECT(access(path, F_OK) != 0);
	files = ckpt_list(dir, &n);
	EXPECT(n == 2);
	for (int i = 0; i < 2 && i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, want[i]);
		EXPECT_STR(files[i].path, path);
	}
	free(files);
	snprintf(path, sizeof(path), "%s/%s", dir, want[2]);
	EXPECT(access(path, F_OK) != 0);
	snprintf(path, sizeof(path), "%s/notes.txt", dir);
	EXPECT(access(path, F_OK) == 0);

	/* Steps past 8 digits get a longer name and must still be listed:
	 * --steps allows up to 1e12, and resume=auto and pruning go by the list. */
	snprintf(dir, sizeof(dir), "%s/wide", root);
	EXPECT(mkdir(dir, 0700) == 0);
	const long wide[2] = {99999999, 100000000};
	for (int i = 0; i < 2; i++) {
		meta.global_step = wide[i];
		EXPECT(ckpt_write(dir, f->vars, 2, &meta) == 0);
	}
	files = ckpt_list(dir, &n);
	EXPECT(n == 2);
	snprintf(path, sizeof(path), "%s/ckpt-100000000.h5", dir);
	EXPECT(n > 0 && !strcmp(files[0].path, path) && files[0].step == 100000000);
	free(files);

	snprintf(path, sizeof(path), "%s/absent", root);
	EXPECT(ckpt_list(path, &n) == NULL && n == 0);

	/* A folder that does not exist: -1 (and an expected error line on
	 * stderr), and no checkpoint appears. */
	meta.global_step = 1;
	EXPECT(ckpt_write(path, f->vars, 2, &meta) == -1);
	EXPECT(ckpt_list(path, &n) == NULL && n == 0);
}

/* Other threads allocating all the time, as MPI's may during a read. */
static atomic_int g_churning = 1;
static void *churn(void *arg)
{
	size_t size = (size_t)arg;
	while (atomic_load(&g_churning)) {
		void *p[16];
		for (int i = 0; i < 16; i++)
			p[i] = malloc(size + (size_t)i * 8);
		for (int i = 0; i < 16; i++)
			free(p[i]);
	}
	return NULL;
}

/* The readers' child process is a fresh program, so a lock another thread
 * held at the fork (the sanitizer build's allocator's, say) cannot hang
 * it: many reads while two threads allocate, each read right. */
static void check_busy_threads(const char *path)
{
	pthread_t t[2];
	EXPECT(pthread_create(&t[0], NULL, churn, (void *)(size_t)48) == 0);
	EXPECT(pthread_create(&t[1], NULL, churn, (void *)(size_t)4096) == 0);
	int right = 0;
	for (int i = 0; i < 60; i++) {
		struct ckpt_meta m;
		if (ckpt_read_meta(path, &m) == 0 && m.global_step == 42)
			right++;
		ckpt_meta_free(&m);
	}
	atomic_store(&g_churning, 0);
	pthread_join(t[0], NULL);
	pthread_join(t[1], NULL);
	EXPECT(right == 60);
}

int main(void)
{
	char dir[512], path[1100];
	if (fixture_tmpdir(dir, sizeof(dir), "ckpt"))
		return 1;
	struct ckpt_fixture f;
	ckpt_fixture_init(&f);
	check_round_trip(dir, &f, path, sizeof(path));
	check_attr_format(path, &f);
	check_format2();
	check_strict(path, &f);
	check_inspect(path, &f);
	check_busy_threads(path);
	check_list_prune(dir, &f);
	ckpt_fixture_free(&f);
	fixture_rmtree(dir);
	EXPECT(access(dir, F_OK) != 0);
	return unit_done("test_ckpt");
}
