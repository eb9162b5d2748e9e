/* wafer — SPDX-License-Identifier: MIT
 *
 * custom-kernel.c: a kernel of your own on whatever device is the
 * default. One program offers the same kernel — scale_add:
 * y[i] = a * x[i] + b — as CUDA C, OpenCL C and host C; the device takes
 * the first of them it can build (wafer-program(7)). The kernel is then
 * launched by ref like any of the plugin's, and the result is checked on
 * the host.
 *
 *   ./uninstalled examples/custom-kernel
 *   WAFER_BACKEND=opencl WAFER_OPENCL_TYPE=all ./uninstalled examples/custom-kernel
 *
 * The calling convention every format follows: one pointer per binding,
 * then the parameter block by value; global = the work items. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <wafer/program.h>
#include <wafer/wafer.h>

/* The parameter block: the same bytes in every source below. */
struct scale_add_params {
	uint64_t n;
	float a, b;
};

static const char cuda_source[] =
	"struct params { unsigned long long n; float a, b; };\n"
	"extern \"C\" __global__ void scale_add(float *y, const float *x,\n"
	"                                       params p)\n"
	"{\n"
	"    unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x\n"
	"                           + threadIdx.x;\n"
	"    if (i < p.n)\n"
	"        y[i] = p.a * x[i] + p.b;\n"
	"}\n";

static const char opencl_source[] =
	"typedef struct { ulong n; float a, b; } params;\n"
	"__kernel void scale_add(__global float *y, __global const float *x,\n"
	"                        params p)\n"
	"{\n"
	"    size_t i = get_global_id(0);\n"
	"    if (i < p.n)\n"
	"        y[i] = p.a * x[i] + p.b;\n"
	"}\n";

/* Host kernels get a range of dimension 0: the cpu plugin runs several
 * ranges at once on its threads. */
static const char host_source[] =
	"#include <stdint.h>\n"
	"#include <string.h>\n"
	"#include <wafer/host_kernel.h>\n"
	"struct params { uint64_t n; float a, b; };\n"
	"WAFER_HOST_KERNEL(scale_add)\n"
	"{\n"
	"    struct params p;\n"
	"    memcpy(&p, args->params, sizeof p);\n"
	"    float *y = args->bindings[0];\n"
	"    const float *x = args->bindings[1];\n"
	"    for (uint64_t i = args->begin; i < args->end && i < p.n; i++)\n"
	"        y[i] = p.a * x[i] + p.b;\n"
	"}\n";

#define CHECK(call)                                                            \
	do {                                                                   \
		wafer_status s_ = (call);                                      \
		if (s_ != WAFER_OK) {                                          \
			fprintf(stderr, "%s: %s\n%s\n", #call,                 \
				wafer_status_string(s_), wafer_last_error());  \
			exit(1);                                               \
		}                                                              \
	} while (0)

int main(void)
{
	enum { N = 100000 };
	static float x[N], y[N];
	wafer_runtime *runtime;
	wafer_client *client;
	wafer_program *program;
	const wafer_kernel_ref *scale_add;
	wafer_handle hx, hy;

	CHECK(wafer_runtime_open(NULL, &runtime));
	CHECK(wafer_client_open(runtime, "default", NULL, &client));
	wafer_device_desc device = {.struct_size = sizeof device};
	CHECK(wafer_client_device(client, &device));

	/* One program, three formats: the device takes the first it can. */
	const wafer_program_source sources[] = {
		{sizeof sources[0], WAFER_PROGRAM_CUDA_C, cuda_source,
		 sizeof cuda_source - 1, "scale_add.cu"},
		{sizeof sources[0], WAFER_PROGRAM_OPENCL_C, opencl_source,
		 sizeof opencl_source - 1, "scale_add.cl"},
		{sizeof sources[0], WAFER_PROGRAM_HOST_C, host_source,
		 sizeof host_source - 1, "scale_add.c"},
	};
	CHECK(wafer_program_create(client, sources, 3, NULL, &program));
	CHECK(wafer_program_kernel(program, "scale_add", 2,
				   sizeof(struct scale_add_params),
				   &scale_add));

	for (int i = 0; i < N; i++)
		x[i] = (float)i / N;
	CHECK(wafer_create(client, x, sizeof x, &hx));
	CHECK(wafer_empty(client, sizeof y, &hy));

	wafer_buffer_binding bindings[2] = {{hy, 0, 0}, {hx, 0, 0}};
	struct scale_add_params params = {.n = N, .a = 3.0f, .b = -1.0f};
	wafer_execute_args args = {
		.struct_size = sizeof args,
		.bindings = bindings,
		.binding_count = 2,
		.params = &params,
		.params_size = sizeof params,
		.global = {N, 1, 1},
		.kernel_ref = scale_add,
	};
	CHECK(wafer_execute(client, &args));
	CHECK(wafer_read(client, hy, 0, y, sizeof y));

	int wrong = 0;
	for (int i = 0; i < N; i++)
		if (fabsf(y[i] - (3.0f * x[i] - 1.0f)) > 1e-5f)
			wrong++;
	printf("scale_add on %s:%u (%s): %s\n", device.backend, device.index,
	       device.name, wrong ? "WRONG" : "correct");

	wafer_release(client, hx);
	wafer_release(client, hy);
	wafer_program_release(program);
	wafer_client_close(client);
	wafer_runtime_close(runtime);
	return wrong ? 1 : 0;
}
