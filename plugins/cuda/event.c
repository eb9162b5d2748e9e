/* wafer — SPDX-License-Identifier: MIT
 *
 * event.c: the cuda plugin's events and host callbacks (ABI 1.5): a
 * CUevent each, recorded with cuEventRecord, waited on by another stream
 * with cuStreamWaitEvent (on the device; the host goes on), and
 * cuLaunchHostFunc for callbacks. Events made only for ordering are
 * created with CU_EVENT_DISABLE_TIMING, which CUDA records more cheaply.
 * A host function runs on a thread of the driver's once the work before
 * it on the stream finished, and the stream waits for it to return; the
 * driver does not call it once the context faulted (the fault surfaces
 * at the next sync). */
#include "build-config.h"

#include "plugins/cuda/cuda_plugin.h"

wafer_status cuda_event_create(void *device, uint32_t flags, void **out_event)
{
	struct cuda_device *dev = device;
	CUevent event = NULL;
	unsigned cu_flags = (flags & WAFER_PLUGIN_EVENT_TIMING)
				    ? CU_EVENT_DEFAULT
				    : CU_EVENT_DISABLE_TIMING;
	wafer_status status = cuda_enter(dev);
	CUresult result;

	*out_event = NULL;
	if (status != WAFER_OK)
		return status;
	result = dev->drv->cuEventCreate(&event, cu_flags);
	if (result != CUDA_SUCCESS)
		return cuda_fail(dev->state, result, "cuEventCreate");
	*out_event = event;
	return WAFER_OK;
}

CUresult cuda_event_recorded(const struct cuda_driver *drv, CUstream stream,
			     unsigned flags, CUevent *out)
{
	CUresult result = drv->cuEventCreate(out, flags);

	if (result != CUDA_SUCCESS) {
		*out = NULL;
		return result;
	}
	result = drv->cuEventRecord(*out, stream);
	if (result != CUDA_SUCCESS) {
		drv->cuEventDestroy(*out);
		*out = NULL;
	}
	return result;
}

void cuda_event_destroy(void *device, void *event)
{
	struct cuda_device *dev = device;

	if (event && cuda_enter(dev) == WAFER_OK)
		dev->drv->cuEventDestroy(event);
}

/* Record and wait, the commands a cross-queue order is made of, are
 * tried before entering the context: the stream they name belongs to
 * it, and entering asks the driver which context is current, a cost as
 * large as the core's whole share of the command (wafer-bench queues,
 * events_raw_context). On a failure (a driver that does want the context
 * current, or a real error) they enter and call once more, and that
 * answer counts. Never on the legacy or per-thread stream (a wrapped
 * stream may be one), which stand for the current context's. */
static int stream_names_context(CUstream stream)
{
	return stream != NULL && stream != CU_STREAM_LEGACY &&
	       stream != CU_STREAM_PER_THREAD;
}

wafer_status cuda_event_record(void *device, void *queue, void *event)
{
	struct cuda_device *dev = device;
	struct cuda_queue *q = queue;

	if (stream_names_context(q->stream) &&
	    dev->drv->cuEventRecord(event, q->stream) == CUDA_SUCCESS)
		return WAFER_OK;
	CUDA_ENTER_RETURN(dev, cuEventRecord, event, q->stream);
}

wafer_status cuda_queue_wait_event(void *device, void *queue, void *event)
{
	struct cuda_device *dev = device;
	struct cuda_queue *q = queue;

	if (stream_names_context(q->stream) &&
	    dev->drv->cuStreamWaitEvent(q->stream, event, 0) == CUDA_SUCCESS)
		return WAFER_OK;
	CUDA_ENTER_RETURN(dev, cuStreamWaitEvent, q->stream, event, 0);
}

wafer_status cuda_event_sync(void *device, void *event)
{
	struct cuda_device *dev = device;
	CUDA_ENTER_RETURN(dev, cuEventSynchronize, event);
}

wafer_status cuda_event_query(void *device, void *event)
{
	struct cuda_device *dev = device;
	wafer_status status = cuda_enter(dev);
	CUresult result;

	if (status != WAFER_OK)
		return status;
	result = dev->drv->cuEventQuery(event);
	if (result == CUDA_SUCCESS)
		return WAFER_OK;
	if (result == CUDA_ERROR_NOT_READY)
		return WAFER_ERROR_NOT_READY;
	return cuda_fail(dev->state, result, "cuEventQuery");
}

wafer_status cuda_event_elapsed(void *device, void *start, void *end,
				uint64_t *out_ns)
{
	struct cuda_device *dev = device;
	wafer_status status = cuda_enter(dev);
	float ms = 0.0f;
	CUresult result;

	*out_ns = 0;
	if (status != WAFER_OK)
		return status;
	result = dev->drv->cuEventSynchronize(end);
	if (result == CUDA_SUCCESS)
		result = dev->drv->cuEventElapsedTime(&ms, start, end);
	if (result != CUDA_SUCCESS)
		return cuda_fail(dev->state, result, "cuEventElapsedTime");
	*out_ns = ms > 0.0f ? (uint64_t)((double)ms * 1e6 + 0.5) : 0;
	return WAFER_OK;
}

wafer_status cuda_queue_callback(void *device, void *queue,
				 void (*fn)(void *arg), void *arg)
{
	struct cuda_device *dev = device;
	struct cuda_queue *q = queue;
	CUDA_ENTER_RETURN(dev, cuLaunchHostFunc, q->stream, fn, arg);
}
