/* wafer example plugin "sim" — SPDX-License-Identifier: MIT
 *
 * sim.c: a simulated accelerator, written against wafer's installed
 * headers alone, that shows what the skeleton leaves out: programs in a
 * format of the vendor's own, the name wafer shows for that format (ABI
 * 1.7), and peer copy between its devices. Everything else is as small
 * as the skeleton's: memory is host memory, queues run everything at
 * once in the calling thread, and the kernel table has fill, copy, relu,
 * add and mul on f32.
 *
 *   - Devices: `[sim] devices` of them (default 2), so that peer copy
 *     has two ends.
 *   - Programs: format SIM_PROGRAM_C (WAFER_PROGRAM_VENDOR + 1, named
 *     "sim-c"): C source of host kernels (<wafer/host_kernel.h>), which
 *     the plugin compiles with $CC (default cc) into a shared object and
 *     loads. A real vendor's format is its IL or ISA; the entries around
 *     it (formats, load with the host's binary cache, kernels, release)
 *     are the same.
 *   - Peer copy: copy_peer between two devices is a memmove here; on
 *     hardware it is a DMA ordered on both queues.
 *
 * Build: see Makefile. Test: README (wafer-conformance with sim.backend,
 * which names the suite's test kernels in sim-c). */
/* mkdtemp, dlopen: POSIX.1-2008 beside -std=c11. */
#define _POSIX_C_SOURCE 200809L

#include <dlfcn.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <wafer/host_kernel.h>
#include <wafer/plugin_util.h>

#define SIM_NAME "sim"
#define SIM_VERSION "0.1.0"
#define SIM_ALIGNMENT 64
/* The vendor's own program format, as its header would define it. */
#define SIM_PROGRAM_C ((wafer_program_format)(WAFER_PROGRAM_VENDOR + 1))
/* Where <wafer/host_kernel.h> is, for the programs' compiler: wafer's
 * includedir, baked in by the Makefile (C_INCLUDE_PATH adds to it). */
#ifndef SIM_INCLUDEDIR
#define SIM_INCLUDEDIR "/usr/include"
#endif

struct sim_state {
	const struct wafer_host_services *host;
	uint32_t devices;
};

struct sim_device {
	struct sim_state *state;
	uint32_t index;
};

static void *ptr_of(wafer_resource r)
{
	return (void *)(uintptr_t)r;
}

/*===----------------------------------------------------------------------===
 * Lifetime and devices
 *===----------------------------------------------------------------------===*/

static wafer_status sim_option(void *opaque,
			       const struct wafer_plugin_option *o)
{
	struct sim_state *state = opaque;
	const char *origin;
	wafer_status status =
		wafer_plugin_option_check(state->host, SIM_NAME, o, &origin);
	char *end;

	if (status != WAFER_OK)
		return status;
	if (strcmp(o->key, "devices") != 0) {
		state->host->log(state->host, WAFER_LOG_WARN,
				 "%s: unknown key [sim] %s", origin, o->key);
		return WAFER_OK;
	}
	errno = 0;
	unsigned long n = strtoul(o->value, &end, 10);
	if (errno || end == o->value || *end || n < 1 || n > 16) {
		state->host->set_error("%s: [sim] devices: want 1 to 16, got "
				       "'%s'", origin, o->value);
		return WAFER_ERROR_CONFIG;
	}
	state->devices = (uint32_t)n;
	return WAFER_OK;
}

static wafer_status sim_init(const struct wafer_plugin_init_args *args,
			     void **out_state)
{
	wafer_status status;
	struct sim_state *state = wafer_plugin_init_state(
		args, SIM_NAME, sizeof *state, &status);

	*out_state = NULL;
	if (!state)
		return status;
	state->host = args->host;
	state->devices = 2;
	status = wafer_plugin_apply_options(args, sim_option, state);
	if (status != WAFER_OK) {
		free(state);
		return status;
	}
	*out_state = state;
	return WAFER_OK;
}

static void sim_shutdown(void *state)
{
	free(state);
}

static wafer_status sim_device_count(void *opaque, uint32_t *out_count)
{
	*out_count = ((struct sim_state *)opaque)->devices;
	return WAFER_OK;
}

static wafer_status sim_device_info(void *opaque, uint32_t index,
				    struct wafer_device_info *out)
{
	struct sim_state *state = opaque;
	struct wafer_device_info info = {.struct_size = sizeof info};
	wafer_status status = wafer_plugin_device_index_check(
		state->host, SIM_NAME, index, state->devices);

	if (status != WAFER_OK)
		return status;
	snprintf(info.name, sizeof info.name, "sim device %" PRIu32, index);
	info.memory_bytes = UINT64_C(1) << 30;
	info.capabilities = WAFER_CAP_HOST_MEMORY;
	info.alloc_alignment = SIM_ALIGNMENT;
	info.compute_units = 1;
	return wafer_plugin_device_info_copy(out, &info);
}

static wafer_status sim_device_open(void *opaque, uint32_t index,
				    void **out_device)
{
	struct sim_state *state = opaque;
	struct sim_device *device;
	wafer_status status = wafer_plugin_device_index_check(
		state->host, SIM_NAME, index, state->devices);

	*out_device = NULL;
	if (status != WAFER_OK)
		return status;
	device = calloc(1, sizeof *device);
	if (!device) {
		state->host->set_error("sim: out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	device->state = state;
	device->index = index;
	*out_device = device;
	return WAFER_OK;
}

static void sim_device_close(void *device)
{
	free(device);
}

static const struct wafer_host_services *host_of(void *device)
{
	return ((struct sim_device *)device)->state->host;
}

/*===----------------------------------------------------------------------===
 * Storage, and peer copy
 *===----------------------------------------------------------------------===*/

static wafer_status sim_storage_alloc(void *device, size_t size,
				      wafer_resource *out_resource)
{
	size_t rounded = (size + SIM_ALIGNMENT - 1) &
			 ~(size_t)(SIM_ALIGNMENT - 1);
	void *p;
	wafer_status status = wafer_plugin_alloc_check(host_of(device),
						       SIM_NAME, size,
						       out_resource);

	if (status != WAFER_OK)
		return status;
	p = rounded >= size ? aligned_alloc(SIM_ALIGNMENT, rounded) : NULL;
	if (!p) {
		host_of(device)->set_error("sim: cannot allocate %zu bytes",
					   size);
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	*out_resource = (wafer_resource)(uintptr_t)p;
	return WAFER_OK;
}

static void sim_storage_free(void *device, wafer_resource resource)
{
	(void)device;
	free(ptr_of(resource));
}

static wafer_status sim_storage_copy_in(void *device, void *queue,
					wafer_resource dst, size_t dst_offset,
					const void *src, size_t size)
{
	(void)device;
	(void)queue;
	memcpy((char *)ptr_of(dst) + dst_offset, src, size);
	return WAFER_OK;
}

static wafer_status sim_storage_copy_out(void *device, void *queue,
					 wafer_resource src, size_t src_offset,
					 void *dst, size_t size)
{
	(void)device;
	(void)queue;
	memcpy(dst, (const char *)ptr_of(src) + src_offset, size);
	return WAFER_OK;
}

static wafer_status sim_storage_copy(void *device, void *queue,
				     wafer_resource dst, size_t dst_offset,
				     wafer_resource src, size_t src_offset,
				     size_t size)
{
	(void)device;
	(void)queue;
	memmove((char *)ptr_of(dst) + dst_offset,
		(const char *)ptr_of(src) + src_offset, size);
	return WAFER_OK;
}

/* Both queues run their work at once, so everything issued on either
 * before this call has finished and the copy is ordered on both. A
 * device whose queues run later orders it with device-side waits both
 * ways (wafer-plugin(7), SCALE-OUT), never by the host waiting for the
 * other queue. */
static wafer_status sim_storage_copy_peer(void *device, void *queue,
					  wafer_resource dst, size_t dst_offset,
					  void *src_device, void *src_queue,
					  wafer_resource src,
					  size_t src_offset, size_t size)
{
	(void)src_device;
	(void)src_queue;
	return sim_storage_copy(device, queue, dst, dst_offset, src,
				src_offset, size);
}

static const struct wafer_storage_ops sim_storage_ops = {
	WAFER_PLUGIN_STORAGE_OPS(sim),
	.copy_peer = sim_storage_copy_peer,
};

/*===----------------------------------------------------------------------===
 * The kernel table: fill, copy, relu, add, mul on f32
 *===----------------------------------------------------------------------===*/

/* impl of a catalogue entry: out[i] = op(a[i], b[i]) (b = a for unary
 * kernels), or fill's value. */
struct sim_catalogue {
	float (*op)(float a, float b);
};

static float op_copy(float a, float b) { (void)b; return a; }
static float op_relu(float a, float b) { (void)b; return a > 0 || a != a ? a : 0.0f; }
static float op_add(float a, float b) { return a + b; }
static float op_mul(float a, float b) { return a * b; }

static const struct sim_catalogue fill_impl = {NULL};
static const struct sim_catalogue copy_impl = {op_copy};
static const struct sim_catalogue relu_impl = {op_relu};
static const struct sim_catalogue add_impl = {op_add};
static const struct sim_catalogue mul_impl = {op_mul};

#define SIM_KERNEL(name, bindings, params, run)                                 \
	{.struct_size = sizeof(struct wafer_kernel), .op = (name),             \
	 .variant = "default", .dtype = WAFER_DTYPE_F32,                       \
	 .binding_count = (bindings), .params_size = sizeof(params),           \
	 .impl = &(run)}

static const struct wafer_kernel sim_kernels[] = {
	SIM_KERNEL(WAFER_KERNEL_FILL, 1, struct wafer_fill_params, fill_impl),
	SIM_KERNEL(WAFER_KERNEL_COPY, 2, struct wafer_elementwise_params,
		   copy_impl),
	SIM_KERNEL(WAFER_KERNEL_RELU, 2, struct wafer_elementwise_params,
		   relu_impl),
	SIM_KERNEL(WAFER_KERNEL_ADD, 3, struct wafer_elementwise_params,
		   add_impl),
	SIM_KERNEL(WAFER_KERNEL_MUL, 3, struct wafer_elementwise_params,
		   mul_impl),
};

static wafer_status sim_device_kernels(void *device,
				       const struct wafer_kernel **out_kernels,
				       size_t *out_count)
{
	(void)device;
	*out_kernels = sim_kernels;
	*out_count = sizeof sim_kernels / sizeof sim_kernels[0];
	return WAFER_OK;
}

static float *f32_at(const struct wafer_launch *launch, uint32_t i)
{
	const struct wafer_binding *b =
		wafer_plugin_array_at(launch->bindings, i);
	return (float *)((char *)ptr_of(b->resource) + b->offset);
}

/* The count in the parameter block must fit every binding (plugin.h:
 * the core checked the bindings, not what the block reaches). */
static wafer_status run_catalogue(void *device,
				  const struct wafer_launch *launch)
{
	const struct sim_catalogue *k = launch->kernel->impl;
	size_t sizes[3] = {0};
	struct wafer_plugin_reach reach = {
		host_of(device), SIM_NAME, launch->kernel->op, sizes,
		launch->binding_count};
	uint64_t count;
	double value = 0;
	wafer_status status;

	for (uint32_t i = 0; i < launch->binding_count && i < 3; i++)
		sizes[i] = ((const struct wafer_binding *)wafer_plugin_array_at(
				    launch->bindings, i))
				   ->size;
	if (!k->op) {
		struct wafer_fill_params p;
		memcpy(&p, launch->params, sizeof p);
		count = p.count;
		value = p.value;
	} else {
		struct wafer_elementwise_params p;
		memcpy(&p, launch->params, sizeof p);
		count = p.count;
	}
	status = wafer_plugin_check_count(&reach, count, sizeof(float));
	if (status != WAFER_OK)
		return status;
	float *out = f32_at(launch, 0);
	const float *a = launch->binding_count > 1 ? f32_at(launch, 1) : out;
	const float *b = launch->binding_count > 2 ? f32_at(launch, 2) : a;
	for (uint64_t i = 0; i < count; i++)
		out[i] = k->op ? k->op(a[i], b[i]) : (float)value;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Programs in sim-c
 *===----------------------------------------------------------------------===*/

struct sim_program {
	void *dl;
	/* program_kernel may be called from several threads at once. */
	pthread_mutex_t lock;
	/* The kernels it has, "a, b", for the error of an unknown one. */
	char *names;
	struct wafer_plugin_program_kernels kernels;
	char name[64];
};

/* A program kernel: the helpers' head, then the function. */
struct sim_program_kernel {
	struct wafer_plugin_program_kernel head;
	wafer_host_kernel_fn *fn;
};

static const wafer_program_format sim_formats[] = {SIM_PROGRAM_C};

static wafer_status sim_program_formats(void *device,
					const wafer_program_format **out_formats,
					size_t *out_count)
{
	(void)device;
	*out_formats = sim_formats;
	*out_count = 1;
	return WAFER_OK;
}

/* What a load needs while it builds: the source, the scratch folder,
 * the program being made. */
struct sim_build {
	const struct wafer_host_services *host;
	const struct wafer_program_source *source;
	const char *options;
	char dir[64];
	struct sim_program *program;
};

static int write_file(const char *path, const void *data, size_t size)
{
	FILE *f = fopen(path, "wb");
	int ok = f && fwrite(data, 1, size, f) == size;

	if (f && fclose(f) != 0)
		ok = 0;
	return ok;
}

static void *read_file(const char *path, size_t *out_size)
{
	FILE *f = fopen(path, "rb");
	void *data = NULL;
	long n;

	*out_size = 0;
	if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)n)) &&
	    fread(data, 1, (size_t)n, f) == (size_t)n)
		*out_size = (size_t)n;
	else {
		free(data);
		data = NULL;
	}
	if (f)
		fclose(f);
	return data;
}

/* dlopens the shared object |size| bytes at |binary| (a file of the
 * scratch folder, removed once loaded). */
static wafer_status sim_build_load(void *ctx, const void *binary, size_t size)
{
	struct sim_build *b = ctx;
	char path[96];

	snprintf(path, sizeof path, "%s/program.so", b->dir);
	if (!write_file(path, binary, size)) {
		b->host->set_error("sim: cannot write %s", path);
		return WAFER_ERROR_IO;
	}
	b->program->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	unlink(path);
	if (!b->program->dl) {
		b->host->set_error("sim: %s: %s", b->program->name, dlerror());
		return WAFER_ERROR_BUILD;
	}
	return WAFER_OK;
}

/* $CC -shared on the source; its messages are the build log. */
static wafer_status sim_build_compile(void *ctx, void **out_binary,
				      size_t *out_size)
{
	struct sim_build *b = ctx;
	const char *cc = getenv("CC") && *getenv("CC") ? getenv("CC") : "cc";
	char src[96], so[96], log[96], include[600] = "", command[2048];
	size_t log_size;
	char *text;
	int rc;

	snprintf(src, sizeof src, "%s/%s.c", b->dir, "program");
	snprintf(so, sizeof so, "%s/program.so", b->dir);
	snprintf(log, sizeof log, "%s/build.log", b->dir);
	if (!write_file(src, b->source->data, b->source->size)) {
		b->host->set_error("sim: cannot write %s", src);
		return WAFER_ERROR_IO;
	}
	if (SIM_INCLUDEDIR[0])
		snprintf(include, sizeof include, "-I'%s'", SIM_INCLUDEDIR);
	/* The source's name in the compiler's messages, through #line. */
	snprintf(command, sizeof command,
		 "{ printf '#line 1 \"%s\"\\n'; cat '%s'; } | %s -x c -std=c11 "
		 "-O2 -fPIC -shared %s %s -o '%s' - >'%s' 2>&1",
		 b->program->name, src, cc, include,
		 b->options ? b->options : "", so, log);
	rc = system(command);
	text = read_file(log, &log_size);
	if (rc != 0 || !(*out_binary = read_file(so, out_size))) {
		b->host->set_error("sim: %s did not build (%s, status %d):\n%.*s",
				   b->program->name, cc, rc, (int)log_size,
				   text ? text : "");
		free(text);
		return WAFER_ERROR_BUILD;
	}
	free(text);
	return sim_build_load(b, *out_binary, *out_size);
}

/* The kernels a source defines, "a, b": the names after each
 * WAFER_HOST_KERNEL( in it (NULL when out of memory). */
static char *kernel_names(const struct wafer_program_source *source)
{
	static const char mark[] = "WAFER_HOST_KERNEL(";
	const char *text = source->data, *end = text + source->size;
	char *names = calloc(1, source->size + 1);
	size_t used = 0;

	for (const char *p = text; names && p + sizeof mark - 1 < end; p++) {
		if (memcmp(p, mark, sizeof mark - 1) != 0)
			continue;
		p += sizeof mark - 1;
		if (used)
			used += (size_t)sprintf(names + used, ", ");
		while (p < end && *p != ')' && used < source->size)
			names[used++] = *p++;
	}
	return names;
}

static wafer_status sim_program_load(void *device,
				     const struct wafer_program_source *source,
				     const char *options, void **out_program)
{
	const struct wafer_host_services *host = host_of(device);
	struct sim_program *program = calloc(1, sizeof *program);
	struct sim_build b = {host, source, options, "", program};
	char cmd[96];
	wafer_status status;

	*out_program = NULL;
	if (!program) {
		host->set_error("sim: out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	/* Names made of safe characters only: the name goes into a shell
	 * command and into a #line. */
	const char *base = source->name ? strrchr(source->name, '/') : NULL;
	snprintf(program->name, sizeof program->name, "%s",
		 base ? base + 1 : source->name ? source->name : "program");
	for (char *c = program->name; *c; c++)
		if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
			    "0123456789._-", *c))
			*c = '_';
	program->kernels = (struct wafer_plugin_program_kernels){
		host, SIM_NAME, program->name, 0, NULL};
	snprintf(b.dir, sizeof b.dir, "%s/wafer-sim.XXXXXX",
		 getenv("TMPDIR") && strlen(getenv("TMPDIR")) < 40
			 ? getenv("TMPDIR")
			 : "/tmp");
	if (!mkdtemp(b.dir)) {
		host->set_error("sim: mkdtemp %s: %s", b.dir, strerror(errno));
		free(program);
		return WAFER_ERROR_IO;
	}
	struct wafer_cache_part key[] = {
		wafer_plugin_cache_text("sim-c " SIM_VERSION),
		wafer_plugin_cache_part(source->data, source->size),
		wafer_plugin_cache_text(options ? options : ""),
	};
	struct wafer_plugin_cached_build build = {
		host, program->name, "sim-c", key, 3, sim_build_load,
		sim_build_compile, &b};
	status = wafer_plugin_cached_build(&build);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", b.dir);
	if (system(cmd) != 0)
		host->log(host, WAFER_LOG_INFO, "sim: could not remove %s",
			  b.dir);
	if (status != WAFER_OK) {
		free(program);
		return status;
	}
	program->names = kernel_names(source);
	pthread_mutex_init(&program->lock, NULL);
	*out_program = program;
	return WAFER_OK;
}

static wafer_status sim_kernel_make(void *ctx, void *kernel)
{
	struct sim_program *program = ctx;
	struct sim_program_kernel *k = kernel;
	void *symbol = dlsym(program->dl, k->head.name);

	if (!symbol) {
		program->kernels.host->set_error(
			"sim: no kernel %s in %s; it has: %s", k->head.name,
			program->name, program->names ? program->names : "?");
		return WAFER_ERROR_NOT_FOUND;
	}
	memcpy(&k->fn, &symbol, sizeof k->fn);
	return WAFER_OK;
}

static wafer_status sim_program_kernel(void *device, void *opaque,
				       const char *name, uint32_t binding_count,
				       size_t params_size,
				       const struct wafer_kernel **out_kernel)
{
	struct sim_program *program = opaque;
	wafer_status status;

	(void)device;
	pthread_mutex_lock(&program->lock);
	status = wafer_plugin_program_kernel_get(
		&program->kernels, name, binding_count, params_size,
		sizeof(struct sim_program_kernel), sim_kernel_make, program,
		out_kernel);
	pthread_mutex_unlock(&program->lock);
	return status;
}

static void sim_program_release(void *device, void *opaque)
{
	struct sim_program *program = opaque;

	(void)device;
	wafer_plugin_program_kernels_release(&program->kernels, NULL);
	pthread_mutex_destroy(&program->lock);
	dlclose(program->dl);
	free(program->names);
	free(program);
}

/* A program kernel runs once over the whole launch: begin 0, end
 * global[0]. */
static wafer_status run_program(const struct wafer_launch *launch)
{
	const struct sim_program_kernel *k = launch->kernel->impl;
	void *pointers[64];
	size_t sizes[64];
	struct wafer_host_kernel_args args = {.struct_size = sizeof args};

	if (launch->binding_count > 64)
		return WAFER_ERROR_INVALID_ARGUMENT;
	for (uint32_t i = 0; i < launch->binding_count; i++) {
		const struct wafer_binding *b =
			wafer_plugin_array_at(launch->bindings, i);
		pointers[i] = (char *)ptr_of(b->resource) + b->offset;
		sizes[i] = b->size;
	}
	args.bindings = pointers;
	args.binding_sizes = sizes;
	args.binding_count = launch->binding_count;
	args.params = launch->params_size ? launch->params : NULL;
	args.params_size = launch->params_size;
	memcpy(args.global, launch->global, sizeof args.global);
	args.end = launch->global[0];
	k->fn(&args);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Server
 *===----------------------------------------------------------------------===*/

/* Work runs at once, so a queue has no state; any non-NULL pointer. */
static wafer_status sim_server_queue_create(void *device, void **out_queue)
{
	*out_queue = device;
	return WAFER_OK;
}

static void sim_server_queue_destroy(void *device, void *queue)
{
	(void)device;
	(void)queue;
}

static wafer_status sim_server_launch(void *device, void *queue,
				      const struct wafer_launch *launch)
{
	(void)queue;
	/* A program's kernel has no element type; the table's all have one
	 * (plugin_util.h). The entry may be a copy of the table's: go by
	 * its contents, never its address. */
	if (wafer_plugin_kernel_is_program(launch->kernel))
		return run_program(launch);
	return run_catalogue(device, launch);
}

static wafer_status sim_server_sync(void *device, void *queue)
{
	(void)device;
	(void)queue;
	return WAFER_OK;
}

static const struct wafer_server_ops sim_server_ops = {
	WAFER_PLUGIN_SERVER_OPS(sim),
	.program_formats = sim_program_formats,
	.program_load = sim_program_load,
	.program_kernel = sim_program_kernel,
	.program_release = sim_program_release,
};

/*===----------------------------------------------------------------------===
 * The descriptor: with the names of its vendor values (ABI 1.7)
 *===----------------------------------------------------------------------===*/

static const struct wafer_vendor_name sim_names[] = {
	{sizeof(struct wafer_vendor_name), WAFER_VENDOR_PROGRAM_FORMAT,
	 SIM_PROGRAM_C, "sim-c"},
};

static const struct wafer_plugin sim_plugin = {
	WAFER_PLUGIN_DESCRIPTOR(sim),
	.name = SIM_NAME,
	.version = SIM_VERSION,
	.description = "wafer example: a simulated accelerator with programs "
		       "in sim-c and peer copy",
	.vendor_names = sim_names,
	.vendor_name_count = sizeof sim_names / sizeof sim_names[0],
};

WAFER_PLUGIN_EXPORT WAFER_PLUGIN_QUERY_RETURNS(sim_plugin)
