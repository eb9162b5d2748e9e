/* wafer — SPDX-License-Identifier: MIT
 *
 * copy_peer.c: wafer_copy_peer (include/wafer/comm.h). Between clients
 * of one plugin that copies between its devices (storage.copy_peer,
 * WAFER_CAP_PEER_COPY) the bytes go device to device: the source's
 * channel is flushed first (a command that waits, so everything
 * submitted to the source has reached its queue and the source handle
 * has its memory), then the copy runs on the destination's channel and
 * waits until the plugin has issued it on both queues, which orders it
 * after the work before and before the work after on either client.
 * Both are rows of lib/command.def (PEER_SOURCE, PEER_COPY), run by
 * wafer__copy_peer_run_source and wafer__copy_peer_run at the end of this
 * file. Otherwise the bytes are staged through the host: a read of the
 * source (which waits for it) and a create on the destination.
 *
 * Each path logs itself at debug level ("copy_peer: device", "copy_peer:
 * staged through the host"), so tests can tell which one ran. */
#include "build-config.h"

#include <inttypes.h>
#include <stdlib.h>

#include <wafer/comm.h>

#include "lib/bridge.h"
#include "lib/client.h"
#include "lib/error.h"
#include "lib/log.h"

static wafer_status copy_on_device(wafer_client *src_client,
				   struct wafer__handle_slot *src_slot,
				   wafer_client *dst_client, size_t size,
				   wafer_handle *out_dst)
{
	struct wafer__handle_slot *dst_slot;
	wafer_handle dst;
	wafer_status status;

	if (src_client != dst_client) {
		struct wafer__command flush = {.kind = WAFER_COMMAND_PEER_SOURCE};

		status = wafer__client_submit(src_client, &flush);
		if (status != WAFER_OK)
			return status;
	}
	status = wafer__client_empty_now(dst_client, size, &dst);
	if (status != WAFER_OK)
		return status;
	status = wafer__handle_table_lookup(wafer__client_handles(dst_client),
					    dst, "copy_peer", &dst_slot);
	if (status == WAFER_OK) {
		struct wafer__command copy = {
			.kind = WAFER_COMMAND_PEER_COPY,
			.peer_copy = {
				.dst = dst_slot,
				.src_bridge = wafer__client_bridge(src_client),
				.src = src_slot,
				.size = size,
			},
		};
		status = wafer__client_submit(dst_client, &copy);
	}
	if (status != WAFER_OK) {
		wafer_release(dst_client, dst);
		return status;
	}
	wafer__log_debug("core", "copy_peer: device, %zu bytes", size);
	*out_dst = dst;
	return WAFER_OK;
}

static wafer_status copy_through_host(wafer_client *src_client,
				      wafer_handle src,
				      wafer_client *dst_client, size_t size,
				      wafer_handle *out_dst)
{
	void *bytes = malloc(size);
	wafer_status status;

	if (!bytes)
		return wafer__fail(WAFER_ERROR_OUT_OF_MEMORY,
				   "wafer_copy_peer: cannot stage %zu bytes in "
				   "host memory",
				   size);
	status = wafer_read(src_client, src, 0, bytes, size);
	if (status == WAFER_OK)
		status = wafer_create(dst_client, bytes, size, out_dst);
	free(bytes);
	if (status == WAFER_OK)
		wafer__log_debug("core",
				 "copy_peer: staged through the host, %zu bytes",
				 size);
	return status;
}

WAFER_API wafer_status wafer_copy_peer(wafer_client *src_client,
				       wafer_handle src,
				       wafer_client *dst_client,
				       wafer_handle *out_dst)
{
	const struct wafer_runtime_device *from, *to;
	struct wafer__handle_slot *src_slot;
	wafer_status status;

	if (!out_dst)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_copy_peer: out_dst is NULL");
	out_dst->bits = 0;
	if (!src_client || !dst_client)
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_copy_peer: %s is NULL",
				   src_client ? "dst_client" : "src_client");
	if (wafer__client_runtime(src_client) != wafer__client_runtime(dst_client))
		return wafer__fail(WAFER_ERROR_INVALID_ARGUMENT,
				   "wafer_copy_peer: src_client and dst_client "
				   "are of two runtimes (peer copies stay in "
				  "one)");
	status = wafer__handle_table_lookup(wafer__client_handles(src_client),
					    src, "src", &src_slot);
	if (status != WAFER_OK)
		return wafer__fail_context(status, "wafer_copy_peer");
	from = wafer__client_runtime_device(src_client);
	to = wafer__client_runtime_device(dst_client);
	if (from->plugin == to->plugin && to->plugin->storage->copy_peer)
		status = copy_on_device(src_client, src_slot, dst_client,
					src_slot->size, out_dst);
	else
		status = copy_through_host(src_client, src, dst_client,
					   src_slot->size, out_dst);
	if (status != WAFER_OK)
		return wafer__fail_context(status,
					   "wafer_copy_peer: handle 0x%016" PRIx64
					   " of %s:%u to %s:%u",
					   src.bits, from->backend, from->index,
					   to->backend, to->index);
	return WAFER_OK;
}

/* The device path of wafer_copy_peer, on the destination's bridge; the
 * plugin orders the copy on both queues (plugin.h, storage.copy_peer). */
wafer_status wafer__copy_peer_run(struct wafer__bridge *bridge,
				  struct wafer__command *c)
{
	const struct wafer__bridge *from = c->peer_copy.src_bridge;
	const struct wafer__slice *src, *dst;
	wafer_status status = wafer__bridge_check_backed(c->peer_copy.dst, "copy_peer");

	if (status == WAFER_OK)
		status = wafer__bridge_check_backed(c->peer_copy.src, "copy_peer");
	if (status != WAFER_OK)
		return status;
	uint32_t l = wafer__command_lane(c);
	status = wafer__lanes_touch(&bridge->lanes, l, &c->peer_copy.dst, 1);
	if (status != WAFER_OK)
		return status;
	src = &c->peer_copy.src->slice;
	dst = &c->peer_copy.dst->slice;
	bridge->lanes.lane[l].dirty = true;
	/* The source's side is its default queue, which PEER_SOURCE
	 * ordered after the source client's other queues. */
	status = bridge->device->plugin->storage->copy_peer(
		bridge->plugin_device, bridge->lanes.lane[l].queue,
		dst->resource, dst->offset, from->plugin_device,
		from->lanes.lane[0].queue, src->resource, src->offset,
		c->peer_copy.size);
	if (status != WAFER_OK)
		return wafer__fail_context(status,
					   "copy_peer of %zu bytes from %s:%u "
					   "to %s:%u",
					   c->peer_copy.size,
					   from->device->backend,
					   from->device->index,
					   bridge->device->backend,
					   bridge->device->index);
	return WAFER_OK;
}

/* The source's side (PEER_SOURCE): the peer copy about to be issued
 * from its default queue is work memory must wait for, like any, and
 * comes after the work of every other queue of the source client. */
wafer_status wafer__copy_peer_run_source(struct wafer__bridge *bridge,
					 struct wafer__command *c)
{
	struct wafer__lanes *lanes = &bridge->lanes;

	(void)c;
	for (uint32_t i = 1; lanes->multi && i < WAFER_MAX_QUEUES; i++) {
		wafer_status status = wafer__lanes_order(lanes, 0, i, UINT64_MAX);
		if (status != WAFER_OK)
			return status;
	}
	lanes->lane[0].dirty = true;
	return WAFER_OK;
}
