/* An mtrain model as Keras 3 sees it: the functional model's config.json
 * (every layer kind as its Keras layer, under the same names, wired as
 * mtrain wires them; a residual block's add as Keras' Add: keras.c), and
 * where each variable lives in Keras' weights file ("<layer>/vars/<i>": a
 * Dense's kernel is vars/0, its bias vars/1; batch norm's gamma, beta,
 * moving mean and variance vars/0 to 3; a MultiHeadAttention's in its
 * sublayers' groups, "<layer>/query_dense/vars/0" for the query's kernel:
 * keras_vars.c). The files themselves are io/weights_file's. */
#pragma once
#include <stddef.h>

#include "model.h"
#include "weights_file.h"

#define KERAS_INPUT_NAME "input_layer" /* the functional model's input */

/* The config.json text of m as a Keras functional model named "mtrain",
 * its input called "input_layer" ([None, H, W, C], or [None, H * W * C]
 * for a model without 2-D layers), its output probabilities where mtrain
 * trains on the logits (a last Dense's activation is softmax; after any
 * other last layer, an Activation "softmax" is added). malloc'd, or NULL
 * with a user_error naming the first layer Keras cannot express as mtrain
 * computes it. */
char *keras_model_config(const struct model *m);
/* The name of the Activation layer keras_model_config adds after m's last
 * layer ("softmax"), or NULL when the last layer is a Dense. */
const char *keras_softmax_layer(const struct model *m);
/* metadata.json's text (malloc'd): Keras' format version and the time. */
char *keras_metadata(void);
/* Keras' place of each variable of m's registry: keys[p] =
 * "<layer>/vars/<i>" (or "<layer>/<sublayer>/vars/<i>") for m->reg.p[p],
 * as keras_layer_vars writes it. */
void keras_var_keys(const struct model *m, char (*keys)[PARAM_NAME_LEN]);
/* How many groups keras_layer_vars may fill for m, at most. */
int keras_group_room(const struct model *m);
/* The groups of a Keras weights file for m with values host_w (P, the
 * registry's layout): groups[0] the input layer's (no variables), then
 * one per layer of m, each followed by its sublayers' (attention's query,
 * key, value and output), each variable a view into host_w in Keras'
 * order (views: room for m->reg.n), then, for the whole .keras model
 * (whole), the softmax layer keras_model_config adds, if it does. Returns
 * how many it filled (room: keras_group_room); the names live in names
 * (as many). */
int keras_layer_vars(const struct model *m, const float *host_w, int whole,
		     struct keras_layer_vars *groups, struct ckpt_var *views,
		     char (*names)[PARAM_NAME_LEN]);
