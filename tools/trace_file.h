/* wafer — SPDX-License-Identifier: MIT
 *
 * trace_file.h: reads a whole allocation trace file (tools/trace.h),
 * plain or gzip-compressed, for wafer-replay and wafer-bench replay. */
#ifndef WAFER_TOOLS_TRACE_FILE_H
#define WAFER_TOOLS_TRACE_FILE_H

#include <stdbool.h>
#include <stddef.h>

#include "tools/trace.h"

/* Loads |path| into |t| (all zeros). False with the reason in |why| —
 * "PATH:LINE: reason" for a bad line, "PATH: no events" for an empty
 * trace — and |t| to be finished by the caller. Every problem names the
 * line: a replay of a bad trace would measure nothing real. */
bool wafer_trace_load(const char *path, struct wafer_trace *t, char *why,
		      size_t why_size);

#endif
