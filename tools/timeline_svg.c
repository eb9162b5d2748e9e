/* wafer — SPDX-License-Identifier: MIT
 *
 * timeline_svg.c: a checked timeline trace drawn as one SVG picture
 * (`wafer-trace svg`), for where no trace viewer is at hand: one row per
 * lane (a queue's host or device side of one client, named as the file's
 * thread_name records name them), each span a box coloured by its name
 * and labelled where it is wide enough, nested spans one level lower,
 * cross-queue waits as arrows, errors as red marks, and the memory
 * counter as a line under the lanes. Hovering a box shows its name,
 * duration and args (an SVG <title>). */
#include "build-config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/timeline.h"

enum { WIDTH = 1400, LABEL = 230, ROW = 16, GAP = 8, TOP = 30,
       CHART = 60 };

struct lane {
	double pid, tid;
	const char *name;    /* thread_name */
	const char *process; /* process_name of its pid */
	int depth;    /* levels of nesting */
	double y;     /* top of the lane */
};

struct lanes {
	struct lane *v;
	size_t n, cap;
};

static const char *str(const struct json *e, const char *key)
{
	const struct json *v = json_get(e, key);
	return v && v->type == JSON_STRING ? v->string : NULL;
}

static double num(const struct json *e, const char *key, double fallback)
{
	const struct json *v = json_get(e, key);
	return v && v->type == JSON_NUMBER ? v->number : fallback;
}

static struct lane *lane_of(struct lanes *l, double pid, double tid)
{
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].pid == pid && l->v[i].tid == tid)
			return &l->v[i];
	if (l->n == l->cap) {
		size_t cap = l->cap ? 2 * l->cap : 16;
		struct lane *v = realloc(l->v, cap * sizeof *v);
		if (!v)
			return NULL;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n] = (struct lane){.pid = pid, .tid = tid};
	return &l->v[l->n++];
}

static int by_pid_tid(const void *a, const void *b)
{
	const struct lane *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/* XML text: the five characters escaped. */
static void text(FILE *out, const char *s)
{
	for (; s && *s; s++)
		switch (*s) {
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '&': fputs("&amp;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&apos;", out); break;
		default: fputc(*s, out);
		}
}

/* A span's args as "key=value" pairs (numbers and strings). */
static void args_text(FILE *out, const struct json *e)
{
	const struct json *args = json_get(e, "args");
	for (size_t i = 0; args && args->type == JSON_OBJECT && i < args->count;
	     i++) {
		const struct json *m = &args->items[i];
		if (m->type == JSON_NUMBER)
			fprintf(out, " %s=%.15g", m->key, m->number);
		else if (m->type == JSON_STRING) {
			fprintf(out, " %s=", m->key);
			text(out, m->string);
		}
	}
}

/* One hue per name, the same in every picture. */
static unsigned hue(const char *name)
{
	uint32_t h = 2166136261u;
	for (; name && *name; name++)
		h = (h ^ (unsigned char)*name) * 16777619u;
	return h % 360;
}

/* The depth of each complete event on its lane: spans nest (checked),
 * so a stack of end times gives it. Lanes get their depth counts. */
static int *depths(const struct json *events, struct lanes *l)
{
	int *d = calloc(events->count ? events->count : 1, sizeof *d);
	double *ends = calloc(events->count ? events->count : 1, sizeof *ends);
	if (!d || !ends) {
		free(d);
		free(ends);
		return NULL;
	}
	for (size_t k = 0; k < l->n; k++) {
		int top = 0;
		for (size_t i = 0; i < events->count; i++) {
			const struct json *e = &events->items[i];
			const char *ph = str(e, "ph");
			if (!ph || strcmp(ph, "X") || num(e, "pid", -1) != l->v[k].pid ||
			    num(e, "tid", -1) != l->v[k].tid)
				continue;
			double ts = num(e, "ts", 0), dur = num(e, "dur", 0);
			while (top > 0 && ends[top - 1] <= ts)
				top--;
			d[i] = top;
			ends[top++] = ts + dur;
			if (top > l->v[k].depth)
				l->v[k].depth = top;
		}
	}
	free(ends);
	return d;
}

int timeline_svg(const struct json *root, FILE *out)
{
	const struct json *events = json_get(root, "traceEvents");
	const struct json *other = json_get(root, "otherData");
	struct lanes l = {0};
	double span = other ? num(other, "duration_ns", 0) / 1000.0 : 0;
	double mem_max = 0;

	/* Lanes: those that name themselves, and those that hold spans. */
	for (size_t i = 0; i < events->count; i++) {
		const struct json *e = &events->items[i];
		const char *ph = str(e, "ph"), *name = str(e, "name");
		double end = num(e, "ts", 0) + num(e, "dur", 0);
		if (end > span)
			span = end;
		if (!strcmp(ph, "C") && name && !strcmp(name, "memory")) {
			const struct json *a = json_get(e, "args");
			double r = num(a, "reserved", 0), u = num(a, "in_use", 0);
			mem_max = r > mem_max ? r : u > mem_max ? u : mem_max;
		}
		bool named = !strcmp(ph, "M") && name &&
			     !strcmp(name, "thread_name");
		if (!named && strcmp(ph, "X"))
			continue;
		struct lane *lane = lane_of(&l, num(e, "pid", 0), num(e, "tid", 0));
		if (!lane)
			goto oom;
		if (named)
			lane->name = str(json_get(e, "args"), "name");
	}
	for (size_t i = 0; i < events->count; i++) {
		const struct json *e = &events->items[i];
		const char *name = str(e, "name");
		if (strcmp(str(e, "ph"), "M") || !name ||
		    strcmp(name, "process_name"))
			continue;
		for (size_t k = 0; k < l.n; k++)
			if (l.v[k].pid == num(e, "pid", 0))
				l.v[k].process = str(json_get(e, "args"), "name");
	}
	qsort(l.v, l.n, sizeof *l.v, by_pid_tid);
	int *depth = depths(events, &l);
	if (!depth)
		goto oom;
	double y = TOP;
	for (size_t k = 0; k < l.n; k++) {
		l.v[k].y = y;
		y += (l.v[k].depth ? l.v[k].depth : 1) * ROW + GAP;
	}
	double chart = y + GAP, height = chart + (mem_max > 0 ? CHART : 0) + 20;
	double scale = span > 0 ? (WIDTH - LABEL - 10) / span : 1;
#define X(ts) (LABEL + (ts) * scale)

	fprintf(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		     "height=\"%.0f\" font-family=\"sans-serif\" "
		     "font-size=\"10\">\n",
		WIDTH, height);
	fprintf(out, "<text x=\"4\" y=\"14\" font-size=\"12\">wafer trace: "
		     "%.3f ms; hover a box for its args</text>\n",
		span / 1000.0);
	for (size_t k = 0; k < l.n; k++) {
		fprintf(out, "<text x=\"4\" y=\"%.1f\"><title>", l.v[k].y + 11);
		text(out, l.v[k].process);
		fprintf(out, "</title>");
		if (l.v[k].name)
			text(out, l.v[k].name);
		else
			fprintf(out, "pid %.0f tid %.0f", l.v[k].pid, l.v[k].tid);
		if (k == 0 || l.v[k - 1].pid != l.v[k].pid)
			fprintf(out, " (pid %.0f)", l.v[k].pid);
		fprintf(out, "</text>\n<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" "
			     "y2=\"%.1f\" stroke=\"#ddd\"/>\n",
			LABEL, WIDTH, l.v[k].y - GAP / 2.0, l.v[k].y - GAP / 2.0);
	}
	for (size_t i = 0; i < events->count; i++) {
		const struct json *e = &events->items[i];
		const char *ph = str(e, "ph"), *name = str(e, "name");
		double ts = num(e, "ts", 0);
		struct lane *lane = NULL;
		for (size_t k = 0; k < l.n && !lane; k++)
			if (l.v[k].pid == num(e, "pid", 0) &&
			    l.v[k].tid == num(e, "tid", 0))
				lane = &l.v[k];
		if (!strcmp(ph, "X") && lane) {
			double w = num(e, "dur", 0) * scale;
			double top = lane->y + depth[i] * ROW;
			const char *cat = str(e, "cat");
			bool device = cat && !strcmp(cat, "device");
			fprintf(out, "<g><title>");
			text(out, name);
			fprintf(out, " (%s) %.3f us", cat ? cat : "",
				num(e, "dur", 0));
			args_text(out, e);
			fprintf(out, "</title><rect x=\"%.2f\" y=\"%.1f\" "
				     "width=\"%.2f\" height=\"%d\" "
				     "fill=\"hsl(%u,60%%,%d%%)\" "
				     "stroke=\"#555\" stroke-width=\"0.3\"/>",
				X(ts), top, w < 0.5 ? 0.5 : w, ROW - 2,
				hue(name), device ? 55 : 75);
			if (w > 6.0 * (double)strlen(name ? name : "") + 4) {
				fprintf(out, "<text x=\"%.2f\" y=\"%.1f\">",
					X(ts) + 2, top + 11);
				text(out, name);
				fprintf(out, "</text>");
			}
			fprintf(out, "</g>\n");
		} else if (!strcmp(ph, "i") && lane) {
			fprintf(out, "<g><title>");
			text(out, name);
			args_text(out, e);
			fprintf(out, "</title><path d=\"M%.2f %.1f l4 8 h-8 z\" "
				     "fill=\"red\"/></g>\n",
				X(ts), lane->y);
		}
	}
	/* Flow arrows: each end joined to the start with the same id. */
	for (size_t i = 0; i < events->count; i++) {
		const struct json *f = &events->items[i];
		if (strcmp(str(f, "ph"), "f"))
			continue;
		for (size_t j = 0; j < events->count; j++) {
			const struct json *s = &events->items[j];
			if (strcmp(str(s, "ph"), "s") ||
			    num(s, "id", -1) != num(f, "id", -2))
				continue;
			double ys = 0, yf = 0;
			for (size_t k = 0; k < l.n; k++) {
				if (l.v[k].pid == num(s, "pid", 0) &&
				    l.v[k].tid == num(s, "tid", 0))
					ys = l.v[k].y + ROW / 2.0;
				if (l.v[k].pid == num(f, "pid", 0) &&
				    l.v[k].tid == num(f, "tid", 0))
					yf = l.v[k].y + ROW / 2.0;
			}
			fprintf(out, "<line x1=\"%.2f\" y1=\"%.1f\" x2=\"%.2f\" "
				     "y2=\"%.1f\" stroke=\"#c00\" "
				     "stroke-width=\"0.8\"/>\n",
				X(num(s, "ts", 0)), ys, X(num(f, "ts", 0)), yf);
			break;
		}
	}
	/* The memory counter: reserved (grey) and in use (blue). */
	if (mem_max > 0) {
		static const char *const series[] = {"reserved", "in_use"};
		static const char *const colour[] = {"#888", "#36c"};
		fprintf(out, "<text x=\"4\" y=\"%.1f\">memory (max %.1f MiB): "
			     "reserved, in use</text>\n",
			chart + 12, mem_max / 1048576.0);
		for (int s = 0; s < 2; s++) {
			fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" "
				     "points=\"",
				colour[s]);
			for (size_t i = 0; i < events->count; i++) {
				const struct json *e = &events->items[i];
				const char *name = str(e, "name");
				if (strcmp(str(e, "ph"), "C") || !name ||
				    strcmp(name, "memory"))
					continue;
				double v = num(json_get(e, "args"), series[s], 0);
				fprintf(out, "%.2f,%.1f ", X(num(e, "ts", 0)),
					chart + CHART - v / mem_max * (CHART - 4));
			}
			fprintf(out, "\"/>\n");
		}
	}
#undef X
	fprintf(out, "</svg>\n");
	free(depth);
	free(l.v);
	return 0;
oom:
	free(l.v);
	fprintf(stderr, "wafer-trace: out of memory\n");
	return 1;
}
