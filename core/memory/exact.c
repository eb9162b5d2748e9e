/* wafer — SPDX-License-Identifier: MIT
 *
 * exact.c: the `exact` strategy — one chunk per handle, and a released
 * chunk is kept on a free list for its (aligned) size, so the next reserve
 * of exactly that size is a list pop instead of a storage call. Nothing is
 * sliced or coalesced: simple, fast for training loops whose sizes repeat,
 * wasteful when sizes vary (memory of one size never serves another until
 * trim). Options: none. */
#include "build-config.h"

#include <stdlib.h>

#include "core/error.h"
#include "core/memory/memory.h"

struct exact_chunk {
	wafer_resource resource;
	size_t size;                    /* aligned size allocated */
	struct exact_chunk *next_free;  /* in its size's free list */
	struct exact_chunk *prev, *next; /* in the list of all chunks */
};

/* Free lists hashed by size; chaining through size_list.next. */
struct exact_size_list {
	size_t size;
	struct exact_chunk *free;
	struct exact_size_list *next;
};

#define EXACT_HASH_BUCKETS 256

struct exact_state {
	struct wafer_storage *storage;
	struct exact_size_list *buckets[EXACT_HASH_BUCKETS];
	struct exact_chunk *all; /* every chunk, reserved or free */
};

static size_t hash_size(size_t size)
{
	uint64_t h = (uint64_t)size * UINT64_C(0x9E3779B97F4A7C15);
	return (size_t)(h >> 56) % EXACT_HASH_BUCKETS;
}

static struct exact_size_list *find_list(struct exact_state *st, size_t size,
					 int create)
{
	struct exact_size_list **slot = &st->buckets[hash_size(size)];
	for (struct exact_size_list *l = *slot; l; l = l->next)
		if (l->size == size)
			return l;
	if (!create)
		return NULL;
	struct exact_size_list *l = calloc(1, sizeof *l);
	if (!l)
		return NULL;
	l->size = size;
	l->next = *slot;
	*slot = l;
	return l;
}

static const char *const exact_options[] = {NULL};

static wafer_status exact_create(struct wafer_storage *storage,
				 const struct wafer_config *config,
				 void **out_self)
{
	*out_self = NULL;
	wafer_status status =
		wafer_memory_option_check(config, "exact", exact_options);
	if (status != WAFER_OK)
		return status;
	struct exact_state *st = calloc(1, sizeof *st);
	if (!st)
		return wafer_fail(WAFER_ERROR_OUT_OF_MEMORY, "out of host memory");
	st->storage = storage;
	*out_self = st;
	return WAFER_OK;
}

static void unlink_chunk(struct exact_state *st, struct exact_chunk *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		st->all = c->next;
	if (c->next)
		c->next->prev = c->prev;
}

static wafer_status exact_reserve(void *self, size_t size,
				  struct wafer_slice *out)
{
	struct exact_state *st = self;
	size_t aligned = wafer_align_up(size, st->storage->alignment);
	struct exact_size_list *list = find_list(st, aligned, 1);
	if (!list)
		return wafer_fail(WAFER_ERROR_OUT_OF_MEMORY, "out of host memory");

	struct exact_chunk *c = list->free;
	if (c) {
		list->free = c->next_free;
	} else {
		c = calloc(1, sizeof *c);
		if (!c)
			return wafer_fail(WAFER_ERROR_OUT_OF_MEMORY,
					  "out of host memory");
		wafer_status status =
			wafer_storage_alloc(st->storage, aligned, &c->resource);
		if (status != WAFER_OK) {
			free(c);
			return status;
		}
		c->size = aligned;
		c->next = st->all;
		if (st->all)
			st->all->prev = c;
		st->all = c;
	}
	c->next_free = NULL;
	out->resource = c->resource;
	out->offset = 0;
	out->token = c;
	return WAFER_OK;
}

static void exact_release(void *self, const struct wafer_slice *slice)
{
	struct exact_state *st = self;
	struct exact_chunk *c = slice->token;
	/* The list exists: reserve created it for this size. */
	struct exact_size_list *list = find_list(st, c->size, 0);
	c->next_free = list->free;
	list->free = c;
}

static void exact_trim(void *self)
{
	struct exact_state *st = self;
	for (size_t b = 0; b < EXACT_HASH_BUCKETS; b++) {
		for (struct exact_size_list *l = st->buckets[b]; l; l = l->next) {
			while (l->free) {
				struct exact_chunk *c = l->free;
				l->free = c->next_free;
				unlink_chunk(st, c);
				wafer_storage_free(st->storage, c->resource,
						   c->size);
				free(c);
			}
		}
	}
}

static void exact_destroy(void *self)
{
	struct exact_state *st = self;
	while (st->all) {
		struct exact_chunk *c = st->all;
		st->all = c->next;
		wafer_storage_free(st->storage, c->resource, c->size);
		free(c);
	}
	for (size_t b = 0; b < EXACT_HASH_BUCKETS; b++) {
		while (st->buckets[b]) {
			struct exact_size_list *l = st->buckets[b];
			st->buckets[b] = l->next;
			free(l);
		}
	}
	free(st);
}

const struct wafer_memory_strategy_ops wafer_memory_exact = {
	.name = "exact",
	.create = exact_create,
	.destroy = exact_destroy,
	.reserve = exact_reserve,
	.release = exact_release,
	.trim = exact_trim,
};
