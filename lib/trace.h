/* wafer — SPDX-License-Identifier: MIT
 *
 * trace.h: the timeline trace (include/wafer/trace.h) as the core sees
 * it. It is fed from the one path every command takes to the device
 * (wafer__bridge_run, and wafer__bridge_execute, which the direct and
 * mutex channels call for a launch): while a trace runs, those hand the
 * command to wafer__trace_run / wafer__trace_execute, which time it on
 * the host, bracket it with two timing events on its queue where the
 * plugin has the events group, and run it through the same function
 * again (wafer__trace_on is false inside). Off, the cost is one load and
 * one branch predicted not taken.
 *
 * Device spans are read back (event_query, event_elapsed) on the
 * bridge's own thread after a sync or read, when a client closes, and at
 * the end of the trace; each is placed on the host clock from the lane's
 * base event, recorded and synced when the lane first carried work in
 * the trace. The JSON is made by lib/trace_json.c. */
#ifndef WAFER_CORE_TRACE_H
#define WAFER_CORE_TRACE_H

#include <stdatomic.h>
#include <stdbool.h>

#include <wafer/wafer.h>

#include "lib/tls.h"

struct wafer__bridge;
struct wafer__command;
struct wafer__execute_request;
struct wafer__config;

/* Whether a trace is running (read relaxed: a command that races with
 * wafer_trace_begin or _end is traced or not, either is right). */
extern atomic_bool wafer__trace_active;
/* Set on the thread while a traced command runs, so that its run
 * function's own way back into the hooks is not traced twice. */
extern WAFER__TLS_HOT bool wafer__trace_inside;

static inline bool wafer__trace_on(void)
{
	return __builtin_expect(atomic_load_explicit(&wafer__trace_active,
						     memory_order_relaxed),
				0) &&
	       !wafer__trace_inside;
}

/* wafer__bridge_run of |c|, traced. */
wafer_status wafer__trace_run(struct wafer__bridge *bridge,
			      struct wafer__command *c);

/* wafer__bridge_execute of |r|, traced. */
wafer_status wafer__trace_execute(struct wafer__bridge *bridge,
				  struct wafer__execute_request *r);

/* |bridge| is closing: its device spans are read (waiting for its
 * queues) and its events freed while its queues are still open. */
void wafer__trace_bridge_closed(struct wafer__bridge *bridge);

/* `[core] trace`: begins a trace for |runtime| where it is set. */
wafer_status wafer__trace_runtime_opened(wafer_runtime *runtime,
					 const struct wafer__config *config);

/* Ends |runtime|'s trace, if it has one running (a failure is logged). */
void wafer__trace_runtime_closing(wafer_runtime *runtime);

#endif
