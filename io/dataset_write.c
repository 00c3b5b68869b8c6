/* Writing an HDF5 data file (dataset_write): what the importers call. */
#include "dataset.h"
#include "dataset_io.h"
#include "log.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Stored whole and uncompressed (contiguous): a row is read by offset,
 * with one pread, from the page cache (dataset_bytes.c). attr, when not
 * NULL, is the dataset's integer attribute of that name, *value. 0, or -1
 * when HDF5 failed (on a new file: the disk did, errno says why). A small
 * dataset's bytes wait in HDF5's sieve buffer until its close, so the
 * close is where the disk may fail too. */
static int write_dataset(hid_t file, const char *name, hid_t type, int nd, const hsize_t *dims,
			 const void *data, const char *attr, const int *value)
{
	hid_t space = H5Screate_simple(nd, dims, NULL);
	hid_t ds = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	H5Sclose(space);
	if (ds < 0)
		return -1;
	int rc = H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0 ? -1 : 0;
	if (!rc && attr) {
		hid_t as = H5Screate(H5S_SCALAR);
		hid_t a = H5Acreate2(ds, attr, H5T_NATIVE_INT, as, H5P_DEFAULT, H5P_DEFAULT);
		rc = a < 0 || H5Awrite(a, H5T_NATIVE_INT, value) < 0 || H5Aclose(a) < 0 ? -1 : 0;
		H5Sclose(as);
	}
	return H5Dclose(ds) < 0 ? -1 : rc;
}

/* Dataset class_names [k] of variable-length UTF-8 strings. 0 or -1. */
static int write_class_names(hid_t file, char *const *names, int k)
{
	hid_t t = H5Tcopy(H5T_C_S1);
	H5Tset_size(t, H5T_VARIABLE);
	H5Tset_cset(t, H5T_CSET_UTF8);
	hsize_t dims[1] = {(hsize_t)k};
	int rc = write_dataset(file, "class_names", t, 1, dims, names, NULL, NULL);
	H5Tclose(t);
	return rc;
}

int dataset_write_named(const char *path, const uint8_t *x8, const float *xf, const int32_t *y,
			long n, const int row[3], int classes, char *const *names)
{
	char tmp[FILE_PATH_LEN];
	snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
	H5Eset_auto2(H5E_DEFAULT, NULL, NULL); /* our own lines, not HDF5's stack */
	hid_t file = H5Fcreate(tmp, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
	if (file < 0)
		return user_error("%s: cannot create data file: %s", path,
				  strerror(errno ? errno : EIO));
	/* A flat row is written [n, D], an image [n, H, W, C]. */
	int flat = dataset_row_is_flat(row);
	hsize_t xd[4] = {(hsize_t)n, (hsize_t)row[0], (hsize_t)row[1], (hsize_t)row[2]};
	hsize_t yd[1] = {(hsize_t)n};
	if (flat)
		xd[1] = (hsize_t)row[2];
	errno = 0;
	int bad = write_dataset(file, "x", x8 ? H5T_NATIVE_UINT8 : H5T_NATIVE_FLOAT, flat ? 2 : 4,
				xd, x8 ? (const void *)x8 : (const void *)xf, NULL, NULL) ||
		  write_dataset(file, "y", H5T_NATIVE_INT32, 1, yd, y, "num_classes", &classes) ||
		  (names && write_class_names(file, names, classes));
	/* errno is the disk's reason when HDF5 failed; keep it past the close. */
	int why = bad ? (errno ? errno : EIO) : 0;
	if (H5Fclose(file) < 0 || bad || rename(tmp, path)) {
		why = why ? why : errno ? errno : EIO;
		unlink(tmp);
		return user_error("%s: cannot write data file: %s", path, strerror(why));
	}
	return 0;
}

int dataset_write(const char *path, const uint8_t *x8, const float *xf, const int32_t *y,
		  long n, const int row[3], int classes)
{
	return dataset_write_named(path, x8, xf, y, n, row, classes, NULL);
}
