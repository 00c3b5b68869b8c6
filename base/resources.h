/* What a rank may use, known before it runs out: the memory budget of one
 * rank, so a model or data set that cannot fit stops at start with one
 * line (exit 2) instead of an out-of-memory kill without a word. */
#pragma once
#include <stddef.h>

/* Sets this rank's budget: the room its cgroup leaves when it is limited
 * (resources_cgroup_room: as under Slurm) and that is less than the node's
 * available memory, else that, divided among the local_size ranks of the
 * node. Called once at start-up. */
void resources_init(int local_size);
/* The memory a process in the cgroups that proc_cgroup (the text of
 * /proc/self/cgroup) names may still use, under the cgroup file system
 * mounted at root (e.g. "/sys/fs/cgroup"): over its memory cgroup and each
 * one above it up to the root, the least of a limit less that cgroup's
 * use (cgroup v2's memory.max and memory.current under root, v1's
 * memory.limit_in_bytes and memory.usage_in_bytes under root/memory;
 * "max" is no limit; the page cache is not use). A level whose folder is
 * missing (a container's view: its mount's root is its own cgroup) is
 * passed over. 1 with *room and *limit, that cgroup's limit; 0 when no
 * cgroup on the way has a limit. */
int resources_cgroup_room(const char *root, const char *proc_cgroup, double *room,
			  double *limit);
/* This rank's budget in bytes (unlimited before resources_init). */
double resources_budget(void);
/* 0 when bytes fit the budget; else -1 with a user_error "WHAT needs about
 * X GiB per rank; this rank may use Y GiB (...)". */
int resources_check(const char *what, double bytes);
/* The budget and where it came from, for a child program that reads files
 * on this rank's behalf (io/sandbox.c) to check against. */
struct resources_state {
	double budget;
	char source[64];
};
void resources_save(struct resources_state *s);
void resources_restore(const struct resources_state *s);
