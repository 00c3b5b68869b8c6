/* Gradient checks of the sequence layers on the CPU backend: layer
 * normalization, attention (several heads, the causal mask, dropout on its
 * probabilities, odd shapes), position and token embeddings (tied to the
 * logits' too: unembed), an image as
 * tokens, per-token dense layers and gelu's tanh form, each model's
 * backward against central differences of its loss (gradcheck.h); and the
 * arena's plan of what attention keeps (training and evaluating agree). */
#include "gradcheck.h"

int main(void)
{
	/* An image of 2x3 pixels of 4 channels: 6 tokens of 4. */
	const int img[3] = {2, 3, 4}, odd[3] = {1, 5, 6}, wide[3] = {3, 2, 6};
	/* layer normalization on its own, per token, and after a dense */
	check_model_in("tokens,layernorm,globalavgpool,dense", img, 200);
	check_model_in("tokens,dense:5,layernorm:1e-5,tanh,globalavgpool,dense", img, 201);
	check_model_in("dense:6,layernorm,gelu,dense", (const int[3]){1, 1, IN}, 202);
	/* tokens wide enough for the CPU's loops of 8 (two, and 3 left over) */
	check_model_in("tokens,dense:19,layernorm,globalavgpool,dense", img, 213);
	/* per-token dense layers and gelu's tanh form */
	check_model_in("tokens,dense:5,gelu_tanh,dense:3,flatten,dense", img, 203);
	/* attention: one head, several, causal, dropout on the probabilities */
	check_model_in("tokens,attention:1,globalavgpool,dense", img, 204);
	check_model_in("tokens,attention:2,globalavgpool,dense", img, 205);
	check_model_in("tokens,attention:2:causal,flatten,dense", img, 206);
	check_model_in("tokens,attention:4:causal:0.3,globalavgpool,dense", img, 207);
	check_model_in("tokens,attention:3:0.2,globalavgpool,dense", odd, 208);
	/* a pre-norm block and its position embedding, as a ViT writes them */
	check_model_in("tokens,posembed,[layernorm,attention:2],[layernorm,dense:8,gelu,dense:4],"
		       "layernorm,globalavgpool,dense", img, 209);
	check_model_in("conv2d:6:2:1:valid,tokens,posembed,[layernorm,attention:3:causal],"
		       "globalavgpool,dense", wide, 210);
	/* token embeddings: rows of ids, the table's gradient scattered by id */
	const int ids[3] = {1, 1, 5};
	check_model_vocab("embedding:4,posembed,[layernorm,attention:2:causal],flatten,dense", ids,
			  7, 211);
	check_model_vocab("embedding:6,dense:3,globalavgpool,dense", ids, 3, 212);
	/* tied: the table's gradient the sum of its two uses */
	check_model_vocab("embedding:4,[layernorm,attention:2:causal],unembed,flatten,dense", ids,
			  7, 214);
	check_layouts(5, 1, "tokens,posembed,[layernorm,attention:2],layernorm,globalavgpool,dense",
			  img);
	check_layouts(5, 1, "tokens,[attention:2:causal],[dense:8,gelu_tanh,dense:4],flatten,dense",
			  img);
	return unit_done("test_gradcheck_seq");
}
