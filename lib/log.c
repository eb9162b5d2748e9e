/* wafer — SPDX-License-Identifier: MIT
 * log.c: leveled logging to stderr (see log.h). */
#include "build-config.h"

#include <stdatomic.h>
#include <stdio.h>
#include <strings.h>

#include "lib/log.h"

static atomic_int log_level = WAFER_LOG_WARN;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void wafer__log_set_level(wafer_log_level level)
{
	atomic_store_explicit(&log_level, (int)level, memory_order_relaxed);
}

wafer_log_level wafer__log_get_level(void)
{
	return (wafer_log_level)atomic_load_explicit(&log_level,
						     memory_order_relaxed);
}

bool wafer__log_parse_level(const char *text, wafer_log_level *out_level)
{
	for (int i = 0; i < 4; i++) {
		if (text && strcasecmp(text, level_names[i]) == 0) {
			*out_level = (wafer_log_level)i;
			return true;
		}
	}
	return false;
}

bool wafer__log_enabled(wafer_log_level level)
{
	return (int)level <=
	       atomic_load_explicit(&log_level, memory_order_relaxed);
}

void wafer__vlog(wafer_log_level level, const char *who, const char *format,
		 va_list ap)
{
	char line[2048];
	int n;

	if (!wafer__log_enabled(level))
		return;
	/* One fprintf per line so lines from several threads do not mix. */
	n = snprintf(line, sizeof line, "wafer[%s] %s: ", who ? who : "core",
		     level_names[level]);
	if (n < 0 || (size_t)n >= sizeof line)
		return;
	vsnprintf(line + n, sizeof line - (size_t)n, format, ap);
	fprintf(stderr, "%s\n", line);
}

void wafer__log(wafer_log_level level, const char *who, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	wafer__vlog(level, who, format, ap);
	va_end(ap);
}
