/* wafer — SPDX-License-Identifier: MIT
 *
 * event.h: events (wafer/queue.h) inside the core: made by
 * wafer_event_create (lib/queue.c checks its arguments), recorded,
 * waited on and released by commands that the bridge runs in queue
 * order (lib/event.c). */
#ifndef WAFER_CORE_EVENT_H
#define WAFER_CORE_EVENT_H

#include <stdint.h>

#include <wafer/queue.h>

struct wafer__bridge;

wafer_status wafer__event_new(wafer_client *client, uint32_t flags,
			      wafer_event **out_event);
wafer_client *wafer__event_client(const wafer_event *event);

/* The run functions of EVENT_RECORD, QUEUE_WAIT and EVENT_RELEASE
 * (lib/command.def) are declared from the table in lib/bridge.h. */

/* At client close, once its channel stopped: frees the events the
 * program did not release (logged at info level). */
void wafer__events_free_all(wafer_client *client, struct wafer__bridge *bridge);

#endif
