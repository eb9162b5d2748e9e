/* wafer — SPDX-License-Identifier: MIT
 *
 * peer.c: storage.copy_peer (plugin ABI 1.4), the device-to-device half
 * of wafer_copy_peer. The copy runs on the destination queue's stream:
 *
 *   1. an event recorded on the source stream, waited on by the
 *      destination stream: the copy comes after the work already issued
 *      on the source (the kernel that wrote the bytes);
 *   2. the copy: cuMemcpyDtoDAsync on one device (two queues, or two
 *      clients, of one GPU), cuMemcpyPeerAsync between two, once the
 *      destination's context may reach the source's memory
 *      (cuCtxEnablePeerAccess, tried once per pair: without it the driver
 *      still copies, staging through the host);
 *   3. an event recorded after it on the destination stream, waited on
 *      by the source stream: what is issued later on the source (a
 *      kernel overwriting the bytes, a stream-ordered free) waits for the
 *      copy.
 *
 * Nothing waits on the host. The events are made for each copy and
 * destroyed at once (the driver frees them once their records ran). On
 * one stream (one queue, or two wrapping one stream) stream order is
 * enough: no events.
 *
 * Threads: the core calls this from the destination client's thread while
 * the source client's may be issuing on |src_queue|; recording an event
 * on a stream and making a stream wait are safe alongside that (CUDA
 * streams are), and nothing of the source queue's record is touched. */
#include "build-config.h"

#include <inttypes.h>

#include "plugins/cuda/cuda_plugin.h"

/* Makes |to|'s stream wait for what is issued so far on |from|'s. */
static wafer_status order_after(struct cuda_device *from_dev,
				struct cuda_queue *from,
				struct cuda_device *to_dev,
				struct cuda_queue *to, const char *step)
{
	const struct cuda_driver *drv = from_dev->drv;
	wafer_status status;
	CUevent event = NULL;
	CUresult result;

	status = cuda_enter(from_dev);
	if (status != WAFER_OK)
		return status;
	result = cuda_event_recorded(drv, from->stream,
				     CU_EVENT_DISABLE_TIMING, &event);
	if (result == CUDA_SUCCESS) {
		status = cuda_enter(to_dev);
		if (status == WAFER_OK)
			result = drv->cuStreamWaitEvent(to->stream, event, 0);
	}
	/* Destroyed in its own context; the driver frees it once the
	 * record ran, the wait keeps what it was told. */
	if (event && cuda_enter(from_dev) == WAFER_OK)
		drv->cuEventDestroy(event);
	if (status != WAFER_OK)
		return status;
	if (result != CUDA_SUCCESS)
		return cuda_fail(from_dev->state, result,
				 "copy_peer: %s (cuda:%" PRIu32 " -> cuda:%"
				 PRIu32 ")", step, from_dev->index,
				 to_dev->index);
	return WAFER_OK;
}

/* Lets |dev|'s context reach |peer|'s memory, once per pair and plugin
 * instance; a refusal only costs speed, so it is logged, not returned.
 * |dev|'s context is current. */
static void reach_peer(struct cuda_device *dev, struct cuda_device *peer)
{
	struct cuda_state *st = dev->state;
	const struct cuda_driver *drv = dev->drv;
	uint64_t bit = (uint64_t)1 << peer->ordinal;
	char text[256];
	int can = 0;
	CUresult result;

	if (dev->ordinal >= CUDA_PEER_MAX || peer->ordinal >= CUDA_PEER_MAX)
		return;
	pthread_mutex_lock(&st->peer_lock);
	if (st->peer_tried[dev->ordinal] & bit) {
		pthread_mutex_unlock(&st->peer_lock);
		return;
	}
	st->peer_tried[dev->ordinal] |= bit;
	result = drv->cuDeviceCanAccessPeer(&can, dev->cu, peer->cu);
	if (result == CUDA_SUCCESS && can)
		result = drv->cuCtxEnablePeerAccess(peer->ctx, 0);
	pthread_mutex_unlock(&st->peer_lock);
	/* Someone else in the process (NCCL, the caller) enabled it. */
	if (result == CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)
		result = CUDA_SUCCESS;
	if (result != CUDA_SUCCESS || !can)
		dev->host->log(dev->host, WAFER_LOG_INFO,
			       "cuda:%" PRIu32 " cannot reach cuda:%" PRIu32
			       "'s memory directly (%s): peer copies between "
			       "them go through the host",
			       dev->index, peer->index,
			       result != CUDA_SUCCESS
				       ? cuda_result_text(drv, result, text,
							  sizeof text)
				       : "cuDeviceCanAccessPeer: no");
}

wafer_status cuda_storage_copy_peer(void *device, void *queue,
				    wafer_resource dst, size_t dst_offset,
				    void *src_device, void *src_queue,
				    wafer_resource src, size_t src_offset,
				    size_t size)
{
	struct cuda_device *dd = device, *sd = src_device;
	struct cuda_queue *dq = queue, *sq = src_queue;
	CUdeviceptr to = cuda_ptr(dst) + dst_offset;
	CUdeviceptr from = cuda_ptr(src) + src_offset;
	int one_stream = dq->stream == sq->stream && dd->ctx == sd->ctx;
	wafer_status status;
	CUresult result;

	if (size == 0)
		return WAFER_OK;
	if (!one_stream) {
		status = order_after(sd, sq, dd, dq, "waiting for the source");
		if (status != WAFER_OK)
			return status;
	}
	if (dd->ctx == sd->ctx) {
		/* One device: the plain copy (it also handles two slices of
		 * one resource that overlap). */
		status = cuda_storage_ops.copy(dd, dq, dst, dst_offset, src,
					       src_offset, size);
	} else {
		status = cuda_enter(dd);
		if (status == WAFER_OK) {
			reach_peer(dd, sd);
			result = dd->drv->cuMemcpyPeerAsync(to, dd->ctx, from,
							    sd->ctx, size,
							    dq->stream);
			if (result != CUDA_SUCCESS)
				status = cuda_fail(
					dd->state, result,
					"cuMemcpyPeerAsync(%zu bytes, cuda:%"
					PRIu32 " -> cuda:%" PRIu32 ")",
					size, sd->index, dd->index);
		}
	}
	if (status != WAFER_OK || one_stream)
		return status;
	return order_after(dd, dq, sd, sq, "ordering the source after the copy");
}
