/* wafer — SPDX-License-Identifier: MIT
 *
 * replay_backend.h: real device storage for wafer-replay --storage BACKEND.
 * Opens a runtime, the backend's device and one queue, and fills a
 * struct wafer__storage with the plugin's own storage ops, so a strategy
 * replays a trace against real allocations (cuMemAlloc, cuMemCreate, ...)
 * and the time per event includes the driver. */
#ifndef WAFER_TOOLS_REPLAY_BACKEND_H
#define WAFER_TOOLS_REPLAY_BACKEND_H

#include <wafer/wafer.h>

#include "lib/runtime.h"
#include "lib/memory/storage.h"

struct replay_backend {
	wafer_runtime *runtime;
	struct wafer_runtime_device *device;
	void *queue;
};

/* |selector| as for wafer_client_open: "cpu", "cuda:0". */
wafer_status replay_backend_open(const char *selector,
				 struct replay_backend *backend,
				 struct wafer__storage *out_storage);
void replay_backend_close(struct replay_backend *backend);

#endif
