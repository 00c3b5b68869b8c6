/* Writing an HDF5 data file (dataset_write): what the importers call. */
#include "dataset.h"
#include "dataset_io.h"
#include "check.h"
#include "log.h"

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Stored whole and uncompressed (contiguous): a row is read by offset,
 * with one pread, from the page cache (dataset_stream.c). */
static hid_t write_dataset(hid_t file, const char *name, hid_t type, int nd,
			   const hsize_t *dims, const void *data)
{
	hid_t space = H5Screate_simple(nd, dims, NULL);
	hid_t ds = H5Dcreate2(file, name, type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
	H5_CHECK(ds);
	H5_CHECK(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
	H5Sclose(space);
	return ds;
}

int dataset_write(const char *path, const uint8_t *x8, const float *xf,
		  const int32_t *y, long n, const int row[3], int classes)
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
	hid_t xs = write_dataset(file, "x", x8 ? H5T_NATIVE_UINT8 : H5T_NATIVE_FLOAT, flat ? 2 : 4, xd,
				 x8 ? (const void *)x8 : (const void *)xf);
	hid_t ys = write_dataset(file, "y", H5T_NATIVE_INT32, 1, yd, y);
	hid_t as = H5Screate(H5S_SCALAR);
	hid_t a = H5Acreate2(ys, "num_classes", H5T_NATIVE_INT, as, H5P_DEFAULT, H5P_DEFAULT);
	H5_CHECK(H5Awrite(a, H5T_NATIVE_INT, &classes));
	H5Aclose(a);
	H5Sclose(as);
	H5Dclose(xs);
	H5Dclose(ys);
	if (H5Fclose(file) < 0 || rename(tmp, path)) {
		unlink(tmp);
		return user_error("%s: cannot write data file: %s", path, strerror(errno));
	}
	return 0;
}
