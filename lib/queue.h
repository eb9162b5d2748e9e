/* wafer — SPDX-License-Identifier: MIT
 *
 * queue.h: a client's queues as the program sees them (wafer/queue.h),
 * and which one the calling thread's calls go on. The bridge knows them
 * as lanes (lib/lanes.h): queue i is lane i, queue 0 the default.
 *
 * The calling thread's current queue of a client is kept in a small
 * thread-local table of the queues the thread selected; a thread that
 * never selected one pays one thread-local load a command. Each entry is
 * checked against the client's serial and the queue's, so a selection
 * outlives neither its client nor its queue: a closed queue's threads go
 * back to the default queue. */
#ifndef WAFER_CORE_QUEUE_H
#define WAFER_CORE_QUEUE_H

#include <pthread.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>

#include <wafer/queue.h>

#include "lib/lanes.h"
#include "lib/tls.h"

struct wafer_queue {
	wafer_client *client;
	uint32_t lane;
	uint64_t serial; /* this opening of lane |lane| */
};

/* What a client keeps of its queues (embedded in the client). */
struct wafer__client_queues {
	uint64_t client_serial; /* unique in the process */
	struct wafer_queue default_queue;
	pthread_mutex_t lock; /* opening and closing queues, events */
	struct wafer_queue *open[WAFER_MAX_QUEUES]; /* [0]: &default_queue */
	/* The serial of each lane's current opening; 0: closed. Read by
	 * any thread at submit. */
	_Atomic uint64_t serial[WAFER_MAX_QUEUES];
	/* Bit i: lane i captures a graph (lib/graph.c); set before the
	 * bridge starts, cleared after it stopped. */
	_Atomic uint32_t capturing;
	/* Events alive, freed at client close if the program did not
	 * (lib/event.c); under |lock|. */
	wafer_event *events;
};

void wafer__client_queues_init(struct wafer__client_queues *queues,
			       wafer_client *client);

/* Frees the queue records of the lanes still open at client close (the
 * bridge closed the lanes). */
void wafer__client_queues_fini(struct wafer__client_queues *queues);

/* The lane the calling thread's next command on the client goes on. */
struct wafer__queue_selection {
	uint64_t client_serial, queue_serial;
	uint32_t lane;
};
extern WAFER__TLS_HOT unsigned wafer__queue_selected_count;
uint32_t wafer__queue_lane_slow(const struct wafer__client_queues *queues);
static inline uint32_t
wafer__queue_current_lane(const struct wafer__client_queues *queues)
{
	if (!wafer__queue_selected_count)
		return 0;
	return wafer__queue_lane_slow(queues);
}

/* Whether the calling thread's current queue of the client captures a
 * graph (autotune then measures nothing). */
static inline bool
wafer__queue_capturing(const struct wafer__client_queues *queues)
{
	uint32_t mask = atomic_load_explicit(&queues->capturing,
					     memory_order_relaxed);
	return mask && ((mask >> wafer__queue_current_lane(queues)) & 1);
}

#endif
