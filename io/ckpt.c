/* HDF5 checkpoints of ckpt.h. */
#include "ckpt.h"
#include "sandbox.h"
#include "check.h"
#include "ckpt_meta.h"
#include "h5attr.h"
#include "hash.h"
#include "log.h"

#include <errno.h>
#include <stdint.h>
#include <limits.h>
#include <fcntl.h>
#include <hdf5.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The in-file path of a logical name: '/' would make groups. */
static void file_path_of(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s", name);
	for (char *p = buf; *p; p++)
		if (*p == '/')
			*p = '.';
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
	size_t bytes = H5Tget_size(type) * (size_t)dims[0] * (nd > 1 ? (size_t)dims[1] : 1);
	int64_t digest = (int64_t)fnv1a64(FNV1A64_INIT, data, bytes);
	int rc = ds < 0 || H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0 ||
			 h5attr_put_str(ds, "name", name) ||
			 h5attr_put_i64(ds, CKPT_DIGEST_ATTR, digest)
		     ? -1
		     : 0;
	if (ds >= 0)
		H5Dclose(ds);
	H5Pclose(dcpl);
	H5Sclose(space);
	return rc;
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
	char final[FILE_PATH_LEN], tmp[FILE_PATH_LEN];
	ckpt_path(dir, meta->global_step, final, sizeof(final));
	/* Unique to this process: no other job's write can collide with it. */
	snprintf(tmp, sizeof(tmp), "%s/.ckpt-%08ld.h5.%ld.tmp", dir, meta->global_step,
		 (long)getpid());
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
	hid_t fcpl = H5Pcreate(H5P_FILE_CREATE), fapl = H5Pcreate(H5P_FILE_ACCESS);
	H5_CHECK(H5Pset_obj_track_times(fcpl, 0));
	/* HDF5 1.10's file format: superblock, object headers and chunk
	 * indexes carry checksums, so metadata corruption is detected too. */
	H5_CHECK(H5Pset_libver_bounds(fapl, H5F_LIBVER_V110, H5F_LIBVER_LATEST));
	hid_t file = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl, fapl);
	H5Pclose(fcpl);
	H5Pclose(fapl);
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
	bad = bad || ckpt_meta_write(file, meta);
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
	char dtype[48];       /* e.g. "float32", "int64", "string" */
	int fits;             /* the shape's bytes fit in memory's sizes and
			       * the file holds them all */
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
	int64_t digest = 0;
	e->has_digest = h5attr_get_i64(ds, CKPT_DIGEST_ATTR, &digest) == 0;
	e->digest = (uint64_t)digest;
	char *name = h5attr_get_str(ds, "name");
	snprintf(e->name, sizeof(e->name), "%s", name ? name : path);
	free(name);
	snprintf(e->path, sizeof(e->path), "%s", path);
	hid_t space = H5Dget_space(ds), type = H5Dget_type(ds);
	hsize_t dims[H5S_MAX_RANK] = {0};
	e->ndim = H5Sget_simple_extent_ndims(space);
	H5Sget_simple_extent_dims(space, dims, NULL);
	e->shape[0] = (long)dims[0];
	e->shape[1] = (long)dims[1];
	/* mtrain's datasets are stored uncompressed: a file holding fewer
	 * bytes than the shape declares has chunks that were never written
	 * (they would read as zeros) or a forged shape. */
	size_t bytes = H5Tget_size(type);
	e->fits = e->ndim >= 1 && e->ndim <= 2;
	for (int i = 0; e->fits && i < e->ndim; i++) {
		e->fits = dims[i] <= (hsize_t)LONG_MAX && (dims[i] == 0 || bytes <= SIZE_MAX / dims[i]);
		bytes *= e->fits ? dims[i] : 1;
	}
	e->fits = e->fits && H5Dget_storage_size(ds) >= bytes;
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

/* Opens a checkpoint and lists its datasets; RC_CORRUPT (user_error) if it
 * cannot. */
static hid_t open_ckpt(const char *path, struct listing *l)
{
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
	/* Every variable float32 of rank 1 or 2 (global_step an int64 [1]), and
	 * each logical name once: anything else was not written by mtrain. */
	for (int i = 0; i < l->n; i++) {
		const struct entry *e = &l->e[i];
		int is_step = !strcmp(e->name, "global_step");
		const char *want = is_step ? "int64" : "float32";
		int bad_rank = is_step ? e->ndim != 1 || e->shape[0] != 1 : e->ndim < 1 || e->ndim > 2;
		char where[CKPT_NAME_LEN];
		file_path_of(e->name, where, sizeof(where));
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
		else if (strcmp(where, e->path))
			user_error("%s: %s is stored as %s, not where its name puts it (edited or "
				   "corrupt)", path, e->name, e->path);
		else if (!e->fits)
			user_error("%s: %s declares [%lu,%lu] but the file does not hold that many "
				   "values (unwritten chunks or a forged shape: corrupt)", path, e->name,
				   (unsigned long)e->shape[0], (unsigned long)e->shape[1]);
		else
			continue;
		free(l->e);
		H5Fclose(file);
		return RC_CORRUPT;
	}
	return file;
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
	size_t bytes = H5Tget_size(mem) * (size_t)e->shape[0] * (e->ndim > 1 ? (size_t)e->shape[1] : 1);
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

/* open_ckpt, then read_meta into a zeroed meta: the file, or RC_CORRUPT (user
 * error) with nothing left open. */
static hid_t open_with_meta(const char *path, struct listing *l, struct ckpt_meta *meta)
{
	memset(meta, 0, sizeof(*meta));
	hid_t file = open_ckpt(path, l);
	if (file < 0)
		return RC_CORRUPT;
	if (ckpt_meta_read(file, path, meta) || check_step(file, l, path, meta)) {
		free(meta->config);
		meta->config = NULL;
		free(l->e);
		H5Fclose(file);
		return RC_CORRUPT;
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

static int read_here(const char *path, struct ckpt_var *vars, int n, int allow_extra,
		     struct ckpt_meta *meta)
{
	struct listing l;
	hid_t file = open_with_meta(path, &l, meta);
	if (file < 0)
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
	free(l.e);
	H5Fclose(file);
	if (rc) {
		free(meta->config);
		meta->config = NULL;
	}
	return rc;
}

static int read_meta_here(const char *path, struct ckpt_meta *meta)
{
	struct listing l;
	hid_t file = open_with_meta(path, &l, meta);
	if (file < 0)
		return RC_CORRUPT;
	free(l.e);
	H5Fclose(file);
	return 0;
}

static int read_all_here(const char *path, struct ckpt_var **vars, int *n,
			 struct ckpt_meta *meta)
{
	struct listing l;
	*vars = NULL;
	*n = 0;
	hid_t file = open_with_meta(path, &l, meta);
	if (file < 0)
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
		cv->shape[0] = e->shape[0];
		cv->shape[1] = e->ndim > 1 ? e->shape[1] : 0;
		cv->data = xmalloc(ckpt_var_cells(cv) * sizeof(float));
		rc = read_checked(file, e, path, meta->format_version, H5T_NATIVE_FLOAT, cv->data);
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

/* The three readers in a child process (sandbox.h): their arguments, what
 * the child runs, and what it sends back. The parent bounds the sizes it is
 * sent, in case the child's memory was what the file damaged. */
#define SENT_CONFIG_MAX ((size_t)1 << 26)
#define SENT_CELLS_MAX ((size_t)1 << 40)
struct read_args {
	const char *path;
	struct ckpt_var *vars; /* ckpt_read: the caller's variables */
	struct ckpt_var **all; /* ckpt_read_all: the variables found */
	int n, allow_extra;
	struct ckpt_meta *meta;
};

static int read_child(void *arg)
{
	struct read_args *a = arg;
	if (a->all)
		return read_all_here(a->path, a->all, &a->n, a->meta);
	if (a->vars)
		return read_here(a->path, a->vars, a->n, a->allow_extra, a->meta);
	return read_meta_here(a->path, a->meta);
}

/* The root attributes, config last (its length first). */
static void move_meta(struct ckpt_meta *m, struct sandbox_pipe *p)
{
	size_t len = p->sending && m->config ? strlen(m->config) + 1 : 0;
	sandbox_move(p, m, sizeof(*m)); /* the parent's config pointer is set below */
	sandbox_move(p, &len, sizeof(len));
	if (!p->sending) {
		p->failed |= len > SENT_CONFIG_MAX;
		m->config = len && !p->failed ? xmalloc(len) : NULL;
	}
	sandbox_move(p, m->config, m->config ? len : 0);
	if (!p->sending) {
		if (m->config)
			m->config[len - 1] = 0;
		m->created[sizeof(m->created) - 1] = m->version[sizeof(m->version) - 1] = 0;
	}
}

static void move_vars(struct read_args *a, struct sandbox_pipe *p)
{
	if (a->all) {
		sandbox_move(p, &a->n, sizeof(a->n));
		if (!p->sending)
			*a->all = xcalloc((size_t)a->n + 1, sizeof(**a->all));
	}
	struct ckpt_var *v = a->all ? *a->all : a->vars;
	for (int i = 0; i < a->n && !p->failed; i++) {
		if (a->all) {
			float *data = v[i].data;
			sandbox_move(p, &v[i], sizeof(v[i]));
			v[i].data = data; /* NULL in the parent */
			v[i].name[sizeof(v[i].name) - 1] = 0;
			if (!p->sending && !p->failed && v[i].ndim >= 1 && v[i].ndim <= 2 &&
			    v[i].shape[0] >= 0 && v[i].shape[1] >= 0 &&
			    ckpt_var_cells(&v[i]) <= SENT_CELLS_MAX)
				v[i].data = xmalloc(ckpt_var_cells(&v[i]) * sizeof(float));
			p->failed |= !v[i].data;
		}
		sandbox_move(p, v[i].data, p->failed ? 0 : ckpt_var_cells(&v[i]) * sizeof(float));
	}
}

static void read_move(void *arg, struct sandbox_pipe *p)
{
	struct read_args *a = arg;
	if (!p->sending) {
		free(a->meta->config); /* none: the parent's meta is zeroed */
		a->meta->config = NULL;
	}
	move_meta(a->meta, p);
	move_vars(a, p);
}

/* The parent's side of the three readers: a failure leaves nothing held. */
static int read_sandboxed(struct read_args *a)
{
	memset(a->meta, 0, sizeof(*a->meta));
	int rc = sandbox_read(a->path, read_child, read_move, a);
	if (rc) {
		if (a->all) {
			ckpt_free_vars(*a->all, a->n);
			*a->all = NULL;
			a->n = 0;
		}
		free(a->meta->config);
		memset(a->meta, 0, sizeof(*a->meta));
	}
	return rc;
}

int ckpt_read(const char *path, struct ckpt_var *vars, int n, int allow_extra,
	      struct ckpt_meta *meta)
{
	struct read_args a = {path, vars, NULL, n, allow_extra, meta};
	return read_sandboxed(&a);
}

int ckpt_read_meta(const char *path, struct ckpt_meta *meta)
{
	struct read_args a = {.path = path, .meta = meta};
	return read_sandboxed(&a);
}

int ckpt_read_all(const char *path, struct ckpt_var **vars, int *n, struct ckpt_meta *meta)
{
	struct read_args a = {.path = path, .all = vars, .meta = meta};
	*vars = NULL;
	int rc = read_sandboxed(&a);
	*n = a.n;
	return rc;
}

void ckpt_free_vars(struct ckpt_var *vars, int n)
{
	for (int i = 0; vars && i < n; i++)
		free(vars[i].data);
	free(vars);
}

/* One variable's figures for inspect. */
struct var_stats {
	char shape[64];  /* e.g. "[784,256]" */
	uint64_t fnv;    /* FNV-1a 64 of its bytes */
	double min, max, mean;
};

static struct var_stats stats_of(const struct ckpt_var *v)
{
	struct var_stats st = {.min = INFINITY, .max = -INFINITY};
	size_t count = ckpt_var_cells(v);
	double sum = 0;
	for (size_t i = 0; i < count; i++) {
		double x = v->data[i];
		st.min = x < st.min ? x : st.min;
		st.max = x > st.max ? x : st.max;
		sum += x;
	}
	st.mean = count ? sum / (double)count : 0.0;
	st.fnv = fnv1a64(FNV1A64_INIT, v->data, count * sizeof(float));
	shape_text(v->ndim, v->shape, st.shape, sizeof(st.shape));
	return st;
}

static void print_text(FILE *out, const char *path, const struct ckpt_meta *m,
		       const struct ckpt_var *v, int n)
{
	ckpt_meta_print(out, path, m);
	fprintf(out, "%-44s %-12s %-8s %-16s %12s %12s %12s\n", "name", "shape", "dtype",
		"fnv1a64", "min", "max", "mean");
	for (int j = 0; j < n; j++) {
		struct var_stats st = stats_of(&v[j]);
		fprintf(out, "%-44s %-12s %-8s %016llx %12.6g %12.6g %12.6g\n", v[j].name, st.shape,
			"float32", (unsigned long long)st.fnv, st.min, st.max, st.mean);
	}
	int64_t step = m->global_step;
	fprintf(out, "%-44s %-12s %-8s %016llx %12lld %12lld %12lld\n", "global_step", "[1]",
		"int64", (unsigned long long)fnv1a64(FNV1A64_INIT, &step, sizeof(step)),
		(long long)step, (long long)step, (long long)step);
}

/* The same facts as one JSON object, for scripts. */
static void print_json(FILE *out, const char *path, const struct ckpt_meta *m,
		       const struct ckpt_var *v, int n)
{
	fputc('{', out);
	ckpt_meta_print_json(out, path, m);
	fputs("\"variables\":[", out);
	for (int j = 0; j < n; j++) {
		struct var_stats st = stats_of(&v[j]);
		char name[6 * CKPT_NAME_LEN], num[3][32];
		fprintf(out, "%s{\"name\":\"%s\",\"shape\":[%ld", j ? "," : "",
			json_escape(v[j].name, name, sizeof(name)), v[j].shape[0]);
		if (v[j].ndim > 1)
			fprintf(out, ",%ld", v[j].shape[1]);
		fprintf(out, "],\"dtype\":\"float32\",\"fnv1a64\":\"%016llx\",\"min\":%s,"
			"\"max\":%s,\"mean\":%s}", (unsigned long long)st.fnv,
			json_num(st.min, num[0], 32), json_num(st.max, num[1], 32),
			json_num(st.mean, num[2], 32));
	}
	fputs("]}\n", out);
}

int ckpt_inspect(const char *path, int json, FILE *out)
{
	struct ckpt_var *v;
	struct ckpt_meta m;
	int n;
	if (ckpt_read_all(path, &v, &n, &m))
		return -1;
	if (json)
		print_json(out, path, &m, v, n);
	else
		print_text(out, path, &m, v, n);
	ckpt_free_vars(v, n);
	free(m.config);
	return 0;
}
