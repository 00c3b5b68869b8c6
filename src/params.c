/* The parameter registry of params.h. */
#include "params.h"
#include "check.h"

#include <stdio.h>
#include <string.h>

void params_init(struct params *reg) { memset(reg, 0, sizeof(*reg)); }

static size_t add(struct params *reg, const char *name, int ndim, const long *dims,
		  int trainable)
{
	if (reg->n == PARAM_MAX || params_find(reg, name) || ndim < 1 ||
	    ndim > SHAPE_MAX_RANK || (trainable && reg->n > reg->n_trainable))
		check_fail("mtrain", "params_add", name, __FILE__, __LINE__);
	struct param *p = &reg->p[reg->n++];
	p->trainable = trainable;
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->ndim = ndim;
	for (int i = 0; i < ndim; i++)
		p->shape[i] = dims[i];
	p->size = shape_cells(ndim, dims);
	p->offset = (reg->total + PARAM_ALIGN - 1) / PARAM_ALIGN * PARAM_ALIGN;
	reg->total = p->offset + p->size;
	if (trainable) {
		reg->n_trainable = reg->n;
		reg->trainable = reg->total;
	}
	return p->offset;
}

size_t params_add(struct params *reg, const char *name, int ndim, const long *dims)
{
	return add(reg, name, ndim, dims, 1);
}

size_t params_add_state(struct params *reg, const char *name, int ndim, const long *dims)
{
	return add(reg, name, ndim, dims, 0);
}

size_t params_count(const struct params *reg)
{
	size_t n = 0;
	for (int i = 0; i < reg->n; i++)
		n += reg->p[i].size;
	return n;
}

const struct param *params_find(const struct params *reg, const char *name)
{
	for (int i = 0; i < reg->n; i++)
		if (!strcmp(reg->p[i].name, name))
			return &reg->p[i];
	return NULL;
}

void params_signature(const struct params *reg, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (int i = 0; i < reg->n && used < len; i++) {
		char shape[64];
		shape_text(reg->p[i].ndim, reg->p[i].shape, shape, sizeof(shape));
		used += snprintf(buf + used, len - used, "%s%s;", reg->p[i].name, shape);
	}
}

void params_slot_name(const char *var, const char *suffix, char *buf, size_t len)
{
	snprintf(buf, len, "%s/%s", var, suffix);
}

void params_layer_name(const char *kind, int i, char *buf, size_t len)
{
	if (i == 0)
		snprintf(buf, len, "%s", kind);
	else
		snprintf(buf, len, "%s_%d", kind, i);
}
