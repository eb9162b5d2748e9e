/* wafer — SPDX-License-Identifier: MIT
 *
 * memory.h: the memory manager. It reserves space for handles from a
 * plugin's storage (storage.h) through one of several strategies, each in
 * its own file under lib/memory/ behind the ops table below. The
 * manager does what is common to all of them: statistics (bytes in use
 * and their peak, reuse hits), the out-of-memory path (give cached memory
 * back, retry once, then fail with sizes), and strategy lookup by name.
 *
 * Terms (DESIGN.md): a chunk is one storage allocation; a slice is a part
 * of a chunk handed to one handle.
 *
 * Not thread-safe: the client's channel serialises calls. */
#ifndef WAFER_CORE_MEMORY_MEMORY_H
#define WAFER_CORE_MEMORY_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <wafer/wafer.h>

#include "lib/config.h"
#include "lib/memory/storage.h"

/* Where a handle's bytes live: [offset, offset + size) of resource. */
struct wafer__slice {
	wafer_resource resource;
	size_t offset;
	size_t size;  /* bytes asked for (what "in use" counts) */
	void *token;  /* strategy-private: its block, chunk or bucket */
};

/* Counters only some strategies keep (wafer__memory_strategy_stats());
 * a strategy leaves the ones it does not keep at 0. */
struct wafer__memory_strategy_stats {
	uint64_t hits;          /* reserves served from cached memory */
	uint64_t misses;        /* reserves that needed a storage call */
	uint64_t cached_bytes;  /* held from storage, not in use */
	uint64_t live_bytes;    /* stream: bytes of live allocations */
	uint64_t pending_bytes; /* stream: freed on the queue, not reaped */
	uint64_t segments;      /* chunks / segments / buffers held */
	uint64_t free_steps;    /* pool: free-block nodes visited to keep
				 * and search its bins (a test bounds it) */
};

struct wafer_memory_snapshot;

/* One strategy. |self| is the strategy's own state. */
struct wafer__memory_strategy_ops {
	const char *name;
	/* Creates the strategy on |storage|; reads its options from the
	 * config section [memory.<name>] (config may be NULL: defaults). */
	wafer_status (*create)(struct wafer__storage *storage,
			       const struct wafer__config *config,
			       void **out_self);
	/* Gives every chunk back to storage and frees the state. Slices still
	 * reserved are freed too (the client is closing). */
	void (*destroy)(void *self);
	/* Finds |size| (> 0) bytes for a handle: reuse or new storage.
	 * Returns WAFER_ERROR_OUT_OF_MEMORY (after set_error) if storage is
	 * full; the manager then trims and retries once. */
	wafer_status (*reserve)(void *self, size_t size,
				struct wafer__slice *out_slice);
	/* Makes a slice reusable. The server calls it only once the work
	 * issued before the release may no longer touch the memory as far as
	 * the queue order is concerned. */
	void (*release)(void *self, const struct wafer__slice *slice);
	/* Returns every cached, unused chunk/page to storage. */
	void (*trim)(void *self);
	/* Optional (NULL: nothing to do): called after the client's queue was
	 * synchronised, so deferred work (stream strategy's reap) can run. */
	void (*after_sync)(void *self);
	/* Optional (NULL: all zero): the strategy's own counters. */
	void (*stats)(void *self, struct wafer__memory_strategy_stats *out);
	/* Optional (NULL: the base's chunks as segments): its segments,
	 * page runs and blocks (lib/memory/snapshot.h). */
	void (*snapshot)(void *self, struct wafer_memory_snapshot *out);
};

/* The strategies compiled in, NULL-terminated, and lookup by name. */
extern const struct wafer__memory_strategy_ops *const wafer__memory_strategies[];
const struct wafer__memory_strategy_ops *
wafer__memory_strategy_find(const char *name);

/* The default strategy's name (what `[memory] strategy` falls back to). */
extern const char wafer__memory_default_strategy[];

struct wafer__memory;

/* Creates a manager with strategy |name| (NULL: [memory] strategy from
 * |config|, else the default). WAFER_ERROR_CONFIG for an unknown name,
 * listing the known ones. */
wafer_status wafer__memory_create(const char *name, struct wafer__storage *storage,
				  const struct wafer__config *config,
				  struct wafer__memory **out_memory);
void wafer__memory_destroy(struct wafer__memory *memory);

const char *wafer__memory_strategy_name(const struct wafer__memory *memory);

/* Reserves; on out-of-memory trims and retries once, then fails with
 * WAFER_ERROR_OUT_OF_MEMORY: "cannot reserve N bytes: X in use, Y
 * reserved (strategy S): <storage's detail>". */
wafer_status wafer__memory_reserve(struct wafer__memory *memory, size_t size,
				   struct wafer__slice *out_slice);
void wafer__memory_release(struct wafer__memory *memory,
			   const struct wafer__slice *slice);
/* The out-of-memory hook: called by wafer__memory_reserve when a reserve
 * still fails for want of memory after the trim and retry, with |info|
 * filled (size, this manager's figures, the device's and its limit, the
 * failure's detail). It may release slices (the strategy is between
 * calls); true asks for one more reserve (trimming again if that fails),
 * false lets the reserve fail with the original detail. fn NULL: none. */
typedef bool (*wafer__memory_oom_fn)(void *data, const wafer_oom_info *info);
void wafer__memory_set_oom(struct wafer__memory *memory, wafer__memory_oom_fn fn,
			   void *data);

void wafer__memory_trim_cache(struct wafer__memory *memory);
void wafer__memory_after_sync(struct wafer__memory *memory);

/* Fills every field but handles_live. */
void wafer__memory_get_usage(const struct wafer__memory *memory,
			     wafer_memory_usage *out_usage);

/* The strategy's own counters (zeros where it keeps none). */
void wafer__memory_strategy_stats(const struct wafer__memory *memory,
				  struct wafer__memory_strategy_stats *out_stats);

/*===----------------------------------------------------------------------===
 * For strategies (more in common.h): time
 *===----------------------------------------------------------------------===*/

/* Monotonic time in nanoseconds, for time-based policies (chunked's
 * `dealloc = seconds:N`). A test may point it at a fake clock before it
 * creates a manager. */
extern uint64_t (*wafer__memory_clock_ns)(void);

#endif
