/* HDF5 checkpoints of ckpt.h. */
#include "ckpt.h"
#include "check.h"
#include "hash.h"
#include "log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void ckpt_path(const char *dir, long global_step, char *buf, size_t len)
{
	snprintf(buf, len, "%s/ckpt-%08ld.h5", dir, global_step);
}

/* The in-file path of a logical name: '/' would make groups. */
static void file_path_of(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s", name);
	for (char *p = buf; *p; p++)
		if (*p == '/')
			*p = '.';
}

/* The writers return -1 when HDF5 fails, which on a sound file means the
 * disk did (full, quota, I/O error): ckpt_write then cleans up and says so. */
static int put_attr(hid_t obj, const char *key, hid_t type, const void *value)
{
	hid_t space = H5Screate(H5S_SCALAR);
	hid_t a = H5Acreate2(obj, key, type, space, H5P_DEFAULT, H5P_DEFAULT);
	int rc = a < 0 || H5Awrite(a, type, value) < 0 ? -1 : 0;
	if (a >= 0)
		H5Aclose(a);
	H5Sclose(space);
	return rc;
}

static int put_str_attr(hid_t obj, const char *key, const char *value)
{
	hid_t type = H5Tcopy(H5T_C_S1);
	H5_CHECK(H5Tset_size(type, strlen(value) + 1));
	int rc = put_attr(obj, key, type, value);
	H5Tclose(type);
	return rc;
}

static int put_i64_attr(hid_t obj, const char *key, int64_t value)
{
	return put_attr(obj, key, H5T_NATIVE_INT64, &value);
}

/* malloc'd string attribute, or NULL when absent or not a string. */
static char *get_str_attr(hid_t obj, const char *key)
{
	if (H5Aexists(obj, key) <= 0)
		return NULL;
	hid_t a = H5Aopen(obj, key, H5P_DEFAULT);
	hid_t ft = H5Aget_type(a);
	char *out = NULL;
	/* One string (an array of them is not ours: treated as absent), fixed-
	 * length (as mtrain writes) or variable-length (as h5py does). */
	hid_t sp = H5Aget_space(a);
	int one = H5Sget_simple_extent_npoints(sp) == 1;
	H5Sclose(sp);
	int is_str = one && H5Tget_class(ft) == H5T_STRING;
	if (is_str && H5Tis_variable_str(ft) > 0) {
		hid_t mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, H5T_VARIABLE);
		H5Tset_cset(mt, H5Tget_cset(ft));
		char *vl = NULL;
		if (H5Aread(a, mt, &vl) >= 0 && vl)
			out = xstrdup(vl);
		if (vl)
			H5free_memory(vl);
		H5Tclose(mt);
	} else if (is_str) {
		size_t n = H5Tget_size(ft);
		hid_t mt = H5Tcopy(H5T_C_S1);
		H5Tset_size(mt, n + 1);
		H5Tset_cset(mt, H5Tget_cset(ft));
		out = xcalloc(n + 1, 1);
		if (H5Aread(a, mt, out) < 0) {
			free(out);
			out = NULL;
		}
		H5Tclose(mt);
	}
	H5Tclose(ft);
	H5Aclose(a);
	return out;
}

static int get_i64_attr(hid_t obj, const char *key, int64_t *value)
{
	if (H5Aexists(obj, key) <= 0)
		return -1;
	hid_t a = H5Aopen(obj, key, H5P_DEFAULT), sp = H5Aget_space(a);
	/* One number: an array would not fit in *value. */
	herr_t r = H5Sget_simple_extent_npoints(sp) == 1 ? H5Aread(a, H5T_NATIVE_INT64, value) : -1;
	H5Sclose(sp);
	H5Aclose(a);
	return r < 0 ? -1 : 0;
}

/* A chunked, Fletcher32-checked dataset named by its logical name. 0, or
 * -1 when HDF5 could not write it. */
static int write_var(hid_t file, const char *name, hid_t type, int nd,
		     const hsize_t *dims, const void *data)
{
	char path[CKPT_NAME_LEN];
	file_path_of(name, path, sizeof(path));
	hsize_t chunk[2] = {dims[0], nd > 1 ? dims[1] : 1};
	/* Chunks of at most about 1 MiB. */
	size_t row = nd > 1 ? dims[1] : 1;
	if (chunk[0] * row > (1u << 18))
		chunk[0] = (1u << 18) / row ? (1u << 18) / row : 1;
	hid_t space = H5Screate_simple(nd, dims, NULL);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	H5_CHECK(H5Pset_chunk(dcpl, nd, chunk));
	H5_CHECK(H5Pset_fletcher32(dcpl));
	H5_CHECK(H5Pset_obj_track_times(dcpl, 0));
	hid_t ds = H5Dcreate2(file, path, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	int rc = ds < 0 || H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0 ||
			 put_str_attr(ds, "name", name)
		     ? -1
		     : 0;
	if (ds >= 0)
		H5Dclose(ds);
	H5Pclose(dcpl);
	H5Sclose(space);
	return rc;
}

/* The root attributes besides format and format_version, as struct ckpt_meta
 * holds them: long, int, uint64_t (stored as its int64 bits), char[size]
 * ("?" when absent) or malloc'd key = value lines (NULL when absent). On file
 * a number is an int64 scalar, a string a fixed-length C string. A file of
 * format version v must hold a field only if it is required and since <= v;
 * otherwise a missing field reads as its default, so a field added later is
 * one row and older files still read. */
enum field_type { F_LONG, F_INT, F_U64, F_CHARS, F_TEXT };

struct field {
	const char *key;     /* attribute name, e.g. "global_step" */
	enum field_type type;
	size_t offset, size; /* of its member of struct ckpt_meta */
	int required, since; /* since: the format version that added it, e.g. 1 */
};

#define FIELD(key, type, member, required, since)                       \
	{key, type, offsetof(struct ckpt_meta, member),                 \
	 sizeof(((struct ckpt_meta *)0)->member), required, since}
/* In the order ckpt_write writes them and inspect prints them. */
static const struct field fields[] = {
	FIELD("global_step", F_LONG, global_step, 1, 1),
	FIELD("epoch", F_LONG, epoch, 1, 1),
	FIELD("step_in_epoch", F_LONG, step_in_epoch, 1, 1),
	FIELD("batch", F_INT, batch, 1, 1),
	FIELD("seed", F_U64, seed, 1, 1),
	FIELD("world_size", F_INT, world_size, 1, 1),
	FIELD("input_dim", F_INT, input_dim, 1, 1),
	FIELD("classes", F_INT, classes, 1, 1),
	FIELD("train_rows", F_LONG, train_rows, 1, 1),
	FIELD("config", F_TEXT, config, 0, 1),
	FIELD("created", F_CHARS, created, 0, 1),
	FIELD("mtrain_version", F_CHARS, version, 0, 1),
};
#define N_FIELDS (sizeof(fields) / sizeof(fields[0]))

/* A number field of m as stored. */
static int64_t field_num(const struct field *f, const struct ckpt_meta *m)
{
	const char *p = (const char *)m + f->offset;
	if (f->type == F_U64)
		return (int64_t)*(const uint64_t *)p;
	return f->type == F_INT ? *(const int *)p : *(const long *)p;
}

/* A string field of m: the text, NULL for an absent F_TEXT. */
static const char *field_str(const struct field *f, const struct ckpt_meta *m)
{
	const char *p = (const char *)m + f->offset;
	return f->type == F_CHARS ? p : *(char *const *)p;
}

/* Reads f into a zeroed m: 0, or -1 when missing or unreadable (m then holds
 * the default). */
static int field_get(hid_t file, const struct field *f, struct ckpt_meta *m)
{
	char *p = (char *)m + f->offset;
	int64_t v;
	if (f->type == F_TEXT) {
		*(char **)p = get_str_attr(file, f->key);
		return *(char **)p ? 0 : -1;
	}
	if (f->type == F_CHARS) {
		char *s = get_str_attr(file, f->key);
		int rc = s ? 0 : -1;
		snprintf(p, f->size, "%s", s ? s : "?");
		free(s);
		return rc;
	}
	if (get_i64_attr(file, f->key, &v))
		return -1;
	if (f->type == F_LONG)
		*(long *)p = (long)v;
	else if (f->type == F_INT)
		*(int *)p = (int)v;
	else
		*(uint64_t *)p = (uint64_t)v;
	return 0;
}

/* Writes f of m: 0, or -1 when HDF5 failed. */
static int field_put(hid_t file, const struct field *f, const struct ckpt_meta *m)
{
	const char *s = f->type >= F_CHARS ? field_str(f, m) : NULL;
	if (f->type >= F_CHARS)
		return put_str_attr(file, f->key, s ? s : "");
	return put_i64_attr(file, f->key, field_num(f, m));
}

static int fsync_path(const char *path, int dir)
{
	int fd = open(path, dir ? O_RDONLY | O_DIRECTORY : O_RDONLY);
	if (fd < 0)
		return -1;
	int rc = fsync(fd);
	close(fd);
	return rc;
}

int ckpt_write(const char *dir, const struct ckpt_var *vars, int n,
	       const struct ckpt_meta *meta)
{
	char final[1100], tmp[1200];
	ckpt_path(dir, meta->global_step, final, sizeof(final));
	snprintf(tmp, sizeof(tmp), "%s/.ckpt-%08ld.h5.tmp", dir, meta->global_step);
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	hid_t fcpl = H5Pcreate(H5P_FILE_CREATE);
	H5_CHECK(H5Pset_obj_track_times(fcpl, 0));
	hid_t file = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
	H5Pclose(fcpl);
	if (file < 0) {
		log_error("cannot write checkpoint %s: %s", final, strerror(errno ? errno : EIO));
		unlink(tmp);
		return -1;
	}
	int bad = 0;
	errno = 0;
	for (int i = 0; i < n && !bad; i++) {
		hsize_t dims[2] = {(hsize_t)vars[i].shape[0], (hsize_t)vars[i].shape[1]};
		bad = write_var(file, vars[i].name, H5T_NATIVE_FLOAT, vars[i].ndim, dims,
				vars[i].data);
	}
	hsize_t one = 1;
	int64_t step = meta->global_step;
	bad = bad || write_var(file, "global_step", H5T_NATIVE_INT64, 1, &one, &step);
	bad = bad || put_str_attr(file, "format", CKPT_FORMAT);
	bad = bad || put_i64_attr(file, "format_version", CKPT_FORMAT_VERSION);
	for (size_t i = 0; i < N_FIELDS; i++)
		bad = bad || field_put(file, &fields[i], meta);
	/* errno is the disk's reason when HDF5 failed; keep it past the close. */
	int why = bad ? (errno ? errno : EIO) : 0;
	if (H5Fclose(file) < 0 || bad || fsync_path(tmp, 0) || rename(tmp, final) ||
	    fsync_path(dir, 1)) {
		if (why)
			errno = why;
		log_error("cannot write checkpoint %s: %s", final, strerror(errno));
		unlink(tmp);
		return -1;
	}
	return 0;
}

/* Datasets of a checkpoint's root, by logical name. */
struct entry {
	char name[CKPT_NAME_LEN];
	char path[CKPT_NAME_LEN];
	int ndim;             /* as stored; only 1 and 2 pass open_ckpt */
	long shape[2];
	char dtype[16];       /* e.g. "float32", "int64", "string" */
	int used;
};

/* A short name of an HDF5 type: float32, int64, uint8, string, ... */
static void dtype_text(hid_t type, char *buf, size_t len)
{
	size_t bits = 8 * H5Tget_size(type);
	switch (H5Tget_class(type)) {
	case H5T_FLOAT: snprintf(buf, len, "float%zu", bits); break;
	case H5T_INTEGER:
		snprintf(buf, len, "%sint%zu", H5Tget_sign(type) == H5T_SGN_NONE ? "u" : "", bits);
		break;
	case H5T_STRING: snprintf(buf, len, "string"); break;
	default: snprintf(buf, len, "non-numeric"); break;
	}
}

struct listing {
	struct entry *e;
	int n, cap;
};

static herr_t collect(hid_t group, const char *path, const H5L_info_t *info, void *arg)
{
	struct listing *l = arg;
	H5O_info_t oi;
	if (H5Oget_info_by_name(group, path, &oi, H5P_DEFAULT) < 0 || oi.type != H5O_TYPE_DATASET)
		return 0;
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		struct entry *grown = realloc(l->e, sizeof(*l->e) * l->cap);
		ALLOC_CHECK(grown);
		l->e = grown;
	}
	struct entry *e = &l->e[l->n];
	memset(e, 0, sizeof(*e));
	hid_t ds = H5Dopen2(group, path, H5P_DEFAULT);
	if (ds < 0)
		return -1;
	char *name = get_str_attr(ds, "name");
	snprintf(e->name, sizeof(e->name), "%s", name ? name : path);
	free(name);
	snprintf(e->path, sizeof(e->path), "%s", path);
	hid_t space = H5Dget_space(ds), type = H5Dget_type(ds);
	hsize_t dims[H5S_MAX_RANK] = {0};
	e->ndim = H5Sget_simple_extent_ndims(space);
	H5Sget_simple_extent_dims(space, dims, NULL);
	e->shape[0] = (long)dims[0];
	e->shape[1] = (long)dims[1];
	dtype_text(type, e->dtype, sizeof(e->dtype));
	H5Tclose(type);
	H5Sclose(space);
	H5Dclose(ds);
	l->n++;
	return 0;
}

static void shape_text(int ndim, const long *shape, char *buf, size_t len)
{
	if (ndim == 1)
		snprintf(buf, len, "[%ld]", shape[0]);
	else if (ndim == 2)
		snprintf(buf, len, "[%ld,%ld]", shape[0], shape[1]);
	else
		snprintf(buf, len, "[]");
}

/* Opens a checkpoint and lists its datasets; -2 (user_error) if it cannot. */
static hid_t open_ckpt(const char *path, struct listing *l)
{
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	memset(l, 0, sizeof(*l));
	struct stat st;
	if (access(path, R_OK) || stat(path, &st)) {
		user_error("%s: cannot open checkpoint: %s", path, strerror(errno));
		return -2;
	}
	if (S_ISDIR(st.st_mode)) {
		user_error("%s: is a folder; name a checkpoint file in it, or use --resume auto "
			   "with --ckpt-dir %s", path, path);
		return -2;
	}
	hid_t file = H5Fis_hdf5(path) > 0 ? H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
	if (file < 0) {
		user_error("%s: not a readable HDF5 file (truncated or corrupt)", path);
		return -2;
	}
	char *format = get_str_attr(file, "format");
	int ok = format && !strcmp(format, CKPT_FORMAT);
	free(format);
	if (!ok) {
		user_error("%s: not an mtrain checkpoint (no format = %s attribute)", path, CKPT_FORMAT);
		H5Fclose(file);
		return -2;
	}
	hsize_t idx = 0;
	if (H5Literate(file, H5_INDEX_NAME, H5_ITER_INC, &idx, collect, l) < 0) {
		user_error("%s: cannot list the checkpoint's datasets (corrupt?)", path);
		free(l->e);
		H5Fclose(file);
		return -2;
	}
	/* Every variable float32 of rank 1 or 2 (global_step an int64 [1]), and
	 * each logical name once: anything else was not written by mtrain. */
	for (int i = 0; i < l->n; i++) {
		const struct entry *e = &l->e[i];
		int is_step = !strcmp(e->name, "global_step");
		const char *want = is_step ? "int64" : "float32";
		int bad_rank = is_step ? e->ndim != 1 || e->shape[0] != 1 : e->ndim < 1 || e->ndim > 2;
		const char *dup = NULL;
		for (int j = 0; j < i && !dup; j++)
			if (!strcmp(l->e[j].name, e->name))
				dup = l->e[j].path;
		if (dup)
			user_error("%s: %s is stored twice (as %s and %s)", path, e->name, dup, e->path);
		else if (strcmp(e->dtype, want))
			user_error("%s: %s is %s; expected %s", path, e->name, e->dtype, want);
		else if (bad_rank)
			user_error("%s: %s has %d dimensions; expected %s", path, e->name, e->ndim,
				   is_step ? "shape [1]" : "1 or 2");
		else
			continue;
		free(l->e);
		H5Fclose(file);
		return -2;
	}
	return file;
}

/* Reads the root attributes into a zeroed m: 0, or -1 with a user_error
 * (no format_version, one this mtrain does not read, a needed field missing). */
static int read_meta(hid_t file, const char *path, struct ckpt_meta *m)
{
	int64_t version;
	if (get_i64_attr(file, "format_version", &version))
		return user_error("%s: root attribute '%s' missing or unreadable", path, "format_version");
	if (version < 1 || version > CKPT_FORMAT_VERSION)
		return user_error("%s: format version %lld; this mtrain reads versions 1 to %d", path,
				  (long long)version, CKPT_FORMAT_VERSION);
	m->format_version = (int)version;
	for (size_t i = 0; i < N_FIELDS; i++)
		if (field_get(file, &fields[i], m) && fields[i].required && fields[i].since <= version)
			return user_error("%s: root attribute '%s' missing or unreadable", path,
					  fields[i].key);
	return 0;
}

/* open_ckpt, then read_meta into a zeroed meta: the file, or -2 (user
 * error) with nothing left open. */
static hid_t open_with_meta(const char *path, struct listing *l, struct ckpt_meta *meta)
{
	memset(meta, 0, sizeof(*meta));
	hid_t file = open_ckpt(path, l);
	if (file < 0)
		return -2;
	if (read_meta(file, path, meta)) {
		free(meta->config);
		meta->config = NULL;
		free(l->e);
		H5Fclose(file);
		return -2;
	}
	return file;
}

/* Appends one mismatch line to the report. */
static void report(char *buf, size_t len, int *count, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void report(char *buf, size_t len, int *count, const char *fmt, ...)
{
	size_t used = strlen(buf);
	if (*count && used + 16 < len)
		used += snprintf(buf + used, len - used, "\nmtrain: error: ");
	va_list ap;
	va_start(ap, fmt);
	if (used < len)
		vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
	(*count)++;
}

int ckpt_read(const char *path, struct ckpt_var *vars, int n, int allow_extra,
	      struct ckpt_meta *meta)
{
	struct listing l;
	hid_t file = open_with_meta(path, &l, meta);
	if (file < 0)
		return -2;
	int rc = 0;
	char msg[16000] = "";
	int bad = 0;
	for (int i = 0; !rc && i < n; i++) {
		struct entry *e = NULL;
		for (int j = 0; j < l.n && !e; j++)
			if (!strcmp(l.e[j].name, vars[i].name))
				e = &l.e[j];
		char want[64], have[64];
		shape_text(vars[i].ndim, vars[i].shape, want, sizeof(want));
		if (!e) {
			report(msg, sizeof(msg), &bad, "%s: %s: checkpoint missing vs model %s", path,
			       vars[i].name, want);
			continue;
		}
		e->used = 1;
		shape_text(e->ndim, e->shape, have, sizeof(have));
		if (strcmp(want, have)) {
			report(msg, sizeof(msg), &bad, "%s: %s: checkpoint %s vs model %s", path,
			       vars[i].name, have, want);
			continue;
		}
		hid_t ds = H5Dopen2(file, e->path, H5P_DEFAULT);
		if (ds < 0 || H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT,
				      vars[i].data) < 0) {
			user_error("%s: %s fails its checksum or cannot be read (corrupt)", path,
				   vars[i].name);
			rc = -2;
		}
		if (ds >= 0)
			H5Dclose(ds);
	}
	for (int j = 0; !rc && !allow_extra && j < l.n; j++) {
		if (l.e[j].used || !strcmp(l.e[j].name, "global_step"))
			continue;
		char have[64];
		shape_text(l.e[j].ndim, l.e[j].shape, have, sizeof(have));
		report(msg, sizeof(msg), &bad, "%s: %s: checkpoint %s vs model missing", path,
		       l.e[j].name, have);
	}
	if (!rc && bad) {
		user_error("%s", msg);
		rc = -1;
	}
	free(l.e);
	H5Fclose(file);
	if (rc) {
		free(meta->config);
		meta->config = NULL;
	}
	return rc;
}

/* The step of a checkpoint's file name "ckpt-<8 or more digits>.h5", or -1. */
static long step_of(const char *file)
{
	if (strncmp(file, "ckpt-", 5))
		return -1;
	const char *p = file + 5;
	size_t digits = strspn(p, "0123456789");
	if (digits < 8 || digits > 18 || strcmp(p + digits, ".h5"))
		return -1;
	return strtol(p, NULL, 10);
}

static int by_step_desc(const void *a, const void *b)
{
	long sa = step_of(strrchr((const char *)a, '/') + 1);
	long sb = step_of(strrchr((const char *)b, '/') + 1);
	return sa < sb ? 1 : sa > sb ? -1 : 0;
}

int ckpt_list(const char *dir, char (*paths)[1024], int max)
{
	DIR *d = opendir(dir);
	if (!d)
		return 0;
	int n = 0;
	struct dirent *ent;
	while ((ent = readdir(d)) && n < max)
		if (step_of(ent->d_name) >= 0)
			snprintf(paths[n++], 1024, "%s/%s", dir, ent->d_name);
	closedir(d);
	qsort(paths, n, sizeof(paths[0]), by_step_desc);
	return n;
}

void ckpt_prune(const char *dir, int keep, long upto)
{
	char (*paths)[1024] = xmalloc(sizeof(*paths) * CKPT_MAX_FILES);
	int n = ckpt_list(dir, paths, CKPT_MAX_FILES), kept = 0;
	for (int i = 0; i < n; i++) {
		if (step_of(strrchr(paths[i], '/') + 1) > upto || kept++ < keep)
			continue;
		if (unlink(paths[i]))
			log_warn("cannot delete old checkpoint %s: %s", paths[i], strerror(errno));
	}
	free(paths);
	/* ".ckpt-<step>.h5.tmp": a write that never reached its rename. */
	DIR *d = opendir(dir);
	struct dirent *ent;
	while (d && (ent = readdir(d))) {
		size_t len = strlen(ent->d_name);
		if (len > 13 && !strncmp(ent->d_name, ".ckpt-", 6) &&
		    !strcmp(ent->d_name + len - 7, ".h5.tmp")) {
			char path[1300];
			snprintf(path, sizeof(path), "%s/%s", dir, ent->d_name);
			unlink(path);
		}
	}
	if (d)
		closedir(d);
}

int ckpt_read_meta(const char *path, struct ckpt_meta *meta)
{
	struct listing l;
	hid_t file = open_with_meta(path, &l, meta);
	if (file < 0)
		return -2;
	free(l.e);
	H5Fclose(file);
	return 0;
}

int ckpt_read_all(const char *path, struct ckpt_var **vars, int *n, struct ckpt_meta *meta)
{
	struct listing l;
	*vars = NULL;
	*n = 0;
	hid_t file = open_with_meta(path, &l, meta);
	if (file < 0)
		return -2;
	int rc = 0;
	struct ckpt_var *v = xcalloc((size_t)l.n + 1, sizeof(*v));
	int count = 0;
	for (int j = 0; !rc && j < l.n; j++) {
		struct entry *e = &l.e[j];
		hid_t ds = H5Dopen2(file, e->path, H5P_DEFAULT);
		hid_t type = H5Dget_type(ds);
		int is_float = H5Tget_class(type) == H5T_FLOAT;
		H5Tclose(type);
		if (is_float) {
			struct ckpt_var *cv = &v[count++];
			snprintf(cv->name, sizeof(cv->name), "%s", e->name);
			cv->ndim = e->ndim;
			cv->shape[0] = e->shape[0];
			cv->shape[1] = e->ndim > 1 ? e->shape[1] : 0;
			cv->data = xmalloc(ckpt_var_cells(cv) * sizeof(float));
			if (H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, cv->data) < 0)
				rc = -2, user_error("%s: %s fails its checksum or cannot be read (corrupt)",
						    path, e->name);
		}
		H5Dclose(ds);
	}
	free(l.e);
	H5Fclose(file);
	if (rc) {
		ckpt_free_vars(v, count);
		free(meta->config);
		meta->config = NULL;
		return rc;
	}
	*vars = v;
	*n = count;
	return 0;
}

void ckpt_free_vars(struct ckpt_var *vars, int n)
{
	for (int i = 0; vars && i < n; i++)
		free(vars[i].data);
	free(vars);
}

/* The file, its format and one "key  value" line per field; a text by its
 * number of lines. */
static void print_meta(FILE *out, const char *path, const struct ckpt_meta *m)
{
	fprintf(out, "%-15s %s\n%-15s %s %d\n", "file", path, "format", CKPT_FORMAT, m->format_version);
	for (size_t i = 0; i < N_FIELDS; i++) {
		const struct field *f = &fields[i];
		const char *s = f->type >= F_CHARS ? field_str(f, m) : NULL;
		long lines = 0;
		for (const char *c = f->type == F_TEXT && s ? s : ""; *c; c++)
			lines += *c == '\n' || c[1] == '\0'; /* a last line without '\n' too */
		if (f->type == F_U64)
			fprintf(out, "%-15s %llu\n", f->key, (unsigned long long)field_num(f, m));
		else if (f->type < F_CHARS)
			fprintf(out, "%-15s %lld\n", f->key, (long long)field_num(f, m));
		else if (f->type == F_TEXT && s)
			fprintf(out, "%-15s %ld lines\n", f->key, lines);
		else
			fprintf(out, "%-15s %s\n", f->key, s ? s : "(absent)");
	}
}

int ckpt_inspect(const char *path, FILE *out)
{
	struct ckpt_var *v;
	struct ckpt_meta m;
	int n;
	if (ckpt_read_all(path, &v, &n, &m))
		return -1;
	print_meta(out, path, &m);
	fprintf(out, "%-44s %-12s %-8s %-16s %12s %12s %12s\n", "name", "shape", "dtype",
		"fnv1a64", "min", "max", "mean");
	for (int j = 0; j < n; j++) {
		size_t count = ckpt_var_cells(&v[j]);
		double mn = INFINITY, mx = -INFINITY, sum = 0;
		for (size_t i = 0; i < count; i++) {
			double x = v[j].data[i];
			mn = x < mn ? x : mn;
			mx = x > mx ? x : mx;
			sum += x;
		}
		char shape[64];
		shape_text(v[j].ndim, v[j].shape, shape, sizeof(shape));
		fprintf(out, "%-44s %-12s %-8s %016llx %12.6g %12.6g %12.6g\n", v[j].name, shape,
			"float32", (unsigned long long)fnv1a64(FNV1A64_INIT, v[j].data, count * sizeof(float)), mn,
			mx, count ? sum / (double)count : 0.0);
	}
	int64_t step = m.global_step;
	fprintf(out, "%-44s %-12s %-8s %016llx %12lld %12lld %12lld\n", "global_step", "[1]", "int64",
		(unsigned long long)fnv1a64(FNV1A64_INIT, &step, sizeof(step)), (long long)step, (long long)step,
		(long long)step);
	ckpt_free_vars(v, n);
	free(m.config);
	return 0;
}
