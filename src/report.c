/* The lines of report.h. */
#include "report.h"
#include "log.h"
#include "tensorboard.h"
#include "version.h"

#include <stdio.h>

void report_start(const struct config *cfg, struct comm *c, const struct backend *be,
		  const struct model *m, const struct dataset *train, int has_eval, long step,
		  long total_steps, long steps_per_epoch)
{
	char layers[256];
	config_hidden_text(cfg, layers, sizeof(layers));
	for (char *p = layers; *p; p++)
		if (*p == ',')
			*p = '-';
	char backend[64];
	snprintf(backend, sizeof(backend), "%s%s", be->name,
		 cfg->precision == PRECISION_BF16 ? " bf16" : "");
	/* Rank r takes rows [r*B/N, (r+1)*B/N): B/N each, or its floor and ceiling. */
	int low = cfg->batch / c->size, high = (cfg->batch + c->size - 1) / c->size;
	char per_rank[32];
	if (low == high)
		snprintf(per_rank, sizeof(per_rank), "%d", low);
	else
		snprintf(per_rank, sizeof(per_rank), "%d-%d", low, high);
	log_info("mtrain %s: %d rank%s, backend %s, communicator %s; model %d-%s-%d %s, "
		 "%zu parameters; %s lr %g, batch %d (%s per rank), %ld steps (%ld per epoch)",
		 MTRAIN_VERSION, c->size, c->size == 1 ? "" : "s", backend, c->ops->name,
		 train->dim, layers, train->classes, kind_name(act_names, cfg->act),
		 params_count(&m->reg), kind_name(optim_names, cfg->optim), cfg->lr, cfg->batch,
		 per_rank, total_steps, steps_per_epoch);
	const char *eval_data = has_eval ? cfg->eval_data : "none";
	log_info("data %s (%ld rows), eval %s", cfg->data, train->n, eval_data);
	char data[JSON_PATH_LEN], eval[JSON_PATH_LEN];
	metrics_write("{\"event\":\"start\",\"step\":%ld,\"total_steps\":%ld,\"ranks\":%d,"
		      "\"backend\":\"%s\",\"batch\":%d,\"data\":\"%s\",\"eval_data\":\"%s\"}",
		      step, total_steps, c->size, backend, cfg->batch,
		      json_escape(cfg->data, data, sizeof(data)),
		      json_escape(eval_data, eval, sizeof(eval)));
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
	log_info("step %ld/%ld epoch %ld loss %.4f lr %.3e samples/s %.0f eta %.0fs", step,
		 total_steps, epoch_shown, sums[0] / sums[1], lr, sums[1] / dt,
		 per_step * (double)(total_steps - step));
	tensorboard_scalar("train/loss", step, sums[0] / sums[1]);
	tensorboard_scalar("train/lr", step, lr);
	tensorboard_scalar("train/samples_per_s", step, sums[1] / dt);
	char n[3][32];
	metrics_write("{\"event\":\"train\",\"step\":%ld,\"epoch\":%ld,\"loss\":%s,"
		      "\"lr\":%s,\"samples_per_s\":%s}",
		      step, epoch_shown, json_num(sums[0] / sums[1], n[0], 32),
		      json_num(lr, n[1], 32), json_num(sums[1] / dt, n[2], 32));
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
		 "optimizer %.3f ema %.3f total %.3f samples/s %.0f gflops %s",
		 t->data * ms, t->forward * ms, t->backward * ms, t->allreduce * ms,
		 t->optimizer * ms, t->ema * ms, wall * ms, (double)batch * (double)steps / wall,
		 gflops);
}
