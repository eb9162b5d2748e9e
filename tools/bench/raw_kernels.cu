/* wafer — SPDX-License-Identifier: MIT
 *
 * raw_kernels.cu: the kernels wafer-bench launches with cuLaunchKernel
 * directly, as the baselines of the cuda plugin's: an empty kernel, and
 * the add a CUDA programmer writes first — one element per thread. */
extern "C" __global__ void raw_noop(void)
{
}

extern "C" __global__ void raw_add(float *out, const float *a, const float *b,
				   unsigned long long n)
{
	unsigned long long i =
		(unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = a[i] + b[i];
}
