/* Backend registration: the one place that knows which backends exist.
 * backend_select() picks the same one on every rank and switches the
 * communicator's data plane to match its memory. */
#include "backend.h"
#include "check.h"
#include "comm.h"
#include "config.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

void backend_close(const struct backend *be)
{
	if (be)
		be->close(be);
}

/* Whether two ranks of one node got the same GPU (collective). With
 * is_error, the later of the two records a user error naming both. The
 * node is the one NCCL sees: NCCL_HOSTID when it is set (NCCL then takes
 * the ranks for different hosts and connects them over the network, which
 * works on one GPU, slowly), the host name otherwise. */
static int shared_gpu(const struct backend *be, struct comm *c, int is_error)
{
	struct who {
		char host[64];
		char device[64];
	} me, *all = xcalloc((size_t)c->size, sizeof(*all));
	memset(&me, 0, sizeof(me));
	const char *nccl_host = getenv("NCCL_HOSTID");
	snprintf(me.host, sizeof(me.host), "%s", nccl_host && *nccl_host ? nccl_host : c->host);
	be->device_id(be, me.device, sizeof(me.device));
	comm_allgather_host(c, &me, all, sizeof(me));
	int shared = 0;
	for (int j = 0; j < c->size; j++)
		for (int i = 0; i < j; i++)
			if (!strcmp(all[i].host, all[j].host) && !strcmp(all[i].device, all[j].device)) {
				if (is_error && j == c->rank && !shared)
					user_error("--device cuda: ranks %d and %d on %s would share GPU %s; "
						   "start at most one rank per GPU (check "
						   "CUDA_VISIBLE_DEVICES)", i, j, c->host, me.device);
				shared = 1;
			}
	free(all);
	return shared;
}

/* The accelerators, in the order --device auto tries them. */
static const struct accel {
	int device;            /* its --device word, e.g. DEVICE_CUDA */
	backend_open_fn *open; /* e.g. backend_cuda_open */
} accels[] = {
#define ACCEL_ROW(id, name, open) {id, open},
	ACCEL_KINDS(ACCEL_ROW)
#undef ACCEL_ROW
};

/* Accelerator a when every rank has its own device of it and cfg allows
 * it, else NULL, having closed any device opened in vain (error lines stop
 * naming it). *failed after a user error. Collective. */
static const struct backend *pick(const struct accel *a, const struct config *cfg,
				  struct comm *c, int *failed)
{
	const struct backend *be = NULL;
	const char *why = "";
	int fatal = 0;
	if (cfg->device == DEVICE_AUTO || cfg->device == a->device) {
		be = a->open(c->local_rank, c->local_size, &why, &fatal);
		if (fatal || (cfg->device == a->device && !be))
			user_error("--device %s: %s", kind_name(device_names, cfg->device), why);
	}
	*failed = comm_user_errors(c);
	if (*failed || comm_any(c, be == NULL)) {
		if (be && !*failed)
			log_info("some ranks see no GPU: every rank computes on the CPU");
		backend_close(be);
		return NULL;
	}
	if (shared_gpu(be, c, cfg->device == a->device)) {
		backend_close(be);
		*failed = comm_user_errors(c);
		if (!*failed)
			log_info("two ranks would share a GPU: every rank computes on the CPU");
		return NULL;
	}
	return be;
}

const struct backend *backend_select(const struct config *cfg, struct comm *c)
{
	int failed = 0;
	const struct backend *be = NULL;
	for (size_t i = 0; !be && !failed && i < sizeof(accels) / sizeof(accels[0]); i++)
		be = pick(&accels[i], cfg, c, &failed);
	if (failed)
		return NULL;
	if (!be) {
		be = cfg->cpu_kernels == CPU_KERNELS_OWN ? backend_cpu_own() : backend_cpu();
		backend_cpu_threads(cfg->threads, c->local_size);
	}
	int bf16 = cfg->precision == PRECISION_BF16;
	if (be->set_precision(be, (enum precision)cfg->precision))
		user_error("--precision bf16: the %s backend computes in fp32 only (use --device cuda)",
			   be->name);
	else if (bf16 && be->memory == BACKEND_HOST && !backend_cpu_has_bf16() && !cfg->force_bf16)
		user_error("--precision bf16: this CPU has no AVX512_BF16, so bf16 products would run "
			   "slower than fp32 (their operands rounded for the fp32 kernels); "
			   "--force-bf16 runs them anyway, for their numerics");
	else if (bf16 && be->memory == BACKEND_HOST && backend_cpu_has_bf16() &&
		 cfg->cpu_kernels != CPU_KERNELS_OWN)
		log_info("--precision bf16 on the CPU: products (dense, conv2d, attention) by "
			 "oneDNN's bf16 kernels (AVX512_BF16), fp32 sums; weights, gradients, "
			 "optimizer slots, EMA and batch-norm statistics fp32");
	else if (bf16 && be->memory == BACKEND_HOST)
		log_info("--precision bf16 on the CPU: products' operands rounded to bf16 for the "
			 "fp32 kernels (bf16 numerics, fp32 speed at best)");
	if (comm_user_errors(c)) {
		backend_close(be);
		return NULL;
	}
	comm_attach_device(c, be);
	return be;
}

void backend_unselect(const struct backend *be, struct comm *c)
{
	if (!be)
		return;
	comm_detach_device(c);
	backend_close(be);
}
