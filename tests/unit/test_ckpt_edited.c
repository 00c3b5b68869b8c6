/* HDF5 checkpoints edited after mtrain wrote them: optional root
 * attributes removed (format 1), required ones removed, format versions
 * rewritten, bytes flipped (checksums) or cut, a variable of rank 0 or 5;
 * each reads as that format did or is refused with one line. Files as
 * mtrain writes them are test_ckpt.c. */
#include "ckpt.h"
#include "h5attr.h"
#include "log.h"
#include "unit.h"
#include "fixtures.h"
#include "ckpt_fixture.h"

#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>

/* A copy of src at dir/name (its path in dst), opened for writing: the
 * HDF5 file, or -1 when the copy or the open failed. */
static hid_t open_copy(const char *src, const char *dir, const char *name, char *dst, size_t len)
{
	size_t n = 0;
	unsigned char *bytes = fixture_read_file(src, &n);
	snprintf(dst, len, "%s/%s", dir, name);
	int copied = bytes && !fixture_write_file(dst, bytes, n);
	free(bytes);
	return copied ? H5Fopen(dst, H5F_ACC_RDWR, H5P_DEFAULT) : -1;
}

/* A copy of src at dir/name without root attribute key, or with it
 * rewritten as the int64 *value: 0, or -1 when that failed. */
static int copy_edited(const char *src, const char *dir, const char *name, const char *key,
		       const int64_t *value, char *dst, size_t len)
{
	hid_t file = open_copy(src, dir, name, dst, len);
	int rc = file < 0 || H5Adelete(file, key) < 0 ? -1 : 0;
	if (!rc && value) {
		hid_t sp = H5Screate(H5S_SCALAR);
		hid_t a = H5Acreate2(file, key, H5T_NATIVE_INT64, sp, H5P_DEFAULT, H5P_DEFAULT);
		rc = a < 0 || H5Awrite(a, H5T_NATIVE_INT64, value) < 0 ? -1 : 0;
		H5Aclose(a);
		H5Sclose(sp);
	}
	if (file >= 0 && H5Fclose(file) < 0)
		rc = -1;
	return rc;
}

/* config, created and mtrain_version are optional: a file of format 1
 * (no digest of the root attributes, which format 2 requires) without them
 * reads with NULL and "?", and inspect says so. In a format 2 file the
 * digest tells their removal. */
static void check_optional(const char *dir, const char *path, const struct ckpt_fixture *f)
{
	char p[1200], q[1200];
	const int64_t one = 1;
	struct ckpt_meta m;
	EXPECT(copy_edited(path, dir, "v2opt.h5", "config", NULL, p, sizeof(p)) == 0);
	user_error_clear();
	EXPECT(ckpt_read_meta(p, &m) == -2);
	EXPECT(contains(user_error_text(), "root attributes do not match their digest"));
	EXPECT(copy_edited(path, dir, "v1a.h5", "meta_fnv1a64", NULL, q, sizeof(q)) == 0);
	user_error_clear();
	EXPECT(ckpt_read_meta(q, &m) == -2);
	EXPECT(contains(user_error_text(), "root attribute 'meta_fnv1a64' missing"));
	EXPECT(copy_edited(q, dir, "v1.h5", "format_version", &one, p, sizeof(p)) == 0);
	user_error_clear();
	EXPECT(ckpt_read_meta(p, &m) == 0 && m.format_version == 1);
	EXPECT_STR(m.order, "fisher-yates-1"); /* before format 3: the stored order */
	ckpt_meta_free(&m);
	EXPECT(copy_edited(p, dir, "opt1.h5", "config", NULL, q, sizeof(q)) == 0);
	memcpy(p, q, sizeof(p));
	EXPECT(copy_edited(p, dir, "opt2.h5", "created", NULL, q, sizeof(q)) == 0);
	EXPECT(copy_edited(q, dir, "opt3.h5", "mtrain_version", NULL, p, sizeof(p)) == 0);
	EXPECT(copy_edited(p, dir, "opt4.h5", "input_shape", NULL, q, sizeof(q)) == 0);
	memcpy(p, q, sizeof(p));
	user_error_clear();
	EXPECT(ckpt_read_meta(p, &m) == 0);
	EXPECT(!user_error_pending());
	EXPECT(m.config == NULL);
	EXPECT_STR(m.created, "?");
	EXPECT_STR(m.version, "?");
	EXPECT(m.global_step == 42 && m.batch == 128 && m.seed == f->meta.seed);
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	EXPECT(ckpt_inspect(p, 0, out) == 0);
	fclose(out);
	EXPECT(contains(text, "\nconfig          (absent)\ncreated         ?\n"
			      "mtrain_version  ?\ninput_shape     ?\nmeta_fnv1a64    "));
	free(text);

	/* A NULL config is written as "", as before. */
	char sub[1100];
	snprintf(sub, sizeof(sub), "%s/nocfg", dir);
	struct ckpt_meta nocfg = f->meta;
	nocfg.config = NULL;
	EXPECT(mkdir(sub, 0700) == 0 && ckpt_write(sub, f->vars, N_VARS, &nocfg) == 0);
	ckpt_path(sub, 42, p, sizeof(p));
	EXPECT(ckpt_read_meta(p, &m) == 0 && m.config && !strcmp(m.config, ""));
	ckpt_meta_free(&m);
}

/* Every number is required, and order (format 3): a file without one is
 * refused, naming it. */
static void check_required(const char *dir, const char *path)
{
	static const char *const keys[] = {"global_step", "epoch", "step_in_epoch", "batch",
		"seed", "world_size", "input_dim", "classes", "train_rows", "format_version",
		"meta_fnv1a64", "order"};
	for (int i = 0; i < 12; i++) {
		char p[1200], want[128];
		EXPECT(copy_edited(path, dir, "req.h5", keys[i], NULL, p, sizeof(p)) == 0);
		struct ckpt_meta m;
		user_error_clear();
		EXPECT(ckpt_read_meta(p, &m) == -2);
		snprintf(want, sizeof(want), "root attribute '%s' missing or unreadable", keys[i]);
		EXPECT(contains(user_error_text(), want));
		EXPECT(m.config == NULL);
	}
	user_error_clear();
}

/* Format versions 1 to CKPT_FORMAT_VERSION read; 0 and newer ones do not. */
static void check_versions(const char *dir, const char *path)
{
	const int64_t versions[4] = {CKPT_FORMAT_VERSION, 1, CKPT_FORMAT_VERSION + 1, 0};
	for (int i = 0; i < 4; i++) {
		char p[1200], want[64];
		EXPECT(copy_edited(path, dir, "ver.h5", "format_version", &versions[i], p, sizeof(p)) == 0);
		struct ckpt_meta m;
		user_error_clear();
		int rc = ckpt_read_meta(p, &m);
		snprintf(want, sizeof(want), "format version %lld;", (long long)versions[i]);
		if (i < 2) {
			EXPECT(rc == 0 && m.format_version == versions[i]);
			ckpt_meta_free(&m);
			continue;
		}
		EXPECT(rc == -2);
		EXPECT(contains(user_error_text(), want));
	}
	user_error_clear();
}

/* Flipped bytes inside a dataset fail Fletcher32; a truncated file fails to
 * open. Both are -2. */
static void check_corruption(const char *dir, const char *path, const struct ckpt_fixture *f)
{
	size_t len = 0;
	unsigned char *bytes = fixture_read_file(path, &len);
	EXPECT(bytes != NULL);
	if (!bytes)
		return;
	const struct ckpt_var *big = &f->vars[BIG];
	unsigned char *at = memmem(bytes, len, big->data, var_bytes(big));
	EXPECT(at != NULL);
	struct ckpt_var got[N_VARS];
	struct ckpt_meta m;
	char bad[1200];
	if (at) {
		for (size_t i = var_bytes(big) / 2; i < var_bytes(big) / 2 + 8; i++)
			at[i] ^= 0x5a;
		snprintf(bad, sizeof(bad), "%s/corrupt.h5", dir);
		EXPECT(fixture_write_file(bad, bytes, len) == 0);
		user_error_clear();
		vars_like(got, f->vars, N_VARS);
		EXPECT(ckpt_read(bad, got, N_VARS, 0, &m) == -2);
		EXPECT(contains(user_error_text(), big->name));
		EXPECT(contains(user_error_text(), "checksum"));
		EXPECT(m.config == NULL);
		vars_free(got, N_VARS);

		user_error_clear();
		char *text = NULL;
		size_t tlen = 0;
		FILE *out = open_memstream(&text, &tlen);
		EXPECT(ckpt_inspect(bad, 0, out) == -1);
		fclose(out);
		free(text);
		for (size_t i = var_bytes(big) / 2; i < var_bytes(big) / 2 + 8; i++)
			at[i] ^= 0x5a;
	}

	snprintf(bad, sizeof(bad), "%s/truncated.h5", dir);
	EXPECT(fixture_write_file(bad, bytes, len / 2) == 0);
	user_error_clear();
	vars_like(got, f->vars, N_VARS);
	EXPECT(ckpt_read(bad, got, N_VARS, 0, &m) == -2);
	EXPECT(contains(user_error_text(), "truncated.h5"));
	vars_free(got, N_VARS);

	snprintf(bad, sizeof(bad), "%s/missing.h5", dir);
	user_error_clear();
	vars_like(got, f->vars, N_VARS);
	EXPECT(ckpt_read(bad, got, N_VARS, 0, &m) == -2);
	EXPECT(contains(user_error_text(), "missing.h5"));

	snprintf(bad, sizeof(bad), "%s/text.h5", dir);
	EXPECT(fixture_write_file(bad, "not hdf5\n", 9) == 0);
	user_error_clear();
	EXPECT(ckpt_read(bad, got, N_VARS, 0, &m) == -2);
	EXPECT(contains(user_error_text(), "text.h5"));
	vars_free(got, N_VARS);
	user_error_clear();
	free(bytes);
}

/* A copy of src at dir/name whose conv2d/kernel is stored with rank nd (0
 * or 5: what mtrain never writes). 0, or -1 when that failed. */
static int copy_with_rank(const char *src, const char *dir, const char *name, int nd,
			  char *dst, size_t len)
{
	hid_t file = open_copy(src, dir, name, dst, len);
	int rc = file < 0 || H5Ldelete(file, "conv2d.kernel", H5P_DEFAULT) < 0 ? -1 : 0;
	const hsize_t dims[5] = {3, 3, 1, 32, 1};
	float values[288] = {0};
	hid_t space = nd ? H5Screate_simple(nd, dims, NULL) : H5Screate(H5S_SCALAR);
	hid_t ds = rc ? -1 : H5Dcreate2(file, "conv2d.kernel", H5T_IEEE_F32LE, space,
					 H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	if (ds < 0 || H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values) < 0 ||
	    h5attr_put_str(ds, "name", "conv2d/kernel"))
		rc = -1;
	if (ds >= 0)
		H5Dclose(ds);
	H5Sclose(space);
	if (file >= 0 && H5Fclose(file) < 0)
		rc = -1;
	return rc;
}

/* A variable of rank 5 or 0 in a file: one line naming the file and the
 * variable, RC_CORRUPT, from resume and inspect alike. */
static void check_bad_rank(const char *dir, const char *path, const struct ckpt_fixture *f)
{
	static const struct {
		int nd;
		const char *file, *line;
	} cases[] = {
		{5, "rank5.h5", "rank5.h5: conv2d/kernel has 5 dimensions; expected 1 to 4"},
		{0, "rank0.h5", "rank0.h5: conv2d/kernel has 0 dimensions; expected 1 to 4"},
	};
	for (int i = 0; i < 2; i++) {
		char bad[1200];
		struct ckpt_var got[N_VARS];
		struct ckpt_meta m;
		EXPECT(copy_with_rank(path, dir, cases[i].file, cases[i].nd, bad, sizeof(bad)) == 0);
		user_error_clear();
		vars_like(got, f->vars, N_VARS);
		EXPECT(ckpt_read(bad, got, N_VARS, 0, &m) == RC_CORRUPT);
		EXPECT(contains(user_error_text(), cases[i].line));
		EXPECT(!strchr(user_error_text(), '\n'));
		vars_free(got, N_VARS);
		user_error_clear();
		FILE *out = fopen("/dev/null", "w");
		EXPECT(ckpt_inspect(bad, 0, out) == -1);
		fclose(out);
		EXPECT(contains(user_error_text(), cases[i].line));
		user_error_clear();
	}
}

int main(void)
{
	char dir[512], path[1100];
	if (fixture_tmpdir(dir, sizeof(dir), "ckpt-edited"))
		return 1;
	struct ckpt_fixture f;
	ckpt_fixture_init(&f);
	/* The file each check edits a copy of, as mtrain writes it. */
	int rc = ckpt_write(dir, f.vars, N_VARS, &f.meta);
	if (rc == 0) {
		ckpt_path(dir, f.meta.global_step, path, sizeof(path));
		check_optional(dir, path, &f);
		check_required(dir, path);
		check_versions(dir, path);
		check_corruption(dir, path, &f);
		check_bad_rank(dir, path, &f);
	} else {
		fprintf(stderr, "%s: cannot write the checkpoint to edit\n", dir);
	}
	ckpt_fixture_free(&f);
	fixture_rmtree(dir);
	return rc ? 1 : unit_done("test_ckpt_edited");
}
