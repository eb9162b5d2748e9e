/* wafer — SPDX-License-Identifier: MIT
 * replay_backend.c: a plugin's storage for wafer-replay (replay_backend.h). */
#include "build-config.h"

#include <string.h>

#include "lib/error.h"
#include "tools/replay_backend.h"

/* Frees and unmaps wait for the queue: nothing else is queued on it, but
 * stream-ordered frees are. */
static wafer_status sync_queue(void *data)
{
	struct replay_backend *b = data;
	return b->device->plugin->server->sync(b->device->device, b->queue);
}

wafer_status replay_backend_open(const char *selector,
				 struct replay_backend *b,
				 struct wafer__storage *out)
{
	memset(b, 0, sizeof *b);
	wafer_status status = wafer_runtime_open(NULL, &b->runtime);
	if (status != WAFER_OK)
		return status;
	status = wafer__runtime_acquire_device(b->runtime, selector, &b->device);
	if (status != WAFER_OK) {
		wafer_runtime_close(b->runtime);
		return status;
	}
	const struct wafer_plugin *plugin = b->device->plugin;
	status = plugin->server->queue_create(b->device->device, &b->queue);
	if (status != WAFER_OK) {
		wafer__runtime_release_device(b->runtime, b->device);
		wafer_runtime_close(b->runtime);
		return wafer__fail_context(status, "%s: queue_create", selector);
	}
	*out = (struct wafer__storage){
		.ops = plugin->storage,
		.device = b->device->device,
		.queue = b->queue,
		.alignment = b->device->info.alloc_alignment,
		.vm_granularity = b->device->info.vm_granularity,
		.quiesce = sync_queue,
		.sync = sync_queue,
		.quiesce_data = b,
	};
	return WAFER_OK;
}

void replay_backend_close(struct replay_backend *b)
{
	b->device->plugin->server->sync(b->device->device, b->queue);
	b->device->plugin->server->queue_destroy(b->device->device, b->queue);
	wafer__runtime_release_device(b->runtime, b->device);
	wafer_runtime_close(b->runtime);
}
