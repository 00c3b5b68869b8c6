/* The communicator's data planes: the one place that knows which exist in
 * this build and picks the one for the backend's memory. A plane is a file
 * filling struct comm_ops (comm.h) and its row here. */
#include "comm.h"
#include "backend.h"
#include "check.h"
#include "comm_plane.h"

#include <stddef.h>

extern const struct comm_ops comm_mpi_plane;  /* comm_host.c */
extern const struct comm_ops comm_nccl_plane; /* comm_nccl.c, CUDA builds */

/* Each plane with the memory it serves; the first row for a memory wins.
 * A plane that needs a toolkit is registered only in the builds that have
 * it (CMakeLists.txt defines MTRAIN_HAVE_NCCL for this file). */
static const struct plane {
	enum backend_memory memory;
	const struct comm_ops *ops;
} planes[] = {
	{BACKEND_HOST, &comm_mpi_plane},
#ifdef MTRAIN_HAVE_NCCL
	{BACKEND_CUDA, &comm_nccl_plane},
#endif
};

/* The plane for memory; a backend without one is a programming error (a
 * CUDA backend is only built with NCCL). */
static const struct comm_ops *plane_for(enum backend_memory memory)
{
	for (size_t i = 0; i < sizeof(planes) / sizeof(planes[0]); i++)
		if (planes[i].memory == memory)
			return planes[i].ops;
	check_fail("mtrain", "comm_attach_device", "no data plane serves this memory", __FILE__,
		   __LINE__);
}

int comm_attach_device(struct comm *c, const struct backend *be)
{
	const struct comm_ops *ops = plane_for(be ? be->memory : BACKEND_HOST);
	if (c->ops == ops)
		return 0;
	/* The new plane starts while the old one still serves (its start may
	 * use the control plane), then takes over. */
	void *impl = ops->start(c, be);
	comm_plane_release(c);
	c->impl = impl;
	c->ops = ops;
	return 0;
}

void comm_detach_device(struct comm *c) { comm_attach_device(c, NULL); }

void comm_plane_release(struct comm *c)
{
	if (c->ops)
		c->ops->release(c);
	c->impl = NULL;
	c->ops = NULL;
}

void comm_span_begin(const struct comm *c, const char *phase)
{
	if (c->hooks.span_begin)
		c->hooks.span_begin(phase);
}

void comm_span_end(const struct comm *c)
{
	if (c->hooks.span_end)
		c->hooks.span_end();
}

int comm_span_recording(const struct comm *c)
{
	return c->hooks.recording ? c->hooks.recording() : 0;
}
