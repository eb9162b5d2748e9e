/* wafer — SPDX-License-Identifier: MIT
 *
 * server.c: the cpu plugin's wafer_server_ops — queues, launch, sync and
 * timers.
 *
 * The cpu backend is synchronous: launch runs the kernel to completion
 * (spread over the device's thread pool) before it returns, so a queue has
 * nothing to hold but the first error of a kernel that failed while
 * running. plugin.h lets launch return before the kernel ran and report
 * such errors at the next sync; an asynchronous backend must work that way,
 * and the cpu backend keeps the same contract so the core sees one
 * behaviour. A parameter block that reaches past its bindings is found
 * before anything runs and is returned by launch at once. */
#include "build-config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "plugins/cpu/cpu_plugin.h"
#include "plugins/cpu/graph.h"
#include "plugins/cpu/kernels.h"

struct cpu_queue {
	/* Failures of kernels that ran; sync returns the first with its
	 * detail and forgets them. */
	struct wafer_plugin_deferred failed;
	/* Between graph_begin and graph_end: where launches go instead of
	 * running (graph.h). */
	struct cpu_graph *recording;
};

struct cpu_timer {
	uint64_t start_ns;
};

/*===----------------------------------------------------------------------===
 * Queues
 *===----------------------------------------------------------------------===*/

static wafer_status cpu_server_queue_create(void *device, void **out_queue)
{
	struct cpu_device *dev = device;
	struct cpu_queue *queue = calloc(1, sizeof *queue);

	*out_queue = queue;
	if (!queue) {
		dev->state->host->set_error("cpu: cannot allocate a queue");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	return WAFER_OK;
}

static void cpu_server_queue_destroy(void *device, void *queue)
{
	struct cpu_queue *q = queue;

	if (q) {
		wafer_plugin_deferred_clear(&q->failed);
		cpu_graph_free(q->recording);
	}
	free(q);
}

static wafer_status cpu_server_sync(void *device, void *queue)
{
	struct cpu_device *dev = device;
	struct cpu_queue *q = queue;

	return wafer_plugin_deferred_report(&q->failed, dev->state->host);
}

/* Interop: there is no native queue on cpu. Work runs in order on the
 * thread that runs the client's commands, so the queue is NULL (with the
 * kind of the device's buffers), and a caller's queue cannot be wrapped:
 * wafer_client_open with a native_queue fails here. */
static wafer_status cpu_server_queue_native(void *device, void *queue,
					    struct wafer_native_queue *out)
{
	out->kind = WAFER_NATIVE_HOST_POINTER;
	out->queue = NULL;
	out->context = NULL;
	out->device_ordinal = 0;
	return WAFER_OK;
}

static wafer_status cpu_server_queue_wrap(void *device, void *native,
					  void **out_queue)
{
	struct cpu_device *dev = device;

	*out_queue = NULL;
	dev->state->host->set_error("cpu: no native queue to wrap (%p): cpu "
				    "work runs on the client's own thread and "
				    "wafer_client_native_queue gives NULL; "
				    "open the client without native_queue",
				    native);
	return WAFER_ERROR_NOT_SUPPORTED;
}

/*===----------------------------------------------------------------------===
 * Launch
 *===----------------------------------------------------------------------===*/

/* Fills |args| for |launch|. The core checked the launch against the
 * kernel's table entry before calling (plugin.h: kernel identity, binding
 * count, parameter size, bindings inside their handles and aligned), so
 * only what the core cannot know is checked here: how far the parameter
 * block reaches into the bindings (the kernel's own check, or |count|
 * elements of every binding). A plugin built with -DWAFER_PLUGIN_DEBUG
 * checks the core's part again. Every failure here is the caller's and
 * nothing has run. */
static wafer_status prepare_launch(struct cpu_device *dev,
				   const struct wafer_launch *launch,
				   struct cpu_kernel_args *args)
{
	const struct wafer_host_services *host = dev->state->host;
	const struct wafer_kernel *entry = launch->kernel;
	const struct cpu_kernel_impl *impl = entry->impl;
	wafer_status status;

	status = WAFER_PLUGIN_DEBUG_CHECK_LAUNCH(host, "cpu", launch,
						 CPU_ALIGNMENT);
	if (status != WAFER_OK)
		return status;
	args->binding_count = entry->binding_count;
	args->params = launch->params;
	args->pool = dev->pool;
	args->reach = (struct wafer_plugin_reach){
		.host = host,
		.plugin = "cpu",
		.kernel = entry->op,
		.sizes = args->size,
		.binding_count = entry->binding_count,
	};
	for (uint32_t i = 0; i < entry->binding_count; i++) {
		const struct wafer_binding *b =
			wafer_plugin_array_at(launch->bindings, i);
		args->data[i] = (char *)cpu_resource_ptr(b->resource) + b->offset;
		args->size[i] = b->size;
	}
	if (impl->check)
		return impl->check(args);
	return wafer_plugin_check_count(&args->reach, impl->count(args->params),
					impl->element_size);
}

/* A launch while |q| records a graph: prepared and checked now, run at
 * each replay. Program kernels are not recorded (the core then replays
 * the run of launches itself). */
static wafer_status record_launch(struct cpu_device *dev, struct cpu_queue *q,
				  const struct wafer_launch *launch)
{
	const struct wafer_kernel *entry = launch->kernel;
	struct cpu_kernel_args args;
	wafer_status status;

	if (wafer_plugin_kernel_is_program(entry)) {
		dev->state->host->set_error("cpu: graphs record catalogue "
					    "kernels only, not %s",
					    entry->op);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	status = prepare_launch(dev, launch, &args);
	if (status == WAFER_OK)
		status = cpu_graph_record(q->recording, entry->impl, &args,
					  launch->params_size);
	if (status == WAFER_ERROR_OUT_OF_MEMORY)
		dev->state->host->set_error("cpu: out of memory recording a "
					    "graph");
	return status;
}

static wafer_status cpu_server_launch(void *device, void *queue,
				      const struct wafer_launch *launch)
{
	const struct wafer_kernel *entry = launch->kernel;
	const struct cpu_kernel_impl *impl = entry->impl;
	struct cpu_kernel_args args;
	wafer_status status;

	struct cpu_queue *q = queue;
	if (q->recording)
		return record_launch(device, q, launch);
	if (wafer_plugin_kernel_is_program(entry))
		return cpu_program_launch(device, launch);
	status = prepare_launch(device, launch, &args);
	if (status != WAFER_OK)
		return status;
	status = impl->run(&args);
	if (status != WAFER_OK)
		wafer_plugin_deferred_set(&((struct cpu_queue *)queue)->failed,
					  status,
					  "cpu: kernel %s (%s) failed while "
					  "running",
					  entry->op, entry->variant);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Native graphs (ABI 1.6): lists of prepared launches (graph.h)
 *===----------------------------------------------------------------------===*/

static wafer_status cpu_server_graph_begin(void *device, void *queue)
{
	struct cpu_device *dev = device;
	struct cpu_queue *q = queue;

	if (q->recording) {
		dev->state->host->set_error("cpu: graph_begin: the queue "
					    "records already");
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	q->recording = cpu_graph_new();
	if (!q->recording) {
		dev->state->host->set_error("cpu: graph_begin: out of memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	return WAFER_OK;
}

static wafer_status cpu_server_graph_end(void *device, void *queue,
					 void **out_graph)
{
	struct cpu_queue *q = queue;
	(void)device;

	*out_graph = q->recording;
	cpu_graph_seal(q->recording);
	q->recording = NULL;
	return WAFER_OK;
}

/* As a launch: a kernel's failure is the queue's, for its next sync. */
static wafer_status cpu_server_graph_launch(void *device, void *queue,
					    void *graph)
{
	struct cpu_queue *q = queue;
	const char *kernel = NULL;
	(void)device;

	wafer_status status = cpu_graph_run(graph, &kernel);
	if (status != WAFER_OK)
		wafer_plugin_deferred_set(&q->failed, status,
					  "cpu: kernel %s of a graph failed "
					  "while running",
					  kernel);
	return WAFER_OK;
}

static void cpu_server_graph_destroy(void *device, void *graph)
{
	(void)device;
	cpu_graph_free(graph);
}

/*===----------------------------------------------------------------------===
 * Timers
 *===----------------------------------------------------------------------===*/

/* Host time is device time here (cpu_now_ns): launches and copies have
 * finished when they return, so the interval between two points on the
 * calling thread is exactly the work issued between them. */

static wafer_status cpu_server_timer_begin(void *device, void *queue,
					   void **out_timer)
{
	struct cpu_device *dev = device;
	struct cpu_timer *timer = malloc(sizeof *timer);

	*out_timer = timer;
	if (!timer) {
		dev->state->host->set_error("cpu: cannot allocate a timer");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	timer->start_ns = cpu_now_ns();
	return WAFER_OK;
}

static wafer_status cpu_server_timer_end(void *device, void *queue,
					 void *timer, uint64_t *out_ns)
{
	struct cpu_timer *t = timer;

	*out_ns = cpu_now_ns() - t->start_ns;
	free(t);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The table
 *===----------------------------------------------------------------------===*/

#define CPU_SERVER_OPS_LOCAL                                                   \
	WAFER_PLUGIN_SERVER_OPS(cpu), .timer_begin = cpu_server_timer_begin,   \
	.timer_end = cpu_server_timer_end, WAFER_PLUGIN_PROGRAM_OPS(cpu),      \
	.queue_native = cpu_server_queue_native,                               \
	.queue_wrap = cpu_server_queue_wrap, .event_create = cpu_event_create, \
	.event_destroy = cpu_event_destroy, .event_record = cpu_event_record, \
	.queue_wait_event = cpu_queue_wait_event,                              \
	.event_sync = cpu_event_sync, .event_query = cpu_event_query,          \
	.event_elapsed = cpu_event_elapsed,                                    \
	.queue_callback = cpu_queue_callback,                                  \
	.graph_begin = cpu_server_graph_begin,                                 \
	.graph_end = cpu_server_graph_end,                                     \
	.graph_launch = cpu_server_graph_launch,                               \
	.graph_destroy = cpu_server_graph_destroy

const struct wafer_server_ops cpu_server_ops = {
	CPU_SERVER_OPS_LOCAL,
	.comm_id = cpu_comm_id,
	.comm_open = cpu_comm_open,
	.comm_close = cpu_comm_close,
	.comm_run = cpu_comm_run,
};

/* Where cpu-mpi.so is not installed (plugin.c). */
const struct wafer_server_ops cpu_server_ops_without_comm = {
	CPU_SERVER_OPS_LOCAL,
};
