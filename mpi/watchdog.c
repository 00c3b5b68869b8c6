/* The collective watchdog of watchdog.h. Every collective runs between
 * watchdog_enter() and watchdog_leave(). A thread wakes four times a
 * second: it answers other ranks' roll calls (where this rank is: its last
 * completed step, how many collectives it has entered, whether it is in
 * one), and when a collective has run past --comm-timeout it asks every
 * other rank the same, prints which rank waited in which operation and
 * which ranks are not there, and ends this process; mpirun then ends the
 * job. No hang without a message. Blocking collectives stay (measured:
 * MPI's non-blocking ones polled to a deadline cost 13% of the 2-rank
 * step). MPI_THREAD_MULTIPLE lets the thread answer while the main thread
 * waits in a collective. */
#include "watchdog.h"
#include "check.h"
#include "log.h"

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TAG_ASK 1
#define TAG_ANSWER 2
#define ROLL_CALL_MS 2000 /* how long a roll call waits for answers */

static struct {
	atomic_llong deadline_ms;   /* 0: no collective under way */
	const char *_Atomic op;     /* e.g. "all-reduce of gradients" */
	atomic_long seq;            /* collectives entered */
	atomic_int in;              /* 1 while in one */
	struct comm *c;             /* set once, before the thread starts */
	MPI_Comm side;              /* roll calls; MPI_COMM_NULL without one */
	atomic_int stop, stopped;   /* watchdog_stop's handshake */
} g_dog = {.side = MPI_COMM_NULL};

static long long now_ms(void) { return (long long)(log_now() * 1e3); }

/* Where this rank is: {last completed step, collectives entered, in one}. */
static void where(long out[3])
{
	out[0] = atomic_load(&g_dog.c->step);
	out[1] = atomic_load(&g_dog.seq);
	out[2] = atomic_load(&g_dog.in);
}

/* Answers every roll call waiting. */
static void answer_roll_calls(void)
{
	int flag = 1;
	while (g_dog.side != MPI_COMM_NULL && flag) {
		MPI_Status st;
		if (MPI_Iprobe(MPI_ANY_SOURCE, TAG_ASK, g_dog.side, &flag, &st) != MPI_SUCCESS || !flag)
			return;
		long ask, here[3];
		MPI_Recv(&ask, 1, MPI_LONG, st.MPI_SOURCE, TAG_ASK, g_dog.side, MPI_STATUS_IGNORE);
		where(here);
		MPI_Send(here, 3, MPI_LONG, st.MPI_SOURCE, TAG_ANSWER, g_dog.side);
	}
}

/* One rank's entry of the roll call into buf at *used. */
static void describe(char *buf, size_t len, size_t *used, int rank, const long *a, int answered)
{
	if (*used >= len)
		return;
	if (!answered)
		*used += snprintf(buf + *used, len - *used, "%srank %d (no answer: stopped or dead)",
				  *used ? ", " : "", rank);
	else
		*used += snprintf(buf + *used, len - *used, "%srank %d (last completed step %ld, %s)",
				  *used ? ", " : "", rank, a[0],
				  a[2] ? "in another collective" : "not in a collective");
}

void watchdog_roll_call(struct comm *c, char *buf, size_t len)
{
	int n = c->size;
	long (*ans)[3] = xcalloc((size_t)n, sizeof(*ans)), ask = c->rank, mine[3];
	MPI_Request *req = xcalloc((size_t)n * 2, sizeof(*req));
	int *done = xcalloc((size_t)n, sizeof(int));
	where(mine);
	for (int r = 0; r < n; r++) {
		req[2 * r] = req[2 * r + 1] = MPI_REQUEST_NULL;
		if (r == c->rank || g_dog.side == MPI_COMM_NULL)
			continue;
		MPI_Isend(&ask, 1, MPI_LONG, r, TAG_ASK, g_dog.side, &req[2 * r]);
		MPI_Irecv(ans[r], 3, MPI_LONG, r, TAG_ANSWER, g_dog.side, &req[2 * r + 1]);
	}
	long long until = now_ms() + ROLL_CALL_MS;
	int waiting = g_dog.side == MPI_COMM_NULL ? 0 : n - 1;
	while (waiting > 0 && now_ms() < until) {
		answer_roll_calls(); /* the others may be asking too */
		for (int r = 0; r < n; r++) {
			int flag = 0;
			if (r == c->rank || done[r])
				continue;
			MPI_Test(&req[2 * r + 1], &flag, MPI_STATUS_IGNORE);
			if (flag)
				done[r] = 1, waiting--;
		}
		usleep(10 * 1000);
	}
	size_t used = 0;
	buf[0] = 0;
	for (int r = 0; r < n; r++)
		if (r != c->rank && !(done[r] && ans[r][2] && ans[r][1] == mine[1]))
			describe(buf, len, &used, r, ans[r], done[r]);
	if (!used)
		snprintf(buf, len, "%s", g_dog.side == MPI_COMM_NULL ? "unknown (no thread support)"
								   : "none found");
	free(ans);
	free(req);
	free(done);
}

static void *watchdog(void *arg)
{
	long long before = now_ms();
	while (!atomic_load(&g_dog.stop)) {
		usleep(250 * 1000);
		answer_roll_calls();
		/* A gap far longer than the nap means the whole process was
		 * stopped (a suspended job): that time is nobody's stall. */
		long long now = now_ms(), gap = now - before;
		before = now;
		long long d = atomic_load(&g_dog.deadline_ms);
		if (gap > 2000 && d &&
		    atomic_compare_exchange_strong(&g_dog.deadline_ms, &d, d + gap - 250))
			d += gap - 250;
		if (d && now > d) {
			char late[2048];
			watchdog_roll_call(g_dog.c, late, sizeof(late));
			log_error_line(1, "MPI %s did not complete within --comm-timeout %g s; not in "
				       "it: %s; ending the job", atomic_load(&g_dog.op),
				       g_dog.c->timeout, late);
			_exit(1);
		}
	}
	atomic_store(&g_dog.stopped, 1);
	return NULL;
}

void watchdog_start(struct comm *c)
{
	int level = 0;
	g_dog.c = c;
	MPI_Query_thread(&level);
	if (level >= MPI_THREAD_MULTIPLE)
		MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &g_dog.side));
	pthread_t t;
	if (pthread_create(&t, NULL, watchdog, NULL) == 0)
		pthread_detach(t);
	else
		atomic_store(&g_dog.stopped, 1);
}

void watchdog_stop(void)
{
	atomic_store(&g_dog.stop, 1);
	for (int i = 0; i < 100 && !atomic_load(&g_dog.stopped); i++)
		usleep(10 * 1000);
	if (atomic_load(&g_dog.stopped) && g_dog.side != MPI_COMM_NULL)
		MPI_Comm_free(&g_dog.side);
}

void watchdog_enter(struct comm *c, const char *op)
{
	atomic_fetch_add(&g_dog.seq, 1);
	atomic_store(&g_dog.in, 1);
	if (c->timeout <= 0)
		return;
	atomic_store(&g_dog.op, op);
	atomic_store(&g_dog.deadline_ms, now_ms() + (long long)(c->timeout * 1e3));
}

void watchdog_count(int in)
{
	if (in)
		atomic_fetch_add(&g_dog.seq, 1);
	atomic_store(&g_dog.in, in);
}

void watchdog_leave(void)
{
	atomic_store(&g_dog.deadline_ms, 0);
	atomic_store(&g_dog.in, 0);
}
