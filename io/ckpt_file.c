/* Reading a checkpoint file in this process (ckpt_file.h): listing its
 * datasets, checking each is what mtrain writes, reading the root
 * attributes and the variables against their digests. */
#include "ckpt_file.h"
#include "check.h"
#include "ckpt_meta.h"
#include "h5attr.h"
#include "hash.h"
#include "log.h"

#include <errno.h>
#include <hdf5.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Datasets of a checkpoint's root, by logical name. */
struct entry {
	char name[CKPT_NAME_LEN];
	char path[CKPT_NAME_LEN];
	int ndim;             /* as stored; only 1 to SHAPE_MAX_RANK pass open_ckpt */
	long shape[SHAPE_MAX_RANK]; /* the first SHAPE_MAX_RANK dimensions */
	char dtype[48];       /* e.g. "float32", "int64", "string" */
	int fits;             /* the shape's bytes fit in memory's sizes and
			       * the file holds them all */
	const char *broken;   /* what HDF5 could not read of it, or NULL */
	int has_digest;       /* CKPT_DIGEST_ATTR, required from format 2 */
	uint64_t digest;      /* FNV-1a 64 of the values as written */
	int used;
};

/* A short name of an HDF5 type: float32, int64, uint8, string, ... */
static void dtype_text(hid_t type, char *buf, size_t len)
{
	size_t bits = 8 * H5Tget_size(type);
	H5T_class_t class = H5Tget_class(type);
	/* float32 and int64 only as the IEEE little-endian types mtrain
	 * writes: a damaged datatype message would misread every value. */
	int odd = (class == H5T_FLOAT && bits == 32 && H5Tequal(type, H5T_IEEE_F32LE) <= 0) ||
		  (class == H5T_INTEGER && bits == 64 && H5Tget_sign(type) != H5T_SGN_NONE &&
		   H5Tequal(type, H5T_STD_I64LE) <= 0);
	const char *note = odd ? " (not IEEE little-endian)" : "";
	switch (class) {
	case H5T_FLOAT: snprintf(buf, len, "float%zu%s", bits, note); break;
	case H5T_INTEGER:
		snprintf(buf, len, "%sint%zu%s", H5Tget_sign(type) == H5T_SGN_NONE ? "u" : "", bits,
			 note);
		break;
	case H5T_STRING: snprintf(buf, len, "string"); break;
	default: snprintf(buf, len, "non-numeric"); break;
	}
}

struct listing {
	struct entry *e;
	int n, cap;
};

/* A new zeroed entry at the end of l. */
static struct entry *grow(struct listing *l)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 64;
		struct entry *grown = realloc(l->e, sizeof(*l->e) * l->cap);
		ALLOC_CHECK(grown);
		l->e = grown;
	}
	struct entry *e = &l->e[l->n++];
	memset(e, 0, sizeof(*e));
	return e;
}

/* Lists the dataset at path, or, when HDF5 cannot read what the file says
 * is there (a damaged object header, datatype, dataspace or name), an
 * entry that says so: the file is corrupt, not short of a variable. */
static herr_t collect(hid_t group, const char *path, const H5L_info_t *info, void *arg)
{
	struct listing *l = arg;
	H5O_info_t oi;
	int known = H5Oget_info_by_name(group, path, &oi, H5P_DEFAULT) >= 0;
	if (known && oi.type != H5O_TYPE_DATASET)
		return 0;
	struct entry *e = grow(l);
	snprintf(e->path, sizeof(e->path), "%s", path);
	snprintf(e->name, sizeof(e->name), "%s", path);
	hid_t ds = known ? H5Dopen2(group, path, H5P_DEFAULT) : -1;
	if (ds < 0) {
		e->broken = "its object header cannot be read";
		return 0;
	}
	int64_t digest = 0;
	e->has_digest = h5attr_get_i64(ds, CKPT_DIGEST_ATTR, &digest) == 0;
	e->digest = (uint64_t)digest;
	char *name = h5attr_get_str(ds, "name");
	if (name)
		snprintf(e->name, sizeof(e->name), "%s", name);
	else if (H5Aexists(ds, "name") != 0)
		e->broken = "its name attribute cannot be read";
	free(name);
	hid_t space = H5Dget_space(ds), type = H5Dget_type(ds);
	hsize_t dims[H5S_MAX_RANK] = {0};
	e->ndim = space < 0 ? -1 : H5Sget_simple_extent_ndims(space);
	if (type < 0 || e->ndim < 0 || H5Sget_simple_extent_dims(space, dims, NULL) < 0)
		e->broken = "its datatype or dataspace cannot be read";
	for (int i = 0; i < SHAPE_MAX_RANK; i++)
		e->shape[i] = (long)dims[i];
	/* mtrain's datasets are stored uncompressed: a file holding fewer
	 * bytes than the shape declares has chunks that were never written
	 * (they would read as zeros) or a forged shape. */
	size_t bytes = type < 0 ? 0 : H5Tget_size(type);
	e->fits = e->ndim >= 1 && e->ndim <= SHAPE_MAX_RANK;
	for (int i = 0; e->fits && i < e->ndim; i++) {
		e->fits = dims[i] <= (hsize_t)LONG_MAX && (dims[i] == 0 || bytes <= SIZE_MAX / dims[i]);
		bytes *= e->fits ? dims[i] : 1;
	}
	e->fits = e->fits && H5Dget_storage_size(ds) >= bytes;
	if (type >= 0)
		dtype_text(type, e->dtype, sizeof(e->dtype));
	if (type >= 0)
		H5Tclose(type);
	if (space >= 0)
		H5Sclose(space);
	H5Dclose(ds);
	return 0;
}

/* Opens a checkpoint into *file and lists its datasets: 0, or RC_CORRUPT
 * (user_error) with nothing left open. */
static int open_ckpt(const char *path, struct listing *l, hid_t *file_out)
{
	*file_out = -1;
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	memset(l, 0, sizeof(*l));
	struct stat st;
	if (access(path, R_OK) || stat(path, &st)) {
		user_error("%s: cannot open checkpoint: %s", path, strerror(errno));
		return RC_CORRUPT;
	}
	if (S_ISDIR(st.st_mode)) {
		user_error("%s: is a folder; name a checkpoint file in it, or use --resume auto "
			   "with --ckpt-dir %s", path, path);
		return RC_CORRUPT;
	}
	if (!S_ISREG(st.st_mode)) { /* a FIFO would block HDF5's open for ever */
		user_error("%s: not a regular file", path);
		return RC_CORRUPT;
	}
	hid_t file = H5Fis_hdf5(path) > 0 ? H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT) : -1;
	if (file < 0) {
		user_error("%s: not a readable HDF5 file (truncated or corrupt)", path);
		return RC_CORRUPT;
	}
	char *format = h5attr_get_str(file, "format");
	int ok = format && !strcmp(format, CKPT_FORMAT);
	free(format);
	if (!ok) {
		user_error("%s: not an mtrain checkpoint (no format = %s attribute)", path, CKPT_FORMAT);
		H5Fclose(file);
		return RC_CORRUPT;
	}
	hsize_t idx = 0;
	if (H5Literate(file, H5_INDEX_NAME, H5_ITER_INC, &idx, collect, l) < 0) {
		user_error("%s: cannot list the checkpoint's datasets (corrupt?)", path);
		free(l->e);
		H5Fclose(file);
		return RC_CORRUPT;
	}
	/* Every variable float32 of rank 1 to SHAPE_MAX_RANK (global_step an
	 * int64 [1]), and
	 * each logical name once: anything else was not written by mtrain. */
	for (int i = 0; i < l->n; i++) {
		const struct entry *e = &l->e[i];
		int is_step = !strcmp(e->name, "global_step");
		const char *want = is_step ? "int64" : "float32";
		int bad_rank = is_step ? e->ndim != 1 || e->shape[0] != 1
				       : e->ndim < 1 || e->ndim > SHAPE_MAX_RANK;
		char where[CKPT_NAME_LEN], declared[96], ranks[16];
		snprintf(ranks, sizeof(ranks), "1 to %d", SHAPE_MAX_RANK);
		ckpt_file_path_of(e->name, where, sizeof(where));
		const char *dup = NULL;
		for (int j = 0; j < i && !dup; j++)
			if (!strcmp(l->e[j].name, e->name))
				dup = l->e[j].path;
		if (e->broken)
			user_error("%s: the dataset %s is damaged: %s (corrupt)", path, e->path,
				   e->broken);
		else if (dup)
			user_error("%s: %s is stored twice (as %s and %s)", path, e->name, dup, e->path);
		else if (strcmp(e->dtype, want))
			user_error("%s: %s is %s; expected %s", path, e->name, e->dtype, want);
		else if (bad_rank)
			user_error("%s: %s has %d dimensions; expected %s", path, e->name, e->ndim,
				   is_step ? "shape [1]" : ranks);
		else if (strcmp(where, e->path))
			user_error("%s: %s is stored as %s, not where its name puts it (edited or "
				   "corrupt)", path, e->name, e->path);
		else if (!e->fits) {
			shape_text(e->ndim, e->shape, declared, sizeof(declared));
			user_error("%s: %s declares %s but the file does not hold that many "
				   "values (unwritten chunks or a forged shape: corrupt)", path, e->name,
				   declared);
		} else
			continue;
		free(l->e);
		H5Fclose(file);
		return RC_CORRUPT;
	}
	*file_out = file;
	return 0;
}

/* Reads e's values (cells of native type mem) into data and checks them
 * against the digest stored with them (required from format 2): 0, or
 * RC_CORRUPT with a user_error naming the variable and the check. */
static int read_checked(hid_t file, const struct entry *e, const char *path, int version,
			hid_t mem, void *data)
{
	hid_t ds = H5Dopen2(file, e->path, H5P_DEFAULT);
	int ok = ds >= 0 && H5Dread(ds, mem, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) >= 0;
	if (ds >= 0)
		H5Dclose(ds);
	if (!ok)
		return user_error("%s: %s fails its checksum or cannot be read (corrupt)", path,
				  e->name), RC_CORRUPT;
	size_t bytes = H5Tget_size(mem) * shape_cells(e->ndim, e->shape);
	if (e->has_digest && fnv1a64(FNV1A64_INIT, data, bytes) != e->digest)
		return user_error("%s: %s does not match its digest (corrupt)", path, e->name),
		       RC_CORRUPT;
	if (!e->has_digest && version >= 2)
		return user_error("%s: %s has no digest (%s); format %d stores one (corrupt)", path,
				  e->name, CKPT_DIGEST_ATTR, version), RC_CORRUPT;
	return 0;
}

/* The global_step dataset must say what the root attribute says. */
static int check_step(hid_t file, const struct listing *l, const char *path,
		      const struct ckpt_meta *m)
{
	for (int i = 0; i < l->n; i++) {
		int64_t step = 0;
		if (strcmp(l->e[i].name, "global_step"))
			continue;
		if (read_checked(file, &l->e[i], path, m->format_version, H5T_NATIVE_INT64, &step))
			return RC_CORRUPT;
		if (step != m->global_step)
			return user_error("%s: the global_step dataset holds %lld, the root attribute "
					  "%ld (edited or corrupt)", path, (long long)step,
					  m->global_step), RC_CORRUPT;
		return 0;
	}
	return m->format_version >= 2 ? user_error("%s: no global_step dataset (corrupt)", path),
	       RC_CORRUPT : 0;
}

/* Closes what open_with_meta opened; with rc nonzero, also drops the
 * meta's text fields. Returns rc. */
static int close_ckpt(hid_t file, struct listing *l, struct ckpt_meta *meta, int rc)
{
	free(l->e);
	l->e = NULL;
	H5Fclose(file);
	if (rc)
		ckpt_meta_free(meta);
	return rc;
}

/* open_ckpt, then the root attributes into a zeroed meta: 0 with *file
 * open, or RC_CORRUPT (user error) with nothing left open. */
static int open_with_meta(const char *path, struct listing *l, struct ckpt_meta *meta,
			  hid_t *file)
{
	memset(meta, 0, sizeof(*meta));
	if (open_ckpt(path, l, file))
		return RC_CORRUPT;
	if (ckpt_meta_read(*file, path, meta) || check_step(*file, l, path, meta))
		return close_ckpt(*file, l, meta, RC_CORRUPT);
	return 0;
}

/* Appends one mismatch line to the report. */
static void report(char *buf, size_t len, int *count, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void report(char *buf, size_t len, int *count, const char *fmt, ...)
{
	size_t used = strlen(buf);
	if (*count && used + 1 < len) {
		buf[used++] = '\n';
		used += log_error_prefix(0, buf + used, len - used);
	}
	va_list ap;
	va_start(ap, fmt);
	if (used < len)
		vsnprintf(buf + used, len - used, fmt, ap);
	va_end(ap);
	(*count)++;
}

int ckpt_read_here(const char *path, struct ckpt_var *vars, int n, int allow_extra,
		   struct ckpt_meta *meta)
{
	struct listing l;
	hid_t file;
	if (open_with_meta(path, &l, meta, &file))
		return RC_CORRUPT;
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
		rc = read_checked(file, e, path, meta->format_version, H5T_NATIVE_FLOAT,
				  vars[i].data);
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
		rc = RC_USER;
	}
	return close_ckpt(file, &l, meta, rc);
}

int ckpt_read_meta_here(const char *path, struct ckpt_meta *meta)
{
	struct listing l;
	hid_t file;
	return open_with_meta(path, &l, meta, &file) ? RC_CORRUPT : close_ckpt(file, &l, meta, 0);
}

int ckpt_read_all_here(const char *path, struct ckpt_var **vars, int *n,
			struct ckpt_meta *meta)
{
	struct listing l;
	*vars = NULL;
	*n = 0;
	hid_t file;
	if (open_with_meta(path, &l, meta, &file))
		return RC_CORRUPT;
	int rc = 0;
	struct ckpt_var *v = xcalloc((size_t)l.n + 1, sizeof(*v));
	int count = 0;
	for (int j = 0; !rc && j < l.n; j++) {
		struct entry *e = &l.e[j];
		if (!strcmp(e->name, "global_step")) /* checked by open_with_meta */
			continue;
		struct ckpt_var *cv = &v[count++];
		snprintf(cv->name, sizeof(cv->name), "%s", e->name);
		cv->ndim = e->ndim;
		memcpy(cv->shape, e->shape, sizeof(cv->shape));
		cv->data = xmalloc(ckpt_var_cells(cv) * sizeof(float));
		rc = read_checked(file, e, path, meta->format_version, H5T_NATIVE_FLOAT, cv->data);
	}
	if (close_ckpt(file, &l, meta, rc)) {
		ckpt_free_vars(v, count);
		return rc;
	}
	*vars = v;
	*n = count;
	return 0;
}
