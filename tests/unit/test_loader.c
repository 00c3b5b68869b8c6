/* The data loader (src/loader.c): each rank's rows of every global batch,
 * for batches that divide by the ranks and batches that do not, and for
 * more ranks than rows of a batch (a rank with an empty shard); together
 * the ranks' shards are the global batch, in rank order. Each epoch's order
 * is a bijection of the rows, the same on every rank and for a loader that
 * starts at a later epoch (a resume), and another for another epoch or
 * seed. Prefetch and retry hand back the right batch. */
#include "backend.h"
#include "dataset.h"
#include "fixtures.h"
#include "loader.h"
#include "unit.h"

#include <stdlib.h>

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
 * it, and each epoch's order is a bijection shared by every rank. */
static void check_shards(long n, long batch, int size)
{
	const struct backend *be = backend_cpu();
	struct dataset d;
	data_make(&d, n);
	struct loader l[MAX_RANKS];
	for (int r = 0; r < size; r++)
		loader_init(&l[r], be, &d, 77, batch, r, size);
	long steps = n / batch; /* the trainer drops the last partial batch */
	int bad_batches = 0, empty_shards = 0;
	uint32_t *prev = calloc((size_t)n, sizeof(uint32_t));
	char *seen = calloc((size_t)n, 1);
	for (long e = 0; e < EPOCHS; e++) {
		memset(seen, 0, (size_t)n);
		for (long pos = 0; pos < steps; pos++) {
			long k = 0; /* rows of the global batch so far */
			for (int r = 0; r < size; r++) {
				struct staged *s = loader_current(&l[r], e, pos);
				long want = batch * (r + 1) / size - batch * r / size;
				EXPECT(s->rows == want);
				empty_shards += s->rows == 0;
				for (int i = 0; i < s->rows; i++, k++) {
					long id = row_of(s, i, n);
					/* rank 0's order: every rank's must be it */
					if (id < 0 || id != (long)l[0].perm[pos * batch + k] ||
					    seen[id]++)
						bad_batches++;
				}
			}
			EXPECT(k == batch);
		}
		EXPECT(is_bijection(l[0].perm, n));
		for (int r = 1; r < size; r++)
			EXPECT(!memcmp(l[r].perm, l[0].perm, sizeof(uint32_t) * (size_t)n));
		if (e > 0) /* another epoch, another order */
			EXPECT(memcmp(prev, l[0].perm, sizeof(uint32_t) * (size_t)n));
		memcpy(prev, l[0].perm, sizeof(uint32_t) * (size_t)n);
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
	free(seen);
	dataset_free(&d);
}

/* The order depends on (seed, epoch) only: a loader that starts at epoch 2
 * (a resume) stages what one that went through epochs 0 and 1 does; one
 * rank of one has the order one rank of three has (not the world size);
 * another seed gives another order. */
static void check_order_keys(void)
{
	const struct backend *be = backend_cpu();
	enum { N = 40, B = 8 };
	struct dataset d;
	data_make(&d, N);
	struct loader a, b, alone, other;
	loader_init(&a, be, &d, 5, B, 1, 3);
	loader_init(&b, be, &d, 5, B, 1, 3);
	loader_init(&alone, be, &d, 5, B, 0, 1);
	loader_init(&other, be, &d, 6, B, 1, 3);
	for (long e = 0; e < 2; e++)
		loader_current(&a, e, 0);
	struct staged *sa = loader_current(&a, 2, 3), *sb = loader_current(&b, 2, 3);
	EXPECT(sa->rows == sb->rows && sa->rows == 3);
	EXPECT(!memcmp(sa->x, sb->x, sizeof(float) * DIM * (size_t)sa->rows));
	EXPECT(!memcmp(sa->y, sb->y, sizeof(int32_t) * (size_t)sa->rows));
	loader_current(&alone, 2, 3);
	EXPECT(!memcmp(a.perm, alone.perm, sizeof(uint32_t) * N));
	loader_current(&other, 2, 3);
	EXPECT(memcmp(a.perm, other.perm, sizeof(uint32_t) * N));
	EXPECT(is_bijection(other.perm, N));
	loader_free(&a);
	loader_free(&b);
	loader_free(&alone);
	loader_free(&other);
	dataset_free(&d);
}

/* The first row id of global batch pos of epoch 0 as staged by a fresh
 * loader (rank 0 of 1). */
static long first_row(const struct dataset *d, long batch, long pos)
{
	struct loader l;
	loader_init(&l, backend_cpu(), d, 9, batch, 0, 1);
	long id = row_of(loader_current(&l, 0, pos), 0, d->n);
	loader_free(&l);
	return id;
}

/* The trainer's order of calls: current, prefetch of the next, current
 * (the prefetched one); a retried step gets its own batch back, whether or
 * not the next one was prefetched. */
static void check_prefetch_retry(void)
{
	enum { N = 30, B = 5 };
	struct dataset d;
	data_make(&d, N);
	long want[4];
	for (int p = 0; p < 4; p++)
		want[p] = first_row(&d, B, p);
	struct loader l;
	loader_init(&l, backend_cpu(), &d, 9, B, 0, 1);
	struct staged *s = loader_current(&l, 0, 0);
	EXPECT(row_of(s, 0, N) == want[0]);
	loader_prefetch(&l, 0, 1);
	EXPECT(row_of(s, 0, N) == want[0]); /* this step's batch is untouched */
	s = loader_current(&l, 0, 1);
	EXPECT(row_of(s, 0, N) == want[1]);
	loader_prefetch(&l, 0, 2);
	loader_retry(&l); /* step 1 failed after the prefetch of 2 */
	s = loader_current(&l, 0, 1);
	EXPECT(row_of(s, 0, N) == want[1]);
	loader_retry(&l); /* and again, before any prefetch */
	s = loader_current(&l, 0, 1);
	EXPECT(row_of(s, 0, N) == want[1]);
	loader_prefetch(&l, 0, 2);
	s = loader_current(&l, 0, 2);
	EXPECT(row_of(s, 0, N) == want[2]);
	s = loader_current(&l, 0, 3); /* nothing prefetched: staged now */
	EXPECT(row_of(s, 0, N) == want[3]);
	loader_free(&l);
	dataset_free(&d);
}

int main(void)
{
	check_shards(24, 12, 1); /* one rank: the whole batch */
	check_shards(24, 12, 4); /* divides */
	check_shards(23, 7, 3);  /* 7 = 2 + 2 + 3 rows, 2 rows left over an epoch */
	check_shards(41, 10, 4); /* 2 + 3 + 2 + 3 */
	check_shards(23, 7, 7);  /* one row each */
	check_shards(10, 2, 3);  /* empty shard: rank 0 gets no row */
	check_shards(9, 3, 8);   /* five empty shards */
	check_order_keys();
	check_prefetch_retry();
	return unit_done("test_loader");
}
