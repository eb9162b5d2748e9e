/* wafer — SPDX-License-Identifier: MIT
 *
 * fuzz/trace.c: the allocation-trace reader (tools/trace.c) on any bytes,
 * line by line as wafer-replay feeds it. Every accepted trace is
 * consistent: each free names a slot allocated before it and not yet
 * freed. */
#include "build-config.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tools/trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wafer_trace trace = {0};
	char *text = malloc(size + 1), why[256];
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *line = text, *next; line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		if (!wafer_trace_add_line(&trace, line, why, sizeof why))
			break;
	}
	uint8_t *live = calloc(trace.slots + 1, 1);
	for (size_t i = 0; live && i < trace.count; i++) {
		const struct wafer_trace_event *e = &trace.events[i];
		if (e->slot >= trace.slots)
			abort();
		if (e->size) {
			if (live[e->slot])
				abort(); /* a slot allocated twice */
			live[e->slot] = 1;
		} else {
			if (!live[e->slot])
				abort(); /* a free of a slot not live */
			live[e->slot] = 0;
		}
	}
	free(live);
	wafer_trace_fini(&trace);
	free(text);
	return 0;
}
