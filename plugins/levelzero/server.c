/* wafer — SPDX-License-Identifier: MIT
 *
 * server.c: the Level Zero plugin's wafer_server_ops — queues, launch,
 * sync and timers — and the queue helpers storage.c's copies use.
 *
 * A queue is one command list on the device's compute queue group:
 *  - an immediate command list where the driver creates one (commands run
 *    as they are appended); a wait appends a barrier that signals the
 *    queue's event and waits for that event on the host;
 *  - otherwise (or with `immediate = no`) a command queue and a regular
 *    command list: commands collect in the list, and a wait closes it,
 *    executes it on the queue, waits for the queue and resets the list.
 * Commands in one Level Zero command list may overlap unless a barrier
 * separates them, while a wafer queue is in order: every command after
 * the first since a wait is preceded by a barrier.
 *
 * With regular lists, work that another queue or the host waits on
 * through an event (event.c) must reach the device before wafer waits on
 * its own queue, or the waiter would wait forever: lz_queue_submit hands
 * the list to the command queue there and then, and the queue's next
 * commands go into another list (a spare one, reset at the next wait).
 *
 * A wait also finishes the host side of the copies issued before it (a
 * download's bytes go from staging to the caller) and resets the staging
 * area. Errors a wait finds are the queue's until the next sync returns
 * them (plugin.h: launch may return before the kernel ran).
 *
 * Timers use kernel-timestamp events: timer_begin appends a barrier that
 * signals one, timer_end another; the interval is between the two
 * barriers' end timestamps on the device's global clock.
 *
 * Interop (ABI 1.3): queue_native hands out the queue's command list —
 * the immediate one, or with `immediate = no` the regular one, which runs
 * only when wafer next waits on the queue (wafer_sync, a read) — after
 * appending a barrier, so that what the caller appends next runs after
 * wafer's work; wafer's next command is again preceded by a barrier, and
 * the next wait covers what the caller appended. queue_wrap is refused
 * (WAFER_ERROR_NOT_SUPPORTED): the Level Zero 1.4 API this plugin is
 * built against cannot tell an immediate command list from a regular
 * one, nor name a list's context or device (zeCommandListIsImmediate and
 * zeCommandListGetContextHandle came in 1.9), and wafer cannot wait on a
 * regular list the caller executes itself: a wrong guess would hang. */
#include "build-config.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/levelzero/kernels.h"
#include "plugins/levelzero/lz_plugin.h"

struct lz_timer {
	ze_event_pool_handle_t pool;
	ze_event_handle_t begin, end;
};

/*===----------------------------------------------------------------------===
 * Waiting
 *===----------------------------------------------------------------------===*/

/* Resets the lists |q| handed over since its last wait, for reuse. The
 * first failure is kept in |*r| (with |*what|). */
static void reset_submitted(struct lz_queue *q, ze_result_t *r,
			    const char **what)
{
	for (size_t i = 0; i < q->submitted.count; i++) {
		ze_command_list_handle_t list = q->submitted.list[i];
		ze_result_t reset = zeCommandListReset(list);
		if (reset == ZE_RESULT_SUCCESS &&
		    q->spare.count < q->spare.cap) {
			q->spare.list[q->spare.count++] = list;
			continue;
		}
		zeCommandListDestroy(list);
		if (*r == ZE_RESULT_SUCCESS && reset != ZE_RESULT_SUCCESS) {
			*what = "zeCommandListReset";
			*r = reset;
		}
	}
	q->submitted.count = 0;
}

/* Lets the device run what was appended and waits for all of it. */
static ze_result_t submit_and_wait(struct lz_queue *q, const char **out_what)
{
	ze_result_t r = ZE_RESULT_SUCCESS;

	if (q->cq) {
		if (q->unsubmitted) {
			*out_what = "zeCommandListClose";
			r = zeCommandListClose(q->list);
			if (r == ZE_RESULT_SUCCESS) {
				*out_what = "zeCommandQueueExecuteCommandLists";
				r = zeCommandQueueExecuteCommandLists(
					q->cq, 1, &q->list, NULL);
			}
		}
		if (r == ZE_RESULT_SUCCESS) {
			*out_what = "zeCommandQueueSynchronize";
			r = zeCommandQueueSynchronize(q->cq, UINT64_MAX);
		}
		/* Reset even after a failure, so the list takes commands
		 * again; the first failure is what is reported. */
		if (q->unsubmitted) {
			ze_result_t reset = zeCommandListReset(q->list);
			if (r == ZE_RESULT_SUCCESS &&
			    reset != ZE_RESULT_SUCCESS) {
				*out_what = "zeCommandListReset";
				r = reset;
			}
		}
		q->unsubmitted = false;
		reset_submitted(q, &r, out_what);
		return r;
	}
	*out_what = "zeEventHostReset";
	r = zeEventHostReset(lz_zevent_handle(q->sync_event));
	if (r == ZE_RESULT_SUCCESS) {
		*out_what = "zeCommandListAppendBarrier";
		r = zeCommandListAppendBarrier(
			q->list, lz_zevent_handle(q->sync_event), 0, NULL);
	}
	if (r == ZE_RESULT_SUCCESS) {
		*out_what = "zeEventHostSynchronize";
		r = zeEventHostSynchronize(lz_zevent_handle(q->sync_event),
					   UINT64_MAX);
	}
	/* The list waited for the graphs it launched; their queue is done
	 * with them too. */
	if (r == ZE_RESULT_SUCCESS && q->submitted.count) {
		*out_what = "zeCommandQueueSynchronize";
		r = zeCommandQueueSynchronize(q->graph_cq, UINT64_MAX);
	}
	reset_submitted(q, &r, out_what);
	return r;
}

/* Does the host side of every deferred action: first the downloads (their
 * staging may be a block that is freed below), then the frees. */
static void finish_pending(struct lz_device *dev, struct lz_queue *q,
			   bool copy)
{
	for (size_t i = 0; copy && i < q->pending_count; i++) {
		const struct lz_pending *p = &q->pending[i];
		if (p->dst)
			memcpy(p->dst, p->staged, p->size);
	}
	for (size_t i = 0; i < q->pending_count; i++) {
		const struct lz_pending *p = &q->pending[i];
		lz_host_free(dev, p->free_host);
		if (p->free_dev)
			zeMemFree(dev->context, p->free_dev);
	}
	q->pending_count = 0;
	q->staging_used = 0;
}

/* Waits for everything issued on |q| and finishes the copies. A failure
 * is kept for the next sync and also returned. After a failed wait the
 * downloads are not copied (their bytes are not known to be there), but
 * staging and temporaries are still released: the device is not running
 * anything of this queue any more, or is lost. */
wafer_status lz_queue_wait(struct lz_device *dev, struct lz_queue *q)
{
	const char *what = "";
	ze_result_t r = ZE_RESULT_SUCCESS;

	if (q->dirty)
		r = submit_and_wait(q, &what);
	q->dirty = false;
	q->need_barrier = false;
	finish_pending(dev, q, r == ZE_RESULT_SUCCESS);
	if (r != ZE_RESULT_SUCCESS)
		lz_queue_abandon_held(q);
	lz_queue_release_held(dev, q);
	if (r != ZE_RESULT_SUCCESS) {
		wafer_plugin_deferred_set(&q->failed, lz_status(r),
					  "levelzero: %s: %s", what,
			    lz_result_name(r));
		return lz_status(r);
	}
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Appending commands
 *===----------------------------------------------------------------------===*/

/* Orders the next command after the previous ones. */
static ze_result_t order(struct lz_queue *q)
{
	ze_result_t r = ZE_RESULT_SUCCESS;

	if (q->need_barrier)
		r = zeCommandListAppendBarrier(q->list, NULL, 0, NULL);
	if (r == ZE_RESULT_SUCCESS)
		q->need_barrier = false;
	return r;
}

void lz_queue_dirty(struct lz_queue *q)
{
	q->dirty = true;
	if (q->cq)
		q->unsubmitted = true;
}

/* Called after a command went in. */
static void appended(struct lz_queue *q)
{
	lz_queue_dirty(q);
	q->need_barrier = true;
}

wafer_status lz_queue_barrier(struct lz_device *dev, struct lz_queue *q,
			      ze_event_handle_t signal)
{
	ze_result_t r = zeCommandListAppendBarrier(q->list, signal, 0, NULL);

	if (r != ZE_RESULT_SUCCESS)
		return lz_fail(lz_host(dev), r, "zeCommandListAppendBarrier");
	lz_queue_dirty(q);
	q->need_barrier = false;
	return WAFER_OK;
}

/* Room for |n| lists in |l|. */
static wafer_status reserve_lists(struct lz_lists *l, size_t n)
{
	if (n <= l->cap)
		return WAFER_OK;
	size_t cap = 2 * n;
	ze_command_list_handle_t *grown = realloc(l->list, cap * sizeof *grown);
	if (!grown)
		return WAFER_ERROR_OUT_OF_MEMORY;
	l->list = grown;
	l->cap = cap;
	return WAFER_OK;
}

wafer_status lz_queue_take_list(struct lz_device *dev, struct lz_queue *q,
				ze_command_list_handle_t *out_list)
{
	ze_command_list_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC,
		.commandQueueGroupOrdinal = dev->compute_ordinal,
	};
	ze_result_t r;

	if (q->spare.count) {
		*out_list = q->spare.list[--q->spare.count];
		return WAFER_OK;
	}
	r = zeCommandListCreate(dev->context, dev->device, &desc, out_list);
	if (r != ZE_RESULT_SUCCESS) {
		*out_list = NULL;
		return lz_fail(lz_host(dev), r, "zeCommandListCreate");
	}
	return WAFER_OK;
}

/* Every list kept has room among the spares once reset (reset_submitted
 * moves them there), so that a wait never fails for want of memory. */
wafer_status lz_queue_keep_list(struct lz_device *dev, struct lz_queue *q,
				ze_command_list_handle_t list)
{
	size_t all = q->submitted.count + q->spare.count + 1;

	if (reserve_lists(&q->submitted, q->submitted.count + 1) != WAFER_OK ||
	    reserve_lists(&q->spare, all) != WAFER_OK) {
		lz_host(dev)->set_error("levelzero: out of host memory for a "
					"command list");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	q->submitted.list[q->submitted.count++] = list;
	return WAFER_OK;
}

wafer_status lz_queue_submit(struct lz_device *dev, struct lz_queue *q)
{
	ze_command_list_handle_t next;
	const char *what = "zeCommandListClose";
	wafer_status status;
	ze_result_t r;

	if (!q->cq || !q->unsubmitted)
		return WAFER_OK;
	status = lz_queue_take_list(dev, q, &next);
	if (status != WAFER_OK)
		return status;
	status = lz_queue_keep_list(dev, q, q->list);
	if (status != WAFER_OK) {
		q->spare.list[q->spare.count++] = next;
		return status;
	}
	r = zeCommandListClose(q->list);
	if (r == ZE_RESULT_SUCCESS) {
		what = "zeCommandQueueExecuteCommandLists";
		r = zeCommandQueueExecuteCommandLists(q->cq, 1, &q->list, NULL);
	}
	/* Either way the list is the next wait's to reset; on failure what
	 * it held is lost, as a failed wait loses it. */
	q->list = next;
	q->unsubmitted = false;
	q->need_barrier = true;
	if (r != ZE_RESULT_SUCCESS) {
		wafer_plugin_deferred_set(&q->failed, lz_status(r),
					  "levelzero: %s: %s", what,
					  lz_result_name(r));
		return lz_fail(lz_host(dev), r, what);
	}
	return WAFER_OK;
}

wafer_status lz_queue_copy(struct lz_device *dev, struct lz_queue *q,
			   void *dst, const void *src, size_t size)
{
	ze_result_t r = order(q);

	if (r == ZE_RESULT_SUCCESS)
		r = zeCommandListAppendMemoryCopy(q->list, dst, src, size, NULL,
						  0, NULL);
	if (r != ZE_RESULT_SUCCESS) {
		lz_host(dev)->set_error("levelzero: zeCommandListAppendMemoryCopy"
					"(%zu bytes): %s",
					size, lz_result_name(r));
		return lz_status(r);
	}
	appended(q);
	return WAFER_OK;
}

wafer_status lz_queue_defer(struct lz_device *dev, struct lz_queue *q,
			    const struct lz_pending *p)
{
	if (q->pending_count == q->pending_cap) {
		size_t cap = q->pending_cap ? 2 * q->pending_cap : 16;
		struct lz_pending *grown =
			realloc(q->pending, cap * sizeof *grown);
		if (!grown) {
			/* Without a record, finish now: wait, then do it.
			 * The action is done either way (so the caller
			 * never frees twice); a failed wait stays queued
			 * for sync, and its download is not copied. */
			if (lz_queue_wait(dev, q) == WAFER_OK && p->dst)
				memcpy(p->dst, p->staged, p->size);
			lz_host_free(dev, p->free_host);
			if (p->free_dev)
				zeMemFree(dev->context, p->free_dev);
			return WAFER_OK;
		}
		q->pending = grown;
		q->pending_cap = cap;
	}
	q->pending[q->pending_count++] = *p;
	return WAFER_OK;
}

wafer_status lz_queue_stage(struct lz_device *dev, struct lz_queue *q,
			    size_t size, void **out_host)
{
	const size_t aligned = (size + LZ_ALIGNMENT - 1) & ~(size_t)(LZ_ALIGNMENT - 1);
	wafer_status status;

	*out_host = NULL;
	if (aligned > q->staging_size) {
		/* Too big for the area: a block of its own, freed at the
		 * next wait. */
		status = lz_host_alloc(dev, size, out_host);
		if (status != WAFER_OK)
			return status;
		return lz_queue_defer(dev, q,
				      &(struct lz_pending){
					      .free_host = *out_host,
				      });
	}
	if (aligned > q->staging_size - q->staging_used) {
		/* The area is full of bytes the device has not moved yet:
		 * wait for them. A failure stays queued for sync; the area
		 * is free again either way. */
		lz_queue_wait(dev, q);
	}
	*out_host = q->staging + q->staging_used;
	q->staging_used += aligned;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Queues
 *===----------------------------------------------------------------------===*/

/* An immediate list where the driver makes one; else a command queue and
 * a regular list. */
static wafer_status create_lists(struct lz_device *dev, struct lz_queue *q)
{
	const struct wafer_host_services *host = lz_host(dev);
	ze_command_queue_desc_t qdesc = {
		.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
		.ordinal = dev->compute_ordinal,
		.index = 0,
		.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
		.priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL,
	};
	ze_command_list_desc_t ldesc = {
		.stype = ZE_STRUCTURE_TYPE_COMMAND_LIST_DESC,
		.commandQueueGroupOrdinal = dev->compute_ordinal,
	};
	ze_result_t r;

	if (dev->state->immediate == LZ_IMMEDIATE_AUTO) {
		r = zeCommandListCreateImmediate(dev->context, dev->device,
						 &qdesc, &q->list);
		if (r == ZE_RESULT_SUCCESS) {
			wafer_status status = lz_zevent_take(dev, false,
							     &q->sync_event);
			if (status == WAFER_OK)
				return WAFER_OK;
			zeCommandListDestroy(q->list);
			q->list = NULL;
			return status;
		}
		host->log(host, WAFER_LOG_INFO,
			  "zeCommandListCreateImmediate: %s; using a command "
			  "queue and a command list",
			  lz_result_name(r));
	}
	r = zeCommandQueueCreate(dev->context, dev->device, &qdesc, &q->cq);
	if (r != ZE_RESULT_SUCCESS)
		return lz_fail(host, r, "queue_create: zeCommandQueueCreate");
	r = zeCommandListCreate(dev->context, dev->device, &ldesc, &q->list);
	if (r != ZE_RESULT_SUCCESS) {
		zeCommandQueueDestroy(q->cq);
		q->cq = NULL;
		return lz_fail(host, r, "queue_create: zeCommandListCreate");
	}
	return WAFER_OK;
}

void lz_kernels_free(ze_kernel_handle_t *kernels)
{
	for (size_t i = 0; kernels && i < LZ_SPIRV_KERNEL_COUNT; i++)
		if (kernels[i])
			zeKernelDestroy(kernels[i]);
	free(kernels);
}

static void lz_server_queue_destroy(void *device, void *queue)
{
	struct lz_device *dev = device;
	struct lz_queue *q = queue;

	if (!q)
		return;
	if (q->saved_list) {
		/* A graph left recording: its list goes, the queue's own
		 * comes back. */
		zeCommandListDestroy(q->list);
		q->list = q->saved_list;
		q->saved_list = NULL;
	}
	/* The core synchronised it, but finish anything a failed wait or a
	 * later copy left. */
	if (q->dirty || q->pending_count || q->submitted.count)
		lz_queue_wait(dev, q);
	lz_queue_release_held(dev, q);
	lz_callbacks_stop(q);
	for (size_t i = 0; i < q->submitted.count; i++)
		zeCommandListDestroy(q->submitted.list[i]);
	for (size_t i = 0; i < q->spare.count; i++)
		zeCommandListDestroy(q->spare.list[i]);
	free(q->submitted.list);
	free(q->spare.list);
	free(q->held);
	if (q->graph_cq)
		zeCommandQueueDestroy(q->graph_cq);
	lz_kernels_free(q->kernels);
	lz_zevent_release(dev, q->sync_event);
	if (q->list)
		zeCommandListDestroy(q->list);
	if (q->cq)
		zeCommandQueueDestroy(q->cq);
	lz_host_free(dev, q->staging);
	free(q->pending);
	wafer_plugin_deferred_clear(&q->failed);
	free(q);
}

static wafer_status lz_server_queue_create(void *device, void **out_queue)
{
	struct lz_device *dev = device;
	const struct wafer_host_services *host = lz_host(dev);
	struct lz_queue *q;
	wafer_status status;

	*out_queue = NULL;
	q = calloc(1, sizeof *q);
	if (q)
		q->kernels = calloc(LZ_SPIRV_KERNEL_COUNT, sizeof *q->kernels);
	if (!q || !q->kernels) {
		free(q);
		host->set_error("levelzero: cannot allocate a queue");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	status = create_lists(dev, q);
	if (status == WAFER_OK && dev->state->staging) {
		void *staging;
		status = lz_host_alloc(dev, dev->state->staging, &staging);
		q->staging = staging;
		q->staging_size = dev->state->staging;
	}
	if (status != WAFER_OK) {
		lz_server_queue_destroy(dev, q);
		return status;
	}
	*out_queue = q;
	return WAFER_OK;
}

static wafer_status lz_server_sync(void *device, void *queue)
{
	struct lz_device *dev = device;
	struct lz_queue *q = queue;

	lz_queue_wait(dev, q);
	return wafer_plugin_deferred_report(&q->failed, lz_host(dev));
}

static wafer_status lz_server_queue_native(void *device, void *queue,
					   struct wafer_native_queue *out)
{
	struct lz_device *dev = device;
	struct lz_queue *q = queue;
	ze_result_t r;

	r = order(q);
	if (r != ZE_RESULT_SUCCESS)
		return lz_fail(lz_host(dev), r,
			       "queue_native: zeCommandListAppendBarrier");
	/* What the caller appends is the queue's work from now on: the next
	 * wait must cover it, and wafer's next command come after it. */
	appended(q);
	out->kind = WAFER_NATIVE_LEVELZERO_POINTER;
	out->queue = q->list;
	out->context = dev->context;
	out->device_ordinal = lz_device_ordinal(dev);
	return WAFER_OK;
}

static wafer_status lz_server_queue_wrap(void *device, void *native,
					 void **out_queue)
{
	struct lz_device *dev = device;

	*out_queue = NULL;
	lz_host(dev)->set_error("levelzero: queue_wrap: cannot adopt the "
				"caller's command list %p: the Level Zero 1.4 "
				"API cannot tell an immediate list from a "
				"regular one (nor its context and device), "
				"and wafer cannot wait on a regular list it "
				"does not execute; open the client on its own "
				"queue and order work with "
				"wafer_client_native_queue",
				native);
	return WAFER_ERROR_NOT_SUPPORTED;
}

/*===----------------------------------------------------------------------===
 * Launch
 *===----------------------------------------------------------------------===*/

/* Prepares the dispatch of |launch|. The core checked the launch against
 * our table entry (plugin.h: kernel identity, binding count, parameter
 * size, bindings inside their handles and aligned); a plugin built with
 * -DWAFER_PLUGIN_DEBUG checks that again. What is left is the kernel's
 * own (lz_prepare: the parameter block's reach). Every failure here is
 * the caller's and nothing was appended. */
static wafer_status prepare_launch(struct lz_device *dev,
				   const struct wafer_launch *launch,
				   struct lz_dispatch *d)
{
	const struct wafer_host_services *host = lz_host(dev);
	const struct wafer_kernel *entry = launch->kernel;
	void *ptrs[LZ_MAX_BINDINGS] = {0};
	size_t sizes[LZ_MAX_BINDINGS] = {0};
	wafer_status status;

	status = WAFER_PLUGIN_DEBUG_CHECK_LAUNCH(host, "levelzero", launch,
						 LZ_ALIGNMENT);
	if (status != WAFER_OK)
		return status;
	for (uint32_t i = 0; i < entry->binding_count; i++) {
		const struct wafer_binding *b =
			wafer_plugin_array_at(launch->bindings, i);
		ptrs[i] = (char *)lz_resource_ptr(b->resource) + b->offset;
		sizes[i] = b->size;
	}
	return lz_prepare(host, entry, ptrs, sizes, launch->params,
			  launch->local, &dev->slot->limits, d);
}

/* The queue's kernel object for |k|, created on first use. */
static wafer_status kernel_of(struct lz_device *dev, struct lz_queue *q,
			      enum lz_spirv_kernel k,
			      ze_kernel_handle_t *out_kernel)
{
	ze_kernel_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC,
		.pKernelName = lz_spirv_kernels[k],
	};
	ze_result_t r;

	if (!q->kernels[k]) {
		r = zeKernelCreate(dev->module, &desc, &q->kernels[k]);
		if (r != ZE_RESULT_SUCCESS) {
			q->kernels[k] = NULL;
			lz_host(dev)->set_error("levelzero: zeKernelCreate(%s): %s",
						lz_spirv_kernels[k],
						lz_result_name(r));
			return lz_status(r);
		}
	}
	*out_kernel = q->kernels[k];
	return WAFER_OK;
}

static wafer_status lz_server_launch(void *device, void *queue,
				     const struct wafer_launch *launch)
{
	struct lz_device *dev = device;
	struct lz_queue *q = queue;
	struct lz_dispatch d;
	ze_kernel_handle_t kernel = NULL;
	wafer_status status;
	ze_result_t r;
	const char *what = "zeKernelSetGroupSize";

	if (wafer_plugin_kernel_is_program(launch->kernel))
		return lz_program_launch(dev, q, launch);
	status = prepare_launch(dev, launch, &d);
	if (status != WAFER_OK)
		return status;
	if (d.group_count[0] == 0)
		return WAFER_OK; /* nothing to do */
	status = kernel_of(dev, q, d.kernel, &kernel);
	if (status != WAFER_OK)
		return status;

	r = zeKernelSetGroupSize(kernel, d.group_size[0], d.group_size[1],
				 d.group_size[2]);
	for (uint32_t i = 0; r == ZE_RESULT_SUCCESS && i < d.arg_count; i++) {
		what = "zeKernelSetArgumentValue";
		r = zeKernelSetArgumentValue(kernel, i, d.args[i].size,
					     d.args[i].value);
	}
	if (r != ZE_RESULT_SUCCESS) {
		lz_host(dev)->set_error("levelzero: launch %s (%s): %s: %s",
					launch->kernel->op,
					lz_spirv_kernels[d.kernel], what,
					lz_result_name(r));
		return lz_status(r);
	}
	return lz_queue_launch(dev, q, kernel, d.group_count,
			       lz_spirv_kernels[d.kernel]);
}

wafer_status lz_queue_launch(struct lz_device *dev, struct lz_queue *q,
			     ze_kernel_handle_t kernel,
			     const uint32_t group_count[3], const char *name)
{
	const char *what = "zeCommandListAppendBarrier";
	ze_result_t r = order(q);

	if (r == ZE_RESULT_SUCCESS) {
		ze_group_count_t groups = {
			.groupCountX = group_count[0],
			.groupCountY = group_count[1],
			.groupCountZ = group_count[2],
		};
		what = "zeCommandListAppendLaunchKernel";
		r = zeCommandListAppendLaunchKernel(q->list, kernel, &groups,
						    NULL, 0, NULL);
	}
	if (r != ZE_RESULT_SUCCESS) {
		lz_host(dev)->set_error("levelzero: launch %s: %s: %s", name,
					what, lz_result_name(r));
		return lz_status(r);
	}
	appended(q);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Timers
 *===----------------------------------------------------------------------===*/

static void timer_free(struct lz_timer *t)
{
	if (t->begin)
		zeEventDestroy(t->begin);
	if (t->end)
		zeEventDestroy(t->end);
	if (t->pool)
		zeEventPoolDestroy(t->pool);
	free(t);
}

static wafer_status lz_server_timer_begin(void *device, void *queue,
					  void **out_timer)
{
	struct lz_device *dev = device;
	struct lz_queue *q = queue;
	const struct wafer_host_services *host = lz_host(dev);
	ze_event_pool_desc_t pool_desc = {
		.stype = ZE_STRUCTURE_TYPE_EVENT_POOL_DESC,
		.flags = ZE_EVENT_POOL_FLAG_HOST_VISIBLE |
			 ZE_EVENT_POOL_FLAG_KERNEL_TIMESTAMP,
		.count = 2,
	};
	ze_event_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_EVENT_DESC,
		.signal = ZE_EVENT_SCOPE_FLAG_HOST,
		.wait = ZE_EVENT_SCOPE_FLAG_HOST,
	};
	struct lz_timer *t;
	ze_result_t r;
	const char *what = "zeEventPoolCreate";

	*out_timer = NULL;
	if (dev->slot->timer_frequency == 0) {
		host->set_error("levelzero: '%s' reports no timer frequency",
				dev->slot->name);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	t = wafer_plugin_calloc(host, sizeof *t,
				"levelzero: cannot allocate a timer");
	if (!t)
		return WAFER_ERROR_OUT_OF_MEMORY;
	r = zeEventPoolCreate(dev->context, &pool_desc, 1, &dev->device,
			      &t->pool);
	if (r == ZE_RESULT_SUCCESS) {
		what = "zeEventCreate";
		desc.index = 0;
		r = zeEventCreate(t->pool, &desc, &t->begin);
	}
	if (r == ZE_RESULT_SUCCESS) {
		desc.index = 1;
		r = zeEventCreate(t->pool, &desc, &t->end);
	}
	if (r == ZE_RESULT_SUCCESS) {
		/* A barrier waits for everything before it: its end is when
		 * the timed work may start. */
		what = "zeCommandListAppendBarrier";
		r = zeCommandListAppendBarrier(q->list, t->begin, 0, NULL);
	}
	if (r != ZE_RESULT_SUCCESS) {
		timer_free(t);
		return lz_fail(host, r, what);
	}
	lz_queue_dirty(q);
	q->need_barrier = false;
	*out_timer = t;
	return WAFER_OK;
}

static wafer_status lz_server_timer_end(void *device, void *queue,
					void *timer, uint64_t *out_ns)
{
	struct lz_device *dev = device;
	struct lz_queue *q = queue;
	struct lz_timer *t = timer;
	const struct wafer_host_services *host = lz_host(dev);
	wafer_status status;
	ze_result_t r;

	*out_ns = 0;
	r = zeCommandListAppendBarrier(q->list, t->end, 0, NULL);
	if (r != ZE_RESULT_SUCCESS) {
		timer_free(t);
		return lz_fail(host, r, "timer_end: zeCommandListAppendBarrier");
	}
	lz_queue_dirty(q);
	q->need_barrier = false;
	/* The wait keeps a failure for sync too: the timed work failed. */
	status = lz_queue_wait(dev, q);
	if (status != WAFER_OK) {
		host->set_error("%s", q->failed.detail ? q->failed.detail
						       : "levelzero: the timed "
							 "work failed");
		timer_free(t);
		return status;
	}
	status = lz_timestamp_ns(dev, t->begin, t->end, out_ns);
	timer_free(t);
	return status;
}

/*===----------------------------------------------------------------------===
 * The table
 *===----------------------------------------------------------------------===*/

const struct wafer_server_ops lz_server_ops = {
	WAFER_PLUGIN_SERVER_OPS_ALL(lz),
};
