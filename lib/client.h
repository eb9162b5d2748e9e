/* wafer — SPDX-License-Identifier: MIT
 *
 * client.h: what the rest of the core (the ops layer, lib/ops/, and
 * autotune, lib/autotune/) may use of a client beyond wafer.h. The
 * client keeps one path for everything that reaches the device: an
 * operation resolves its kernel once and launches it through
 * wafer__client_launch, which runs the same binding, range and parameter
 * checks as wafer_execute (which calls it too). */
#ifndef WAFER_CORE_CLIENT_H
#define WAFER_CORE_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/plugin.h>
#include <wafer/wafer.h>

#include "lib/handle_table.h"
#include "lib/kernel_table.h"
#include "lib/program_table.h"
#include "lib/runtime.h"
#include "lib/bridge.h"

/* The client's handle table (lookups, donation). */
struct wafer__handle_table *wafer__client_handles(wafer_client *client);

/* The client's queues as the program sees them (lib/queue.c). */
struct wafer__client_queues *wafer__client_queues(wafer_client *client);

/* Host memory the client registered (lib/host.c). */
struct wafer__host_ranges *wafer__client_host(wafer_client *client);

/* The client's open scopes (lib/scope.c). */
struct wafer__scopes *wafer__client_scopes(wafer_client *client);

/* The default variant of kernel |op| for |dtype|, or NULL with
 * WAFER_ERROR_NOT_SUPPORTED recorded: "kernel 'gelu' (f32) is not
 * supported by <plugin>". */
const struct wafer_kernel *wafer__client_kernel(wafer_client *client,
						const char *op,
						wafer_dtype dtype);

/* Launches |kernel| (from wafer__client_kernel) on |bindings|: checks the
 * binding count and parameter size against the kernel, each binding
 * against its handle, then submits the command to the channel. |params|
 * is copied before the call returns; |local| may be NULL. */
wafer_status wafer__client_launch(wafer_client *client,
				  const struct wafer_kernel *kernel,
				  const wafer_buffer_binding *bindings,
				  size_t binding_count, const void *params,
				  size_t params_size, const uint64_t global[3],
				  const uint32_t local[3]);

/* Drops one reference to |handle|, as wafer_release does; when it was the
 * last, the generation ends with |ended_by| (NULL: released; an operation
 * name: donated to it, so later use reports WAFER_ERROR_DONATED) and the
 * memory is released in queue order, after work issued before. */
wafer_status wafer__client_drop(wafer_client *client, wafer_handle handle,
				const char *ended_by);

/* The client's runtime and device, and its device's whole kernel table
 * (autotune lists a kernel's variants from it; shared by the device's
 * clients, see kernel_table.h). */
wafer_runtime *wafer__client_runtime(const wafer_client *client);
struct wafer_runtime_device *wafer__client_runtime_device(const wafer_client *client);
struct wafer__kernel_table *wafer__client_kernels(wafer_client *client);

/* Submits |command| to the client's channel (lib/interop.c builds its
 * own commands); a command that returns a result has run when this
 * returns. */
wafer_status wafer__client_submit(wafer_client *client,
				  struct wafer__command *command);

/* The client's bridge, to read what it learnt at open (native_kind). */
const struct wafer__bridge *wafer__client_bridge(const wafer_client *client);

/* The client's programs (lib/program.c). */
struct wafer__program_table *wafer__client_programs(wafer_client *client);

/* Queues the release of the plugin's program |loaded| of a program of
 * |client|: it runs after the work issued before it (on mpsc the call
 * returns at once). */
wafer_status wafer__client_release_program(wafer_client *client, void *loaded);

/* wafer_empty, but the reservation's outcome is known when it returns on
 * every channel (a queueing channel waits for its runner): for an
 * operation that must not give up a donated input before its output has
 * memory. */
wafer_status wafer__client_empty_now(wafer_client *client, size_t size,
				     wafer_handle *out_handle);

/* Device timers around work on the client's queue (autotune measures
 * with them). wafer__client_timer_begin queues the start of a timer and,
 * on a queueing channel (mpsc), returns without waiting for it: the
 * plugin's timer is stored in |*timer| when the command runs, so |*timer|
 * must stay valid and untouched until wafer__client_timer_end has returned.
 * wafer__client_timer_end queues the end of that timer, waits for it and
 * stores the device time between the two in |*out_ns| (nanoseconds); it
 * also clears |*timer|. Both return WAFER_ERROR_NOT_SUPPORTED where the
 * device has no timers (no WAFER_CAP_DEVICE_TIMERS), so that the caller
 * can measure on the host clock instead. */
wafer_status wafer__client_timer_begin(wafer_client *client, void **timer);
wafer_status wafer__client_timer_end(wafer_client *client, void **timer,
				     uint64_t *out_ns);

#endif
