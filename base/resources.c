/* The memory budget of resources.h. */
#include "resources.h"
#include "log.h"
#include "mtrain.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

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

/* The number after key in the "key value" lines of path (memory.stat),
 * or 0. */
static double stat_value(const char *path, const char *key)
{
	FILE *f = fopen(path, "r");
	char name[64];
	double v, found = 0;
	while (f && fscanf(f, "%63s %lf", name, &v) == 2)
		if (!strcmp(name, key)) {
			found = v;
			break;
		}
	if (f)
		fclose(f);
	return found;
}

/* Whether the cgroup folder dir (v2's files, or v1's) has a memory limit:
 * 1 with *limit and *room, the limit less the use. The page cache (the
 * file pages of memory.stat) is not counted as used: the kernel reclaims
 * it before it kills, as MemAvailable counts it available. */
static int level_room(const char *dir, int v2, double *room, double *limit)
{
	char path[FILE_PATH_LEN + 32]; /* dir and a file name */
	snprintf(path, sizeof(path), "%s/%s", dir, v2 ? "memory.max" : "memory.limit_in_bytes");
	double lim = read_number(path);
	if (lim < 0)
		return 0;
	snprintf(path, sizeof(path), "%s/%s", dir, v2 ? "memory.current" : "memory.usage_in_bytes");
	double used = read_number(path);
	snprintf(path, sizeof(path), "%s/memory.stat", dir);
	double cache = stat_value(path, v2 ? "active_file" : "total_active_file") +
		       stat_value(path, v2 ? "inactive_file" : "total_inactive_file");
	*limit = lim;
	*room = lim - (used > cache ? used - cache : 0);
	return 1;
}

/* Keeps the room r (of a cgroup whose limit is l) when it is the least so
 * far (*found: whether there is one). */
static void keep_least(double r, double l, int *found, double *room, double *limit)
{
	if (!*found || r < *room) {
		*room = r;
		*limit = l;
		*found = 1;
	}
}

/* The least room of the folder base + path[0..len) and each one above it
 * up to base. */
static int walk_up(const char *base, const char *path, int len, int v2, double *room,
		   double *limit)
{
	char dir[FILE_PATH_LEN];
	int found = 0;
	size_t stop = strlen(base);
	if ((size_t)snprintf(dir, sizeof(dir), "%s%.*s", base, len, path) >= sizeof(dir))
		return 0; /* no such cgroup folder */
	for (;;) {
		size_t n = strlen(dir);
		while (n > stop && dir[n - 1] == '/')
			dir[--n] = 0;
		double r = 0, l = 0;
		if (level_room(dir, v2, &r, &l))
			keep_least(r, l, &found, room, limit);
		char *slash = strrchr(dir + stop, '/');
		if (!slash)
			return found;
		*slash = 0;
	}
}

/* Whether the comma-separated list [s, end) holds word. */
static int has_word(const char *s, const char *end, const char *word)
{
	size_t n = strlen(word);
	for (const char *p = s; p + n <= end; p++)
		if ((p == s || p[-1] == ',') && !strncmp(p, word, n) && (p + n == end || p[n] == ','))
			return 1;
	return 0;
}

int resources_cgroup_room(const char *root, const char *proc_cgroup, double *room,
			  double *limit)
{
	/* v2 where root is a v2 mount, not a hybrid machine's folder of v1
	 * mounts (whose unified tree has no memory controller). */
	char base[FILE_PATH_LEN];
	snprintf(base, sizeof(base), "%s/cgroup.controllers", root);
	int v2_root = access(base, F_OK) == 0, found = 0;
	/* Lines "ID:CONTROLLERS:PATH": v2's "0::PATH", v1's with memory. */
	for (const char *line = proc_cgroup; *line;) {
		const char *end = strchr(line, '\n');
		end = end ? end : line + strlen(line);
		const char *c1 = memchr(line, ':', (size_t)(end - line));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(end - c1 - 1)) : NULL;
		int v2 = c2 == c1 + 1;
		double r = 0, l = 0;
		if (c2 && c2 + 1 < end && c2[1] == '/' &&
		    (v2 ? v2_root : has_word(c1 + 1, c2, "memory"))) {
			snprintf(base, sizeof(base), "%s%s", root, v2 ? "" : "/memory");
			if (walk_up(base, c2 + 1, (int)(end - c2 - 1), v2, &r, &l))
				keep_least(r, l, &found, room, limit);
		}
		line = *end ? end + 1 : end;
	}
	return found;
}

void resources_init(int local_size)
{
	/* The cgroup this process is in (a Slurm job's), not the root's; a
	 * "limit" above the machine's memory is none. */
	double avail = mem_available(), room = 0, limit = 0;
	char text[16384] = "";
	FILE *f = fopen("/proc/self/cgroup", "r");
	if (f) {
		text[fread(text, 1, sizeof(text) - 1, f)] = 0;
		fclose(f);
	}
	int limited = resources_cgroup_room("/sys/fs/cgroup", text, &room, &limit) &&
		      (avail < 0 || room < avail);
	double total = avail;
	snprintf(g_source, sizeof(g_source), "the node's available memory");
	if (limited) {
		char lim[32];
		total = room > 0 ? room : 0; /* a cgroup already full leaves none */
		snprintf(g_source, sizeof(g_source), "the cgroup's limit (%s) less its use",
			 bytes_text(limit, lim, sizeof(lim)));
	}
	if (total > 0 || limited)
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
