/* wafer — SPDX-License-Identifier: MIT
 * trace_json.c: the timeline trace's JSON text (see trace_json.h). */
#include "build-config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/trace_json.h"

static bool reserve(struct wafer__json *json, size_t more)
{
	if (json->failed)
		return false;
	if (json->length + more + 1 <= json->capacity)
		return true;
	size_t capacity = json->capacity ? json->capacity : 4096;
	while (capacity < json->length + more + 1)
		capacity *= 2;
	char *data = realloc(json->data, capacity);
	if (!data) {
		json->failed = true;
		return false;
	}
	json->data = data;
	json->capacity = capacity;
	return true;
}

void wafer__json_printf(struct wafer__json *json, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	int n = vsnprintf(NULL, 0, format, ap);
	va_end(ap);
	if (n < 0 || !reserve(json, (size_t)n))
		return;
	va_start(ap, format);
	vsnprintf(json->data + json->length, (size_t)n + 1, format, ap);
	va_end(ap);
	json->length += (size_t)n;
}

void wafer__json_string(struct wafer__json *json, const char *text)
{
	if (!text)
		text = "";
	/* At most six bytes a byte (\u00XX), and the quotes. */
	size_t n = strlen(text);
	if (!reserve(json, 6 * n + 2))
		return;
	char *out = json->data + json->length;
	*out++ = '"';
	for (const unsigned char *p = (const unsigned char *)text; *p; p++) {
		if (*p == '"' || *p == '\\') {
			*out++ = '\\';
			*out++ = (char)*p;
		} else if (*p == '\n') {
			*out++ = '\\';
			*out++ = 'n';
		} else if (*p < 0x20 || *p == 0x7f) {
			out += sprintf(out, "\\u%04x", *p);
		} else {
			*out++ = (char)*p; /* UTF-8 passes as it is */
		}
	}
	*out++ = '"';
	*out = 0;
	json->length = (size_t)(out - json->data);
}

void wafer__json_event(struct wafer__json *json, const char *ph,
		       const char *name, uint32_t pid, uint32_t tid,
		       uint64_t ts_ns)
{
	wafer__json_printf(json, "%s\n{\"ph\":\"%s\",\"name\":",
			   json->length ? "," : "", ph);
	wafer__json_string(json, name);
	wafer__json_printf(json, ",\"pid\":%u,\"tid\":%u,\"ts\":%llu.%03u",
			   pid, tid, (unsigned long long)(ts_ns / 1000),
			   (unsigned)(ts_ns % 1000));
}

void wafer__json_free(struct wafer__json *json)
{
	free(json->data);
	*json = (struct wafer__json){0};
}

bool wafer__json_write_file(const char *path, const struct wafer__json *events,
			    const struct wafer__json *other)
{
	FILE *f = fopen(path, "w");
	if (!f)
		return false;
	fprintf(f, "{\"traceEvents\":[");
	if (events->length)
		fwrite(events->data, 1, events->length, f);
	fprintf(f, "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{");
	if (other->length)
		fwrite(other->data, 1, other->length, f);
	fprintf(f, "}}\n");
	bool ok = !ferror(f);
	return fclose(f) == 0 && ok;
}
