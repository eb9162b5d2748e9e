/* wafer — SPDX-License-Identifier: MIT
 *
 * log.h: the core's log, to stderr, filtered by WAFER_LOG or `[core] log`
 * (error, warn, info, debug; default warn). Lines read
 * "wafer[<who>] <level>: <message>". Disabled levels cost one load and a
 * compare. */
#ifndef WAFER_CORE_LOG_H
#define WAFER_CORE_LOG_H

#include <stdarg.h>
#include <stdbool.h>

#include <wafer/plugin.h> /* wafer_log_level */

/* Sets the threshold; messages above it are dropped. */
void wafer__log_set_level(wafer_log_level level);
wafer_log_level wafer__log_get_level(void);

/* Parses "error" | "warn" | "info" | "debug" (case-insensitive). */
bool wafer__log_parse_level(const char *text, wafer_log_level *out_level);

bool wafer__log_enabled(wafer_log_level level);

/* |who| names the component ("core", "config", "cpu"); may be NULL. */
void wafer__log(wafer_log_level level, const char *who, const char *format, ...)
	__attribute__((format(printf, 3, 4)));
void wafer__vlog(wafer_log_level level, const char *who, const char *format,
		 va_list ap) __attribute__((format(printf, 3, 0)));

#define wafer__log_error(who, ...) wafer__log(WAFER_LOG_ERROR, who, __VA_ARGS__)
#define wafer__log_warn(who, ...) wafer__log(WAFER_LOG_WARN, who, __VA_ARGS__)
#define wafer__log_info(who, ...)                                              \
	do {                                                                   \
		if (wafer__log_enabled(WAFER_LOG_INFO))                        \
			wafer__log(WAFER_LOG_INFO, who, __VA_ARGS__);          \
	} while (0)
#define wafer__log_debug(who, ...)                                             \
	do {                                                                   \
		if (wafer__log_enabled(WAFER_LOG_DEBUG))                       \
			wafer__log(WAFER_LOG_DEBUG, who, __VA_ARGS__);         \
	} while (0)

#endif
