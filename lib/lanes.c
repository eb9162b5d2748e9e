/* wafer — SPDX-License-Identifier: MIT
 * lanes.c: the queues of one client and the order between them (see
 * lanes.h for the rule). */
#include "build-config.h"

#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/lanes.h"

static void lane_reset(struct wafer__lane *lane)
{
	uint64_t issued = lane->issued; /* never goes back (lanes.h) */

	memset(lane, 0, sizeof *lane);
	lane->issued = issued;
	pthread_mutex_init(&lane->callback_lock, NULL);
}

void wafer__lanes_init(struct wafer__lanes *lanes,
		       const struct wafer_server_ops *server, void *device,
		       const char *backend, bool events, void *queue0)
{
	memset(lanes, 0, sizeof *lanes);
	lanes->server = server;
	lanes->device = device;
	lanes->backend = backend;
	lanes->events = events;
	for (uint32_t i = 0; i < WAFER_MAX_QUEUES; i++)
		lane_reset(&lanes->lane[i]);
	lanes->lane[0].queue = queue0;
	lanes->open = 1;
}

wafer_status wafer__lanes_plugin_sync(struct wafer__lanes *lanes, uint32_t i)
{
	struct wafer__lane *lane = &lanes->lane[i];
	wafer_status status = lanes->server->sync(lanes->device, lane->queue);

	if (status != WAFER_OK)
		return wafer__fail_context(status, "queued work on %s queue %u "
						  "failed",
					  lanes->backend, i);
	lane->dirty = false;
	/* Everything issued on it is done: no lane need wait for it. */
	for (uint32_t j = 0; j < WAFER_MAX_QUEUES; j++)
		if (lanes->lane[j].seen[i] < lane->issued)
			lanes->lane[j].seen[i] = lane->issued;
	return WAFER_OK;
}

/* Moves the host callbacks' failures into the lane's deferred ones. */
static void take_callback_failures(struct wafer__lane *lane)
{
	pthread_mutex_lock(&lane->callback_lock);
	if (wafer__deferred_pending(&lane->callback_failed)) {
		wafer_status status =
			wafer__deferred_take(&lane->callback_failed);
		wafer__deferred_record(&lane->deferred, status);
	}
	pthread_mutex_unlock(&lane->callback_lock);
}

wafer_status wafer__lanes_report(struct wafer__lanes *lanes, uint32_t i,
				 wafer_status status)
{
	struct wafer__lane *lane = &lanes->lane[i];

	take_callback_failures(lane);
	if (!wafer__deferred_pending(&lane->deferred))
		return status;
	wafer__deferred_record(&lane->deferred, status);
	return wafer__deferred_take(&lane->deferred);
}

wafer_status wafer__lanes_sync(struct wafer__lanes *lanes, uint32_t i)
{
	return wafer__lanes_report(lanes, i, wafer__lanes_plugin_sync(lanes, i));
}

wafer_status wafer__lanes_open(struct wafer__lanes *lanes, void *native,
			       uint32_t *out_index)
{
	uint32_t i = 1;
	wafer_status status;

	while (i < WAFER_MAX_QUEUES && lanes->lane[i].queue)
		i++;
	if (i == WAFER_MAX_QUEUES)
		return wafer__fail(WAFER_ERROR_OUT_OF_RANGE,
				   "wafer_queue_open: a client has at most %d "
				   "queues open at once (its default queue "
				  "included); close one first",
				  WAFER_MAX_QUEUES);
	lane_reset(&lanes->lane[i]);
	status = native ? lanes->server->queue_wrap(lanes->device, native,
						    &lanes->lane[i].queue)
			: lanes->server->queue_create(lanes->device,
						      &lanes->lane[i].queue);
	if (status != WAFER_OK) {
		lanes->lane[i].queue = NULL;
		return wafer__fail_context(status, "%s: %s", lanes->backend,
					   native ? "queue_wrap" : "queue_create");
	}
	lanes->open++;
	lanes->multi = true;
	/* A point past everything lane 0 was given, untracked or not. */
	status = wafer__lanes_order(lanes, i, 0, ++lanes->lane[0].issued);
	if (status != WAFER_OK) {
		wafer__lanes_close(lanes, i);
		return status;
	}
	*out_index = i;
	return WAFER_OK;
}

static void lane_free(struct wafer__lanes *lanes, struct wafer__lane *lane)
{
	for (unsigned i = 0; i < WAFER_LANE_MARKS; i++) {
		if (lane->marks[i].event)
			lanes->server->event_destroy(lanes->device,
						     lane->marks[i].event);
		lane->marks[i] = (struct wafer__lane_mark){0};
	}
	wafer__deferred_clear(&lane->deferred);
	wafer__deferred_clear(&lane->callback_failed);
	pthread_mutex_destroy(&lane->callback_lock);
}

wafer_status wafer__lanes_close(struct wafer__lanes *lanes, uint32_t i)
{
	struct wafer__lane *lane = &lanes->lane[i];
	wafer_status status = wafer__lanes_sync(lanes, i);

	lane_free(lanes, lane);
	lanes->server->queue_destroy(lanes->device, lane->queue);
	lane->queue = NULL;
	lane_reset(lane);
	lanes->open--;
	lanes->multi = lanes->open > 1;
	if (lanes->last == i)
		lanes->last = 0;
	return status;
}

void wafer__lanes_fini(struct wafer__lanes *lanes)
{
	lane_free(lanes, &lanes->lane[0]);
}

/* Marks lane |a| at its current point, in the oldest slot of its ring;
 * the new mark in |*out|. */
static wafer_status mark(struct wafer__lanes *lanes, uint32_t a,
			 struct wafer__lane_mark **out)
{
	struct wafer__lane *lane = &lanes->lane[a];
	struct wafer__lane_mark *m = &lane->marks[lane->marks_next];
	wafer_status status = WAFER_OK;

	if (!m->event)
		status = lanes->server->event_create(lanes->device, 0,
						     &m->event);
	if (status == WAFER_OK)
		status = lanes->server->event_record(lanes->device,
						     lane->queue, m->event);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s: event on queue %u",
					   lanes->backend, a);
	m->at = lane->issued;
	lane->marks_next = (lane->marks_next + 1) % WAFER_LANE_MARKS;
	*out = m;
	return WAFER_OK;
}

/* The newest mark of lane |a|, or NULL. */
static struct wafer__lane_mark *newest_mark(struct wafer__lane *lane)
{
	struct wafer__lane_mark *m =
		&lane->marks[(lane->marks_next + WAFER_LANE_MARKS - 1) %
			     WAFER_LANE_MARKS];
	return m->at ? m : NULL;
}

/* The oldest mark of lane |a| at or past point |at|: the least a wait
 * for |at| can wait for. Marks more than WAFER_LANE_MARKS back are gone,
 * so a newer one may serve (a longer wait, never a shorter one). */
static struct wafer__lane_mark *covering_mark(struct wafer__lane *lane,
					      uint64_t at)
{
	for (unsigned i = 0; i < WAFER_LANE_MARKS; i++) {
		struct wafer__lane_mark *m =
			&lane->marks[(lane->marks_next + i) % WAFER_LANE_MARKS];
		if (m->at && m->at >= at)
			return m;
	}
	return NULL;
}

wafer_status wafer__lanes_order(struct wafer__lanes *lanes, uint32_t l,
				uint32_t a, uint64_t at)
{
	struct wafer__lane *to = &lanes->lane[l], *from = &lanes->lane[a];
	wafer_status status;

	/* A closed lane's work finished when it closed. */
	if (l == a || !from->queue || to->seen[a] >= at)
		return WAFER_OK;
	if (!lanes->events) {
		/* Ordered on the host. A failure is lane |a|'s own, reported
		 * by its next sync; the failed work is over all the same. */
		status = wafer__lanes_plugin_sync(lanes, a);
		wafer__deferred_record(&from->deferred, status);
		to->seen[a] = from->issued;
		return WAFER_OK;
	}
	struct wafer__lane_mark *m = covering_mark(from, at);
	if (!m) {
		status = mark(lanes, a, &m);
		if (status != WAFER_OK)
			return status;
	}
	status = lanes->server->queue_wait_event(lanes->device, to->queue,
						 m->event);
	if (status != WAFER_OK)
		return wafer__fail_context(status,
					   "%s: queue %u waiting for queue %u",
					   lanes->backend, l, a);
	to->seen[a] = m->at;
	to->dirty = true;
	return WAFER_OK;
}

wafer_status wafer__lanes_touch_slow(struct wafer__lanes *lanes, uint32_t l,
				     struct wafer__handle_slot *const *slots,
				     uint32_t count)
{
	/* Switching lanes: mark where the previous one got to, so that a
	 * later wait for its work so far need not wait for more. */
	if (lanes->last != l && lanes->events) {
		struct wafer__lane *prev = &lanes->lane[lanes->last];
		struct wafer__lane_mark *m = newest_mark(prev), *made;
		if (prev->queue && prev->issued && (!m || m->at < prev->issued)) {
			wafer_status status = mark(lanes, lanes->last, &made);
			if (status != WAFER_OK)
				return status;
		}
	}
	lanes->last = l;
	uint64_t at = ++lanes->lane[l].issued;

	for (uint32_t i = 0; i < count; i++) {
		struct wafer__handle_slot *slot = slots[i];
		if (!slot)
			continue;
		if (slot->lane != l) {
			wafer_status status = wafer__lanes_order(
				lanes, l, slot->lane, slot->lane_at);
			if (status != WAFER_OK)
				return status;
			slot->lane = (uint8_t)l;
		}
		slot->lane_at = at;
	}
	return WAFER_OK;
}

wafer_status wafer__lanes_before_release(struct wafer__lanes *lanes, uint32_t l,
					 struct wafer__handle_slot *slot)
{
	if (!lanes->multi)
		return WAFER_OK;
	struct wafer__handle_slot *const one[] = {slot};
	wafer_status status = wafer__lanes_touch_slow(lanes, l, one, 1);
	if (status == WAFER_OK && l != 0) {
		status = wafer__lanes_order(lanes, 0, l, slot->lane_at);
		/* The wait is a point of lane 0's own. */
		slot->lane_at = ++lanes->lane[0].issued;
	}
	if (status == WAFER_OK && lanes->released_at < slot->lane_at)
		lanes->released_at = slot->lane_at;
	return status;
}

wafer_status wafer__lanes_reserved(struct wafer__lanes *lanes, uint32_t l,
				   struct wafer__handle_slot *slot)
{
	slot->lane = 0;
	slot->lane_at = 0;
	if (!lanes->multi)
		return WAFER_OK;
	slot->lane_at = lanes->released_at;
	if (l == 0)
		return WAFER_OK;
	struct wafer__handle_slot *const one[] = {slot};
	return wafer__lanes_touch_slow(lanes, l, one, 1);
}

struct callback {
	struct wafer__lane *lane;
	uint32_t index;
	const char *backend;
	wafer_status (*fn)(void *user);
	void *user;
};

/* On the plugin's thread: the caller's callback, its failure kept. */
static void run_callback(void *data)
{
	struct callback *cb = data;
	wafer_status status = cb->fn(cb->user);

	if (status != WAFER_OK) {
		wafer__fail_context(status, "host callback %p on %s queue %u",
				    (void *)cb->fn, cb->backend, cb->index);
		pthread_mutex_lock(&cb->lane->callback_lock);
		wafer__deferred_record(&cb->lane->callback_failed, status);
		pthread_mutex_unlock(&cb->lane->callback_lock);
	}
	free(cb);
}

wafer_status wafer__lanes_callback(struct wafer__lanes *lanes, uint32_t l,
				   wafer_status (*fn)(void *user), void *user)
{
	struct wafer__lane *lane = &lanes->lane[l];
	struct callback *cb = malloc(sizeof *cb);
	wafer_status status;

	if (!cb)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "host callback: out of memory");
	*cb = (struct callback){lane, l, lanes->backend, fn, user};
	if (!lanes->events) {
		/* Ordered on the host: the work before it is over (a
		 * failure of it stays the lane's), then it runs here. */
		wafer__deferred_record(&lane->deferred, wafer__lanes_plugin_sync(lanes, l));
		run_callback(cb);
		return WAFER_OK;
	}
	lane->dirty = true;
	status = lanes->server->queue_callback(lanes->device, lane->queue,
					       run_callback, cb);
	if (status != WAFER_OK) {
		free(cb);
		return wafer__fail_context(status, "%s: host callback on queue "
						  "%u",
					  lanes->backend, l);
	}
	return WAFER_OK;
}
