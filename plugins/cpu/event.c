/* wafer — SPDX-License-Identifier: MIT
 *
 * event.c: the cpu plugin's events and host callbacks (ABI 1.5).
 *
 * A cpu queue is synchronous (server.c): what was issued on it has
 * finished when the issuing call returned. So recording an event only
 * stamps the host clock (device time is host time here), waiting on one
 * orders nothing that is not already ordered, and a host callback runs
 * at once, inside queue_callback, which plugin.h allows for a queue whose
 * work is already done. */
#include "build-config.h"

#include <stdlib.h>

#include "plugins/cpu/cpu_plugin.h"

struct cpu_event {
	uint64_t stamp_ns; /* when last recorded; 0: never */
};

wafer_status cpu_event_create(void *device, uint32_t flags, void **out_event)
{
	struct cpu_device *dev = device;
	struct cpu_event *e = calloc(1, sizeof *e);

	(void)flags;
	*out_event = e;
	if (!e) {
		dev->state->host->set_error("cpu: cannot allocate an event");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	return WAFER_OK;
}

void cpu_event_destroy(void *device, void *event)
{
	(void)device;
	free(event);
}

wafer_status cpu_event_record(void *device, void *queue, void *event)
{
	(void)device;
	(void)queue;
	((struct cpu_event *)event)->stamp_ns = cpu_now_ns();
	return WAFER_OK;
}

wafer_status cpu_queue_wait_event(void *device, void *queue, void *event)
{
	(void)device;
	(void)queue;
	(void)event;
	return WAFER_OK;
}

wafer_status cpu_event_sync(void *device, void *event)
{
	(void)device;
	(void)event;
	return WAFER_OK;
}

wafer_status cpu_event_query(void *device, void *event)
{
	(void)device;
	(void)event;
	return WAFER_OK;
}

wafer_status cpu_event_elapsed(void *device, void *start, void *end,
			       uint64_t *out_ns)
{
	const struct cpu_event *s = start, *e = end;
	struct cpu_device *dev = device;

	*out_ns = 0;
	if (!s->stamp_ns || !e->stamp_ns) {
		dev->state->host->set_error("cpu: event_elapsed: an event was "
					    "never recorded");
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	*out_ns = e->stamp_ns > s->stamp_ns ? e->stamp_ns - s->stamp_ns : 0;
	return WAFER_OK;
}

wafer_status cpu_queue_callback(void *device, void *queue,
				void (*fn)(void *arg), void *arg)
{
	(void)device;
	(void)queue;
	fn(arg);
	return WAFER_OK;
}
