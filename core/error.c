/* wafer — SPDX-License-Identifier: MIT
 * error.c: the per-thread error detail (see error.h). */
#include "build-config.h"

#include <stdio.h>
#include <string.h>

#include <wafer/wafer.h>

#include "core/error.h"

static _Thread_local char error_detail[WAFER_ERROR_DETAIL_MAX];

wafer_status wafer_vfail(wafer_status status, const char *format, va_list ap)
{
	vsnprintf(error_detail, sizeof error_detail, format, ap);
	return status;
}

wafer_status wafer_fail(wafer_status status, const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	wafer_vfail(status, format, ap);
	va_end(ap);
	return status;
}

wafer_status wafer_fail_context(wafer_status status, const char *format, ...)
{
	char prefix[WAFER_ERROR_DETAIL_MAX];
	char previous[WAFER_ERROR_DETAIL_MAX];
	va_list ap;

	va_start(ap, format);
	vsnprintf(prefix, sizeof prefix, format, ap);
	va_end(ap);
	memcpy(previous, error_detail, sizeof previous);
	if (previous[0])
		snprintf(error_detail, sizeof error_detail, "%.300s: %.700s",
			 prefix, previous);
	else
		memcpy(error_detail, prefix, sizeof error_detail);
	return status;
}

void wafer_error_clear(void)
{
	error_detail[0] = '\0';
}

const char *wafer_error_detail(void)
{
	return error_detail;
}

WAFER_API const char *wafer_last_error(void)
{
	return error_detail;
}
