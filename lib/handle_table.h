/* wafer — SPDX-License-Identifier: MIT
 *
 * handle_table.h: a client's handles. A wafer_handle is a 64-bit value
 *
 *     bits 63..48  client tag   (which client issued it)
 *     bits 47..24  generation   (bumped when the last reference goes)
 *     bits 23..0   slot index   (1-based; 0 is never used)
 *
 * so a stale or foreign handle is recognised by comparison instead of
 * being dereferenced: using a released handle is an error in every
 * build, never a crash. Slots live in fixed blocks that are never moved
 * or freed while the client lives, so a lookup takes no lock.
 *
 * Slot life: FREE → live (refcount ≥ 1) → last release bumps the
 * generation at once (stale copies fail from then on) → the server
 * releases the memory once queued work is past it → recycle → FREE.
 *
 * No handle is ever issued twice in a process. Generations never wrap: a
 * slot whose generation reaches the largest a handle can carry is retired
 * (never recycled: one slot per 16 M reuses). A tag held by an open
 * client is never handed to another (so at most 65,535 clients are open
 * at once); a closed client's tag is reused, so each tag remembers the
 * generations its earlier clients issued, and a new client with that tag
 * starts its slots past them; a tag whose generations are all spent is
 * not handed out again.
 *
 * Donation (ops.h, WAFER_DONATE_INPUT) is the other way a generation
 * ends: wafer__handle_table_donate() bumps the generation of a live slot
 * whose only reference the caller holds, without touching its memory, and
 * hands the caller a new handle on the same slot. The old handle then
 * fails with WAFER_ERROR_DONATED naming the operation.
 *
 * Threading. The generation and the reference count share one atomic word
 * (|state|), and retain, release and donate each change it with a single
 * compare-and-swap that also checks the generation. So a donation and a
 * concurrent retain of the same handle are ordered: either the retain
 * comes first (the count is 2, the donation is refused and the operation
 * copies) or the donation does (the retain finds the generation gone and
 * fails with WAFER_ERROR_DONATED). A retain can never land on the new
 * handle's generation through the old one, which separate counters would
 * allow (the count would read 1 before and after). */
#ifndef WAFER_CORE_HANDLE_TABLE_H
#define WAFER_CORE_HANDLE_TABLE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <wafer/wafer.h>

#include "lib/memory/memory.h"

struct wafer__foreign;

#define WAFER_HANDLE_SLOT_BITS 24
#define WAFER_HANDLE_GENERATION_BITS 24
#define WAFER_HANDLE_BLOCK_SLOTS 4096
/* Slot indices run 1 .. WAFER_HANDLE_MAX_SLOTS. */
#define WAFER_HANDLE_MAX_SLOTS ((1u << WAFER_HANDLE_SLOT_BITS) - 1u)
#define WAFER_HANDLE_MAX_BLOCKS                                                \
	((1u << WAFER_HANDLE_SLOT_BITS) / WAFER_HANDLE_BLOCK_SLOTS)

/* wafer__handle_slot.state: generation (high 32 bits; a handle carries its
 * low WAFER_HANDLE_GENERATION_BITS) and reference count (low 32 bits; 0:
 * not live). */
#define WAFER_HANDLE_STATE(generation, refcount)                               \
	(((uint64_t)(generation) << 32) | (uint32_t)(refcount))
#define WAFER_HANDLE_STATE_GENERATION(state) ((uint32_t)((state) >> 32))
#define WAFER_HANDLE_STATE_REFCOUNT(state) ((uint32_t)(state))

struct wafer__handle_slot {
	_Atomic uint64_t state;
	uint32_t index;
	size_t size;               /* bytes asked at empty/create */
	struct wafer__slice slice;  /* set by the server at reserve */
	/* Imported memory (lib/interop.h): set with the slice by the
	 * import, kept through donation, handed back at release. */
	struct wafer__foreign *foreign;
	/* Why the previous generation ended: NULL for a release, else the
	 * name of the operation it was donated to (a static string). Written
	 * by whoever ends the generation just before the compare-and-swap
	 * that ends it (and put back if that fails), so a thread that sees
	 * the new generation also sees why. */
	const char *_Atomic ended_by;
	/* The generation the slot's current run began at (an acquire);
	 * donations continue a run, so every generation from it to the one
	 * before the last ended by donation. */
	_Atomic uint32_t run_start;
	_Atomic uint32_t next_free; /* index of the next free slot; 0: none */
	/* The queue (lane) and the point on it of the slot's last use, for
	 * the order between a client's queues (lib/lanes.h). The bridge's
	 * thread only. */
	uint8_t lane;
	uint64_t lane_at;
	/* Bindings of graphs on it (lib/graph.h): its memory goes to them
	 * when it is released. The bridge's thread only. */
	uint32_t graph_refs;
};

struct wafer__handle_table {
	uint16_t tag;
	/* Free slots: a lock-free stack of slot indices. The head packs a
	 * push counter above the index so that a pop racing with a pop and
	 * re-push of the same slot fails its exchange (no ABA). */
	_Atomic uint64_t free_head;
	pthread_mutex_t lock; /* growing the table: never-used slots */
	/* Next never-used slot index: written under |lock|, read without
	 * it (an index at or past it was never issued). */
	_Atomic uint32_t next_unused;
	/* The generation every slot of this table starts at: past every
	 * generation an earlier client with the same tag issued, so a
	 * closed client's handles never name a slot of this one. */
	uint32_t first_generation;
	uint32_t max_index; /* the last slot index it may use */
	_Atomic uint64_t live;
	struct wafer__handle_slot *_Atomic blocks[WAFER_HANDLE_MAX_BLOCKS];
};

/* |max_handles|: the most slots the table ever holds (`[core]
 * max_handles`); 0 or above WAFER_HANDLE_MAX_SLOTS: that many. */
wafer_status wafer__handle_table_init(struct wafer__handle_table *table,
				      uint32_t max_handles);
/* Frees the blocks; the caller released every slot's memory first. */
void wafer__handle_table_fini(struct wafer__handle_table *table);

/* Takes a free slot with refcount 1 and |size|; returns the handle. */
wafer_status wafer__handle_table_alloc(struct wafer__handle_table *table,
				       size_t size,
				       struct wafer__handle_slot **out_slot,
				       wafer_handle *out_handle);

/* Puts a slot whose memory the server has given back on the free list. */
void wafer__handle_table_recycle(struct wafer__handle_table *table,
				 struct wafer__handle_slot *slot);

/* The live slot behind |handle|, or WAFER_ERROR_INVALID_HANDLE /
 * WAFER_ERROR_DONATED with a detail naming the handle and |what| (the
 * calling operation). */
wafer_status wafer__handle_table_lookup(struct wafer__handle_table *table,
					wafer_handle handle, const char *what,
					struct wafer__handle_slot **out_slot);

/* Whether |handle| is live now, without recording an error (scopes test
 * their entries with it; see lib/scope.h). A snapshot: a live handle
 * may be released by another thread at once, a dead one never returns. */
bool wafer__handle_table_alive(struct wafer__handle_table *table,
			       wafer_handle handle);

/* Adds a reference to a live slot. */
wafer_status wafer__handle_table_retain(struct wafer__handle_table *table,
					wafer_handle handle);

/* Drops a reference. Stores the slot in |*out_last| when this was the
 * last one (the generation is already bumped: the caller must hand the
 * slot to the server to release its memory), else NULL. */
wafer_status wafer__handle_table_unref(struct wafer__handle_table *table,
				       wafer_handle handle, const char *ended_by,
				       struct wafer__handle_slot **out_last);

/* Donation: if |handle| is live and its reference count is exactly 1,
 * ends its generation (ended_by = |op|, a static string) and returns a
 * new handle on the same slot, with the same memory and one reference, in
 * |*out_handle|, with |*out_donated| = true. If more references are held,
 * changes nothing and sets |*out_donated| = false: the caller keeps its
 * reference and drops it (wafer__handle_table_unref with ended_by) once
 * the work reading the buffer is queued — dropping it earlier would let
 * another holder's release free memory the work still reads. Fails like
 * lookup for a dead handle. */
wafer_status wafer__handle_table_donate(struct wafer__handle_table *table,
					wafer_handle handle, const char *op,
					struct wafer__handle_slot **out_slot,
					wafer_handle *out_handle,
					bool *out_donated);

/* The reference count of a live handle (0 and an error for a dead one).
 * A snapshot: other threads may change it at once. */
wafer_status wafer__handle_table_refcount(struct wafer__handle_table *table,
					  wafer_handle handle, const char *what,
					  uint32_t *out_count);

/* Calls |fn| on every live slot (client close). Not thread-safe. */
void wafer__handle_table_for_each_live(struct wafer__handle_table *table,
				       void (*fn)(struct wafer__handle_slot *,
						  void *),
				      void *data);

/* The handle that names |slot| now (its current generation): what a
 * live slot's holders use (the memory snapshot's blocks). */
wafer_handle wafer__handle_table_handle(const struct wafer__handle_table *table,
					struct wafer__handle_slot *slot);

static inline uint64_t
wafer__handle_table_live(struct wafer__handle_table *table)
{
	return atomic_load_explicit(&table->live, memory_order_relaxed);
}

#endif
