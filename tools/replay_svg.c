/* wafer — SPDX-License-Identifier: MIT
 *
 * replay_svg.c: draws wafer-replay's memory-over-events chart
 * (replay_svg.h). A trace can have millions of events and a chart has
 * hundreds of pixels, so each pixel column shows the largest value of the
 * events under it: a one-event peak stays visible, which is what a reader
 * of a memory chart looks for. */
#include "build-config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
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
#define COLOR_IN_USE "#1f5fbf"

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

/* The largest value in each pixel column, as "x,y" points. */
static void polyline_points(const struct chart *c, const uint64_t *values)
{
	size_t columns = c->events < PLOT_W ? c->events : PLOT_W;
	for (size_t col = 0; col < columns; col++) {
		size_t from = col * c->events / columns;
		size_t to = (col + 1) * c->events / columns;
		uint64_t max = 0;
		for (size_t i = from; i < to; i++)
			if (values[i] > max)
				max = values[i];
		double event = columns == c->events
				       ? (double)col
				       : (double)(from + to - 1) / 2.0;
		fprintf(c->out, "%.1f,%.1f ", x_of(c, event),
			y_of(c, (double)max));
	}
}

static void axes(const struct chart *c)
{
	FILE *out = c->out;
	double unit;
	const char *name = byte_unit(c->ymax, &unit);
	double step = nice_step(c->ymax, unit, 6);

	fprintf(out, "<g font-size=\"12\" fill=\"#333\">\n");
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

static void legend(const struct chart *c, const struct replay_svg_info *info)
{
	FILE *out = c->out;
	char live[32], reserved[32];
	human_bytes(live, sizeof live, info->peak_live);
	human_bytes(reserved, sizeof reserved, info->peak_reserved);
	int x = LEFT + 14, y = TOP + 12;
	fprintf(out, "<g font-size=\"12\" fill=\"#222\">\n"
		"<rect x=\"%d\" y=\"%d\" width=\"318\" height=\"66\" "
		"fill=\"white\" fill-opacity=\"0.9\" stroke=\"#999\"/>\n",
		x, y);
	fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"22\" height=\"10\" "
		"fill=\"%s\" fill-opacity=\"0.25\" stroke=\"%s\"/>\n"
		"<text x=\"%d\" y=\"%d\">reserved from storage (peak %s)</text>\n",
		x + 10, y + 10, COLOR_RESERVED, COLOR_RESERVED, x + 40, y + 19,
		reserved);
	fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
		"stroke=\"%s\" stroke-width=\"2\"/>\n"
		"<text x=\"%d\" y=\"%d\">in use by live allocations (peak %s)"
		"</text>\n",
		x + 10, y + 34, x + 32, y + 34, COLOR_IN_USE, x + 40, y + 38,
		live);
	fprintf(out, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
		"stroke=\"#555\" stroke-dasharray=\"4 3\"/>\n"
		"<text x=\"%d\" y=\"%d\">second half: steady_ops are counted "
		"there</text>\n",
		x + 21, y + 46, x + 21, y + 60, x + 40, y + 57);
	fprintf(out, "</g>\n");
}

int replay_svg_write(const char *path, const struct replay_svg_series *series,
		     const struct replay_svg_info *info)
{
	FILE *out = fopen(path, "w");
	if (!out)
		return -1;
	uint64_t top = info->peak_reserved > info->peak_live
			       ? info->peak_reserved : info->peak_live;
	struct chart c = {
		.out = out,
		.events = series->count,
		/* Headroom above the peak for the legend. */
		.ymax = top ? (double)top * 1.3 : 1.0,
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
		"peak reserved / peak in use = %.3f over %zu events</text>\n",
		LEFT, ratio, series->count);
	axes(&c);

	double xh = x_of(&c, (double)info->half);
	fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
		"stroke=\"#555\" stroke-dasharray=\"4 3\"/>\n", xh, TOP, xh,
		TOP + PLOT_H);

	/* Reserved as a filled area closed along the x axis. */
	fprintf(out, "<polygon fill=\"%s\" fill-opacity=\"0.25\" stroke=\"%s\" "
		"stroke-width=\"1.5\" stroke-linejoin=\"round\" points=\"",
		COLOR_RESERVED, COLOR_RESERVED);
	fprintf(out, "%.1f,%.1f ", x_of(&c, 0), y_of(&c, 0));
	polyline_points(&c, series->reserved);
	fprintf(out, "%.1f,%.1f\"/>\n", x_of(&c, (double)series->count - 1),
		y_of(&c, 0));
	fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" "
		"stroke-linejoin=\"round\" points=\"", COLOR_IN_USE);
	polyline_points(&c, series->in_use);
	fprintf(out, "\"/>\n");

	legend(&c, info);
	fprintf(out, "</svg>\n");
	if (ferror(out)) {
		int err = errno ? errno : EIO;
		fclose(out);
		errno = err;
		return -1;
	}
	return fclose(out) == 0 ? 0 : -1;
}
