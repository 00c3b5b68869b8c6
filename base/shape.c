/* Tensor shapes of shape.h. */
#include "shape.h"

#include <stdio.h>

void shape_text(int ndim, const long *dims, char *buf, size_t len)
{
	size_t used = snprintf(buf, len, "[");
	for (int i = 0; i < ndim && used < len; i++)
		used += snprintf(buf + used, len - used, "%s%ld", i ? "," : "", dims[i]);
	if (used < len)
		snprintf(buf + used, len - used, "]");
}
