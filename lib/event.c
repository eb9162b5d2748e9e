/* wafer — SPDX-License-Identifier: MIT
 * event.c: events (wafer/queue.h). With the plugin's events group an
 * event is the plugin's, recorded and waited on by commands in queue
 * order, and synced, queried and timed from the calling thread once its
 * channel has issued everything submitted before (a flush). Without the
 * group the core stands in: an event remembers the queue it captured, a
 * wait orders by syncing that queue on the host, and so do sync and query
 * (query then waits: wafer-queue(7) says so). */
#include "build-config.h"

#include <stdbool.h>
#include <stdlib.h>

#include "lib/bridge.h"
#include "lib/client.h"
#include "lib/error.h"
#include "lib/event.h"
#include "lib/list.h"
#include "lib/log.h"
#include "lib/queue.h"

struct wafer_event {
	wafer_client *client;
	uint32_t flags;
	void *plugin; /* the plugin's event; NULL without the group */
	/* The lane its latest record captured, -1: never recorded. Written
	 * by the bridge's thread; read after a flush. */
	int lane;
	/* The client's events alive (queue.h), under its queues' lock. */
	wafer_event *prev, *next;
};

static void link_event(wafer_event *event)
{
	struct wafer__client_queues *queues = wafer__client_queues(event->client);

	pthread_mutex_lock(&queues->lock);
	WAFER__LIST_PUSH(queues->events, event, prev, next);
	pthread_mutex_unlock(&queues->lock);
}

static void unlink_event(wafer_event *event)
{
	struct wafer__client_queues *queues = wafer__client_queues(event->client);

	pthread_mutex_lock(&queues->lock);
	WAFER__LIST_UNLINK(queues->events, event, prev, next);
	pthread_mutex_unlock(&queues->lock);
}

static const struct wafer_server_ops *server_of(wafer_client *client,
						void **out_device)
{
	struct wafer_runtime_device *device =
		wafer__client_runtime_device(client);
	*out_device = device->device;
	return device->plugin->server;
}

static bool has_events(wafer_client *client)
{
	return wafer__client_runtime_device(client)->info.capabilities &
	       WAFER_CAP_EVENTS;
}

wafer_status wafer__event_new(wafer_client *client, uint32_t flags,
			      wafer_event **out_event)
{
	wafer_event *event = calloc(1, sizeof *event);
	void *device;
	const struct wafer_server_ops *server = server_of(client, &device);

	if (!event)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "wafer_event_create: out of memory");
	*event = (wafer_event){.client = client, .flags = flags, .lane = -1};
	if (has_events(client)) {
		wafer_status status = server->event_create(
			device,
			(flags & WAFER_EVENT_TIMING) ? WAFER_PLUGIN_EVENT_TIMING
						     : 0,
			&event->plugin);
		if (status != WAFER_OK) {
			free(event);
			return wafer__fail_context(status, "wafer_event_create");
		}
	}
	link_event(event);
	*out_event = event;
	return WAFER_OK;
}

wafer_client *wafer__event_client(const wafer_event *event)
{
	return event->client;
}

/* Everything submitted before on |event|'s client has been issued. */
static wafer_status flush(wafer_event *event)
{
	struct wafer__command c = {.kind = WAFER_COMMAND_FLUSH};
	return wafer__client_submit(event->client, &c);
}

/* Without the events group: syncs the queue the event captured. */
static wafer_status sync_captured(wafer_event *event)
{
	if (event->lane < 0)
		return WAFER_OK;
	struct wafer__command c = {
		.kind = WAFER_COMMAND_SYNC,
		.queue = (uint8_t)(event->lane + 1),
	};
	return wafer__client_submit(event->client, &c);
}

/* wafer_event_sync and wafer_event_query (|query| says which): once
 * everything submitted before was issued, the plugin's event_sync or
 * event_query, or, without the events group, a sync of the captured
 * queue (so a query waits there). NOT_READY is an answer, not a
 * failure. */
static wafer_status host_side(wafer_event *event, bool query)
{
	const char *call = query ? "wafer_event_query" : "wafer_event_sync";
	if (!event)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: event is NULL", call);
	wafer_status status = flush(event);
	if (status != WAFER_OK)
		return status;
	if (!event->plugin)
		return sync_captured(event);
	void *device;
	const struct wafer_server_ops *server =
		server_of(event->client, &device);
	status = query ? server->event_query(device, event->plugin)
		       : server->event_sync(device, event->plugin);
	if (status == WAFER_OK || (query && status == WAFER_ERROR_NOT_READY))
		return status;
	return wafer__fail_context(status, "%s", call);
}

WAFER_API wafer_status wafer_event_sync(wafer_event *event)
{
	return host_side(event, false);
}

WAFER_API wafer_status wafer_event_query(wafer_event *event)
{
	return host_side(event, true);
}

WAFER_API wafer_status wafer_event_elapsed(wafer_event *start,
					   wafer_event *end, uint64_t *out_ns)
{
	if (!out_ns || !start || !end)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_event_elapsed: %s is NULL",
				   !out_ns ? "out_ns" : !start ? "start" : "end");
	*out_ns = 0;
	if (start->client != end->client)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_event_elapsed: the two events belong "
				   "to different clients");
	if (!(start->flags & end->flags & WAFER_EVENT_TIMING))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_event_elapsed: %s event was created "
				   "without WAFER_EVENT_TIMING",
				   (start->flags & WAFER_EVENT_TIMING) ? "the end"
								       : "the start");
	struct wafer_runtime_device *rd =
		wafer__client_runtime_device(start->client);
	if (!start->plugin ||
	    !(rd->info.capabilities & WAFER_CAP_DEVICE_TIMERS))
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "wafer_event_elapsed: %s has no %s",
				   rd->backend,
				   start->plugin ? "device timers" : "events");
	wafer_status status = flush(end);
	if (status != WAFER_OK)
		return status;
	if (start->lane < 0 || end->lane < 0)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_event_elapsed: the %s event was never "
				   "recorded",
				   start->lane < 0 ? "start" : "end");
	status = rd->plugin->server->event_elapsed(rd->device, start->plugin,
						    end->plugin, out_ns);
	return status == WAFER_OK ? WAFER_OK
				  : wafer__fail_context(status,
							"wafer_event_elapsed");
}

WAFER_API wafer_status wafer_event_release(wafer_event *event)
{
	if (!event)
		return WAFER_OK;
	struct wafer__command c = {
		.kind = WAFER_COMMAND_EVENT_RELEASE,
		.event = {.event = event},
	};
	return wafer__client_submit(event->client, &c);
}

/*===----------------------------------------------------------------------===
 * On the bridge's thread
 *===----------------------------------------------------------------------===*/

/* |status| as it is, or its failure naming |call| and the queue. */
static wafer_status named_on_queue(wafer_status status, const char *call,
				   uint32_t lane)
{
	return status == WAFER_OK ? WAFER_OK
				  : wafer__fail_context(status, "%s on queue %u",
							call, lane);
}

wafer_status wafer__event_run_record(struct wafer__bridge *bridge,
				     struct wafer__command *c)
{
	struct wafer__lanes *lanes = &bridge->lanes;
	uint32_t lane = wafer__command_lane(c);
	wafer_event *event = c->event.event;
	wafer_status status = WAFER_OK;

	/* Written only when it changes: a producer on another thread reads
	 * this line (event->client) for every command naming the event, so
	 * a store on each record would take the line from it and back. */
	if (event->lane != (int)lane)
		event->lane = (int)lane;
	if (event->plugin) {
		lanes->lane[lane].dirty = true;
		status = lanes->server->event_record(
			lanes->device, lanes->lane[lane].queue, event->plugin);
	}
	return named_on_queue(status, "wafer_event_record", lane);
}

wafer_status wafer__event_run_wait(struct wafer__bridge *bridge,
				   struct wafer__command *c)
{
	struct wafer__lanes *lanes = &bridge->lanes;
	uint32_t lane = wafer__command_lane(c);
	wafer_event *event = c->event.event;
	wafer_status status;

	if (event->lane < 0)
		return WAFER_OK; /* never recorded: complete */
	if (!event->plugin)
		return wafer__lanes_order(lanes, lane, (uint32_t)event->lane,
					  UINT64_MAX);
	lanes->lane[lane].dirty = true;
	status = lanes->server->queue_wait_event(
		lanes->device, lanes->lane[lane].queue, event->plugin);
	return named_on_queue(status, "wafer_queue_wait", lane);
}

/* Frees |event| (EVENT_RELEASE, and client close). */
static void event_free(struct wafer__bridge *bridge, wafer_event *event)
{
	unlink_event(event);
	if (event->plugin)
		bridge->lanes.server->event_destroy(bridge->lanes.device,
						    event->plugin);
	free(event);
}

wafer_status wafer__event_run_release(struct wafer__bridge *bridge,
				      struct wafer__command *c)
{
	event_free(bridge, c->event.event);
	return WAFER_OK;
}

void wafer__events_free_all(wafer_client *client, struct wafer__bridge *bridge)
{
	struct wafer__client_queues *queues = wafer__client_queues(client);
	size_t count = 0;

	while (queues->events) {
		event_free(bridge, queues->events);
		count++;
	}
	if (count)
		wafer__log_info("core", "client closed with %zu event(s) still "
				"alive; freeing them",
				count);
}
