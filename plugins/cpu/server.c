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
 * behaviour. Mistakes in the launch itself (unknown kernel, wrong bindings)
 * are found before anything runs and are returned by launch at once. */
#include "build-config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "plugins/cpu/cpu_plugin.h"
#include "plugins/cpu/kernels.h"

struct cpu_queue {
	/* Failures of kernels that ran; sync returns the first with its
	 * detail and forgets them. */
	struct wafer_plugin_deferred failed;
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

	if (q)
		wafer_plugin_deferred_clear(&q->failed);
	free(q);
}

static wafer_status cpu_server_sync(void *device, void *queue)
{
	struct cpu_device *dev = device;
	struct cpu_queue *q = queue;

	return wafer_plugin_deferred_report(&q->failed, dev->state->host);
}

/*===----------------------------------------------------------------------===
 * Launch
 *===----------------------------------------------------------------------===*/

/* Resolves binding |i| of |launch| into |args|: a host address and a size.
 * |name| is the kernel's, for the error text. */
static wafer_status resolve_binding(const struct wafer_host_services *host,
				    const struct wafer_launch *launch,
				    uint32_t i, const char *name,
				    struct cpu_kernel_args *args)
{
	const struct wafer_binding *b = wafer_plugin_array_at(launch->bindings, i);

	if (!WAFER_STRUCT_HAS(b, struct wafer_binding, size) || !b->resource) {
		host->set_error("cpu: launch %s: binding %" PRIu32
				" is malformed or names no resource",
				name, i);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (b->offset % CPU_ALIGNMENT) {
		host->set_error("cpu: launch %s: binding %" PRIu32
				" offset %zu is not a multiple of %d",
				name, i, b->offset, CPU_ALIGNMENT);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	args->data[i] = (char *)cpu_resource_ptr(b->resource) + b->offset;
	args->size[i] = b->size;
	return WAFER_OK;
}

/* Checks that every binding holds what the parameters reach: the
 * kernel's own check, or the common one (count elements of every
 * binding). */
static wafer_status check_counts(const struct wafer_host_services *host,
				 const struct cpu_kernel_impl *impl,
				 const char *name,
				 const struct cpu_kernel_args *args)
{
	char why[192];

	if (impl->check) {
		wafer_status status = impl->check(args, why, sizeof why);
		if (status != WAFER_OK)
			host->set_error("cpu: launch %s: %s", name, why);
		return status;
	}

	uint64_t count = impl->count(args->params);

	for (uint32_t i = 0; i < args->binding_count; i++) {
		if (count <= args->size[i] / impl->element_size)
			continue;
		host->set_error("cpu: launch %s: binding %" PRIu32
				" holds %zu bytes, too few for %" PRIu64
				" elements",
				name, i, args->size[i], count);
		return WAFER_ERROR_OUT_OF_RANGE;
	}
	return WAFER_OK;
}

/* Checks |launch| against our own table entry for its kernel and fills
 * |args|. Every failure here is the caller's and nothing has run. */
static wafer_status prepare_launch(struct cpu_device *dev,
				   const struct wafer_launch *launch,
				   const struct wafer_kernel **out_entry,
				   struct cpu_kernel_args *args)
{
	const struct wafer_host_services *host = dev->state->host;
	const struct wafer_kernel *entry = NULL;
	wafer_status status;

	if (launch &&
	    WAFER_STRUCT_HAS(launch, struct wafer_launch, params_size) &&
	    launch->kernel)
		entry = cpu_kernel_find(launch->kernel);
	*out_entry = entry;
	if (!entry) {
		host->set_error("cpu: launch: no launch, or a kernel that is "
				"not from the cpu plugin's table");
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (launch->binding_count != entry->binding_count ||
	    !launch->bindings) {
		host->set_error("cpu: launch %s: takes %" PRIu32
				" bindings, got %" PRIu32,
				entry->op, entry->binding_count,
				launch->bindings ? launch->binding_count : 0);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	if (launch->params_size != entry->params_size ||
	    (entry->params_size && !launch->params)) {
		host->set_error("cpu: launch %s: takes a %zu-byte parameter "
				"block, got %zu bytes",
				entry->op, entry->params_size,
				launch->params ? launch->params_size : 0);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}

	args->binding_count = entry->binding_count;
	args->params = launch->params;
	args->pool = dev->pool;
	for (uint32_t i = 0; i < entry->binding_count; i++) {
		status = resolve_binding(host, launch, i, entry->op, args);
		if (status != WAFER_OK)
			return status;
	}
	return check_counts(host, entry->impl, entry->op, args);
}

static wafer_status cpu_server_launch(void *device, void *queue,
				      const struct wafer_launch *launch)
{
	const struct wafer_kernel *entry;
	const struct cpu_kernel_impl *impl;
	struct cpu_kernel_args args;
	wafer_status status;

	status = prepare_launch(device, launch, &entry, &args);
	if (status != WAFER_OK)
		return status;

	impl = entry->impl;
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
 * Timers
 *===----------------------------------------------------------------------===*/

/* Host time is device time here: launches and copies have finished when
 * they return, so the interval between two points on the calling thread is
 * exactly the work issued between them. */
static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * UINT64_C(1000000000) +
	       (uint64_t)ts.tv_nsec;
}

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
	timer->start_ns = now_ns();
	return WAFER_OK;
}

static wafer_status cpu_server_timer_end(void *device, void *queue,
					 void *timer, uint64_t *out_ns)
{
	struct cpu_timer *t = timer;

	*out_ns = now_ns() - t->start_ns;
	free(t);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The table
 *===----------------------------------------------------------------------===*/

const struct wafer_server_ops cpu_server_ops = {
	.struct_size = sizeof(struct wafer_server_ops),
	.queue_create = cpu_server_queue_create,
	.queue_destroy = cpu_server_queue_destroy,
	.launch = cpu_server_launch,
	.sync = cpu_server_sync,
	.timer_begin = cpu_server_timer_begin,
	.timer_end = cpu_server_timer_end,
};
