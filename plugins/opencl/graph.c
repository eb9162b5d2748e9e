/* wafer — SPDX-License-Identifier: MIT
 *
 * graph.c: the OpenCL plugin's native graphs (ABI 1.6) through
 * cl_khr_command_buffer, where the device has it with simultaneous use
 * (PoCL 3.x does; a replay may be enqueued before the last one ran).
 * graph_begin makes a command buffer on the queue; while it exists every
 * command the plugin would enqueue on that queue (kernels, fills, buffer
 * copies) is recorded into it instead (ocl_enqueue_*, the one place the
 * plugin's commands go through); graph_end finalizes it, and a replay is
 * one clEnqueueCommandBufferKHR on the queue it runs on (a queue of the
 * same device and properties, as the plugin's queues all are). Kernel
 * arguments are captured when a command is recorded. CLBlast enqueues on
 * its own and is not recorded: the core then replays that run itself. */
#include "build-config.h"

#include <stdlib.h>
#include <string.h>

#include "plugins/opencl/ocl_plugin.h"

#define GET(dev, name)                                                         \
	((name##_fn)clGetExtensionFunctionAddressForPlatform(                  \
		(dev)->entry->platform, #name))

void ocl_graph_probe(struct ocl_device *dev)
{
	struct ocl_command_buffers *cb = &dev->command_buffers;
	cl_device_command_buffer_capabilities_khr caps = 0;
	char *extensions = NULL;
	size_t need = 0;
	int listed = 0;

	memset(cb, 0, sizeof *cb);
	if (clGetDeviceInfo(dev->entry->id, CL_DEVICE_EXTENSIONS, 0, NULL,
			    &need) == CL_SUCCESS &&
	    need && (extensions = malloc(need)) &&
	    clGetDeviceInfo(dev->entry->id, CL_DEVICE_EXTENSIONS, need,
			    extensions, NULL) == CL_SUCCESS)
		listed = ocl_has_extension(extensions, "cl_khr_command_buffer");
	free(extensions);
	if (!listed)
		return;
	if (clGetDeviceInfo(dev->entry->id, CL_DEVICE_COMMAND_BUFFER_CAPABILITIES_KHR,
			    sizeof caps, &caps, NULL) != CL_SUCCESS ||
	    !(caps & CL_COMMAND_BUFFER_CAPABILITY_SIMULTANEOUS_USE_KHR))
		return;
	cb->create = GET(dev, clCreateCommandBufferKHR);
	cb->finalize = GET(dev, clFinalizeCommandBufferKHR);
	cb->release = GET(dev, clReleaseCommandBufferKHR);
	cb->enqueue = GET(dev, clEnqueueCommandBufferKHR);
	cb->ndrange = GET(dev, clCommandNDRangeKernelKHR);
	cb->fill = GET(dev, clCommandFillBufferKHR);
	cb->copy = GET(dev, clCommandCopyBufferKHR);
	cb->available = cb->create && cb->finalize && cb->release &&
			cb->enqueue && cb->ndrange && cb->fill && cb->copy;
}

/*===----------------------------------------------------------------------===
 * Every command of the plugin: enqueued, or recorded
 *===----------------------------------------------------------------------===*/

cl_int ocl_enqueue_ndrange(struct ocl_queue *q, cl_kernel kernel,
			   cl_uint dims, const size_t *global,
			   const size_t *local, cl_event *ev)
{
	if (q->recording)
		return q->device->command_buffers.ndrange(
			q->recording, NULL, NULL, kernel, dims, NULL, global,
			local, 0, NULL, NULL, NULL);
	return clEnqueueNDRangeKernel(q->queue, kernel, dims, NULL, global,
				      local, 0, NULL, ev);
}

cl_int ocl_enqueue_fill(struct ocl_queue *q, cl_mem mem, const void *pattern,
			size_t pattern_size, size_t offset, size_t size,
			cl_event *ev)
{
	if (q->recording)
		return q->device->command_buffers.fill(
			q->recording, NULL, mem, pattern, pattern_size, offset,
			size, 0, NULL, NULL, NULL);
	return clEnqueueFillBuffer(q->queue, mem, pattern, pattern_size,
				   offset, size, 0, NULL, ev);
}

cl_int ocl_enqueue_copy(struct ocl_queue *q, cl_mem src, cl_mem dst,
			size_t src_offset, size_t dst_offset, size_t size,
			cl_event *ev)
{
	if (q->recording)
		return q->device->command_buffers.copy(
			q->recording, NULL, src, dst, src_offset, dst_offset,
			size, 0, NULL, NULL, NULL);
	return clEnqueueCopyBuffer(q->queue, src, dst, src_offset, dst_offset,
				   size, 0, NULL, ev);
}

/*===----------------------------------------------------------------------===
 * The graph entries
 *===----------------------------------------------------------------------===*/

wafer_status ocl_graph_begin(void *device, void *queue)
{
	struct ocl_device *dev = device;
	struct ocl_queue *q = queue;
	const struct ocl_command_buffers *cb = &dev->command_buffers;
	cl_command_buffer_properties_khr props[] = {
		CL_COMMAND_BUFFER_FLAGS_KHR,
		CL_COMMAND_BUFFER_SIMULTANEOUS_USE_KHR, 0};
	cl_int err;

	if (!cb->available) {
		ocl_host(dev)->set_error(
			OCL_NAME ": %s has no cl_khr_command_buffer with "
				 "simultaneous use: the core replays graphs",
			dev->entry->name);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	if (q->recording) {
		ocl_host(dev)->set_error(OCL_NAME ": graph_begin: the queue "
						  "records already");
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	q->recording = cb->create(1, &q->queue, props, &err);
	if (!q->recording)
		return ocl_fail(ocl_host(dev), err, "clCreateCommandBufferKHR");
	return WAFER_OK;
}

wafer_status ocl_graph_end(void *device, void *queue, void **out_graph)
{
	struct ocl_device *dev = device;
	struct ocl_queue *q = queue;
	cl_command_buffer_khr buffer = q->recording;
	cl_int err;

	*out_graph = NULL;
	q->recording = NULL;
	err = dev->command_buffers.finalize(buffer);
	if (err != CL_SUCCESS) {
		dev->command_buffers.release(buffer);
		return ocl_fail(ocl_host(dev), err,
				"clFinalizeCommandBufferKHR");
	}
	*out_graph = buffer;
	return WAFER_OK;
}

wafer_status ocl_graph_launch(void *device, void *queue, void *graph)
{
	struct ocl_device *dev = device;
	struct ocl_queue *q = queue;
	cl_event event, *ev = ocl_queue_timing(q) ? &event : NULL;
	cl_int err = dev->command_buffers.enqueue(1, &q->queue, graph, 0, NULL,
						  ev);

	if (err != CL_SUCCESS)
		return ocl_fail(ocl_host(dev), err,
				"clEnqueueCommandBufferKHR");
	return ocl_queue_done(q, ev);
}

/* OpenCL frees a command buffer once its enqueued instances finished. */
void ocl_graph_destroy(void *device, void *graph)
{
	struct ocl_device *dev = device;

	if (graph)
		dev->command_buffers.release(graph);
}
