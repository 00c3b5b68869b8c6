/* The name lists of kinds.h and their look-ups. */
#include "kinds.h"

#include <stdio.h>
#include <string.h>

#define KIND_NAME(id, name, ...) name,
const char *const act_names[] = {ACT_KINDS(KIND_NAME) NULL};
const char *const optim_names[] = {OPTIM_KINDS(KIND_NAME) NULL};
const char *const device_names[] = {DEVICE_KINDS(KIND_NAME) NULL};
const char *const precision_names[] = {PRECISION_KINDS(KIND_NAME) NULL};
const char *const schedule_names[] = {SCHEDULE_KINDS(KIND_NAME) NULL};
const char *const zero_names[] = {ZERO_KINDS(KIND_NAME) NULL};

#define OPTIM_DEFAULTS(id, name, slots, s1, s2, beta1, beta2, wd)              \
	[id] = {[OPTIM_HP_BETA1] = beta1, [OPTIM_HP_BETA2] = beta2, [OPTIM_HP_WEIGHT_DECAY] = wd},
const float optim_defaults[][OPTIM_HP_COUNT] = {OPTIM_KINDS(OPTIM_DEFAULTS)};

int kind_parse(const char *const *names, const char *word)
{
	for (int i = 0; names[i]; i++)
		if (!strcmp(names[i], word))
			return i;
	return -1;
}

const char *kind_name(const char *const *names, int i)
{
	for (int j = 0; names[j]; j++)
		if (j == i)
			return names[j];
	return "?";
}

const char *kind_choices(const char *const *names, char *buf, size_t len)
{
	size_t used = 0;
	buf[0] = 0;
	for (int i = 0; names[i] && used < len; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "|" : "", names[i]);
	return buf;
}
