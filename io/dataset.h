/* Training and evaluation data: HDF5 files with dataset "x" [N, D] or, for
 * images, [N, H, W, C] (channels last, as Keras stores them; float32, or
 * uint8 scaled to [0,1]) and dataset "y" [N] (integer class ids), either
 * streamed (dataset_open: rows read from the file when asked, each checked
 * as it is read; what training and evaluation do) or loaded whole
 * (dataset_load: previews, tests, tools), and the importers that write them
 * (x and y stored whole and uncompressed, so that rows are read by offset). */
#pragma once
#include <stddef.h>
#include <stdint.h>

#include "mtrain.h"

/* More classes than this is a mistake in the labels, not a model. */
#define DATASET_MAX_CLASSES (1 << 20)

struct dataset {
	char path[PATH_LEN];
	long n_total;   /* rows in the file, e.g. 60000 */
	long first, n;  /* rows held here: [first, first + n) */
	int dim;        /* D = H*W*C values per row, e.g. 784 */
	int shape[3];   /* a row's {H, W, C}, e.g. {28, 28, 1}; {1, 1, D} when x is
			 * [N, D] (a flat row) */
	int classes;    /* attribute num_classes of y, else max(y) + 1 */
	uint8_t *x8;    /* (n, D) when stored as uint8, else NULL; rows of
			 * (H, W, C) for images */
	float *xf;      /* (n, D) when stored as float32, else NULL */
	int32_t *y;     /* (n); streamed: the labels, when they take at most
			 * DATASET_LABEL_CACHE bytes, else NULL */
	/* Streamed (dataset_open; x8, xf and y NULL): */
	int streamed;
	int fd;              /* the file, open for reading */
	const uint8_t *map;  /* the file mapped read-only, rows copied from it, when
			      * x is stored whole and the file is at most
			      * DATASET_MAP_MAX bytes; else NULL (pread) */
	size_t map_len;
	int x_bytes;         /* a value of x in the file: 1 (uint8) or 4 (float32) */
	long long x_at, y_at; /* byte offsets of x (native uint8 or float32) and y
			       * (native int32) where stored whole and uncompressed,
			       * read from map or with pread; -1: read through HDF5
			       * (h5) */
	int64_t h5[3];       /* the HDF5 file, x and y (hid_t) where x_at or y_at
			      * is -1; else 0 */
	long long identity[4]; /* device, inode, size, mtime (ns) of the file
				* the child checked: the one opened must be it,
				* and stay so while it is read */
	/* A file of tokens (dataset_tokens.c): one split's tokens stored whole
	 * at x_at, x_bytes each (1, 2 or 4), read as windows. */
	int tokens;          /* 1: a file of tokens, else 0 */
	int split;           /* which split was asked for: DATASET_TRAIN or
			      * DATASET_EVAL (its val_tokens, when it has them) */
	long n_tokens;       /* the split's tokens */
	int window;          /* T: a row is T token ids (as floats) and its
			      * labels the T tokens after each (the next-token
			      * targets); 0 before dataset_set_window */
	char tokenizer[16];  /* "bytes", "sentencepiece" or "ids" (tokens only) */
	long long text_bytes; /* the split's text in bytes (bits per byte), 0:
			       * unknown */
	long long model_at;  /* sentencepiece: its serialized model's bytes in
			      * the file ("tokenizer_model", stored whole), else -1 */
	long model_len;
};

/* What a file of tokens says besides its tokens (dataset_write_tokens). */
struct tokens_meta {
	const char *tokenizer;  /* "bytes", "sentencepiece", "ids" */
	const void *model;      /* sentencepiece: its serialized model, else NULL */
	size_t model_len;
	long long bytes[2];     /* the text's bytes of the training and validation
				 * splits; 0 where there is no text */
};

enum { DATASET_TRAIN, DATASET_EVAL };

/* A streamed set's labels (4 bytes a row) are held in memory up to this
 * size (16M rows); beyond, read with each row. */
#define DATASET_LABEL_CACHE ((double)(64 << 20))

/* A streamed file at most this large whose x is stored whole is mapped:
 * its rows are copied from the page cache without a system call each
 * (what makes streaming as fast as memory for small rows). A larger one is
 * read with pread, so that no rank maps more than this of a data file:
 * mapped pages count in a process' resident memory (shared, though, by the
 * ranks of a node and with the page cache). */
#define DATASET_MAP_MAX ((size_t)256 << 20)

/* One line saying why a read failed, e.g. "F.h5: x[4093, 3, 0, 0] is NaN". */
#define DATASET_WHY_LEN (PATH_LEN + 256)

/* Loads rows [part*N/parts, (part+1)*N/parts) of path: (0, 1) loads all.
 * Checks layout (x of rank 2 or 4), dtypes, NaN/Inf and negative labels.
 * Returns 0, or -1 with a user_error naming the file and the problem. */
int dataset_load(struct dataset *d, const char *path, int part, int parts);
void dataset_free(struct dataset *d);
/* Opens path for streaming rows [part*N/parts, (part+1)*N/parts) (memory:
 * none per row; a file mapped, DATASET_MAP_MAX, as its rows are read): its
 * layout, dtypes and classes (num_classes, else found from a pass over y)
 * are read in a child (sandbox.h); x and y stored whole must lie within the
 * file. 0, or -1 with a user_error naming the file. */
int dataset_open(struct dataset *d, const char *path, int part, int parts);
/* Reads d's rows with pread from now on, as a file larger than
 * DATASET_MAP_MAX is read (tests compare the two ways). */
void dataset_unmap(struct dataset *d);
/* x (rows, D) and y (rows) = rows idx[0..rows) (relative to d->first), or
 * the rows [begin, begin + rows): from memory when loaded, else read from
 * the file and checked (inputs finite, labels in [0, classes)), the file
 * checked unchanged since it was opened, before and after the reads. 0, or
 * -1 with one line in why (DATASET_WHY_LEN bytes) naming the file and the
 * row. Safe on any thread, on several at once (a mapping or pread; an HDF5
 * built thread-safe, which dataset_open requires where it reads through
 * HDF5). A mapped file cut short during the read is one line in why, as
 * with pread (dataset_open catches SIGBUS for it). */
int dataset_read_rows(const struct dataset *d, const uint32_t *idx, int rows, float *x,
		      int32_t *y, char *why);
int dataset_read_range(const struct dataset *d, long begin, int rows, float *x, int32_t *y,
		       char *why);
/* A digest of d's layout (rows, shape, dtype, classes, file size) and of
 * count rows chosen by seed, all ranks' alike for the same file: the
 * start-up comparison. With count < 0, of every row, each checked as it is
 * read (--verify-data). 0, or -1 with why. */
int dataset_digest(const struct dataset *d, uint64_t seed, long count, uint64_t *digest,
		   char *why);
/* Row i (< count) of the digest's sample of n rows under seed: positions
 * of an order no epoch uses. */
long dataset_sample_row(uint64_t seed, long i, long n);
/* A row's shape as text: "[784]" for a flat row, "[28,28,1]" for images. */
void dataset_row_text(const struct dataset *d, char *buf, size_t len);
/* Checks every label held is below classes, which `whose` had (e.g. "the
 * training set"). 0, or -1 with a user_error naming the first bad row. */
int dataset_check_labels(const struct dataset *d, int classes, const char *whose);
/* x (rows, D) and y (rows) = rows idx[0..rows) of d (indices relative to
 * d->first), uint8 scaled by 1/255. */
void dataset_gather(const struct dataset *d, const uint32_t *idx, int rows,
		    float *x, int32_t *y);
/* Same for the contiguous rows [begin, begin + rows). */
void dataset_rows(const struct dataset *d, long begin, int rows, float *x, int32_t *y);
/* Writes an HDF5 data file (x uint8 when x8, else float32 xf) of n rows of
 * shape row ({H, W, C}: x [n, H, W, C]; {1, 1, D}: x [n, D]) under a
 * temporary name, then renames it into place. Returns 0 or -1 (user_error). */
int dataset_write(const char *path, const uint8_t *x8, const float *xf,
		  const int32_t *y, long n, const int row[3], int classes);
/* The same, plus dataset class_names [classes] of variable-length UTF-8
 * strings (names[k] naming class k) when names is not NULL. On a failed
 * write (a full disk) the line names path and the reason, and nothing is
 * left but what path held before. */
int dataset_write_named(const char *path, const uint8_t *x8, const float *xf, const int32_t *y,
			long n, const int row[3], int classes, char *const *names);
/* Opens path's split (DATASET_TRAIN or DATASET_EVAL) for streaming as
 * dataset_open does. A file of tokens (dataset "tokens", and "val_tokens"
 * which DATASET_EVAL takes when the file has them) is then windowed: rows
 * of window T (dataset_set_window). 0, or -1 with a user_error. */
int dataset_open_split(struct dataset *d, const char *path, int split, int window, int part,
		       int parts);
/* Labels per row: the window of a file of tokens, else 1. */
static inline int dataset_labels(const struct dataset *d) { return d->window > 0 ? d->window : 1; }
/* A file of tokens' rows are windows of T + 1 tokens, T apart: inputs are
 * its first T, labels its last T. Training windows begin at shift + w * T
 * (shift in [0, T), dataset_window_shift: the epoch's), so there are
 * floor(N / T) - 1 of them whatever the shift; evaluation windows at w * T,
 * floor((N - 1) / T) of them (every target but the last (N - 1) mod T
 * once). Rows [part*W/parts, (part+1)*W/parts) are held. 0, or -1 with a
 * user_error when the split has no window of T + 1 tokens. */
int dataset_set_window(struct dataset *d, int window, int part, int parts);
/* A sentencepiece file's serialized model (malloc'd, *len bytes), read
 * from the file opened (d->model_at), or NULL with why. */
void *dataset_tokenizer_model(const struct dataset *d, size_t *len, char *why);
/* The first token of training's windows in epoch under seed: in [0, T). */
long dataset_window_shift(uint64_t seed, long epoch, int window);
/* dataset_read_rows for a file of tokens with its windows shifted by shift
 * tokens: x (rows, T) the ids as floats, y (rows, T) the next tokens, each
 * checked below the vocabulary. 0, or -1 with why. */
int dataset_read_windows(const struct dataset *d, const uint32_t *idx, int rows, long shift,
			 float *x, int32_t *y, char *why);
/* Writes a file of tokens: train (n_train) and, when n_val > 0, val (n_val)
 * as "tokens" and "val_tokens", bytes each (1, 2 or 4: the narrowest that
 * holds vocab ids), with attributes vocab_size, tokenizer, bytes and
 * val_bytes, and meta's model as "tokenizer_model", under a temporary name
 * renamed into place. 0, or -1 (user_error; nothing left). */
int dataset_write_tokens(const char *path, const void *train, long n_train, const void *val,
			 long n_val, int bytes, int vocab, const struct tokens_meta *meta);
/* Imports text files (their bytes, one after another), the last
 * val_fraction of them the validation split, into path: as tokens of the
 * byte tokenizer (vocab 256) with bpe 0, else as SentencePiece's BPE of bpe
 * pieces trained on the training split's text (deterministic), its model
 * stored in the file. One line, exit status 2, for a missing, empty or
 * binary file (a NUL byte), or a vocabulary that cannot be trained. 0, or
 * -1. */
int dataset_import_text(char *const *files, int n_files, double val_fraction, int bpe,
			const char *path);
/* Imports token files as a file of tokens into path, uint16, vocab_size
 * vocab, tokenizer "ids" (no text: tokens only): llm.c's shards (each
 * header checked: magic 20240520, version 1, the token count the file's)
 * or, with raw, nanoGPT's headerless uint16 files, their tokens one after
 * another; the validation split val's (NULL: the last val_fraction). Each
 * bad file one line naming it; nothing written then. 0, or -1. */
int dataset_import_shards(char *const *files, int n_files, const char *val, int raw, int vocab,
			  double val_fraction, const char *path);
/* Converts IDX images (.gz or raw) [N, rows, cols] and labels into path,
 * x as [N, rows, cols, 1] (Fashion-MNIST: [N, 28, 28, 1]). 0 or -1. */
int dataset_import_idx(const char *images, const char *labels, const char *path);
