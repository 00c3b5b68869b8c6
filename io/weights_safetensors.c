/* safetensors files read into float32 tensors (F32, F64, F16, BF16):
 * the header's JSON by jansson, each tensor's bytes checked to tile the
 * data exactly, as the format requires. */
#include "weights_io.h"
#include "check.h"
#include "log.h"

#include <jansson.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* IEEE half and bfloat16 to float. */
static float half_to_float(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	float v = e == 0 ? ldexpf((float)m, -24)
		: e == 31 ? (m ? NAN : INFINITY)
			  : ldexpf((float)(m | 1024), e - 25);
	return h & 0x8000 ? -v : v;
}

static float bf16_to_float(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

/* One tensor of the header: name, {"dtype", "shape", "data_offsets"}; its
 * values read from fd at base + offsets. 0, or -1 with a user_error. */
static int read_safetensor(const char *path, int fd, off_t base, off_t data_len, const char *name,
			   json_t *desc, struct ckpt_var *v, long long span[2])
{
	const char *dtype = json_string_value(json_object_get(desc, "dtype"));
	json_t *shape = json_object_get(desc, "shape"), *off = json_object_get(desc, "data_offsets");
	size_t esize = !dtype ? 0
		       : !strcmp(dtype, "F32") ? 4
		       : !strcmp(dtype, "F64") ? 8
		       : !strcmp(dtype, "F16") || !strcmp(dtype, "BF16") ? 2 : 0;
	if (!dtype || !json_is_array(shape) || !json_is_array(off) || json_array_size(off) != 2)
		return user_error("%s: safetensors header: tensor '%s' lacks dtype, shape or "
				  "data_offsets", path, name);
	if (!esize)
		return user_error("%s: tensor '%s' is %s; mtrain reads F32, F16, BF16 and F64", path,
				  name, dtype);
	if (strlen(name) >= sizeof(v->name))
		return user_error("%s: tensor name '%.40s...' is longer than %zu bytes", path, name,
				  sizeof(v->name) - 1);
	snprintf(v->name, sizeof(v->name), "%s", name);
	size_t rank = json_array_size(shape);
	if (rank > SHAPE_MAX_RANK)
		return user_error("%s: tensor '%s' has rank %zu; mtrain's variables have at most %d",
				  path, name, rank, SHAPE_MAX_RANK);
	v->ndim = rank ? (int)rank : 1;
	v->shape[0] = 1;
	for (size_t i = 0; i < rank; i++) {
		json_t *d = json_array_get(shape, i);
		if (!json_is_integer(d) || json_integer_value(d) < 0 ||
		    json_integer_value(d) > (json_int_t)WEIGHTS_CELLS_MAX)
			return user_error("%s: tensor '%s' has a shape that is not sizes", path, name);
		v->shape[i] = (long)json_integer_value(d);
	}
	if (!json_is_integer(json_array_get(off, 0)) || !json_is_integer(json_array_get(off, 1)))
		return user_error("%s: tensor '%s': data_offsets are not two integers", path, name);
	json_int_t a = json_integer_value(json_array_get(off, 0)),
		   b = json_integer_value(json_array_get(off, 1));
	span[0] = a;
	span[1] = b;
	size_t cells = shape_fits(v->ndim, v->shape, WEIGHTS_CELLS_MAX) ? ckpt_var_cells(v) : 0;
	if (!shape_fits(v->ndim, v->shape, WEIGHTS_CELLS_MAX) || a < 0 || b < a || b > data_len ||
	    (size_t)(b - a) != cells * esize)
		return user_error("%s: tensor '%s': data_offsets [%lld, %lld] do not hold its shape "
				  "in the file's %lld bytes of data", path, name, (long long)a,
				  (long long)b, (long long)data_len);
	unsigned char *raw = xmalloc(cells * esize + 1);
	ssize_t got = pread(fd, raw, cells * esize, base + a);
	if (got != (ssize_t)(cells * esize)) {
		free(raw);
		return user_error("%s: cannot read tensor '%s'", path, name);
	}
	v->data = xmalloc(cells * sizeof(float) + 1);
	for (size_t i = 0; i < cells; i++) {
		uint16_t h;
		double d;
		switch (esize) {
		case 4: memcpy(&v->data[i], raw + 4 * i, 4); break;
		case 8: memcpy(&d, raw + 8 * i, 8); v->data[i] = (float)d; break;
		default:
			memcpy(&h, raw + 2 * i, 2);
			v->data[i] = dtype[0] == 'B' ? bf16_to_float(h) : half_to_float(h);
		}
	}
	free(raw);
	return 0;
}

static int span_cmp(const void *a, const void *b)
{
	const long long *x = a, *y = b;
	return (x[0] > y[0]) - (x[0] < y[0]);
}

int weights_read_safetensors(const char *path, int fd, off_t size, struct tensors *t)
{
	uint64_t hlen;
	if (pread(fd, &hlen, 8, 0) != 8 || hlen > SAFETENSORS_HEADER_MAX || (off_t)hlen > size - 8)
		return user_error("%s: safetensors header length does not fit the file", path);
	char *text = xmalloc(hlen + 1);
	if (pread(fd, text, hlen, 8) != (ssize_t)hlen) {
		free(text);
		return user_error("%s: cannot read the safetensors header", path);
	}
	json_error_t err;
	json_t *root = json_loadb(text, hlen, JSON_REJECT_DUPLICATES, &err);
	free(text);
	if (!json_is_object(root)) {
		json_decref(root);
		return user_error("%s: safetensors header is not a JSON object (%s, character %d)", path,
				  err.text, err.position);
	}
	const char *name;
	json_t *desc;
	int rc = 0;
	long long(*spans)[2] = NULL;
	size_t n_spans = 0, cap = 0;
	json_object_foreach(root, name, desc) {
		if (!strcmp(name, "__metadata__"))
			continue;
		if (!json_is_object(desc)) {
			rc = user_error("%s: safetensors header: '%s' is not a tensor", path, name);
			break;
		}
		if (n_spans == cap) {
			cap = cap ? 2 * cap : 32;
			spans = realloc(spans, sizeof(*spans) * cap);
			ALLOC_CHECK(spans);
		}
		if ((rc = read_safetensor(path, fd, (off_t)(8 + hlen), size - 8 - (off_t)hlen, name,
					  desc, weights_add_tensor(t), spans[n_spans++])))
			break;
	}
	json_decref(root);
	/* The tensors tile the data exactly, as safetensors requires: no
	 * overlap, no hole, nothing after. */
	if (!rc) {
		qsort(spans, n_spans, sizeof(*spans), span_cmp);
		long long end = 0;
		for (size_t i = 0; i < n_spans && !rc; i++) {
			if (spans[i][0] != end)
				rc = user_error("%s: tensors' data_offsets %s at byte %lld (safetensors' "
						"tensors tile the data exactly)", path,
						spans[i][0] < end ? "overlap" : "leave a hole", end);
			end = spans[i][1];
		}
		if (!rc && end != (long long)(size - 8 - (off_t)hlen))
			rc = user_error("%s: %lld bytes after the last tensor's data (safetensors' "
					"tensors tile the data exactly)", path,
					(long long)(size - 8 - (off_t)hlen) - end);
	}
	free(spans);
	return rc;
}
