/* wafer — SPDX-License-Identifier: MIT
 *
 * trace.h: the allocation-trace format wafer-replay reads, one line at a
 * time:
 *
 *   a <id> <bytes>   an allocation (1 <= bytes <= SIZE_MAX / 2) of an id
 *                    that is not live
 *   f <id>           a free of a live id
 *   # ...            a comment; blank lines are skipped
 *
 * An event may carry named fields after its own, `name=value` each (a
 * recording's `t=<ns>`, lib/memory/record.h); they are checked for
 * form (a name, then '=') and otherwise ignored.
 *
 * Separate from the tool so that it can be fuzzed (fuzz/trace.c): a bad
 * line is an error with its reason, never an exit. */
#ifndef WAFER_TOOLS_TRACE_H
#define WAFER_TOOLS_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/memory/u64map.h"

/* One event. |slot| numbers allocations in trace order (0, 1, ...): an
 * id may be allocated again after its free and then names a new slot. */
struct wafer_trace_event {
	uint64_t size; /* 0 for a free */
	uint32_t slot;
	uint32_t line;
};

struct wafer_trace {
	struct wafer_trace_event *events;
	size_t count, capacity;
	uint32_t slots;
	uint32_t lines;
	/* id -> (slot << 32 | line of its allocation), while live */
	struct wafer__u64map live;
};

/* An empty trace is all zeros. */
void wafer_trace_fini(struct wafer_trace *trace);

/* Adds the event of the next line, |text| (modified; without or with its
 * line ending). False with the reason in |why| (without file or line)
 * when the line is malformed or out of host memory; the trace is then
 * unchanged but for the line count. */
bool wafer_trace_add_line(struct wafer_trace *trace, char *text, char *why,
			  size_t why_size);

#endif
