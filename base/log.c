/* Logging: rank-0 information lines, per-rank errors, deferred user errors
 * and the JSON-lines metrics file. */
#include "log.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int g_rank, g_size = 1, g_device = -1;
static char g_host[LOG_HOST_LEN] = "?";
static char g_user_error[USER_ERROR_MAX];
static FILE *g_metrics;

void log_set_identity(int rank, int size, const char *host)
{
	g_rank = rank;
	g_size = size;
	snprintf(g_host, sizeof(g_host), "%s", host);
}

double log_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int log_rank(void) { return g_rank; }
void log_set_device(int device) { g_device = device; }
int log_device(void) { return g_device; }
const char *log_host(void) { return g_host; }

void log_info(const char *fmt, ...)
{
	if (g_rank != 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	fflush(stdout);
}

void log_each(const char *fmt, ...)
{
	char line[1024];
	int n = g_rank ? snprintf(line, sizeof(line), "rank %d: ", g_rank) : 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	puts(line); /* one write after the flush: lines of ranks stay whole */
	fflush(stdout);
}

/* prefix, the formatted text and a newline on stderr in one write: mpirun
 * forwards each write as it comes, so a line written in pieces could be
 * split by another rank's or stdout's line in the job's output. */
static void stderr_line(const char *prefix, const char *fmt, va_list ap)
{
	char line[sizeof(g_user_error) + LOG_HOST_LEN + 64];
	size_t n = (size_t)snprintf(line, sizeof(line), "%s", prefix);
	if (n < sizeof(line)) {
		int k = vsnprintf(line + n, sizeof(line) - n, fmt, ap);
		n += k < 0 ? 0 : (size_t)k;
	}
	if (n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	line[n] = 0;
	fputs(line, stderr);
	fflush(stderr);
}

void log_warn(const char *fmt, ...)
{
	if (g_rank != 0)
		return;
	va_list ap;
	va_start(ap, fmt);
	stderr_line("mtrain: warning: ", fmt, ap);
	va_end(ap);
}

/* The one format of an error line's start. */
size_t log_error_prefix(int with_rank, char *buf, size_t len)
{
	int n = with_rank ? snprintf(buf, len, "mtrain: error: rank %d on %s: ", g_rank, g_host)
			  : snprintf(buf, len, "mtrain: error: ");
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

static void error_line(int with_rank, const char *fmt, va_list ap)
{
	char prefix[LOG_HOST_LEN + 64];
	log_error_prefix(with_rank, prefix, sizeof(prefix));
	stderr_line(prefix, fmt, ap);
}

void log_error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	error_line(g_size > 1, fmt, ap);
	va_end(ap);
}

void log_error_line(int with_rank, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	error_line(with_rank, fmt, ap);
	va_end(ap);
}

int user_error(const char *fmt, ...)
{
	if (g_user_error[0])
		return -1;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(g_user_error, sizeof(g_user_error), fmt, ap);
	va_end(ap);
	return -1;
}

int user_error_pending(void) { return g_user_error[0] != 0; }
const char *user_error_text(void) { return g_user_error; }
void user_error_clear(void) { g_user_error[0] = 0; }

int metrics_open(const char *path)
{
	if (g_rank != 0 || !path || !path[0])
		return 0;
	g_metrics = fopen(path, "a");
	if (!g_metrics)
		return user_error("--metrics %s: cannot open for appending: %s", path, strerror(errno));
	return 0;
}

void metrics_write(const char *fmt, ...)
{
	if (!g_metrics)
		return;
	va_list ap;
	va_start(ap, fmt);
	vfprintf(g_metrics, fmt, ap);
	va_end(ap);
	fputc('\n', g_metrics);
	fflush(g_metrics);
}

void metrics_close(void)
{
	if (g_metrics)
		fclose(g_metrics);
	g_metrics = NULL;
}

/* The length of the well-formed UTF-8 sequence at s (2 to 4), or 0. */
static int utf8_run(const unsigned char *s)
{
	int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
	if (s[0] > 0xf4)
		return 0;
	for (int i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	/* No overlong forms, surrogates, or code points past U+10FFFF. */
	if ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] > 0x9f) ||
	    (s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] > 0x8f))
		return 0;
	return n;
}

const char *bytes_text(double bytes, char *buf, size_t len)
{
	if (bytes >= 1048576.0)
		snprintf(buf, len, "%.2f MiB", bytes / 1048576.0);
	else if (bytes >= 1024.0)
		snprintf(buf, len, "%.1f KiB", bytes / 1024.0);
	else
		snprintf(buf, len, "%.0f B", bytes);
	return buf;
}

const char *json_escape(const char *s, char *buf, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t o = 0;
	while (*p && o + 7 <= len) { /* room for the longest, "\u00XX", and the NUL */
		int n = *p >= 0x80 ? utf8_run(p) : 1;
		if (*p == '"' || *p == '\\')
			o += (size_t)snprintf(buf + o, len - o, "\\%c", *p);
		else if (*p < 0x20 || n == 0) /* a byte that is not UTF-8: its Latin-1 character */
			o += (size_t)snprintf(buf + o, len - o, "\\u%04x", *p);
		else {
			memcpy(buf + o, p, (size_t)n);
			o += (size_t)n;
			p += n - 1;
		}
		p++;
	}
	buf[o] = 0;
	return buf;
}

const char *json_num(double v, char *buf, size_t len)
{
	if (isfinite(v))
		snprintf(buf, len, "%.7g", v);
	else
		snprintf(buf, len, "null");
	return buf;
}

void json_put(FILE *f, const char *s)
{
	if (!s) {
		fputs("null", f);
		return;
	}
	size_t len = 6 * strlen(s) + 1; /* every byte may become \u00XX */
	char *buf = malloc(len);
	fprintf(f, "\"%s\"", buf ? json_escape(s, buf, len) : "");
	free(buf);
}
