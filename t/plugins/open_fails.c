/* wafer — SPDX-License-Identifier: MIT
 * open_fails.c: a test plugin that loads and lists devices, but whose
 * devices fail when a client opens them, as a wedged or busy GPU does:
 *   device 0: device_open fails (WAFER_ERROR_DEVICE, "device 0 is
 *             wedged");
 *   device 1: opens, but queue_create fails (WAFER_ERROR_PLUGIN, "no free
 *             hardware queue");
 *   device 2: works.
 * t/internal/client_open_errors checks what wafer_client_open returns for each. */
#include "build-config.h"

#include "t/plugins/common.h"

TP_PLUGIN("open_fails", "1.0", "test plugin: devices that fail to open", 3, 0);

static wafer_status open_fails_device_open(void *state, uint32_t index,
					   void **out_device)
{
	if (index == 0) {
		*out_device = NULL;
		tp_host->set_error("device %u is wedged", index);
		return WAFER_ERROR_DEVICE;
	}
	return tp_device_open(state, index, out_device);
}

static wafer_status open_fails_queue_create(void *device, void **out_queue)
{
	if (((struct tp_device *)device)->index == 1) {
		*out_queue = NULL;
		tp_host->set_error("no free hardware queue");
		return WAFER_ERROR_PLUGIN;
	}
	return tp_queue_create(device, out_queue);
}

TP_PLUGIN_QUERY(d)
{
	static struct wafer_server_ops server;

	d->device_open = open_fails_device_open;
	server = tp_server_ops;
	server.queue_create = open_fails_queue_create;
	d->server = &server;
}
