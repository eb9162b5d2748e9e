/* wafer — SPDX-License-Identifier: MIT
 * queue.c: wafer/queue.h — queues, the calling thread's current queue,
 * events and host callbacks. What runs on the device is the bridge's
 * (lib/lanes.c); this file checks the caller's arguments once and
 * submits the commands. */
#include "build-config.h"

#include <stdlib.h>

#include "lib/bridge.h"
#include "lib/client.h"
#include "lib/error.h"
#include "lib/event.h"
#include "lib/interop.h"
#include "lib/graph.h"
#include "lib/queue.h"
#include "lib/tls.h"

/*===----------------------------------------------------------------------===
 * The calling thread's current queue
 *===----------------------------------------------------------------------===*/

/* A thread selects a non-default queue on at most this many clients at
 * once (wafer_queue_select says so when a ninth would not fit). */
#define SELECTIONS 8

WAFER__TLS_HOT unsigned wafer__queue_selected_count;
static _Thread_local struct wafer__queue_selection selected[SELECTIONS];

static _Atomic uint64_t next_client_serial = 1;
static _Atomic uint64_t next_queue_serial = 1;

void wafer__client_queues_init(struct wafer__client_queues *queues,
			       wafer_client *client)
{
	queues->client_serial = atomic_fetch_add(&next_client_serial, 1);
	queues->default_queue = (struct wafer_queue){
		.client = client,
		.lane = 0,
		.serial = atomic_fetch_add(&next_queue_serial, 1),
	};
	pthread_mutex_init(&queues->lock, NULL);
	queues->open[0] = &queues->default_queue;
	atomic_store(&queues->serial[0], queues->default_queue.serial);
	for (uint32_t i = 1; i < WAFER_MAX_QUEUES; i++) {
		queues->open[i] = NULL;
		atomic_store(&queues->serial[i], 0);
	}
	queues->events = NULL;
}

void wafer__client_queues_fini(struct wafer__client_queues *queues)
{
	for (uint32_t i = 1; i < WAFER_MAX_QUEUES; i++)
		free(queues->open[i]);
	pthread_mutex_destroy(&queues->lock);
}

static struct wafer__queue_selection *find_selection(uint64_t client_serial)
{
	for (unsigned i = 0; i < wafer__queue_selected_count; i++)
		if (selected[i].client_serial == client_serial)
			return &selected[i];
	return NULL;
}

static void drop_selection(struct wafer__queue_selection *s)
{
	*s = selected[--wafer__queue_selected_count];
}

uint32_t wafer__queue_lane_slow(const struct wafer__client_queues *queues)
{
	struct wafer__queue_selection *s = find_selection(queues->client_serial);

	if (!s)
		return 0;
	/* The queue closed since (perhaps on another thread): default. */
	if (atomic_load_explicit(&queues->serial[s->lane],
				 memory_order_acquire) != s->queue_serial) {
		drop_selection(s);
		return 0;
	}
	return s->lane;
}

static struct wafer__client_queues *queues_of(wafer_client *client)
{
	return wafer__client_queues(client);
}

WAFER_API wafer_queue *wafer_client_default_queue(wafer_client *client)
{
	return client ? &queues_of(client)->default_queue : NULL;
}

WAFER_API wafer_queue *wafer_queue_current(wafer_client *client)
{
	if (!client)
		return NULL;
	struct wafer__client_queues *queues = queues_of(client);
	uint32_t lane = wafer__queue_current_lane(queues);
	/* A lane the thread still has selected is open: its record stays
	 * until it closes, which also clears the serial checked above. */
	struct wafer_queue *queue = queues->open[lane];
	return queue ? queue : &queues->default_queue;
}

WAFER_API wafer_queue *wafer_queue_select(wafer_queue *queue)
{
	if (!queue) {
		wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
			    "wafer_queue_select: queue is NULL (to go back to "
			   "the default queue, select "
			   "wafer_client_default_queue(client))");
		return NULL;
	}
	struct wafer__client_queues *queues = queues_of(queue->client);
	wafer_queue *was = wafer_queue_current(queue->client);
	struct wafer__queue_selection *s = find_selection(queues->client_serial);

	if (queue->lane == 0) {
		if (s)
			drop_selection(s);
		return was;
	}
	if (!s) {
		if (wafer__queue_selected_count == SELECTIONS) {
			wafer__fail(WAFER_ERROR_OUT_OF_RANGE,
				    "wafer_queue_select: this thread has queues "
				    "selected on %d clients already; select "
				    "the default queue of one first",
				    SELECTIONS);
			return NULL;
		}
		s = &selected[wafer__queue_selected_count++];
	}
	*s = (struct wafer__queue_selection){
		.client_serial = queues->client_serial,
		.queue_serial = queue->serial,
		.lane = queue->lane,
	};
	return was;
}

/*===----------------------------------------------------------------------===
 * Queues
 *===----------------------------------------------------------------------===*/

/* A command on |queue|'s lane, whatever the thread has selected. */
static wafer_status submit_on(wafer_queue *queue, struct wafer__command *c)
{
	c->queue = queue->lane + 1;
	return wafer__client_submit(queue->client, c);
}

/* wafer_queue_open and wafer_queue_open_native (|call|). */
static wafer_status open_queue(const char *call, wafer_client *client,
			       void *native, wafer_queue **out_queue)
{
	if (!out_queue)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: out_queue is NULL", call);
	*out_queue = NULL;
	if (!client)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: client is NULL", call);
	struct wafer__client_queues *queues = queues_of(client);
	struct wafer_queue *queue = calloc(1, sizeof *queue);
	if (!queue)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "wafer_queue_open: out of memory");
	uint32_t lane = 0;
	struct wafer__command c = {
		.kind = WAFER_COMMAND_QUEUE_OPEN,
		.queue_open = {.out_lane = &lane, .native = native},
	};
	wafer_status status = wafer__client_submit(client, &c);
	if (status != WAFER_OK) {
		free(queue);
		return status;
	}
	*queue = (struct wafer_queue){
		.client = client,
		.lane = lane,
		.serial = atomic_fetch_add(&next_queue_serial, 1),
	};
	pthread_mutex_lock(&queues->lock);
	queues->open[lane] = queue;
	atomic_store_explicit(&queues->serial[lane], queue->serial,
			      memory_order_release);
	pthread_mutex_unlock(&queues->lock);
	*out_queue = queue;
	return WAFER_OK;
}

WAFER_API wafer_status wafer_queue_open(wafer_client *client,
					wafer_queue **out_queue)
{
	return open_queue("wafer_queue_open", client, NULL, out_queue);
}

WAFER_API wafer_status wafer_queue_open_native(wafer_client *client,
					       void *native_queue,
					       wafer_queue **out_queue)
{
	if (!native_queue) {
		if (out_queue)
			*out_queue = NULL;
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_queue_open_native: native_queue is "
				   "NULL (wafer_queue_open makes a queue of "
				  "wafer's own)");
	}
	return open_queue("wafer_queue_open_native", client, native_queue,
			  out_queue);
}

WAFER_API wafer_status wafer_queue_close(wafer_queue *queue)
{
	if (!queue)
		return WAFER_OK;
	if (queue->lane == 0)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_queue_close: the default queue is "
				   "closed with its client (wafer_client_close)");
	struct wafer__client_queues *queues = queues_of(queue->client);
	if (atomic_load(&queues->capturing) & (UINT32_C(1) << queue->lane))
		return wafer__graph_refuse(WAFER_COMMAND_QUEUE_CLOSE,
					   queue->lane);
	pthread_mutex_lock(&queues->lock);
	atomic_store_explicit(&queues->serial[queue->lane], 0,
			      memory_order_release);
	queues->open[queue->lane] = NULL;
	pthread_mutex_unlock(&queues->lock);
	struct wafer__command c = {.kind = WAFER_COMMAND_QUEUE_CLOSE};
	wafer_status status = submit_on(queue, &c);
	free(queue);
	return status;
}

WAFER_API wafer_status wafer_queue_sync(wafer_queue *queue)
{
	if (!queue)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_queue_sync: queue is NULL");
	struct wafer__command c = {.kind = WAFER_COMMAND_SYNC};
	return submit_on(queue, &c);
}

WAFER_API wafer_status wafer_queue_callback(wafer_queue *queue,
					    wafer_host_callback fn,
					    void *user)
{
	wafer_status status = wafer__check_not_null(
		"wafer_queue_callback", queue, "queue", fn, "fn", fn, "fn");
	if (status != WAFER_OK)
		return status;
	struct wafer__command c = {
		.kind = WAFER_COMMAND_CALLBACK,
		.callback = {.fn = fn, .user = user},
	};
	return submit_on(queue, &c);
}

/*===----------------------------------------------------------------------===
 * Events
 *===----------------------------------------------------------------------===*/

WAFER_API wafer_status wafer_event_create(wafer_client *client,
					  uint32_t flags,
					  wafer_event **out_event)
{
	if (!out_event)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_event_create: out_event is NULL");
	*out_event = NULL;
	if (!client || (flags & ~WAFER_EVENT_TIMING))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_event_create: %s",
				   !client ? "client is NULL"
					  : "flags has bits other than "
					    "WAFER_EVENT_TIMING");
	return wafer__event_new(client, flags, out_event);
}

/* Both of one client, or INVALID_ARGUMENT naming |call|. */
static wafer_status check_pair(const char *call, const wafer_event *event,
			       const wafer_queue *queue)
{
	if (!event || !queue)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT, "%s: %s is NULL",
				   call, !event ? "event" : "queue");
	if (wafer__event_client(event) != queue->client)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: event %p and queue %u belong to "
				   "different clients",
				   call, (const void *)event, queue->lane);
	return WAFER_OK;
}

/* A command of |kind| on |event|, submitted on |queue| once check_pair
 * finds them a pair. */
static wafer_status submit_event(const char *call,
				 enum wafer__command_kind kind,
				 wafer_event *event, wafer_queue *queue)
{
	wafer_status status = check_pair(call, event, queue);
	if (status != WAFER_OK)
		return status;
	/* Field by field: an initializer zeroes the whole command (120
	 * bytes, a `rep stos` that took a fifth of the core's time for one
	 * event command), and an event command is read no further. */
	struct wafer__command c;
	c.kind = kind;
	c.event.event = event;
	return submit_on(queue, &c);
}

WAFER_API wafer_status wafer_event_record(wafer_event *event,
					  wafer_queue *queue)
{
	return submit_event("wafer_event_record", WAFER_COMMAND_EVENT_RECORD,
			    event, queue);
}

WAFER_API wafer_status wafer_queue_wait(wafer_queue *queue,
					wafer_event *event)
{
	return submit_event("wafer_queue_wait", WAFER_COMMAND_QUEUE_WAIT,
			    event, queue);
}

/*===----------------------------------------------------------------------===
 * On the bridge's thread (lib/command.def)
 *===----------------------------------------------------------------------===*/

wafer_status wafer__queue_run_open(struct wafer__bridge *bridge,
				   struct wafer__command *c)
{
	if (c->queue_open.native && !wafer__interop_server(bridge->device->plugin))
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "wafer_queue_open_native: native queue %p: "
				   "interop not supported by %s",
				   c->queue_open.native, bridge->device->backend);
	return wafer__lanes_open(&bridge->lanes, c->queue_open.native,
				 c->queue_open.out_lane);
}

wafer_status wafer__queue_run_close(struct wafer__bridge *bridge,
				    struct wafer__command *c)
{
	return wafer__lanes_close(&bridge->lanes, wafer__command_lane(c));
}

wafer_status wafer__queue_run_callback(struct wafer__bridge *bridge,
				       struct wafer__command *c)
{
	return wafer__lanes_callback(&bridge->lanes, wafer__command_lane(c),
				     c->callback.fn, c->callback.user);
}

/* Everything submitted before has been issued: the command itself does
 * nothing, its place in the channel's order is the point. */
wafer_status wafer__queue_run_flush(struct wafer__bridge *bridge,
				    struct wafer__command *c)
{
	(void)bridge;
	(void)c;
	return WAFER_OK;
}
