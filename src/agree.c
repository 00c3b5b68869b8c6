/* The agreement between ranks of agree.h: at start-up the same options,
 * data and variable names on every rank; during the run, replica digests
 * (--check-replicas). */
#include "agree.h"
#include "check.h"
#include "hash.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>

int agree_config(const struct config *cfg, struct comm *c)
{
	char *mine = config_to_text(cfg);
	long len = (long)strlen(mine) + 1;
	comm_bcast_host(c, &len, sizeof(len), 0);
	char *root = xmalloc((size_t)len);
	if (c->rank == 0)
		memcpy(root, mine, (size_t)len);
	comm_bcast_host(c, root, (size_t)len, 0);
	char a[PATH_LEN + 64], b[PATH_LEN + 64];
	if (config_diff(root, mine, OPT_SHAPE, a, b, sizeof(a)))
		user_error("started with other options than rank 0: rank 0 has '%s', rank %d '%s'",
			   a, c->rank, b);
	free(root);
	free(mine);
	return comm_user_errors(c) ? -1 : 0;
}

/* Rows of the training set whose digest the ranks compare at start-up
 * (all of them with --verify-data). */
#define AGREE_SAMPLE_ROWS 64

/* What every rank must agree on about its data: ranks on other nodes read
 * files of the same name that may not be the same files. */
struct data_print {
	long train_rows, eval_rows;
	int classes, eval_dim;
	char row[64];       /* a training row's shape, e.g. "[28,28,1]", "[784]" */
	uint64_t train_sum; /* dataset_digest: layout, size and sampled rows */
};

/* This rank's print of the training set, its sampled rows read and
 * checked; -1 with a user error when reading them failed. */
static int data_print_of(const struct config *cfg, const struct dataset *d,
			 struct data_print *p)
{
	memset(p, 0, sizeof(*p));
	p->train_rows = d->n;
	dataset_row_text(d, p->row, sizeof(p->row));
	p->classes = d->classes;
	char why[DATASET_WHY_LEN];
	if (dataset_digest(d, cfg->seed, cfg->verify_data ? -1 : AGREE_SAMPLE_ROWS, &p->train_sum,
			   why))
		return user_error("%s", why);
	return 0;
}

static void eval_print_of(const struct dataset *eval, struct data_print *p)
{
	p->eval_rows = eval ? eval->n_total : 0;
	p->eval_dim = eval ? eval->dim : 0;
}

/* Compares mine with rank 0's (a user error when they differ). Collective. */
static void compare_prints(const struct config *cfg, const struct data_print *mine_p,
			   struct comm *c)
{
	struct data_print mine = *mine_p, root = mine;
	comm_bcast_host(c, &root, sizeof(root), 0);
	if (mine.train_rows != root.train_rows || strcmp(mine.row, root.row) ||
	    mine.classes != root.classes || mine.train_sum != root.train_sum)
		user_error("--data %s is not rank 0's file: %ld rows of %s, %d classes, digest "
			   "%016llx here; %ld rows of %s, %d classes, %016llx on rank 0 (every rank "
			   "must read the same data)", cfg->data, mine.train_rows, mine.row,
			   mine.classes, (unsigned long long)mine.train_sum, root.train_rows,
			   root.row, root.classes, (unsigned long long)root.train_sum);
	else if (mine.eval_rows != root.eval_rows || mine.eval_dim != root.eval_dim)
		user_error("--eval-data %s is not rank 0's file: %ld rows of %d here, %ld rows of "
			   "%d on rank 0 (every rank must read the same data)", cfg->eval_data,
			   mine.eval_rows, mine.eval_dim, root.eval_rows, root.eval_dim);
}

void agree_data(const struct config *cfg, const struct dataset *train,
		const struct dataset *eval, struct comm *c)
{
	struct data_print mine;
	data_print_of(cfg, train, &mine); /* a failure's line is kept: the first */
	eval_print_of(eval, &mine);
	compare_prints(cfg, &mine, c);
}

int agree_registry(const struct params *mine, struct comm *c)
{
	struct params *root = xmalloc(sizeof(*root));
	if (c->rank == 0)
		*root = *mine;
	comm_bcast_host(c, root, sizeof(*root), 0);
	int n = root->n > mine->n ? root->n : mine->n;
	for (int i = 0; i < n; i++) {
		const struct param *a = i < root->n ? &root->p[i] : NULL;
		const struct param *b = i < mine->n ? &mine->p[i] : NULL;
		char sa[64] = "absent", sb[64] = "absent";
		if (a)
			shape_text(a->ndim, a->shape, sa, sizeof(sa));
		if (b)
			shape_text(b->ndim, b->shape, sb, sizeof(sb));
		if (a && b && !strcmp(a->name, b->name) && !strcmp(sa, sb))
			continue;
		if (a && b && strcmp(a->name, b->name))
			user_error("rank %d's model differs from rank 0's at variable %d: rank 0 "
				   "'%s' %s vs rank %d '%s' %s", c->rank, i, a->name, sa, c->rank,
				   b->name, sb);
		else
			user_error("rank %d's model differs from rank 0's: %s: rank 0 %s vs rank %d %s",
				   c->rank, a ? a->name : b->name, sa, c->rank, sb);
		break;
	}
	free(root);
	return comm_user_errors(c) ? -1 : 0;
}

/* A file of tokens without --eval-data is evaluated on its own validation
 * split, where it has one. */
static void eval_tokens_default(struct config *cfg, const struct dataset *train, struct comm *c,
				struct dataset *eval, int *has_eval)
{
	if (cfg->eval_data[0] || !train->tokens)
		return;
	if (dataset_open_split(eval, cfg->data, DATASET_EVAL, cfg->context, c->rank, c->size))
		return;
	int own = eval->split == DATASET_EVAL;
	dataset_free(eval);
	snprintf(cfg->eval_data, PATH_LEN, "%s", own ? cfg->data : "none");
	*has_eval = own;
}

int agree_load_data(struct config *cfg, struct comm *c, struct dataset *train,
		    struct dataset *eval, int *has_eval)
{
	*has_eval = cfg->eval_data[0] && strcmp(cfg->eval_data, "none");
	struct data_print mine;
	memset(&mine, 0, sizeof(mine));
	/* The training set's sampled rows are checked before the evaluation
	 * set is compared with it. */
	if (dataset_open_split(train, cfg->data, DATASET_TRAIN, cfg->context, 0, 1) == 0 &&
	    data_print_of(cfg, train, &mine) == 0 &&
	    (eval_tokens_default(cfg, train, c, eval, has_eval), *has_eval) &&
	    dataset_open_split(eval, cfg->eval_data, DATASET_EVAL, cfg->context, c->rank,
			       c->size) == 0) {
		char ours[64], theirs[64];
		dataset_row_text(eval, ours, sizeof(ours));
		dataset_row_text(train, theirs, sizeof(theirs));
		if (eval->tokens != train->tokens)
			user_error("%s: %s, but the training set %s %s", cfg->eval_data,
				   eval->tokens ? "a file of tokens" : "rows with one label each",
				   cfg->data, train->tokens ? "is a file of tokens" : "has one label a row");
		else if (eval->dim != train->dim)
			user_error("%s: inputs have %d features but the training set %s has %d",
				   cfg->eval_data, eval->dim, cfg->data, train->dim);
		else if (strcmp(ours, theirs))
			user_error("%s: input rows are %s but the training set %s's are %s",
				   cfg->eval_data, ours, cfg->data, theirs);
		else /* its labels are checked against the model's as they are read */
			eval->classes = train->classes;
	}
	/* Collective, so every rank takes part even after its own error. */
	if (comm_user_errors(c))
		return -1;
	eval_print_of(*has_eval ? eval : NULL, &mine);
	compare_prints(cfg, &mine, c);
	if (!user_error_pending()) {
		if (cfg->batch > train->n)
			user_error("--batch %d is larger than the training set %s (%ld rows)",
				   cfg->batch, cfg->data, train->n);
		else if (cfg->batch < c->size)
			user_error("--batch %d is smaller than the number of ranks (%d): every "
				   "rank needs at least one row", cfg->batch, c->size);
		else if (cfg->accumulate > 1 && cfg->sync_bn)
			user_error("--sync-bn with --accumulate %d: batch norm's global statistics "
				   "are the whole batch's, which no micro-batch sees; use one of them",
				   cfg->accumulate);
		else if (cfg->batch / c->size < cfg->accumulate)
			user_error("--accumulate %d: a rank's share of --batch %d over %d rank%s is "
				   "%d rows, fewer than its micro-batches (each needs a row)",
				   cfg->accumulate, cfg->batch, c->size, c->size == 1 ? "" : "s",
				   cfg->batch / c->size);
		else if (train->classes < 2)
			user_error("%s: labels hold %d class; need at least 2", cfg->data,
				   train->classes);
	}
	return comm_user_errors(c) ? -1 : 0;
}

int agree_replicas(const struct backend *be, const float *buf, const struct params *reg,
		   float *host, const char *what, long step, struct comm *c)
{
	uint64_t mine[PARAM_MAX], *all = xcalloc((size_t)c->size * PARAM_MAX, sizeof(*all));
	be->copy_out(be, host, buf, reg->total * sizeof(float));
	/* Trainable variables only: the moving statistics of batchnorm differ
	 * across ranks between syncs by design. */
	int n = reg->n_trainable;
	for (int i = 0; i < n; i++)
		mine[i] = fnv1a64(FNV1A64_INIT, host + reg->p[i].offset,
				  reg->p[i].size * sizeof(float));
	comm_allgather_host(c, mine, all, sizeof(mine));
	int bad_rank = -1, bad_var = -1;
	for (int r = 1; r < c->size && bad_rank < 0; r++)
		for (int i = 0; i < n && bad_rank < 0; i++)
			if (all[(size_t)r * PARAM_MAX + i] != all[i])
				bad_rank = r, bad_var = i;
	if (bad_rank >= 0 && c->rank == 0)
		log_error("replicas drifted at step %ld: rank %d's %s of %s differ from rank 0's "
			  "(FNV-1a %016llx vs %016llx); stopping", step, bad_rank, what,
			  reg->p[bad_var].name,
			  (unsigned long long)all[(size_t)bad_rank * PARAM_MAX + bad_var],
			  (unsigned long long)all[bad_var]);
	free(all);
	return bad_rank >= 0 ? -1 : 0;
}
