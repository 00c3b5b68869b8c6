/* Scalar HDF5 attributes, as mtrain writes them (int64 numbers and
 * fixed-length C strings) and as other writers may (h5py's variable-length
 * strings). A value of the wrong class or an array is treated as absent. */
#pragma once
#include <hdf5.h>
#include <stdint.h>

/* Writers: 0, or -1 when HDF5 failed (on a sound file: the disk did). */
int h5attr_put_str(hid_t obj, const char *key, const char *value);
int h5attr_put_i64(hid_t obj, const char *key, int64_t value);
/* The string attribute key of obj, malloc'd, or NULL when absent or not
 * one string. */
char *h5attr_get_str(hid_t obj, const char *key);
/* 0 with *value, or -1 when key is absent or not one integer. */
int h5attr_get_i64(hid_t obj, const char *key, int64_t *value);
