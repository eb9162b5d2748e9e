/* wafer — SPDX-License-Identifier: MIT
 *
 * event.c: the Level Zero plugin's events and host callbacks (ABI 1.5).
 *
 * A Level Zero event is signalled once and must be reset before it is
 * signalled again, and a command that waits on it waits for whatever
 * signal comes next. A wafer event is recorded again and again, and a
 * queue that waited on an earlier recording must still wait for that
 * one only (CUDA's rule). So each recording takes an unused Level Zero
 * event (struct lz_zevent) and signals it with a barrier, which waits
 * for everything issued before it on the queue; a wait on the wafer
 * event is zeCommandListAppendWaitOnEvents on the Level Zero event of
 * its latest recording. A Level Zero event counts its users: the wafer
 * event whose latest recording it is, and every queue whose work since
 * its last wait signals or waits on it (the queue drops them at its next
 * wait, when that work is over). The last user resets it
 * (zeEventHostReset) and puts it on the device's list of free events,
 * so events are created only as many as are in use at once. Each has a
 * pool of its own: pools are as cheap to create as events, and a pool
 * per event lets any one be destroyed alone.
 *
 * Timing events come from pools with ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP;
 * the time of a recording is its barrier's end on the device's global
 * clock (zeEventQueryKernelTimestamp), as the timers of server.c.
 *
 * A host callback is the Level Zero way of cuLaunchHostFunc: a barrier
 * signals a "reached" event after the work before it, and the queue then
 * waits on a "gate" event the host signals. A thread of the queue's own
 * waits for each callback's reached event in turn (zeEventHostSynchronize),
 * calls the function, then signals the gate (zeEventHostSignal), so that
 * callbacks of a queue run in order, one at a time, and a slow one holds
 * up only its queue. A failure of the work before it does not skip the
 * function (the core frees its record there and keeps its status); the
 * failure is the queue's, for its next sync.
 *
 * With regular command lists the recording's barrier reaches the device
 * only when the list is executed: event_record and queue_callback hand
 * the list to the command queue at once (lz_queue_submit), since another
 * queue, the host or the callback thread may wait on it before wafer
 * next waits on this queue. */
#include "build-config.h"

#include <stdlib.h>

#include "plugins/levelzero/lz_plugin.h"

struct lz_zevent {
	ze_event_pool_handle_t pool;
	ze_event_handle_t event;
	bool timing;
	unsigned users; /* under the device's event_lock */
	struct lz_zevent *next_free;
};

/* A wafer event: the Level Zero event of its latest recording, or NULL
 * (never recorded: complete). */
struct lz_event {
	bool timing;
	struct lz_zevent *latest;
};

ze_event_handle_t lz_zevent_handle(const struct lz_zevent *z)
{
	return z->event;
}

static void zevent_destroy(struct lz_zevent *z)
{
	if (z->event)
		zeEventDestroy(z->event);
	if (z->pool)
		zeEventPoolDestroy(z->pool);
	free(z);
}

static wafer_status zevent_create(struct lz_device *dev, bool timing,
				  struct lz_zevent **out)
{
	ze_event_pool_desc_t pool_desc = {
		.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
		.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
			 (timing ? ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP : 0),
		.count = 1,
	};
	ze_event_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
		.index = 0,
		.signal = ZE_EVENT_SCOPE_FLAG_HOST,
		.wait = ZE_EVENT_SCOPE_FLAG_HOST,
	};
	struct lz_zevent *z = calloc(1, sizeof *z);
	const char *what = "zeEventPoolCreate";
	ze_result_t r;

	*out = NULL;
	if (!z) {
		lz_host(dev)->set_error("levelzero: out of host memory for an "
					"event");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	z->timing = timing;
	r = zeEventPoolCreate(dev->context, &pool_desc, 1, &dev->device,
			      &z->pool);
	if (r == ZE_RESULT_SUCCESS) {
		what = "zeEventCreate";
		r = zeEventCreate(z->pool, &desc, &z->event);
	}
	if (r != ZE_RESULT_SUCCESS) {
		z->event = NULL;
		zevent_destroy(z);
		return lz_fail(lz_host(dev), r, what);
	}
	*out = z;
	return WAFER_OK;
}

wafer_status lz_zevent_take(struct lz_device *dev, bool timing,
			    struct lz_zevent **out)
{
	struct lz_zevent *z;

	pthread_mutex_lock(&dev->event_lock);
	z = dev->free_events[timing];
	if (z)
		dev->free_events[timing] = z->next_free;
	pthread_mutex_unlock(&dev->event_lock);
	if (!z) {
		wafer_status status = zevent_create(dev, timing, &z);
		if (status != WAFER_OK)
			return status;
	}
	z->users = 1;
	z->next_free = NULL;
	*out = z;
	return WAFER_OK;
}

void lz_zevent_release(struct lz_device *dev, struct lz_zevent *z)
{
	bool last;

	if (!z)
		return;
	pthread_mutex_lock(&dev->event_lock);
	last = --z->users == 0;
	pthread_mutex_unlock(&dev->event_lock);
	if (!last)
		return;
	/* No work signals or waits on it any more: ready for another
	 * recording. One that cannot be reset is not used again. */
	if (zeEventHostReset(z->event) != ZE_RESULT_SUCCESS) {
		zevent_destroy(z);
		return;
	}
	pthread_mutex_lock(&dev->event_lock);
	z->next_free = dev->free_events[z->timing];
	dev->free_events[z->timing] = z;
	pthread_mutex_unlock(&dev->event_lock);
}

static void zevent_use(struct lz_device *dev, struct lz_zevent *z)
{
	pthread_mutex_lock(&dev->event_lock);
	z->users++;
	pthread_mutex_unlock(&dev->event_lock);
}

wafer_status lz_queue_hold(struct lz_device *dev, struct lz_queue *q,
			   struct lz_held what)
{
	if (q->held_count == q->held_cap) {
		size_t cap = q->held_cap ? 2 * q->held_cap : 16;
		struct lz_held *grown = realloc(q->held, cap * sizeof *grown);
		if (!grown) {
			lz_host(dev)->set_error("levelzero: out of host memory "
						"for a queue's events");
			return WAFER_ERROR_OUT_OF_MEMORY;
		}
		q->held = grown;
		q->held_cap = cap;
	}
	if (what.event)
		zevent_use(dev, what.event);
	else
		lz_graph_use(dev, what.graph);
	q->held[q->held_count++] = what;
	return WAFER_OK;
}

void lz_queue_abandon_held(struct lz_queue *q)
{
	for (size_t i = 0; i < q->held_count; i++)
		if (q->held[i].event)
			zeEventHostSignal(q->held[i].event->event);
}

void lz_queue_release_held(struct lz_device *dev, struct lz_queue *q)
{
	for (size_t i = 0; i < q->held_count; i++) {
		if (q->held[i].event)
			lz_zevent_release(dev, q->held[i].event);
		else
			lz_graph_release(dev, q->held[i].graph);
	}
	q->held_count = 0;
}

void lz_events_close(struct lz_device *dev)
{
	for (int timing = 0; timing < 2; timing++)
		while (dev->free_events[timing]) {
			struct lz_zevent *z = dev->free_events[timing];
			dev->free_events[timing] = z->next_free;
			zevent_destroy(z);
		}
}

/* The latest recording of |e| with a reference for the caller, or NULL. */
static struct lz_zevent *latest_of(struct lz_device *dev, struct lz_event *e)
{
	struct lz_zevent *z;

	pthread_mutex_lock(&dev->event_lock);
	z = e->latest;
	if (z)
		z->users++;
	pthread_mutex_unlock(&dev->event_lock);
	return z;
}

/*===----------------------------------------------------------------------===
 * The events group
 *===----------------------------------------------------------------------===*/

wafer_status lz_event_create(void *device, uint32_t flags, void **out_event)
{
	struct lz_device *dev = device;
	struct lz_event *e = wafer_plugin_calloc(
		lz_host(dev), sizeof *e,
		"levelzero: out of host memory for an event");

	*out_event = NULL;
	if (!e)
		return WAFER_ERROR_OUT_OF_MEMORY;
	e->timing = (flags & WAFER_PLUGIN_EVENT_TIMING) != 0;
	*out_event = e;
	return WAFER_OK;
}

void lz_event_destroy(void *device, void *event)
{
	struct lz_event *e = event;

	if (!e)
		return;
	lz_zevent_release(device, e->latest);
	free(e);
}

wafer_status lz_event_record(void *device, void *queue, void *event)
{
	struct lz_device *dev = device;
	struct lz_queue *q = queue;
	struct lz_event *e = event;
	struct lz_zevent *z, *old;
	wafer_status status;

	status = lz_zevent_take(dev, e->timing, &z);
	if (status != WAFER_OK)
		return status;
	/* Held first: a barrier that went in always has its event
	 * alive. */
	status = lz_queue_hold(dev, q, (struct lz_held){.event = z});
	if (status == WAFER_OK)
		status = lz_queue_barrier(dev, q, z->event);
	if (status != WAFER_OK) {
		lz_zevent_release(dev, z);
		return status;
	}
	pthread_mutex_lock(&dev->event_lock);
	old = e->latest;
	e->latest = z;
	pthread_mutex_unlock(&dev->event_lock);
	lz_zevent_release(dev, old);
	return lz_queue_submit(dev, q);
}

/* Held first: a wait that went in always has its event alive. */
wafer_status lz_queue_append_wait(struct lz_device *dev, struct lz_queue *q,
				  struct lz_zevent *z)
{
	wafer_status status = lz_queue_hold(dev, q, (struct lz_held){.event = z});
	ze_result_t r;

	if (status != WAFER_OK)
		return status;
	r = zeCommandListAppendWaitOnEvents(q->list, 1, &z->event);
	if (r != ZE_RESULT_SUCCESS)
		return lz_fail(lz_host(dev), r, "zeCommandListAppendWaitOnEvents");
	lz_queue_dirty(q);
	return WAFER_OK;
}

wafer_status lz_queue_wait_event(void *device, void *queue, void *event)
{
	struct lz_device *dev = device;
	struct lz_zevent *z = latest_of(dev, event);
	wafer_status status;

	if (!z)
		return WAFER_OK;
	status = lz_queue_append_wait(dev, queue, z);
	lz_zevent_release(dev, z);
	return status;
}

/* event_sync, or with |query| event_query: the host's look at the
 * latest recording. */
static wafer_status host_side(struct lz_device *dev, struct lz_event *e,
			      bool query)
{
	struct lz_zevent *z = latest_of(dev, e);
	ze_result_t r;

	if (!z)
		return WAFER_OK;
	r = query ? zeEventQueryStatus(z->event)
		  : zeEventHostSynchronize(z->event, UINT64_MAX);
	lz_zevent_release(dev, z);
	if (r == ZE_RESULT_SUCCESS)
		return WAFER_OK;
	if (query && r == ZE_RESULT_NOT_READY)
		return WAFER_ERROR_NOT_READY;
	return lz_fail(lz_host(dev), r,
		       query ? "zeEventQueryStatus" : "zeEventHostSynchronize");
}

wafer_status lz_event_sync(void *device, void *event)
{
	return host_side(device, event, false);
}

wafer_status lz_event_query(void *device, void *event)
{
	return host_side(device, event, true);
}

wafer_status lz_timestamp_ns(struct lz_device *dev, ze_event_handle_t from,
			     ze_event_handle_t to, uint64_t *out_ns)
{
	const uint32_t bits = dev->slot->timestamp_bits;
	const uint64_t mask = bits >= 64 || bits == 0
				      ? UINT64_MAX
				      : (UINT64_C(1) << bits) - 1;
	ze_kernel_timestamp_result_t a, b;
	ze_result_t r;

	*out_ns = 0;
	if (dev->slot->timer_frequency == 0) {
		lz_host(dev)->set_error("levelzero: '%s' reports no timer "
					"frequency",
					dev->slot->name);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	r = zeEventQueryKernelTimestamp(from, &a);
	if (r == ZE_RESULT_SUCCESS)
		r = zeEventQueryKernelTimestamp(to, &b);
	if (r != ZE_RESULT_SUCCESS)
		return lz_fail(lz_host(dev), r, "zeEventQueryKernelTimestamp");
	/* The counter wraps: the difference modulo its width, where more
	 * than half of it means |to| ended first (then 0, as CUDA's
	 * negative times are read). */
	uint64_t ticks = (b.global.kernelEnd - a.global.kernelEnd) & mask;
	if (ticks > mask / 2)
		return WAFER_OK;
	/* ticks * 1e9 / frequency, in 128 bits so no interval overflows. */
	*out_ns = (uint64_t)((unsigned __int128)ticks * 1000000000u /
			     dev->slot->timer_frequency);
	return WAFER_OK;
}

wafer_status lz_event_elapsed(void *device, void *start, void *end,
			      uint64_t *out_ns)
{
	struct lz_device *dev = device;
	struct lz_zevent *a = latest_of(dev, start), *b = latest_of(dev, end);
	wafer_status status;

	*out_ns = 0;
	if (!a || !b || !a->timing || !b->timing) {
		lz_host(dev)->set_error("levelzero: event_elapsed: an event "
					"was never recorded, or not made for "
					"timing");
		status = WAFER_ERROR_INVALID_ARGUMENT;
	} else {
		status = lz_event_sync(dev, end);
		if (status == WAFER_OK)
			status = lz_event_sync(dev, start);
		if (status == WAFER_OK)
			status = lz_timestamp_ns(dev, a->event, b->event, out_ns);
	}
	lz_zevent_release(dev, a);
	lz_zevent_release(dev, b);
	return status;
}

/*===----------------------------------------------------------------------===
 * Host callbacks
 *===----------------------------------------------------------------------===*/

struct lz_callback {
	void (*fn)(void *arg);
	void *arg;
	struct lz_zevent *reached, *gate; /* the thread's references */
	struct lz_callback *next;
};

/* A queue's callbacks in order, and the thread that runs them. */
struct lz_callbacks {
	struct lz_device *dev;
	pthread_mutex_t lock;
	pthread_cond_t more;
	struct lz_callback *head, **tail;
	bool stop;
	pthread_t thread;
};

static void *callback_thread(void *data)
{
	struct lz_callbacks *cbs = data;

	for (;;) {
		pthread_mutex_lock(&cbs->lock);
		while (!cbs->head && !cbs->stop)
			pthread_cond_wait(&cbs->more, &cbs->lock);
		struct lz_callback *cb = cbs->head;
		if (cb) {
			cbs->head = cb->next;
			if (!cbs->head)
				cbs->tail = &cbs->head;
		}
		pthread_mutex_unlock(&cbs->lock);
		if (!cb)
			return NULL; /* stopped, nothing left */
		/* A failure here is the queue's (its next sync reports
		 * it); the function runs all the same, and the gate opens
		 * so that the queue does not hang. */
		zeEventHostSynchronize(cb->reached->event, UINT64_MAX);
		cb->fn(cb->arg);
		zeEventHostSignal(cb->gate->event);
		lz_zevent_release(cbs->dev, cb->reached);
		lz_zevent_release(cbs->dev, cb->gate);
		free(cb);
	}
}

static wafer_status callbacks_start(struct lz_device *dev, struct lz_queue *q)
{
	struct lz_callbacks *cbs;

	if (q->callbacks)
		return WAFER_OK;
	cbs = wafer_plugin_calloc(lz_host(dev), sizeof *cbs,
				  "levelzero: out of host memory for host "
				  "callbacks");
	if (!cbs)
		return WAFER_ERROR_OUT_OF_MEMORY;
	cbs->dev = dev;
	cbs->tail = &cbs->head;
	pthread_mutex_init(&cbs->lock, NULL);
	pthread_cond_init(&cbs->more, NULL);
	if (pthread_create(&cbs->thread, NULL, callback_thread, cbs) != 0) {
		pthread_cond_destroy(&cbs->more);
		pthread_mutex_destroy(&cbs->lock);
		free(cbs);
		lz_host(dev)->set_error("levelzero: cannot start the host "
					"callback thread");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	q->callbacks = cbs;
	return WAFER_OK;
}

void lz_callbacks_stop(struct lz_queue *q)
{
	struct lz_callbacks *cbs = q->callbacks;

	if (!cbs)
		return;
	pthread_mutex_lock(&cbs->lock);
	cbs->stop = true;
	pthread_cond_signal(&cbs->more);
	pthread_mutex_unlock(&cbs->lock);
	pthread_join(cbs->thread, NULL);
	pthread_cond_destroy(&cbs->more);
	pthread_mutex_destroy(&cbs->lock);
	free(cbs);
	q->callbacks = NULL;
}

wafer_status lz_queue_callback(void *device, void *queue,
			       void (*fn)(void *arg), void *arg)
{
	struct lz_device *dev = device;
	struct lz_queue *q = queue;
	struct lz_callback *cb = wafer_plugin_calloc(
		lz_host(dev), sizeof *cb,
		"levelzero: out of host memory for a host callback");
	wafer_status status = WAFER_OK;

	if (!cb)
		return WAFER_ERROR_OUT_OF_MEMORY;
	cb->fn = fn;
	cb->arg = arg;
	status = callbacks_start(dev, q);
	if (status == WAFER_OK)
		status = lz_zevent_take(dev, false, &cb->reached);
	if (status == WAFER_OK)
		status = lz_zevent_take(dev, false, &cb->gate);
	if (status == WAFER_OK)
		status = lz_queue_hold(dev, q,
				       (struct lz_held){.event = cb->reached});
	if (status == WAFER_OK)
		status = lz_queue_barrier(dev, q, cb->reached->event);
	/* Past here the queue waits on the gate: the callback must run,
	 * or the queue hangs. */
	if (status == WAFER_OK)
		status = lz_queue_append_wait(dev, q, cb->gate);
	if (status != WAFER_OK) {
		lz_zevent_release(dev, cb->reached);
		lz_zevent_release(dev, cb->gate);
		free(cb);
		return status;
	}
	/* Submitted first: the thread may wait for |reached| at once (a
	 * failure leaves it for the queue's next wait to submit). */
	status = lz_queue_submit(dev, q);
	struct lz_callbacks *cbs = q->callbacks;
	pthread_mutex_lock(&cbs->lock);
	*cbs->tail = cb;
	cbs->tail = &cb->next;
	pthread_cond_signal(&cbs->more);
	pthread_mutex_unlock(&cbs->lock);
	return status;
}
