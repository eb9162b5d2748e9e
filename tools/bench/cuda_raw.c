/* wafer — SPDX-License-Identifier: MIT
 *
 * cuda_raw.c: the CUDA counterparts of wafer-bench's figures (raw.h),
 * built with the cuda plugin, and the `sgemm` benchmark.
 *
 * The raw side loads libcuda.so.1 itself, with the plugin's own loader
 * (plugins/cuda/driver.c: dlopen, cuGetProcAddress at the pinned API
 * version), retains the same primary context as the plugin, and calls the
 * driver the way a CUDA programmer would: cuLaunchKernel on a
 * non-blocking stream, cuMemAllocAsync + cuMemFreeAsync on the device's
 * default pool, an add of one element per thread (raw_kernels.cu), and
 * cublasSgemm_v2, and an allocation trace replayed on that pool
 * (`replay`). Each figure is the best of several samples, host time
 * around work that ends with a stream synchronisation — the way the wafer
 * side is timed. */
#include "build-config.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cublas_v2.h>

#include <wafer/plugin.h>
#include <wafer/wafer.h>

#include "plugins/cuda/driver.h"
#include "tools/bench/bench.h"
#include "tools/bench/raw.h"
#include "tools/trace.h"

extern const unsigned char bench_raw_fatbin[];

static struct {
	int tried, ok;
	struct cuda_driver drv;
	CUdevice dev;
	CUcontext ctx;
	CUmodule module;
	CUfunction noop, add;
	CUstream stream;
} raw;

static int fail(const char *what, CUresult r)
{
	char text[256];

	fprintf(stderr, "wafer-bench: raw CUDA: %s: %s\n", what,
		cuda_result_text(&raw.drv, r, text, sizeof text));
	return -1;
}

#define CHECK(call)                                                            \
	do {                                                                   \
		CUresult r_ = (call);                                          \
		if (r_ != CUDA_SUCCESS)                                        \
			return fail(#call, r_);                                \
	} while (0)

/* Sets up the driver, context, module and stream for GPU |ordinal|. */
static int setup(int ordinal)
{
	char why[512];
	cuuint64_t keep = UINT64_MAX;
	CUmemoryPool pool;

	if (cuda_driver_load(&raw.drv, NULL, why, sizeof why) != 0) {
		fprintf(stderr, "wafer-bench: raw CUDA: %s\n", why);
		return -1;
	}
	CHECK(raw.drv.cuDeviceGet(&raw.dev, ordinal));
	CHECK(raw.drv.cuDevicePrimaryCtxRetain(&raw.ctx, raw.dev));
	CHECK(raw.drv.cuCtxSetCurrent(raw.ctx));
	CHECK(raw.drv.cuStreamCreate(&raw.stream, CU_STREAM_NON_BLOCKING));
	/* As the plugin's default: the pool keeps what it has. */
	CHECK(raw.drv.cuDeviceGetDefaultMemPool(&pool, raw.dev));
	CHECK(raw.drv.cuMemPoolSetAttribute(
		pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep));
	return 0;
}

static int enter(void)
{
	CHECK(raw.drv.cuCtxSetCurrent(raw.ctx));
	return 0;
}

/* The baseline kernels, loaded on first use: the allocation figures
 * need none (and the stand-in driver, t/standins/fakecuda.c, cannot run them). */
static int enter_kernels(void)
{
	CUmodule module;
	CUresult r;

	if (enter() != 0)
		return -1;
	if (raw.module)
		return 0;
	CHECK(raw.drv.cuModuleLoadData(&module, bench_raw_fatbin));
	r = raw.drv.cuModuleGetFunction(&raw.noop, module, "raw_noop");
	if (r == CUDA_SUCCESS)
		r = raw.drv.cuModuleGetFunction(&raw.add, module, "raw_add");
	if (r != CUDA_SUCCESS) {
		raw.drv.cuModuleUnload(module);
		return fail("cuModuleGetFunction(raw_noop, raw_add)", r);
	}
	raw.module = module;
	return 0;
}

/*===----------------------------------------------------------------------===
 * The counterparts
 *===----------------------------------------------------------------------===*/

static double raw_launch_ns(uint64_t launches)
{
	double best = INFINITY;

	if (enter_kernels() != 0)
		return -1;
	for (int i = 0; i < 1000; i++)
		CHECK(raw.drv.cuLaunchKernel(raw.noop, 1, 1, 1, 1, 1, 1, 0,
					     raw.stream, NULL, NULL));
	CHECK(raw.drv.cuStreamSynchronize(raw.stream));
	for (int sample = 0; sample < 3; sample++) {
		uint64_t start = bench_now_ns();
		for (uint64_t i = 0; i < launches; i++)
			raw.drv.cuLaunchKernel(raw.noop, 1, 1, 1, 1, 1, 1, 0,
					       raw.stream, NULL, NULL);
		CHECK(raw.drv.cuStreamSynchronize(raw.stream));
		double ns = (double)(bench_now_ns() - start) / (double)launches;
		if (ns < best)
			best = ns;
	}
	return best;
}

static double raw_alloc_pair_ns(size_t size, uint64_t pairs)
{
	CUdeviceptr p;
	double best = INFINITY;

	if (enter() != 0)
		return -1;
	CHECK(raw.drv.cuMemAllocAsync(&p, size, raw.stream));
	CHECK(raw.drv.cuMemFreeAsync(p, raw.stream));
	CHECK(raw.drv.cuStreamSynchronize(raw.stream));
	for (int sample = 0; sample < 3; sample++) {
		uint64_t start = bench_now_ns();
		for (uint64_t i = 0; i < pairs; i++) {
			raw.drv.cuMemAllocAsync(&p, size, raw.stream);
			raw.drv.cuMemFreeAsync(p, raw.stream);
		}
		double ns = (double)(bench_now_ns() - start) / (double)pairs;
		CHECK(raw.drv.cuStreamSynchronize(raw.stream));
		if (ns < best)
			best = ns;
	}
	return best;
}

/* The trace's allocations and frees, each straight to the default pool
 * on the stream; the pool is trimmed and its high-water mark reset
 * first, so both the time and the mark are this replay's. */
static double raw_replay_ns(const struct wafer_trace *t, uint64_t *out_high)
{
	CUdeviceptr *ptrs = calloc(t->slots ? t->slots : 1, sizeof *ptrs);
	cuuint64_t zero = 0, high = 0;
	CUmemoryPool pool;
	CUresult r = CUDA_SUCCESS;
	const char *what = "";

	if (!ptrs) {
		fprintf(stderr, "wafer-bench: raw CUDA: out of host memory\n");
		return -1;
	}
	if (enter() != 0) {
		free(ptrs);
		return -1;
	}
	r = raw.drv.cuDeviceGetDefaultMemPool(&pool, raw.dev);
	if (r == CUDA_SUCCESS)
		r = raw.drv.cuStreamSynchronize(raw.stream);
	if (r == CUDA_SUCCESS)
		r = raw.drv.cuMemPoolTrimTo(pool, 0);
	if (r == CUDA_SUCCESS)
		r = raw.drv.cuMemPoolSetAttribute(
			pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &zero);
	if (r != CUDA_SUCCESS) {
		free(ptrs);
		return fail("the default pool", r);
	}
	uint64_t start = bench_now_ns();
	for (size_t i = 0; i < t->count && r == CUDA_SUCCESS; i++) {
		const struct wafer_trace_event *e = &t->events[i];
		what = e->size ? "cuMemAllocAsync" : "cuMemFreeAsync";
		if (e->size) {
			r = raw.drv.cuMemAllocAsync(&ptrs[e->slot], e->size,
						    raw.stream);
		} else {
			r = raw.drv.cuMemFreeAsync(ptrs[e->slot], raw.stream);
			ptrs[e->slot] = 0;
		}
	}
	if (r == CUDA_SUCCESS) {
		what = "cuStreamSynchronize";
		r = raw.drv.cuStreamSynchronize(raw.stream);
	}
	double ns = (double)(bench_now_ns() - start) / (double)t->count;
	/* What the trace left live, then the pool's mark. */
	for (uint32_t i = 0; i < t->slots; i++)
		if (ptrs[i])
			raw.drv.cuMemFreeAsync(ptrs[i], raw.stream);
	raw.drv.cuStreamSynchronize(raw.stream);
	free(ptrs);
	if (r != CUDA_SUCCESS)
		return fail(what, r);
	CHECK(raw.drv.cuMemPoolGetAttribute(
		pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH, &high));
	raw.drv.cuMemPoolTrimTo(pool, 0);
	*out_high = high;
	return ns;
}

static double raw_add_gbps(size_t count, unsigned reps)
{
	CUdeviceptr a, b, out;
	unsigned long long n = count;
	void *args[] = {&out, &a, &b, &n};
	unsigned blocks = (unsigned)((count + 255) / 256);
	double best = INFINITY;

	if (enter_kernels() != 0)
		return -1;
	CHECK(raw.drv.cuMemAlloc(&a, count * 4));
	CHECK(raw.drv.cuMemAlloc(&b, count * 4));
	CHECK(raw.drv.cuMemAlloc(&out, count * 4));
	/* Not zeros: the same values the wafer side adds. */
	CHECK(raw.drv.cuLaunchKernel(raw.add, blocks, 1, 1, 256, 1, 1, 0,
				     raw.stream, args, NULL));
	CHECK(raw.drv.cuStreamSynchronize(raw.stream));
	for (unsigned r = 0; r < reps; r++) {
		uint64_t start = bench_now_ns();
		raw.drv.cuLaunchKernel(raw.add, blocks, 1, 1, 256, 1, 1, 0,
				       raw.stream, args, NULL);
		CHECK(raw.drv.cuStreamSynchronize(raw.stream));
		double ns = (double)(bench_now_ns() - start);
		if (ns < best)
			best = ns;
	}
	raw.drv.cuMemFree(a);
	raw.drv.cuMemFree(b);
	raw.drv.cuMemFree(out);
	return 12.0 * (double)count / best;
}

/* The second stream of the queue figures, made at first use. */
static int second_stream(CUstream *out)
{
	static CUstream copy;

	if (!copy)
		CHECK(raw.drv.cuStreamCreate(&copy, CU_STREAM_NON_BLOCKING));
	*out = copy;
	return 0;
}

static double raw_overlap_ms(size_t bytes, unsigned batches, unsigned adds,
			     int two)
{
	unsigned long long n = bytes / 4;
	unsigned blocks = (unsigned)((n + 255) / 256);
	CUdeviceptr in[2], out;
	CUevent up[2], done[2];
	CUstream copy;
	float *host;
	double best = INFINITY;

	if (enter_kernels() != 0 || second_stream(&copy) != 0)
		return -1;
	CHECK(raw.drv.cuMemHostAlloc((void **)&host, bytes, 0));
	for (size_t i = 0; i < n; i++)
		host[i] = (float)(i % 1000) * 0.25f;
	CHECK(raw.drv.cuMemAlloc(&in[0], bytes));
	CHECK(raw.drv.cuMemAlloc(&in[1], bytes));
	CHECK(raw.drv.cuMemAlloc(&out, bytes));
	for (int i = 0; i < 2; i++) {
		CHECK(raw.drv.cuEventCreate(&up[i], CU_EVENT_DISABLE_TIMING));
		CHECK(raw.drv.cuEventCreate(&done[i], CU_EVENT_DISABLE_TIMING));
	}
	for (int sample = 0; sample < 3; sample++) {
		uint64_t start = bench_now_ns();
		for (unsigned k = 0; k < batches; k++) {
			CUdeviceptr b = in[k % 2];
			void *args[] = {&out, &b, &b, &n};
			if (two) {
				if (k >= 2)
					raw.drv.cuStreamWaitEvent(
						copy, done[k % 2], 0);
				raw.drv.cuMemcpyHtoDAsync(b, host, bytes, copy);
				raw.drv.cuEventRecord(up[k % 2], copy);
				raw.drv.cuStreamWaitEvent(raw.stream, up[k % 2],
							  0);
			} else {
				raw.drv.cuMemcpyHtoDAsync(b, host, bytes,
							  raw.stream);
			}
			for (unsigned a = 0; a < adds; a++)
				raw.drv.cuLaunchKernel(raw.add, blocks, 1, 1,
						       256, 1, 1, 0, raw.stream,
						       args, NULL);
			if (two)
				raw.drv.cuEventRecord(done[k % 2], raw.stream);
		}
		CHECK(raw.drv.cuStreamSynchronize(copy));
		CHECK(raw.drv.cuStreamSynchronize(raw.stream));
		best = fmin(best, (double)(bench_now_ns() - start) / 1e6);
	}
	for (int i = 0; i < 2; i++) {
		raw.drv.cuEventDestroy(up[i]);
		raw.drv.cuEventDestroy(done[i]);
	}
	raw.drv.cuMemFree(in[0]);
	raw.drv.cuMemFree(in[1]);
	raw.drv.cuMemFree(out);
	raw.drv.cuMemFreeHost(host);
	return best;
}

/* The context current as raw_event_pair_ns's |context| says (raw.h). */
static void raw_context(int context)
{
	CUcontext now = NULL;

	if (context == 1)
		raw.drv.cuCtxSetCurrent(raw.ctx);
	else if (context == 2 && (raw.drv.cuCtxGetCurrent(&now) !=
					  CUDA_SUCCESS ||
				  now != raw.ctx))
		raw.drv.cuCtxSetCurrent(raw.ctx);
}

static double raw_event_pair_ns(unsigned pairs, int context, int samples)
{
	CUstream copy;
	CUevent e;
	double best = INFINITY;

	if (enter() != 0 || second_stream(&copy) != 0)
		return -1;
	CHECK(raw.drv.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
	for (int sample = 0; sample < samples; sample++) {
		unsigned refused = 0;
		if (context == 3)
			CHECK(raw.drv.cuCtxSetCurrent(NULL));
		uint64_t start = bench_now_ns();
		for (unsigned i = 0; i < pairs; i++) {
			raw_context(context);
			refused += raw.drv.cuEventRecord(e, raw.stream) !=
				   CUDA_SUCCESS;
			raw_context(context);
			refused += raw.drv.cuStreamWaitEvent(copy, e, 0) !=
				   CUDA_SUCCESS;
		}
		CHECK(raw.drv.cuCtxSetCurrent(raw.ctx));
		if (refused) {
			raw.drv.cuEventDestroy(e);
			return -1;
		}
		CHECK(raw.drv.cuStreamSynchronize(copy));
		CHECK(raw.drv.cuStreamSynchronize(raw.stream));
		best = fmin(best, (double)(bench_now_ns() - start) / pairs);
	}
	raw.drv.cuEventDestroy(e);
	return best;
}

/* cuBLAS through dlopen, the symbols as <cublas_v2.h> names them. */
static struct {
	int tried;
	void *lib;
	__typeof__(cublasCreate) *create;
	__typeof__(cublasDestroy) *destroy;
	__typeof__(cublasSetStream) *set_stream;
	__typeof__(cublasSgemm) *sgemm;
} blas;

static int load_cublas(void)
{
	static const char *const names[] = {
		"libcublas.so.13", "libcublas.so.12",
		WAFER_CUDA_LIBDIR "/libcublas.so.13",
		WAFER_CUDA_LIBDIR "/libcublas.so.12",
	};

	if (blas.tried)
		return blas.lib ? 0 : -1;
	blas.tried = 1;
	for (size_t i = 0; !blas.lib && i < sizeof names / sizeof names[0];
	     i++)
		blas.lib = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
	if (!blas.lib) {
		fprintf(stderr, "wafer-bench: cuBLAS not found: %s\n",
			dlerror());
		return -1;
	}
	blas.create = (__typeof__(blas.create))dlsym(blas.lib,
						     "cublasCreate_v2");
	blas.destroy = (__typeof__(blas.destroy))dlsym(blas.lib,
						       "cublasDestroy_v2");
	blas.set_stream = (__typeof__(blas.set_stream))dlsym(
		blas.lib, "cublasSetStream_v2");
	blas.sgemm = (__typeof__(blas.sgemm))dlsym(blas.lib, "cublasSgemm_v2");
	if (!blas.create || !blas.destroy || !blas.set_stream || !blas.sgemm) {
		fprintf(stderr, "wafer-bench: cuBLAS lacks a symbol\n");
		blas.lib = NULL;
		return -1;
	}
	return 0;
}

static double raw_sgemm_gflops(unsigned n, unsigned reps, float *out_c)
{
	size_t count = (size_t)n * n;
	float *host = malloc(count * sizeof *host);
	const float alpha = 1.0f, beta = 0.0f;
	CUdeviceptr a, b, c;
	cublasHandle_t h;
	double best = INFINITY;

	if (!host || enter() != 0 || load_cublas() != 0) {
		free(host);
		return -1;
	}
	CHECK(raw.drv.cuMemAlloc(&a, count * 4));
	CHECK(raw.drv.cuMemAlloc(&b, count * 4));
	CHECK(raw.drv.cuMemAlloc(&c, count * 4));
	for (size_t i = 0; i < count; i++)
		host[i] = bench_matrix_value(0, i);
	CHECK(raw.drv.cuMemcpyHtoDAsync(a, host, count * 4, raw.stream));
	for (size_t i = 0; i < count; i++)
		host[i] = bench_matrix_value(1, i);
	CHECK(raw.drv.cuMemcpyHtoDAsync(b, host, count * 4, raw.stream));
	if (blas.create(&h) != CUBLAS_STATUS_SUCCESS) {
		fprintf(stderr, "wafer-bench: cublasCreate failed\n");
		free(host);
		return -1;
	}
	blas.set_stream(h, (cudaStream_t)raw.stream);
	/* Row-major C = A B is column-major C^T = B^T A^T. */
#define SGEMM()                                                                \
	blas.sgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)n, (int)n, (int)n,        \
		   &alpha, (const float *)(uintptr_t)b, (int)n,                \
		   (const float *)(uintptr_t)a, (int)n, &beta,                 \
		   (float *)(uintptr_t)c, (int)n)
	SGEMM();
	CHECK(raw.drv.cuStreamSynchronize(raw.stream));
	for (unsigned r = 0; r < reps; r++) {
		uint64_t start = bench_now_ns();
		SGEMM();
		CHECK(raw.drv.cuStreamSynchronize(raw.stream));
		double ns = (double)(bench_now_ns() - start);
		if (ns < best)
			best = ns;
	}
#undef SGEMM
	if (out_c) {
		CHECK(raw.drv.cuMemcpyDtoHAsync(out_c, c, count * 4,
						raw.stream));
		CHECK(raw.drv.cuStreamSynchronize(raw.stream));
	}
	blas.destroy(h);
	raw.drv.cuMemFree(a);
	raw.drv.cuMemFree(b);
	raw.drv.cuMemFree(c);
	free(host);
	return 2.0 * (double)n * n * n / best;
}

/* The adds of the graph chain (graph.c's), on the raw stream. */
static int chain_adds(CUdeviceptr h[2], CUdeviceptr y, unsigned k)
{
	unsigned long long n = 256;
	for (unsigned i = 0; i < k; i++) {
		CUdeviceptr out = h[(i + 1) % 2], a = h[i % 2];
		void *args[] = {&out, &a, &y, &n};
		CHECK(raw.drv.cuLaunchKernel(raw.add, 1, 1, 1, 256, 1, 1, 0,
					     raw.stream, args, NULL));
	}
	return 0;
}

static double raw_graph_chain_ns(unsigned k, unsigned reps, int graph)
{
	CUdeviceptr h[2], y;
	CUgraph g = NULL;
	CUgraphExec exec = NULL;
	double best = INFINITY;

	if (enter_kernels() != 0)
		return -1;
	CHECK(raw.drv.cuMemAlloc(&h[0], 256 * 4));
	CHECK(raw.drv.cuMemAlloc(&h[1], 256 * 4));
	CHECK(raw.drv.cuMemAlloc(&y, 256 * 4));
	if (graph) {
		CHECK(raw.drv.cuStreamBeginCapture(
			raw.stream, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
		if (chain_adds(h, y, k) != 0)
			return -1;
		CHECK(raw.drv.cuStreamEndCapture(raw.stream, &g));
		CHECK(raw.drv.cuGraphInstantiateWithFlags(&exec, g, 0));
		CHECK(raw.drv.cuGraphLaunch(exec, raw.stream));
	} else if (chain_adds(h, y, k) != 0) {
		return -1;
	}
	CHECK(raw.drv.cuStreamSynchronize(raw.stream));
	for (int s = 0; s < 5; s++) {
		unsigned n = graph ? reps : reps / 10 + 1;
		uint64_t start = bench_now_ns();
		for (unsigned r = 0; r < n; r++) {
			if (graph)
				CHECK(raw.drv.cuGraphLaunch(exec, raw.stream));
			else if (chain_adds(h, y, k) != 0)
				return -1;
		}
		CHECK(raw.drv.cuStreamSynchronize(raw.stream));
		best = fmin(best, (double)(bench_now_ns() - start) /
					  ((double)n * k));
	}
	if (exec)
		raw.drv.cuGraphExecDestroy(exec);
	if (g)
		raw.drv.cuGraphDestroy(g);
	raw.drv.cuMemFree(h[0]);
	raw.drv.cuMemFree(h[1]);
	raw.drv.cuMemFree(y);
	return best;
}

static const struct bench_raw cuda_raw = {
	.launch_what = "cuLaunchKernel",
	.alloc_what = "cuMemAllocAsync+cuMemFreeAsync",
	.add_what = "one-element-per-thread add",
	.sgemm_what = "cublasSgemm",
	.launch_ns = raw_launch_ns,
	.alloc_pair_ns = raw_alloc_pair_ns,
	.add_gbps = raw_add_gbps,
	.sgemm_gflops = raw_sgemm_gflops,
	.replay_ns = raw_replay_ns,
	.overlap_what = "cuMemcpyHtoDAsync+add on CUDA streams",
	.event_what = "cuEventRecord+cuStreamWaitEvent",
	.overlap_ms = raw_overlap_ms,
	.event_pair_ns = raw_event_pair_ns,
	.graph_what = "cuLaunchKernel / cuGraphLaunch of a captured stream",
	.graph_chain_ns = raw_graph_chain_ns,
};

const struct bench_raw *bench_raw_for(const wafer_device_desc *device)
{
	if (strcmp(device->backend, "cuda") != 0)
		return NULL;
	if (!raw.tried) {
		raw.tried = 1;
		/* wafer's cuda:N is the N-th GPU of compute capability 8.0
		 * and later: the CUDA ordinal wherever all GPUs are. */
		raw.ok = setup((int)device->index) == 0;
	}
	return raw.ok ? &cuda_raw : NULL;
}

/*===----------------------------------------------------------------------===
 * wafer-bench sgemm
 *===----------------------------------------------------------------------===*/

/* The cuda plugin's f32 matmul variants (kernels.c); "tf32" rounds its
 * inputs to tf32, so it is not in the fp32 "own best". */
static const char *const variants[] = {
	"tile64",  "tile128",     "reg128", "reg128k16", "reg128x64",
	"warp128", "warp128x256", "tf32",   "cublas",
};

int bench_sgemm(int argc, char **argv)
{
	unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 4096;
	unsigned reps = argc > 2 ? (unsigned)strtoul(argv[2], NULL, 10) : 10;
	size_t count = (size_t)n * n;
	wafer_runtime *runtime;
	wafer_client *client;
	wafer_device_desc device = {.struct_size = sizeof device};
	wafer_handle a, b, c;
	float *host = malloc(count * sizeof *host);
	float *ref = malloc(count * sizeof *ref);
	double own_best = 0, cublas_wafer = 0;
	const char *own_name = "none";

	if (!host || !ref || n == 0 || reps == 0) {
		fprintf(stderr, "wafer-bench sgemm: bad size or no memory\n");
		return 2;
	}
	bench_check(wafer_runtime_open(NULL, &runtime), "runtime_open");
	client = bench_open_client(runtime, NULL, NULL);
	bench_check(wafer_client_device(client, &device), "client_device");
	if (strcmp(device.backend, "cuda") != 0) {
		printf("sgemm skipped: the default device is %s:%u, not cuda "
		       "(set WAFER_BACKEND=cuda)\n",
		       device.backend, device.index);
		wafer_client_close(client);
		wafer_runtime_close(runtime);
		free(host);
		free(ref);
		return 0;
	}
	const struct bench_raw *rawp = bench_raw_for(&device);
	double raw_gflops = rawp ? rawp->sgemm_gflops(n, reps, ref) : -1;
	if (raw_gflops > 0)
		printf("sgemm n=%u raw=%s gflops=%.1f\n", n, rawp->sgemm_what,
		       raw_gflops);

	for (size_t i = 0; i < count; i++)
		host[i] = bench_matrix_value(0, i);
	bench_check(wafer_create(client, host, count * 4, &a), "create a");
	for (size_t i = 0; i < count; i++)
		host[i] = bench_matrix_value(1, i);
	bench_check(wafer_create(client, host, count * 4, &b), "create b");
	bench_check(wafer_empty(client, count * 4, &c), "empty c");

	struct wafer_matmul_params p = {
		.batch = 1, .m = n, .n = n, .k = n, .batch_stride_c = count,
	};
	wafer_buffer_binding bindings[3] = {{c, 0, 0}, {a, 0, 0}, {b, 0, 0}};
	for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
		wafer_execute_args args = {
			.struct_size = sizeof args,
			.kernel = WAFER_KERNEL_MATMUL,
			.variant = variants[v],
			.dtype = WAFER_DTYPE_F32,
			.bindings = bindings,
			.binding_count = 3,
			.params = &p,
			.params_size = sizeof p,
			.global = {n, n, 1},
		};
		wafer_status st = wafer_execute(client, &args);
		if (st == WAFER_OK)
			st = wafer_sync(client);
		if (st != WAFER_OK) {
			printf("sgemm n=%u variant=%s skipped: %s\n", n,
			       variants[v], wafer_last_error());
			continue;
		}
		double best = INFINITY;
		for (unsigned r = 0; r < reps; r++) {
			uint64_t start = bench_now_ns();
			wafer_execute(client, &args);
			bench_check(wafer_sync(client), variants[v]);
			double ns = (double)(bench_now_ns() - start);
			if (ns < best)
				best = ns;
		}
		double gflops = 2.0 * (double)n * n * n / best;
		/* Against cuBLAS's product of the same inputs. */
		double worst = -1;
		if (raw_gflops > 0) {
			bench_check(wafer_read(client, c, 0, host, count * 4),
				    "read c");
			worst = 0;
			for (size_t i = 0; i < count; i++) {
				double d = fabs((double)host[i] - ref[i]) /
					   (fabs(ref[i]) + 1.0);
				if (!(d <= worst))
					worst = d;
			}
		}
		printf("sgemm n=%u variant=%s gflops=%.1f vs_raw=%.3f "
		       "max_diff_vs_raw=%.2g\n",
		       n, variants[v], gflops,
		       raw_gflops > 0 ? gflops / raw_gflops : 0.0, worst);
		fflush(stdout);
		if (strcmp(variants[v], "cublas") == 0)
			cublas_wafer = gflops;
		else if (strcmp(variants[v], "tf32") != 0 && gflops > own_best) {
			own_best = gflops;
			own_name = variants[v];
		}
	}
	printf("sgemm n=%u own_best=%s own_gflops=%.1f raw_cublas_gflops=%.1f "
	       "own_vs_cublas=%.3f wafer_cublas_gflops=%.1f\n",
	       n, own_name, own_best, raw_gflops,
	       raw_gflops > 0 ? own_best / raw_gflops : 0.0, cublas_wafer);
	wafer_release(client, a);
	wafer_release(client, b);
	wafer_release(client, c);
	wafer_client_close(client);
	wafer_runtime_close(runtime);
	free(host);
	free(ref);
	return 0;
}
