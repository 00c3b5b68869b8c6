/* The data loader (src/loader.c): each rank's rows of every global batch,
 * for batches that divide by the ranks and batches that do not, and for
 * more ranks than rows of a batch (a rank with an empty shard); together
 * the ranks' shards are the global batch, in rank order. Each epoch's order
 * is a bijection of the rows, the same on every rank and for a loader that
 * starts at a later epoch (a resume), and another for another epoch or
 * seed. Prefetch and retry hand back the right batch. All of it for both
 * orders: the computed one (ORDER_FEISTEL, a fresh run's, no stored
 * permutation) and the stored one of runs resumed from checkpoints made
 * before it (ORDER_LEGACY, loader_order's). */
#include "backend.h"
#include "dataset.h"
#include "fixtures.h"
#include "loader.h"
#include "unit.h"

#include <stdlib.h>
#include <unistd.h>

enum { DIM = 2, CLASSES = 5, MAX_RANKS = 8, EPOCHS = 3 };

/* n rows where row i is x = (i, 1000 + i), y = i % CLASSES: a staged row
 * names the row it came from. */
static void data_make(struct dataset *d, long n)
{
	fixture_dataset(d, n, DIM, CLASSES);
	for (long i = 0; i < n; i++) {
		d->xf[i * DIM] = (float)i;
		d->xf[i * DIM + 1] = (float)(1000 + i);
		d->y[i] = (int32_t)(i % CLASSES);
	}
}

/* The row a staged row i came from, or -1 when its x and y do not belong
 * to one row of the data. */
static long row_of(const struct staged *s, int i, long n)
{
	long id = (long)s->x[(size_t)i * DIM];
	if (id < 0 || id >= n || s->x[(size_t)i * DIM + 1] != (float)(1000 + id) ||
	    s->y[i] != (int32_t)(id % CLASSES))
		return -1;
	return id;
}

/* Whether perm (n) holds every row exactly once. */
static int is_bijection(const uint32_t *perm, long n)
{
	char *seen = calloc((size_t)n, 1);
	int ok = 1;
	for (long i = 0; i < n; i++) {
		if (perm[i] >= n || seen[perm[i]])
			ok = 0;
		else
			seen[perm[i]] = 1;
	}
	free(seen);
	return ok;
}

/* size ranks' loaders over n rows, global batch B: every batch of EPOCHS
 * epochs is the ranks' shards in rank order, each shard B*r/N..B*(r+1)/N of
 * it, and each epoch's order (k) is a bijection shared by every rank. */
static void check_shards(long n, long batch, int size, enum order_kind k)
{
	const struct backend *be = backend_cpu();
	struct dataset d;
	data_make(&d, n);
	struct loader l[MAX_RANKS];
	for (int r = 0; r < size; r++) {
		loader_init(&l[r], be, &d, 77, batch, r, size, 2);
		loader_set_order(&l[r], k);
		EXPECT((l[r].perm != NULL) == (k == ORDER_LEGACY)); /* no N-row array otherwise */
	}
	uint32_t *ord = calloc((size_t)n, sizeof(uint32_t));
	long steps = n / batch; /* the trainer drops the last partial batch */
	int bad_batches = 0, empty_shards = 0;
	uint32_t *prev = calloc((size_t)n, sizeof(uint32_t));
	char *seen = calloc((size_t)n, 1);
	for (long e = 0; e < EPOCHS; e++) {
		memset(seen, 0, (size_t)n);
		loader_rows(k, 77, e, 0, (int)n, n, ord);
		for (long pos = 0; pos < steps; pos++) {
			long j = 0; /* rows of the global batch so far */
			for (int r = 0; r < size; r++) {
				struct staged *s = loader_current(&l[r], e, pos);
				long want = batch * (r + 1) / size - batch * r / size;
				EXPECT(s->rows == want);
				empty_shards += s->rows == 0;
				for (int i = 0; i < s->rows; i++, j++) {
					long id = row_of(s, i, n);
					/* the epoch's order: every rank's must be it */
					if (id < 0 || id != (long)ord[pos * batch + j] ||
					    seen[id]++)
						bad_batches++;
				}
			}
			EXPECT(j == batch);
		}
		EXPECT(is_bijection(ord, n));
		if (e > 0) /* another epoch, another order */
			EXPECT(memcmp(prev, ord, sizeof(uint32_t) * (size_t)n));
		memcpy(prev, ord, sizeof(uint32_t) * (size_t)n);
	}
	if (bad_batches)
		fprintf(stderr, "n %ld, batch %ld, %d ranks: %d rows not where the epoch's order "
			"puts them (or seen twice in an epoch)\n", n, batch, size, bad_batches);
	EXPECT(bad_batches == 0);
	/* More ranks than rows of a batch: size - batch shards are empty. */
	EXPECT(empty_shards == (batch < size ? (int)(size - batch) * (int)steps * EPOCHS : 0));
	for (int r = 0; r < size; r++)
		loader_free(&l[r]);
	free(prev);
	free(ord);
	free(seen);
	dataset_free(&d);
}

/* The order depends on (seed, epoch) only: a loader that starts at epoch 2
 * (a resume) stages what one that went through epochs 0 and 1 does; rank 1
 * of three stages the rows one rank alone stages at the same places of the
 * batch (not the world size); another seed gives another order. */
static void check_order_keys(enum order_kind k)
{
	const struct backend *be = backend_cpu();
	enum { N = 40, B = 8 };
	struct dataset d;
	data_make(&d, N);
	struct loader a, b, alone;
	loader_init(&a, be, &d, 5, B, 1, 3, 2);
	loader_init(&b, be, &d, 5, B, 1, 3, 2);
	loader_init(&alone, be, &d, 5, B, 0, 1, 2);
	loader_set_order(&a, k);
	loader_set_order(&b, k);
	loader_set_order(&alone, k);
	for (long e = 0; e < 2; e++)
		loader_current(&a, e, 0);
	struct staged *sa = loader_current(&a, 2, 3), *sb = loader_current(&b, 2, 3);
	EXPECT(sa->rows == sb->rows && sa->rows == 3);
	EXPECT(!memcmp(sa->x, sb->x, sizeof(float) * DIM * (size_t)sa->rows));
	EXPECT(!memcmp(sa->y, sb->y, sizeof(int32_t) * (size_t)sa->rows));
	struct staged *s1 = loader_current(&alone, 2, 3); /* rank 1 of 3 has rows 2..4 of it */
	EXPECT(s1->rows == B && !memcmp(sa->x, s1->x + 2 * DIM, sizeof(float) * DIM * 3));
	uint32_t mine[N], other[N];
	loader_rows(k, 5, 2, 0, N, N, mine);
	loader_rows(k, 6, 2, 0, N, N, other);
	EXPECT(memcmp(mine, other, sizeof(mine)));
	EXPECT(is_bijection(other, N));
	loader_free(&a);
	loader_free(&b);
	loader_free(&alone);
	dataset_free(&d);
}

/* The computed order is not the stored one (a checkpoint must say which). */
static void check_orders_differ(void)
{
	enum { N = 50 };
	uint32_t f[N], l[N];
	loader_rows(ORDER_FEISTEL, 42, 0, 0, N, N, f);
	loader_rows(ORDER_LEGACY, 42, 0, 0, N, N, l);
	EXPECT(memcmp(f, l, sizeof(f)));
}

/* The first row id of global batch pos of epoch as staged by a fresh
 * loader (rank 0 of 1). */
static long first_row(const struct dataset *d, long batch, long epoch, long pos)
{
	struct loader l;
	loader_init(&l, backend_cpu(), d, 9, batch, 0, 1, 1);
	long id = row_of(loader_current(&l, epoch, pos), 0, d->n);
	loader_free(&l);
	return id;
}

/* The trainer's order of calls, with the reader thread ahead: each batch
 * as a fresh loader stages it, across epochs and around the ring; a
 * retried step gets its own batch back unchanged, however far the reader
 * got meanwhile; a jump forward or back (a resume) gives that batch. */
static void check_read_ahead(int read_ahead)
{
	enum { N = 30, B = 5, PER = N / B };
	struct dataset d;
	data_make(&d, N);
	long want[3 * PER];
	for (int g = 0; g < 3 * PER; g++)
		want[g] = first_row(&d, B, g / PER, g % PER);
	struct loader l;
	loader_init(&l, backend_cpu(), &d, 9, B, 0, 1, read_ahead);
	for (int g = 0; g < 3 * PER; g++) {
		struct staged *s = loader_current(&l, g / PER, g % PER);
		EXPECT(row_of(s, 0, N) == want[g]);
		EXPECT(!s->bad);
		if (g % 4 == 1) { /* a retry, after the reader had time to run */
			float x0[B * DIM];
			memcpy(x0, s->x, sizeof(x0));
			usleep(20000);
			s = loader_current(&l, g / PER, g % PER);
			EXPECT(row_of(s, 0, N) == want[g]);
			EXPECT(!memcmp(x0, s->x, sizeof(x0)));
		}
	}
	EXPECT(row_of(loader_current(&l, 0, 3), 0, N) == want[3]);         /* back */
	EXPECT(row_of(loader_current(&l, 2, 1), 0, N) == want[2 * PER + 1]); /* ahead */
	EXPECT(row_of(loader_current(&l, 2, 2), 0, N) == want[2 * PER + 2]);
	loader_free(&l);
	dataset_free(&d);
}

int main(void)
{
	for (int k = ORDER_FEISTEL; k <= ORDER_LEGACY; k++) {
		check_shards(24, 12, 1, k); /* one rank: the whole batch */
		check_shards(24, 12, 4, k); /* divides */
		check_shards(23, 7, 3, k);  /* 7 = 2 + 2 + 3 rows, 2 rows left over an epoch */
		check_shards(41, 10, 4, k); /* 2 + 3 + 2 + 3 */
		check_shards(23, 7, 7, k);  /* one row each */
		check_shards(10, 2, 3, k);  /* empty shard: rank 0 gets no row */
		check_shards(9, 3, 8, k);   /* five empty shards */
		check_order_keys(k);
	}
	check_orders_differ();
	check_read_ahead(1);
	check_read_ahead(4);
	return unit_done("test_loader");
}
