/* wafer — SPDX-License-Identifier: MIT
 *
 * replay_svg.c: draws wafer-replay's memory timeline (replay_svg.h).
 *
 * Live allocations are stacked in the order they were made, as PyTorch's
 * memory_viz stacks them: an allocation sits on those made before it that
 * are still live, and drops when one below it is freed. The BANDS largest
 * allocations of the trace (bytes times events alive: what the eye
 * sees) each get a band of their own (a step polygon:
 * its offset changes only when a band below it ends); every other
 * allocation is in one grey band on top of them, up to the bytes in use.
 * So a trace of millions of events stays a file of a few hundred
 * kilobytes. A chart has hundreds of pixel columns, so the lines and the
 * grey band show, per column, the event of the largest value under it:
 * a one-event peak stays visible, which is what a reader of a memory
 * chart looks for. Where the strategy reserved far more than was ever in
 * use, the bytes axis ends above the peak in use and the reserved area
 * runs off the top (the legend gives its peak), so that the allocations
 * stay readable. */
#include "build-config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/replay_svg.h"

#define WIDTH 960
#define HEIGHT 540
#define LEFT 96
#define RIGHT 32
#define TOP 64
#define BOTTOM 72
#define PLOT_W (WIDTH - LEFT - RIGHT)
#define PLOT_H (HEIGHT - TOP - BOTTOM)

#define COLOR_RESERVED "#e07b00"
#define COLOR_IN_USE "#222222"
#define COLOR_OTHER "#b8b8b8"

/* Allocations drawn each as its own band. */
#define BANDS 128

static const char *const palette[] = {
	"#4e79a7", "#59a14f", "#9c755f", "#499894", "#76b7b2",
	"#edc948", "#b07aa1", "#ff9da7", "#e15759", "#8cd17d",
};
#define PALETTE (sizeof palette / sizeof palette[0])

/* A tick step of 1, 2 or 5 times a power of ten (in |unit|s) that gives
 * about |target| ticks up to |max|. */
static double nice_step(double max, double unit, int target)
{
	double raw = max / unit / target;
	double mag = pow(10, floor(log10(raw)));
	double steps[] = {1, 2, 5, 10};
	for (int i = 0; i < 4; i++)
		if (steps[i] * mag >= raw)
			return steps[i] * mag * unit;
	return 10 * mag * unit;
}

static const char *byte_unit(double max, double *out_unit)
{
	static const char *const names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int i = 0;
	double unit = 1;
	while (i < 4 && max >= unit * 1024 * 2) {
		unit *= 1024;
		i++;
	}
	*out_unit = unit;
	return names[i];
}

static void human_bytes(char *buf, size_t size, uint64_t bytes)
{
	double unit;
	const char *name = byte_unit((double)bytes / 2, &unit);
	snprintf(buf, size, "%.1f %s", (double)bytes / unit, name);
}

struct chart {
	FILE *out;
	size_t events;
	double ymax;
};

static double x_of(const struct chart *c, double event)
{
	return LEFT + PLOT_W * event / (double)(c->events > 1 ? c->events - 1 : 1);
}

static double y_of(const struct chart *c, double bytes)
{
	return TOP + PLOT_H * (1.0 - bytes / c->ymax);
}

/* The largest value in each pixel column (the smallest with |lowest|),
 * as "x,y" points, left to right (right to left with |backward|): a step
 * across the column, as a value holds from its event to the next. */
static void column_points(const struct chart *c, const uint64_t *values,
			  int lowest, int backward)
{
	size_t columns = c->events < PLOT_W ? c->events : PLOT_W;
	for (size_t k = 0; k < columns; k++) {
		size_t col = backward ? columns - 1 - k : k;
		size_t from = col * c->events / columns;
		size_t to = (col + 1) * c->events / columns;
		uint64_t v = values[from];
		for (size_t i = from; i < to; i++)
			if (lowest ? values[i] < v : values[i] > v)
				v = values[i];
		double x1 = x_of(c, (double)from), y = y_of(c, (double)v);
		double x2 = x_of(c, (double)(to < c->events ? to
							    : c->events - 1));
		fprintf(c->out, "%.1f,%.1f %.1f,%.1f ", backward ? x2 : x1, y,
			backward ? x1 : x2, y);
	}
}

static void polyline_points(const struct chart *c, const uint64_t *values)
{
	column_points(c, values, 0, 0);
}

static void axes(const struct chart *c)
{
	FILE *out = c->out;
	double unit;
	const char *name = byte_unit(c->ymax, &unit);
	double step = nice_step(c->ymax, unit, 6);

	fprintf(out, "<g class=\"axes\" font-size=\"12\" fill=\"#333\">\n");
	for (double v = 0; v <= c->ymax * 1.0001; v += step) {
		double y = y_of(c, v);
		fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
			"stroke=\"#ddd\"/>\n", LEFT, y, LEFT + PLOT_W, y);
		fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" "
			"stroke=\"#333\"/>\n", LEFT - 5, y, LEFT, y);
		fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">"
			"%g %s</text>\n", LEFT - 8, y + 4, v / unit, name);
	}
	double xstep = nice_step((double)c->events, 1, 8);
	if (xstep < 1)
		xstep = 1;
	for (double e = 0; e <= (double)c->events; e += xstep) {
		double x = x_of(c, e);
		fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
			"stroke=\"#333\"/>\n", x, TOP + PLOT_H, x,
			TOP + PLOT_H + 5);
		fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">"
			"%.0f</text>\n", x, TOP + PLOT_H + 20, e);
	}
	fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
		"fill=\"none\" stroke=\"#333\"/>\n", LEFT, TOP, PLOT_W, PLOT_H);
	fprintf(out, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" "
		"font-size=\"13\">events (allocations and frees, in trace "
		"order)</text>\n", LEFT + PLOT_W / 2, HEIGHT - 24);
	fprintf(out, "<text transform=\"translate(22,%d) rotate(-90)\" "
		"text-anchor=\"middle\" font-size=\"13\">bytes</text>\n",
		TOP + PLOT_H / 2);
	fprintf(out, "</g>\n");
}

/*===----------------------------------------------------------------------===
 * The allocations and their bands
 *===----------------------------------------------------------------------===*/

struct step {
	size_t event;
	uint64_t offset;
};

struct alloc {
	uint64_t size;
	size_t start, end; /* events of the allocation and the free */
	uint32_t line;     /* in the trace file */
	int band;          /* its own band, or -1: in the grey one */
	struct step *steps; /* a band's offsets, from |start| on */
	size_t nsteps;
};

struct timeline {
	struct alloc *allocs;
	size_t count;
	size_t banded;    /* allocations with a band of their own */
	uint64_t *stacked; /* after each event: bytes of the banded ones */
};

/* What a band shows of an allocation: bytes times events alive. */
static double area(const struct alloc *a)
{
	return (double)a->size * (double)(a->end - a->start + 1);
}

static int by_area(const void *a, const void *b)
{
	const struct alloc *const *x = a, *const *y = b;
	double ax = area(*x), ay = area(*y);
	if (ax != ay)
		return ax > ay ? -1 : 1;
	return (*x)->start < (*y)->start ? -1 : (*x)->start > (*y)->start;
}

static int add_step(struct alloc *a, size_t event, uint64_t offset)
{
	struct step *s = realloc(a->steps, (a->nsteps + 1) * sizeof *s);
	if (!s)
		return -1;
	s[a->nsteps++] = (struct step){event, offset};
	a->steps = s;
	return 0;
}

static void timeline_free(struct timeline *t)
{
	for (size_t i = 0; i < t->count; i++)
		free(t->allocs[i].steps);
	free(t->allocs);
	free(t->stacked);
}

/* The allocations of |series|, the BANDS largest with their steps. 0, or
 * -1 out of memory. */
static int timeline_make(const struct replay_svg_series *series,
			 struct timeline *t)
{
	size_t n = series->count;
	size_t *open = calloc(series->slots ? series->slots : 1, sizeof *open);
	struct alloc **order = NULL, *live[BANDS];
	size_t nlive = 0;
	uint64_t height = 0;
	int rc = -1;

	*t = (struct timeline){0};
	t->allocs = calloc(n ? n : 1, sizeof *t->allocs);
	t->stacked = calloc(n ? n : 1, sizeof *t->stacked);
	if (!open || !t->allocs || !t->stacked)
		goto out;
	for (size_t i = 0; i < n; i++) {
		const struct wafer_trace_event *e = &series->events[i];
		if (e->size) {
			t->allocs[t->count] = (struct alloc){
				.size = e->size, .start = i,
				.end = n ? n - 1 : 0, .line = e->line,
				.band = -1,
			};
			open[e->slot] = ++t->count; /* index + 1 */
		} else if (open[e->slot]) {
			t->allocs[open[e->slot] - 1].end = i;
			open[e->slot] = 0;
		}
	}
	order = malloc((t->count ? t->count : 1) * sizeof *order);
	if (!order)
		goto out;
	for (size_t i = 0; i < t->count; i++)
		order[i] = &t->allocs[i];
	qsort(order, t->count, sizeof *order, by_area);
	t->banded = t->count < BANDS ? t->count : BANDS;
	for (size_t i = 0; i < t->banded; i++)
		order[i]->band = (int)i;

	/* The stack of banded allocations, event by event. */
	memset(open, 0, (series->slots ? series->slots : 1) * sizeof *open);
	for (size_t i = 0, next = 0; i < n; i++) {
		const struct wafer_trace_event *e = &series->events[i];
		if (e->size) {
			struct alloc *a = &t->allocs[next++];
			open[e->slot] = next;
			if (a->band >= 0) {
				if (add_step(a, i, height) != 0)
					goto out;
				live[nlive++] = a;
				height += a->size;
			}
		} else if (open[e->slot]) {
			struct alloc *a = &t->allocs[open[e->slot] - 1];
			open[e->slot] = 0;
			size_t p = 0;
			while (p < nlive && live[p] != a)
				p++;
			if (p < nlive) {
				height -= a->size;
				for (size_t q = p + 1; q < nlive; q++) {
					struct alloc *up = live[q];
					uint64_t o = up->steps[up->nsteps - 1]
							     .offset - a->size;
					if (add_step(up, i, o) != 0)
						goto out;
					live[q - 1] = up;
				}
				nlive--;
			}
		}
		t->stacked[i] = height;
	}
	rc = 0;
out:
	free(open);
	free(order);
	if (rc != 0)
		timeline_free(t);
	return rc;
}

/* Band |a| as a step polygon, with its size and lifetime as a tooltip. */
static void band(const struct chart *c, const struct alloc *a)
{
	FILE *out = c->out;
	char size[32];

	fprintf(out, "<polygon class=\"band\" fill=\"%s\" points=\"",
		palette[(size_t)a->band % PALETTE]);
	for (size_t k = 0; k < a->nsteps; k++) {
		size_t to = k + 1 < a->nsteps ? a->steps[k + 1].event : a->end;
		double y = y_of(c, (double)(a->steps[k].offset + a->size));
		fprintf(out, "%.1f,%.1f %.1f,%.1f ",
			x_of(c, (double)a->steps[k].event), y,
			x_of(c, (double)to), y);
	}
	for (size_t k = a->nsteps; k-- > 0;) {
		size_t to = k + 1 < a->nsteps ? a->steps[k + 1].event : a->end;
		double y = y_of(c, (double)a->steps[k].offset);
		fprintf(out, "%.1f,%.1f %.1f,%.1f ", x_of(c, (double)to), y,
			x_of(c, (double)a->steps[k].event), y);
	}
	human_bytes(size, sizeof size, a->size);
	fprintf(out, "\"><title>%s (%" PRIu64 " bytes), events %zu to %zu, "
		"trace line %" PRIu32 "</title></polygon>\n",
		size, a->size, a->start, a->end, a->line);
}

/* The grey band: from the banded allocations' top up to the bytes in
 * use, at each column's event of most bytes in use. */
static void other_band(const struct chart *c,
		       const struct replay_svg_series *series,
		       const struct timeline *t)
{
	size_t columns = c->events < PLOT_W ? c->events : PLOT_W;
	size_t *at = malloc((columns ? columns : 1) * sizeof *at);

	if (!at || !columns) {
		free(at);
		return;
	}
	for (size_t col = 0; col < columns; col++) {
		size_t from = col * c->events / columns;
		size_t to = (col + 1) * c->events / columns;
		at[col] = from;
		for (size_t i = from; i < to; i++)
			if (series->in_use[i] > series->in_use[at[col]])
				at[col] = i;
	}
	fprintf(c->out, "<polygon class=\"other\" fill=\"%s\" points=\"",
		COLOR_OTHER);
	for (size_t col = 0; col < columns; col++)
		fprintf(c->out, "%.1f,%.1f ", x_of(c, (double)at[col]),
			y_of(c, (double)series->in_use[at[col]]));
	for (size_t col = columns; col-- > 0;)
		fprintf(c->out, "%.1f,%.1f ", x_of(c, (double)at[col]),
			y_of(c, (double)t->stacked[at[col]]));
	fprintf(c->out, "\"><title>the %zu smaller allocations, "
		"together</title></polygon>\n", t->count - t->banded);
	free(at);
}

static void legend(const struct chart *c, const struct replay_svg_info *info,
		   const struct timeline *t)
{
	FILE *out = c->out;
	char live[32], reserved[32];
	human_bytes(live, sizeof live, info->peak_live);
	human_bytes(reserved, sizeof reserved, info->peak_reserved);
	int x = LEFT + 14, y = TOP + 12, h = t->count > t->banded ? 96 : 80;
	fprintf(out, "<g class=\"legend\" font-size=\"12\" fill=\"#222\">\n"
		"<rect x=\"%d\" y=\"%d\" width=\"420\" height=\"%d\" "
		"fill=\"white\" fill-opacity=\"0.9\" stroke=\"#999\"/>\n",
		x, y, h);
	fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"22\" height=\"10\" "
		"fill=\"%s\" fill-opacity=\"0.25\" stroke=\"%s\"/>\n"
		"<text x=\"%d\" y=\"%d\">reserved from storage (peak %s%s)"
		"</text>\n",
		x + 10, y + 10, COLOR_RESERVED, COLOR_RESERVED, x + 40, y + 19,
		reserved,
		(double)info->peak_reserved > c->ymax ? ", above the top" : "");
	fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
		"stroke=\"%s\" stroke-width=\"1.2\"/>\n"
		"<text x=\"%d\" y=\"%d\">in use by live allocations (peak %s; "
		"shaded: a pixel's range)</text>\n",
		x + 10, y + 32, x + 32, y + 32, COLOR_IN_USE, x + 40, y + 36,
		live);
	for (int k = 0; k < 3; k++)
		fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"7\" height=\"10\" "
			"fill=\"%s\"/>\n", x + 10 + 8 * k, y + 44,
			palette[k]);
	fprintf(out, "<text x=\"%d\" y=\"%d\">one band per allocation, the "
		"%zu largest (bytes x time), stacked as made</text>\n",
		x + 40, y + 53, t->banded);
	int row = y + 53;
	if (t->count > t->banded) {
		row += 16;
		fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"22\" height=\"10\" "
			"fill=\"%s\"/>\n<text x=\"%d\" y=\"%d\">the %zu other "
			"allocations, together</text>\n",
			x + 10, row - 9, COLOR_OTHER, x + 40, row,
			t->count - t->banded);
	}
	row += 16;
	fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
		"stroke=\"#555\" stroke-dasharray=\"4 3\"/>\n"
		"<text x=\"%d\" y=\"%d\">second half: steady_ops are counted "
		"there</text>\n",
		x + 21, row - 11, x + 21, row + 2, x + 40, row);
	fprintf(out, "</g>\n");
}

int replay_svg_write(const char *path, const struct replay_svg_series *series,
		     const struct replay_svg_info *info)
{
	struct timeline t;
	if (timeline_make(series, &t) != 0) {
		errno = ENOMEM;
		return -1;
	}
	FILE *out = fopen(path, "w");
	if (!out) {
		int err = errno;
		timeline_free(&t);
		errno = err;
		return -1;
	}
	/* Reserved sets the scale unless it dwarfs what was in use. */
	uint64_t top = info->peak_reserved > info->peak_live &&
				       info->peak_reserved / 3 <= info->peak_live
			       ? info->peak_reserved
			       : info->peak_live;
	struct chart c = {
		.out = out,
		.events = series->count,
		/* Headroom above the peak for the legend. */
		.ymax = top ? (double)top * 1.45 : 1.0,
	};
	double ratio = info->peak_live ? (double)info->peak_reserved /
						 (double)info->peak_live
				       : 0.0;

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" "
		"font-family=\"DejaVu Sans, Helvetica, Arial, sans-serif\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		WIDTH, HEIGHT, WIDTH, HEIGHT);
	fprintf(out, "<text x=\"%d\" y=\"28\" font-size=\"17\" "
		"font-weight=\"bold\" fill=\"#111\">%s, strategy %s</text>\n",
		LEFT, info->title, info->strategy);
	fprintf(out, "<text x=\"%d\" y=\"48\" font-size=\"13\" fill=\"#444\">"
		"peak reserved / peak in use = %.3f over %zu events, %zu "
		"allocations</text>\n",
		LEFT, ratio, series->count, t.count);
	axes(&c);
	fprintf(out, "<clipPath id=\"plot\"><rect x=\"%d\" y=\"%d\" "
		"width=\"%d\" height=\"%d\"/></clipPath>\n", LEFT, TOP, PLOT_W,
		PLOT_H);

	/* Reserved as a filled area closed along the x axis, behind. */
	fprintf(out, "<polygon class=\"reserved\" clip-path=\"url(#plot)\" "
		"fill=\"%s\" "
		"fill-opacity=\"0.2\" stroke=\"%s\" stroke-width=\"1.5\" "
		"stroke-linejoin=\"round\" points=\"",
		COLOR_RESERVED, COLOR_RESERVED);
	fprintf(out, "%.1f,%.1f ", x_of(&c, 0), y_of(&c, 0));
	polyline_points(&c, series->reserved);
	fprintf(out, "%.1f,%.1f\"/>\n", x_of(&c, (double)series->count - 1),
		y_of(&c, 0));
	if (t.count > t.banded)
		other_band(&c, series, &t);
	for (size_t i = 0; i < t.count; i++)
		if (t.allocs[i].band >= 0)
			band(&c, &t.allocs[i]);
	/* In use: the line at each column's most, and the range down to its
	 * least shaded, where a column holds many events (the turnover of a
	 * training step shows as that range). */
	fprintf(out, "<polygon class=\"in-use-range\" fill=\"%s\" "
		"fill-opacity=\"0.3\" points=\"", COLOR_IN_USE);
	column_points(&c, series->in_use, 0, 0);
	column_points(&c, series->in_use, 1, 1);
	fprintf(out, "\"/>\n");
	fprintf(out, "<polyline class=\"in-use\" fill=\"none\" stroke=\"%s\" "
		"stroke-width=\"1.2\" stroke-linejoin=\"round\" points=\"",
		COLOR_IN_USE);
	polyline_points(&c, series->in_use);
	fprintf(out, "\"/>\n");

	double xh = x_of(&c, (double)info->half);
	fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
		"stroke=\"#555\" stroke-dasharray=\"4 3\"/>\n", xh, TOP, xh,
		TOP + PLOT_H);
	legend(&c, info, &t);
	fprintf(out, "</svg>\n");
	timeline_free(&t);
	if (ferror(out)) {
		int err = errno ? errno : EIO;
		fclose(out);
		errno = err;
		return -1;
	}
	return fclose(out) == 0 ? 0 : -1;
}
