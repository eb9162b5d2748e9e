/* wafer — SPDX-License-Identifier: MIT
 *
 * server.h: the server bridge of one client. It owns the client's device
 * queue and memory manager, and turns commands naming handle slots into
 * plugin calls naming (resource, offset, size). Channels (core/channel/)
 * decide on which thread and under which lock wafer_server_run() is
 * called; the server itself is single-threaded.
 *
 * Commands are flat records so a queueing channel can copy them. */
#ifndef WAFER_CORE_SERVER_H
#define WAFER_CORE_SERVER_H

#include <stdbool.h>

#include <wafer/plugin.h>
#include <wafer/wafer.h>

#include "core/error.h"
#include "core/handle_table.h"
#include "core/memory/memory.h"
#include "core/runtime.h"
#include "core/memory/storage.h"

enum wafer_command_kind {
	WAFER_COMMAND_RESERVE, /* slot, size: memory for a new handle */
	WAFER_COMMAND_WRITE,   /* slot, offset, size, src */
	WAFER_COMMAND_READ,    /* slot, offset, size, dst; waits */
	WAFER_COMMAND_READ_ASYNC, /* the same; the bytes arrive by the next sync */
	WAFER_COMMAND_EXECUTE, /* kernel, bindings, params, global, local */
	WAFER_COMMAND_RELEASE, /* slot: last reference gone */
	WAFER_COMMAND_SYNC,    /* waits for the queue */
	WAFER_COMMAND_USAGE,   /* usage */
	WAFER_COMMAND_TRIM,
	/* Device timers (autotune): BEGIN stores the plugin's timer in
	 * *timer_slot; END takes it from there, waits for the work between
	 * and stores the nanoseconds in *elapsed_ns. BEGIN returns nothing,
	 * so a queueing channel need not wait for it; END waits. */
	WAFER_COMMAND_TIMER_BEGIN, /* timer_slot */
	WAFER_COMMAND_TIMER_END,   /* timer_slot, elapsed_ns; waits */
};

/* Kernels take at most this many bindings through wafer_execute. */
#define WAFER_MAX_BINDINGS 16

struct wafer_command_binding {
	struct wafer_handle_slot *slot;
	size_t offset;
	size_t size;
};

struct wafer_command {
	enum wafer_command_kind kind;
	struct wafer_handle_slot *slot;
	size_t offset;
	size_t size;
	const void *src;
	void *dst;
	const struct wafer_kernel *kernel;
	const struct wafer_command_binding *bindings;
	uint32_t binding_count;
	const void *params;
	size_t params_size;
	uint64_t global[3];
	uint32_t local[3];
	wafer_memory_usage *usage;
	void **timer_slot;
	uint64_t *elapsed_ns;
};

struct wafer_server {
	struct wafer_runtime_device *device;
	struct wafer_handle_table *handles;
	void *queue;
	struct wafer_storage storage;
	struct wafer_memory *memory;
	/* device->plugin->server->launch and device->device, kept here: four
	 * dependent loads fewer on every launch. */
	wafer_status (*launch)(void *device, void *queue,
			       const struct wafer_launch *launch);
	void *plugin_device;
	/* Work was issued since the queue was last synchronised. */
	bool queue_dirty;
	/* A failure of queued work found by a sync the memory manager needed
	 * (before freeing or unmapping, or the stream strategy's reap): kept
	 * here until the next sync or read the program issues reports it, so
	 * a status is never lost and never reported twice. */
	wafer_status held_failure;
	char held_detail[WAFER_ERROR_DETAIL_MAX];
};

/* Creates the queue and the memory manager (strategy |memory_strategy|,
 * NULL: from config). */
wafer_status wafer_server_init(struct wafer_server *server,
			       struct wafer_runtime_device *device,
			       struct wafer_handle_table *handles,
			       const struct wafer_config *config,
			       const char *memory_strategy);

/* Synchronises, releases every live slot's memory, destroys the memory
 * manager and the queue. Returns the sync's status. */
wafer_status wafer_server_fini(struct wafer_server *server);

wafer_status wafer_server_run(struct wafer_server *server,
			      const struct wafer_command *command);

/* One kernel launch, as the client checked it: the plugin's launch
 * record, complete but for its bindings, which the server resolves from
 * |bindings| (handle slots) when it runs. A channel that runs commands in
 * the caller's thread hands this over as it is, so the launch path builds
 * one record, not a command and then a launch. */
struct wafer_execute_request {
	struct wafer_launch launch; /* global already at least 1 each */
	const struct wafer_command_binding *bindings;
};

/* Runs |request| as an EXECUTE command would. */
wafer_status wafer_server_execute(struct wafer_server *server,
				  struct wafer_execute_request *request);

#endif
