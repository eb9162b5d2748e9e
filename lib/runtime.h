/* wafer — SPDX-License-Identifier: MIT
 *
 * runtime.h: what the rest of the core needs from a runtime — its
 * configuration, and devices opened on demand and shared by clients.
 * The runtime itself (lib/runtime.c) reads the configuration chain and
 * loads plugins through the loader (lib/loader.c). */
#ifndef WAFER_CORE_RUNTIME_H
#define WAFER_CORE_RUNTIME_H

#include <stdint.h>

#include <wafer/plugin.h>
#include <wafer/wafer.h>

#include "lib/config.h"
#include "lib/kernel_table.h"

/* An open device, shared by every client of the runtime on it. Fields are
 * read-only for clients. */
struct wafer_runtime_device {
	const struct wafer_plugin *plugin; /* the plugin's descriptor */
	const char *backend;               /* plugin name, "cpu" */
	uint32_t index;                    /* index within the backend */
	void *device;                      /* from plugin->device_open */
	/* From device_info, with the WAFER_CAP_* bits the core derives from
	 * the optional ops added in. */
	struct wafer_device_info info;
	/* The device's kernel table (device_kernels). */
	const struct wafer_kernel *kernels;
	size_t kernel_count;
	/* Lookups in it, built when the device opens; shared by every
	 * client of the device (thread-safe, see kernel_table.h). */
	struct wafer__kernel_table kernel_table;
	/* Bytes all clients of the device hold from its storage, for
	 * `[memory] limit` (lib/memory/limit.h; changed atomically). */
	uint64_t memory_reserved;
};

const struct wafer__config *wafer__runtime_get_config(const wafer_runtime *runtime);

/* The runtime's tuner (lib/autotune/autotune.h): created with the runtime. */
struct wafer__tuner *wafer__runtime_tuner(const wafer_runtime *runtime);

/* Resolves |selector| ("default", "cpu", "cuda:1") and returns the device,
 * opening it on first use (plugin->device_open, device_kernels) and
 * counting one reference. Thread-safe. Errors: WAFER_ERROR_INVALID_ARGUMENT
 * for a malformed selector, WAFER_ERROR_NO_DEVICE naming every backend's
 * reason when nothing matches, or the plugin's status from device_open. */
wafer_status wafer__runtime_acquire_device(wafer_runtime *runtime,
					   const char *selector,
					   struct wafer_runtime_device **out_device);

/* Drops a reference taken by acquire; the last one closes the device. */
void wafer__runtime_release_device(wafer_runtime *runtime,
				   struct wafer_runtime_device *device);

/* Fills a public description of an open device (strings owned by the
 * runtime). */
void wafer__runtime_describe_device(const struct wafer_runtime_device *device,
				    wafer_device_desc *out_desc);

/* Counts open clients, so that closing a runtime with clients still open
 * is caught (logged, and the plugins stay loaded under them). */
void wafer__runtime_client_opened(wafer_runtime *runtime);
void wafer__runtime_client_closed(wafer_runtime *runtime);

#endif
