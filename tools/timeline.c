/* wafer — SPDX-License-Identifier: MIT
 * timeline.c: reading, checking and summarising a timeline trace (see
 * timeline.h). */
#include "build-config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/timeline.h"

/*===----------------------------------------------------------------------===
 * JSON
 *===----------------------------------------------------------------------===*/

struct parser {
	const char *p, *start;
	char *error;
	size_t error_size;
	bool failed;
	int depth;
};

static bool fail(struct parser *ps, const char *what)
{
	if (!ps->failed)
		snprintf(ps->error, ps->error_size, "%s at byte %zu", what,
			 (size_t)(ps->p - ps->start));
	ps->failed = true;
	return false;
}

static void skip_space(struct parser *ps)
{
	while (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\t' ||
	       *ps->p == '\r')
		ps->p++;
}

static void put_utf8(char **out, unsigned c)
{
	char *o = *out;
	if (c < 0x80) {
		*o++ = (char)c;
	} else if (c < 0x800) {
		*o++ = (char)(0xc0 | c >> 6);
		*o++ = (char)(0x80 | (c & 0x3f));
	} else if (c < 0x10000) {
		*o++ = (char)(0xe0 | c >> 12);
		*o++ = (char)(0x80 | (c >> 6 & 0x3f));
		*o++ = (char)(0x80 | (c & 0x3f));
	} else {
		*o++ = (char)(0xf0 | c >> 18);
		*o++ = (char)(0x80 | (c >> 12 & 0x3f));
		*o++ = (char)(0x80 | (c >> 6 & 0x3f));
		*o++ = (char)(0x80 | (c & 0x3f));
	}
	*out = o;
}

static bool hex4(const char *p, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		char c = p[i];
		v <<= 4;
		if (c >= '0' && c <= '9')
			v |= (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v |= (unsigned)(c - 'a' + 10);
		else if (c >= 'A' && c <= 'F')
			v |= (unsigned)(c - 'A' + 10);
		else
			return false;
	}
	*out = v;
	return true;
}

/* A string at ps->p (its opening quote); a new decoded copy. */
static char *parse_string(struct parser *ps)
{
	const char *p = ps->p + 1;
	size_t n = 0;
	while (p[n] && p[n] != '"')
		n += p[n] == '\\' && p[n + 1] ? 2 : 1;
	if (p[n] != '"') {
		fail(ps, "unterminated string");
		return NULL;
	}
	char *s = malloc(n + 1), *o = s;
	if (!s) {
		fail(ps, "out of memory");
		return NULL;
	}
	for (const char *q = p; q < p + n; q++) {
		if ((unsigned char)*q < 0x20) {
			free(s);
			fail(ps, "control character in a string");
			return NULL;
		}
		if (*q != '\\') {
			*o++ = *q;
			continue;
		}
		q++;
		unsigned c;
		switch (*q) {
		case '"': case '\\': case '/': *o++ = *q; break;
		case 'b': *o++ = '\b'; break;
		case 'f': *o++ = '\f'; break;
		case 'n': *o++ = '\n'; break;
		case 'r': *o++ = '\r'; break;
		case 't': *o++ = '\t'; break;
		case 'u':
			if (q + 4 >= p + n + 1 || !hex4(q + 1, &c)) {
				free(s);
				fail(ps, "bad \\u escape");
				return NULL;
			}
			q += 4;
			put_utf8(&o, c); /* at most 3 bytes for 6 read */
			break;
		default:
			free(s);
			fail(ps, "bad escape in a string");
			return NULL;
		}
	}
	*o = 0;
	ps->p = p + n + 1;
	return s;
}

static bool parse_value(struct parser *ps, struct json *out);
static void json_free_members(struct json *v);

static bool push(struct parser *ps, struct json *parent, struct json *item)
{
	struct json *grown =
		realloc(parent->items, (parent->count + 1) * sizeof *grown);
	if (!grown)
		return fail(ps, "out of memory");
	parent->items = grown;
	parent->items[parent->count++] = *item;
	return true;
}

static bool parse_container(struct parser *ps, struct json *out, bool object)
{
	out->type = object ? JSON_OBJECT : JSON_ARRAY;
	if (++ps->depth > 64)
		return fail(ps, "nested too deep");
	ps->p++;
	skip_space(ps);
	char close = object ? '}' : ']';
	if (*ps->p == close) {
		ps->p++;
		ps->depth--;
		return true;
	}
	for (;;) {
		struct json item = {0};
		skip_space(ps);
		if (object) {
			if (*ps->p != '"')
				return fail(ps, "expected a member name");
			item.key = parse_string(ps);
			if (!item.key)
				return false;
			skip_space(ps);
			if (*ps->p != ':') {
				free(item.key);
				return fail(ps, "expected ':'");
			}
			ps->p++;
		}
		if (!parse_value(ps, &item) || !push(ps, out, &item)) {
			json_free_members(&item);
			return false;
		}
		skip_space(ps);
		if (*ps->p == ',') {
			ps->p++;
			continue;
		}
		if (*ps->p == close) {
			ps->p++;
			ps->depth--;
			return true;
		}
		return fail(ps, object ? "expected ',' or '}'"
				       : "expected ',' or ']'");
	}
}

static bool parse_value(struct parser *ps, struct json *out)
{
	skip_space(ps);
	const char *p = ps->p;
	if (*p == '{' || *p == '[')
		return parse_container(ps, out, *p == '{');
	if (*p == '"') {
		out->type = JSON_STRING;
		out->string = parse_string(ps);
		return out->string != NULL;
	}
	if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
		out->type = JSON_BOOL;
		out->number = *p == 't';
		ps->p += *p == 't' ? 4 : 5;
		return true;
	}
	if (!strncmp(p, "null", 4)) {
		out->type = JSON_NULL;
		ps->p += 4;
		return true;
	}
	if (*p == '-' || (*p >= '0' && *p <= '9')) {
		char *end;
		out->type = JSON_NUMBER;
		out->number = strtod(p, &end);
		ps->p = end;
		return end != p || fail(ps, "bad number");
	}
	return fail(ps, "expected a value");
}

static void json_free_members(struct json *v)
{
	for (size_t i = 0; i < v->count; i++)
		json_free_members(&v->items[i]);
	free(v->items);
	free(v->string);
	free(v->key);
}

void json_free(struct json *v)
{
	if (!v)
		return;
	json_free_members(v);
	free(v);
}

struct json *json_parse(const char *text, char *error, size_t error_size)
{
	struct parser ps = {text, text, error, error_size, false, 0};
	struct json *root = calloc(1, sizeof *root);
	if (!root) {
		snprintf(error, error_size, "out of memory");
		return NULL;
	}
	if (parse_value(&ps, root)) {
		skip_space(&ps);
		if (!*ps.p)
			return root;
		fail(&ps, "text after the value");
	}
	json_free(root);
	return NULL;
}

const struct json *json_get(const struct json *object, const char *key)
{
	if (!object || object->type != JSON_OBJECT)
		return NULL;
	for (size_t i = 0; i < object->count; i++)
		if (!strcmp(object->items[i].key, key))
			return &object->items[i];
	return NULL;
}

char *timeline_read_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 1 << 16, n = 0;
	char *text = malloc(cap);
	size_t got;
	while (text && (got = fread(text + n, 1, cap - n - 1, f)) > 0) {
		n += got;
		if (n + 1 == cap) {
			char *grown = realloc(text, cap *= 2);
			if (!grown) {
				free(text);
				text = NULL;
			}
			text = grown;
		}
	}
	int err = ferror(f) ? EIO : ENOMEM;
	fclose(f);
	if (!text) {
		errno = err;
		return NULL;
	}
	text[n] = 0;
	return text;
}

/*===----------------------------------------------------------------------===
 * The schema
 *===----------------------------------------------------------------------===*/

static const char *str_of(const struct json *e, const char *key)
{
	const struct json *v = json_get(e, key);
	return v && v->type == JSON_STRING ? v->string : NULL;
}

static double num_of(const struct json *e, const char *key, double missing)
{
	const struct json *v = json_get(e, key);
	return v && v->type == JSON_NUMBER ? v->number : missing;
}

static bool whole(double v)
{
	return v >= 0 && v < 9e15 && v == floor(v);
}

/* The complete events of one lane, for the order check. */
struct span {
	double pid, tid, ts, end;
	size_t index;
};

static int by_lane(const void *a, const void *b)
{
	const struct span *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

#define BAD(...) (snprintf(error, error_size, __VA_ARGS__), false)

bool timeline_check(const struct json *root, char *error, size_t error_size)
{
	const struct json *events = json_get(root, "traceEvents");
	if (!events || events->type != JSON_ARRAY)
		return BAD("no \"traceEvents\" array");
	const struct json *other = json_get(root, "otherData");
	double duration = num_of(other, "duration_ns", -1);
	if (duration < 0)
		return BAD("no otherData.duration_ns");
	duration /= 1000; /* ts is in microseconds */
	struct span *spans = calloc(events->count + 1, sizeof *spans);
	if (!spans)
		return BAD("out of memory");
	size_t n = 0;
	bool good = true;
	for (size_t i = 0; good && i < events->count; i++) {
		const struct json *e = &events->items[i];
		const char *ph = str_of(e, "ph");
		double pid = num_of(e, "pid", -1), tid = num_of(e, "tid", -1);
		double ts = num_of(e, "ts", -1), dur = num_of(e, "dur", -1);
		const struct json *args = json_get(e, "args");
		if (e->type != JSON_OBJECT)
			good = BAD("event %zu is not an object", i);
		else if (!ph || strlen(ph) != 1 || !strchr("XBEiCMsf", *ph))
			good = BAD("event %zu: \"ph\" is not one of X B E i C M s f", i);
		else if (!str_of(e, "name"))
			good = BAD("event %zu: no string \"name\"", i);
		else if (!whole(pid) || !whole(tid))
			good = BAD("event %zu: \"pid\" and \"tid\" are not integers", i);
		else if (ts < 0)
			good = BAD("event %zu: no \"ts\" >= 0", i);
		else if (args && args->type != JSON_OBJECT)
			good = BAD("event %zu: \"args\" is not an object", i);
		else if (*ph == 'X' && dur < 0)
			good = BAD("event %zu: complete event without \"dur\" >= 0", i);
		else if ((*ph == 's' || *ph == 'f') && !json_get(e, "id"))
			good = BAD("event %zu: flow event without \"id\"", i);
		else if (*ph != 'M' && ts + (dur > 0 ? dur : 0) > duration + 0.001)
			good = BAD("event %zu ('%s') ends at %.3f us, after the "
				   "trace (%.3f us)",
				   i, str_of(e, "name"), ts + (dur > 0 ? dur : 0),
				   duration);
		if (good && *ph == 'C')
			for (size_t k = 0; args && k < args->count; k++)
				if (args->items[k].type != JSON_NUMBER)
					good = BAD("event %zu: counter '%s' is "
						   "not a number",
						   i, args->items[k].key);
		if (good && *ph == 'f') {
			double id = num_of(e, "id", -1);
			bool started = false;
			for (size_t k = 0; k < i && !started; k++) {
				const char *kph = str_of(&events->items[k], "ph");
				started = kph && *kph == 's' &&
					  num_of(&events->items[k], "id", -2) == id;
			}
			if (!started)
				good = BAD("event %zu: flow end without a start", i);
		}
		if (good && *ph == 'X')
			spans[n++] = (struct span){pid, tid, ts, ts + dur, i};
	}
	/* Per lane, in file order: each starts no earlier than the one
	 * before, and after it ends or inside it (a stack of open spans). */
	qsort(spans, n, sizeof *spans, by_lane);
	double stack[64];
	int depth = 0;
	for (size_t i = 0; good && i < n; i++) {
		const struct span *s = &spans[i];
		if (i == 0 || s->pid != spans[i - 1].pid ||
		    s->tid != spans[i - 1].tid)
			depth = 0;
		else if (s->ts + 0.0005 < spans[i - 1].ts)
			good = BAD("event %zu starts before event %zu on its "
				   "lane (pid %.0f tid %.0f)",
				   s->index, spans[i - 1].index, s->pid, s->tid);
		while (good && depth && stack[depth - 1] <= s->ts + 0.0005)
			depth--;
		if (good && depth && s->end > stack[depth - 1] + 0.0005)
			good = BAD("event %zu overlaps the span it starts in "
				   "without lying inside it (pid %.0f tid %.0f)",
				   s->index, s->pid, s->tid);
		if (good && depth < 64)
			stack[depth++] = s->end;
	}
	free(spans);
	return good;
}

/*===----------------------------------------------------------------------===
 * The report
 *===----------------------------------------------------------------------===*/

struct row {
	char name[96];
	uint64_t count;
	double total, max; /* microseconds; bytes for allocators */
};

static struct row *row_of(struct row **rows, size_t *n, const char *name)
{
	for (size_t i = 0; i < *n; i++)
		if (!strncmp((*rows)[i].name, name, sizeof (*rows)[i].name - 1))
			return &(*rows)[i];
	struct row *grown = realloc(*rows, (*n + 1) * sizeof *grown);
	if (!grown)
		return NULL;
	*rows = grown;
	struct row *r = &grown[(*n)++];
	memset(r, 0, sizeof *r);
	snprintf(r->name, sizeof r->name, "%s", name);
	return r;
}

static int by_total(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	return x->total < y->total ? 1 : x->total > y->total ? -1 : 0;
}

/* One queue: its host and device busy time, and the device's window. */
struct lane {
	double pid, tid;
	double host_busy, device_busy, first, last;
	char name[64];
};

static struct lane *lane_of(struct lane *lanes, size_t *n, double pid,
			    double tid)
{
	for (size_t i = 0; i < *n; i++)
		if (lanes[i].pid == pid && lanes[i].tid == tid)
			return &lanes[i];
	if (*n == 256)
		return NULL;
	struct lane *l = &lanes[(*n)++];
	*l = (struct lane){pid, tid, 0, 0, INFINITY, 0, ""};
	return l;
}

static const char *command_of(const struct json *e)
{
	return str_of(json_get(e, "args"), "command");
}

void timeline_report(const struct json *root, FILE *out, size_t top)
{
	const struct json *events = json_get(root, "traceEvents");
	const struct json *other = json_get(root, "otherData");
	struct row *kernels = NULL, *allocs = NULL;
	size_t nk = 0, na = 0, nl = 0;
	static struct lane lanes[256];
	/* handle -> bytes reserved, until a kernel names it */
	struct { double handle, bytes; } *held = NULL;
	size_t nh = 0;
	bool device = false;
	double first = INFINITY, last = 0, kernel_total = 0;

	for (size_t i = 0; i < events->count; i++) {
		const struct json *e = &events->items[i];
		const char *ph = str_of(e, "ph"), *cat = str_of(e, "cat");
		if (ph && *ph == 'X' && cat && !strcmp(cat, "device"))
			device = true;
	}
	for (size_t i = 0; i < events->count; i++) {
		const struct json *e = &events->items[i];
		const char *ph = str_of(e, "ph"), *cat = str_of(e, "cat");
		const char *command = command_of(e);
		const struct json *args = json_get(e, "args");
		if (!ph || *ph != 'X' || !cat)
			continue;
		double ts = num_of(e, "ts", 0), dur = num_of(e, "dur", 0);
		double pid = num_of(e, "pid", 0), tid = num_of(e, "tid", 0);
		bool on_device = !strcmp(cat, "device");
		if (ts < first)
			first = ts;
		if (ts + dur > last)
			last = ts + dur;
		/* The host tid of a device lane (trace.c: 1000 + lane). */
		struct lane *l = lane_of(lanes, &nl, pid,
					 on_device ? tid - 1000 + 1 : tid);
		if (l && on_device) {
			l->device_busy += dur;
			if (ts < l->first)
				l->first = ts;
			if (ts + dur > l->last)
				l->last = ts + dur;
		} else if (l) {
			l->host_busy += dur;
		}
		bool kernel = command && !strcmp(command, "execute");
		if (kernel && on_device == device) {
			struct row *r = row_of(&kernels, &nk, str_of(e, "name"));
			if (r) {
				r->count++;
				r->total += dur;
				r->max = dur > r->max ? dur : r->max;
				kernel_total += dur;
			}
		}
		if (on_device)
			continue;
		if (command && !strcmp(command, "reserve")) {
			void *grown = realloc(held, (nh + 1) * sizeof *held);
			if (grown) {
				held = grown;
				held[nh].handle = num_of(args, "handle", 0);
				held[nh++].bytes = num_of(args, "bytes", 0);
			}
		}
		const struct json *handles = json_get(args, "handles");
		for (size_t k = 0; kernel && handles && k < handles->count; k++)
			for (size_t h = 0; h < nh; h++)
				if (held[h].handle == handles->items[k].number) {
					struct row *r = row_of(
						&allocs, &na, str_of(e, "name"));
					if (r) {
						r->count++;
						r->total += held[h].bytes;
					}
					held[h] = held[--nh];
					break;
				}
	}
	double other_bytes = 0;
	for (size_t h = 0; h < nh; h++)
		other_bytes += held[h].bytes;
	free(held);

	double step = last > first ? last - first : 0;
	fprintf(out, "trace: %s, %.0f commands, %.3f ms from first to last span\n",
		str_of(other, "producer") ? str_of(other, "producer") : "?",
		num_of(other, "commands", 0), step / 1000);
	fprintf(out, "device times: %s\n",
		device ? "from timing events"
		       : "none in this file (host spans only: kernel times "
			 "below are host submit times)");
	if (num_of(other, "errors", 0) > 0)
		fprintf(out, "errors: %.0f (instant events named \"error\")\n",
			num_of(other, "errors", 0));

	qsort(kernels, nk, sizeof *kernels, by_total);
	fprintf(out, "\n%-32s %7s %12s %10s %10s %7s\n", "kernel", "count",
		"total ms", "mean us", "max us", "share");
	for (size_t i = 0; i < nk; i++)
		fprintf(out, "%-32s %7" PRIu64 " %12.3f %10.2f %10.2f %6.1f%%\n",
			kernels[i].name, kernels[i].count,
			kernels[i].total / 1000,
			kernels[i].total / (double)kernels[i].count,
			kernels[i].max,
			step > 0 ? 100 * kernels[i].total / step : 0);
	if (!nk)
		fprintf(out, "(no kernels)\n");
	fprintf(out, "%-32s %7s %12.3f   (%.1f%% of the step)\n", "all kernels",
		"", kernel_total / 1000,
		step > 0 ? 100 * kernel_total / step : 0);

	fprintf(out, "\n%-12s %5s %12s %12s %12s  %s\n", "client", "queue",
		"host ms", "device ms", "idle ms", "verdict");
	for (size_t i = 0; i < nl; i++) {
		struct lane *l = &lanes[i];
		if (l->tid >= 1000)
			continue;
		double window = l->last > l->first ? l->last - l->first : 0;
		double idle = window - l->device_busy;
		const char *verdict =
			!device ? "no device times"
			: !window ? "no device work"
			: idle > 0.5 * window && l->host_busy >= l->device_busy
				? "launch-bound: the device waits for the host"
				: "device-bound";
		fprintf(out, "%-12.0f %5.0f %12.3f %12.3f %12.3f  %s\n", l->pid,
			l->tid - 1, l->host_busy / 1000, l->device_busy / 1000,
			idle > 0 ? idle / 1000 : 0, verdict);
	}

	qsort(allocs, na, sizeof *allocs, by_total);
	fprintf(out, "\n%-32s %9s %14s\n", "memory first used by", "handles",
		"bytes");
	for (size_t i = 0; i < na && i < top; i++)
		fprintf(out, "%-32s %9" PRIu64 " %14.0f\n", allocs[i].name,
			allocs[i].count, allocs[i].total);
	if (other_bytes > 0)
		fprintf(out, "%-32s %9s %14.0f\n", "(no kernel: copies only)", "",
			other_bytes);
	free(kernels);
	free(allocs);
}
