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

#include "core/error.h"
#include "core/log.h"
#include "core/memory/memory.h"

struct stream_alloc {
	wafer_resource resource;
	size_t size;
	struct stream_alloc *prev, *next; /* live list, or pending FIFO */
};

struct stream_state {
	struct wafer_storage *storage;
	bool async;
	struct stream_alloc *live;
	/* Pending frees, oldest first. */
	struct stream_alloc *pending_head, *pending_tail;
	uint64_t live_bytes, pending_bytes;
	uint64_t live_count, pending_count;
	uint64_t max_pending;
	uint64_t failed_reaps;
	/* Inside reap's own sync: the server's sync calls after_sync even
	 * when the sync failed; reap decides for itself. */
	bool reaping;
};

static const char *const stream_options[] = {"max_pending", NULL};

static wafer_status stream_create(struct wafer_storage *storage,
				  const struct wafer_config *config,
				  void **out_self)
{
	*out_self = NULL;
	uint64_t max_pending;
	wafer_status status =
		wafer_memory_option_check(config, "stream", stream_options);
	if (status == WAFER_OK)
		status = wafer_memory_option_size(config, "stream",
						  "max_pending", 0,
						  &max_pending);
	if (status != WAFER_OK)
		return status;
	struct stream_state *st = calloc(1, sizeof *st);
	if (!st)
		return wafer_fail(WAFER_ERROR_OUT_OF_MEMORY,
				  "stream: out of host memory");
	st->storage = storage;
	st->max_pending = max_pending;
	st->async = wafer_storage_has_async(storage);
	if (!st->async)
		wafer_log_info("memory", "stream: the plugin has no "
			       "stream-ordered allocation; using plain "
			       "alloc/free");
	*out_self = st;
	return WAFER_OK;
}

/* Retires the whole pending FIFO: its frees have run. */
static void retire_pending(struct stream_state *st)
{
	while (st->pending_head) {
		struct stream_alloc *a = st->pending_head;
		st->pending_head = a->next;
		st->pending_bytes -= a->size;
		st->pending_count--;
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
	wafer_status status = WAFER_OK;
	if (st->storage->sync) {
		st->reaping = true;
		status = st->storage->sync(st->storage->quiesce_data);
		st->reaping = false;
	}
	if (status != WAFER_OK) {
		st->failed_reaps++;
		wafer_log_warn("memory", "stream: reap: queue sync failed, "
			       "%llu pending bytes stay queued: %s",
			       (unsigned long long)st->pending_bytes,
			       wafer_error_detail());
		return status;
	}
	retire_pending(st);
	return WAFER_OK;
}

static wafer_status stream_reserve(void *self, size_t size,
				   struct wafer_slice *out)
{
	struct stream_state *st = self;
	struct stream_alloc *a = malloc(sizeof *a);
	if (!a)
		return wafer_fail(WAFER_ERROR_OUT_OF_MEMORY,
				  "stream: out of host memory");
	wafer_status status =
		st->async ? wafer_storage_alloc_async(st->storage, size,
						      &a->resource)
			  : wafer_storage_alloc(st->storage, size, &a->resource);
	if (status != WAFER_OK) {
		free(a);
		return status;
	}
	a->size = size;
	a->prev = NULL;
	a->next = st->live;
	if (st->live)
		st->live->prev = a;
	st->live = a;
	st->live_bytes += size;
	st->live_count++;
	out->resource = a->resource;
	out->offset = 0;
	out->token = a;
	return WAFER_OK;
}

static void unlink_live(struct stream_state *st, struct stream_alloc *a)
{
	if (a->prev)
		a->prev->next = a->next;
	else
		st->live = a->next;
	if (a->next)
		a->next->prev = a->prev;
	st->live_bytes -= a->size;
	st->live_count--;
}

static void stream_release(void *self, const struct wafer_slice *slice)
{
	struct stream_state *st = self;
	struct stream_alloc *a = slice->token;
	unlink_live(st, a);
	if (!st->async) {
		wafer_storage_free(st->storage, a->resource, a->size);
		free(a);
		return;
	}
	if (wafer_storage_free_async(st->storage, a->resource, a->size) !=
	    WAFER_OK) {
		/* The queue did not take the free: free it the blocking way
		 * rather than leak it. */
		wafer_log_warn("memory", "stream: free_async failed (%s); "
			       "freeing synchronously", wafer_error_detail());
		wafer_storage_free(st->storage, a->resource, a->size);
		free(a);
		return;
	}
	a->next = NULL;
	a->prev = st->pending_tail;
	if (st->pending_tail)
		st->pending_tail->next = a;
	else
		st->pending_head = a;
	st->pending_tail = a;
	st->pending_bytes += a->size;
	st->pending_count++;
	if (st->max_pending && st->pending_bytes > st->max_pending)
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
	while (st->live) {
		struct stream_alloc *a = st->live;
		unlink_live(st, a);
		if (st->async)
			wafer_storage_free_async(st->storage, a->resource,
						 a->size);
		else
			wafer_storage_free(st->storage, a->resource, a->size);
		free(a);
	}
	/* The client is closing: its queue is drained before storage goes
	 * away, so whatever is pending has run. */
	if (st->pending_head && st->storage->sync)
		st->storage->sync(st->storage->quiesce_data);
	retire_pending(st);
	free(st);
}

static void stream_stats(void *self, struct wafer_memory_strategy_stats *out)
{
	struct stream_state *st = self;
	out->live_bytes = st->live_bytes;
	out->pending_bytes = st->pending_bytes;
	out->segments = st->live_count + st->pending_count;
}

const struct wafer_memory_strategy_ops wafer_memory_stream = {
	.name = "stream",
	.create = stream_create,
	.destroy = stream_destroy,
	.reserve = stream_reserve,
	.release = stream_release,
	.trim = stream_trim,
	.after_sync = stream_after_sync,
	.stats = stream_stats,
};
