/* wafer — SPDX-License-Identifier: MIT
 *
 * graph.c: the Level Zero plugin's native graphs (ABI 1.6).
 *
 * A graph is a regular command list recorded once and executed at every
 * replay with zeCommandQueueExecuteCommandLists: a closed regular list
 * may be executed any number of times, also again before an earlier
 * execution finished, and Level Zero captures each launch's arguments
 * and group size when it is appended. The immutable command lists of
 * later Level Zero versions (ZE_COMMAND_LIST_FLAG_EXP_IMMUTABLE, 1.9)
 * promise the driver no more than that the list is never reset, which a
 * graph's list never is; the 1.4 API this plugin is built against has
 * only the regular list, and every driver takes it.
 *
 * graph_begin swaps the queue's list for a new regular one; the launches
 * the core issues then go into it (each after a barrier, as on any
 * queue, the first too, so that a replay starts after what came before
 * it on the command queue); graph_end closes it and gives the queue its
 * own list back. The graph takes the queue's kernel objects with it: the
 * list's launches name them, and the core destroys its recording queue
 * before the graph.
 *
 * A replay on a queue of regular lists hands the queue's list to its
 * command queue, then the graph's list after it: in order. A queue on an
 * immediate list cannot take a regular list in the 1.4 API, so the
 * graph runs on a command queue of the queue's own (created at its first
 * replay) between two lists made for that replay: the first waits on an
 * event the immediate list signals after what came before, the last
 * signals an event the immediate list then waits on. A queue holds each
 * graph it replayed until its next wait, so that a graph destroyed
 * meanwhile is freed once its replays ran. */
#include "build-config.h"

#include <stdlib.h>

#include "plugins/levelzero/kernels.h"
#include "plugins/levelzero/lz_plugin.h"

struct lz_graph {
	ze_command_list_handle_t list;
	/* The recording queue's kernel objects (indexed as its were). */
	ze_kernel_handle_t *kernels;
	unsigned users; /* under the device's event_lock */
};

static void graph_free(struct lz_graph *g)
{
	if (g->list)
		zeCommandListDestroy(g->list);
	lz_kernels_free(g->kernels);
	free(g);
}

void lz_graph_use(struct lz_device *dev, struct lz_graph *g)
{
	pthread_mutex_lock(&dev->event_lock);
	g->users++;
	pthread_mutex_unlock(&dev->event_lock);
}

void lz_graph_release(struct lz_device *dev, struct lz_graph *g)
{
	bool last;

	pthread_mutex_lock(&dev->event_lock);
	last = --g->users == 0;
	pthread_mutex_unlock(&dev->event_lock);
	if (last)
		graph_free(g);
}

/*===----------------------------------------------------------------------===
 * Recording
 *===----------------------------------------------------------------------===*/

wafer_status lz_graph_begin(void *device, void *queue)
{
	struct lz_device *dev = device;
	struct lz_queue *q = queue;
	ze_command_list_handle_t list;
	wafer_status status;

	if (q->saved_list) {
		lz_host(dev)->set_error("levelzero: graph_begin: the queue "
					"is already recording a graph");
		return WAFER_ERROR_INTERNAL;
	}
	status = lz_queue_take_list(dev, q, &list);
	if (status != WAFER_OK)
		return status;
	q->saved_list = q->list;
	q->saved_dirty = q->dirty;
	q->saved_need_barrier = q->need_barrier;
	q->saved_unsubmitted = q->unsubmitted;
	q->list = list;
	q->need_barrier = true;
	return WAFER_OK;
}

/* Gives |q| its own list back; returns the recorded one. */
static ze_command_list_handle_t restore(struct lz_queue *q)
{
	ze_command_list_handle_t recorded = q->list;

	q->list = q->saved_list;
	q->saved_list = NULL;
	q->dirty = q->saved_dirty;
	q->need_barrier = q->saved_need_barrier;
	q->unsubmitted = q->saved_unsubmitted;
	return recorded;
}

wafer_status lz_graph_end(void *device, void *queue, void **out_graph)
{
	struct lz_device *dev = device;
	struct lz_queue *q = queue;
	struct lz_graph *g;
	ze_kernel_handle_t *kernels;
	ze_command_list_handle_t list;
	ze_result_t r;

	*out_graph = NULL;
	if (!q->saved_list) {
		lz_host(dev)->set_error("levelzero: graph_end: the queue is "
					"not recording a graph");
		return WAFER_ERROR_INTERNAL;
	}
	list = restore(q);
	g = calloc(1, sizeof *g);
	kernels = calloc(LZ_SPIRV_KERNEL_COUNT, sizeof *kernels);
	r = zeCommandListClose(list);
	if (!g || !kernels || r != ZE_RESULT_SUCCESS) {
		free(g);
		free(kernels);
		zeCommandListDestroy(list);
		if (r != ZE_RESULT_SUCCESS)
			return lz_fail(lz_host(dev), r,
				       "graph_end: zeCommandListClose");
		lz_host(dev)->set_error("levelzero: graph_end: out of host "
					"memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	g->list = list;
	g->kernels = q->kernels;
	g->users = 1;
	q->kernels = kernels;
	*out_graph = g;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Replay
 *===----------------------------------------------------------------------===*/

/* On a queue of regular lists: its list, then the graph's. */
static wafer_status launch_regular(struct lz_device *dev, struct lz_queue *q,
				   struct lz_graph *g)
{
	wafer_status status = lz_queue_submit(dev, q);
	ze_result_t r;

	if (status != WAFER_OK)
		return status;
	r = zeCommandQueueExecuteCommandLists(q->cq, 1, &g->list, NULL);
	if (r != ZE_RESULT_SUCCESS)
		return lz_fail(lz_host(dev), r,
			       "graph_launch: zeCommandQueueExecuteCommandLists");
	q->dirty = true;
	q->need_barrier = true;
	return WAFER_OK;
}

static wafer_status graph_queue(struct lz_device *dev, struct lz_queue *q)
{
	ze_command_queue_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_DESC,
		.ordinal = dev->compute_ordinal,
		.mode = ZE_COMMAND_QUEUE_MODE_ASYNCHRONOUS,
		.priority = ZE_COMMAND_QUEUE_PRIORITY_NORMAL,
	};
	ze_result_t r;

	if (q->graph_cq)
		return WAFER_OK;
	r = zeCommandQueueCreate(dev->context, dev->device, &desc, &q->graph_cq);
	if (r != ZE_RESULT_SUCCESS) {
		q->graph_cq = NULL;
		return lz_fail(lz_host(dev), r,
			       "graph_launch: zeCommandQueueCreate");
	}
	return WAFER_OK;
}

/* A list of this replay's, closed, kept by |q| until its next wait: it
 * waits on |wait| or signals |signal|. */
static wafer_status bracket(struct lz_device *dev, struct lz_queue *q,
			    struct lz_zevent *wait, struct lz_zevent *signal,
			    ze_command_list_handle_t *out)
{
	ze_event_handle_t w = wait ? lz_zevent_handle(wait) : NULL;
	ze_command_list_handle_t list;
	wafer_status status = lz_queue_take_list(dev, q, &list);
	ze_result_t r;

	if (status != WAFER_OK)
		return status;
	status = lz_queue_keep_list(dev, q, list);
	if (status != WAFER_OK) {
		zeCommandListDestroy(list);
		return status;
	}
	r = wait ? zeCommandListAppendWaitOnEvents(list, 1, &w)
		 : zeCommandListAppendBarrier(list, lz_zevent_handle(signal),
					      0, NULL);
	if (r == ZE_RESULT_SUCCESS)
		r = zeCommandListClose(list);
	if (r != ZE_RESULT_SUCCESS)
		return lz_fail(lz_host(dev), r, "graph_launch: a list around "
						"the graph");
	*out = list;
	return WAFER_OK;
}

/* On an immediate list: the graph between two lists of its own on the
 * queue's graph queue, ordered by two events. */
static wafer_status launch_immediate(struct lz_device *dev, struct lz_queue *q,
				     struct lz_graph *g)
{
	struct lz_zevent *before = NULL, *after = NULL;
	ze_command_list_handle_t lists[3] = {NULL, g->list, NULL};
	wafer_status status = graph_queue(dev, q);
	ze_result_t r;

	if (status == WAFER_OK)
		status = lz_zevent_take(dev, false, &before);
	if (status == WAFER_OK)
		status = lz_zevent_take(dev, false, &after);
	if (status == WAFER_OK)
		status = lz_queue_hold(dev, q, (struct lz_held){.event = before});
	if (status == WAFER_OK)
		status = lz_queue_hold(dev, q, (struct lz_held){.event = after});
	if (status == WAFER_OK)
		status = bracket(dev, q, before, NULL, &lists[0]);
	if (status == WAFER_OK)
		status = bracket(dev, q, NULL, after, &lists[2]);
	if (status == WAFER_OK)
		status = lz_queue_barrier(dev, q, lz_zevent_handle(before));
	if (status == WAFER_OK) {
		r = zeCommandQueueExecuteCommandLists(q->graph_cq, 3, lists,
						      NULL);
		if (r != ZE_RESULT_SUCCESS)
			status = lz_fail(lz_host(dev), r,
					 "graph_launch: "
					 "zeCommandQueueExecuteCommandLists");
	}
	if (status == WAFER_OK)
		status = lz_queue_append_wait(dev, q, after);
	lz_zevent_release(dev, before);
	lz_zevent_release(dev, after);
	return status;
}

wafer_status lz_graph_launch(void *device, void *queue, void *graph)
{
	struct lz_device *dev = device;
	struct lz_queue *q = queue;
	struct lz_graph *g = graph;
	wafer_status status = lz_queue_hold(dev, q, (struct lz_held){.graph = g});

	if (status != WAFER_OK)
		return status;
	return q->cq ? launch_regular(dev, q, g) : launch_immediate(dev, q, g);
}

void lz_graph_destroy(void *device, void *graph)
{
	if (graph)
		lz_graph_release(device, graph);
}
