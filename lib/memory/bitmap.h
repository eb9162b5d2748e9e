/* wafer — SPDX-License-Identifier: MIT
 *
 * bitmap.h: range operations on bit arrays of 64-bit words, a word at a
 * time. The pool strategy keeps one bit per page of a virtual-memory
 * segment ("mapped or not") and asks these questions on every placement,
 * so they must cost words, not bits. */
#ifndef WAFER_CORE_MEMORY_BITMAP_H
#define WAFER_CORE_MEMORY_BITMAP_H

#include <stddef.h>
#include <stdint.h>

/* Bits [from, to) of one word, as a mask (from < to <= 64 within it). */
static inline uint64_t wafer__bits_mask(size_t from, size_t to)
{
	uint64_t hi = to % 64 ? (UINT64_C(1) << (to % 64)) - 1 : ~UINT64_C(0);
	return hi & ~((UINT64_C(1) << (from % 64)) - 1);
}

/* Calls |fn| on the word and mask of every word that [from, to) touches. */
#define WAFER_BITS_FOR_RANGE(bits, from, to, word, mask, body)                 \
	do {                                                                   \
		for (size_t b_ = (from); b_ < (to);) {                         \
			size_t e_ = (b_ / 64 + 1) * 64;                        \
			if (e_ > (to))                                         \
				e_ = (to);                                     \
			uint64_t *word = &(bits)[b_ / 64];                     \
			uint64_t mask = wafer__bits_mask(b_ % 64,              \
							 e_ - b_ / 64 * 64);   \
			body;                                                  \
			b_ = e_;                                               \
		}                                                              \
	} while (0)

static inline size_t wafer__bits_count(const uint64_t *bits, size_t from,
				       size_t to)
{
	size_t n = 0;
	WAFER_BITS_FOR_RANGE((uint64_t *)bits, from, to, w, m,
			     n += (size_t)__builtin_popcountll(*w & m));
	return n;
}

static inline void wafer__bits_set(uint64_t *bits, size_t from, size_t to)
{
	WAFER_BITS_FOR_RANGE(bits, from, to, w, m, *w |= m);
}

static inline void wafer__bits_clear(uint64_t *bits, size_t from, size_t to)
{
	WAFER_BITS_FOR_RANGE(bits, from, to, w, m, *w &= ~m);
}

/* The first bit in [from, to) equal to |value|, or |to|. */
static inline size_t wafer__bits_find(const uint64_t *bits, size_t from,
				      size_t to, int value)
{
	while (from < to) {
		uint64_t w = bits[from / 64];
		if (!value)
			w = ~w;
		w &= ~((UINT64_C(1) << (from % 64)) - 1);
		if (w) {
			size_t at = from / 64 * 64 + (size_t)__builtin_ctzll(w);
			return at < to ? at : to;
		}
		from = (from / 64 + 1) * 64;
	}
	return to;
}

#endif
