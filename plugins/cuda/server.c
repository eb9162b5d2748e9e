/* wafer — SPDX-License-Identifier: MIT
 *
 * server.c: the cuda plugin's wafer_server_ops — queues, launch, sync and
 * timers.
 *
 * A queue is one CUstream created CU_STREAM_NON_BLOCKING, so it never
 * waits for, or makes wait, the legacy default stream that other code in
 * the process may use. Launches and copies are issued on it and return at
 * once; sync is cuStreamSynchronize, and is where a kernel's failure
 * (an illegal address, say) surfaces, as WAFER_ERROR_DEVICE with the
 * driver's name and text for the error. Such errors are sticky in CUDA:
 * the context is unusable afterwards, and every later call on the device
 * fails the same way.
 *
 * Timers are CUDA events recorded on the stream around the work; their
 * resolution is about half a microsecond.
 *
 * Interop (ABI 1.3): queue_native hands out the stream; queue_wrap makes a
 * queue over the caller's CUstream (one of the device's primary context,
 * blocking or not, or CU_STREAM_LEGACY, the legacy default stream that
 * PyTorch's default stream is; not CU_STREAM_PER_THREAD, which differs
 * per thread), which the queue does not own: destroying it
 * synchronises the stream and drops the plugin's record (staging buffers,
 * cuBLAS handle), never cuStreamDestroy. Everything a queue does goes
 * through its stream — staging events, stream-ordered allocations and
 * frees, timer events, cuBLAS — so a wrapped queue works the same. */
#include "build-config.h"

#include <inttypes.h>
#include <stdlib.h>

#include "plugins/cuda/cublas.h"
#include "plugins/cuda/cuda_plugin.h"

/*===----------------------------------------------------------------------===
 * Queues
 *===----------------------------------------------------------------------===*/

/* A queue on |stream|, the caller's when |wrapped| (then the queue never
 * destroys it). */
static wafer_status queue_new(struct cuda_device *dev, CUstream stream,
			      int wrapped, void **out_queue)
{
	struct cuda_queue *q = wafer_plugin_calloc(
		dev->host, sizeof *q, "cuda: cannot allocate a queue");

	if (!q)
		return WAFER_ERROR_OUT_OF_MEMORY;
	q->stream = stream;
	q->wrapped = wrapped;
	*out_queue = q;
	return WAFER_OK;
}

static wafer_status cuda_server_queue_create(void *device, void **out_queue)
{
	struct cuda_device *dev = device;
	CUstream stream = NULL;
	wafer_status status;
	CUresult result;

	*out_queue = NULL;
	status = cuda_enter(dev);
	if (status != WAFER_OK)
		return status;
	result = dev->drv->cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING);
	if (result != CUDA_SUCCESS)
		return cuda_fail(dev->state, result, "cuStreamCreate");
	status = queue_new(dev, stream, 0, out_queue);
	if (status != WAFER_OK)
		dev->drv->cuStreamDestroy(stream);
	return status;
}

static void cuda_server_queue_destroy(void *device, void *queue)
{
	struct cuda_device *dev = device;
	struct cuda_queue *q = queue;

	if (!q)
		return;
	cuda_enter(dev);
	/* The core syncs before it destroys a queue; should it not have,
	 * the staging buffers must not go back while copies use them. A
	 * download nobody synced for is dropped: its destination may be
	 * gone. */
	cuda_comm_wait(dev, q); /* a hung collective is aborted */
	dev->drv->cuStreamSynchronize(q->stream);
	cuda_comm_watch_free(dev, q);
	cuda_staging_retire_all(dev, q, 0);
	if (q->blas)
		cuda_cublas_queue_done(dev, q);
	if (!q->wrapped)
		dev->drv->cuStreamDestroy(q->stream);
	wafer_plugin_deferred_clear(&q->failed);
	free(q);
}

static wafer_status cuda_server_sync(void *device, void *queue)
{
	struct cuda_device *dev = device;
	struct cuda_queue *q = queue;
	wafer_status status;
	CUresult result;

	status = cuda_enter(dev);
	if (status != WAFER_OK)
		return status;
	/* Collectives first: their wait gives up on a rank that is gone,
	 * where cuStreamSynchronize would wait for ever. */
	wafer_status collectives = cuda_comm_wait(dev, q);
	result = dev->drv->cuStreamSynchronize(q->stream);
	/* Downloads reach their destinations only if the stream ran to the
	 * end without failing. */
	cuda_staging_retire_all(dev, q, result == CUDA_SUCCESS &&
					       collectives == WAFER_OK);
	if (collectives != WAFER_OK) {
		wafer_plugin_deferred_clear(&q->failed);
		return collectives;
	}
	if (result != CUDA_SUCCESS) {
		wafer_plugin_deferred_clear(&q->failed);
		return cuda_fail(dev->state, result, "cuStreamSynchronize");
	}
	return wafer_plugin_deferred_report(&q->failed, dev->host);
}

static wafer_status cuda_server_queue_native(void *device, void *queue,
					     struct wafer_native_queue *out)
{
	struct cuda_device *dev = device;
	struct cuda_queue *q = queue;

	out->kind = WAFER_NATIVE_CUDA_POINTER;
	out->queue = q->stream;
	out->context = dev->ctx;
	out->device_ordinal = dev->ordinal;
	return WAFER_OK;
}

static wafer_status cuda_server_queue_wrap(void *device, void *native,
					   void **out_queue)
{
	struct cuda_device *dev = device;
	CUstream stream = native;
	CUcontext ctx = NULL;
	wafer_status status;
	CUresult result = CUDA_SUCCESS;

	*out_queue = NULL;
	/* The per-thread default stream is another stream on each thread,
	 * and a client's work may run on a thread of its own (mpsc). */
	if (stream == CU_STREAM_PER_THREAD) {
		dev->host->set_error("cuda: queue_wrap: CU_STREAM_PER_THREAD "
				     "is a different stream on each thread; "
				     "pass a stream of your own or "
				     "CU_STREAM_LEGACY");
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	status = cuda_enter(dev);
	if (status != WAFER_OK)
		return status;
	/* The stream must be one of this device's primary context: work
	 * the plugin issues on it runs with that context current. The
	 * legacy default stream is the current context's, which is ours
	 * whenever the plugin issues work. */
	if (stream == CU_STREAM_LEGACY)
		ctx = dev->ctx;
	else
		result = dev->drv->cuStreamGetCtx(stream, &ctx);
	if (result != CUDA_SUCCESS)
		return cuda_fail(dev->state, result,
				 "queue_wrap: cuStreamGetCtx(stream %p)",
				 native);
	if (ctx != dev->ctx) {
		dev->host->set_error("cuda: queue_wrap: stream %p belongs to "
				     "context %p, not cuda:%" PRIu32
				     "'s primary context %p",
				     native, (void *)ctx, dev->index,
				     (void *)dev->ctx);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	return queue_new(dev, stream, 1, out_queue);
}

/*===----------------------------------------------------------------------===
 * Launch
 *===----------------------------------------------------------------------===*/

static wafer_status cuda_server_launch(void *device, void *queue,
				       const struct wafer_launch *launch)
{
	struct cuda_device *dev = device;
	/* The core checked the launch against our table or a program's
	 * kernel (plugin.h): the kernel is one of ours, its impl our
	 * descriptor or program kernel. */
	const struct cuda_kernel_desc *desc = launch->kernel->impl;
	wafer_status status;

	status = cuda_enter(dev);
	if (status != WAFER_OK)
		return status;
	if (wafer_plugin_kernel_is_program(launch->kernel))
		return cuda_program_launch(dev, queue, launch);
	return cuda_kernels_launch(dev, queue, desc, launch);
}

/*===----------------------------------------------------------------------===
 * Timers
 *===----------------------------------------------------------------------===*/

/* A timer is its start: an event with timing (event.c's entries; the
 * handle is the CUevent) recorded on the queue. */
static wafer_status cuda_server_timer_begin(void *device, void *queue,
					    void **out_timer)
{
	wafer_status status = cuda_event_create(
		device, WAFER_PLUGIN_EVENT_TIMING, out_timer);

	if (status != WAFER_OK)
		return status;
	status = cuda_event_record(device, queue, *out_timer);
	if (status != WAFER_OK) {
		cuda_event_destroy(device, *out_timer);
		*out_timer = NULL;
	}
	return status;
}

/* The end: a second timer's start, and the device time between the two
 * (cuda_event_elapsed waits for the end). Both events are destroyed,
 * whatever failed. */
static wafer_status cuda_server_timer_end(void *device, void *queue,
					  void *timer, uint64_t *out_ns)
{
	void *end = NULL;
	wafer_status status = cuda_server_timer_begin(device, queue, &end);

	*out_ns = 0;
	if (status == WAFER_OK)
		status = cuda_event_elapsed(device, timer, end, out_ns);
	cuda_event_destroy(device, end);
	cuda_event_destroy(device, timer);
	return status;
}

/*===----------------------------------------------------------------------===
 * The table
 *===----------------------------------------------------------------------===*/

const struct wafer_server_ops cuda_server_ops = {
	/* With events and host callbacks (event.c), native graphs
	 * (graph.c). */
	WAFER_PLUGIN_SERVER_OPS_ALL(cuda),
	/* Collectives through NCCL (nccl.c): offered whatever NCCL's
	 * presence, which comm_open reports. */
	WAFER_PLUGIN_COMM_OPS(cuda),
	/* Sub-communicators and grouped collectives (nccl.c, ABI 1.7). */
	.comm_split = cuda_comm_split,
	.comm_group_begin = cuda_comm_group_begin,
	.comm_group_end = cuda_comm_group_end,
};
