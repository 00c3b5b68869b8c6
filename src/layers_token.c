/* A layer's forward for one token of one row (layers.h), for decoding a
 * token at a time with a cache (generate.c): causal attention takes the
 * new token's query against the keys and values it keeps of the tokens
 * before it (layer_attn.c); every other kind a language model is built of
 * acts on each token alone, so it runs as itself on a sequence of one
 * token: a copy of the layer one token long, its input, output and
 * position's variables offset to token t. */
#include "layer_ops.h"

#include <stdio.h>

int layer_token_ok(const struct layer *l, char *why, size_t len)
{
	switch (l->spec.kind) {
	case LAYER_CONV2D:
	case LAYER_MAXPOOL2D:
	case LAYER_AVGPOOL2D:
	case LAYER_GLOBALAVGPOOL:
	case LAYER_FLATTEN:
	case LAYER_BATCHNORM:
	case LAYER_TOKENS:
		snprintf(why, len, "mixes a row's tokens or works on images: a token at a time "
			 "cannot run it");
		return -1;
	case LAYER_ATTENTION:
		if (l->spec.causal)
			return 0;
		snprintf(why, len, "is not causal: its tokens see the later ones, which are not "
			 "there yet when a token is generated");
		return -1;
	default:
		if (l->seq)
			return 0;
		snprintf(why, len, "does not give a sequence of tokens");
		return -1;
	}
}

void layer_forward_token(struct layer *l, const struct layer_ctx *c, int t)
{
	if (l->spec.kind == LAYER_ATTENTION) {
		layer_attn_forward_at(l, c, t);
		return;
	}
	struct layer one = *l;
	struct layer_ctx at = *c;
	/* An embedding's input is the row of T ids, one a token. */
	int ids = l->spec.kind == LAYER_EMBEDDING;
	size_t in_w = ids ? 1 : (size_t)l->in[2], out_w = (size_t)l->out[2];
	one.in[ids ? 2 : 1] = 1;
	one.out[1] = 1;
	one.in_size = in_w;
	one.out_size = out_w;
	one.y = l->y ? l->y + t * out_w : NULL;
	at.x += t * in_w;
	if (at.x2)
		at.x2 += t * in_w;
	if (at.act_y)
		at.act_y += t * out_w;
	if (l->spec.kind == LAYER_POSEMBED) /* position t's vector */
		at.w[0] += t * out_w;
	layer_forward(&one, &at);
}
