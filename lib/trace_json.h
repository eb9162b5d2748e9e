/* wafer — SPDX-License-Identifier: MIT
 *
 * trace_json.h: the Chrome trace-event JSON of the timeline trace
 * (lib/trace.h): a growing text of events, each appended whole, and the
 * file made of them. The format (one object, "traceEvents" an array of
 * events with ph/name/pid/tid/ts in microseconds) is what Perfetto and
 * chrome://tracing read; wafer-trace(1) reads it back. */
#ifndef WAFER_CORE_TRACE_JSON_H
#define WAFER_CORE_TRACE_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Text; |failed| once an append ran out of memory (the rest is then
 * dropped and the file says so). */
struct wafer__json {
	char *data;
	size_t length;
	size_t capacity;
	bool failed;
};

void wafer__json_printf(struct wafer__json *json, const char *format, ...)
	__attribute__((format(printf, 2, 3)));

/* |text| as a JSON string, quotes included (NULL as ""). */
void wafer__json_string(struct wafer__json *json, const char *text);

/* Starts an event in the array: a comma before all but the first. */
void wafer__json_event(struct wafer__json *json, const char *ph,
		       const char *name, uint32_t pid, uint32_t tid,
		       uint64_t ts_ns);

void wafer__json_free(struct wafer__json *json);

/* Writes {"traceEvents":[<events>],"displayTimeUnit":"ns",
 * "otherData":{<other>}} to |path|; errno-style failure as false. */
bool wafer__json_write_file(const char *path, const struct wafer__json *events,
			    const struct wafer__json *other);

#endif
