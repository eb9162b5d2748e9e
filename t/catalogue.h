/* wafer — SPDX-License-Identifier: MIT
 *
 * catalogue.h: the standard catalogue (plugin.h) as the tests see it.
 *
 * Its names, read from <wafer/catalogue.def>, indexed by the ops' enums:
 * catalogue_unary[WAFER_UNARY_*] (with catalogue_unary_float_only: 1 for
 * the operations integers do not have), catalogue_binary[WAFER_BINARY_*],
 * catalogue_reduce[WAFER_REDUCE_*]; CATALOGUE_COUNT(array) entries each.
 * A test loops over these, so a new kernel of a family is tested once it
 * has its row there and its reference (t/client_util.h).
 *
 * Which backends ship every kernel of the standard
 * catalogue that the ops layer calls, in f32. On them a test
 * that finds such a kernel missing (WAFER_ERROR_NOT_SUPPORTED) fails
 * instead of reporting a skip: a skip there would hide a kernel lost from
 * a table. Other backends (cuda, levelzero, a vendor's) may lack some,
 * and the tests report those as skips naming the kernel. */
#ifndef WAFER_T_CATALOGUE_H
#define WAFER_T_CATALOGUE_H

#include <string.h>

#define CATALOGUE_COUNT(a) ((int)(sizeof(a) / sizeof(a)[0]))

static const char *const catalogue_unary[] = {
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference) #name,
#include <wafer/catalogue.def>
};

#define CATALOGUE_FLOAT_ONLY_ANY 0
#define CATALOGUE_FLOAT_ONLY_FLOAT 1
static const int catalogue_unary_float_only[] = {
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference)                   \
	CATALOGUE_FLOAT_ONLY_##dtypes,
#include <wafer/catalogue.def>
};

static const char *const catalogue_binary[] = {
#define WAFER_CATALOGUE_BINARY(name, NAME, reference) #name,
#include <wafer/catalogue.def>
};

#define CATALOGUE_REDUCE_NAME_REDUCE(name) #name,
#define CATALOGUE_REDUCE_NAME_FULL(name)
static const char *const catalogue_reduce[] = {
#define WAFER_CATALOGUE_ROWS(name, NAME, dtypes, output)                       \
	CATALOGUE_REDUCE_NAME_##output(name)
#include <wafer/catalogue.def>
};

static inline int backend_has_full_catalogue(const char *backend)
{
	static const char *const full[] = {"cpu", "opencl"};

	for (size_t i = 0; i < sizeof full / sizeof full[0]; i++)
		if (backend && strcmp(backend, full[i]) == 0)
			return 1;
	return 0;
}

#endif
