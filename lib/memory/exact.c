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

#include "lib/error.h"
#include "lib/memory/common.h"

struct exact_chunk {
	struct wafer__memory_chunk chunk; /* on the list of all chunks; its
					  * size is the aligned size */
	struct exact_chunk *next_free;   /* in its size's free list */
};

/* Free lists hashed by size; chaining through size_list.next. */
struct exact_size_list {
	size_t size;
	struct exact_chunk *free;
	struct exact_size_list *next;
};

#define EXACT_HASH_BUCKETS 256

/* The base's chunks are every chunk, reserved or free. */
struct exact_state {
	struct wafer__memory_base base;
	struct exact_size_list *buckets[EXACT_HASH_BUCKETS];
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

static wafer_status exact_reserve(void *self, size_t size,
				  struct wafer__slice *out)
{
	struct exact_state *st = self;
	size_t aligned = wafer__align_up(size, st->base.storage->alignment);
	struct exact_size_list *list = find_list(st, aligned, 1);
	if (!list)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "exact: out of host memory");

	struct exact_chunk *c = list->free;
	if (!c)
		return wafer__memory_chunk_reserve(&st->base, aligned,
						   sizeof *c, out);
	list->free = c->next_free;
	c->next_free = NULL;
	wafer__memory_chunk_slice(&c->chunk, out);
	return WAFER_OK;
}

static void exact_release(void *self, const struct wafer__slice *slice)
{
	struct exact_state *st = self;
	struct exact_chunk *c = slice->token;
	/* The list exists: reserve created it for this size. */
	struct exact_size_list *list = find_list(st, c->chunk.size, 0);
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
				wafer__memory_chunk_free(&st->base, &c->chunk);
			}
		}
	}
}

static void exact_destroy(void *self)
{
	struct exact_state *st = self;
	wafer__memory_chunk_free_all(&st->base);
	for (size_t b = 0; b < EXACT_HASH_BUCKETS; b++) {
		while (st->buckets[b]) {
			struct exact_size_list *l = st->buckets[b];
			st->buckets[b] = l->next;
			free(l);
		}
	}
	free(st);
}

/* Keeps no counters of its own: no stats entry. */
WAFER_MEMORY_STRATEGY(exact, NULL, .destroy = exact_destroy);
