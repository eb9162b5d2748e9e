/* wafer — SPDX-License-Identifier: MIT
 *
 * replay_svg.h: wafer-replay's picture, a memory timeline over the events
 * of a trace: each live allocation a band, stacked in allocation order
 * (the largest ones each on its own, the rest as one band above them),
 * under the bytes the strategy reserved; axes in bytes and events, a
 * legend, and each band's size and lifetime as its tooltip. One
 * self-contained SVG file. */
#ifndef WAFER_TOOLS_REPLAY_SVG_H
#define WAFER_TOOLS_REPLAY_SVG_H

#include <stddef.h>
#include <stdint.h>

#include "tools/trace.h"

/* The trace's |count| events (an allocation of a slot, or its free), and
 * bytes in use and reserved after each. */
struct replay_svg_series {
	size_t count;
	const struct wafer_trace_event *events;
	uint32_t slots;
	uint64_t *in_use;
	uint64_t *reserved;
};

struct replay_svg_info {
	const char *title;    /* the trace's file name */
	const char *strategy;
	uint64_t peak_live;
	uint64_t peak_reserved;
	size_t half;          /* first event of the steady half */
};

/* Writes the picture to |path|; 0 on success, -1 with errno set. */
int replay_svg_write(const char *path, const struct replay_svg_series *series,
		     const struct replay_svg_info *info);

#endif
