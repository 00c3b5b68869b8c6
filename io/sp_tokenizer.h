/* SentencePiece (Debian's libsentencepiece, a C++ library) behind a C
 * API: byte-pair encoding trained on a text, deterministically, its model
 * kept as SentencePiece's serialized proto (what a file of tokens stores),
 * and text to ids and back. Every text round-trips exactly: the text is
 * not normalized, and a byte no piece covers is a byte token. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Trains BPE of vocab pieces on text (len bytes, its lines the sentences;
 * one thread, every line, in order: the same model for the same text) into
 * *model (malloc'd, *model_len bytes). 0, or -1 with why (SentencePiece's
 * reason, one line). */
int sp_train_bpe(const char *text, size_t len, int vocab, void **model, size_t *model_len,
		 char *why, size_t why_len);

struct sp_tokenizer;
/* The tokenizer of a serialized model, or NULL with why. */
struct sp_tokenizer *sp_open(const void *model, size_t len, char *why, size_t why_len);
void sp_close(struct sp_tokenizer *t);
/* Its pieces: the vocabulary's size. */
int sp_vocab(const struct sp_tokenizer *t);
/* *ids (malloc'd, *n) = text (len bytes) encoded. 0, or -1. */
int sp_encode(const struct sp_tokenizer *t, const char *text, size_t len, int32_t **ids,
	      size_t *n);
/* The text of ids (n), malloc'd and NUL-terminated (*len bytes before the
 * NUL), or NULL when an id is not the vocabulary's. */
char *sp_decode(const struct sp_tokenizer *t, const int32_t *ids, size_t n, size_t *len);

#ifdef __cplusplus
}
#endif
