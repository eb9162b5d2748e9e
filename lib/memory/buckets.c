/* wafer — SPDX-License-Identifier: MIT
 *
 * buckets.c: the `buckets` strategy. Every size is rounded up to a power
 * of two (at least the storage alignment) and each power of two keeps a
 * LIFO free list of whole buffers. A reserve pops its bucket's list (a
 * hit) or allocates a buffer of the bucket size (a miss); release pushes
 * the buffer back. Both are O(1) and touch one list, which makes this the
 * fastest strategy when a loop reuses the same sizes, at the price of up
 * to 2x internal waste, and memory of one bucket never serves another
 * (until trim gives it back).
 *
 * Release is idempotent: releasing a buffer that is already on its free
 * list does nothing, so a double release cannot put one buffer on the list
 * twice and hand it to two handles later.
 *
 * Options, [memory.buckets]:
 *   bucket_cap = 0   bytes each bucket may cache (0: no bound). A buffer
 *                    released into a full bucket goes back to storage. */
#include "build-config.h"

#include "lib/error.h"
#include "lib/memory/common.h"

#define BUCKET_COUNT 64

struct bucket_buffer {
	struct wafer__memory_chunk chunk; /* on the list of every buffer */
	unsigned bucket;  /* log2 of the size */
	bool cached;      /* on its bucket's free list */
	struct bucket_buffer *next_free;
};

/* The base's chunks are every buffer; its stats keep hits, misses and
 * cached_bytes. */
struct buckets_state {
	struct wafer__memory_base base;
	struct bucket_buffer *free[BUCKET_COUNT];
	uint64_t cached[BUCKET_COUNT]; /* bytes on each free list */
	unsigned min_bucket;
	uint64_t cap;
};

static const char *const buckets_options[] = {"bucket_cap", NULL};

static unsigned log2_ceil(size_t size)
{
	unsigned b = 0;
	while (((size_t)1 << b) < size)
		b++;
	return b;
}

static wafer_status buckets_setup(void *self,
				  const struct wafer__config *config)
{
	struct buckets_state *st = self;
	st->min_bucket = log2_ceil(st->base.storage->alignment);
	return wafer__config_get_size(config, st->base.section, "bucket_cap",
				      0, &st->cap);
}

static wafer_status buckets_reserve(void *self, size_t size,
				    struct wafer__slice *out)
{
	struct buckets_state *st = self;
	if (size > ((size_t)1 << (BUCKET_COUNT - 2)))
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "buckets: %zu bytes is larger than the "
				   "largest bucket", size);
	unsigned bucket = log2_ceil(size);
	if (bucket < st->min_bucket)
		bucket = st->min_bucket;

	struct bucket_buffer *b = st->free[bucket];
	if (!b) {
		wafer_status status = wafer__memory_chunk_miss(
			&st->base, (size_t)1 << bucket, sizeof *b, out);
		if (status != WAFER_OK)
			return status;
		b = out->token;
		b->bucket = bucket;
		return WAFER_OK;
	}
	st->free[bucket] = b->next_free;
	st->cached[bucket] -= (size_t)1 << bucket;
	st->base.stats.cached_bytes -= (size_t)1 << bucket;
	b->cached = false;
	b->next_free = NULL;
	wafer__memory_chunk_hit(&st->base, &b->chunk, out);
	return WAFER_OK;
}

static void buckets_release(void *self, const struct wafer__slice *slice)
{
	struct buckets_state *st = self;
	struct bucket_buffer *b = slice->token;
	if (b->cached)
		return; /* released twice: the list already has it */
	size_t bytes = (size_t)1 << b->bucket;
	if (st->cap && st->cached[b->bucket] + bytes > st->cap) {
		wafer__memory_chunk_free(&st->base, &b->chunk);
		return;
	}
	b->cached = true;
	b->next_free = st->free[b->bucket];
	st->free[b->bucket] = b;
	st->cached[b->bucket] += bytes;
	st->base.stats.cached_bytes += bytes;
}

static void buckets_trim(void *self)
{
	struct buckets_state *st = self;
	for (unsigned i = 0; i < BUCKET_COUNT; i++) {
		while (st->free[i]) {
			struct bucket_buffer *b = st->free[i];
			st->free[i] = b->next_free;
			wafer__memory_chunk_free(&st->base, &b->chunk);
		}
		st->cached[i] = 0;
	}
	st->base.stats.cached_bytes = 0;
}

WAFER_MEMORY_STRATEGY(buckets, buckets_setup,
		      .destroy = wafer__memory_base_destroy,
		      .stats = wafer__memory_base_stats);
