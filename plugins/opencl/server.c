/* wafer — SPDX-License-Identifier: MIT
 *
 * server.c: the OpenCL plugin's wafer_server_ops — queues, launch, sync
 * and device timers.
 *
 * A wafer queue is an in-order cl_command_queue created with
 * CL_QUEUE_PROFILING_ENABLE. Launches and copies are enqueued and return
 * at once; sync is clFinish. Errors OpenCL reports when a command is
 * issued (bad arguments, no resources) are returned at once with the
 * OpenCL error name; errors found later (a staged upload that failed, or
 * clFinish reporting a fault) are returned by the next sync, as plugin.h
 * asks.
 *
 * Timers use the device's own time stamps: while a timer runs, every
 * command issued on the queue makes an event, and timer_end returns the
 * time from the start of the first such command to the end of the last
 * (CL_PROFILING_COMMAND_START / _END). That works the same on every
 * vendor, where profiling of marker commands does not.
 *
 * Interop (ABI 1.3): queue_native hands out the cl_command_queue;
 * queue_wrap makes a queue over the caller's, which must be an in-order
 * queue of the device's context and device, and retains it: queue_destroy
 * then finishes it and releases that reference, as for a queue of our
 * own, and the caller's reference stays valid. A caller's queue without
 * CL_QUEUE_PROFILING_ENABLE runs everything but timers (timer_begin says
 * so). */
#include "build-config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/opencl/ocl_plugin.h"

struct ocl_timer {
	struct ocl_timer *next;
	cl_event first, last; /* NULL until a command was issued */
};

/*===----------------------------------------------------------------------===
 * Queues
 *===----------------------------------------------------------------------===*/

static void ocl_server_queue_destroy(void *device, void *queue);

/* A queue: over |native| (retained) when it is not NULL, |profiling|
 * saying whether that one has CL_QUEUE_PROFILING_ENABLE; else over a new
 * profiling queue. */
static wafer_status queue_make(struct ocl_device *dev,
			       cl_command_queue native, int native_profiling,
			       void **out_queue)
{
	const struct wafer_host_services *host = ocl_host(dev);
	size_t slots = ocl_kernel_slot_count();
	struct ocl_queue *q;
	cl_int err;

	*out_queue = NULL;
	q = calloc(1, sizeof *q);
	if (q) {
		q->kernels = calloc(slots, sizeof *q->kernels);
		q->kernel_wg = calloc(slots, sizeof *q->kernel_wg);
	}
	if (!q || !q->kernels || !q->kernel_wg) {
		if (q) {
			free(q->kernels);
			free(q->kernel_wg);
		}
		free(q);
		host->set_error(OCL_NAME ": cannot allocate a queue");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	q->device = dev;
	q->profiling = 1;
	if (native) {
		clRetainCommandQueue(native);
		q->queue = native;
		q->profiling = native_profiling;
		*out_queue = q;
		return WAFER_OK;
	}
	q->queue = clCreateCommandQueue(dev->context, dev->entry->id,
					CL_QUEUE_PROFILING_ENABLE, &err);
	if (!q->queue) {
		ocl_server_queue_destroy(dev, q);
		return ocl_fail(host, err,
				"clCreateCommandQueue(%s, profiling)",
				dev->entry->name);
	}
	*out_queue = q;
	return WAFER_OK;
}

static wafer_status ocl_server_queue_create(void *device, void **out_queue)
{
	return queue_make(device, NULL, 0, out_queue);
}

static void ocl_server_queue_destroy(void *device, void *queue)
{
	struct ocl_queue *q = queue;
	size_t slots = ocl_kernel_slot_count();

	if (q->queue)
		clFinish(q->queue);
	ocl_staging_destroy(q);
	while (q->timers) {
		struct ocl_timer *t = q->timers;
		q->timers = t->next;
		if (t->first)
			clReleaseEvent(t->first);
		if (t->last)
			clReleaseEvent(t->last);
		free(t);
	}
	for (size_t i = 0; i < slots; i++)
		if (q->kernels[i])
			clReleaseKernel(q->kernels[i]);
	if (q->queue)
		clReleaseCommandQueue(q->queue);
	free(q->kernels);
	free(q->kernel_wg);
	wafer_plugin_deferred_clear(&q->failed);
	free(q);
}

static wafer_status ocl_server_sync(void *device, void *queue)
{
	struct ocl_device *dev = device;
	struct ocl_queue *q = queue;
	cl_int err;

	err = clFinish(q->queue);
	ocl_staging_reap(q, 1);
	if (err != CL_SUCCESS) {
		wafer_plugin_deferred_clear(&q->failed);
		return ocl_fail(ocl_host(dev), err, "clFinish on %s",
				dev->entry->name);
	}
	return wafer_plugin_deferred_report(&q->failed, ocl_host(dev));
}

static wafer_status ocl_server_queue_native(void *device, void *queue,
					    struct wafer_native_queue *out)
{
	struct ocl_device *dev = device;
	struct ocl_queue *q = queue;

	out->kind = WAFER_NATIVE_OPENCL_MEM;
	out->queue = q->queue;
	out->context = dev->context;
	out->device_ordinal = 0;
	return WAFER_OK;
}

static wafer_status ocl_server_queue_wrap(void *device, void *native,
					  void **out_queue)
{
	struct ocl_device *dev = device;
	const struct wafer_host_services *host = ocl_host(dev);
	cl_command_queue cq = native;
	cl_context context = NULL;
	cl_device_id id = NULL;
	cl_command_queue_properties props = 0;
	cl_int err;

	*out_queue = NULL;
	err = clGetCommandQueueInfo(cq, CL_QUEUE_CONTEXT, sizeof context,
				    &context, NULL);
	if (err == CL_SUCCESS)
		err = clGetCommandQueueInfo(cq, CL_QUEUE_DEVICE, sizeof id, &id,
					    NULL);
	if (err == CL_SUCCESS)
		err = clGetCommandQueueInfo(cq, CL_QUEUE_PROPERTIES,
					    sizeof props, &props, NULL);
	if (err != CL_SUCCESS) {
		ocl_fail(host, err,
			 "queue_wrap: clGetCommandQueueInfo(cl_command_queue "
			 "%p)",
			 native);
		return err == CL_INVALID_COMMAND_QUEUE
			       ? WAFER_ERROR_INVALID_ARGUMENT
			       : ocl_status_of(err);
	}
	if (context != dev->context || id != dev->entry->id) {
		host->set_error(OCL_NAME ": queue_wrap: cl_command_queue %p is "
				"of cl_context %p and cl_device_id %p, not "
				"%s's (cl_context %p, cl_device_id %p)",
				native, (void *)context, (void *)id,
				dev->entry->name, (void *)dev->context,
				(void *)dev->entry->id);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	/* wafer's work on a queue relies on its order. */
	if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE) {
		host->set_error(OCL_NAME ": queue_wrap: cl_command_queue %p "
				"executes out of order; wafer needs an "
				"in-order queue",
				native);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	return queue_make(dev, cq, (props & CL_QUEUE_PROFILING_ENABLE) != 0,
			  out_queue);
}

/*===----------------------------------------------------------------------===
 * Launch
 *===----------------------------------------------------------------------===*/

static wafer_status ocl_server_launch(void *device, void *queue,
				      const struct wafer_launch *launch)
{
	struct ocl_queue *q = queue;

	/* Finished uploads give their ring space back as we go, so a long
	 * stream of launches and small writes never waits for it. */
	if (q->staging.count)
		ocl_staging_reap(q, 0);
	if (wafer_plugin_kernel_is_program(launch->kernel))
		return ocl_program_launch(q, launch);
	return ocl_kernels_launch(q, launch);
}

/*===----------------------------------------------------------------------===
 * Timers
 *===----------------------------------------------------------------------===*/

void ocl_queue_timed(struct ocl_queue *q, cl_event event)
{
	for (struct ocl_timer *t = q->timers; t; t = t->next) {
		if (!t->first) {
			clRetainEvent(event);
			t->first = event;
		}
		if (t->last)
			clReleaseEvent(t->last);
		clRetainEvent(event);
		t->last = event;
	}
}

wafer_status ocl_queue_done(struct ocl_queue *q, cl_event *ev)
{
	if (ev) {
		ocl_queue_timed(q, *ev);
		clReleaseEvent(*ev);
	}
	return WAFER_OK;
}

static wafer_status ocl_server_timer_begin(void *device, void *queue,
					   void **out_timer)
{
	struct ocl_device *dev = device;
	struct ocl_queue *q = queue;
	struct ocl_timer *t;

	*out_timer = NULL;
	if (!q->profiling) {
		ocl_host(dev)->set_error(
			OCL_NAME ": timers need a queue with "
			"CL_QUEUE_PROFILING_ENABLE; the caller's "
			"cl_command_queue %p has none",
			(void *)q->queue);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	t = calloc(1, sizeof *t);
	*out_timer = t;
	if (!t) {
		ocl_host(dev)->set_error(OCL_NAME ": cannot allocate a timer");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	t->next = q->timers;
	q->timers = t;
	return WAFER_OK;
}

/* Device nanoseconds from the start of |first| to the end of |last|,
 * after waiting for |last|. */
static wafer_status elapsed(struct ocl_device *dev, cl_event first,
			    cl_event last, uint64_t *out_ns)
{
	cl_ulong start = 0, end = 0;
	cl_int err;

	err = clWaitForEvents(1, &last);
	if (err != CL_SUCCESS)
		return ocl_fail(ocl_host(dev), err, "timer: clWaitForEvents");
	err = clGetEventProfilingInfo(first, CL_PROFILING_COMMAND_START,
				      sizeof start, &start, NULL);
	if (err == CL_SUCCESS)
		err = clGetEventProfilingInfo(last, CL_PROFILING_COMMAND_END,
					      sizeof end, &end, NULL);
	if (err != CL_SUCCESS)
		return ocl_fail(ocl_host(dev), err,
				"timer: clGetEventProfilingInfo");
	*out_ns = end > start ? end - start : 0;
	return WAFER_OK;
}

static wafer_status ocl_server_timer_end(void *device, void *queue,
					 void *timer, uint64_t *out_ns)
{
	struct ocl_queue *q = queue;
	struct ocl_timer *t = timer;
	wafer_status status = WAFER_OK;

	*out_ns = 0;
	for (struct ocl_timer **pp = &q->timers; *pp; pp = &(*pp)->next) {
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	}
	if (t->first) {
		status = elapsed(device, t->first, t->last, out_ns);
		clReleaseEvent(t->first);
		clReleaseEvent(t->last);
	}
	free(t);
	return status;
}

/*===----------------------------------------------------------------------===
 * The table
 *===----------------------------------------------------------------------===*/

const struct wafer_server_ops ocl_server_ops = {
	WAFER_PLUGIN_SERVER_OPS(ocl),
	WAFER_PLUGIN_TIMER_OPS(ocl),
	WAFER_PLUGIN_INTEROP_SERVER_OPS(ocl),
	WAFER_PLUGIN_PROGRAM_OPS(ocl),
	/* Events and host callbacks (event.c), recorded graphs (graph.c). */
	WAFER_PLUGIN_EVENT_OPS(ocl),
	WAFER_PLUGIN_GRAPH_OPS(ocl),
};
