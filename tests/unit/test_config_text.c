/* The configuration as text: a float written as a user writes it (the
 * shortest decimal that reads back to the same float) in --help; the text
 * checkpoints store keeps "%.9g", and compares equal by value to a text
 * written either way. */
#include "config.h"
#include "log.h"
#include "unit.h"

#include <float.h>
#include <stdint.h>
#include <stdlib.h>

/* f as the option parser reads a value: strtod, then to float. */
static float read_back(const char *text)
{
	char *end;
	float f = (float)strtod(text, &end);
	EXPECT(*text && !*end);
	return f;
}

static uint32_t bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, sizeof(u));
	return u;
}

/* The significant digits of text ("0.0003" 1, "1.5e-8" 2, "300" 1). */
static int significant(const char *text)
{
	char digits[64];
	int n = 0;
	for (const char *p = text; *p && *p != 'e' && n < 63; p++)
		if (*p >= '0' && *p <= '9' && (n || *p != '0'))
			digits[n++] = *p;
	while (n > 1 && digits[n - 1] == '0')
		n--;
	return n;
}

/* text reads back to f bitwise, and no decimal of fewer significant
 * digits does (f rounded to them does not read back). */
static void check_shortest(float f, const char *text)
{
	EXPECT(bits(read_back(text)) == bits(f));
	int k = significant(text);
	if (k > 1) {
		char fewer[32];
		snprintf(fewer, sizeof(fewer), "%.*e", k - 2, (double)f);
		if (bits(read_back(fewer)) == bits(f))
			fprintf(stderr, "%s: %s reads back too, with fewer digits\n", text, fewer);
		EXPECT(bits(read_back(fewer)) != bits(f));
	}
}

static void check_float_text(void)
{
	static const struct {
		float f;
		const char *want;
	} cases[] = {
		{0.001f, "0.001"}, {1e-3f, "0.001"}, {0.1f, "0.1"}, {3e-4f, "0.0003"},
		{5e-4f, "0.0005"}, {0.999f, "0.999"}, {0.9f, "0.9"}, {0.3f, "0.3"},
		{1e-8f, "1e-8"}, {1e-5f, "1e-5"}, {1e-4f, "0.0001"}, {0.0123456789f, "0.012345679"},
		{0.9995f, "0.9995"}, {300.0f, "300"}, {86400.0f, "86400"}, {1e6f, "1000000"},
		{1e7f, "1e7"}, {16777217.0f, "1.6777216e7"}, {3e38f, "3e38"},
		{FLT_MAX, "3.4028235e38"}, {FLT_MIN, "1.1754944e-38"}, {FLT_TRUE_MIN, "1e-45"},
		{0.0f, "0"}, {-0.5f, "-0.5"}, {1.0f / 3.0f, "0.33333334"},
	};
	char buf[32];
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		EXPECT_STR(config_float_text(cases[i].f, buf, sizeof(buf)), cases[i].want);
		check_shortest(cases[i].f, buf);
	}
	/* Floats across the whole range, normal and not: each reads back. */
	uint32_t u = 12345;
	for (int i = 0; i < 20000; i++) {
		u = u * 1664525u + 1013904223u;
		float f;
		memcpy(&f, &u, sizeof(f));
		if (!isfinite(f))
			continue;
		check_shortest(f, config_float_text(f, buf, sizeof(buf)));
	}
}

/* --help's defaults as a user writes them. */
static void check_help(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	config_print_help(f);
	fclose(f);
	EXPECT(contains(text, "peak learning rate [default: 0.001]\n"));
	EXPECT(contains(text, "Adam epsilon [default: 1e-8]\n"));
	EXPECT(contains(text, "(momentum optimizer) [default: 0.9]\n"));
	EXPECT(contains(text, "decay factor [default: 0.1]\n"));
	EXPECT(contains(text, "(below 1 in float32) [default: 0.999]\n"));
	EXPECT(contains(text, "[default: 0.999; lion 0.99]\n"));
	EXPECT(contains(text, "[default: 300]\n"));
	EXPECT(!strstr(text, "0.00100000005") && !strstr(text, "9.99999994e-09"));
	free(text);
}

/* The stored text: the same floats, in the text checkpoints have always
 * held ("%.9g": a run writes the file it wrote before). */
static void check_stored(void)
{
	struct config cfg, back;
	config_defaults(&cfg);
	char *text = config_to_text(&cfg);
	EXPECT(contains(text, "\nlr = 0.00100000005\n"));
	EXPECT(contains(text, "\neps = 9.99999994e-09\n"));
	EXPECT(contains(text, "\nema-decay = 0.999000013\n"));
	free(text);
	cfg.lr = 0.0123456789f;
	cfg.lr_min = 3e-7f;
	cfg.momentum = 0.99999f;
	cfg.eps = 1.17549435e-38f; /* FLT_MIN */
	cfg.ckpt_every_min = 999999.94f;
	text = config_to_text(&cfg);
	config_defaults(&back);
	user_error_clear();
	EXPECT(config_parse_text(&back, text, "stored") == 0);
	EXPECT(!user_error_pending());
	EXPECT(memcmp(&cfg, &back, sizeof(cfg)) == 0);
	free(text);
}

/* A checkpoint says "lr = 0.00100000005" ("%.9g"), a text written the
 * shortest way "lr = 0.001": the same float, so a resume names no changed
 * hyper-parameter; another value still differs. */
static void check_older_text(void)
{
	char a[256], b[256];
	const char *old = "optimizer = adam\nlr = 0.00100000005\neps = 9.99999994e-09\n"
			  "ema-decay = 0.999000013\nbeta1 = 0.800000012\nbeta2 = default\n";
	const char *now = "optimizer = adam\nlr = 0.001\neps = 1e-8\nema-decay = 0.999\n"
			  "beta1 = 0.8\nbeta2 = default\n";
	EXPECT(config_diff(old, now, 0, a, b, sizeof(a)) == 0);
	EXPECT(config_diff(now, old, 0, a, b, sizeof(a)) == 0);
	const char *other = "optimizer = adam\nlr = 0.00200000009\neps = 9.99999994e-09\n"
			    "ema-decay = 0.999000013\nbeta1 = 0.800000012\nbeta2 = default\n";
	EXPECT(config_diff(other, now, 0, a, b, sizeof(a)) == 1);
	EXPECT_STR(a, "lr = 0.00200000009");
	EXPECT_STR(b, "lr = 0.001");
	/* Not a number: equal to no number. */
	EXPECT(config_diff("lr = fast\n", "lr = 0.001\n", 0, a, b, sizeof(a)) == 1);
}

int main(void)
{
	check_float_text();
	check_help();
	check_stored();
	check_older_text();
	return unit_done("test_config_text");
}
