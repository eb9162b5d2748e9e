/* wafer — SPDX-License-Identifier: MIT
 *
 * dispatch.c: `wafer-bench dispatch` — the cost of getting a kernel to the
 * device. For each channel: nanoseconds per wafer_execute of the no-op
 * kernel by name (throughput: 1M launches, then one sync) and per
 * execute+sync round trip; beside them, in the same run, a plain call of
 * the plugin's own launch entry with the same kernel (the plugin loaded by
 * hand, no wafer core in between), and wafer_execute with the kernel
 * resolved once by wafer_kernel_find, as the plain call has it, and an
 * empty kernel of the caller's own (a program, program.h) by ref, which
 * should cost what the catalogue's costs:
 *
 *   dispatch channel=C ns_per_execute=X ns_per_roundtrip=Y plain_call_ns=Z
 *            vs_plain=X/Z ns_per_execute_ref=F ref_vs_plain=F/Z
 *            [ns_per_execute_program=P program_vs_ref=P/F]
 *            [raw_launch_ns=R vs_raw=X/R]
 *
 * The program fields when the device takes one of the empty kernel's
 * formats (CUDA C, PTX, OpenCL C, host C); else the reason goes to
 * stderr.
 * The last two when the backend has a raw counterpart (raw.h): an empty
 * kernel launched with the vendor API directly (cuLaunchKernel), the
 * same number of times, in the same process. */
#include "build-config.h"

#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>
#include <wafer/program.h>

#include "tools/bench/bench.h"
#include "tools/bench/raw.h"

static uint64_t launches = 1000000;
static uint64_t roundtrips = 20000;

static void quiet_set_error(const char *format, ...)
{
}

static void quiet_log(const struct wafer_host_services *host,
		      wafer_log_level level, const char *format, ...)
{
}

/* The default device's plugin path, found through a runtime. */
static void default_plugin(char *path, size_t path_size, uint32_t *out_index)
{
	wafer_runtime *runtime;
	wafer_client *client;
	wafer_device_desc device = {.struct_size = sizeof device};
	bench_check(wafer_runtime_open(NULL, &runtime), "runtime_open");
	bench_check(wafer_client_open(runtime, "default", NULL, &client),
		    "client_open");
	bench_check(wafer_client_device(client, &device), "client_device");
	*out_index = device.index;
	for (size_t i = 0; i < wafer_runtime_plugin_count(runtime); i++) {
		wafer_plugin_report report = {.struct_size = sizeof report};
		wafer_runtime_plugin(runtime, i, &report);
		if (report.accepted && strcmp(report.name, device.backend) == 0)
			snprintf(path, path_size, "%s", report.path);
	}
	wafer_client_close(client);
	wafer_runtime_close(runtime);
}

/* ns per plugin->server->launch of noop, called directly. */
static double plain_call_ns(const char *path, uint32_t index)
{
	static struct wafer_host_services host = {
		.struct_size = sizeof host,
		.abi_major = WAFER_PLUGIN_ABI_MAJOR,
		.abi_minor = WAFER_PLUGIN_ABI_MINOR,
		.set_error = quiet_set_error,
		.log = quiet_log,
	};
	void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!so) {
		fprintf(stderr, "wafer-bench: dlopen %s: %s\n", path, dlerror());
		exit(1);
	}
	wafer_plugin_query_fn query =
		(wafer_plugin_query_fn)dlsym(so, WAFER_PLUGIN_QUERY_SYMBOL);
	const struct wafer_plugin *plugin =
		query ? query(WAFER_PLUGIN_ABI_MAJOR, &host) : NULL;
	struct wafer_plugin_init_args init = {.struct_size = sizeof init,
					      .host = &host};
	void *state, *device, *queue;
	const struct wafer_kernel *kernels, *noop = NULL;
	size_t count;
	if (!plugin || plugin->init(&init, &state) ||
	    plugin->device_open(state, index, &device) ||
	    plugin->device_kernels(device, &kernels, &count) ||
	    plugin->server->queue_create(device, &queue)) {
		fprintf(stderr, "wafer-bench: cannot set up %s by hand\n", path);
		exit(1);
	}
	for (size_t i = 0; i < count; i++)
		if (strcmp(kernels[i].op, WAFER_KERNEL_NOOP) == 0 && !noop)
			noop = &kernels[i];
	if (!noop) {
		fprintf(stderr, "wafer-bench: %s has no noop kernel\n", path);
		exit(1);
	}
	struct wafer_launch launch = {
		.struct_size = sizeof launch,
		.kernel = noop,
		.global = {1, 1, 1},
	};
	/* The best of three: the baseline should not carry a hiccup of this
	 * shared machine into every ratio. */
	double ns = 0;
	for (int run = 0; run < 3; run++) {
		uint64_t start = bench_now_ns();
		for (uint64_t i = 0; i < launches; i++)
			plugin->server->launch(device, queue, &launch);
		plugin->server->sync(device, queue);
		double t = (double)(bench_now_ns() - start) / (double)launches;
		if (run == 0 || t < ns)
			ns = t;
	}
	plugin->server->queue_destroy(device, queue);
	plugin->device_close(device);
	plugin->shutdown(state);
	dlclose(so);
	return ns;
}

/* An empty kernel, wafer_bench_empty (no bindings, no parameters), in
 * the formats one can write inline. */
static const char empty_cuda[] =
	"extern \"C\" __global__ void wafer_bench_empty() {}\n";
static const char empty_ptx[] = ".version 7.8\n"
				".target sm_75\n"
				".address_size 64\n"
				".visible .entry wafer_bench_empty()\n"
				"{\n"
				"\tret;\n"
				"}\n";
static const char empty_opencl[] = "__kernel void wafer_bench_empty(void) {}\n";
static const char empty_host[] = "#include <wafer/host_kernel.h>\n"
				 "WAFER_HOST_KERNEL(wafer_bench_empty) {}\n";

/* The empty kernel as a program of |client|, or NULL with the reason on
 * stderr. */
static wafer_program *empty_program(wafer_client *client,
				    const wafer_kernel_ref **out_ref)
{
#define SOURCE(f, text, file)                                                  \
	{sizeof(wafer_program_source), f, text, sizeof text - 1, file}
	static const wafer_program_source sources[] = {
		SOURCE(WAFER_PROGRAM_CUDA_C, empty_cuda, "empty.cu"),
		SOURCE(WAFER_PROGRAM_PTX, empty_ptx, "empty.ptx"),
		SOURCE(WAFER_PROGRAM_OPENCL_C, empty_opencl, "empty.cl"),
		SOURCE(WAFER_PROGRAM_HOST_C, empty_host, "empty.c"),
	};
#undef SOURCE
	wafer_program *program = NULL;
	*out_ref = NULL;
	if (wafer_program_create(client, sources,
				 sizeof sources / sizeof sources[0], NULL,
				 &program) != WAFER_OK ||
	    wafer_program_kernel(program, "wafer_bench_empty", 0, 0,
				 out_ref) != WAFER_OK) {
		fprintf(stderr, "wafer-bench: no program kernel: %s\n",
			wafer_last_error());
		wafer_program_release(program);
		return NULL;
	}
	return program;
}

static void measure_channel(wafer_runtime *runtime, const char *channel,
			    double plain_ns, double raw_ns)
{
	wafer_client *client = bench_open_client(runtime, channel, NULL);
	wafer_execute_args args = {
		.struct_size = sizeof args,
		.kernel = WAFER_KERNEL_NOOP,
		.dtype = WAFER_DTYPE_F32,
		.global = {1, 1, 1},
	};
	for (int i = 0; i < 1000; i++)
		bench_check(wafer_execute(client, &args), "execute noop");
	bench_check(wafer_sync(client), "sync");

	uint64_t start = bench_now_ns();
	for (uint64_t i = 0; i < launches; i++)
		wafer_execute(client, &args);
	bench_check(wafer_sync(client), "sync");
	double execute_ns = (double)(bench_now_ns() - start) / (double)launches;

	/* The same with the kernel resolved once (wafer_kernel_find), as
	 * the plain call has it. */
	wafer_execute_args by_ref = args;
	bench_check(wafer_kernel_find(client, WAFER_KERNEL_NOOP, NULL,
				      WAFER_DTYPE_F32, &by_ref.kernel_ref),
		    "kernel_find noop");
	start = bench_now_ns();
	for (uint64_t i = 0; i < launches; i++)
		wafer_execute(client, &by_ref);
	bench_check(wafer_sync(client), "sync");
	double ref_ns = (double)(bench_now_ns() - start) / (double)launches;

	/* A kernel of the caller's own, by ref. */
	wafer_execute_args by_program = args;
	wafer_program *program = empty_program(client, &by_program.kernel_ref);
	double program_ns = -1;
	if (program) {
		for (int i = 0; i < 1000; i++)
			bench_check(wafer_execute(client, &by_program),
				    "execute wafer_bench_empty");
		bench_check(wafer_sync(client), "sync");
		start = bench_now_ns();
		for (uint64_t i = 0; i < launches; i++)
			wafer_execute(client, &by_program);
		bench_check(wafer_sync(client), "sync");
		program_ns = (double)(bench_now_ns() - start) / (double)launches;
		bench_check(wafer_program_release(program), "program_release");
	}

	start = bench_now_ns();
	for (uint64_t i = 0; i < roundtrips; i++) {
		wafer_execute(client, &args);
		wafer_sync(client);
	}
	double roundtrip_ns =
		(double)(bench_now_ns() - start) / (double)roundtrips;
	printf("dispatch channel=%s ns_per_execute=%.1f ns_per_roundtrip=%.1f "
	       "plain_call_ns=%.1f vs_plain=%.2f ns_per_execute_ref=%.1f "
	       "ref_vs_plain=%.2f",
	       channel, execute_ns, roundtrip_ns, plain_ns,
	       execute_ns / plain_ns, ref_ns, ref_ns / plain_ns);
	if (program_ns > 0)
		printf(" ns_per_execute_program=%.1f program_vs_ref=%.3f",
		       program_ns, program_ns / ref_ns);
	if (raw_ns > 0)
		printf(" raw_launch_ns=%.1f vs_raw=%.3f", raw_ns,
		       execute_ns / raw_ns);
	printf("\n");
	fflush(stdout);
	wafer_client_close(client);
}

int bench_dispatch(int argc, char **argv)
{
	static const char *const channels[] = {"direct", "mutex", "mpsc"};
	char path[4096] = "";
	uint32_t index;
	if (argc > 1)
		launches = bench_count("dispatch", "launches", argv[1],
				       BENCH_MAX_COUNT);
	if (argc > 2)
		roundtrips = bench_count("dispatch", "round trips", argv[2],
					 BENCH_MAX_COUNT);

	default_plugin(path, sizeof path, &index);
	double plain_ns = plain_call_ns(path, index);
	wafer_runtime *runtime;
	bench_check(wafer_runtime_open(NULL, &runtime), "runtime_open");

	/* The raw counterpart, on the same device while a client holds it. */
	wafer_client *probe = bench_open_client(runtime, NULL, NULL);
	wafer_device_desc device = {.struct_size = sizeof device};
	bench_check(wafer_client_device(probe, &device), "client_device");
	const struct bench_raw *raw = bench_raw_for(&device);
	double raw_ns = raw ? raw->launch_ns(launches) : -1;
	wafer_client_close(probe);

	for (size_t c = 0; c < sizeof channels / sizeof channels[0]; c++)
		measure_channel(runtime, channels[c], plain_ns, raw_ns);
	wafer_runtime_close(runtime);
	return 0;
}
