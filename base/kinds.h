/* mtrain's fixed lists (activations, optimizers, devices, precisions,
 * learning-rate schedules), each written once as an X-macro: the enum, the
 * names the command line and checkpoints use, and the count all come from
 * the one row. Plain C, so the CUDA kernels include it too (via mathfn.h). */
#pragma once
#include <stddef.h>

/* X(id, name): the element-wise activations (--activation), each also a
 * layer kind of --model by its name (layer_spec.h appends this list to its
 * own). A new activation is one row here and its formula in act_fwd and
 * act_bwd (mathfn.h), which the CPU loops and the CUDA kernels both call. */
#define ACT_KINDS(X)                                                           \
	X(ACT_RELU, "relu")                                                    \
	X(ACT_GELU, "gelu")                                                    \
	X(ACT_TANH, "tanh")                                                    \
	X(ACT_SILU, "silu")                                                    \
	X(ACT_GELU_TANH, "gelu_tanh")

/* X(id, name, slots, first slot suffix, second slot suffix, beta1, beta2,
 * weight decay). Slots are TF's names: "<var>/Momentum", "<var>/Adam" (first
 * moment), "<var>/Adam_1" (second moment), "<var>/Lion" (momentum; TF1 names a
 * slot after its optimizer). The last three columns are the defaults when --beta1,
 * --beta2, --weight-decay are left 'default': PyTorch's (lion-pytorch's for
 * lion); sgd and momentum ignore the betas and carry Adam's. A new optimizer
 * is one row here and its case in optim_elem (mathfn.h). */
#define OPTIM_KINDS(X)                                                         \
	X(OPTIM_SGD, "sgd", 0, NULL, NULL, 0.9f, 0.999f, 0.0f)                 \
	X(OPTIM_MOMENTUM, "momentum", 1, "Momentum", NULL, 0.9f, 0.999f, 0.0f) \
	X(OPTIM_ADAM, "adam", 2, "Adam", "Adam_1", 0.9f, 0.999f, 0.0f)         \
	X(OPTIM_ADAMW, "adamw", 2, "Adam", "Adam_1", 0.9f, 0.999f, 0.01f)      \
	X(OPTIM_LION, "lion", 1, "Lion", NULL, 0.9f, 0.99f, 0.0f)

/* The hyper-parameters whose defaults are columns of OPTIM_KINDS, indexing
 * optim_defaults[kind]; OPTIM_HP_NONE: an option that is not one. */
enum optim_hp_id { OPTIM_HP_NONE, OPTIM_HP_BETA1, OPTIM_HP_BETA2, OPTIM_HP_WEIGHT_DECAY,
		   OPTIM_HP_COUNT };

/* X(id, name, open): the accelerator backends, in the order --device auto
 * tries them, each with the function that opens it on this rank (a
 * backend_open_fn: api/backend.h declares them from these rows, and
 * backend_select in src/backend_select.c calls them). A new backend is its
 * file, one row here and its CMake target. */
#define ACCEL_KINDS(X)                                                         \
	X(DEVICE_CUDA, "cuda", backend_cuda_open)

/* X(id, name, ...): where each rank computes (--device): auto, the CPU,
 * or one of the accelerators. */
#define DEVICE_KINDS(X)                                                        \
	X(DEVICE_AUTO, "auto")                                                 \
	X(DEVICE_CPU, "cpu")                                                   \
	ACCEL_KINDS(X)

/* X(id, name): matrix products in fp32 throughout, or bf16 inputs with
 * fp32 accumulation (weights, slots and shadows stay fp32 either way). */
#define PRECISION_KINDS(X)                                                     \
	X(PRECISION_FP32, "fp32")                                              \
	X(PRECISION_BF16, "bf16")

/* X(id, name): the CPU's kernels (--cpu-kernels): oneDNN's where they
 * measured faster than mtrain's, or mtrain's own alone. */
#define CPU_KERNELS_KINDS(X)                                                      \
	X(CPU_KERNELS_ONEDNN, "onednn")                                           \
	X(CPU_KERNELS_OWN, "own")

/* X(id, name): ZeRO stage 1 (--zero): 1 shards the optimizer's update and
 * slots over the ranks, 0 keeps a whole copy on every rank, auto takes 1
 * where the data plane makes it pay (comm.h's zero_pays). */
#define ZERO_KINDS(X)                                                          \
	X(ZERO_OFF, "0")                                                       \
	X(ZERO_ON, "1")                                                        \
	X(ZERO_AUTO, "auto")

/* X(id, name): the variables weight decay applies to (--weight-decay-on):
 * kernels and embeddings (nanoGPT's and Hugging Face's choice: not biases,
 * nor layer or batch normalization's gamma and beta), or every one. */
#define DECAY_KINDS(X)                                                         \
	X(DECAY_MATRICES, "matrices")                                          \
	X(DECAY_ALL, "all")

/* X(id, name): the built-in data a run without --data takes (--dataset). */
#define DATASET_KINDS(X)                                                       \
	X(DATASET_FASHION_MNIST, "fashion-mnist")                              \
	X(DATASET_JARGON, "jargon")

/* X(id, name): the learning rate after warm-up (--schedule). */
#define SCHEDULE_KINDS(X)                                                      \
	X(SCHED_CONSTANT, "constant")                                          \
	X(SCHED_COSINE, "cosine")                                              \
	X(SCHED_STEP, "step")

#define KIND_ID(id, ...) id,
enum act_kind { ACT_KINDS(KIND_ID) };
#define ACT_ONE(...) +1
enum { ACT_COUNT = 0 ACT_KINDS(ACT_ONE) }; /* outside the enum: a switch lists every kind */
#undef ACT_ONE
enum optim_kind { OPTIM_KINDS(KIND_ID) };
enum device_kind { DEVICE_KINDS(KIND_ID) };
enum precision { PRECISION_KINDS(KIND_ID) };
enum cpu_kernels_kind { CPU_KERNELS_KINDS(KIND_ID) };
enum lr_schedule { SCHEDULE_KINDS(KIND_ID) };
enum zero_kind { ZERO_KINDS(KIND_ID) };
enum dataset_kind { DATASET_KINDS(KIND_ID) };
enum decay_kind { DECAY_KINDS(KIND_ID) };
#undef KIND_ID

#ifndef __CUDACC__
#ifdef __cplusplus
extern "C" {
#endif
/* Each list's names in enum order, NULL-terminated: act_names[ACT_GELU]
 * is "gelu". */
extern const char *const act_names[];
extern const char *const optim_names[];
extern const char *const device_names[];
extern const char *const precision_names[];
extern const char *const cpu_kernels_names[];
extern const char *const schedule_names[];
extern const char *const zero_names[];
extern const char *const dataset_names[];
extern const char *const decay_names[];
/* Each optimizer's defaults, the columns of its OPTIM_KINDS row:
 * optim_defaults[OPTIM_LION][OPTIM_HP_BETA2] is 0.99. */
extern const float optim_defaults[][OPTIM_HP_COUNT];

/* The index of word in names, or -1. */
int kind_parse(const char *const *names, const char *word);
/* names[i], or "?" when i is out of range. */
const char *kind_name(const char *const *names, int i);
/* "a|b|c" for help and error lines, in buf; returns buf. */
const char *kind_choices(const char *const *names, char *buf, size_t len);

/* The search for the name nearest a mistyped word, for "did you mean"
 * (unknown flags and config keys, unknown --model layers): kind_near_start
 * with the word, kind_near_offer for each candidate, then kind_near_answer.
 * The word is compared in lower case with '_' as '-'. */
struct kind_near {
	char word[64];        /* the word as compared, e.g. "weight-decay" */
	int len;              /* its length */
	int best_d;           /* the edits of the nearest so far (at first, one
			       * more than the word may be away) */
	const char *best;     /* that candidate's answer, or NULL */
	const char *prefixed; /* the longest name the word begins with, then '-' */
	const char *started;  /* a name that begins with the word */
	int n_started;        /* how many names begin with it */
};
void kind_near_start(struct kind_near *k, const char *word);
/* Offers name, which means answer: a name (answer == name) or an alias of
 * one (another spelling, e.g. "learning-rate" for "lr"). */
void kind_near_offer(struct kind_near *k, const char *name, const char *answer);
/* The answer of the name or alias within 3 edits and half the word's
 * length (fewest edits; the first offered of those), else the longest name
 * the word begins with followed by '-' ("zero-stage": zero), else the one
 * name that begins with the word (of 2 characters or more); NULL when none. */
const char *kind_near_answer(const struct kind_near *k);
#ifdef __cplusplus
}
#endif
#endif
