/* The MPI side of the communicator: start-up, rank discovery, and the
 * control plane every data plane shares. The data planes are comm.c's. */
#include "comm.h"
#include "check.h"
#include "comm_plane.h"
#include "log.h"
#include "shard.h"
#include "watchdog.h"

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Every collective below runs between guard() and unguard(): the watchdog
 * (watchdog.c) ends one that runs past --comm-timeout with a message. */
static void guard(struct comm *c, const char *op) { watchdog_enter(c, op); }

static void unguard(void) { watchdog_leave(); }

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
	comm_attach_device(c, NULL); /* the data plane for host memory */
	log_set_identity(c->rank, c->size, c->host);
	if (provided < MPI_THREAD_MULTIPLE)
		log_warn("this MPI offers thread level %d, not MPI_THREAD_MULTIPLE: a collective "
			 "past --comm-timeout cannot name the ranks that are late", provided);
	watchdog_start(c);
	return 0;
}

void comm_finalize(struct comm *c)
{
	comm_plane_release(c);
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

/* Checkpoints' shards go point to point, in messages of at most this many
 * values: no count or displacement passes int's range. */
#define SHARD_MSG ((size_t)1 << 28)
#define TAG_SHARD 7301

/* Every rank's shard between its mine and root's all: to root (gather)
 * or from it (scatter). */
static void move_shards(struct comm *c, float *all, float *mine, size_t n, int root, int gather)
{
	struct shard s;
	guard(c, gather ? "gather of shards" : "scatter of shards");
	for (int q = 0; q < c->size; q++) {
		if (c->rank != root && c->rank != q)
			continue;
		shard_plan(&s, n, q, c->size);
		float *at_root = all + s.first;
		if (q == root) {
			if (c->rank == root)
				memcpy(gather ? at_root : mine, gather ? mine : at_root,
				       s.len * sizeof(float));
			continue;
		}
		for (size_t off = 0; off < s.len; off += SHARD_MSG) {
			int len = (int)(s.len - off < SHARD_MSG ? s.len - off : SHARD_MSG);
			float *here = c->rank == root ? at_root + off : mine + off;
			int peer = c->rank == root ? q : root;
			if ((c->rank == root) == gather)
				MPI_CHECK(MPI_Recv(here, len, MPI_FLOAT, peer, TAG_SHARD, MPI_COMM_WORLD,
						   MPI_STATUS_IGNORE));
			else
				MPI_CHECK(MPI_Send(here, len, MPI_FLOAT, peer, TAG_SHARD, MPI_COMM_WORLD));
		}
	}
	unguard();
}

void comm_gather_shards(struct comm *c, const float *mine, float *all, size_t n, size_t each,
			int root)
{
	(void)each; /* shard_plan derives it from n and the ranks */
	move_shards(c, all, (float *)mine, n, root, 1);
}

void comm_scatter_shards(struct comm *c, const float *all, float *mine, size_t n, size_t each,
			 int root)
{
	(void)each;
	move_shards(c, (float *)all, mine, n, root, 0);
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
