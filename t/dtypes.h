/* wafer — SPDX-License-Identifier: MIT
 *
 * dtypes.h: the dtypes every layer names alike, for the tests that check
 * them (wafer_dtype_size, the plugin helpers' sizes and names): each
 * known dtype's element size and NumPy name. Header-only. */
#ifndef WAFER_T_DTYPES_H
#define WAFER_T_DTYPES_H

#include <stddef.h>

#include <wafer/types.h>

static const struct t_dtype {
	wafer_dtype dtype;
	size_t size;
	const char *name;
} t_dtypes[] = {
	{WAFER_DTYPE_F32, 4, "float32"},
	{WAFER_DTYPE_F16, 2, "float16"},
	{WAFER_DTYPE_BF16, 2, "bfloat16"},
	{WAFER_DTYPE_I32, 4, "int32"},
	{WAFER_DTYPE_U8, 1, "uint8"},
	{WAFER_DTYPE_F64, 8, "float64"},
	{WAFER_DTYPE_I64, 8, "int64"},
};
#define T_DTYPE_COUNT (sizeof t_dtypes / sizeof t_dtypes[0])

#endif
