/* wafer — SPDX-License-Identifier: MIT
 *
 * timeline.h: reading back a timeline trace (wafer_trace_begin(3)): a
 * small JSON reader, the check of the trace-event schema the file must
 * follow, and the summary wafer-trace(1) prints. Shared by the tool and
 * the tests (t/api/trace.c), so both judge a file by one rule.
 *
 * The schema checked (what Perfetto and chrome://tracing read, as wafer
 * writes it): one object whose "traceEvents" is an array of objects,
 * each with a one-letter "ph" among X B E i C M s f, a string "name",
 * integer "pid" and "tid", a number "ts" >= 0; "dur" >= 0 on X; "args"
 * an object where present (counters: numbers only); "id" on s and f.
 * On top, what wafer promises: per (pid, tid) the complete events are
 * ordered by start and nest (each starts after the one before it ends,
 * or lies inside it), every event lies within [0, otherData.duration_ns],
 * and each flow end has a start. */
#ifndef WAFER_TOOLS_TIMELINE_H
#define WAFER_TOOLS_TIMELINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

enum json_type { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY,
		 JSON_OBJECT };

struct json {
	enum json_type type;
	double number; /* also a bool's 0 or 1 */
	char *string;  /* a string's value; an object member's key in |key| */
	char *key;     /* the member's name inside an object, else NULL */
	struct json *items; /* array items or object members */
	size_t count;
};

/* Parses |text| (NUL-terminated); NULL on malformed JSON, with the
 * reason and the byte offset in |error| (|error_size| bytes). */
struct json *json_parse(const char *text, char *error, size_t error_size);
void json_free(struct json *value);
/* The member |key| of an object, else NULL. */
const struct json *json_get(const struct json *object, const char *key);
/* Reads a whole file; NULL with errno set on failure. */
char *timeline_read_file(const char *path);

/* Checks |root| against the schema above; false with the first problem
 * (naming the event's index) in |error|. */
bool timeline_check(const struct json *root, char *error, size_t error_size);

/* Writes the summary of |root| (checked) to |out|: per kernel name the
 * count and total / mean / max device time and share of the step; host
 * and device busy time per queue and whether the step is launch-bound;
 * the largest reservations (memory in use at the peak, by handle). */
void timeline_report(const struct json *root, FILE *out, size_t top);

/* Draws |root| (checked) as one SVG picture on |out| (timeline_svg.c):
 * a row per lane, spans as boxes, waits as arrows, errors as marks, the
 * memory counter as a line. 0, or 1 out of memory. */
int timeline_svg(const struct json *root, FILE *out);

#endif
