/* The lines of report.h. */
#include "report.h"
#include "check.h"
#include "log.h"
#include "optim.h"
#include "tensorboard.h"
#include "version.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Where the ranks run, on rank 0: "nodes 2: node1 ranks 0 1; node2 ranks 2
 * 3", each node's ranks in local-rank order (those of more than 16 nodes
 * as a count). Collective. Returns the number of nodes. */
static int report_nodes(struct comm *c)
{
	struct place {
		char host[64];
		int local_rank;
	} mine = {.local_rank = c->local_rank};
	snprintf(mine.host, sizeof(mine.host), "%s", c->host);
	struct place *all = xcalloc((size_t)c->size, sizeof(*all));
	comm_allgather_host(c, &mine, all, sizeof(mine));
	int nodes = 0, *node_of = xcalloc((size_t)c->size, sizeof(int)); /* first rank's index */
	for (int r = 0; r < c->size; r++) {
		int first = r;
		for (int q = 0; q < r && first == r; q++)
			if (!strcmp(all[q].host, all[r].host))
				first = node_of[q];
		node_of[r] = first;
		nodes += first == r;
	}
	size_t len = 64 + (size_t)c->size * 80, used = 0;
	char *text = xmalloc(len);
	used += (size_t)snprintf(text, len, "nodes %d:", nodes);
	for (int r = 0; r < c->size && nodes <= 16; r++) {
		if (node_of[r] != r)
			continue;
		used += (size_t)snprintf(text + used, len - used, "%s %s ranks", r ? ";" : "",
					 all[r].host);
		for (int local = 0; local < c->size; local++)
			for (int q = r; q < c->size; q++)
				if (node_of[q] == r && all[q].local_rank == local)
					used += (size_t)snprintf(text + used, len - used, " %d", q);
	}
	if (nodes > 16)
		snprintf(text + used, len - used, " %d ranks", c->size);
	log_info("%s", text);
	free(text);
	free(node_of);
	free(all);
	return nodes;
}

/* A byte count as people read it: "1.03 MiB", "6.4 KiB", "96 B". */
/* An elastic job's restart (--restart, from jobs/elastic.sh): one line,
 * a restart event and a TensorBoard scalar, at the step it resumes from. */
static void report_restart(const struct config *cfg, const struct comm *c, int nodes, long step)
{
	const char *lost = cfg->restart_lost[0] ? cfg->restart_lost : "no node";
	log_info("restart %ld: lost %s; resuming on %d node%s (%d rank%s) from step %ld%s",
		 cfg->restart, lost, nodes, nodes == 1 ? "" : "s", c->size, c->size == 1 ? "" : "s",
		 step, step ? "" : " (no checkpoint yet)");
	char esc[JSON_PATH_LEN];
	metrics_write("{\"event\":\"restart\",\"step\":%ld,\"restart\":%ld,\"lost\":\"%s\","
		      "\"ranks\":%d,\"nodes\":%d}",
		      step, cfg->restart, json_escape(cfg->restart_lost, esc, sizeof(esc)), c->size,
		      nodes);
	tensorboard_scalar("elastic/restarts", step, (double)cfg->restart);
}

void report_start(const struct config *cfg, struct comm *c, const struct backend *be,
		  const struct model *m, const struct shard *sh, const struct dataset *train,
		  int has_eval, long step, long total_steps, long steps_per_epoch)
{
	char layers[PATH_LEN];
	model_text(m, cfg, layers, sizeof(layers));
	char backend[192];
	snprintf(backend, sizeof(backend), "%s%s", be->name,
		 cfg->precision == PRECISION_BF16 ? " bf16" : "");
	if (be->memory == BACKEND_HOST) {
		int n = backend_cpu_thread_count();
		snprintf(backend + strlen(backend), sizeof(backend) - strlen(backend),
			 " (%d thread%s a rank", n, n == 1 ? "" : "s");
		const char *mm = be->matmul_kernels ? be->matmul_kernels() : NULL;
		if (mm)
			snprintf(backend + strlen(backend), sizeof(backend) - strlen(backend),
				 "; dense: %s", mm);
		if (m->max_cols) /* a conv2d: what computes it */
			snprintf(backend + strlen(backend), sizeof(backend) - strlen(backend),
				 "; conv2d: %s", be->conv_kernels ? be->conv_kernels() : "im2col, sgemm");
		int attention = 0;
		for (int i = 0; i < m->n_layers; i++)
			attention |= m->layer[i].spec.kind == LAYER_ATTENTION;
		if (attention) /* its heads fused, or composed (bf16) */
			snprintf(backend + strlen(backend), sizeof(backend) - strlen(backend),
				 "; attention: heads %s",
				 be->attn_forward && cfg->precision != PRECISION_BF16 ? "fused"
										  : "composed");
		snprintf(backend + strlen(backend), sizeof(backend) - strlen(backend), ")");
	}
	/* Rank r takes rows [r*B/N, (r+1)*B/N): B/N each, or its floor and ceiling. */
	int low = cfg->batch / c->size, high = (cfg->batch + c->size - 1) / c->size;
	char per_rank[96];
	if (low == high)
		snprintf(per_rank, sizeof(per_rank), "%d", low);
	else
		snprintf(per_rank, sizeof(per_rank), "%d-%d", low, high);
	snprintf(per_rank + strlen(per_rank), sizeof(per_rank) - strlen(per_rank), " per rank");
	if (cfg->accumulate > 1) /* the activations below are a micro-batch's */
		snprintf(per_rank + strlen(per_rank), sizeof(per_rank) - strlen(per_rank),
			 ", in %d micro-batches of at most %d", cfg->accumulate,
			 (high + cfg->accumulate - 1) / cfg->accumulate);
	/* The arena of outputs and gradients, for the most rows a call takes. */
	char acts[128], kept[32];
	bytes_text(model_arena_bytes(m, m->max_rows), acts, sizeof(acts));
	if (m->keep_per_row) { /* attention's scores, in that arena */
		int rows = m->train_rows > 0 && m->train_rows < m->max_rows ? m->train_rows
									     : m->max_rows;
		bytes_text(4.0 * (double)m->keep_per_row * rows, kept, sizeof(kept));
		snprintf(acts + strlen(acts), sizeof(acts) - strlen(acts),
			 " per rank (%s of it kept for the backward: attention's scores)", kept);
	} else {
		snprintf(acts + strlen(acts), sizeof(acts) - strlen(acts), " per rank");
	}
	log_info("mtrain %s: %d rank%s, backend %s, communicator %s; model %s, "
		 "%zu parameters, activations %s; %s lr %g, batch %d (%s), "
		 "%ld steps (%ld per epoch)",
		 MTRAIN_VERSION, c->size, c->size == 1 ? "" : "s", backend, c->ops->name,
		 layers, params_count(&m->reg), acts, kind_name(optim_names, cfg->optim), cfg->lr,
		 cfg->batch, per_rank, total_steps, steps_per_epoch);
	int nodes = report_nodes(c);
	/* The optimizer's slots this rank holds: its shard's under ZeRO-1. */
	int slots = optim_slots(cfg);
	double mine_bytes = 4.0 * slots * (double)sh->len;
	char mine[32], whole[32];
	bytes_text(mine_bytes, mine, sizeof(mine));
	bytes_text(4.0 * slots * (double)sh->total, whole, sizeof(whole));
	if (sh->ranks > 1)
		log_info("zero 1: optimizer state %s per rank (%d slot%s of a 1/%d shard, "
			 "%zu values on rank 0, the most), %s unsharded", mine, slots,
			 slots == 1 ? "" : "s", sh->ranks, sh->len, whole);
	else
		log_info("zero 0: optimizer state %s per rank (%d slot%s, whole on every "
			 "rank)", mine, slots, slots == 1 ? "" : "s");
	if (cfg->restart)
		report_restart(cfg, c, nodes, step);
	const char *eval_data = has_eval ? cfg->eval_data : "none";
	log_info("data %s (%ld rows), eval %s", cfg->data, train->n, eval_data);
	char data[JSON_PATH_LEN], eval[JSON_PATH_LEN];
	metrics_write("{\"event\":\"start\",\"step\":%ld,\"total_steps\":%ld,\"ranks\":%d,"
		      "\"nodes\":%d,\"backend\":\"%s\",\"batch\":%d,\"data\":\"%s\","
		      "\"eval_data\":\"%s\",\"zero\":%d,\"optimizer_bytes_per_rank\":%.0f}",
		      step, total_steps, c->size, nodes, backend, cfg->batch,
		      json_escape(cfg->data, data, sizeof(data)),
		      json_escape(eval_data, eval, sizeof(eval)), sh->ranks > 1, mine_bytes);
}

void report_progress(struct progress *p, struct model *m, struct comm *c, long step,
		     long epoch_shown, long total_steps, float lr)
{
	float stats[2];
	model_take_stats(m, stats);
	double sums[2] = {stats[0], (double)p->rows};
	comm_sum_host(c, sums, 2);
	/* Evaluations and checkpoints are not training speed. */
	double now = log_now(), dt = now - p->since - p->aside;
	double per_step = dt / (double)p->steps;
	/* The loss per label: a model of tokens has targets labels a row. */
	double labels = sums[1] * m->targets, loss = sums[0] / labels;
	char tokens[48] = "";
	if (m->targets > 1)
		snprintf(tokens, sizeof(tokens), " tokens/s %.0f", labels / dt);
	char norm[64] = "";
	if (p->norm > 0) /* every rank's alike: the norm of the reduced gradient */
		snprintf(norm, sizeof(norm), " norm %.4f clipped %ld/%ld", p->norm, p->clipped,
			 p->steps);
	log_info("step %ld/%ld epoch %ld loss %.4f lr %.3e%s samples/s %.0f%s eta %.0fs", step,
		 total_steps, epoch_shown, loss, lr, norm, sums[1] / dt, tokens,
		 per_step * (double)(total_steps - step));
	if (p->norm > 0)
		tensorboard_scalar("train/grad_norm", step, p->norm);
	tensorboard_scalar("train/loss", step, loss);
	tensorboard_scalar("train/lr", step, lr);
	tensorboard_scalar("train/samples_per_s", step, sums[1] / dt);
	char n[4][32], grad[64] = "";
	if (p->norm > 0)
		snprintf(grad, sizeof(grad), ",\"grad_norm\":%s", json_num(p->norm, n[3], 32));
	metrics_write("{\"event\":\"train\",\"step\":%ld,\"epoch\":%ld,\"loss\":%s,"
		      "\"lr\":%s,\"samples_per_s\":%s%s}",
		      step, epoch_shown, json_num(loss, n[0], 32),
		      json_num(lr, n[1], 32), json_num(sums[1] / dt, n[2], 32), grad);
	*p = (struct progress){.since = now};
}

void report_timing(const struct timing *t, long steps, double wall, int batch,
		   double flops_per_row)
{
	if (steps <= 0)
		return;
	double ms = 1e3 / (double)steps;
	double compute = t->forward + t->backward;
	char gflops[32] = "n/a";
	if (flops_per_row > 0)
		snprintf(gflops, sizeof(gflops), "%.2f",
			 compute > 0 ? flops_per_row * t->rows / compute * 1e-9 : 0.0);
	log_info("timing ms/step data %.3f forward %.3f backward %.3f allreduce %.3f "
		 "optimizer %.3f ema %.3f total %.3f samples/s %.0f gflops %s data_wait %.3f",
		 t->data * ms, t->forward * ms, t->backward * ms, t->allreduce * ms,
		 t->optimizer * ms, t->ema * ms, wall * ms, (double)batch * (double)steps / wall,
		 gflops, t->data_wait * ms);
}
