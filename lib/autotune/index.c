/* wafer — SPDX-License-Identifier: MIT
 *
 * index.c: the in-memory choices, an open-addressing hash table
 * that readers probe without a lock.
 *
 * A slot holds a pointer to an immutable choice; a writer (one at a time,
 * under the tuner's lock) fills the choice, then publishes it with a
 * release store, so a reader that sees the pointer sees the whole choice.
 * Slots are only ever filled, never emptied. When the table passes half
 * full the writer builds one twice the size, publishes it, and keeps the
 * old one on a retired list until the index is freed: a reader still
 * probing the old table finds everything that was in it, and a choice
 * published meanwhile is at worst missed once (the caller then takes the
 * lock and looks again). Tables only grow, and choices are few — one per
 * operation, device and anchored shape — so keeping the old tables costs
 * less than any scheme to reclaim them. */
#include "build-config.h"

#include <stdlib.h>
#include <string.h>

#include "lib/autotune/autotune.h"
#include "lib/error.h"

#define INITIAL_CAPACITY 64

struct wafer__tune_table {
	struct wafer__tune_table *next_retired;
	size_t mask;  /* capacity - 1; capacity a power of two */
	size_t count; /* written under the tuner's lock only */
	const struct wafer__tune_choice *_Atomic slots[];
};

static struct wafer__tune_table *table_new(size_t capacity)
{
	struct wafer__tune_table *t =
		calloc(1, sizeof *t + capacity * sizeof t->slots[0]);

	if (!t)
		return NULL;
	t->mask = capacity - 1;
	for (size_t i = 0; i < capacity; i++)
		atomic_init(&t->slots[i], NULL);
	return t;
}

wafer_status wafer__tune_index_init(struct wafer__tune_index *index)
{
	struct wafer__tune_table *t = table_new(INITIAL_CAPACITY);

	if (!t)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "autotune: out of host memory");
	atomic_init(&index->current, t);
	index->retired = NULL;
	return WAFER_OK;
}

void wafer__tune_index_fini(struct wafer__tune_index *index)
{
	struct wafer__tune_table *t =
		atomic_load_explicit(&index->current, memory_order_relaxed);

	if (!t)
		return;
	/* The current table holds every choice there is. */
	for (size_t i = 0; i <= t->mask; i++)
		free((void *)atomic_load_explicit(&t->slots[i],
						  memory_order_relaxed));
	free(t);
	while (index->retired) {
		t = index->retired;
		index->retired = t->next_retired;
		free(t);
	}
	atomic_store_explicit(&index->current, NULL, memory_order_relaxed);
}

static bool same(const struct wafer__tune_choice *c, uint64_t hash,
		 const wafer_tunable *tunable, const void *device,
		 const struct wafer__tune_key *key)
{
	return c->hash == hash && c->tunable == tunable &&
	       (const void *)c->device == device &&
	       memcmp(&c->key, key, sizeof *key) == 0;
}

const struct wafer__tune_choice *
wafer__tune_index_find(const struct wafer__tune_index *index, uint64_t hash,
		       const wafer_tunable *tunable, const void *device,
		       const struct wafer__tune_key *key)
{
	const struct wafer__tune_table *t =
		atomic_load_explicit(&index->current, memory_order_acquire);

	for (size_t i = hash & t->mask;; i = (i + 1) & t->mask) {
		const struct wafer__tune_choice *c = atomic_load_explicit(
			&t->slots[i], memory_order_acquire);
		if (!c)
			return NULL;
		if (same(c, hash, tunable, device, key))
			return c;
	}
}

/* Places |c| in the first empty slot of its probe sequence. */
static void place(struct wafer__tune_table *t, const struct wafer__tune_choice *c)
{
	size_t i = c->hash & t->mask;

	while (atomic_load_explicit(&t->slots[i], memory_order_relaxed))
		i = (i + 1) & t->mask;
	atomic_store_explicit(&t->slots[i], c, memory_order_release);
	t->count++;
}

static wafer_status grow(struct wafer__tune_index *index,
			 struct wafer__tune_table *old)
{
	struct wafer__tune_table *t = table_new(2 * (old->mask + 1));

	if (!t)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "autotune: out of host memory");
	for (size_t i = 0; i <= old->mask; i++) {
		const struct wafer__tune_choice *c = atomic_load_explicit(
			&old->slots[i], memory_order_relaxed);
		if (c)
			place(t, c);
	}
	atomic_store_explicit(&index->current, t, memory_order_release);
	old->next_retired = index->retired;
	index->retired = old;
	return WAFER_OK;
}

wafer_status wafer__tune_index_insert(struct wafer__tune_index *index,
				      const struct wafer__tune_choice *choice,
				      const struct wafer__tune_choice **out)
{
	struct wafer__tune_table *t =
		atomic_load_explicit(&index->current, memory_order_relaxed);
	struct wafer__tune_choice *c;

	*out = NULL;
	if (2 * (t->count + 1) > t->mask + 1) {
		wafer_status status = grow(index, t);
		if (status != WAFER_OK)
			return status;
		t = atomic_load_explicit(&index->current,
					 memory_order_relaxed);
	}
	c = malloc(sizeof *c);
	if (!c)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "autotune: out of host memory");
	*c = *choice;
	place(t, c);
	*out = c;
	return WAFER_OK;
}
