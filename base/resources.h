/* What a rank may use, known before it runs out: the memory budget of one
 * rank, so a model or data set that cannot fit stops at start with one
 * line (exit 2) instead of an out-of-memory kill without a word. */
#pragma once
#include <stddef.h>

/* Sets this rank's budget: the cgroup's limit less its usage when there is
 * one (as under Slurm), else the node's available memory, divided among
 * the local_size ranks of the node. Called once at start-up. */
void resources_init(int local_size);
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
