/* The unit tests' assertions: each failed check prints file:line and what it
 * compared, and unit_done() turns the count into the exit status, so a test
 * cannot pass while a check failed. */
#pragma once
#include <math.h>
#include <stdio.h>
#include <string.h>

static int unit_failures, unit_checks;

#define EXPECT(cond)                                                           \
	do {                                                                   \
		unit_checks++;                                                 \
		if (!(cond)) {                                                 \
			unit_failures++;                                       \
			fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__,       \
				__LINE__, #cond);                              \
		}                                                              \
	} while (0)

/* |got - want| <= tol * max(1, |want|) */
#define EXPECT_NEAR(got, want, tol)                                            \
	do {                                                                   \
		double unit_g_ = (double)(got), unit_w_ = (double)(want);      \
		double unit_s_ = fabs(unit_w_) > 1.0 ? fabs(unit_w_) : 1.0;    \
		unit_checks++;                                                 \
		if (!(fabs(unit_g_ - unit_w_) <= (tol) * unit_s_)) {           \
			unit_failures++;                                       \
			fprintf(stderr, "%s:%d: FAILED: %s = %.9g, want %.9g (tol %g)\n", \
				__FILE__, __LINE__, #got, unit_g_, unit_w_,    \
				(double)(tol));                                \
		}                                                              \
	} while (0)

#define EXPECT_STR(got, want)                                                  \
	do {                                                                   \
		const char *unit_g_ = (got), *unit_w_ = (want);                \
		unit_checks++;                                                 \
		if (strcmp(unit_g_, unit_w_)) {                                \
			unit_failures++;                                       \
			fprintf(stderr, "%s:%d: FAILED: %s = \"%s\", want \"%s\"\n", \
				__FILE__, __LINE__, #got, unit_g_, unit_w_);   \
		}                                                              \
	} while (0)

/* Whether part occurs in text (which may be NULL); says what was missing
 * when it does not. For EXPECT(contains(...)). */
static inline int contains(const char *text, const char *part)
{
	int ok = text && strstr(text, part) != NULL;
	if (!ok)
		fprintf(stderr, "expected \"%s\" in \"%s\"\n", part, text ? text : "(null)");
	return ok;
}

/* Exit status of the test: 0 only if every check ran and passed. */
static inline int unit_done(const char *name)
{
	printf("%s: %d checks, %d failed\n", name, unit_checks, unit_failures);
	return unit_failures || unit_checks == 0 ? 1 : 0;
}
