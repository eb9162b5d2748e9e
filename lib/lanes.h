/* wafer — SPDX-License-Identifier: MIT
 *
 * lanes.h: the queues of one client as the bridge sees them. A lane is
 * one plugin queue; lane 0 is the client's default queue, the one its
 * memory manager works on. The bridge is single-threaded (its channel
 * decides the thread), and so is everything here, but for the failures
 * of host callbacks, which arrive on the plugin's threads.
 *
 * The rule that keeps handles safe on every queue (wafer-queue(7)):
 *   - each handle slot remembers the lane and the point on it of its
 *     last use (slot->lane, slot->lane_at); a command on lane L that
 *     touches a slot last used on lane A != L first makes L wait for
 *     that point (wafer__lanes_touch): on the device through an event
 *     where the plugin has the events group, else by syncing A on the
 *     host. Reads and writes are treated alike.
 *   - memory goes back to the memory manager in lane 0's order: a
 *     release of a slot last used on A makes lane 0 wait for that use
 *     first (wafer__lanes_before_release), and a new reservation counts as
 *     a use on lane 0 (wafer__lanes_reserved), so a first use on another
 *     lane waits for lane 0, which waited for every earlier user of that
 *     memory. No host sync, and the memory manager is untouched.
 *   - a new lane waits for everything lane 0 was given before, so what
 *     was not tracked while the client had one lane is safe.
 * While a client has one lane nothing is tracked: one branch a command.
 * Each lane keeps, per other lane, the point it already waits for, so a
 * burst of commands on data from one other lane costs one wait.
 *
 * A wait is for the point of the handle's last use, not for everything
 * its lane was given since (an upload on a copy queue into the buffer a
 * kernel read two batches ago must not wait for the kernels of the last
 * batch): each time the commands switch from lane A to another, A is
 * marked (one event record), and a wait picks the oldest of A's last
 * WAFER_LANE_MARKS marks that covers the point it needs, marking A anew
 * only when none does. */
#ifndef WAFER_CORE_LANES_H
#define WAFER_CORE_LANES_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include <wafer/plugin.h>

#include "lib/error.h"
#include "lib/handle_table.h"

/* Queues a client may have open at once, its default queue included. */
#define WAFER_MAX_QUEUES 32

/* Marks each lane keeps (see wafer__lanes_touch). */
#define WAFER_LANE_MARKS 8

struct wafer__lane {
	void *queue; /* the plugin's; NULL while the lane is closed */
	bool dirty;  /* work issued since its last sync */
	/* Points issued on it: one a command that touches handles, and one
	 * more at each mark. Never reset, also when the index is reused, so
	 * a stale slot->lane_at is never ahead of the lane. */
	uint64_t issued;
	/* The lane's ordering events, a ring of the last few points it
	 * was marked at (increasing from |marks_next|, the oldest); each
	 * event is created at first need. */
	struct wafer__lane_mark {
		void *event;
		uint64_t at; /* 0: never recorded */
	} marks[WAFER_LANE_MARKS];
	unsigned marks_next;
	/* The point of each lane that work issued here from now on already
	 * waits for. */
	uint64_t seen[WAFER_MAX_QUEUES];
	/* Failures found after the command that caused them returned; the
	 * lane's sync reports them, and only its own. */
	struct wafer__deferred deferred;
	/* Failures of host callbacks, from the plugin's threads. */
	pthread_mutex_t callback_lock;
	struct wafer__deferred callback_failed;
};

struct wafer__lanes {
	const struct wafer_server_ops *server;
	void *device;        /* the plugin's */
	const char *backend; /* for messages: "cuda:0" */
	bool events;         /* the plugin has the events group */
	bool multi;          /* more than lane 0 is open */
	uint32_t last;       /* the lane the last touching command went on */
	/* Lane 0's point after the last memory went back to the memory
	 * manager: a block from it is free of earlier users there. */
	uint64_t released_at;
	uint32_t open;       /* how many are open */
	struct wafer__lane lane[WAFER_MAX_QUEUES];
};

/* Lane 0 over |queue0| (the bridge made it). */
void wafer__lanes_init(struct wafer__lanes *lanes,
		       const struct wafer_server_ops *server, void *device,
		       const char *backend, bool events, void *queue0);

/* A new lane in |*out_index|, ordered after everything lane 0 was
 * given: the plugin's queue_create, or its queue_wrap of the caller's
 * |native| queue (NULL: none). WAFER_ERROR_OUT_OF_RANGE past
 * WAFER_MAX_QUEUES. */
wafer_status wafer__lanes_open(struct wafer__lanes *lanes, void *native,
			       uint32_t *out_index);

/* The plugin's sync of lane |i|, its failure naming the queue; on
 * success no lane need wait for lane |i|'s work any more. */
wafer_status wafer__lanes_plugin_sync(struct wafer__lanes *lanes, uint32_t i);

/* The result of a call the program waits on (sync, read, close) on lane
 * |i| whose own outcome is |status|: lane |i|'s deferred failures and
 * its host callbacks' come first, this one counts as a later one; each
 * is reported once. */
wafer_status wafer__lanes_report(struct wafer__lanes *lanes, uint32_t i,
				 wafer_status status);

/* wafer__lanes_report of wafer__lanes_plugin_sync: for a lane other than
 * 0 (lane 0's caller adds what the memory manager needs). */
wafer_status wafer__lanes_sync(struct wafer__lanes *lanes, uint32_t i);

/* Syncs, then frees lane |i| (not 0) and its mark; returns its last
 * failures. */
wafer_status wafer__lanes_close(struct wafer__lanes *lanes, uint32_t i);

/* Frees every lane's mark and its failures; lane 0's queue is the
 * bridge's to destroy. The other lanes must be closed. */
void wafer__lanes_fini(struct wafer__lanes *lanes);

/* Makes lane |l| wait for point |at| of lane |a| (see above). */
wafer_status wafer__lanes_order(struct wafer__lanes *lanes, uint32_t l,
				uint32_t a, uint64_t at);

/* Before a command on lane |l| that touches the |count| slots |slots|
 * (NULL entries skipped): orders |l| after their last uses elsewhere and
 * makes the command their last use. */
wafer_status wafer__lanes_touch_slow(struct wafer__lanes *lanes, uint32_t l,
				     struct wafer__handle_slot *const *slots,
				     uint32_t count);
static inline wafer_status
wafer__lanes_touch(struct wafer__lanes *lanes, uint32_t l,
		   struct wafer__handle_slot *const *slots, uint32_t count)
{
	if (!lanes->multi)
		return WAFER_OK;
	return wafer__lanes_touch_slow(lanes, l, slots, count);
}

/* Before |slot|'s memory goes back to the memory manager, released
 * from lane |l|: the release counts as a use on |l| (work the caller
 * issued there outside wafer, on a wrapped queue, is over first), and
 * lane 0 then waits for that use. */
wafer_status wafer__lanes_before_release(struct wafer__lanes *lanes, uint32_t l,
					 struct wafer__handle_slot *slot);

/* After |slot| got memory from the memory manager, reserved from lane
 * |l|: the reservation counts as a use on |l|, after the earlier users
 * of any memory the manager had back (so the caller's own work on a
 * wrapped queue may use it at once). */
wafer_status wafer__lanes_reserved(struct wafer__lanes *lanes, uint32_t l,
				   struct wafer__handle_slot *slot);

/* A host callback on lane |l|: |fn(user)| once the work before it
 * finished; a failure it returns is kept for the lane's next sync. On a
 * plugin without events the lane is synced on the host and |fn| runs
 * here. */
wafer_status wafer__lanes_callback(struct wafer__lanes *lanes, uint32_t l,
				   wafer_status (*fn)(void *user), void *user);

#endif
