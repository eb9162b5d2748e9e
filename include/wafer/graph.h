/* wafer — vendor-neutral compute runtime.
 * SPDX-License-Identifier: MIT
 *
 * graph.h: graphs. Work issued on a queue between
 * wafer_queue_begin_capture and wafer_queue_end_capture is recorded, not
 * run; the graph it makes replays that work on any queue of the client,
 * as often as wanted, in that queue's order like any other work, for a
 * fraction of what issuing it again costs: nothing is checked again, no
 * command crosses the channel but the launch, and where the plugin has
 * the graphs group (wafer-plugin(7)) the device replays the kernels
 * itself (a CUDA graph).
 *
 * What a capture records: kernel launches (wafer_execute, the operations,
 * program kernels), writes (the bytes given at capture: a replay writes
 * them again) and host callbacks. Reserving and releasing memory run at
 * once: a handle made during capture and released before its end is a
 * temporary of the graph, whose memory the graph keeps; one that outlives
 * the capture is an output, written by each replay. The graph keeps the
 * memory of every handle its steps use until it is released, also after
 * the program released the handle. What cannot be recorded fails at
 * once, naming the call, and the queue goes on capturing: a read or sync
 * (they wait for the device), events and waits (they order with another
 * queue), collectives and peer copies, timers, closing the queue, a
 * nested capture or a graph launch. Full contract: wafer_graph(3),
 * wafer-queue(7). */
#ifndef WAFER_GRAPH_H
#define WAFER_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/queue.h>
#include <wafer/wafer.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct wafer_graph wafer_graph;

/* From now on, work issued on |queue| (by any thread) is recorded into a
 * new graph instead of run. WAFER_ERROR_INVALID_ARGUMENT when |queue| is
 * capturing already. */
WAFER_API wafer_status wafer_queue_begin_capture(wafer_queue *queue);

/* Ends the capture on |queue| and stores the graph in |*out_graph|
 * (NULL on failure). When a call failed while capturing in a way that
 * leaves the graph incomplete (out of host memory), the capture is
 * discarded and that failure returned. An empty capture is a graph with
 * no steps. */
WAFER_API wafer_status wafer_queue_end_capture(wafer_queue *queue,
					       wafer_graph **out_graph);

/* Replays |graph| on |queue| (a queue of the graph's client, not one
 * capturing): after the work issued on |queue| before, and before what is
 * issued after, as if its steps were issued again. Returns at once; a
 * failure of the device work is reported by the queue's next sync. */
WAFER_API wafer_status wafer_graph_launch(wafer_graph *graph,
					  wafer_queue *queue);

/* From the next launch on, every step that used handle |from| uses |to|
 * instead: the same offsets into a handle of the same size (a handle of
 * the client, live). |from| is a handle the graph uses now: one its steps
 * used at capture or one given to an earlier rebind. Launches issued
 * before keep the old binding. The graph holds |to|'s memory from now on
 * and lets go of |from|'s (freed if the program released |from|). */
WAFER_API wafer_status wafer_graph_rebind(wafer_graph *graph,
					  wafer_handle from, wafer_handle to);

/* What a graph is made of. */
typedef struct wafer_graph_info {
	size_t struct_size; /* set to sizeof(wafer_graph_info) */
	uint32_t steps;     /* recorded calls */
	uint32_t launches;  /* of which kernel launches */
	/* Launches the device replays as one native graph each run of
	 * them (0 where the plugin has no graphs group: the core replays
	 * them). */
	uint32_t native_launches;
	uint32_t handles;   /* distinct handles the steps use */
	/* Bytes of memory the graph alone keeps alive: its temporaries and
	 * the handles released since the capture. */
	uint64_t held_bytes;
} wafer_graph_info;

WAFER_API wafer_status wafer_graph_info_get(wafer_graph *graph,
					    wafer_graph_info *out_info);

/* Frees |graph| once the launches issued before have run, and the memory
 * only it kept. A client's graphs go with it at wafer_client_close. */
WAFER_API wafer_status wafer_graph_release(wafer_graph *graph);

#ifdef __cplusplus
}
#endif

#endif
