/* `mtrain generate`: text from a language model's checkpoint, a token at a
 * time with the keys and values of the tokens before it cached (each new
 * token costs O(T), not a forward over the whole window). */
#pragma once
#include <stdint.h>

#include "comm.h"
#include "model.h"

/* The options of `mtrain generate` (main.c parses them). */
struct gen_opts {
	const char *ckpt;    /* the checkpoint */
	const char *data;    /* its file of tokens (the tokenizer), NULL: its --data */
	const char *weights; /* "ema" or "raw" */
	const char *prompt;  /* the text the continuation follows */
	long tokens;         /* how many to generate */
	double temperature;  /* logits / temperature; 0: always the likeliest */
	int top_k;           /* sample among the k likeliest; 0: all */
	uint64_t seed;       /* the sampling's */
	int device;          /* enum device_kind */
};

/* Decoding m (a language model: embedding, causal attention and per-token
 * layers, layer_token_ok) a token at a time: model_decode_begin gives
 * every layer's output and keep a place of its own for one row (the
 * planned layouts share places by the order of a whole forward, and a
 * later layer's output could take the place of what attention keeps of
 * the tokens before: its cache); model_forward_token runs token t of the
 * row whose ids are in m->x, tokens 0..t-1 run before it (whatever the
 * places held before: apart, when not NULL, is an earlier call's), and the
 * last
 * layer's token t (its logits) then lies at m->layer[last].y + t * classes;
 * model_decode_end frees the places (a model_forward after it lays the
 * model out as planned again). */
float *model_decode_begin(struct model *m, float *apart);
void model_forward_token(struct model *m, int t);
void model_decode_end(struct model *m, float *apart);

/* Prints o->prompt and its continuation to stdout; the tokens/s on stderr.
 * Returns the exit status (EXIT_USER after one line for bad input). */
int generate_main(const struct gen_opts *o, struct comm *c);
