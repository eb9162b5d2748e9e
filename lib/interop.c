/* wafer — SPDX-License-Identifier: MIT
 *
 * interop.c: native handles out and in (include/wafer/interop.h): the
 * public calls, which check their arguments in the caller's thread, the
 * bridge's side of their commands, and the release callbacks of imported
 * memory. How imported memory lives and goes is in lib/interop.h. */
#include "build-config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/interop.h>

#include "lib/client.h"
#include "lib/error.h"
#include "lib/loader.h"
#include "lib/interop.h"
#include "lib/scope.h"

/* The fields every caller's struct must reach: a buffer through |size|,
 * a queue through |queue| (the later fields are read and written only
 * where struct_size has them). */
#define BUFFER_MIN (offsetof(wafer_native_buffer, size) + sizeof(size_t))
#define QUEUE_MIN (offsetof(wafer_native_queue, queue) + sizeof(void *))

/* Kinds whose buffer is an object and an offset into it (types.h); the
 * others are a pointer with the offset applied. */
static bool object_kind(wafer_native_kind kind)
{
	return kind == WAFER_NATIVE_OPENCL_MEM ||
	       (kind >= WAFER_NATIVE_VENDOR && kind <= WAFER_NATIVE_VENDOR_LAST);
}

static bool known_kind(wafer_native_kind kind)
{
	return (kind >= WAFER_NATIVE_HOST_POINTER &&
		kind <= WAFER_NATIVE_LEVELZERO_POINTER) ||
	       (kind >= WAFER_NATIVE_VENDOR && kind <= WAFER_NATIVE_VENDOR_LAST);
}

static wafer_status not_supported(const char *fn,
				  const struct wafer_runtime_device *device)
{
	return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
			   "%s: interop not supported by %s%s", fn,
			   device->backend,
			   wafer__loader_minor_note(device->plugin, 3));
}

/*===----------------------------------------------------------------------===
 * Native handles out
 *===----------------------------------------------------------------------===*/

WAFER_API wafer_status wafer_handle_native(wafer_client *client,
					   wafer_handle handle,
					   wafer_native_buffer *out)
{
	static const char fn[] = "wafer_handle_native";
	wafer_status status = wafer__check_out_struct(
		fn, "client", client, "out", out, BUFFER_MIN, sizeof *out);
	if (status != WAFER_OK)
		return status;
	const struct wafer_runtime_device *device =
		wafer__client_runtime_device(client);
	struct wafer__handle_slot *slot;
	status = wafer__handle_table_lookup(wafer__client_handles(client),
					    handle, "handle_native", &slot);
	if (status != WAFER_OK)
		return status;
	if (!wafer__interop_storage(device->plugin))
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "%s: handle 0x%016" PRIx64 ": interop not "
				   "supported by %s",
				   fn, handle.bits, device->backend);
	wafer_native_buffer full = {.struct_size = sizeof full};
	struct wafer__command command = {
		.kind = WAFER_COMMAND_NATIVE,
		.native = {.slot = slot, .out = &full},
	};
	status = wafer__client_submit(client, &command);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s: handle 0x%016" PRIx64,
					   fn, handle.bits);
	wafer__copy_out_struct(out, &full, sizeof full);
	return WAFER_OK;
}

/* A pool handle's slice names the vm range and the offset of its pages
 * in it; the plugin turns either kind of resource into an address. */
wafer_status wafer__interop_run_native(struct wafer__bridge *bridge,
				       struct wafer__command *c)
{
	struct wafer__handle_slot *slot = c->native.slot;
	wafer_native_buffer *out = c->native.out;
	const struct wafer_runtime_device *device = bridge->device;
	if (!slot->slice.resource)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "handle slot %u has no memory (reserving its "
				  "%zu bytes failed)",
				  slot->index, slot->size);
	wafer_status status = device->plugin->storage->native(
		device->device, slot->slice.resource, slot->slice.offset, out);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s: native", device->backend);
	out->struct_size = sizeof *out;
	out->backend = device->backend;
	out->size = slot->size;
	return WAFER_OK;
}

WAFER_API wafer_status wafer_client_native_queue(wafer_client *client,
						 wafer_native_queue *out)
{
	static const char fn[] = "wafer_client_native_queue";
	wafer_status status = wafer__check_out_struct(
		fn, "client", client, "out", out, QUEUE_MIN, sizeof *out);
	if (status != WAFER_OK)
		return status;
	const struct wafer_runtime_device *device =
		wafer__client_runtime_device(client);
	if (!wafer__interop_server(device->plugin))
		return not_supported(fn, device);
	/* A command that waits: on mpsc the runner has submitted everything
	 * issued before it when it answers. */
	wafer_native_queue full = {.struct_size = sizeof full};
	struct wafer__command command = {
		.kind = WAFER_COMMAND_QUEUE_NATIVE,
		.queue_native = {.out = &full},
	};
	status = wafer__client_submit(client, &command);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s", fn);
	wafer__copy_out_struct(out, &full, sizeof full);
	return WAFER_OK;
}

wafer_status wafer__interop_run_queue_native(struct wafer__bridge *bridge,
					     struct wafer__command *c)
{
	wafer_native_queue *out = c->queue_native.out;
	const struct wafer_runtime_device *device = bridge->device;
	wafer_status status = device->plugin->server->queue_native(
		device->device, bridge->lanes.lane[wafer__command_lane(c)].queue,
		out);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s: queue_native",
					   device->backend);
	out->struct_size = sizeof *out;
	out->backend = device->backend;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Native handles in
 *===----------------------------------------------------------------------===*/

/* Checks an import's buffer (the whole struct, copied) against the
 * client's device. */
static wafer_status check_import(const wafer_client *client,
				 const wafer_native_buffer *b)
{
	static const char fn[] = "wafer_handle_import";
	const struct wafer_runtime_device *device =
		wafer__client_runtime_device(client);
	wafer_native_kind want = wafer__client_bridge(client)->native_kind;
	size_t alignment = device->info.alloc_alignment;
	const char *kind = wafer_native_kind_name(b->kind);

	if (!known_kind(b->kind) || (want && b->kind != want))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: buffer kind %s (%d) is not %s's%s%s",
				   fn, kind, (int)b->kind, device->backend,
				   want ? ", which takes " : "",
				   want ? wafer_native_kind_name(want) : "");
	if (b->size == 0)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: %s buffer: size is 0", fn, kind);
	if (object_kind(b->kind)) {
		if (!b->object)
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "%s: %s buffer of %zu bytes: object "
					   "is NULL",
					   fn, kind, b->size);
		if (b->offset % alignment)
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "%s: %s buffer %p of %zu bytes: "
					   "offset %zu is not a multiple of "
					   "%s's alignment %zu",
					   fn, kind, b->object, b->size,
					   b->offset, device->backend,
					   alignment);
		if (b->size > SIZE_MAX - b->offset)
			return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
					   "%s: %s buffer %p: offset %zu + "
					   "size %zu overflows",
					   fn, kind, b->object, b->offset,
					   b->size);
		return WAFER_OK;
	}
	if (!b->address)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: %s buffer of %zu bytes: address is 0",
				   fn, kind, b->size);
	if (b->address % alignment)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: %s buffer of %zu bytes: address "
				   "0x%" PRIx64 " is not a multiple of %s's "
				   "alignment %zu",
				   fn, kind, b->size, b->address,
				   device->backend, alignment);
	if (b->size - 1 > UINT64_MAX - b->address)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: %s buffer at 0x%" PRIx64 ": size %zu "
				   "passes the end of the address space",
				   fn, kind, b->address, b->size);
	return WAFER_OK;
}

WAFER_API wafer_status wafer_handle_import(wafer_client *client,
					   const wafer_native_buffer *buffer,
					   wafer_import_release_fn release,
					   void *user_data,
					   wafer_handle *out_handle)
{
	static const char fn[] = "wafer_handle_import";
	wafer_status status =
		WAFER__CHECK_OUT_POINTER(fn, client, buffer, out_handle);
	if (status != WAFER_OK)
		return status;
	if (buffer->struct_size < BUFFER_MIN)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "%s: buffer->struct_size is %zu, at least "
				   "%zu expected (sizeof is %zu)",
				   fn, buffer->struct_size, BUFFER_MIN,
				   sizeof *buffer);
	/* The whole struct, zero past the caller's (an older header). */
	wafer_native_buffer b;
	memset(&b, 0, sizeof b);
	memcpy(&b, buffer,
	       buffer->struct_size < sizeof b ? buffer->struct_size : sizeof b);
	b.struct_size = sizeof b;
	b.backend = NULL;
	if (!object_kind(b.kind)) {
		b.object = NULL;
		b.offset = 0;
	}

	const struct wafer_runtime_device *device =
		wafer__client_runtime_device(client);
	if (!wafer__interop_storage(device->plugin))
		return wafer__fail(WAFER_ERROR_NOT_SUPPORTED,
				   "%s: %s buffer of %zu bytes: interop not "
				   "supported by %s",
				   fn, wafer_native_kind_name(b.kind), b.size,
				   device->backend);
	status = check_import(client, &b);
	if (status != WAFER_OK)
		return status;
	/* Inside a scope, the scope takes the reference: room for it first,
	 * since a handle over the caller's memory cannot be dropped again
	 * without calling the caller's callback. */
	struct wafer__scopes *scopes = wafer__client_scopes(client);
	if (wafer__scopes_any(scopes)) {
		status = wafer__scopes_room(scopes);
		if (status != WAFER_OK)
			return wafer__fail_context(status, "%s", fn);
	}

	struct wafer__foreign *foreign = malloc(sizeof *foreign);
	if (!foreign)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "%s: out of host memory", fn);
	*foreign = (struct wafer__foreign){.release = release,
					  .user_data = user_data};
	struct wafer__handle_table *handles = wafer__client_handles(client);
	struct wafer__handle_slot *slot;
	wafer_handle handle;
	status = wafer__handle_table_alloc(handles, b.size, &slot, &handle);
	if (status != WAFER_OK) {
		free(foreign);
		return wafer__fail_context(status, "%s", fn);
	}
	struct wafer__command command = {
		.kind = WAFER_COMMAND_IMPORT,
		.import = {.slot = slot, .buffer = &b, .foreign = foreign},
	};
	status = wafer__client_submit(client, &command);
	if (status != WAFER_OK) {
		/* Nothing behind the slot (the bridge sets |foreign| only on
		 * success): retire it without a release. */
		struct wafer__handle_slot *last;
		wafer__handle_table_unref(handles, handle, NULL, &last);
		wafer__handle_table_recycle(handles, slot);
		free(foreign);
		return status;
	}
	if (wafer__scopes_any(scopes)) {
		status = wafer__scopes_enter(scopes, handle);
		if (status != WAFER_OK) {
			/* Not after the room above. Should it happen, the
			 * buffer goes back to the caller as on any failure:
			 * no callback. */
			foreign->release = NULL;
			wafer__client_drop(client, handle, NULL);
			return status;
		}
	}
	*out_handle = handle;
	return WAFER_OK;
}

wafer_status wafer__interop_run_import(struct wafer__bridge *bridge,
				       struct wafer__command *c)
{
	struct wafer__handle_slot *slot = c->import.slot;
	const wafer_native_buffer *buffer = c->import.buffer;
	const struct wafer_runtime_device *device = bridge->device;
	const struct wafer_storage_ops *storage = device->plugin->storage;
	wafer_resource resource = 0;
	wafer_status status = storage->import(device->device, buffer,
					      &resource);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "%s: import of a %s buffer "
					   "of %zu bytes",
					   device->backend,
					   wafer_native_kind_name(buffer->kind),
					   buffer->size);
	if (!resource)
		return wafer__fail(WAFER_ERROR_PLUGIN,
				   "%s: import of a %s buffer of %zu bytes "
				   "returned resource 0",
				   device->backend,
				   wafer_native_kind_name(buffer->kind),
				   buffer->size);
	/* An object kind's bytes start |offset| into the object; a pointer
	 * kind's resource starts at its first byte. */
	slot->slice = (struct wafer__slice){
		.resource = resource,
		.offset = buffer->offset,
		.size = buffer->size,
	};
	slot->foreign = c->import.foreign;
	return WAFER_OK;
}

void wafer__foreign_notify(struct wafer__foreign *list)
{
	while (list) {
		struct wafer__foreign *next = list->next;
		if (list->release)
			list->release(list->user_data);
		free(list);
		list = next;
	}
}
