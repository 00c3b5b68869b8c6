/* The name lists of kinds.h and their look-ups. */
#include "kinds.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#define KIND_NAME(id, name, ...) name,
const char *const act_names[] = {ACT_KINDS(KIND_NAME) NULL};
const char *const optim_names[] = {OPTIM_KINDS(KIND_NAME) NULL};
const char *const device_names[] = {DEVICE_KINDS(KIND_NAME) NULL};
const char *const precision_names[] = {PRECISION_KINDS(KIND_NAME) NULL};
const char *const cpu_kernels_names[] = {CPU_KERNELS_KINDS(KIND_NAME) NULL};
const char *const schedule_names[] = {SCHEDULE_KINDS(KIND_NAME) NULL};
const char *const zero_names[] = {ZERO_KINDS(KIND_NAME) NULL};
const char *const dataset_names[] = {DATASET_KINDS(KIND_NAME) NULL};
const char *const decay_names[] = {DECAY_KINDS(KIND_NAME) NULL};

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

/* Edit distance (Levenshtein), for "did you mean"; 99 past 63 characters. */
static int edit_distance(const char *a, const char *b)
{
	int la = (int)strlen(a), lb = (int)strlen(b);
	if (la > 63 || lb > 63)
		return 99;
	int d[64][64];
	for (int i = 0; i <= la; i++)
		d[i][0] = i;
	for (int j = 0; j <= lb; j++)
		d[0][j] = j;
	for (int i = 1; i <= la; i++)
		for (int j = 1; j <= lb; j++) {
			int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
			d[i][j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
		}
	return d[la][lb];
}

void kind_near_start(struct kind_near *k, const char *word)
{
	int n = 0;
	memset(k, 0, sizeof(*k));
	for (; word[n] && n < (int)sizeof(k->word) - 1; n++)
		k->word[n] = word[n] == '_' ? '-' : (char)tolower((unsigned char)word[n]);
	k->word[n] = 0;
	k->len = n;
	k->best_d = n / 2 < 3 ? n / 2 + 1 : 4;
}

void kind_near_offer(struct kind_near *k, const char *name, const char *answer)
{
	int d = edit_distance(k->word, name);
	size_t ln = strlen(name);
	if (d < k->best_d) {
		k->best_d = d;
		k->best = answer;
	}
	if (name != answer) /* an alias: by its edits only */
		return;
	if (!strncmp(k->word, name, ln) && k->word[ln] == '-' &&
	    (!k->prefixed || ln > strlen(k->prefixed)))
		k->prefixed = name;
	if (k->len >= 2 && !strncmp(name, k->word, (size_t)k->len))
		k->n_started++, k->started = name;
}

const char *kind_near_answer(const struct kind_near *k)
{
	return k->best ? k->best : k->prefixed ? k->prefixed : k->n_started == 1 ? k->started : NULL;
}
