/* wafer — SPDX-License-Identifier: MIT
 *
 * client.c: the client API of wafer.h. A client validates every argument
 * in the caller's thread (so a bad call fails at once, with the handle and
 * sizes in the message, and nothing reaches the device), resolves handles
 * and kernels, and hands commands to its channel. */
#include "build-config.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/wafer.h>

#include "lib/channel/channel.h"
#include "lib/client.h"
#include "lib/client_watch.h"
#include "lib/comm.h"
#include "lib/error.h"
#include "lib/event.h"
#include "lib/graph.h"
#include "lib/handle_table.h"
#include "lib/host.h"
#include "lib/kernel_table.h"
#include "lib/log.h"
#include "lib/queue.h"
#include "lib/runtime.h"
#include "lib/bridge.h"
#include "lib/scope.h"

struct wafer_client {
	wafer_runtime *runtime;
	struct wafer_runtime_device *device;
	struct wafer__handle_table handles;
	/* The device's (runtime.h), shared with its other clients. */
	struct wafer__kernel_table *kernels;
	/* This client's lookup cache and refs (wafer_kernel_find). */
	struct wafer__kernel_cache kernel_cache;
	struct wafer__kernel_refs refs;
	/* Its programs and their kernel refs (program_table.h). */
	struct wafer__program_table programs;
	struct wafer__bridge bridge;
	struct wafer__channel channel;
	/* The program's out-of-memory handler (wafer_memory_set_oom_handler):
	 * set from any thread, read under the lock by the thread that runs
	 * the failing reserve. */
	pthread_mutex_t oom_lock;
	wafer_oom_handler oom_handler;
	void *oom_user;
	/* Open scopes of its threads (wafer_scope_begin, lib/scope.h). */
	struct wafer__scopes scopes;
	/* Created on first use (lib/client_watch.h); marked at close. */
	_Atomic(struct wafer__client_watch *) watch;
	/* Its queues as the program sees them (lib/queue.h). */
	struct wafer__client_queues queues;
	/* Host memory it registered (lib/host.h). */
	struct wafer__host_ranges host;
	/* Set by the first wafer_client_close: a second one (from a release
	 * callback that the close runs) is refused. */
	atomic_bool closing;
};

/* Gives |c| the lane it goes on: the calling thread's current queue of
 * the client, unless the command names one (lib/bridge.h). */
static inline struct wafer__command *resolve_queue(wafer_client *client,
						   struct wafer__command *c)
{
	if (!c->queue)
		c->queue = (uint8_t)(wafer__queue_current_lane(&client->queues) + 1);
	return c;
}

/* A command a capturing queue refuses fails here, in the caller's
 * thread, even one a queueing channel would not wait for (graph.h). */
static __attribute__((noinline)) wafer_status
check_capture(wafer_client *client, const struct wafer__command *c,
	      uint32_t capturing)
{
	uint32_t lane = wafer__command_lane(c);
	if (((capturing >> lane) & 1) &&
	    wafer__command_queue(c->kind) == WAFER_COMMAND_QUEUE_LANE &&
	    wafer__command_capture(c->kind) == WAFER_COMMAND_CAPTURE_REFUSE)
		return wafer__graph_refuse(c->kind, lane);
	(void)client;
	return WAFER_OK;
}

/* Every command of the client goes through here. */
static inline wafer_status client_submit(wafer_client *client,
					 struct wafer__command *c)
{
	resolve_queue(client, c);
	uint32_t capturing = atomic_load_explicit(&client->queues.capturing,
						  memory_order_relaxed);
	if (__builtin_expect(capturing != 0, 0)) {
		wafer_status status = check_capture(client, c, capturing);
		if (status != WAFER_OK)
			return status;
	}
	return wafer__channel_submit(&client->channel, c);
}

/*===----------------------------------------------------------------------===
 * Open and close
 *===----------------------------------------------------------------------===*/

/* The channel name and where it came from: options, then config. */
static const char *choose_channel(const struct wafer__config *config,
				  const wafer_client_options *options,
				  const char **out_origin)
{
	if (options && WAFER_STRUCT_HAS(options, wafer_client_options, channel) &&
	    options->channel) {
		*out_origin = "wafer_client_options.channel";
		return options->channel;
	}
	const struct wafer__config_entry *entry =
		wafer__config_lookup(config, "core", "channel");
	if (entry) {
		*out_origin = entry->origin;
		return entry->value;
	}
	*out_origin = "default";
	return "auto";
}

static const char *choose_memory(const wafer_client_options *options)
{
	if (options && WAFER_STRUCT_HAS(options, wafer_client_options, memory))
		return options->memory;
	return NULL; /* the memory manager reads [memory] strategy */
}

/* The caller's own queue (interop.h), where its struct has the field. */
static void *choose_native_queue(const wafer_client_options *options)
{
	if (options &&
	    WAFER_STRUCT_HAS(options, wafer_client_options, native_queue))
		return options->native_queue;
	return NULL;
}

/* The memory manager's out-of-memory hook (memory.h): the program's
 * handler, if it set one. */
static bool client_oom(void *data, const wafer_oom_info *info)
{
	wafer_client *client = data;
	pthread_mutex_lock(&client->oom_lock);
	wafer_oom_handler handler = client->oom_handler;
	void *user = client->oom_user;
	pthread_mutex_unlock(&client->oom_lock);
	if (!handler)
		return false;
	/* The bridge is this thread's and mid-reserve: a release from the
	 * handler runs on it at once (wafer__client_drop) instead of going
	 * through the channel, whose lock this thread holds (mutex) or whose
	 * runner this thread is (mpsc). */
	struct wafer__bridge *outer = wafer__bridge_in_oom;
	wafer__bridge_in_oom = &client->bridge;
	wafer_oom_action action = handler(client, info, user);
	wafer__bridge_in_oom = outer;
	return action == WAFER_OOM_RETRY;
}

WAFER_API wafer_status wafer_client_open(wafer_runtime *runtime,
					 const char *selector,
					 const wafer_client_options *options,
					 wafer_client **out_client)
{
	wafer_status status;
	const char *origin;

	if (!out_client)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_client_open: out_client is NULL");
	*out_client = NULL;
	if (!runtime || !selector)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_client_open: %s is NULL",
				   runtime ? "selector" : "runtime");
	if (options && options->struct_size < sizeof(size_t))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_client_open: options->struct_size "
				   "is %zu",
				   options->struct_size);

	struct wafer_client *client = calloc(1, sizeof *client);
	if (!client)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY, "out of host memory");
	client->runtime = runtime;
	pthread_mutex_init(&client->oom_lock, NULL);
	wafer__client_queues_init(&client->queues, client);
	wafer__host_ranges_init(&client->host);
	const struct wafer__config *config = wafer__runtime_get_config(runtime);

	status = wafer__runtime_acquire_device(runtime, selector, &client->device);
	if (status != WAFER_OK)
		goto fail_free;
	uint64_t max_handles;
	status = wafer__config_get_uint(config, "core", "max_handles", 0,
					&max_handles);
	if (status == WAFER_OK && max_handles > WAFER_HANDLE_MAX_SLOTS)
		status = wafer__fail(
			WAFER_ERROR_CONFIG,
			"%s: [core] max_handles is %" PRIu64 ", the most is %u",
			wafer__config_lookup(config, "core", "max_handles")->origin,
			max_handles, WAFER_HANDLE_MAX_SLOTS);
	if (status != WAFER_OK)
		goto fail_device;
	status = wafer__handle_table_init(&client->handles,
					  (uint32_t)max_handles);
	if (status != WAFER_OK)
		goto fail_device;
	client->kernels = &client->device->kernel_table;
	wafer__kernel_cache_init(&client->kernel_cache);
	status = wafer__kernel_refs_init(&client->refs, client->kernels);
	if (status != WAFER_OK)
		goto fail_handles;
	status = wafer__program_table_init(&client->programs);
	if (status != WAFER_OK)
		goto fail_refs;
	status = wafer__scopes_init(&client->scopes, &client->handles);
	if (status != WAFER_OK)
		goto fail_programs;
	status = wafer__bridge_init(&client->bridge, client->device,
				    &client->handles, config,
				    choose_memory(options),
				    choose_native_queue(options));
	if (status != WAFER_OK)
		goto fail_kernels;
	wafer__memory_set_oom(client->bridge.memory, client_oom, client);
	const char *channel = choose_channel(config, options, &origin);
	status = wafer__channel_create(channel, origin, &client->bridge,
				       &client->channel);
	if (status != WAFER_OK)
		goto fail_bridge;

	wafer__runtime_client_opened(runtime);
	wafer__log_info("core", "client on %s:%u (%s), channel %s, memory %s",
			client->device->backend, client->device->index,
			client->device->info.name, client->channel.ops->name,
			wafer__memory_strategy_name(client->bridge.memory));
	*out_client = client;
	return WAFER_OK;

fail_bridge:
	wafer__bridge_fini(&client->bridge);
fail_kernels:
	wafer__scopes_fini(&client->scopes);
fail_programs:
	wafer__program_table_fini(&client->programs, client->device);
fail_refs:
	wafer__kernel_refs_fini(&client->refs);
fail_handles:
	wafer__handle_table_fini(&client->handles);
fail_device:
	wafer__runtime_release_device(runtime, client->device);
fail_free:
	wafer__host_ranges_fini(&client->host, NULL);
	pthread_mutex_destroy(&client->oom_lock);
	wafer__client_queues_fini(&client->queues);
	free(client);
	return status;
}

WAFER_API wafer_status wafer_client_close(wafer_client *client)
{
	if (!client)
		return WAFER_OK;
	/* Refusals come before anything is torn down, so that a refused
	 * close changes nothing: from the client's out-of-memory handler the
	 * reserve that called it goes on using the client. */
	if (wafer__bridge_in_oom == &client->bridge)
		return wafer__bridge_refuse_in_oom();
	if (atomic_exchange(&client->closing, true))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_client_close: the client is closing "
				   "already (a second close from a release "
				  "callback that its close runs?)");
	/* First, so that what the client handed out (a DLPack deleter) finds
	 * it closed from here on instead of calling into it half freed. */
	wafer__client_watch_close(atomic_load(&client->watch));
	/* Communicators left open go first: closing one syncs the queue. */
	wafer__comm_client_closing(client);
	/* The sync reports what queued work left unreported; the channel then
	 * stops (a runner thread is joined) and the bridge frees the rest. */
	struct wafer__command sync = {.kind = WAFER_COMMAND_SYNC, .queue = 1};
	wafer_status status = client_submit(client, &sync);
	wafer__channel_destroy(&client->channel);
	/* Events the program left: the client's to free (lib/event.c). */
	wafer__events_free_all(client, &client->bridge);
	/* Closes the other queues too, reporting the first failure of each
	 * (logged) and returning the first of all. */
	wafer_status fini = wafer__bridge_fini(&client->bridge);
	if (status == WAFER_OK)
		status = fini;
	/* Scopes left open: their handles went with the rest above. */
	size_t open_scopes = wafer__scopes_fini(&client->scopes);
	if (open_scopes)
		wafer__log_info("core", "client closed with %zu scope(s) "
				"still open", open_scopes);
	/* The queue is idle: programs still alive go now. */
	wafer__program_table_fini(&client->programs, client->device);
	wafer__host_ranges_fini(&client->host, client->device);
	wafer__kernel_refs_fini(&client->refs);
	wafer__handle_table_fini(&client->handles);
	wafer__runtime_release_device(client->runtime, client->device);
	wafer__runtime_client_closed(client->runtime);
	pthread_mutex_destroy(&client->oom_lock);
	wafer__client_queues_fini(&client->queues);
	free(client);
	return status;
}

struct wafer__client_queues *wafer__client_queues(wafer_client *client)
{
	return &client->queues;
}

struct wafer__host_ranges *wafer__client_host(wafer_client *client)
{
	return &client->host;
}

struct wafer__client_watch *wafer__client_watch(wafer_client *client)
{
	struct wafer__client_watch *w = atomic_load(&client->watch);

	if (!w) {
		struct wafer__client_watch *fresh =
			wafer__client_watch_create(client);
		if (!fresh)
			return NULL;
		/* Two first uses at once: one record wins, the other goes. */
		if (atomic_compare_exchange_strong(&client->watch, &w, fresh))
			w = fresh;
		else
			wafer__client_watch_put(fresh);
	}
	wafer__client_watch_hold(w); /* the caller's reference */
	return w;
}

WAFER_API wafer_status wafer_client_device(const wafer_client *client,
					   wafer_device_desc *out_desc)
{
	wafer_status checked = WAFER__CHECK_OUT_STRUCT(
		"wafer_client_device", client, out_desc);
	if (checked != WAFER_OK)
		return checked;
	wafer_device_desc desc = {.struct_size = sizeof desc};
	wafer__runtime_describe_device(client->device, &desc);
	wafer__copy_out_struct(out_desc, &desc, sizeof desc);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Handles
 *===----------------------------------------------------------------------===*/

/* Checks [offset, offset + size) against a handle's size, overflow-safe. */
static wafer_status check_range(const char *what, wafer_handle handle,
				const struct wafer__handle_slot *slot,
				size_t offset, size_t size)
{
	if (size == 0)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: size is 0 (handle 0x%016" PRIx64 ")",
				   what, handle.bits);
	if (offset > slot->size || size > slot->size - offset)
		return wafer__fail(WAFER_ERROR_OUT_OF_RANGE,
				   "%s: offset %zu + size %zu passes the end of "
				   "handle 0x%016" PRIx64 " (%zu bytes)",
				   what, offset, size, handle.bits, slot->size);
	return WAFER_OK;
}

/* wafer_empty, and wafer__client_empty_now when |wait|. */
static wafer_status empty(wafer_client *client, size_t size, bool wait,
			  wafer_handle *out_handle)
{
	struct wafer__handle_slot *slot;
	wafer_status status = WAFER__CHECK_OUT_POINTER("wafer_empty", client,
							client, out_handle);

	if (status != WAFER_OK)
		return status;
	if (size == 0)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_empty: size is 0");
	uint64_t capacity = client->device->info.memory_bytes;
	if (capacity && size > capacity)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "wafer_empty: cannot reserve %zu bytes: "
				   "%s:%u has %llu bytes in all",
				   size, client->device->backend,
				   client->device->index,
				   (unsigned long long)capacity);

	wafer_handle handle;
	status = wafer__handle_table_alloc(&client->handles, size, &slot,
					   &handle);
	if (status == WAFER_ERROR_OUT_OF_MEMORY) {
		/* A queueing channel puts a released slot back only when its
		 * runner reaches the release: at the cap, let it catch up
		 * (any command with a result waits for what was queued
		 * before it) and try once more. */
		wafer_memory_usage ignored = {.struct_size = sizeof ignored};
		struct wafer__command barrier = {
			.kind = WAFER_COMMAND_USAGE,
			.usage = {.out = &ignored},
		};
		if (client_submit(client, &barrier) == WAFER_OK)
			status = wafer__handle_table_alloc(&client->handles,
							   size, &slot, &handle);
	}
	if (status != WAFER_OK)
		return status;
	struct wafer__command command = {
		.kind = WAFER_COMMAND_RESERVE,
		.reserve = {.slot = slot, .size = size, .wait = wait},
	};
	status = client_submit(client, &command);
	if (status != WAFER_OK) {
		/* No memory behind it: retire the slot without a release. */
		struct wafer__handle_slot *last;
		wafer__handle_table_unref(&client->handles, handle, NULL, &last);
		wafer__handle_table_recycle(&client->handles, slot);
		return status;
	}
	/* Inside a scope of this thread, the scope holds this reference; a
	 * handle that could not be entered is not handed out. */
	if (wafer__scopes_any(&client->scopes)) {
		status = wafer__scopes_enter(&client->scopes, handle);
		if (status != WAFER_OK) {
			wafer__client_drop(client, handle, NULL);
			return status;
		}
	}
	*out_handle = handle;
	return WAFER_OK;
}

WAFER_API wafer_status wafer_empty(wafer_client *client, size_t size,
				   wafer_handle *out_handle)
{
	return empty(client, size, false, out_handle);
}

wafer_status wafer__client_empty_now(wafer_client *client, size_t size,
				     wafer_handle *out_handle)
{
	return empty(client, size, true, out_handle);
}

WAFER_API wafer_status wafer_write(wafer_client *client, wafer_handle handle,
				   size_t offset, const void *data, size_t size)
{
	struct wafer__handle_slot *slot;

	if (!client || !data)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_write: %s is NULL",
				   client ? "data" : "client");
	wafer_status status = wafer__handle_table_lookup(&client->handles,
							 handle, "write", &slot);
	if (status == WAFER_OK)
		status = check_range("write", handle, slot, offset, size);
	if (status != WAFER_OK)
		return status;
	struct wafer__command command = {
		.kind = WAFER_COMMAND_WRITE,
		.write = {.slot = slot, .offset = offset, .size = size,
			  .src = data,
			  .registered = wafer__host_direct(&client->host,
							   client->device,
							   data, size)},
	};
	return client_submit(client, &command);
}

WAFER_API wafer_status wafer_create(wafer_client *client, const void *data,
				    size_t size, wafer_handle *out_handle)
{
	wafer_status status = WAFER__CHECK_OUT_POINTER("wafer_create", client,
							data, out_handle);
	if (status != WAFER_OK)
		return status;
	wafer_handle handle;
	status = wafer_empty(client, size, &handle);
	if (status != WAFER_OK)
		return status;
	status = wafer_write(client, handle, 0, data, size);
	if (status != WAFER_OK) {
		wafer_release(client, handle);
		return status;
	}
	*out_handle = handle;
	return WAFER_OK;
}

static wafer_status submit_read(wafer_client *client, const char *what,
				enum wafer__command_kind kind,
				wafer_handle handle, size_t offset, void *dst,
				size_t size)
{
	struct wafer__handle_slot *slot;

	if (!client || !dst)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT, "%s: %s is NULL",
				   what, client ? "dst" : "client");
	wafer_status status = wafer__handle_table_lookup(&client->handles,
							 handle, what, &slot);
	if (status == WAFER_OK)
		status = check_range(what, handle, slot, offset, size);
	if (status != WAFER_OK)
		return status;
	struct wafer__command command = {
		.kind = kind,
		.read = {.slot = slot, .offset = offset, .size = size,
			 .dst = dst,
			 .registered = wafer__host_direct(&client->host,
							  client->device, dst,
							  size)},
	};
	return client_submit(client, &command);
}

WAFER_API wafer_status wafer_read(wafer_client *client, wafer_handle handle,
				  size_t offset, void *dst, size_t size)
{
	return submit_read(client, "read", WAFER_COMMAND_READ, handle, offset,
			   dst, size);
}

WAFER_API wafer_status wafer_read_async(wafer_client *client,
					wafer_handle handle, size_t offset,
					void *dst, size_t size)
{
	return submit_read(client, "read_async", WAFER_COMMAND_READ_ASYNC,
			   handle, offset, dst, size);
}

WAFER_API wafer_status wafer_retain(wafer_client *client, wafer_handle handle)
{
	if (!client)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_retain: client is NULL");
	return wafer__handle_table_retain(&client->handles, handle);
}

wafer_status wafer__client_drop(wafer_client *client, wafer_handle handle,
				const char *ended_by)
{
	struct wafer__handle_slot *last;
	wafer_status status =
		wafer__handle_table_unref(&client->handles, handle, ended_by,
					  &last);
	if (status != WAFER_OK || !last)
		return status;
	struct wafer__command command = {
		.kind = WAFER_COMMAND_RELEASE,
		.release = {.slot = last},
	};
	if (wafer__bridge_in_oom == &client->bridge) /* from its handler */
		return wafer__bridge_run(&client->bridge,
					 resolve_queue(client, &command));
	return client_submit(client, &command);
}

WAFER_API wafer_status wafer_release(wafer_client *client, wafer_handle handle)
{
	if (!client)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_release: client is NULL");
	return wafer__client_drop(client, handle, NULL);
}

WAFER_API wafer_status wafer_handle_size(wafer_client *client,
					 wafer_handle handle, size_t *out_size)
{
	struct wafer__handle_slot *slot;

	if (!out_size)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_handle_size: out_size is NULL");
	*out_size = 0;
	if (!client)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_handle_size: client is NULL");
	wafer_status status = wafer__handle_table_lookup(
		&client->handles, handle, "handle_size", &slot);
	if (status == WAFER_OK)
		*out_size = slot->size;
	return status;
}

struct wafer__handle_table *wafer__client_handles(wafer_client *client)
{
	return &client->handles;
}

struct wafer__scopes *wafer__client_scopes(wafer_client *client)
{
	return &client->scopes;
}

const struct wafer_kernel *wafer__client_kernel(wafer_client *client,
						const char *op,
						wafer_dtype dtype)
{
	return wafer__kernel_find_cached(client->kernels, &client->kernel_cache,
					 op, NULL, dtype);
}

/*===----------------------------------------------------------------------===
 * Execution
 *===----------------------------------------------------------------------===*/

/* Fields of wafer_execute_args added after the first release: present
 * when the caller's struct_size covers them. */
#define EXECUTE_ARGS_HAVE(args, field)                                        \
	((args)->struct_size >= offsetof(wafer_execute_args, field) +          \
				       sizeof(args)->field)

/* |ref|: args->kernel_ref where the caller's struct has it, else NULL. */
static wafer_status check_execute_args(const wafer_execute_args *args,
				       const wafer_kernel_ref *ref)
{
	if (args->struct_size < offsetof(wafer_execute_args, local))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_execute: args->struct_size is %zu, "
				   "expected %zu",
				   args->struct_size, sizeof *args);
	if (!args->kernel && !ref)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_execute: args->kernel and "
				   "args->kernel_ref are both NULL");
	if (args->kernel) {
		wafer_status status = wafer__check_name(
			"wafer_execute", "args->kernel", args->kernel);
		if (status != WAFER_OK)
			return status;
	}
	const char *name = args->kernel ? args->kernel : "kernel_ref";
	if (args->binding_count && !args->bindings)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_execute(%s): bindings is NULL with "
				   "binding_count %zu",
				   name, args->binding_count);
	if (args->params_size && !args->params)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_execute(%s): params is NULL with "
				   "params_size %zu",
				   name, args->params_size);
	return WAFER_OK;
}

/* Two bindings of one handle are the same range or disjoint: kernels may
 * alias exactly (plugin.h), and a partial overlap would have a kernel
 * read what it already wrote (a memcpy on overlapping memory). Checks
 * binding |i| against the ones before it. */
static wafer_status check_overlap(const char *name, wafer_handle handle,
				  const struct wafer__command_binding *b,
				  size_t i)
{
	for (size_t j = 0; j < i; j++) {
		if (b[j].slot != b[i].slot)
			continue;
		bool same = b[j].offset == b[i].offset && b[j].size == b[i].size;
		bool apart = b[j].offset + b[j].size <= b[i].offset ||
			     b[i].offset + b[i].size <= b[j].offset;
		if (!same && !apart)
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "%s: bindings %zu [%zu, %zu) and %zu "
					   "[%zu, %zu) of handle 0x%016" PRIx64
					   " overlap partially",
					   name, j, b[j].offset,
					   b[j].offset + b[j].size, i,
					   b[i].offset, b[i].offset + b[i].size,
					   handle.bits);
	}
	return WAFER_OK;
}

/* Resolves each binding to its slot and checks it against the handle. */
static __attribute__((noinline)) wafer_status
resolve_bindings(wafer_client *client, const char *name,
		 const wafer_buffer_binding *bindings, size_t binding_count,
		 struct wafer__command_binding *out)
{
	for (size_t i = 0; i < binding_count; i++) {
		const wafer_buffer_binding *b = &bindings[i];
		struct wafer__handle_slot *slot;
		wafer_status status = wafer__handle_table_lookup(
			&client->handles, b->handle, name, &slot);
		if (status != WAFER_OK)
			return wafer__fail_context(status, "binding %zu", i);
		size_t size = b->size;
		if (size == 0 && b->offset < slot->size)
			size = slot->size - b->offset;
		status = check_range(name, b->handle, slot, b->offset, size);
		if (status != WAFER_OK)
			return wafer__fail_context(status, "binding %zu", i);
		if (b->offset % client->device->info.alloc_alignment)
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "%s: binding %zu: offset %zu is not "
					   "a multiple of the device alignment "
					   "%zu",
					   name, i, b->offset,
					   client->device->info.alloc_alignment);
		out[i] = (struct wafer__command_binding){slot, b->offset, size};
		status = check_overlap(name, b->handle, out, i);
		if (status != WAFER_OK)
			return status;
	}
	return WAFER_OK;
}

/* The launch path of wafer_execute and of the operations (through
 * wafer__client_launch): inline in both, since it is most of what a launch
 * costs the caller. */
static inline __attribute__((always_inline)) wafer_status
launch(wafer_client *client, const struct wafer_kernel *kernel,
       const wafer_buffer_binding *bindings, size_t binding_count,
       const void *params, size_t params_size, const uint64_t global[3],
       const uint32_t *local)
{
	struct wafer__command_binding resolved[WAFER_MAX_BINDINGS];

	if (binding_count != kernel->binding_count ||
	    binding_count > WAFER_MAX_BINDINGS)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s (%s): %zu bindings given, the kernel "
				   "takes %u",
				   kernel->op, kernel->variant, binding_count,
				   kernel->binding_count);
	if (params_size != kernel->params_size)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s (%s): parameter block of %zu bytes, the "
				   "kernel takes %zu",
				   kernel->op, kernel->variant, params_size,
				   kernel->params_size);
	if (binding_count) {
		wafer_status status = resolve_bindings(
			client, kernel->op, bindings, binding_count, resolved);
		if (status != WAFER_OK)
			return status;
	}

	struct wafer__execute_request request = {
		.launch = {
			.struct_size = sizeof request.launch,
			.kernel = kernel,
			.binding_count = (uint32_t)binding_count,
			.params = params,
			.params_size = params_size,
			.global = {global[0] ? global[0] : 1,
				   global[1] ? global[1] : 1,
				   global[2] ? global[2] : 1},
		},
		.bindings = resolved,
		.lane = (uint8_t)wafer__queue_current_lane(&client->queues),
	};
	if (local)
		memcpy(request.launch.local, local, sizeof request.launch.local);
	return wafer__channel_execute(&client->channel, &request);
}

wafer_status wafer__client_launch(wafer_client *client,
				  const struct wafer_kernel *kernel,
				  const wafer_buffer_binding *bindings,
				  size_t binding_count, const void *params,
				  size_t params_size, const uint64_t global[3],
				  const uint32_t local[3])
{
	return launch(client, kernel, bindings, binding_count, params,
		      params_size, global, local);
}

/* Launches |kernel| as wafer_execute's |args| say. Callers built against
 * the first struct, without local, get the plugin's choice. */
static inline wafer_status launch_args(wafer_client *client,
				       const struct wafer_kernel *kernel,
				       const wafer_execute_args *args)
{
	return launch(client, kernel, args->bindings, args->binding_count,
		      args->params, args->params_size, args->global,
		      EXECUTE_ARGS_HAVE(args, local) ? args->local : NULL);
}

/* A ref that is not one of the catalogue's: a program kernel's (its
 * own path, so that the catalogue's stays as short as it was). */
static __attribute__((noinline)) wafer_status
execute_ref_slow(wafer_client *client, const wafer_execute_args *args,
		 const wafer_kernel_ref *ref)
{
	const struct wafer_kernel *kernel;
	wafer_status status = WAFER_OK;
	if (!wafer__program_ref_deref(client, ref, &kernel, &status))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_execute: kernel_ref %p is not a "
				   "kernel of this client (refs from "
				  "wafer_kernel_find and wafer_program_kernel "
				  "are valid for the client that made them)",
				  (const void *)ref);
	if (!kernel)
		return status;
	return launch_args(client, kernel, args);
}

WAFER_API wafer_status wafer_execute(wafer_client *client,
				     const wafer_execute_args *args)
{
	if (!client || !args)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_execute: %s is NULL",
				   client ? "args" : "client");
	const wafer_kernel_ref *ref =
		EXECUTE_ARGS_HAVE(args, kernel_ref) ? args->kernel_ref : NULL;
	wafer_status status = check_execute_args(args, ref);
	if (status != WAFER_OK)
		return status;
	const struct wafer_kernel *kernel;
	if (ref) {
		kernel = wafer__kernel_refs_deref(&client->refs, ref);
		if (!kernel)
			return execute_ref_slow(client, args, ref);
	} else {
		kernel = wafer__kernel_find_cached(client->kernels,
						   &client->kernel_cache,
						   args->kernel, args->variant,
						   args->dtype);
		if (!kernel)
			return WAFER_ERROR_NOT_SUPPORTED;
	}
	return launch_args(client, kernel, args);
}

WAFER_API wafer_status wafer_kernel_find(wafer_client *client,
					 const char *kernel,
					 const char *variant, wafer_dtype dtype,
					 const wafer_kernel_ref **out_kernel)
{
	wafer_status status = WAFER__CHECK_OUT_POINTER(
		"wafer_kernel_find", client, kernel, out_kernel);
	if (status != WAFER_OK)
		return status;
	const struct wafer_kernel *k = wafer__kernel_find_cached(
		client->kernels, &client->kernel_cache, kernel, variant, dtype);
	if (!k)
		return WAFER_ERROR_NOT_SUPPORTED;
	*out_kernel = (const wafer_kernel_ref *)(const void *)
		wafer__kernel_refs_ref(&client->refs, client->kernels, k);
	return WAFER_OK;
}

/* A command with no operands (SYNC, TRIM) for public call |fn|. */
static wafer_status submit_bare(wafer_client *client,
				enum wafer__command_kind kind, const char *fn)
{
	if (!client)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: client is NULL", fn);
	struct wafer__command command = {.kind = kind};
	return client_submit(client, &command);
}

WAFER_API wafer_status wafer_sync(wafer_client *client)
{
	return submit_bare(client, WAFER_COMMAND_SYNC, "wafer_sync");
}

/*===----------------------------------------------------------------------===
 * Memory
 *===----------------------------------------------------------------------===*/

WAFER_API wafer_status wafer_memory_usage_get(wafer_client *client,
					      wafer_memory_usage *out_usage)
{
	wafer_status checked = WAFER__CHECK_OUT_STRUCT(
		"wafer_memory_usage_get", client, out_usage);
	if (checked != WAFER_OK)
		return checked;
	wafer_memory_usage usage = {.struct_size = sizeof usage};
	struct wafer__command command = {
		.kind = WAFER_COMMAND_USAGE,
		.usage = {.out = &usage},
	};
	wafer_status status = client_submit(client, &command);
	usage.handles_live = wafer__handle_table_live(&client->handles);
	wafer__copy_out_struct(out_usage, &usage, sizeof usage);
	return status;
}

WAFER_API wafer_status wafer_memory_set_oom_handler(wafer_client *client,
						    wafer_oom_handler handler,
						    void *user)
{
	if (!client)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_memory_set_oom_handler: client is NULL");
	pthread_mutex_lock(&client->oom_lock);
	client->oom_handler = handler;
	client->oom_user = handler ? user : NULL;
	pthread_mutex_unlock(&client->oom_lock);
	return WAFER_OK;
}

WAFER_API wafer_status wafer_memory_trim(wafer_client *client)
{
	return submit_bare(client, WAFER_COMMAND_TRIM, "wafer_memory_trim");
}

/* The snapshot is taken on the bridge's thread and visited on the
 * caller's, so that |visit| may call the client. */
WAFER_API wafer_status wafer_memory_snapshot(wafer_client *client,
					     wafer_memory_visitor visit,
					     void *user)
{
	wafer_status status = wafer__check_not_null(
		"wafer_memory_snapshot", client, "client", visit, "visit", visit,
		"visit");
	if (status != WAFER_OK)
		return status;
	struct wafer_memory_snapshot snapshot;
	memset(&snapshot, 0, sizeof snapshot);
	struct wafer__command command = {
		.kind = WAFER_COMMAND_SNAPSHOT,
		.snapshot = {.out = &snapshot},
	};
	status = client_submit(client, &command);
	for (size_t i = 0; status == WAFER_OK && i < snapshot.count; i++)
		visit(&snapshot.items[i], user);
	wafer__memory_snapshot_fini(&snapshot);
	return status;
}

/*===----------------------------------------------------------------------===
 * For the rest of the core (client.h)
 *===----------------------------------------------------------------------===*/

wafer_runtime *wafer__client_runtime(const wafer_client *client)
{
	return client->runtime;
}

struct wafer_runtime_device *wafer__client_runtime_device(const wafer_client *client)
{
	return client->device;
}

struct wafer__kernel_table *wafer__client_kernels(wafer_client *client)
{
	return client->kernels;
}

struct wafer__program_table *wafer__client_programs(wafer_client *client)
{
	return &client->programs;
}

wafer_status wafer__client_submit(wafer_client *client,
				  struct wafer__command *command)
{
	return client_submit(client, command);
}

const struct wafer__bridge *wafer__client_bridge(const wafer_client *client)
{
	return &client->bridge;
}

wafer_status wafer__client_release_program(wafer_client *client, void *loaded)
{
	struct wafer__command command = {
		.kind = WAFER_COMMAND_PROGRAM_RELEASE,
		.program = {.loaded = loaded},
	};
	return client_submit(client, &command);
}

/* Device timers for autotune: the commands are built here so that no
 * caller outside the client needs to know about them. */
static wafer_status submit_timer(wafer_client *client,
				 enum wafer__command_kind kind, void **timer,
				 uint64_t *out_ns, const char *call)
{
	if (!(client->device->info.capabilities & WAFER_CAP_DEVICE_TIMERS))
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "%s: %s has no device timers", call,
				   client->device->backend);
	struct wafer__command command = {
		.kind = kind,
		.timer = {.slot = timer, .elapsed_ns = out_ns},
	};
	return client_submit(client, &command);
}

wafer_status wafer__client_timer_begin(wafer_client *client, void **timer)
{
	return submit_timer(client, WAFER_COMMAND_TIMER_BEGIN, timer, NULL,
			    "wafer__client_timer_begin");
}

wafer_status wafer__client_timer_end(wafer_client *client, void **timer,
				     uint64_t *out_ns)
{
	return submit_timer(client, WAFER_COMMAND_TIMER_END, timer, out_ns,
			    "wafer__client_timer_end");
}
