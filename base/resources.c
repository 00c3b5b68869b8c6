/* The memory budget of resources.h. */
#include "resources.h"
#include "log.h"

#include <stdio.h>
#include <string.h>

static double g_budget = 1e300;
static char g_source[64] = "no limit known";

/* A number read from the first line of path, or -1. */
static double read_number(const char *path)
{
	FILE *f = fopen(path, "r");
	double v = -1;
	char word[64] = "";
	if (f && fscanf(f, "%63s", word) == 1 && strcmp(word, "max"))
		sscanf(word, "%lf", &v);
	if (f)
		fclose(f);
	return v;
}

/* The node's available memory (MemAvailable), in bytes, or -1. */
static double mem_available(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[256];
	double kb = -1;
	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb < 0 ? -1 : kb * 1024.0;
}

void resources_init(int local_size)
{
	/* cgroup v2, then v1; a "limit" above the machine's memory is none. */
	double avail = mem_available();
	double limit = read_number("/sys/fs/cgroup/memory.max");
	double used = read_number("/sys/fs/cgroup/memory.current");
	if (limit < 0) {
		limit = read_number("/sys/fs/cgroup/memory/memory.limit_in_bytes");
		used = read_number("/sys/fs/cgroup/memory/memory.usage_in_bytes");
	}
	double total = avail;
	snprintf(g_source, sizeof(g_source), "the node's available memory");
	if (limit > 0 && (avail < 0 || limit - (used > 0 ? used : 0) < avail)) {
		total = limit - (used > 0 ? used : 0);
		snprintf(g_source, sizeof(g_source), "the cgroup's limit less its use");
	}
	if (total > 0)
		g_budget = total / (local_size > 0 ? local_size : 1);
}

double resources_budget(void) { return g_budget; }

int resources_check(const char *what, double bytes)
{
	if (bytes <= g_budget)
		return 0;
	return user_error("%s needs about %.1f GiB per rank; this rank may use %.1f GiB (%s, "
			  "shared by the node's ranks)", what, bytes / (1 << 30), g_budget / (1 << 30),
			  g_source);
}

void resources_save(struct resources_state *s)
{
	s->budget = g_budget;
	snprintf(s->source, sizeof(s->source), "%s", g_source);
}

void resources_restore(const struct resources_state *s)
{
	g_budget = s->budget;
	snprintf(g_source, sizeof(g_source), "%.*s", (int)sizeof(s->source) - 1, s->source);
}
