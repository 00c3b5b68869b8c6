/* Writing a checkpoint (ckpt_write of ckpt.h): every variable as a
 * chunked, checksummed dataset with its digest, the root attributes, under a
 * temporary name that is fsynced and renamed into place. */
#include "ckpt.h"
#include "check.h"
#include "ckpt_file.h"
#include "ckpt_meta.h"
#include "h5attr.h"
#include "hash.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <hdf5.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

void ckpt_file_path_of(const char *name, char *buf, size_t len)
{
	snprintf(buf, len, "%s", name);
	for (char *p = buf; *p; p++)
		if (*p == '/')
			*p = '.';
}

/* A chunked, Fletcher32-checked dataset of shape dims[0..nd) named by its
 * logical name. 0, or -1 when HDF5 could not write it. */
static int write_var(hid_t file, const char *name, hid_t type, int nd,
		     const hsize_t *dims, const void *data)
{
	char path[CKPT_NAME_LEN];
	ckpt_file_path_of(name, path, sizeof(path));
	/* Chunks of whole rows (all but the first dimension), at most about
	 * 1 MiB of them. */
	hsize_t chunk[SHAPE_MAX_RANK], row = 1;
	for (int i = 0; i < nd; i++) {
		chunk[i] = dims[i];
		row *= i ? dims[i] : 1;
	}
	if (chunk[0] * row > (1u << 18))
		chunk[0] = (1u << 18) / row ? (1u << 18) / row : 1;
	hid_t space = H5Screate_simple(nd, dims, NULL);
	hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
	H5_CHECK(H5Pset_chunk(dcpl, nd, chunk));
	H5_CHECK(H5Pset_fletcher32(dcpl));
	H5_CHECK(H5Pset_obj_track_times(dcpl, 0));
	hid_t ds = H5Dcreate2(file, path, type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
	size_t bytes = H5Tget_size(type) * (size_t)H5Sget_simple_extent_npoints(space);
	int64_t digest = (int64_t)fnv1a64(FNV1A64_INIT, data, bytes);
	int rc = ds < 0 || H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0 ||
			 h5attr_put_str(ds, "name", name) ||
			 h5attr_put_i64(ds, CKPT_DIGEST_ATTR, digest)
		     ? -1
		     : 0;
	/* Closing flushes the dataset's cached chunks: a full disk may show
	 * only here. */
	if (ds >= 0 && H5Dclose(ds) < 0)
		rc = -1;
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
		hsize_t dims[SHAPE_MAX_RANK];
		for (int k = 0; k < vars[i].ndim; k++)
			dims[k] = (hsize_t)vars[i].shape[k];
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
