/* Logging for mtrain: informational lines from rank 0, a rank's own errors,
 * the one-line user-error convention (exit status 2) and the metrics file. */
#pragma once
#include <stdarg.h>
#include <stdio.h>

#include "mtrain.h"

/* Host names are kept to this many bytes, with the NUL. */
#define LOG_HOST_LEN 64

#ifdef __cplusplus
extern "C" {
#endif


/* Sets the identity printed in error lines; called once by comm_init. */
void log_set_identity(int rank, int size, const char *host);
int log_rank(void);
const char *log_host(void);
/* The GPU this rank uses, for error lines; -1 (the default) when none. */
void log_set_device(int device);
int log_device(void);

/* Seconds on a monotonic clock, for rates and timeouts. */
double log_now(void);

/* Prints a line to stdout on rank 0 only. */
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* An information line from every rank, for a decision each rank takes
 * itself: rank 0's as log_info's, the others' after "rank R: ". */
void log_each(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "mtrain: warning: ..." to stderr on rank 0 only. */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Prints "mtrain: error: ..." to stderr on this rank, whatever its number,
 * as "mtrain: error: rank R on HOST: ..." when the job has several ranks. */
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Writes the start of that line ("mtrain: error: " and, with with_rank,
 * "rank R on HOST: ") into buf; returns its length. */
size_t log_error_prefix(int with_rank, char *buf, size_t len);
/* The same line, naming the rank when with_rank, whatever the job's size.
 * Safe from any thread (the watchdog's). */
void log_error_line(int with_rank, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Records a user error on this rank without printing it: the message waits
 * until the ranks agree (see comm_user_errors) so the job prints one line. Only
 * the first message of a phase is kept. Returns -1 for `return user_error(..)`. */
int user_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Whether this rank has a pending user error, and its text. */
int user_error_pending(void);
const char *user_error_text(void);
/* The longest user error kept (several lines for a checkpoint's mismatches). */
#define USER_ERROR_MAX 16384
void user_error_clear(void);

/* Metrics file: one JSON object per line, written by rank 0. NULL path: none. */
/* A count of bytes for people, in buf: "4.94 MiB", "200.7 KiB", "96 B"
 * (binary units, as the start line and the model summary print them);
 * returns buf. */
const char *bytes_text(double bytes, char *buf, size_t len);
int metrics_open(const char *path);
void metrics_write(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void metrics_close(void);
/* s as the inside of a JSON string in buf (quotes, backslashes and control
 * characters escaped, a byte that is not part of valid UTF-8 written as
 * the \u00XX of its Latin-1 character, so the text is always valid JSON);
 * returns buf. 6 * strlen(s) + 1 bytes always suffice. */
const char *json_escape(const char *s, char *buf, size_t len);
/* Writes s to f as a quoted JSON string (json_escape), or null when s is
 * NULL. */
void json_put(FILE *f, const char *s);
/* v as a JSON number (7 significant digits), or null when it is NaN or
 * infinite (a diverged loss), in buf; returns buf. */
const char *json_num(double v, char *buf, size_t len);
/* Room for json_escape of a path: every byte may become \u00XX. */
#define JSON_PATH_LEN (6 * FILE_PATH_LEN)

#ifdef __cplusplus
}
#endif
