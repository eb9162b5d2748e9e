/* wafer — SPDX-License-Identifier: MIT
 *
 * key.c: keys — anchoring dimensions to powers of two, the hash
 * the in-memory index uses, and the text forms for messages and for the
 * cache file. Everything here runs on the cache-hit path except the text
 * forms, so it avoids loops over bytes. */
#include "build-config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/autotune/autotune.h"
#include "lib/error.h"
#include "lib/kernel_table.h"

#define MAX_LEVEL 16

WAFER_API uint64_t wafer_autotune_anchor(uint64_t x, uint32_t level)
{
	if (level == 0 || x <= 1)
		return x;
	if (level > MAX_LEVEL)
		level = MAX_LEVEL;
	/* Bits of the smallest power of two at or above x, rounded up to a
	 * multiple of level. */
	unsigned bits = 64u - (unsigned)__builtin_clzll(x - 1);
	unsigned rounded = (bits + level - 1) / level * level;
	if (rounded > 63)
		rounded = 63 / level * level; /* the largest anchor there is */
	return UINT64_C(1) << rounded;
}

wafer_status wafer__tune_key_make(const wafer_tunable *tunable,
				  const wafer_autotune_key *in,
				  struct wafer__tune_key *out)
{
	if (in->dim_count > WAFER_AUTOTUNE_MAX_DIMS)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "autotune %s: the key function returned %u "
				   "dimensions, at most %d are allowed",
				   tunable->name, in->dim_count,
				   WAFER_AUTOTUNE_MAX_DIMS);
	memset(out, 0, sizeof *out);
	for (int i = 0; i < WAFER_AUTOTUNE_MAX_DTYPES; i++)
		out->dtypes[i] = (uint32_t)in->dtypes[i];
	out->dim_count = in->dim_count;
	out->exact_dims = in->exact_dims & ((1u << in->dim_count) - 1);
	out->flags = in->flags;
	for (uint32_t i = 0; i < in->dim_count; i++)
		out->dims[i] = (out->exact_dims >> i) & 1
				       ? in->dims[i]
				       : wafer_autotune_anchor(
						 in->dims[i], tunable->anchor_level);
	return WAFER_OK;
}

/* Word-wise multiply-xor mixing: a dozen multiplies for a whole key. */
static inline uint64_t mix(uint64_t h, uint64_t word)
{
	h ^= word;
	h *= UINT64_C(0x9e3779b97f4a7c15);
	return h ^ (h >> 29);
}

uint64_t wafer__tune_key_hash(const struct wafer__tune_key *key,
			      const void *tunable, const void *device)
{
	uint64_t words[sizeof *key / sizeof(uint64_t)];
	uint64_t h = mix((uint64_t)(uintptr_t)tunable,
			 (uint64_t)(uintptr_t)device);

	_Static_assert(sizeof *key % sizeof(uint64_t) == 0,
		       "the key is hashed as whole words");
	memcpy(words, key, sizeof words);
	/* dims past dim_count are zero: hashing them would add nothing. */
	size_t n = (offsetof(struct wafer__tune_key, dims) / sizeof(uint64_t)) +
		   key->dim_count;
	for (size_t i = 0; i < n; i++)
		h = mix(h, words[i]);
	return h;
}


/*===----------------------------------------------------------------------===
 * Text forms
 *===----------------------------------------------------------------------===*/

/* Appends to |buf| at |*used| without overflowing. */
static void append(char *buf, size_t size, size_t *used, const char *format,
		   ...) __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t size, size_t *used, const char *format,
		   ...)
{
	va_list ap;

	if (*used >= size)
		return;
	va_start(ap, format);
	int n = vsnprintf(buf + *used, size - *used, format, ap);
	va_end(ap);
	if (n > 0)
		*used += (size_t)n;
}

void wafer__tune_key_describe(const struct wafer__tune_key *key, char *buf,
			      size_t size)
{
	size_t used = 0;
	int last = WAFER_AUTOTUNE_MAX_DTYPES - 1;

	buf[0] = '\0';
	while (last > 0 && key->dtypes[last] == WAFER_DTYPE_NONE)
		last--;
	for (int i = 0; i <= last; i++)
		append(buf, size, &used, "%s%s", i ? "," : "",
		       wafer__dtype_name((wafer_dtype)key->dtypes[i]));
	for (uint32_t i = 0; i < key->dim_count; i++)
		append(buf, size, &used, "%s%" PRIu64, i ? "x" : " ",
		       key->dims[i]);
	if (key->flags)
		append(buf, size, &used, " flags=0x%" PRIx32, key->flags);
}

void wafer__tune_key_format(const struct wafer__tune_key *key, char *buf,
			    size_t size)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < WAFER_AUTOTUNE_MAX_DTYPES; i++)
		append(buf, size, &used, "%s%" PRIu32, i ? "," : "",
		       key->dtypes[i]);
	append(buf, size, &used, " 0x%" PRIx32 " 0x%" PRIx32 " ", key->flags,
	       key->exact_dims);
	if (!key->dim_count)
		append(buf, size, &used, "-");
	for (uint32_t i = 0; i < key->dim_count; i++)
		append(buf, size, &used, "%s%" PRIu64, i ? "," : "",
		       key->dims[i]);
}

/* A whole unsigned number in |text| up to |end_char| (or the end); the
 * character after it in |*out_end|. Rejects signs and blanks, which
 * strtoull would let through. */
static bool parse_u64(const char *text, int base, uint64_t max,
		      uint64_t *out, const char **out_end)
{
	char *end;

	/* The first character must be a digit of |base|: strtoull would
	 * also take a sign, blanks and (base 16) a second "0x". */
	if (!(text[0] >= '0' && text[0] <= '9') &&
	    !(base == 16 && ((text[0] >= 'a' && text[0] <= 'f') ||
			     (text[0] >= 'A' && text[0] <= 'F'))))
		return false;
	if (base == 16 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X'))
		return false;
	errno = 0;
	unsigned long long value = strtoull(text, &end, base);
	if (errno || end == text || value > max)
		return false;
	*out = value;
	*out_end = end;
	return true;
}

static bool parse_list(const char *text, uint64_t max, uint64_t *values,
		       size_t capacity, size_t *out_count)
{
	size_t n = 0;
	const char *end;

	for (;;) {
		if (n == capacity ||
		    !parse_u64(text, 10, max, &values[n], &end))
			return false;
		n++;
		if (*end == '\0')
			break;
		if (*end != ',')
			return false;
		text = end + 1;
	}
	*out_count = n;
	return true;
}

static bool parse_hex32(const char *text, uint32_t *out)
{
	uint64_t value;
	const char *end;

	if (strncmp(text, "0x", 2) != 0 ||
	    !parse_u64(text + 2, 16, UINT32_MAX, &value, &end) || *end)
		return false;
	*out = (uint32_t)value;
	return true;
}

bool wafer__tune_key_parse(const char *dtypes, const char *flags,
			   const char *exact, const char *dims,
			   struct wafer__tune_key *out)
{
	uint64_t values[WAFER_AUTOTUNE_MAX_DIMS];
	size_t n;

	memset(out, 0, sizeof *out);
	if (!parse_list(dtypes, UINT32_MAX, values, WAFER_AUTOTUNE_MAX_DTYPES,
			&n) ||
	    n != WAFER_AUTOTUNE_MAX_DTYPES)
		return false;
	for (size_t i = 0; i < n; i++)
		out->dtypes[i] = (uint32_t)values[i];
	if (!parse_hex32(flags, &out->flags) ||
	    !parse_hex32(exact, &out->exact_dims))
		return false;
	if (strcmp(dims, "-") == 0) {
		n = 0;
	} else if (!parse_list(dims, UINT64_MAX, values,
			       WAFER_AUTOTUNE_MAX_DIMS, &n)) {
		return false;
	}
	out->dim_count = (uint32_t)n;
	memcpy(out->dims, values, n * sizeof values[0]);
	/* What key_make would never produce is not ours. */
	return (out->exact_dims & ~((1u << n) - 1)) == 0;
}
