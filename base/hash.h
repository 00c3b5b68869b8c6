/* FNV-1a, 64 bits: a checksum of bytes for fingerprints and listings (not
 * cryptographic). Chain calls by passing the previous result as h. */
#pragma once
#include <stddef.h>
#include <stdint.h>

#define FNV1A64_INIT 0xcbf29ce484222325ull

static inline uint64_t fnv1a64(uint64_t h, const void *data, size_t n)
{
	const unsigned char *p = data;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}
