/* `mtrain generate` of generate.h. The window is the model's context T:
 * token t runs through every layer alone (layer_forward_token), attention
 * taking the keys and values the layers keep of tokens 0..t-1; when the
 * window is full, its last T/2 tokens move to its start and run again (the
 * positions' embeddings are absolute), and generation goes on from there.
 * A byte tokenizer's tokens are the text's bytes. */
#include "generate.h"
#include "check.h"
#include "eval.h"
#include "log.h"
#include "rng.h"
#include "sp_tokenizer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RNG_STREAM_SAMPLE 7 /* the sampling's draws */

float *model_decode_begin(struct model *m, float *apart)
{
	const struct backend *be = m->be;
	size_t n = 0, at = 0;
	for (int i = 0; i < m->n_layers; i++)
		n += m->layer[i].out_size + m->layer[i].keep_size;
	if (!apart)
		apart = be->alloc(be, n * sizeof(float));
	for (int i = 0; i < m->n_layers; i++) {
		struct layer *l = &m->layer[i];
		l->y = l->drops_y ? NULL : apart + at;
		at += l->out_size;
		l->keep = l->keep_size ? apart + at : NULL;
		at += l->keep_size;
	}
	m->layout = -1; /* the next model_forward lays them out again */
	return apart;
}

void model_decode_end(struct model *m, float *apart)
{
	m->be->free(m->be, apart);
}

void model_forward_token(struct model *m, int t)
{
	for (int i = 0; i < m->n_layers; i++) {
		struct layer_ctx c = model_layer_ctx(m, i, 1, 0);
		layer_forward_token(&m->layer[i], &c, t);
	}
}

/* What generation needs of m and its data, checked: 0, or -1 with a
 * user_error naming what is missing. */
static int check_model(const struct model *m, const struct dataset *d, const char *ckpt)
{
	char why[160];
	if (!d->tokens || m->targets < 2)
		return user_error("%s: not a language model (its data %s is not a file of tokens, or "
				  "it does not predict every token's next one)", ckpt, d->path);
	if (!strcmp(d->tokenizer, "bytes") && m->classes != 256)
		return user_error("%s: tokenizer bytes, but the model has %d classes, not 256",
				  d->path, m->classes);
	if (strcmp(d->tokenizer, "bytes") && strcmp(d->tokenizer, "sentencepiece"))
		return user_error("%s: tokenizer '%s': tokens without text (generate reads and "
				  "writes text of the bytes or sentencepiece tokenizers)", d->path,
				  d->tokenizer);
	for (int i = 0; i < m->n_layers; i++)
		if (layer_token_ok(&m->layer[i], why, sizeof(why)))
			return user_error("%s: layer %d (%s) %s", ckpt, i + 1,
					  layer_names[m->layer[i].spec.kind], why);
	return 0;
}

/* The next token from logits (V): the likeliest at temperature 0, else
 * drawn from softmax(logits / temperature) over the top_k likeliest (all
 * with 0). p (V) is scratch. */
static int sample(const float *logits, int V, const struct gen_opts *o, struct rng *r, double *p)
{
	int best = 0;
	for (int j = 1; j < V; j++)
		if (logits[j] > logits[best])
			best = j;
	if (o->temperature <= 0)
		return best;
	double floor = -INFINITY; /* the k-th largest: those below it are out */
	if (o->top_k > 0 && o->top_k < V) {
		for (int j = 0; j < V; j++)
			p[j] = logits[j];
		for (int k = 0; k < o->top_k; k++) { /* k passes: top_k is small */
			int most = k;
			for (int j = k + 1; j < V; j++)
				if (p[j] > p[most])
					most = j;
			double keep = p[k];
			p[k] = p[most];
			p[most] = keep;
		}
		floor = p[o->top_k - 1];
	}
	double sum = 0.0;
	for (int j = 0; j < V; j++) {
		p[j] = logits[j] >= floor ? exp((logits[j] - logits[best]) / o->temperature) : 0.0;
		sum += p[j];
	}
	double u = (double)(rng_next(r) >> 11) * 0x1p-53 * sum, acc = 0.0;
	for (int j = 0; j < V; j++) {
		acc += p[j];
		if (u < acc && p[j] > 0)
			return j;
	}
	return best;
}

/* Token t of the window ids into the model's input and through it; its
 * logits (V) into host. */
static void run_token(struct model *m, const int32_t *ids, int t, float *host)
{
	const struct backend *be = m->be;
	float id = (float)ids[t];
	be->copy_in(be, m->x + t, &id, sizeof(id));
	model_forward_token(m, t);
	const struct layer *last = &m->layer[m->n_layers - 1];
	be->copy_out(be, host, last->y + (size_t)t * m->classes, sizeof(float) * m->classes);
}

/* Generates o->tokens after the prompt (its tokens: prompt, n_prompt)
 * with m, printing the text: each byte as it comes, or with sp the
 * continuation's tokens decoded at the end. */
static void generate(struct model *m, const struct gen_opts *o, const int32_t *prompt,
		     size_t n_prompt, const struct sp_tokenizer *sp)
{
	int T = m->in_dim, V = m->classes, n = 0;
	int32_t *ids = xmalloc(sizeof(int32_t) * (size_t)T);
	int32_t *made = xmalloc(sizeof(int32_t) * (size_t)(o->tokens > 0 ? o->tokens : 1));
	float *logits = xmalloc(sizeof(float) * (size_t)V);
	double *p = xmalloc(sizeof(double) * (size_t)V);
	size_t skip = n_prompt > (size_t)T ? n_prompt - (size_t)T : 0;
	for (size_t i = skip; i < n_prompt; i++) /* the prompt's last T tokens */
		ids[n++] = prompt[i];
	fputs(o->prompt, stdout);
	struct rng r;
	rng_init(&r, o->seed, RNG_STREAM_SAMPLE);
	float *apart = model_decode_begin(m, NULL);
	double t0 = log_now();
	for (int t = 0; t < n - 1; t++)
		run_token(m, ids, t, logits);
	long made_n = 0;
	while (made_n < o->tokens) {
		run_token(m, ids, n - 1, logits);
		int next = sample(logits, V, o, &r, p);
		made[made_n++] = next;
		if (!sp)
			putchar(next);
		if (!sp && next == '\n')
			fflush(stdout);
		if (n == T) { /* full: its last T/2 tokens run again from the start */
			int keep = T / 2;
			memmove(ids, ids + T - keep, sizeof(int32_t) * (size_t)keep);
			n = keep;
			for (int t = 0; t < n - 1; t++)
				run_token(m, ids, t, logits);
		}
		ids[n++] = next;
	}
	double dt = log_now() - t0;
	size_t len = 0;
	char *text = sp ? sp_decode(sp, made, (size_t)made_n, &len) : NULL;
	if (text)
		fwrite(text, 1, len, stdout);
	free(text);
	putchar('\n');
	fflush(stdout);
	model_decode_end(m, apart);
	/* stderr: stdout is the text alone */
	fprintf(stderr, "generate: %ld tokens in %.2f s, %.0f tokens/s (context %d, a token at a "
		"time with the keys and values cached)\n", o->tokens, dt,
		dt > 0 ? (double)o->tokens / dt : 0.0, T);
	free(ids);
	free(made);
	free(logits);
	free(p);
}

/* The prompt's tokens (malloc'd, *n): its bytes, or sp's encoding. 0, or
 * -1 with a user_error. */
static int encode_prompt(const struct gen_opts *o, const struct sp_tokenizer *sp, int32_t **ids,
			 size_t *n)
{
	size_t len = strlen(o->prompt);
	if (sp) {
		if (sp_encode(sp, o->prompt, len, ids, n) || !*n)
			return user_error("--prompt: SentencePiece cannot encode it");
		return 0;
	}
	*ids = xmalloc(sizeof(int32_t) * len);
	for (size_t i = 0; i < len; i++)
		(*ids)[i] = (unsigned char)o->prompt[i];
	*n = len;
	return 0;
}

/* The data's tokenizer, when it is sentencepiece (*sp), checked against
 * the model's vocabulary. 0, or -1 with a user_error. */
static int open_tokenizer(const struct dataset *d, const struct model *m, struct sp_tokenizer **sp)
{
	char why[DATASET_WHY_LEN];
	size_t len = 0;
	*sp = NULL;
	if (strcmp(d->tokenizer, "sentencepiece"))
		return 0;
	void *model = dataset_tokenizer_model(d, &len, why);
	*sp = model ? sp_open(model, len, why, sizeof(why)) : NULL;
	free(model);
	if (!*sp)
		return user_error("%s", why);
	if (sp_vocab(*sp) != m->classes)
		return user_error("%s: its tokenizer has %d pieces, the model %d classes", d->path,
				  sp_vocab(*sp), m->classes);
	return 0;
}

int generate_main(const struct gen_opts *o, struct comm *c)
{
	if (c->size > 1)
		user_error("generate: runs on one rank (start it without mpirun, or with -np 1)");
	else if (strcmp(o->weights, "ema") && strcmp(o->weights, "raw"))
		user_error("--weights: '%s' is not one of ema|raw", o->weights);
	else if (!o->prompt[0])
		user_error("--prompt: empty; the continuation needs a token to follow");
	struct ckpt_model cm;
	if (comm_user_errors(c) ||
	    ckpt_model_open(&cm, o->ckpt, o->data, DATASET_TRAIN, o->device, 1, c))
		return EXIT_USER;
	struct sp_tokenizer *sp = NULL;
	int32_t *prompt = NULL;
	size_t n_prompt = 0;
	int rc = check_model(&cm.model, &cm.data, o->ckpt) ||
		 open_tokenizer(&cm.data, &cm.model, &sp) || encode_prompt(o, sp, &prompt, &n_prompt);
	if (!rc) {
		int ema = !strcmp(o->weights, "ema");
		if (ema)
			ema_swap(&cm.ema, &cm.model.w);
		generate(&cm.model, o, prompt, n_prompt, sp);
		if (ema)
			ema_swap(&cm.ema, &cm.model.w);
	}
	free(prompt);
	if (sp)
		sp_close(sp);
	ckpt_model_close(&cm, c);
	return comm_user_errors(c) ? EXIT_USER : EXIT_OK;
}
