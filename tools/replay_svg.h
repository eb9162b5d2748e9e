/* wafer — SPDX-License-Identifier: MIT
 *
 * replay_svg.h: wafer-replay's picture — bytes in use and bytes reserved
 * over the events of a trace, as a self-contained SVG file with axes,
 * ticks, labels and a legend. */
#ifndef WAFER_TOOLS_REPLAY_SVG_H
#define WAFER_TOOLS_REPLAY_SVG_H

#include <stddef.h>
#include <stdint.h>

/* Bytes in use and reserved after each event. */
struct replay_svg_series {
	size_t count;
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
