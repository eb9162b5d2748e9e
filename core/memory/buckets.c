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

#include <stdlib.h>

#include "core/error.h"
#include "core/memory/memory.h"

#define BUCKET_COUNT 64

struct bucket_buffer {
	wafer_resource resource;
	unsigned bucket;  /* log2 of the size */
	bool cached;      /* on its bucket's free list */
	struct bucket_buffer *next_free;
	struct bucket_buffer *prev, *next; /* every buffer */
};

struct buckets_state {
	struct wafer_storage *storage;
	struct bucket_buffer *free[BUCKET_COUNT];
	uint64_t cached[BUCKET_COUNT]; /* bytes on each free list */
	struct bucket_buffer *all;
	unsigned min_bucket;
	uint64_t cap;
	uint64_t hits, misses, buffers, cached_bytes;
};

static const char *const buckets_options[] = {"bucket_cap", NULL};

static unsigned log2_ceil(size_t size)
{
	unsigned b = 0;
	while (((size_t)1 << b) < size)
		b++;
	return b;
}

static wafer_status buckets_create(struct wafer_storage *storage,
				   const struct wafer_config *config,
				   void **out_self)
{
	*out_self = NULL;
	uint64_t cap;
	wafer_status status =
		wafer_memory_option_check(config, "buckets", buckets_options);
	if (status == WAFER_OK)
		status = wafer_memory_option_size(config, "buckets",
						  "bucket_cap", 0, &cap);
	if (status != WAFER_OK)
		return status;
	struct buckets_state *st = calloc(1, sizeof *st);
	if (!st)
		return wafer_fail(WAFER_ERROR_OUT_OF_MEMORY,
				  "buckets: out of host memory");
	st->storage = storage;
	st->min_bucket = log2_ceil(storage->alignment);
	st->cap = cap;
	*out_self = st;
	return WAFER_OK;
}

static void unlink_buffer(struct buckets_state *st, struct bucket_buffer *b)
{
	if (b->prev)
		b->prev->next = b->next;
	else
		st->all = b->next;
	if (b->next)
		b->next->prev = b->prev;
	st->buffers--;
}

static void free_buffer(struct buckets_state *st, struct bucket_buffer *b)
{
	unlink_buffer(st, b);
	wafer_storage_free(st->storage, b->resource, (size_t)1 << b->bucket);
	free(b);
}

static wafer_status buckets_reserve(void *self, size_t size,
				    struct wafer_slice *out)
{
	struct buckets_state *st = self;
	if (size > ((size_t)1 << (BUCKET_COUNT - 2)))
		return wafer_fail(WAFER_ERROR_OUT_OF_MEMORY,
				  "buckets: %zu bytes is larger than the "
				  "largest bucket", size);
	unsigned bucket = log2_ceil(size);
	if (bucket < st->min_bucket)
		bucket = st->min_bucket;

	struct bucket_buffer *b = st->free[bucket];
	if (b) {
		st->free[bucket] = b->next_free;
		st->cached[bucket] -= (size_t)1 << bucket;
		st->cached_bytes -= (size_t)1 << bucket;
		st->hits++;
	} else {
		b = calloc(1, sizeof *b);
		if (!b)
			return wafer_fail(WAFER_ERROR_OUT_OF_MEMORY,
					  "buckets: out of host memory");
		wafer_status status = wafer_storage_alloc(
			st->storage, (size_t)1 << bucket, &b->resource);
		if (status != WAFER_OK) {
			free(b);
			return status;
		}
		st->misses++;
		b->bucket = bucket;
		b->next = st->all;
		if (st->all)
			st->all->prev = b;
		st->all = b;
		st->buffers++;
	}
	b->cached = false;
	b->next_free = NULL;
	out->resource = b->resource;
	out->offset = 0;
	out->token = b;
	return WAFER_OK;
}

static void buckets_release(void *self, const struct wafer_slice *slice)
{
	struct buckets_state *st = self;
	struct bucket_buffer *b = slice->token;
	if (b->cached)
		return; /* released twice: the list already has it */
	size_t bytes = (size_t)1 << b->bucket;
	if (st->cap && st->cached[b->bucket] + bytes > st->cap) {
		free_buffer(st, b);
		return;
	}
	b->cached = true;
	b->next_free = st->free[b->bucket];
	st->free[b->bucket] = b;
	st->cached[b->bucket] += bytes;
	st->cached_bytes += bytes;
}

static void buckets_trim(void *self)
{
	struct buckets_state *st = self;
	for (unsigned i = 0; i < BUCKET_COUNT; i++) {
		while (st->free[i]) {
			struct bucket_buffer *b = st->free[i];
			st->free[i] = b->next_free;
			free_buffer(st, b);
		}
		st->cached[i] = 0;
	}
	st->cached_bytes = 0;
}

static void buckets_destroy(void *self)
{
	struct buckets_state *st = self;
	while (st->all)
		free_buffer(st, st->all);
	free(st);
}

static void buckets_stats(void *self, struct wafer_memory_strategy_stats *out)
{
	struct buckets_state *st = self;
	out->hits = st->hits;
	out->misses = st->misses;
	out->cached_bytes = st->cached_bytes;
	out->segments = st->buffers;
}

const struct wafer_memory_strategy_ops wafer_memory_buckets = {
	.name = "buckets",
	.create = buckets_create,
	.destroy = buckets_destroy,
	.reserve = buckets_reserve,
	.release = buckets_release,
	.trim = buckets_trim,
	.stats = buckets_stats,
};
