/* wafer — SPDX-License-Identifier: MIT
 *
 * hash.h: FNV-1a, 64 bits — the one hash the core uses for its tables
 * (config entries, the kernel-name cache) and for the checksums of
 * autotune cache files (whose on-disk values it therefore fixes). */
#ifndef WAFER_CORE_HASH_H
#define WAFER_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define WAFER_FNV_INIT UINT64_C(1469598103934665603)

static inline uint64_t wafer__fnv_byte(uint64_t hash, unsigned char byte)
{
	return (hash ^ byte) * UINT64_C(1099511628211);
}

static inline uint64_t wafer__fnv_bytes(uint64_t hash, const void *data,
					size_t size)
{
	const unsigned char *p = data;

	for (size_t i = 0; i < size; i++)
		hash = wafer__fnv_byte(hash, p[i]);
	return hash;
}

/* The bytes of |text| without its NUL. */
static inline uint64_t wafer__fnv_string(uint64_t hash, const char *text)
{
	for (; *text; text++)
		hash = wafer__fnv_byte(hash, (unsigned char)*text);
	return hash;
}

#endif
