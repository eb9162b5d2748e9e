/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels.c: the test's program kernels as host C (t/api/programs.c): loaded
 * as host-c source and, built into a shared object (t/local.mk), as
 * host-so. The same kernels as kernels.cl and kernels.cu. */
#include <stdint.h>
#include <string.h>

#include <wafer/host_kernel.h>

struct saxpy_params {
	uint64_t n;
	float a;
	uint32_t reserved;
};

/* y[i] = a * x[i] + y[i]. Bindings {y, x}; global = {n}. */
WAFER_HOST_KERNEL(wafer_test_saxpy)
{
	struct saxpy_params p;
	memcpy(&p, args->params, sizeof p);
	float *y = args->bindings[0];
	const float *x = args->bindings[1];
	for (uint64_t i = args->begin; i < args->end && i < p.n; i++)
		y[i] = p.a * x[i] + y[i];
}

struct tile_params {
	uint32_t rows, cols;
	float scale;
	uint32_t reserved;
};

/* out (rows x cols) = scale * transpose(in (cols x rows)). Bindings {out,
 * in}; global = {cols, rows}: this call's columns are [begin, end). */
WAFER_HOST_KERNEL(wafer_test_tile2d)
{
	struct tile_params p;
	memcpy(&p, args->params, sizeof p);
	float *out = args->bindings[0];
	const float *in = args->bindings[1];
	for (uint64_t c = args->begin; c < args->end && c < p.cols; c++)
		for (uint64_t r = 0; r < p.rows; r++)
			out[r * p.cols + c] = p.scale * in[c * p.rows + r];
}
