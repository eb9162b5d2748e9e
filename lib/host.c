/* wafer — SPDX-License-Identifier: MIT
 *
 * host.c: registered host memory (wafer_host_register, host.h).
 *
 * Why: a copy from pageable memory is a host memcpy into a staging
 * buffer and then a DMA (plugins/cuda/staging.c); the memcpy runs on the
 * calling thread and is what an upload on a second queue cannot overlap.
 * From registered (page-locked) memory the plugin copies directly, in
 * queue order, and the caller keeps the bytes unchanged until the copy
 * has run, as with cudaMemcpyAsync from pinned memory.
 *
 * Registering and unregistering wait for every queue of the client: no
 * copy that chose its path before the change is still queued when the
 * plugin's side of it changes. */
#include "build-config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/wafer.h>

#include "lib/bridge.h"
#include "lib/client.h"
#include "lib/error.h"
#include "lib/host.h"
#include "lib/log.h"
#include "lib/queue.h"

void wafer__host_ranges_init(struct wafer__host_ranges *r)
{
	memset(r, 0, sizeof *r);
	pthread_mutex_init(&r->change, NULL);
	pthread_mutex_init(&r->lock, NULL);
}

void wafer__host_ranges_fini(struct wafer__host_ranges *r,
			     struct wafer_runtime_device *device)
{
	size_t count = atomic_load(&r->count);

	if (count) {
		const struct wafer_storage_ops *storage =
			device->plugin->storage;
		wafer__log_info("core", "client closed with %zu host range(s) "
				"still registered (wafer_host_unregister)",
				count);
		for (size_t i = 0; i < count && storage->host_unregister; i++)
			storage->host_unregister(device->device,
						 (void *)r->ranges[i].base);
	}
	free(r->ranges);
	pthread_mutex_destroy(&r->lock);
	pthread_mutex_destroy(&r->change);
}

/* The index of the first range whose base is above |p|. */
static size_t upper(const struct wafer__host_ranges *r, uintptr_t p)
{
	size_t lo = 0, hi = atomic_load(&r->count);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (r->ranges[mid].base <= p)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

bool wafer__host_direct(struct wafer__host_ranges *r,
			const struct wafer_runtime_device *device,
			const void *ptr, size_t size)
{
	if (atomic_load_explicit(&r->count, memory_order_relaxed) == 0 ||
	    !device->plugin->storage->copy_in_registered)
		return false;
	uintptr_t p = (uintptr_t)ptr;
	pthread_mutex_lock(&r->lock);
	size_t i = upper(r, p);
	bool inside = i > 0 && p - r->ranges[i - 1].base < r->ranges[i - 1].size &&
		      size <= r->ranges[i - 1].size - (p - r->ranges[i - 1].base);
	pthread_mutex_unlock(&r->lock);
	return inside;
}

/*===----------------------------------------------------------------------===
 * On the bridge
 *===----------------------------------------------------------------------===*/

wafer_status wafer__bridge_run_host_register(struct wafer__bridge *bridge,
					     struct wafer__command *c)
{
	const struct wafer_storage_ops *storage =
		bridge->device->plugin->storage;
	wafer_status status = wafer__bridge_quiesce_all(bridge);

	if (status == WAFER_OK && storage->host_register)
		status = storage->host_register(bridge->plugin_device,
						c->host.ptr, c->host.size);
	return status;
}

wafer_status wafer__bridge_run_host_unregister(struct wafer__bridge *bridge,
					       struct wafer__command *c)
{
	const struct wafer_storage_ops *storage =
		bridge->device->plugin->storage;
	/* A failure of queued work stays with its queue (deferred there);
	 * the range goes all the same. */
	wafer__bridge_quiesce_all(bridge);
	if (storage->host_unregister)
		storage->host_unregister(bridge->plugin_device, c->host.ptr);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The API
 *===----------------------------------------------------------------------===*/

static wafer_status refuse_capturing(wafer_client *client, const char *what)
{
	uint32_t capturing = atomic_load(&wafer__client_queues(client)->capturing);

	if (!capturing)
		return WAFER_OK;
	return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
			   "%s: not while a queue of the client captures a "
			   "graph (it waits for every queue); end the capture "
			   "first (wafer_queue_end_capture)",
			   what);
}

WAFER_API wafer_status wafer_host_register(wafer_client *client, void *ptr,
					   size_t size)
{
	if (!client || !ptr)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_host_register: %s is NULL",
				   client ? "ptr" : "client");
	uintptr_t p = (uintptr_t)ptr;
	if (size == 0 || size > UINTPTR_MAX - p)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_host_register: %zu bytes at %p: %s",
				   size, ptr,
				   size ? "the range passes the end of the "
					  "address space"
					: "the size is 0");
	wafer_status status = refuse_capturing(client, "wafer_host_register");
	if (status != WAFER_OK)
		return status;
	struct wafer__host_ranges *r = wafer__client_host(client);
	pthread_mutex_lock(&r->change);
	size_t i = upper(r, p);
	const struct wafer__host_range *before = i ? &r->ranges[i - 1] : NULL;
	const struct wafer__host_range *after =
		i < atomic_load(&r->count) ? &r->ranges[i] : NULL;
	const struct wafer__host_range *clash =
		before && p - before->base < before->size ? before
		: after && after->base - p < size	   ? after
							   : NULL;
	if (clash) {
		status = wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				     "wafer_host_register: %zu bytes at %p "
				     "overlap the %zu bytes registered at "
				     "0x%" PRIxPTR "; unregister those first",
				     size, ptr, clash->size, clash->base);
	} else if (atomic_load(&r->count) == r->capacity) {
		size_t n = r->capacity ? 2 * r->capacity : 8;
		/* Under |lock|: wafer__host_direct reads the list under it
		 * alone, and realloc may move it. */
		pthread_mutex_lock(&r->lock);
		struct wafer__host_range *grown =
			realloc(r->ranges, n * sizeof *grown);
		if (grown) {
			r->ranges = grown;
			r->capacity = n;
		}
		pthread_mutex_unlock(&r->lock);
		if (!grown) {
			status = wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
					     "wafer_host_register: out of "
					     "memory for the range list");
		}
	}
	if (status == WAFER_OK) {
		struct wafer__command command = {
			.kind = WAFER_COMMAND_HOST_REGISTER,
			.host = {.ptr = ptr, .size = size},
		};
		status = wafer__client_submit(client, &command);
	}
	if (status == WAFER_OK) {
		pthread_mutex_lock(&r->lock);
		size_t count = atomic_load(&r->count);
		memmove(&r->ranges[i + 1], &r->ranges[i],
			(count - i) * sizeof *r->ranges);
		r->ranges[i] = (struct wafer__host_range){p, size};
		atomic_store(&r->count, count + 1);
		pthread_mutex_unlock(&r->lock);
	}
	pthread_mutex_unlock(&r->change);
	return status;
}

WAFER_API wafer_status wafer_host_unregister(wafer_client *client, void *ptr)
{
	if (!client || !ptr)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_host_unregister: %s is NULL",
				   client ? "ptr" : "client");
	wafer_status status = refuse_capturing(client, "wafer_host_unregister");
	if (status != WAFER_OK)
		return status;
	struct wafer__host_ranges *r = wafer__client_host(client);
	uintptr_t p = (uintptr_t)ptr;
	pthread_mutex_lock(&r->change);
	size_t i = upper(r, p);
	if (i == 0 || r->ranges[i - 1].base != p) {
		pthread_mutex_unlock(&r->change);
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_host_unregister: %p is not the start "
				   "of a range registered with this client "
				   "(wafer_host_register)",
				   ptr);
	}
	/* Out of the list first: later copies are staged again. */
	pthread_mutex_lock(&r->lock);
	size_t count = atomic_load(&r->count);
	memmove(&r->ranges[i - 1], &r->ranges[i],
		(count - i) * sizeof *r->ranges);
	atomic_store(&r->count, count - 1);
	pthread_mutex_unlock(&r->lock);
	struct wafer__command command = {
		.kind = WAFER_COMMAND_HOST_UNREGISTER,
		.host = {.ptr = ptr},
	};
	status = wafer__client_submit(client, &command);
	pthread_mutex_unlock(&r->change);
	return status;
}
