/* wafer — SPDX-License-Identifier: MIT
 *
 * client.h: what other parts of the core (autotune) need from a client
 * beyond the public API: its runtime and device, its kernel table, and a
 * way to submit commands the public API has no call for (device timers).
 * The client itself is private to core/client.c. */
#ifndef WAFER_CORE_CLIENT_H
#define WAFER_CORE_CLIENT_H

#include <wafer/wafer.h>

#include "core/kernel_table.h"
#include "core/runtime.h"
#include "core/server.h"

wafer_runtime *wafer_client_runtime(const wafer_client *client);
struct wafer_runtime_device *wafer_client_runtime_device(const wafer_client *client);
const struct wafer_kernel_table *wafer_client_kernels(const wafer_client *client);

/* Hands |command| to the client's channel, as the public calls do; the
 * caller checked it. */
wafer_status wafer_client_submit(wafer_client *client,
				 const struct wafer_command *command);

#endif
