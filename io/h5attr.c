/* The HDF5 attribute helpers of h5attr.h. */
#include "h5attr.h"
#include "check.h"

#include <stdlib.h>
#include <string.h>

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

int h5attr_put_str(hid_t obj, const char *key, const char *value)
{
	hid_t type = H5Tcopy(H5T_C_S1);
	H5_CHECK(H5Tset_size(type, strlen(value) + 1));
	int rc = put_attr(obj, key, type, value);
	H5Tclose(type);
	return rc;
}

int h5attr_put_i64(hid_t obj, const char *key, int64_t value)
{
	return put_attr(obj, key, H5T_NATIVE_INT64, &value);
}

/* malloc'd string attribute, or NULL when absent or not a string. */
char *h5attr_get_str(hid_t obj, const char *key)
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

int h5attr_get_i64(hid_t obj, const char *key, int64_t *value)
{
	if (H5Aexists(obj, key) <= 0)
		return -1;
	hid_t a = H5Aopen(obj, key, H5P_DEFAULT), sp = H5Aget_space(a), t = H5Aget_type(a);
	/* One integer: an array would not fit in *value. */
	int one = H5Sget_simple_extent_npoints(sp) == 1 && H5Tget_class(t) == H5T_INTEGER;
	herr_t r = one ? H5Aread(a, H5T_NATIVE_INT64, value) : -1;
	H5Tclose(t);
	H5Sclose(sp);
	H5Aclose(a);
	return r < 0 ? -1 : 0;
}
