/* wafer — SPDX-License-Identifier: MIT
 *
 * event.c: the OpenCL plugin's events and host callbacks (ABI 1.5).
 *
 * An event holds the marker (clEnqueueMarkerWithWaitList) of its latest
 * record; another queue waits on it with a barrier whose wait list is
 * that marker, so the host never blocks. A marker is flushed when it is
 * recorded, so that a wait on another queue, or on the host, cannot wait
 * for a command the device was never given. Elapsed time reads the
 * markers' CL_PROFILING_COMMAND_END (the queues have
 * CL_QUEUE_PROFILING_ENABLE); a device that does not time markers gives
 * WAFER_ERROR_NOT_SUPPORTED.
 *
 * A host callback is a marker with a CL_COMPLETE callback (which OpenCL
 * runs on a thread of the driver's) and a user event that the queue's
 * next commands wait on through a barrier, completed once the callback
 * returned: work issued after the callback starts after it, as on CUDA. */
#include "build-config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "plugins/opencl/ocl_plugin.h"

struct ocl_event {
	cl_event marker; /* NULL until recorded: complete */
};

wafer_status ocl_event_create(void *device, uint32_t flags, void **out_event)
{
	struct ocl_event *e = calloc(1, sizeof *e);

	(void)flags; /* every queue profiles: markers are timed anyway */
	*out_event = e;
	if (!e) {
		ocl_host(device)->set_error(OCL_NAME ": cannot allocate an event");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	return WAFER_OK;
}

void ocl_event_destroy(void *device, void *event)
{
	struct ocl_event *e = event;

	(void)device;
	if (e && e->marker)
		clReleaseEvent(e->marker);
	free(e);
}

/* A marker on |q| after everything issued there, flushed. */
static wafer_status flushed_marker(struct ocl_queue *q, cl_event *out)
{
	cl_int err = clEnqueueMarkerWithWaitList(q->queue, 0, NULL, out);

	if (err == CL_SUCCESS)
		err = clFlush(q->queue);
	if (err != CL_SUCCESS)
		return ocl_fail(ocl_host(q->device), err,
				"clEnqueueMarkerWithWaitList");
	return WAFER_OK;
}

wafer_status ocl_event_record(void *device, void *queue, void *event)
{
	struct ocl_event *e = event;
	cl_event marker = NULL;
	wafer_status status = flushed_marker(queue, &marker);

	(void)device;
	if (status != WAFER_OK)
		return status;
	if (e->marker)
		clReleaseEvent(e->marker);
	e->marker = marker;
	return WAFER_OK;
}

wafer_status ocl_queue_wait_event(void *device, void *queue, void *event)
{
	struct ocl_queue *q = queue;
	struct ocl_event *e = event;
	cl_int err;

	(void)device;
	if (!e->marker)
		return WAFER_OK;
	err = clEnqueueBarrierWithWaitList(q->queue, 1, &e->marker, NULL);
	if (err != CL_SUCCESS)
		return ocl_fail(ocl_host(q->device), err,
				"clEnqueueBarrierWithWaitList (event wait)");
	return WAFER_OK;
}

wafer_status ocl_event_sync(void *device, void *event)
{
	struct ocl_event *e = event;
	cl_int err;

	if (!e->marker)
		return WAFER_OK;
	err = clWaitForEvents(1, &e->marker);
	if (err != CL_SUCCESS)
		return ocl_fail(ocl_host(device), err, "clWaitForEvents (event)");
	return WAFER_OK;
}

wafer_status ocl_event_query(void *device, void *event)
{
	struct ocl_event *e = event;
	cl_int state = CL_COMPLETE;
	cl_int err;

	if (!e->marker)
		return WAFER_OK;
	err = clGetEventInfo(e->marker, CL_EVENT_COMMAND_EXECUTION_STATUS,
			     sizeof state, &state, NULL);
	if (err == CL_SUCCESS && state < 0)
		err = state; /* the marker, or work before it, failed */
	if (err != CL_SUCCESS)
		return ocl_fail(ocl_host(device), err, "event query");
	return state == CL_COMPLETE ? WAFER_OK : WAFER_ERROR_NOT_READY;
}

wafer_status ocl_event_elapsed(void *device, void *start, void *end,
			       uint64_t *out_ns)
{
	struct ocl_event *s = start, *e = end;
	cl_ulong t0 = 0, t1 = 0;
	wafer_status status;
	cl_int err;

	*out_ns = 0;
	if (!s->marker || !e->marker) {
		ocl_host(device)->set_error(OCL_NAME ": event_elapsed: an "
					    "event was never recorded");
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	status = ocl_event_sync(device, end);
	if (status == WAFER_OK)
		status = ocl_event_sync(device, start);
	if (status != WAFER_OK)
		return status;
	err = clGetEventProfilingInfo(s->marker, CL_PROFILING_COMMAND_END,
				      sizeof t0, &t0, NULL);
	if (err == CL_SUCCESS)
		err = clGetEventProfilingInfo(e->marker,
					      CL_PROFILING_COMMAND_END,
					      sizeof t1, &t1, NULL);
	if (err == CL_PROFILING_INFO_NOT_AVAILABLE) {
		ocl_host(device)->set_error(OCL_NAME ": the device does not "
					    "time markers");
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	if (err != CL_SUCCESS)
		return ocl_fail(ocl_host(device), err,
				"clGetEventProfilingInfo (event)");
	*out_ns = t1 > t0 ? t1 - t0 : 0;
	return WAFER_OK;
}

struct ocl_callback {
	void (*fn)(void *arg);
	void *arg;
	cl_event gate; /* a user event the queue's later work waits on */
};

/* On a thread of the plugin's: the user's function, then the gate. */
static void *callback_thread(void *data)
{
	struct ocl_callback *cb = data;

	cb->fn(cb->arg);
	clSetUserEventStatus(cb->gate, CL_COMPLETE);
	clReleaseEvent(cb->gate);
	free(cb);
	return NULL;
}

/* The OpenCL runtime's callback must return promptly (the specification
 * leaves blocking in it undefined, and an implementation may deliver
 * every queue's callbacks on one thread), so the caller's function, which
 * may take its time, runs on a thread of its own: a callback on one queue
 * never holds up another queue's. */
static void CL_CALLBACK run_callback(cl_event marker, cl_int state, void *data)
{
	struct ocl_callback *cb = data;
	pthread_attr_t attr;
	pthread_t thread;
	bool started = false;

	clReleaseEvent(marker);
	if (state == CL_COMPLETE && pthread_attr_init(&attr) == 0) {
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		started = pthread_create(&thread, &attr, callback_thread, cb) == 0;
		pthread_attr_destroy(&attr);
	}
	if (started)
		return;
	/* No thread to be had: here, as before. */
	if (state == CL_COMPLETE)
		cb->fn(cb->arg);
	clSetUserEventStatus(cb->gate, state == CL_COMPLETE ? CL_COMPLETE : -1);
	clReleaseEvent(cb->gate);
	free(cb);
}

wafer_status ocl_queue_callback(void *device, void *queue,
				void (*fn)(void *arg), void *arg)
{
	struct ocl_device *dev = device;
	struct ocl_queue *q = queue;
	struct ocl_callback *cb = calloc(1, sizeof *cb);
	cl_event marker = NULL;
	wafer_status status;
	cl_int err = CL_OUT_OF_HOST_MEMORY;

	if (!cb) {
		ocl_host(dev)->set_error(OCL_NAME ": cannot allocate a callback");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	cb->fn = fn;
	cb->arg = arg;
	cb->gate = clCreateUserEvent(dev->context, &err);
	if (!cb->gate) {
		free(cb);
		return ocl_fail(ocl_host(dev), err, "clCreateUserEvent");
	}
	/* The gate first: once the marker's callback may run, the barrier
	 * must already hold what follows. */
	err = clEnqueueBarrierWithWaitList(q->queue, 0, NULL, &marker);
	if (err == CL_SUCCESS)
		err = clEnqueueBarrierWithWaitList(q->queue, 1, &cb->gate, NULL);
	if (err == CL_SUCCESS)
		err = clSetEventCallback(marker, CL_COMPLETE, run_callback, cb);
	if (err != CL_SUCCESS) {
		/* Let the queue go on: nothing will run the callback. */
		clSetUserEventStatus(cb->gate, CL_COMPLETE);
		clReleaseEvent(cb->gate);
		if (marker)
			clReleaseEvent(marker);
		free(cb);
		return ocl_fail(ocl_host(dev), err, "host callback");
	}
	status = WAFER_OK;
	err = clFlush(q->queue);
	if (err != CL_SUCCESS)
		status = ocl_fail(ocl_host(dev), err, "clFlush (host callback)");
	return status;
}
