/* SentencePiece's BPE as `mtrain import --text --tokenizer bpe:N` uses it
 * (io/sp_tokenizer.h, io/tokens_import.c): trained twice on the same text,
 * the same model; a text with newlines, tabs, UTF-8 and bytes no piece
 * covers encodes and decodes back exactly; a file of tokens imported with
 * it holds each split's tokens, its model and its bytes, and its training
 * and validation tokens decode back to the two parts of the text; a
 * vocabulary too small to train is one line. */
#include "dataset.h"
#include "log.h"
#include "sp_tokenizer.h"
#include "unit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A text of words, punctuation, tabs and newlines, some UTF-8. */
static char *make_text(size_t *len)
{
	static const char *const words[] = {"hacker ", "kludge", ", ", "the ", "\u00e9t\u00e9 ",
					    "\u2603", "\tfoo", "bar\n", "cruft ", "\n\n"};
	size_t cap = 1 << 16, n = 0;
	char *t = malloc(cap);
	unsigned s = 7;
	while (n + 16 < cap) {
		s = s * 1103515245u + 12345u;
		const char *w = words[(s >> 16) % 10];
		memcpy(t + n, w, strlen(w));
		n += strlen(w);
	}
	t[n] = 0;
	*len = n;
	return t;
}

static void check_round_trip(const char *text, size_t len)
{
	char why[256];
	void *a = NULL, *b = NULL;
	size_t la = 0, lb = 0, n = 0, back_len = 0;
	EXPECT(sp_train_bpe(text, len, 300, &a, &la, why, sizeof(why)) == 0);
	EXPECT(sp_train_bpe(text, len, 300, &b, &lb, why, sizeof(why)) == 0);
	EXPECT(la == lb && la > 0 && !memcmp(a, b, la)); /* deterministic */
	struct sp_tokenizer *t = sp_open(a, la, why, sizeof(why));
	EXPECT(t != NULL);
	if (!t)
		return;
	EXPECT(sp_vocab(t) == 300);
	/* characters no piece covers: byte-fallback tokens */
	const char odd[] = "\x01\x7f plain \u00ff\U0001F600 end\n";
	char *mixed = malloc(len + sizeof(odd));
	memcpy(mixed, text, len);
	memcpy(mixed + len, odd, sizeof(odd));
	int32_t *ids = NULL;
	EXPECT(sp_encode(t, mixed, len + sizeof(odd) - 1, &ids, &n) == 0);
	EXPECT(n > 0 && n < len); /* pieces of more than a byte */
	char *back = sp_decode(t, ids, n, &back_len);
	EXPECT(back && back_len == len + sizeof(odd) - 1 && !memcmp(back, mixed, back_len));
	int32_t bad = 300;
	EXPECT(sp_decode(t, &bad, 1, &back_len) == NULL);
	printf("BPE of 300 pieces: %zu bytes in %zu tokens, decoded back exactly\n", len, n);
	free(back);
	free(ids);
	free(mixed);
	sp_close(t);
	free(a);
	free(b);
	EXPECT(sp_train_bpe(text, len, 40, &a, &la, why, sizeof(why)) == -1);
	EXPECT(strstr(why, "Vocabulary size is smaller") != NULL && !strchr(why, '\n'));
}

/* The tokens of split of path decoded by the file's own model. */
static char *decode_split(const char *path, int split, size_t *len)
{
	struct dataset d;
	char why[DATASET_WHY_LEN];
	size_t ml = 0;
	*len = 0;
	if (dataset_open_split(&d, path, split, 1, 0, 1))
		return NULL;
	void *model = dataset_tokenizer_model(&d, &ml, why);
	struct sp_tokenizer *t = model ? sp_open(model, ml, why, sizeof(why)) : NULL;
	long n = d.n_tokens;
	int32_t *ids = malloc(sizeof(int32_t) * (size_t)n);
	float *x = malloc(sizeof(float) * (size_t)n);
	uint32_t first = 0;
	char *text = NULL;
	/* windows of 1 (opened so): a token and the next, its label */
	int rc = t ? 0 : -1;
	for (long i = 0; i + 1 < n && !rc; i++) {
		first = (uint32_t)i;
		rc = dataset_read_windows(&d, &first, 1, -d.first, x, &ids[i + 1], why);
		ids[i] = (int32_t)x[0];
	}
	if (!rc)
		text = sp_decode(t, ids, (size_t)n, len);
	EXPECT(d.text_bytes == (long long)*len);
	free(ids);
	free(x);
	free(model);
	if (t)
		sp_close(t);
	dataset_free(&d);
	return text;
}

static void check_import(const char *text, size_t len)
{
	char dir[] = "/tmp/test_tokenizer.XXXXXX", path[64], file[64];
	EXPECT(mkdtemp(dir) != NULL);
	snprintf(file, sizeof(file), "%s/t.txt", dir);
	snprintf(path, sizeof(path), "%s/t.h5", dir);
	FILE *f = fopen(file, "wb");
	fwrite(text, 1, len, f);
	fclose(f);
	char *files[1] = {file};
	EXPECT(dataset_import_text(files, 1, 0.25, 300, path) == 0);
	size_t val = (size_t)((double)len * 0.25), a = 0, b = 0;
	char *train = decode_split(path, DATASET_TRAIN, &a), *held = decode_split(path, DATASET_EVAL, &b);
	EXPECT(train && a == len - val && !memcmp(train, text, a));
	EXPECT(held && b == val && !memcmp(held, text + len - val, b));
	free(train);
	free(held);
	unlink(path);
	user_error_clear();
	EXPECT(dataset_import_text(files, 1, 0.25, 40, path) == -1);
	EXPECT(user_error_pending() && access(path, F_OK) != 0); /* one line, no file */
	f = fopen(file, "ab"); /* a byte that is not UTF-8 */
	fputs("caf\xe9\n", f);
	fclose(f);
	user_error_clear();
	EXPECT(dataset_import_text(files, 1, 0.25, 300, path) == -1);
	EXPECT(strstr(user_error_text(), "is not UTF-8") != NULL && access(path, F_OK) != 0);
	unlink(file);
	rmdir(dir);
}

int main(void)
{
	size_t len;
	char *text = make_text(&len);
	check_round_trip(text, len);
	check_import(text, len);
	free(text);
	return unit_done("test_tokenizer");
}
