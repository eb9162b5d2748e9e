/* wafer — SPDX-License-Identifier: MIT
 *
 * server.c: the cpu plugin's wafer_server_ops — queues, launch, sync and
 * timers.
 *
 * Each queue is a worker thread (queue.c): launch checks the launch on
 * the calling thread, returns what is wrong with it at once, and leaves
 * the kernel to the queue's worker; a kernel that fails while running is
 * reported by the queue's next sync, as plugin.h asks of every backend. */
#include "build-config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cpu/cpu_plugin.h"
#include "plugins/cpu/graph.h"
#include "plugins/cpu/kernels.h"

struct cpu_timer {
	uint64_t start_ns;
};

/*===----------------------------------------------------------------------===
 * Queues
 *===----------------------------------------------------------------------===*/

static wafer_status cpu_server_queue_create(void *device, void **out_queue)
{
	return cpu_queue_new(device, (struct cpu_queue **)out_queue);
}

static void cpu_server_queue_destroy(void *device, void *queue)
{
	struct cpu_queue *q = queue;

	(void)device;
	if (q) {
		cpu_graph_free(q->recording);
		cpu_queue_free(q);
	}
}

static wafer_status cpu_server_sync(void *device, void *queue)
{
	(void)device;
	return cpu_queue_report(queue);
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

/* A launch on a queue's worker: its arguments with the parameter block
 * copied, since the caller's is gone by the time the kernel runs. */
struct launch_task {
	struct cpu_task task;
	const struct wafer_kernel *entry;
	struct cpu_kernel_args args;
	max_align_t params[]; /* the parameter block */
};

static void run_launch(struct cpu_task *task, struct cpu_queue *queue)
{
	struct launch_task *t = (struct launch_task *)task;
	const struct cpu_kernel_impl *impl = t->entry->impl;
	wafer_status status = impl->run(&t->args);

	if (status != WAFER_OK)
		cpu_queue_fail(queue, status, t->entry->op, t->entry->variant);
	free(t);
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
	struct cpu_device *dev = device;
	wafer_status status;

	struct cpu_queue *q = queue;
	if (q->recording)
		return record_launch(device, q, launch);
	/* The caller's programs run on the calling thread, after the
	 * queue's earlier work (program.c). */
	if (wafer_plugin_kernel_is_program(entry)) {
		cpu_queue_drain(queue);
		return cpu_program_launch(device, launch);
	}
	struct launch_task *t = cpu_queue_inline(queue)
					? NULL
					: malloc(sizeof *t + launch->params_size);
	if (!t) {
		/* The device's only queue, idle (cpu_queue_inline), or no
		 * memory for a task: the kernel runs here, after the queue's
		 * earlier work (a launch never fails for want of host
		 * memory). */
		struct cpu_kernel_args args;
		status = prepare_launch(dev, launch, &args);
		if (status != WAFER_OK)
			return status;
		cpu_queue_drain(queue);
		status = ((const struct cpu_kernel_impl *)entry->impl)->run(&args);
		if (status != WAFER_OK)
			cpu_queue_fail(queue, status, entry->op, entry->variant);
		return WAFER_OK;
	}
	status = prepare_launch(dev, launch, &t->args);
	if (status != WAFER_OK) {
		free(t);
		return status;
	}
	if (launch->params_size)
		memcpy(t->params, launch->params, launch->params_size);
	t->args.params = t->params;
	t->args.reach.sizes = t->args.size;
	t->entry = entry;
	t->task.run = run_launch;
	cpu_queue_push(queue, &t->task);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Native graphs (ABI 1.6): lists of prepared launches (graph.h)
 *===----------------------------------------------------------------------===*/

static wafer_status cpu_graph_begin(void *device, void *queue)
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

static wafer_status cpu_graph_end(void *device, void *queue,
					 void **out_graph)
{
	struct cpu_queue *q = queue;
	(void)device;

	*out_graph = q->recording;
	cpu_graph_seal(q->recording);
	q->recording = NULL;
	return WAFER_OK;
}

/* As a launch: a kernel's failure is the queue's, for its next sync. A
 * replay runs on the calling thread once the queue's earlier work has
 * run (the graph may be destroyed as soon as the call returns). */
static wafer_status cpu_graph_launch(void *device, void *queue,
					    void *graph)
{
	struct cpu_queue *q = queue;
	const char *kernel = NULL;
	(void)device;

	cpu_queue_drain(q);
	wafer_status status = cpu_graph_run(graph, &kernel);
	if (status != WAFER_OK)
		cpu_queue_fail(q, status, "a graph's kernel", kernel);
	return WAFER_OK;
}

static void cpu_graph_destroy(void *device, void *graph)
{
	(void)device;
	cpu_graph_free(graph);
}

/*===----------------------------------------------------------------------===
 * Timers
 *===----------------------------------------------------------------------===*/

/* Host time is device time here (cpu_now_ns). Each end of a timer
 * drains the queue first, so the interval is exactly the work issued
 * between them (timing costs the overlap of the calling thread). */

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
	cpu_queue_drain(queue);
	timer->start_ns = cpu_now_ns();
	return WAFER_OK;
}

static wafer_status cpu_server_timer_end(void *device, void *queue,
					 void *timer, uint64_t *out_ns)
{
	struct cpu_timer *t = timer;

	cpu_queue_drain(queue);
	*out_ns = cpu_now_ns() - t->start_ns;
	free(t);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The table
 *===----------------------------------------------------------------------===*/

#define CPU_SERVER_OPS_LOCAL                                                   \
	WAFER_PLUGIN_SERVER_OPS(cpu), WAFER_PLUGIN_TIMER_OPS(cpu),             \
		WAFER_PLUGIN_PROGRAM_OPS(cpu),                                 \
		WAFER_PLUGIN_INTEROP_SERVER_OPS(cpu),                          \
		WAFER_PLUGIN_EVENT_OPS(cpu), WAFER_PLUGIN_GRAPH_OPS(cpu)

const struct wafer_server_ops cpu_server_ops = {
	CPU_SERVER_OPS_LOCAL,
	.comm_id = cpu_comm_id,
	.comm_open = cpu_comm_open,
	.comm_close = cpu_comm_close,
	.comm_run = cpu_comm_run,
	.comm_split = cpu_comm_split,
};

/* Where cpu-mpi.so is not installed (plugin.c). */
const struct wafer_server_ops cpu_server_ops_without_comm = {
	CPU_SERVER_OPS_LOCAL,
};
