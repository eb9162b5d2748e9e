/* wafer — SPDX-License-Identifier: MIT
 * trace.c: parsing allocation traces (see trace.h). */
#include "build-config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/trace.h"

void wafer_trace_fini(struct wafer_trace *trace)
{
	free(trace->events);
	wafer__u64map_fini(&trace->live);
	*trace = (struct wafer_trace){0};
}

/* A decimal number that fills the whole token. */
static bool parse_u64(const char *text, uint64_t *out)
{
	if (*text < '0' || *text > '9')
		return false;
	char *end;
	errno = 0;
	unsigned long long v = strtoull(text, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}

static bool push_event(struct wafer_trace *t, struct wafer_trace_event e)
{
	if (t->count == t->capacity) {
		size_t capacity = t->capacity ? t->capacity * 2 : 4096;
		void *grown = realloc(t->events, capacity * sizeof *t->events);
		if (!grown)
			return false;
		t->events = grown;
		t->capacity = capacity;
	}
	t->events[t->count++] = e;
	return true;
}

static bool add_alloc(struct wafer_trace *t, char **fields, int n,
		      char *why, size_t why_size)
{
	uint64_t id, bytes, value;

	if (n != 3 || !parse_u64(fields[1], &id) || !parse_u64(fields[2], &bytes)) {
		snprintf(why, why_size, "malformed line: expected 'a <id> <bytes>'");
		return false;
	}
	if (bytes == 0 || bytes > SIZE_MAX / 2) {
		snprintf(why, why_size, "allocation of %.24s bytes (must be 1 to %zu)",
			 fields[2], SIZE_MAX / 2);
		return false;
	}
	if (wafer__u64map_get(&t->live, id, &value)) {
		snprintf(why, why_size,
			 "id %" PRIu64 " allocated again; still live from line %u",
			 id, (uint32_t)value);
		return false;
	}
	if (t->slots == UINT32_MAX) {
		snprintf(why, why_size, "too many allocations");
		return false;
	}
	if (!wafer__u64map_put(&t->live, id, (uint64_t)t->slots << 32 | t->lines))
		goto oom;
	if (!push_event(t, (struct wafer_trace_event){bytes, t->slots, t->lines})) {
		wafer__u64map_remove(&t->live, id, NULL);
		goto oom;
	}
	t->slots++;
	return true;
oom:
	snprintf(why, why_size, "out of host memory reading the trace");
	return false;
}

static bool add_free(struct wafer_trace *t, char **fields, int n, char *why,
		     size_t why_size)
{
	uint64_t id, value;

	if (n != 2 || !parse_u64(fields[1], &id)) {
		snprintf(why, why_size, "malformed line: expected 'f <id>'");
		return false;
	}
	if (!wafer__u64map_get(&t->live, id, &value)) {
		snprintf(why, why_size, "free of id %" PRIu64 ", which is not live",
			 id);
		return false;
	}
	if (!push_event(t, (struct wafer_trace_event){0, (uint32_t)(value >> 32),
						      t->lines})) {
		snprintf(why, why_size, "out of host memory reading the trace");
		return false;
	}
	wafer__u64map_remove(&t->live, id, NULL);
	return true;
}

bool wafer_trace_add_line(struct wafer_trace *t, char *text, char *why,
			  size_t why_size)
{
	char *fields[4], *save = NULL;
	int n = 0;

	if (t->lines == UINT32_MAX - 1) {
		snprintf(why, why_size, "more than %u lines", UINT32_MAX - 1);
		return false;
	}
	t->lines++;
	/* The event's own fields, then named ones (trace.h); four own
	 * fields are already one too many for any event. */
	bool named = false;
	for (char *tok = strtok_r(text, " \t\r\n", &save); tok;
	     tok = strtok_r(NULL, " \t\r\n", &save)) {
		if (n > 0 && fields[0][0] == '#')
			return true;
		char *eq = strchr(tok, '=');
		if (eq && n > 0 && eq != tok) {
			named = true;
			continue;
		}
		if (named) {
			snprintf(why, why_size,
				 "malformed line: '%.20s' after a named field "
				 "(expected name=value)", tok);
			return false;
		}
		if (n < 4)
			fields[n++] = tok;
	}
	if (n == 0 || fields[0][0] == '#')
		return true;
	if (strcmp(fields[0], "a") == 0)
		return add_alloc(t, fields, n, why, why_size);
	if (strcmp(fields[0], "f") == 0)
		return add_free(t, fields, n, why, why_size);
	snprintf(why, why_size,
		 "malformed line: unknown event '%.20s' (expected 'a' or 'f')",
		 fields[0]);
	return false;
}
