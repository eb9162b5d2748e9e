/* wafer — SPDX-License-Identifier: MIT
 *
 * catalogue.h: which backends ship every kernel of the standard
 * catalogue (plugin.h) that the ops layer calls, in f32. On them a test
 * that finds such a kernel missing (WAFER_ERROR_NOT_SUPPORTED) fails
 * instead of reporting a skip: a skip there would hide a kernel lost from
 * a table. Other backends (cuda, levelzero, a vendor's) may lack some,
 * and the tests report those as skips naming the kernel. */
#ifndef WAFER_T_CATALOGUE_H
#define WAFER_T_CATALOGUE_H

#include <string.h>

static inline int backend_has_full_catalogue(const char *backend)
{
	static const char *const full[] = {"cpu", "opencl"};

	for (size_t i = 0; i < sizeof full / sizeof full[0]; i++)
		if (backend && strcmp(backend, full[i]) == 0)
			return 1;
	return 0;
}

#endif
