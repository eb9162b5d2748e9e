/* wafer — vendor-neutral compute runtime.
 * SPDX-License-Identifier: MIT
 *
 * trace.h: a timeline of what ran, in the Chrome trace-event JSON that
 * Perfetto (ui.perfetto.dev) and chrome://tracing open, and that
 * wafer-trace(1) summarises. Each client is a process in the view, each
 * of its queues a lane: every command's host-side span (kernel name,
 * variant, grid, bytes, handle ids), its device-side span where the
 * plugin has timing events, arrows from wafer_event_record to the
 * wafer_queue_wait that waits on it, counters for the memory manager
 * (bytes in use and reserved, storage calls) and autotune's
 * measurements, and failures as instant events naming the command.
 *
 *   wafer_trace_begin(runtime, "step.json");
 *   ... one training step ...
 *   wafer_sync(client);            // device spans are read at syncs
 *   wafer_trace_end(runtime);      // writes step.json
 *
 * `[core] trace = FILE` (or WAFER_TRACE=FILE) traces from
 * wafer_runtime_open to wafer_runtime_close. One trace at a time in a
 * process; it records the clients of every runtime. Off, the cost is one
 * predictable branch per command. See wafer_trace_begin(3). */
#ifndef WAFER_TRACE_H
#define WAFER_TRACE_H

#include <wafer/wafer.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Starts recording; the file |path| is written by wafer_trace_end.
 * WAFER_ERROR_NOT_READY while a trace is already being recorded (by
 * this or another runtime, or by `[core] trace`), WAFER_ERROR_IO where
 * |path| cannot be created (checked now, so a typo fails here). */
WAFER_API wafer_status wafer_trace_begin(wafer_runtime *runtime,
					 const char *path);

/* Stops recording and writes the file. Device spans of work not synced
 * by then are read now (this call waits for that work).
 * WAFER_ERROR_NOT_FOUND where |runtime| has no trace running;
 * WAFER_ERROR_IO where writing failed. */
WAFER_API wafer_status wafer_trace_end(wafer_runtime *runtime);

#ifdef __cplusplus
}
#endif

#endif
