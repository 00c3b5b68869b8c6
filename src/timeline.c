/* The per-rank timeline of timeline.h. */
#include "timeline.h"
#include "check.h"
#include "log.h"
#include "mtrain.h"
#include "paths.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Spans kept before the rest are dropped (and counted): about 40 MB of
 * JSON at most on rank 0 for a 64-rank job. */
#define TIMELINE_MAX 20000

struct span {
	const char *phase;
	double t0, t1; /* seconds since the ranks' common start */
	long step;
};

static struct {
	char path[PATH_LEN];
	long first, last;     /* steps recorded */
	double origin;        /* log_now() at the common start */
	struct span *spans;   /* (TIMELINE_MAX) */
	int n, dropped;
	long step;            /* under way (timeline_at) */
	const char *open;     /* timeline_begin's phase, until timeline_end */
	double open_t0;
} g_tl;

void timeline_init(const char *path, long first, long last, struct comm *c)
{
	if (!path || !path[0])
		return;
	snprintf(g_tl.path, sizeof(g_tl.path), "%s", path);
	g_tl.first = first;
	g_tl.last = last;
	g_tl.spans = xcalloc(TIMELINE_MAX, sizeof(*g_tl.spans));
	comm_barrier(c);
	g_tl.origin = log_now();
	/* The communicator records its collectives through these (mpi/ does
	 * not include the timeline). */
	c->hooks = (struct comm_hooks){.span_begin = timeline_begin,
				       .span_end = timeline_end,
				       .recording = timeline_recording};
}

int timeline_wants(long step)
{
	return g_tl.spans && step >= g_tl.first && (g_tl.last < 0 || step <= g_tl.last);
}

void timeline_span(const char *phase, double t0, double t1, long step)
{
	if (!timeline_wants(step))
		return;
	if (g_tl.n == TIMELINE_MAX) {
		g_tl.dropped++;
		return;
	}
	g_tl.spans[g_tl.n++] = (struct span){phase, t0 - g_tl.origin, t1 - g_tl.origin, step};
}

void timeline_at(long step) { g_tl.step = step; }

int timeline_recording(void) { return timeline_wants(g_tl.step); }

void timeline_begin(const char *phase)
{
	g_tl.open = phase;
	g_tl.open_t0 = log_now();
}

void timeline_end(void)
{
	if (g_tl.open)
		timeline_span(g_tl.open, g_tl.open_t0, log_now(), g_tl.step);
	g_tl.open = NULL;
}

/* This rank's spans as trace events, each followed by ",\n". malloc'd. */
static char *rank_events(struct comm *c)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	ALLOC_CHECK(f);
	fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":"
		"\"rank %d (%s)\"}},\n", c->rank, c->rank, c->host);
	fprintf(f, "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%d,\"args\":"
		"{\"sort_index\":%d}},\n", c->rank, c->rank);
	for (int i = 0; i < g_tl.n; i++) {
		const struct span *s = &g_tl.spans[i];
		fprintf(f, "{\"name\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":0,\"ts\":%.3f,"
			"\"dur\":%.3f,\"args\":{\"step\":%ld}},\n", s->phase, c->rank, s->t0 * 1e6,
			(s->t1 - s->t0) * 1e6, s->step);
	}
	fclose(f);
	return text;
}

int timeline_write(struct comm *c)
{
	if (!g_tl.spans)
		return 0;
	char *mine = rank_events(c);
	char *all = comm_gather_text(c, mine, 0);
	int failed = 0;
	if (c->rank == 0) {
		char tmp[FILE_PATH_LEN];
		FILE *f = path_create_temp(g_tl.path, tmp, sizeof(tmp));
		failed = !f;
		if (f) {
			fprintf(f, "{\"displayTimeUnit\":\"ms\",\"traceEvents\":[\n%s", all);
			fprintf(f, "{\"name\":\"dropped_spans\",\"ph\":\"M\",\"pid\":0,\"args\":"
				"{\"count\":%d}}\n]}\n", g_tl.dropped);
			failed = path_commit_temp(f, tmp, g_tl.path) != 0;
		}
		if (failed)
			log_error("--timeline %s: cannot write: %s", g_tl.path, strerror(errno));
		else
			log_info("timeline %s", g_tl.path);
	}
	free(all);
	free(mine);
	free(g_tl.spans);
	g_tl.spans = NULL;
	c->hooks = (struct comm_hooks){0}; /* nothing more is recorded */
	return failed ? -1 : 0;
}
