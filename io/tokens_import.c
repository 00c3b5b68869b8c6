/* The importers of files of tokens (dataset.h): text as the byte
 * tokenizer's tokens, llm.c's token shards and nanoGPT's raw uint16 files,
 * each checked whole before a file is written (dataset_write_tokens: under
 * a temporary name, renamed into place). */
#include "dataset.h"
#include "check.h"
#include "log.h"
#include "sp_tokenizer.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* A progress line each time this much more has been read. */
#define PROGRESS_BYTES ((size_t)256 << 20)

/* *buf (*n of *cap bytes) with room for at least more bytes after *n. */
static void room(uint8_t **buf, size_t n, size_t *cap, size_t more)
{
	if (*cap - n >= more)
		return;
	size_t bigger = *cap * 2 + more + (1 << 20);
	uint8_t *grown = xmalloc(bigger);
	if (n)
		memcpy(grown, *buf, n);
	free(*buf);
	*buf = grown;
	*cap = bigger;
}

/* The bytes of path (gzip-compressed or plain; raw) appended to *buf (*n
 * of *cap), a progress line every PROGRESS_BYTES. 0, or -1 with a
 * user_error (missing, unreadable, empty). */
static int read_file(const char *path, uint8_t **buf, size_t *n, size_t *cap, int raw)
{
	/* zlib reads a plain file as it is, but takes one that begins as gzip
	 * does (1f 8b: a uint16 token 35615) for gzip: raw files by stdio. */
	gzFile f = raw ? NULL : gzopen(path, "rb");
	FILE *plain = raw ? fopen(path, "rb") : NULL;
	if (!f && !plain)
		return user_error("%s: cannot open: %s", path, strerror(errno ? errno : ENOENT));
	size_t before = *n, shown = *n / PROGRESS_BYTES;
	long got;
	do {
		room(buf, *n, cap, 1 << 16);
		size_t space = *cap - *n;
		space = space > 1u << 30 ? 1u << 30 : space;
		got = plain ? (long)fread(*buf + *n, 1, space, plain)
			    : gzread(f, *buf + *n, (unsigned)space);
		if (got > 0)
			*n += (size_t)got;
		if (*n / PROGRESS_BYTES > shown) {
			shown = *n / PROGRESS_BYTES;
			log_info("import: %zu MiB read", *n >> 20);
		}
	} while (got > 0);
	int err = Z_OK;
	const char *msg = plain ? strerror(EIO) : gzerror(f, &err);
	int bad = plain ? ferror(plain) : got < 0 || (err != Z_OK && err != Z_BUF_ERROR);
	if (plain)
		fclose(plain);
	else
		gzclose(f);
	if (bad)
		return user_error("%s: cannot read: %s", path, msg);
	if (*n == before)
		return user_error("%s: the file is empty", path);
	return 0;
}

/* The text of path appended: read_file, and no NUL byte. */
static int read_text(const char *path, uint8_t **buf, size_t *n, size_t *cap)
{
	size_t before = *n;
	if (read_file(path, buf, n, cap, 0))
		return -1;
	uint8_t *nul = memchr(*buf + before, 0, *n - before);
	if (nul)
		return user_error("%s: byte %zu is NUL: a binary file, not text", path,
				  (size_t)(nul - (*buf + before)));
	return 0;
}

/* text (n bytes, the last n_val the validation split) as SentencePiece's
 * BPE of vocab pieces trained on the training split, into path. 0, or -1
 * with a user_error. */
/* The offset of text's first byte that is not UTF-8 (an overlong, cut or
 * stray sequence), or n when it is all UTF-8. */
static size_t utf8_bad(const uint8_t *text, size_t n)
{
	for (size_t i = 0; i < n;) {
		uint8_t c = text[i];
		int more = c < 0x80 ? 0 : (c & 0xe0) == 0xc0 && c >= 0xc2 ? 1 : (c & 0xf0) == 0xe0 ? 2
			 : (c & 0xf8) == 0xf0 && c <= 0xf4 ? 3 : -1;
		if (more < 0 || i + (size_t)more >= n + (more == 0))
			return i;
		for (int k = 1; k <= more; k++)
			if ((text[i + k] & 0xc0) != 0x80)
				return i;
		i += (size_t)more + 1;
	}
	return n;
}

static int write_bpe(const char *path, const uint8_t *text, size_t n, size_t n_val, int vocab)
{
	size_t bad = utf8_bad(text, n);
	if (bad < n) /* SentencePiece would take it for U+FFFD: no way back */
		return user_error("import: --tokenizer bpe:%d: byte %zu of the text is not UTF-8 "
				  "(the byte tokenizer takes any bytes)", vocab, bad);
	char why[256];
	void *model = NULL;
	size_t model_len = 0, counts[2] = {0, 0};
	int32_t *ids[2] = {NULL, NULL};
	struct sp_tokenizer *t = NULL;
	log_info("import: training BPE of %d pieces on %zu bytes (SentencePiece)", vocab, n - n_val);
	int rc = sp_train_bpe((const char *)text, n - n_val, vocab, &model, &model_len, why,
			      sizeof(why));
	if (rc)
		user_error("import: --tokenizer bpe:%d: SentencePiece cannot train it: %s", vocab, why);
	else if (!(t = sp_open(model, model_len, why, sizeof(why))))
		rc = user_error("import: the trained model does not load: %s", why);
	for (int s = 0; s < 2 && !rc; s++) /* each split's text, its own tokens */
		if (sp_encode(t, (const char *)text + (s ? n - n_val : 0), s ? n_val : n - n_val,
			      &ids[s], &counts[s]))
			rc = user_error("import: SentencePiece cannot encode the text");
	if (!rc) {
		int width = vocab <= 65536 ? 2 : 4;
		for (int s = 0; s < 2 && width == 2; s++) /* to uint16 in place */
			for (size_t i = 0; i < counts[s]; i++)
				((uint16_t *)(void *)ids[s])[i] = (uint16_t)ids[s][i];
		const struct tokens_meta meta = {"sentencepiece", model, model_len,
						 {(long long)(n - n_val), (long long)n_val}};
		log_info("import: %zu and %zu tokens (%.2f bytes a token)", counts[0], counts[1],
			 counts[0] ? (double)(n - n_val) / (double)counts[0] : 0.0);
		rc = dataset_write_tokens(path, ids[0], (long)counts[0], ids[1], (long)counts[1], width,
					  sp_vocab(t), &meta);
	}
	if (t)
		sp_close(t);
	free(model);
	free(ids[0]);
	free(ids[1]);
	return rc;
}

int dataset_import_text(char *const *files, int n_files, double val_fraction, int bpe,
			const char *path)
{
	if (!(val_fraction >= 0 && val_fraction < 1))
		return user_error("import: --val-fraction %g must be in [0, 1)", val_fraction);
	uint8_t *buf = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;
	for (int i = 0; i < n_files && !rc; i++)
		rc = read_text(files[i], &buf, &n, &cap);
	long n_val = (long)((double)n * val_fraction);
	if (!rc) {
		log_info("import: %zu bytes of text from %d file%s, %ld of them the validation "
			 "split, into %s", n, n_files, n_files == 1 ? "" : "s", n_val, path);
		const struct tokens_meta meta = {"bytes", NULL, 0, {(long long)n - n_val, n_val}};
		rc = bpe ? write_bpe(path, buf, n, (size_t)n_val, bpe)
			 : dataset_write_tokens(path, buf, (long)n - n_val, buf + n - n_val, n_val, 1,
						256, &meta);
	}
	free(buf);
	return rc;
}

/* llm.c's token shard header: 256 int32, magic, version, token count. */
#define LLMC_MAGIC 20240520
#define LLMC_HEADER 256

/* The uint16 tokens of path appended to *buf (*n bytes): an llm.c shard
 * (its header checked against the file and dropped) or, with raw, the
 * whole file (nanoGPT's np.uint16 .bin). Every token below vocab. 0, or
 * -1 with a user_error naming the file and what is wrong. */
static int read_shard(const char *path, int raw, int vocab, uint8_t **buf, size_t *n,
		      size_t *cap)
{
	size_t at = *n;
	if (read_file(path, buf, n, cap, 1))
		return -1;
	size_t len = *n - at;
	if (!raw) {
		int32_t h[LLMC_HEADER];
		if (len < sizeof(h))
			return user_error("%s: %zu bytes, shorter than llm.c's header of 256 int32",
					  path, len);
		memcpy(h, *buf + at, sizeof(h));
		if (h[0] != LLMC_MAGIC)
			return user_error("%s: magic %d, not llm.c's %d (a raw uint16 file? import "
					  "it with --uint16)", path, h[0], LLMC_MAGIC);
		if (h[1] != 1)
			return user_error("%s: version %d; llm.c's token shards are version 1",
					  path, h[1]);
		if (h[2] < 0 || (size_t)h[2] * 2 != len - sizeof(h))
			return user_error("%s: its header says %d tokens, the file holds %zu bytes "
					  "of them (%zu tokens)", path, h[2], len - sizeof(h),
					  (len - sizeof(h)) / 2);
		memmove(*buf + at, *buf + at + sizeof(h), len - sizeof(h));
		len -= sizeof(h);
		*n = at + len;
	}
	if (len % 2 || !len)
		return user_error("%s: %zu bytes of tokens: not a whole number of uint16", path, len);
	for (size_t i = 0; i < len / 2; i++) {
		uint16_t id;
		memcpy(&id, *buf + at + 2 * i, 2);
		if (id >= vocab)
			return user_error("%s: token %zu is %u, not below --vocab %d", path, i, id,
					  vocab);
	}
	return 0;
}

int dataset_import_shards(char *const *files, int n_files, const char *val, int raw, int vocab,
			  double val_fraction, const char *path)
{
	if (vocab < 2 || vocab > 65536)
		return user_error("import: --vocab %d: uint16 tokens hold 2 to 65536 ids", vocab);
	uint8_t *buf = NULL, *vbuf = NULL;
	size_t n = 0, cap = 0, vn = 0, vcap = 0;
	int rc = 0;
	for (int i = 0; i < n_files && !rc; i++)
		rc = read_shard(files[i], raw, vocab, &buf, &n, &cap);
	if (!rc && val)
		rc = read_shard(val, raw, vocab, &vbuf, &vn, &vcap);
	long tokens = (long)(n / 2), n_val = val ? (long)(vn / 2) : (long)(tokens * val_fraction);
	if (!rc) {
		const uint16_t *ids = (const uint16_t *)(void *)buf;
		log_info("import: %ld tokens of %s from %d file%s, %ld tokens the validation split%s, "
			 "into %s", tokens, raw ? "uint16" : "llm.c shards", n_files,
			 n_files == 1 ? "" : "s", n_val, val ? " (--val)" : "", path);
		const struct tokens_meta meta = {.tokenizer = "ids"};
		rc = val ? dataset_write_tokens(path, ids, tokens, vbuf, n_val, 2, vocab, &meta)
			 : dataset_write_tokens(path, ids, tokens - n_val, ids + tokens - n_val, n_val,
						2, vocab, &meta);
	}
	free(buf);
	free(vbuf);
	return rc;
}
