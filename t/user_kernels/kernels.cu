/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels.cu: the test's program kernels as CUDA C++ (t/api/programs.c),
 * compiled at run time with NVRTC; kernels.ptx is this file through
 * nvcc --ptx. The same kernels as kernels.c and kernels.cl. */

struct saxpy_params {
	unsigned long long n;
	float a;
	unsigned reserved;
};

/* y[i] = a * x[i] + y[i]. Bindings {y, x}; global = {n}. */
extern "C" __global__ void wafer_test_saxpy(float *y, const float *x,
					    saxpy_params p)
{
	unsigned long long i =
		(unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < p.n)
		y[i] = p.a * x[i] + y[i];
}

struct tile_params {
	unsigned rows, cols;
	float scale;
	unsigned reserved;
};

#define TILE 16

/* out (rows x cols) = scale * transpose(in (cols x rows)), through a
 * tile in shared memory. Bindings {out, in}; global = {cols, rows},
 * local = {TILE, TILE}. */
extern "C" __global__ void wafer_test_tile2d(float *out, const float *in,
					     tile_params p)
{
	__shared__ float tile[TILE][TILE + 1];
	unsigned lc = threadIdx.x, lr = threadIdx.y;
	unsigned c0 = blockIdx.x * TILE, r0 = blockIdx.y * TILE;

	if (c0 + lr < p.cols && r0 + lc < p.rows)
		tile[lr][lc] = in[(c0 + lr) * p.rows + r0 + lc];
	__syncthreads();
	if (c0 + lc < p.cols && r0 + lr < p.rows)
		out[(r0 + lr) * p.cols + c0 + lc] = p.scale * tile[lc][lr];
}
