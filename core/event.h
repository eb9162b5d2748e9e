/* wafer — SPDX-License-Identifier: MIT
 *
 * event.h: events (wafer/queue.h) inside the core: made by
 * wafer_event_create (core/queue.c checks its arguments), recorded,
 * waited on and released by commands that the bridge runs in queue
 * order (core/event.c). */
#ifndef WAFER_CORE_EVENT_H
#define WAFER_CORE_EVENT_H

#include <stdint.h>

#include <wafer/queue.h>

struct wafer_bridge;

wafer_status wafer_event_new(wafer_client *client, uint32_t flags,
			     wafer_event **out_event);
wafer_client *wafer_event_client(const wafer_event *event);

/* The run functions of EVENT_RECORD, QUEUE_WAIT and EVENT_RELEASE
 * (core/command.def) are declared from the table in core/bridge.h. */

/* At client close, once its channel stopped: frees the events the
 * program did not release (logged at info level). */
void wafer_events_free_all(wafer_client *client, struct wafer_bridge *bridge);

#endif
