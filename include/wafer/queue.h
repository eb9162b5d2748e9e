/* wafer — vendor-neutral compute runtime.
 * SPDX-License-Identifier: MIT
 *
 * queue.h: several queues on one client, ordered by events.
 *
 * A client has one default queue; wafer_queue_open gives it more. Every
 * queue of a client shares the client's handles and memory: a handle is
 * valid on every queue of its client. Each queue is an in-order stream
 * of work on the device; work on different queues may run at the same
 * time (a copy beside a kernel, a collective beside the backward pass).
 *
 * Which queue a call goes on: every call that issues work (wafer_write,
 * wafer_read, wafer_execute, the wafer_op_* operations, programs,
 * collectives, peer copies, wafer_sync) goes on the calling thread's
 * current queue of that client, which is the default queue until the
 * thread selects another with wafer_queue_select — as a framework's
 * "current stream":
 *
 *   wafer_queue *copy;
 *   wafer_queue_open(client, &copy);
 *   wafer_queue *was = wafer_queue_select(copy);  // this thread, this client
 *   wafer_write(client, next_batch, 0, bytes, host);   // on |copy|
 *   wafer_queue_select(was);                           // back to default
 *   wafer_execute(client, ...);                        // on the default queue
 *
 * Safety without events: a command that touches a handle last used on
 * another queue of the client first waits (on the device, not the host)
 * for that use; memory released after use on one queue is handed to
 * another only after that use finished. Events are for the host, for
 * timing and for ordering the caller's own native work. See
 * wafer-queue(7) for the rule and its cost.
 *
 * Plugins without the events entries of the plugin ABI (1.5) still get
 * several queues: the core orders them by waiting on the host, so their
 * work does not overlap (wafer-info says so). */
#ifndef WAFER_QUEUE_H
#define WAFER_QUEUE_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/wafer.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===
 * Queues
 *===----------------------------------------------------------------------===*/

typedef struct wafer_queue wafer_queue;

/* A new queue on |client|'s device (the plugin's queue_create). */
WAFER_API wafer_status wafer_queue_open(wafer_client *client,
					wafer_queue **out_queue);

/* A new queue over the caller's own |native_queue| (a CUstream, an
 * in-order cl_command_queue: what wafer_client_native_queue would give
 * for the backend; see interop.h), which wafer never destroys and which
 * must outlive the queue. The caller's own work on it, outside wafer, is
 * ordered with wafer's memory as a framework's stream needs: a handle
 * reserved while this queue is current may be used by that work at
 * once, and one released while it is current is reused only after the
 * work the caller issued on it before the release. WAFER_ERROR_NOT_
 * SUPPORTED on a plugin without the interop entries. */
WAFER_API wafer_status wafer_queue_open_native(wafer_client *client,
					       void *native_queue,
					       wafer_queue **out_queue);

/* Finishes the work on |queue| and frees it. Returns the first failure of
 * that work not yet reported. The default queue cannot be closed
 * (WAFER_ERROR_INVALID_ARGUMENT); wafer_client_close closes the others.
 * A thread whose current queue was |queue| goes back to the default
 * queue. NULL is a no-op returning WAFER_OK. */
WAFER_API wafer_status wafer_queue_close(wafer_queue *queue);

/* The client's default queue: never NULL for an open client. */
WAFER_API wafer_queue *wafer_client_default_queue(wafer_client *client);

/* Makes |queue| the calling thread's current queue of its client and
 * returns the one that was current (the default queue when none was
 * selected). Other threads and other clients are unaffected. */
WAFER_API wafer_queue *wafer_queue_select(wafer_queue *queue);

/* The calling thread's current queue of |client|. */
WAFER_API wafer_queue *wafer_queue_current(wafer_client *client);

/* Waits until the work issued on |queue| has finished; returns the first
 * failure of that work (only this queue's) not yet reported. wafer_sync
 * is wafer_queue_sync of the calling thread's current queue. */
WAFER_API wafer_status wafer_queue_sync(wafer_queue *queue);

/* Runs |fn(user)| on a thread of wafer's once the work issued on |queue|
 * before this call has finished, before work issued after it. A status
 * other than WAFER_OK returned by |fn| is reported by the next
 * wafer_queue_sync of |queue| (with "host callback" in the detail).
 * |fn| must not call into |queue|'s client. */
typedef wafer_status (*wafer_host_callback)(void *user);
WAFER_API wafer_status wafer_queue_callback(wafer_queue *queue,
					    wafer_host_callback fn,
					    void *user);

/*===----------------------------------------------------------------------===
 * Events
 *===----------------------------------------------------------------------===*/

typedef struct wafer_event wafer_event;

/* The event records device timestamps, for wafer_event_elapsed (it may
 * cost more to record). */
#define WAFER_EVENT_TIMING (UINT32_C(1) << 0)

/* A new event on |client|'s device; |flags| is 0 or WAFER_EVENT_TIMING.
 * An event never recorded counts as complete. */
WAFER_API wafer_status wafer_event_create(wafer_client *client,
					  uint32_t flags,
					  wafer_event **out_event);

/* Captures, in |event|, the work issued on |queue| so far; recording
 * again replaces what it captured. Both of one client. */
WAFER_API wafer_status wafer_event_record(wafer_event *event,
					  wafer_queue *queue);

/* Work issued on |queue| after this call starts after what |event|
 * captured has finished; the host does not wait. */
WAFER_API wafer_status wafer_queue_wait(wafer_queue *queue,
					wafer_event *event);

/* Waits on the host until what |event| captured has finished. */
WAFER_API wafer_status wafer_event_sync(wafer_event *event);

/* WAFER_OK when what |event| captured has finished, WAFER_ERROR_NOT_READY
 * when it has not; never waits. */
WAFER_API wafer_status wafer_event_query(wafer_event *event);

/* Device nanoseconds between |start| and |end| (both recorded with
 * WAFER_EVENT_TIMING, on one client; waits for |end|). Needs device
 * timers (WAFER_CAP_DEVICE_TIMERS), else WAFER_ERROR_NOT_SUPPORTED. */
WAFER_API wafer_status wafer_event_elapsed(wafer_event *start,
					   wafer_event *end,
					   uint64_t *out_ns);

/* Frees |event| once the work it captured has finished (at once when it
 * has). NULL is a no-op returning WAFER_OK. */
WAFER_API wafer_status wafer_event_release(wafer_event *event);

#ifdef __cplusplus
}
#endif

#endif
