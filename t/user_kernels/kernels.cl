/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels.cl: the test's program kernels as OpenCL C (t/api/programs.c), and
 * compiled to SPIR-V at build time (t/local.mk). The same kernels as
 * kernels.c and kernels.cu. */

typedef struct {
	ulong n;
	float a;
	uint reserved;
} saxpy_params;

/* y[i] = a * x[i] + y[i]. Bindings {y, x}; global = {n}. */
__kernel void wafer_test_saxpy(__global float *y, __global const float *x,
			       saxpy_params p)
{
	size_t i = get_global_id(0);
	if (i < p.n)
		y[i] = p.a * x[i] + y[i];
}

typedef struct {
	uint rows, cols;
	float scale;
	uint reserved;
} tile_params;

#define TILE 16

/* out (rows x cols) = scale * transpose(in (cols x rows)), through a
 * tile in local memory. Bindings {out, in}; global = {cols, rows},
 * local = {TILE, TILE}. */
__kernel void wafer_test_tile2d(__global float *out, __global const float *in,
				tile_params p)
{
	__local float tile[TILE][TILE + 1];
	size_t lc = get_local_id(0), lr = get_local_id(1);
	size_t c0 = get_group_id(0) * TILE, r0 = get_group_id(1) * TILE;

	if (c0 + lr < p.cols && r0 + lc < p.rows)
		tile[lr][lc] = in[(c0 + lr) * p.rows + r0 + lc];
	barrier(CLK_LOCAL_MEM_FENCE);
	if (c0 + lc < p.cols && r0 + lr < p.rows)
		out[(r0 + lr) * p.cols + c0 + lc] = p.scale * tile[lc][lr];
}
