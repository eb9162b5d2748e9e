/* wafer — SPDX-License-Identifier: MIT
 * status.c: names of status codes and the library version. */
#include "build-config.h"

#include <wafer/wafer.h>

WAFER_API const char *wafer_status_string(wafer_status status)
{
	switch (status) {
	case WAFER_OK: return "WAFER_OK";
	case WAFER_ERROR_INVALID_ARGUMENT: return "WAFER_ERROR_INVALID_ARGUMENT";
	case WAFER_ERROR_OUT_OF_MEMORY: return "WAFER_ERROR_OUT_OF_MEMORY";
	case WAFER_ERROR_NOT_FOUND: return "WAFER_ERROR_NOT_FOUND";
	case WAFER_ERROR_NOT_SUPPORTED: return "WAFER_ERROR_NOT_SUPPORTED";
	case WAFER_ERROR_CONFIG: return "WAFER_ERROR_CONFIG";
	case WAFER_ERROR_PLUGIN: return "WAFER_ERROR_PLUGIN";
	case WAFER_ERROR_NO_DEVICE: return "WAFER_ERROR_NO_DEVICE";
	case WAFER_ERROR_DEVICE: return "WAFER_ERROR_DEVICE";
	case WAFER_ERROR_OUT_OF_RANGE: return "WAFER_ERROR_OUT_OF_RANGE";
	case WAFER_ERROR_INVALID_HANDLE: return "WAFER_ERROR_INVALID_HANDLE";
	case WAFER_ERROR_DONATED: return "WAFER_ERROR_DONATED";
	case WAFER_ERROR_IO: return "WAFER_ERROR_IO";
	case WAFER_ERROR_ABI_MISMATCH: return "WAFER_ERROR_ABI_MISMATCH";
	case WAFER_ERROR_INTERNAL: return "WAFER_ERROR_INTERNAL";
	case WAFER_ERROR_BUILD: return "WAFER_ERROR_BUILD";
	case WAFER_ERROR_NOT_READY: return "WAFER_ERROR_NOT_READY";
	}
	return "WAFER_ERROR_UNKNOWN";
}

WAFER_API const char *wafer_version_string(void)
{
	return PACKAGE_VERSION;
}
