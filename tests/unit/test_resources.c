/* The memory budget's cgroup (base/resources.c): resources_cgroup_room
 * walks from the process's own memory cgroup up to the root, in cgroup v2
 * and v1 trees made here under a fake root, and finds the lowest room
 * (limit less use) on the way: a job's limit seen from a step's cgroup
 * without one, a tighter step inside a job, "max" and v1's huge number as
 * no limit, v1's memory among other controllers, a container's view whose
 * mount root is its own cgroup, and no limit at all. */
#include "resources.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static char g_root[64];

/* Writes text to ROOT/rel, making the folders on the way. */
static void put(const char *rel, const char *text)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", g_root, rel);
	for (char *p = path + strlen(g_root) + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(path, 0755);
			*p = '/';
		}
	FILE *f = fopen(path, "w");
	EXPECT(f != NULL);
	if (f) {
		fputs(text, f);
		fclose(f);
	}
}

/* The room resources_cgroup_room finds for proc (text of
 * /proc/self/cgroup) under the fake root, and its limit in *limit; NaN
 * when it finds no limit. */
static double room(const char *proc, double *limit)
{
	double r = 0;
	*limit = 0;
	return resources_cgroup_room(g_root, proc, &r, limit) ? r : NAN;
}

static void check_v2(void)
{
	double limit;
	put("cgroup.controllers", "cpu memory\n");
	put("memory.current", "5000000\n"); /* the root's: no memory.max */
	put("job/memory.max", "1000000\n");
	put("job/memory.current", "300000\n");
	put("job/step/memory.max", "max\n");
	put("job/step/memory.current", "200000\n");
	put("job/tight/memory.max", "400000\n");
	put("job/tight/memory.current", "250000\n");
	put("job/tight/inner/memory.max", "max\n");
	put("job/tight/inner/memory.current", "1000\n");
	/* A step without a limit of its own: the job's. */
	EXPECT_NEAR(room("0::/job/step\n", &limit), 700000, 0);
	EXPECT_NEAR(limit, 1000000, 0);
	/* A tighter cgroup on the way wins, wherever it is. */
	EXPECT_NEAR(room("0::/job/tight/inner\n", &limit), 150000, 0);
	EXPECT_NEAR(limit, 400000, 0);
	/* A job whose use leaves less than a tighter step's room: the job's. */
	put("job/memory.current", "900000\n");
	EXPECT_NEAR(room("0::/job/tight\n", &limit), 100000, 0);
	EXPECT_NEAR(limit, 1000000, 0);
	/* Its page cache (file pages) is not use: the kernel reclaims it. */
	put("job/memory.stat", "anon 500000\nfile 200000\nactive_file 120000\n"
			       "inactive_file 80000\nshmem 10000\n");
	EXPECT_NEAR(room("0::/job/step\n", &limit), 300000, 0);
	/* The root cgroup itself, and no limit anywhere. */
	EXPECT(isnan(room("0::/\n", &limit)));
	EXPECT(isnan(room("0::/elsewhere/deeper\n", &limit)));
}

static void check_v1(void)
{
	double limit;
	/* v1's "no limit" is a huge number: a room, larger than any machine. */
	put("memory/memory.limit_in_bytes", "9223372036854771712\n");
	put("memory/memory.usage_in_bytes", "5000000\n");
	put("memory/slurm/uid_0/job_7/memory.limit_in_bytes", "2000000\n");
	put("memory/slurm/uid_0/job_7/memory.usage_in_bytes", "500000\n");
	put("memory/slurm/uid_0/job_7/step_0/memory.limit_in_bytes", "9223372036854771712\n");
	put("memory/slurm/uid_0/job_7/step_0/memory.usage_in_bytes", "400000\n");
	const char *proc = "11:pids:/slurm/uid_0/job_7/step_0\n"
			   "4:memory:/slurm/uid_0/job_7/step_0\n"
			   "1:name=systemd:/\n0::/\n";
	EXPECT_NEAR(room(proc, &limit), 1500000, 0);
	EXPECT_NEAR(limit, 2000000, 0);
	/* v1's page cache: the hierarchical totals of memory.stat. */
	put("memory/slurm/uid_0/job_7/memory.stat", "cache 300000\nactive_file 1\n"
		"inactive_file 1\ntotal_active_file 100000\ntotal_inactive_file 200000\n");
	EXPECT_NEAR(room(proc, &limit), 1800000, 0);
	/* memory among other controllers on one line. */
	EXPECT_NEAR(room("6:cpu,memory,pids:/slurm/uid_0/job_7\n", &limit), 1800000, 0);
	/* A container's view: its path is not under the mount, whose root
	 * is the container's own cgroup (limited here). */
	put("memory/memory.limit_in_bytes", "3000000\n");
	put("memory/memory.usage_in_bytes", "1000000\n");
	EXPECT_NEAR(room("4:memory:/docker/abc123\n", &limit), 2000000, 0);
	EXPECT_NEAR(limit, 3000000, 0);
	/* No memory line at all, or text that is not /proc/self/cgroup's. */
	EXPECT(isnan(room("3:cpu:/x\n", &limit)));
	EXPECT(isnan(room("", &limit)));
	EXPECT(isnan(room("garbage without colons", &limit)));
	EXPECT(isnan(room("4:memory:", &limit)));
}

int main(void)
{
	snprintf(g_root, sizeof(g_root), "/tmp/test_resources.XXXXXX");
	EXPECT(mkdtemp(g_root) != NULL);
	check_v2();
	char cmd[128];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_root);
	EXPECT(system(cmd) == 0);
	EXPECT(mkdir(g_root, 0700) == 0);
	check_v1();
	EXPECT(system(cmd) == 0);
	return unit_done("test_resources");
}
