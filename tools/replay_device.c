/* wafer — SPDX-License-Identifier: MIT
 *
 * replay_device.c: a device's storage for wafer-replay (replay_device.h).
 * The storage is wired as the core's server wires a client's (core/
 * server.c), minus the kernels: with no launches on the queue, nothing
 * can read memory that goes back, so the quiesce hook is left out; the
 * sync hook (the stream strategy's reap) synchronises the queue. */
#include "build-config.h"

#include <stdio.h>
#include <stdlib.h>

#include <wafer/wafer.h>

#include "core/error.h"
#include "core/runtime.h"
#include "tools/replay_device.h"

struct replay_device {
	wafer_runtime *runtime;
	struct wafer_runtime_device *device;
	void *queue;
	char name[160];
};

static wafer_status sync_queue(void *data)
{
	struct replay_device *d = data;
	wafer_status status =
		d->device->plugin->server->sync(d->device->device, d->queue);

	if (status != WAFER_OK)
		return wafer_fail_context(status, "%s: sync", d->name);
	return WAFER_OK;
}

struct replay_device *replay_device_open(const char *selector,
					 struct wafer_storage *out_storage)
{
	struct replay_device *d = calloc(1, sizeof *d);
	wafer_status status;

	if (!d) {
		wafer_fail(WAFER_ERROR_OUT_OF_MEMORY, "out of host memory");
		return NULL;
	}
	status = wafer_runtime_open(NULL, &d->runtime);
	if (status == WAFER_OK)
		status = wafer_runtime_acquire_device(d->runtime, selector,
						      &d->device);
	if (status == WAFER_OK)
		status = d->device->plugin->server->queue_create(
			d->device->device, &d->queue);
	if (status != WAFER_OK) {
		if (d->device)
			wafer_runtime_release_device(d->runtime, d->device);
		wafer_runtime_close(d->runtime);
		free(d);
		return NULL;
	}
	snprintf(d->name, sizeof d->name, "%s:%u (%s)", d->device->backend,
		 d->device->index, d->device->info.name);
	*out_storage = (struct wafer_storage){
		.ops = d->device->plugin->storage,
		.device = d->device->device,
		.queue = d->queue,
		.alignment = d->device->info.alloc_alignment,
		.vm_granularity = d->device->info.vm_granularity,
		.sync = sync_queue,
		.quiesce_data = d,
	};
	return d;
}

const char *replay_device_name(const struct replay_device *device)
{
	return device->name;
}

void replay_device_close(struct replay_device *d)
{
	const struct wafer_server_ops *server = d->device->plugin->server;

	server->sync(d->device->device, d->queue);
	server->queue_destroy(d->device->device, d->queue);
	wafer_runtime_release_device(d->runtime, d->device);
	wafer_runtime_close(d->runtime);
	free(d);
}
