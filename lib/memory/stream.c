/* wafer — SPDX-License-Identifier: MIT
 *
 * stream.c: the `stream` strategy — hands every reserve and release to
 * the plugin's stream-ordered allocator (alloc_async/free_async on the
 * client's queue; cuMemAllocAsync/cuMemFreeAsync on CUDA), whose own pool
 * makes the pair cheap. wafer keeps no cache; it keeps the books:
 *
 *   live    bytes of allocations handed out and not released;
 *   pending bytes released with free_async whose free has not provably
 *           run yet (the queue may still be working before it).
 *
 * outstanding = live + pending is what the device may still hold for us.
 * A reap retires pending entries: after the client synchronised its queue
 * (after_sync) they are all done; when asked to give memory back (trim,
 * the out-of-memory retry) or when pending passes max_pending, the reap
 * synchronises the queue itself first. If that synchronisation fails, the
 * entries it was to retire stay queued, in order, for the next reap, and
 * pending keeps their bytes: the count never drifts from the queue.
 *
 * A plugin without the stream-ordered pair gets plain alloc/free (each
 * free waits for the queue), with a note in the log.
 *
 * Options, [memory.stream]:
 *   max_pending = 0   reap (synchronising the queue) once pending bytes
 *                     pass this; 0: only at sync, trim and out of memory */
#include "build-config.h"

#include <stdlib.h>

#include "lib/error.h"
#include "lib/log.h"
#include "lib/memory/common.h"

/* The base's chunks are the live allocations (async: stream-ordered);
 * its stats keep live_bytes, pending_bytes and, in segments, the number
 * of pending frees. */
struct stream_state {
	struct wafer__memory_base base;
	/* Pending frees, oldest first: chunks off the list. */
	struct wafer__memory_chunk *pending_head, *pending_tail;
	uint64_t max_pending;
	uint64_t failed_reaps;
	/* Inside reap's own sync: the server's sync calls after_sync even
	 * when the sync failed; reap decides for itself. */
	bool reaping;
};

static const char *const stream_options[] = {"max_pending", NULL};

static wafer_status stream_setup(void *self,
				 const struct wafer__config *config)
{
	struct stream_state *st = self;
	wafer_status status = wafer__config_get_size(
		config, st->base.section, "max_pending", 0, &st->max_pending);
	if (status != WAFER_OK)
		return status;
	st->base.chunks.async = wafer__storage_has_async(st->base.storage);
	if (!st->base.chunks.async)
		wafer__log_info("memory", "stream: the plugin has no "
				"stream-ordered allocation; using plain "
				"alloc/free");
	return WAFER_OK;
}

/* Retires the whole pending FIFO: its frees have run. */
static void retire_pending(struct stream_state *st)
{
	while (st->pending_head) {
		struct wafer__memory_chunk *a = st->pending_head;
		st->pending_head = a->next;
		st->base.stats.pending_bytes -= a->size;
		st->base.stats.segments--;
		free(a);
	}
	st->pending_tail = NULL;
}

/* Synchronises the queue, then retires what was pending. Entries are
 * retired only after a successful sync: on failure they all stay queued,
 * with their bytes still in pending, for the next reap. (The channel
 * serialises calls, so nothing joins the FIFO while the sync runs.) */
static wafer_status reap(struct stream_state *st)
{
	if (!st->pending_head)
		return WAFER_OK;
	struct wafer__storage *storage = st->base.storage;
	wafer_status status = WAFER_OK;
	if (storage->sync) {
		st->reaping = true;
		status = storage->sync(storage->quiesce_data);
		st->reaping = false;
	}
	if (status != WAFER_OK) {
		st->failed_reaps++;
		wafer__log_warn("memory", "stream: reap: queue sync failed, "
				"%llu pending bytes stay queued: %s",
				(unsigned long long)st->base.stats.pending_bytes,
				wafer__error_detail());
		return status;
	}
	retire_pending(st);
	return WAFER_OK;
}

static wafer_status stream_reserve(void *self, size_t size,
				   struct wafer__slice *out)
{
	struct stream_state *st = self;
	wafer_status status = wafer__memory_chunk_reserve(
		&st->base, size, sizeof(struct wafer__memory_chunk), out);
	if (status == WAFER_OK)
		st->base.stats.live_bytes += size;
	return status;
}

static void stream_release(void *self, const struct wafer__slice *slice)
{
	struct stream_state *st = self;
	struct wafer__storage *storage = st->base.storage;
	struct wafer__memory_chunk *a = slice->token;
	st->base.stats.live_bytes -= a->size;
	if (!st->base.chunks.async) {
		wafer__memory_chunk_free(&st->base, a);
		return;
	}
	wafer__memory_chunk_unlink(&st->base, a);
	if (wafer__storage_free_async(storage, a->resource, a->size) !=
	    WAFER_OK) {
		/* The queue did not take the free: free it the blocking way
		 * rather than leak it. */
		wafer__log_warn("memory", "stream: free_async failed (%s); "
				"freeing synchronously", wafer__error_detail());
		wafer__storage_free(storage, a->resource, a->size);
		free(a);
		return;
	}
	a->prev = st->pending_tail;
	if (st->pending_tail)
		st->pending_tail->next = a;
	else
		st->pending_head = a;
	st->pending_tail = a;
	st->base.stats.pending_bytes += a->size;
	st->base.stats.segments++;
	if (st->max_pending && st->base.stats.pending_bytes > st->max_pending)
		reap(st); /* a failure is logged and retried next time */
}

/* The plugin's pool owns the cache; what wafer can give back is the
 * frees still in flight. */
static void stream_trim(void *self)
{
	reap(self);
}

static void stream_after_sync(void *self)
{
	struct stream_state *st = self;
	if (!st->reaping)
		retire_pending(st);
}

static void stream_destroy(void *self)
{
	struct stream_state *st = self;
	struct wafer__storage *storage = st->base.storage;
	wafer__memory_chunk_free_all(&st->base);
	st->base.stats.live_bytes = 0;
	/* The client is closing: its queue is drained before storage goes
	 * away, so whatever is pending has run. */
	if (st->pending_head && storage->sync)
		storage->sync(storage->quiesce_data);
	retire_pending(st);
	free(st);
}

WAFER_MEMORY_STRATEGY(stream, stream_setup,
		      .destroy = stream_destroy,
		      .after_sync = stream_after_sync,
		      .stats = wafer__memory_base_stats);
