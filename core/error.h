/* wafer — SPDX-License-Identifier: MIT
 *
 * error.h: the per-thread error detail behind wafer_last_error(). Every
 * failing path in the core returns through wafer_fail(), which records
 * what went wrong (with the file, line, handle or sizes involved) and
 * hands the status back, so a failure is one line:
 *
 *     return wafer_fail(WAFER_ERROR_OUT_OF_RANGE,
 *                       "read: offset %zu + size %zu past handle of %zu",
 *                       offset, size, handle_size);
 */
#ifndef WAFER_CORE_ERROR_H
#define WAFER_CORE_ERROR_H

#include <stdarg.h>

#include <wafer/types.h>

#define WAFER_ERROR_DETAIL_MAX 1024

/* Records the formatted detail for the calling thread; returns |status|. */
wafer_status wafer_fail(wafer_status status, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
wafer_status wafer_vfail(wafer_status status, const char *format, va_list ap)
	__attribute__((format(printf, 2, 0)));

/* Prepends "context: " to the calling thread's current detail (to add the
 * plugin path or config file to a lower layer's message); returns
 * |status|. */
wafer_status wafer_fail_context(wafer_status status, const char *format, ...)
	__attribute__((format(printf, 2, 3)));

/* Clears the calling thread's detail. */
void wafer_error_clear(void);

/* The calling thread's detail ("" when none). */
const char *wafer_error_detail(void);

#endif
