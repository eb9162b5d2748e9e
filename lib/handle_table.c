/* wafer — SPDX-License-Identifier: MIT
 * handle_table.c: generation-checked handles (see handle_table.h). */
#include "build-config.h"

#include <inttypes.h>
#include <stdlib.h>

#include "lib/error.h"
#include "lib/handle_table.h"

#define SLOT_MASK ((UINT64_C(1) << WAFER_HANDLE_SLOT_BITS) - 1)
#define GENERATION_MASK ((UINT64_C(1) << WAFER_HANDLE_GENERATION_BITS) - 1)
#define GENERATION_SHIFT WAFER_HANDLE_SLOT_BITS
#define TAG_SHIFT (WAFER_HANDLE_SLOT_BITS + WAFER_HANDLE_GENERATION_BITS)

static _Atomic uint32_t next_tag;
/* Per tag, the first generation a new client with that tag may issue
 * (one past the highest any earlier one did). Zero pages cost nothing
 * until a tag is used. */
static _Atomic uint32_t tag_first_generation[1u << 16];
/* One bit per tag held by an open client: a tag comes round only once
 * its last holder has closed. */
static _Atomic uint64_t tag_live[(1u << 16) / 64];

/* Claims |tag| unless an open client holds it. */
static bool tag_claim(uint16_t tag)
{
	uint64_t bit = UINT64_C(1) << (tag % 64);
	return !(atomic_fetch_or(&tag_live[tag / 64], bit) & bit);
}

static void tag_free(uint16_t tag)
{
	atomic_fetch_and(&tag_live[tag / 64], ~(UINT64_C(1) << (tag % 64)));
}

/* The highest generation a handle carries; a slot reaching it retires. */
#define LAST_GENERATION ((uint32_t)GENERATION_MASK)
/* A tag is not handed out again once fewer generations than this are
 * left to it. */
#define TAG_SPENT (LAST_GENERATION - (1u << 16))

static wafer_handle encode(const struct wafer__handle_table *table,
			   uint32_t index, uint32_t generation)
{
	wafer_handle h;
	h.bits = ((uint64_t)table->tag << TAG_SHIFT) |
		 (((uint64_t)generation & GENERATION_MASK) << GENERATION_SHIFT) |
		 index;
	return h;
}

wafer_status wafer__handle_table_init(struct wafer__handle_table *table,
				      uint32_t max_handles)
{
	table->max_index = max_handles && max_handles < WAFER_HANDLE_MAX_SLOTS
				   ? max_handles
				   : WAFER_HANDLE_MAX_SLOTS;
	/* Tags 1..65535: a handle is never all zero, and handles of live
	 * clients differ (a tag an open client holds is skipped, so at most
	 * 65,535 clients are open at once); a reused tag starts past its
	 * earlier clients' generations. */
	bool found = false;
	for (uint32_t tries = 0; !found && tries < 65535u; tries++) {
		table->tag =
			(uint16_t)(atomic_fetch_add(&next_tag, 1) % 65535u + 1u);
		if (!tag_claim(table->tag))
			continue;
		table->first_generation =
			atomic_load(&tag_first_generation[table->tag]);
		found = table->first_generation < TAG_SPENT;
		if (!found)
			tag_free(table->tag);
	}
	if (!found)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "no client tag is free: 65,535 clients are "
				   "open, or every tag has issued all its "
				   "handles; close clients that are done");
	atomic_init(&table->free_head, 0);
	atomic_init(&table->next_unused, 1);
	atomic_init(&table->live, 0);
	for (size_t i = 0; i < WAFER_HANDLE_MAX_BLOCKS; i++)
		atomic_init(&table->blocks[i], NULL);
	if (pthread_mutex_init(&table->lock, NULL) != 0) {
		tag_free(table->tag);
		return wafer__fail(WAFER_ERROR_INTERNAL, "pthread_mutex_init failed");
	}
	return WAFER_OK;
}

static struct wafer__handle_slot *slot_at(struct wafer__handle_table *table,
					  uint64_t index);

void wafer__handle_table_fini(struct wafer__handle_table *table)
{
	/* The next client with this tag starts past every generation this
	 * one issued (a slot's current one is the highest it issued, or one
	 * past it). */
	uint32_t high = table->first_generation;
	uint32_t used = atomic_load(&table->next_unused);
	for (uint32_t i = 1; i < used; i++) {
		struct wafer__handle_slot *slot = slot_at(table, i);
		uint32_t g = WAFER_HANDLE_STATE_GENERATION(atomic_load(&slot->state));
		if (g > high)
			high = g;
	}
	uint32_t floor = atomic_load(&tag_first_generation[table->tag]);
	while (floor < high + 1 &&
	       !atomic_compare_exchange_weak(&tag_first_generation[table->tag],
					     &floor, high + 1))
		;
	for (size_t i = 0; i < WAFER_HANDLE_MAX_BLOCKS; i++)
		free(atomic_load(&table->blocks[i]));
	pthread_mutex_destroy(&table->lock);
	tag_free(table->tag);
}

static struct wafer__handle_slot *slot_at(struct wafer__handle_table *table,
					  uint64_t index)
{
	struct wafer__handle_slot *block = atomic_load_explicit(
		&table->blocks[index / WAFER_HANDLE_BLOCK_SLOTS],
		memory_order_acquire);
	return block ? &block[index % WAFER_HANDLE_BLOCK_SLOTS] : NULL;
}

/* A never-used slot, growing the table by a block when needed. Called with
 * the lock held. */
static struct wafer__handle_slot *take_unused(struct wafer__handle_table *table)
{
	uint32_t index = atomic_load_explicit(&table->next_unused,
					      memory_order_relaxed);
	if (index > table->max_index)
		return NULL;
	size_t b = index / WAFER_HANDLE_BLOCK_SLOTS;
	struct wafer__handle_slot *block =
		atomic_load_explicit(&table->blocks[b], memory_order_relaxed);
	if (!block) {
		block = calloc(WAFER_HANDLE_BLOCK_SLOTS, sizeof *block);
		if (!block)
			return NULL;
		atomic_store_explicit(&table->blocks[b], block,
				      memory_order_release);
	}
	struct wafer__handle_slot *slot = &block[index % WAFER_HANDLE_BLOCK_SLOTS];
	slot->index = index;
	atomic_store_explicit(&slot->state,
			      WAFER_HANDLE_STATE(table->first_generation, 0),
			      memory_order_relaxed);
	atomic_store_explicit(&table->next_unused, index + 1,
			      memory_order_release);
	return slot;
}

static uint32_t head_index(uint64_t head)
{
	return (uint32_t)head;
}

static struct wafer__handle_slot *pop_free(struct wafer__handle_table *table)
{
	uint64_t head = atomic_load_explicit(&table->free_head,
					     memory_order_acquire);
	for (;;) {
		uint32_t index = head_index(head);
		if (!index)
			return NULL;
		struct wafer__handle_slot *slot = slot_at(table, index);
		uint32_t next = atomic_load_explicit(&slot->next_free,
						     memory_order_relaxed);
		uint64_t new_head = ((head >> 32) + 1) << 32 | next;
		if (atomic_compare_exchange_weak_explicit(
			    &table->free_head, &head, new_head,
			    memory_order_acquire, memory_order_acquire))
			return slot;
	}
}

static void push_free(struct wafer__handle_table *table,
		      struct wafer__handle_slot *slot)
{
	uint64_t head = atomic_load_explicit(&table->free_head,
					     memory_order_relaxed);
	uint64_t new_head;
	do {
		atomic_store_explicit(&slot->next_free, head_index(head),
				      memory_order_relaxed);
		new_head = ((head >> 32) + 1) << 32 | slot->index;
	} while (!atomic_compare_exchange_weak_explicit(
		&table->free_head, &head, new_head, memory_order_release,
		memory_order_relaxed));
}

wafer_status wafer__handle_table_alloc(struct wafer__handle_table *table,
				       size_t size,
				       struct wafer__handle_slot **out_slot,
				       wafer_handle *out_handle)
{
	struct wafer__handle_slot *slot = pop_free(table);
	if (!slot) {
		pthread_mutex_lock(&table->lock);
		slot = take_unused(table);
		pthread_mutex_unlock(&table->lock);
	}
	if (!slot) {
		out_handle->bits = 0;
		*out_slot = NULL;
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "no free handle slot (%u in use)",
				   (unsigned)wafer__handle_table_live(table));
	}
	slot->size = size;
	slot->slice = (struct wafer__slice){0};
	slot->foreign = NULL;
	/* ended_by stays: it tells a stale handle of the generation before
	 * this one how that generation ended (released or donated). */
	uint32_t generation = WAFER_HANDLE_STATE_GENERATION(
		atomic_load_explicit(&slot->state, memory_order_relaxed));
	atomic_store_explicit(&slot->run_start, generation,
			      memory_order_relaxed);
	atomic_store_explicit(&slot->state, WAFER_HANDLE_STATE(generation, 1),
			      memory_order_release);
	atomic_fetch_add_explicit(&table->live, 1, memory_order_relaxed);
	*out_slot = slot;
	*out_handle = encode(table, slot->index, generation);
	return WAFER_OK;
}

void wafer__handle_table_recycle(struct wafer__handle_table *table,
				 struct wafer__handle_slot *slot)
{
	/* A slot that issued the last generation is retired: its next
	 * handle would repeat an old one's bits. */
	if (WAFER_HANDLE_STATE_GENERATION(atomic_load_explicit(
		    &slot->state, memory_order_relaxed)) > LAST_GENERATION)
		return;
	push_free(table, slot);
}

/* The slot |handle| names, whatever its state, or NULL with the error. */
static wafer_status find_slot(struct wafer__handle_table *table,
			      wafer_handle handle, const char *what,
			      struct wafer__handle_slot **out_slot)
{
	uint64_t index = handle.bits & SLOT_MASK;
	uint16_t tag = (uint16_t)(handle.bits >> TAG_SHIFT);
	struct wafer__handle_slot *slot;

	*out_slot = NULL;
	if (handle.bits == 0)
		return wafer__fail(WAFER_ERROR_INVALID_HANDLE,
				   "%s: null handle", what);
	if (tag != table->tag)
		return wafer__fail(WAFER_ERROR_INVALID_HANDLE,
				   "%s: handle 0x%016" PRIx64
				   " belongs to another client",
				   what, handle.bits);
	slot = index && index < atomic_load_explicit(&table->next_unused,
						     memory_order_acquire)
		       ? slot_at(table, index)
		       : NULL;
	if (!slot)
		return wafer__fail(WAFER_ERROR_INVALID_HANDLE,
				   "%s: handle 0x%016" PRIx64 " was never issued",
				   what, handle.bits);
	*out_slot = slot;
	return WAFER_OK;
}

static uint32_t handle_generation(wafer_handle handle)
{
	return (uint32_t)((handle.bits >> GENERATION_SHIFT) & GENERATION_MASK);
}

/* Whether |state| is the live generation |handle| names. */
static bool state_matches(uint64_t state, wafer_handle handle)
{
	return (WAFER_HANDLE_STATE_GENERATION(state) & GENERATION_MASK) ==
		       handle_generation(handle) &&
	       WAFER_HANDLE_STATE_REFCOUNT(state) != 0;
}

/* The error for a handle whose generation is over, read from |state|. */
static wafer_status dead_handle(const struct wafer__handle_slot *slot,
				uint64_t state, wafer_handle handle,
				const char *what)
{
	uint32_t generation = handle_generation(handle);
	uint32_t current = WAFER_HANDLE_STATE_GENERATION(state);
	const char *ended_by =
		atomic_load_explicit(&slot->ended_by, memory_order_acquire);

	uint32_t run_start =
		atomic_load_explicit(&slot->run_start, memory_order_relaxed);
	uint32_t age = (current - generation) & GENERATION_MASK;

	if (generation > current)
		return wafer__fail(WAFER_ERROR_INVALID_HANDLE,
				   "%s: handle 0x%016" PRIx64 " was never issued",
				   what, handle.bits);
	/* Older than the generation before ours but of the same run: it
	 * was donated, and what it became was donated on. */
	if (age >= 2 && age <= ((current - run_start) & GENERATION_MASK))
		return wafer__fail(WAFER_ERROR_DONATED,
				   "%s: handle 0x%016" PRIx64
				   " was donated (and its result donated on%s%s)",
				   what, handle.bits,
				   ended_by ? ", last to " : ", then released",
				   ended_by ? ended_by : "");
	/* ended_by describes the generation right after ours only. */
	if ((current & GENERATION_MASK) ==
		    ((generation + 1) & GENERATION_MASK) &&
	    ended_by)
		return wafer__fail(WAFER_ERROR_DONATED,
				   "%s: handle 0x%016" PRIx64
				   " was donated to %s",
				   what, handle.bits, ended_by);
	return wafer__fail(WAFER_ERROR_INVALID_HANDLE,
			   "%s: handle 0x%016" PRIx64
			   " was released (use after last release)",
			   what, handle.bits);
}

/* The slot of |handle| and its state (acquire), where the handle is
 * live; else the error of find_slot or dead_handle. */
static wafer_status live_slot(struct wafer__handle_table *table,
			      wafer_handle handle, const char *what,
			      struct wafer__handle_slot **out_slot,
			      uint64_t *out_state)
{
	struct wafer__handle_slot *slot;
	wafer_status status = find_slot(table, handle, what, &slot);
	if (status != WAFER_OK)
		return status;
	uint64_t state = atomic_load_explicit(&slot->state,
					      memory_order_acquire);
	if (!state_matches(state, handle))
		return dead_handle(slot, state, handle, what);
	*out_slot = slot;
	*out_state = state;
	return WAFER_OK;
}

wafer_status wafer__handle_table_lookup(struct wafer__handle_table *table,
					wafer_handle handle, const char *what,
					struct wafer__handle_slot **out_slot)
{
	uint64_t state;
	*out_slot = NULL;
	return live_slot(table, handle, what, out_slot, &state);
}

bool wafer__handle_table_alive(struct wafer__handle_table *table,
			       wafer_handle handle)
{
	uint64_t index = handle.bits & SLOT_MASK;

	if ((uint16_t)(handle.bits >> TAG_SHIFT) != table->tag || !index ||
	    index >= atomic_load_explicit(&table->next_unused,
					  memory_order_acquire))
		return false;
	struct wafer__handle_slot *slot = slot_at(table, index);
	return slot && state_matches(atomic_load_explicit(&slot->state,
							  memory_order_acquire),
				     handle);
}

wafer_status wafer__handle_table_retain(struct wafer__handle_table *table,
					wafer_handle handle)
{
	struct wafer__handle_slot *slot;
	wafer_status status = find_slot(table, handle, "retain", &slot);
	if (status != WAFER_OK)
		return status;
	uint64_t state = atomic_load_explicit(&slot->state,
					      memory_order_relaxed);
	do {
		if (!state_matches(state, handle))
			return dead_handle(slot, state, handle, "retain");
		if (WAFER_HANDLE_STATE_REFCOUNT(state) == UINT32_MAX)
			return wafer__fail(WAFER_ERROR_INVALID_HANDLE,
					   "retain: handle 0x%016" PRIx64
					   " has too many references",
					   handle.bits);
	} while (!atomic_compare_exchange_weak_explicit(
		&slot->state, &state, state + 1, memory_order_relaxed,
		memory_order_relaxed));
	return WAFER_OK;
}

/* The start of a step that may end |handle|'s generation (unref,
 * donate): its slot, the state to compare-and-swap from, and why the
 * slot's last generation ended (restored if the step fails). */
static wafer_status begin_end(struct wafer__handle_table *table,
			      wafer_handle handle, const char *what,
			      struct wafer__handle_slot **out_slot,
			      uint64_t *out_state, const char **out_before)
{
	wafer_status status = find_slot(table, handle, what, out_slot);
	if (status != WAFER_OK)
		return status;
	*out_state = atomic_load_explicit(&(*out_slot)->state,
					  memory_order_relaxed);
	*out_before = atomic_load_explicit(&(*out_slot)->ended_by,
					   memory_order_relaxed);
	return WAFER_OK;
}

wafer_status wafer__handle_table_unref(struct wafer__handle_table *table,
				       wafer_handle handle, const char *ended_by,
				       struct wafer__handle_slot **out_last)
{
	const char *what = ended_by ? ended_by : "release";
	struct wafer__handle_slot *slot;
	uint64_t state, next;
	const char *before;

	*out_last = NULL;
	wafer_status status =
		begin_end(table, handle, what, &slot, &state, &before);
	if (status != WAFER_OK)
		return status;
	do {
		if (!state_matches(state, handle)) {
			atomic_store_explicit(&slot->ended_by, before,
					      memory_order_relaxed);
			return dead_handle(slot, state, handle, what);
		}
		uint32_t count = WAFER_HANDLE_STATE_REFCOUNT(state);
		uint32_t generation = WAFER_HANDLE_STATE_GENERATION(state);
		/* The last reference ends the generation in the same step;
		 * why it ended is written first, so whoever sees the new
		 * generation (acquire) also sees why. */
		atomic_store_explicit(&slot->ended_by,
				      count == 1 ? ended_by : before,
				      memory_order_relaxed);
		next = count == 1 ? WAFER_HANDLE_STATE(generation + 1, 0)
				  : state - 1;
	} while (!atomic_compare_exchange_weak_explicit(
		&slot->state, &state, next, memory_order_acq_rel,
		memory_order_relaxed));
	if (WAFER_HANDLE_STATE_REFCOUNT(next) == 0) {
		atomic_fetch_sub_explicit(&table->live, 1, memory_order_relaxed);
		*out_last = slot;
	}
	return WAFER_OK;
}

wafer_status wafer__handle_table_donate(struct wafer__handle_table *table,
					wafer_handle handle, const char *op,
					struct wafer__handle_slot **out_slot,
					wafer_handle *out_handle,
					bool *out_donated)
{
	struct wafer__handle_slot *slot;
	uint64_t state, next;
	const char *before;

	*out_slot = NULL;
	out_handle->bits = 0;
	*out_donated = false;
	wafer_status status = begin_end(table, handle, op, &slot, &state,
					&before);
	if (status != WAFER_OK)
		return status;
	do {
		/* At the last generation the slot cannot start another:
		 * treated as shared, the operation copies. */
		if (!state_matches(state, handle) ||
		    WAFER_HANDLE_STATE_REFCOUNT(state) != 1 ||
		    WAFER_HANDLE_STATE_GENERATION(state) >= LAST_GENERATION) {
			atomic_store_explicit(&slot->ended_by, before,
					      memory_order_relaxed);
			if (!state_matches(state, handle))
				return dead_handle(slot, state, handle, op);
			*out_slot = slot;
			return WAFER_OK; /* shared: not donatable */
		}
		/* As in unref: the reason first, then the generation. */
		atomic_store_explicit(&slot->ended_by, op,
				      memory_order_relaxed);
		next = WAFER_HANDLE_STATE(
			WAFER_HANDLE_STATE_GENERATION(state) + 1, 1);
	} while (!atomic_compare_exchange_weak_explicit(
		&slot->state, &state, next, memory_order_acq_rel,
		memory_order_relaxed));
	*out_slot = slot;
	*out_handle = encode(table, slot->index,
			     WAFER_HANDLE_STATE_GENERATION(next));
	*out_donated = true;
	return WAFER_OK;
}

wafer_status wafer__handle_table_refcount(struct wafer__handle_table *table,
					  wafer_handle handle, const char *what,
					  uint32_t *out_count)
{
	struct wafer__handle_slot *slot;
	uint64_t state = 0;
	wafer_status status = live_slot(table, handle, what, &slot, &state);
	*out_count = status == WAFER_OK ? WAFER_HANDLE_STATE_REFCOUNT(state)
					: 0;
	return status;
}

void wafer__handle_table_for_each_live(struct wafer__handle_table *table,
				       void (*fn)(struct wafer__handle_slot *,
						  void *),
				      void *data)
{
	uint32_t used = atomic_load(&table->next_unused);
	for (uint32_t i = 1; i < used; i++) {
		struct wafer__handle_slot *slot = slot_at(table, i);
		if (slot && WAFER_HANDLE_STATE_REFCOUNT(
				    atomic_load(&slot->state)) > 0)
			fn(slot, data);
	}
}

wafer_handle wafer__handle_table_handle(const struct wafer__handle_table *table,
					struct wafer__handle_slot *slot)
{
	return encode(table, slot->index,
		      WAFER_HANDLE_STATE_GENERATION(atomic_load(&slot->state)));
}
