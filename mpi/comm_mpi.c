/* The MPI implementation of the communicator: start-up, rank discovery, the
 * host-memory data plane and the control plane every data plane shares. */
#include "comm.h"
#include "check.h"
#include "log.h"
#include "params.h"
#include "timeline.h"
#include "watchdog.h"

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every collective below runs between guard() and unguard(): the watchdog
 * (watchdog.c) ends one that runs past --comm-timeout with a message. */
static void guard(struct comm *c, const char *op) { watchdog_enter(c, op); }

static void unguard(void) { watchdog_leave(); }

/* MPI counts are int: large buffers go in chunks. */
#define MPI_CHUNK ((size_t)1 << 30)

static void mpi_allreduce(struct comm *c, float *buf, size_t n)
{
	timeline_begin("allreduce");
	guard(c, "all-reduce of gradients");
	for (size_t off = 0; off < n; off += MPI_CHUNK) {
		size_t len = n - off < MPI_CHUNK ? n - off : MPI_CHUNK;
		MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf + off, (int)len, MPI_FLOAT,
					MPI_SUM, MPI_COMM_WORLD));
	}
	unguard();
	timeline_end();
}

/* The MPI data plane's state (c->impl): buckets merged so far, reduced in
 * one call by allreduce_wait. */
struct mpi_plane {
	float *pending; /* (pending_n) the union of the buckets since the last wait */
	size_t pending_n;
};

/* Buckets arrive last layer first and adjacent (up to the registry's
 * alignment padding, zero on every rank): on host memory, with no spare core
 * to progress a non-blocking reduction, one call over their union is
 * fastest. */
static void mpi_allreduce_start(struct comm *c, float *buf, size_t n)
{
	struct mpi_plane *p = c->impl;
	if (p->pending && buf + n <= p->pending && p->pending - (buf + n) < PARAM_ALIGN) {
		p->pending_n += (size_t)(p->pending - buf);
		p->pending = buf;
		return;
	}
	if (p->pending)
		mpi_allreduce(c, p->pending, p->pending_n);
	p->pending = buf;
	p->pending_n = n;
}

static void mpi_allreduce_wait(struct comm *c)
{
	struct mpi_plane *p = c->impl;
	if (p->pending)
		mpi_allreduce(c, p->pending, p->pending_n);
	p->pending = NULL;
	p->pending_n = 0;
}

static void mpi_bcast(struct comm *c, float *buf, size_t n, int root)
{
	comm_bcast_host(c, buf, n * sizeof(float), root);
}

static void mpi_release(struct comm *c)
{
	free(c->impl);
	c->impl = NULL;
	c->ops = NULL;
}

static const struct comm_ops mpi_ops = {
	.name = "mpi",
	.allreduce_start = mpi_allreduce_start,
	.allreduce_wait = mpi_allreduce_wait,
	.bcast = mpi_bcast,
	.release = mpi_release,
};

void comm_use_mpi(struct comm *c)
{
	if (c->ops)
		c->ops->release(c);
	c->impl = xcalloc(1, sizeof(struct mpi_plane));
	c->ops = &mpi_ops;
}

int comm_init(struct comm *c, int *argc, char ***argv)
{
	memset(c, 0, sizeof(*c));
	/* Multiple: the watchdog thread answers other ranks' roll calls. */
	int provided = 0;
	MPI_CHECK(MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided));
	/* Errors come back as codes so MPI_CHECK can name the call. */
	MPI_CHECK(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
	MPI_CHECK(MPI_Comm_rank(MPI_COMM_WORLD, &c->rank));
	MPI_CHECK(MPI_Comm_size(MPI_COMM_WORLD, &c->size));
	MPI_Comm local;
	MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, c->rank,
				      MPI_INFO_NULL, &local));
	MPI_CHECK(MPI_Comm_rank(local, &c->local_rank));
	MPI_CHECK(MPI_Comm_size(local, &c->local_size));
	MPI_CHECK(MPI_Comm_free(&local));
	int len = 0;
	char name[MPI_MAX_PROCESSOR_NAME];
	MPI_CHECK(MPI_Get_processor_name(name, &len));
	snprintf(c->host, sizeof(c->host), "%.63s", name);
	comm_use_mpi(c);
	log_set_identity(c->rank, c->size, c->host);
	if (provided < MPI_THREAD_MULTIPLE)
		log_warn("this MPI offers thread level %d, not MPI_THREAD_MULTIPLE: a collective "
			 "past --comm-timeout cannot name the ranks that are late", provided);
	watchdog_start(c);
	return 0;
}

void comm_finalize(struct comm *c)
{
	if (c->ops)
		c->ops->release(c);
	watchdog_stop();
	MPI_Finalize();
}

int comm_any(struct comm *c, int flag)
{
	int in = flag != 0, out = 0;
	guard(c, "agreement (any)");
	MPI_CHECK(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_LOR, MPI_COMM_WORLD));
	unguard();
	return out;
}

int comm_first(struct comm *c, int flag)
{
	int in = flag ? c->rank : c->size, out = 0;
	guard(c, "agreement (first)");
	MPI_CHECK(MPI_Allreduce(&in, &out, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD));
	unguard();
	return out < c->size ? out : -1;
}

void comm_sum_host(struct comm *c, double *buf, int n)
{
	guard(c, "sum");
	MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, buf, n, MPI_DOUBLE, MPI_SUM,
				MPI_COMM_WORLD));
	unguard();
}

void comm_bcast_host(struct comm *c, void *buf, size_t bytes, int root)
{
	char *p = buf;
	guard(c, "broadcast");
	for (size_t off = 0; off < bytes; off += MPI_CHUNK) {
		size_t len = bytes - off < MPI_CHUNK ? bytes - off : MPI_CHUNK;
		MPI_CHECK(MPI_Bcast(p + off, (int)len, MPI_BYTE, root, MPI_COMM_WORLD));
	}
	unguard();
}

void comm_allgather_host(struct comm *c, const void *mine, void *all, size_t bytes)
{
	guard(c, "all-gather");
	MPI_CHECK(MPI_Allgather(mine, (int)bytes, MPI_BYTE, all, (int)bytes, MPI_BYTE,
				MPI_COMM_WORLD));
	unguard();
}

void comm_barrier(struct comm *c)
{
	guard(c, "barrier");
	MPI_CHECK(MPI_Barrier(MPI_COMM_WORLD));
	unguard();
}

_Noreturn void comm_abort(struct comm *c, int status)
{
	fflush(stdout);
	fflush(stderr);
	MPI_Abort(MPI_COMM_WORLD, status);
	exit(status);
}

int comm_user_errors(struct comm *c)
{
	int first = comm_first(c, user_error_pending());
	if (first < 0)
		return 0;
	if (first == c->rank) {
		/* Rank 0's view is the job's; another rank's names itself. */
		log_error_line(first > 0, "%s", user_error_text());
	}
	return 1;
}

char *comm_gather_text(struct comm *c, const char *mine, int root)
{
	int len = (int)strlen(mine), *lens = NULL, *displs = NULL;
	char *all = NULL;
	if (c->rank == root)
		lens = xcalloc((size_t)c->size, sizeof(int));
	guard(c, "gather");
	MPI_CHECK(MPI_Gather(&len, 1, MPI_INT, lens, 1, MPI_INT, root, MPI_COMM_WORLD));
	if (c->rank == root) {
		displs = xcalloc((size_t)c->size, sizeof(int));
		size_t total = 0;
		for (int r = 0; r < c->size; r++) {
			displs[r] = (int)total;
			total += (size_t)lens[r];
		}
		all = xcalloc(total + 1, 1);
	}
	MPI_CHECK(MPI_Gatherv(mine, len, MPI_CHAR, all, lens, displs, MPI_CHAR, root,
			      MPI_COMM_WORLD));
	unguard();
	free(lens);
	free(displs);
	return all;
}
