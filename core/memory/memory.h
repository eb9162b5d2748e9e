/* wafer — SPDX-License-Identifier: MIT
 *
 * memory.h: the memory manager. It reserves space for handles from a
 * plugin's storage (storage.h) through one of several strategies, each in
 * its own file under core/memory/ behind the ops table below. The
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

#include "core/config.h"
#include "core/memory/storage.h"

/* Where a handle's bytes live: [offset, offset + size) of resource. */
struct wafer_slice {
	wafer_resource resource;
	size_t offset;
	size_t size;  /* bytes asked for (what "in use" counts) */
	void *token;  /* strategy-private: its block, chunk or bucket */
};

/* Counters only some strategies keep (wafer_memory_strategy_stats());
 * a strategy leaves the ones it does not keep at 0. */
struct wafer_memory_strategy_stats {
	uint64_t hits;          /* reserves served from cached memory */
	uint64_t misses;        /* reserves that needed a storage call */
	uint64_t cached_bytes;  /* held from storage, not in use */
	uint64_t live_bytes;    /* stream: bytes of live allocations */
	uint64_t pending_bytes; /* stream: freed on the queue, not reaped */
	uint64_t segments;      /* chunks / segments / buffers held */
};

struct wafer_memory_snapshot;

/* One strategy. |self| is the strategy's own state. */
struct wafer_memory_strategy_ops {
	const char *name;
	/* Creates the strategy on |storage|; reads its options from the
	 * config section [memory.<name>] (config may be NULL: defaults). */
	wafer_status (*create)(struct wafer_storage *storage,
			       const struct wafer_config *config,
			       void **out_self);
	/* Gives every chunk back to storage and frees the state. Slices still
	 * reserved are freed too (the client is closing). */
	void (*destroy)(void *self);
	/* Finds |size| (> 0) bytes for a handle: reuse or new storage.
	 * Returns WAFER_ERROR_OUT_OF_MEMORY (after set_error) if storage is
	 * full; the manager then trims and retries once. */
	wafer_status (*reserve)(void *self, size_t size,
				struct wafer_slice *out_slice);
	/* Makes a slice reusable. The server calls it only once the work
	 * issued before the release may no longer touch the memory as far as
	 * the queue order is concerned. */
	void (*release)(void *self, const struct wafer_slice *slice);
	/* Returns every cached, unused chunk/page to storage. */
	void (*trim)(void *self);
	/* Optional (NULL: nothing to do): called after the client's queue was
	 * synchronised, so deferred work (stream strategy's reap) can run. */
	void (*after_sync)(void *self);
	/* Optional (NULL: all zero): the strategy's own counters. */
	void (*stats)(void *self, struct wafer_memory_strategy_stats *out);
	/* Optional (NULL: the base's chunks as segments): its segments,
	 * page runs and blocks (core/memory/snapshot.h). */
	void (*snapshot)(void *self, struct wafer_memory_snapshot *out);
};

/* The strategies compiled in, NULL-terminated, and lookup by name. */
extern const struct wafer_memory_strategy_ops *const wafer_memory_strategies[];
const struct wafer_memory_strategy_ops *
wafer_memory_strategy_find(const char *name);

/* The default strategy's name (what `[memory] strategy` falls back to). */
extern const char wafer_memory_default_strategy[];

struct wafer_memory;

/* Creates a manager with strategy |name| (NULL: [memory] strategy from
 * |config|, else the default). WAFER_ERROR_CONFIG for an unknown name,
 * listing the known ones. */
wafer_status wafer_memory_create(const char *name, struct wafer_storage *storage,
				 const struct wafer_config *config,
				 struct wafer_memory **out_memory);
void wafer_memory_destroy(struct wafer_memory *memory);

const char *wafer_memory_strategy_name(const struct wafer_memory *memory);

/* Reserves; on out-of-memory trims and retries once, then fails with
 * WAFER_ERROR_OUT_OF_MEMORY: "cannot reserve N bytes: X in use, Y
 * reserved (strategy S): <storage's detail>". */
wafer_status wafer_memory_reserve(struct wafer_memory *memory, size_t size,
				  struct wafer_slice *out_slice);
void wafer_memory_release(struct wafer_memory *memory,
			  const struct wafer_slice *slice);
/* The out-of-memory hook: called by wafer_memory_reserve when a reserve
 * still fails for want of memory after the trim and retry, with |info|
 * filled (size, this manager's figures, the device's and its limit, the
 * failure's detail). It may release slices (the strategy is between
 * calls); true asks for one more reserve (trimming again if that fails),
 * false lets the reserve fail with the original detail. fn NULL: none. */
typedef bool (*wafer_memory_oom_fn)(void *data, const wafer_oom_info *info);
void wafer_memory_set_oom(struct wafer_memory *memory, wafer_memory_oom_fn fn,
			  void *data);

void wafer_memory_trim_cache(struct wafer_memory *memory);
void wafer_memory_after_sync(struct wafer_memory *memory);

/* Fills every field but handles_live. */
void wafer_memory_get_usage(const struct wafer_memory *memory,
			    wafer_memory_usage *out_usage);

/* The strategy's own counters (zeros where it keeps none). */
void wafer_memory_strategy_stats(const struct wafer_memory *memory,
				 struct wafer_memory_strategy_stats *out_stats);

/*===----------------------------------------------------------------------===
 * For strategies (more in common.h): time
 *===----------------------------------------------------------------------===*/

/* Monotonic time in nanoseconds, for time-based policies (chunked's
 * `dealloc = seconds:N`). A test may point it at a fake clock before it
 * creates a manager. */
extern uint64_t (*wafer_memory_clock_ns)(void);

#endif
