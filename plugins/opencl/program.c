/* wafer — SPDX-License-Identifier: MIT
 *
 * program.c: programs, the caller's own kernels (wafer-program(7)),
 * on the OpenCL plugin — the program entries of wafer_server_ops and the
 * launch of a program's kernel. (kernels_build.c builds the plugin's own
 * catalogue; this file, what the caller brings.)
 *
 * Formats: opencl-c (clCreateProgramWithSource) on every device, and
 * spirv (clCreateProgramWithIL, or the cl_khr_il_program extension) on a
 * device whose CL_DEVICE_IL_VERSION names SPIR-V. The build options are
 * the caller's alone. A program that does not build is WAFER_ERROR_BUILD
 * with the device's whole build log as the compiler wrote it, its line
 * numbers the caller's (the file it names is the compiler's choice:
 * "<kernel>" on NVIDIA, a temporary file on PoCL). The built
 * binary goes to the host's binary cache, keyed by the source, the
 * options and the device and driver, so a second process loads it with
 * clCreateProgramWithBinary and compiles nothing.
 *
 * Launch, as every format's calling convention says: one `__global`
 * pointer per binding to the binding's first byte — the buffer itself at
 * offset 0, else a sub-buffer from the offset (binding offsets are
 * multiples of alloc_alignment, which is at least the device's
 * CL_DEVICE_MEM_BASE_ADDR_ALIGN, as sub-buffers need) — then the
 * parameter block by value. The global size is the launch's, rounded up
 * to whole work-groups when it gives a local size; without one the driver
 * chooses. A kernel's arguments are state of its cl_kernel, so launches
 * of one program kernel from several queues take turns setting them and
 * enqueueing (a short lock; the enqueued command keeps its values). */
#include "build-config.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <CL/cl_ext.h>

#include "plugins/opencl/ocl_plugin.h"
#include "plugins/common/program_load.h"
#include "plugins/common/program_kernels.h"

/* Version of what this file stores in the binary cache. */
#define CACHE_LAYOUT "wafer opencl program 1"

/* More bindings than the core ever passes. */
#define MAX_BINDINGS 64

struct ocl_program_kernel {
	/* First: head.entry.impl points back here. */
	struct wafer_plugin_program_kernel head;
	/* Guards the arguments of |kernel| from set to enqueue. */
	pthread_mutex_t lock;
	cl_kernel kernel;
};

struct ocl_program {
	/* First: program_new makes it. */
	struct program_head head;
	cl_program program;
};

/*===----------------------------------------------------------------------===
 * Formats
 *===----------------------------------------------------------------------===*/

static const wafer_program_format formats_il[] = {
	WAFER_PROGRAM_OPENCL_C,
	WAFER_PROGRAM_SPIRV,
};

static const wafer_program_format formats_source[] = {
	WAFER_PROGRAM_OPENCL_C,
};

/* Whether |dev| takes SPIR-V: its IL versions name it (and the call that
 * takes it is there: create_with_il). */
static int takes_spirv(const struct ocl_device *dev)
{
	char il[OCL_TEXT_MAX] = "";

	if (clGetDeviceInfo(dev->entry->id, CL_DEVICE_IL_VERSION_KHR,
			    sizeof il - 1, il, NULL) != CL_SUCCESS)
		return 0;
	return strstr(il, "SPIR-V") != NULL;
}

/* clCreateProgramWithIL of OpenCL 2.1 (the plugin is built against 1.2,
 * so it is looked up, not linked), else the KHR extension's. */
static clCreateProgramWithILKHR_fn create_with_il(const struct ocl_device *dev)
{
	clCreateProgramWithILKHR_fn fn;
	void *loader;

	fn = (clCreateProgramWithILKHR_fn)(uintptr_t)
		clGetExtensionFunctionAddressForPlatform(
			dev->entry->platform, "clCreateProgramWithILKHR");
	if (fn)
		return fn;
	loader = dlopen("libOpenCL.so.1", RTLD_NOW | RTLD_NOLOAD);
	if (!loader)
		return NULL;
	fn = (clCreateProgramWithILKHR_fn)(uintptr_t)dlsym(
		loader, "clCreateProgramWithIL");
	dlclose(loader); /* RTLD_NOLOAD: only our reference goes */
	return fn;
}

wafer_status ocl_program_formats(void *device,
				 const wafer_program_format **out,
				 size_t *out_count)
{
	if (takes_spirv(device) && create_with_il(device)) {
		*out = formats_il;
		*out_count = sizeof formats_il / sizeof formats_il[0];
	} else {
		*out = formats_source;
		*out_count = sizeof formats_source / sizeof formats_source[0];
	}
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Building
 *===----------------------------------------------------------------------===*/

/* clBuildProgram of |program|; a failure is WAFER_ERROR_BUILD with the
 * whole log, verbatim. */
static wafer_status build(const struct ocl_device *dev, cl_program program,
			  const char *format, const char *name,
			  const char *options)
{
	const struct wafer_host_services *host = ocl_host(dev);
	cl_int err;
	char *log;

	err = clBuildProgram(program, 1, &dev->entry->id, options ? options : "",
			     NULL, NULL);
	if (err == CL_SUCCESS)
		return WAFER_OK;
	if (err != CL_BUILD_PROGRAM_FAILURE && err != CL_INVALID_BUILD_OPTIONS &&
	    err != CL_COMPILER_NOT_AVAILABLE && err != CL_INVALID_BINARY)
		return ocl_fail(host, err, "clBuildProgram(%s %s) on %s", format,
				name, dev->entry->name);
	log = ocl_build_log(dev, program);
	host->set_error(OCL_NAME ": %s %s does not build on %s: %s (%d) with "
			"options '%s'%s%s",
			format, name, dev->entry->name, ocl_error_name(err),
			(int)err, options ? options : "",
			log && log[0] ? ":\n" : "", log ? log : "");
	free(log);
	return WAFER_ERROR_BUILD;
}

/* What load_binary and compile read: the program being made, its format
 * and how it is made from the caller's bytes. */
struct build_ctx {
	/* First: program_cached_build hands load_binary and compile it. */
	struct program_build head;
	const char *format;
	clCreateProgramWithILKHR_fn with_il;
};

/* The program from its cached binary (wafer_plugin_cached_build's load):
 * the driver may not take it any more. */
static wafer_status load_binary(void *ctx, const void *data, size_t size)
{
	struct build_ctx *b = ctx;
	const struct ocl_device *dev = b->head.device;
	struct ocl_program *p = b->head.program;
	cl_int err = CL_SUCCESS, binary_status = CL_SUCCESS;
	const unsigned char *binary = data;
	char why[256];

	if (!ocl_binary_check(binary, size, why, sizeof why)) {
		const struct wafer_host_services *host = b->head.host;
		host->log(host, WAFER_LOG_INFO, "%s %s: cached binary refused: %s",
			  b->format, b->head.name, why);
		return WAFER_ERROR_BUILD;
	}
	p->program = clCreateProgramWithBinary(dev->context, 1,
					       &dev->entry->id, &size, &binary,
					       &binary_status, &err);
	if (p->program && binary_status == CL_SUCCESS &&
	    clBuildProgram(p->program, 1, &dev->entry->id,
			   b->head.options ? b->head.options : "", NULL,
			   NULL) == CL_SUCCESS)
		return WAFER_OK;
	if (p->program)
		clReleaseProgram(p->program);
	p->program = NULL;
	return WAFER_ERROR_BUILD;
}

/* The program from the caller's source or SPIR-V, and its binary to
 * store. */
static wafer_status compile(void *ctx, void **out_binary, size_t *out_size)
{
	struct build_ctx *b = ctx;
	const struct ocl_device *dev = b->head.device;
	struct ocl_program *p = b->head.program;
	const struct wafer_program_source *source = b->head.source;
	const struct wafer_host_services *host = b->head.host;
	unsigned char *binary;
	wafer_status status;
	size_t size = 0;
	cl_int err = CL_SUCCESS;

	if (b->with_il) {
		p->program = b->with_il(dev->context, source->data,
					source->size, &err);
	} else {
		/* The source as it is: a `#line` directive in front would
		 * name the caller's file in PoCL's log, but NVIDIA's
		 * compiler ignores it and would count it as line 1. */
		const char *text = source->data;
		p->program = clCreateProgramWithSource(dev->context, 1, &text,
						       &source->size, &err);
	}
	if (!p->program)
		return ocl_fail(host, err, "%s %s: clCreateProgramWith%s",
				b->format, b->head.name,
				b->with_il ? "IL" : "Source");
	status = build(dev, p->program, b->format, b->head.name,
		       b->head.options);
	if (status != WAFER_OK) {
		clReleaseProgram(p->program);
		p->program = NULL;
		return status;
	}
	if (clGetProgramInfo(p->program, CL_PROGRAM_BINARY_SIZES, sizeof size,
			     &size, NULL) != CL_SUCCESS ||
	    size == 0 || !(binary = malloc(size)))
		return WAFER_OK;
	if (clGetProgramInfo(p->program, CL_PROGRAM_BINARIES, sizeof binary,
			     &binary, NULL) != CL_SUCCESS) {
		free(binary);
		return WAFER_OK;
	}
	*out_binary = binary;
	*out_size = size;
	return WAFER_OK;
}

wafer_status ocl_program_load(void *device,
			      const struct wafer_program_source *source,
			      const char *options, void **out_program)
{
	struct ocl_device *dev = device;
	const struct wafer_host_services *host = ocl_host(dev);
	const struct ocl_device_entry *e = dev->entry;
	const char *name = program_name(source);
	const char *format = source->format == WAFER_PROGRAM_SPIRV ? "spirv"
								    : "opencl-c";
	clCreateProgramWithILKHR_fn with_il = NULL;
	struct ocl_program *p;
	char target[OCL_TEXT_MAX + 32];
	wafer_status status;

	*out_program = NULL;
	if (source->format != WAFER_PROGRAM_OPENCL_C &&
	    (source->format != WAFER_PROGRAM_SPIRV || !takes_spirv(dev) ||
	     !(with_il = create_with_il(dev)))) {
		host->set_error(OCL_NAME ": %s: format %d is not one %s takes",
				name, (int)source->format, e->name);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	if (source->size == 0) {
		host->set_error(OCL_NAME ": %s %s is empty", format, name);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	/* Everything the binary depends on. */
	const struct wafer_cache_part key[] = {
		wafer_plugin_cache_text(CACHE_LAYOUT),
		wafer_plugin_cache_text(PACKAGE_VERSION),
		wafer_plugin_cache_text(format),
		wafer_plugin_cache_text(e->platform_name),
		wafer_plugin_cache_text(e->platform_version),
		wafer_plugin_cache_text(e->name),
		wafer_plugin_cache_text(e->vendor),
		wafer_plugin_cache_text(e->device_version),
		wafer_plugin_cache_text(e->driver_version),
		wafer_plugin_cache_text(options ? options : ""),
		wafer_plugin_cache_text(name),
		wafer_plugin_cache_part(source->data, source->size),
	};

	p = program_new(host, OCL_NAME, sizeof *p, source);
	if (!p)
		return WAFER_ERROR_OUT_OF_MEMORY;
	snprintf(target, sizeof target, "%s on %s", format, e->name);
	struct build_ctx b = {
		{host, dev, p, source, options, p->head.name, target},
		format,
		with_il,
	};
	status = program_cached_build(&b.head, key, sizeof key / sizeof key[0],
				      load_binary, compile);
	return program_loaded(&p->head, status, host, OCL_NAME, MAX_BINDINGS,
			      out_program);
}

/*===----------------------------------------------------------------------===
 * Kernels
 *===----------------------------------------------------------------------===*/

/* Undoes make_kernel (wafer_plugin_program_kernels_release's destroy). */
static void destroy_kernel(void *kernel)
{
	struct ocl_program_kernel *k = kernel;

	clReleaseKernel(k->kernel);
	pthread_mutex_destroy(&k->lock);
}

/* The cl_kernel of |kernel|'s name (wafer_plugin_program_kernel_get's
 * make). */
static wafer_status make_kernel(void *ctx, void *kernel)
{
	const struct ocl_program *p = ctx;
	struct ocl_program_kernel *k = kernel;
	const struct wafer_host_services *host = p->head.kernels.table.host;
	const char *name = k->head.name;
	cl_uint args = 0;
	cl_int err;

	k->kernel = clCreateKernel(p->program, name, &err);
	if (!k->kernel && err == CL_INVALID_KERNEL_NAME) {
		char names[512] = "";
		size_t got = 0;
		/* "a;b" as OpenCL gives it; cut to what fits. */
		if (clGetProgramInfo(p->program, CL_PROGRAM_KERNEL_NAMES,
				     sizeof names - 1, names, &got) != CL_SUCCESS &&
		    (got == 0 || got >= sizeof names ||
		     clGetProgramInfo(p->program, CL_PROGRAM_KERNEL_NAMES, got,
				      names, NULL) != CL_SUCCESS))
			names[0] = 0;
		for (char *c = names; *c; c++)
			if (*c == ';')
				*c = ',';
		host->set_error(OCL_NAME ": no kernel '%s' in program %s (it "
				"has: %s)",
				name, p->head.name, names[0] ? names : "none");
		return WAFER_ERROR_NOT_FOUND;
	}
	if (!k->kernel)
		return ocl_fail(host, err, "clCreateKernel(%s, %s)",
				p->head.name, name);
	pthread_mutex_init(&k->lock, NULL);
	if (clGetKernelInfo(k->kernel, CL_KERNEL_NUM_ARGS, sizeof args, &args,
			    NULL) == CL_SUCCESS &&
	    program_kernel_args_check(&p->head.kernels, &k->head, args) !=
		    WAFER_OK) {
		destroy_kernel(k);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	return WAFER_OK;
}

wafer_status ocl_program_kernel(void *device, void *program,
				const char *name, uint32_t binding_count,
				size_t params_size,
				const struct wafer_kernel **out_kernel)
{
	struct ocl_program *p = program;

	(void)device;
	return program_kernels_get(&p->head.kernels, name, binding_count,
				   params_size,
				   sizeof(struct ocl_program_kernel),
				   make_kernel, p, out_kernel);
}

void ocl_program_release(void *device, void *program)
{
	struct ocl_program *p = program;

	(void)device;
	program_kernels_release(&p->head.kernels, destroy_kernel);
	clReleaseProgram(p->program);
	free(p);
}

/*===----------------------------------------------------------------------===
 * Launch
 *===----------------------------------------------------------------------===*/

/* Sets the arguments of |k| and enqueues it; |k->lock| held. */
static wafer_status set_and_enqueue(struct ocl_queue *q,
				    const struct ocl_program_kernel *k,
				    const cl_mem *mem,
				    const struct wafer_launch *launch,
				    cl_uint dims, const size_t *global,
				    const size_t *local)
{
	const struct wafer_host_services *host = ocl_host(q->device);
	uint32_t n = k->head.entry.binding_count;
	cl_event event, *ev = ocl_queue_timing(q) ? &event : NULL;
	cl_kernel kernel = k->kernel;
	cl_program program;
	wafer_status status = WAFER_OK;
	cl_int err = CL_SUCCESS;
	cl_uint i;

	/* A command recorded into a command buffer may read its kernel's
	 * arguments when it runs rather than when it was recorded (PoCL's
	 * do): a launch of the kernel with other arguments, recorded into
	 * another graph, would change this one. So a recorded launch sets
	 * them on a kernel object of its own, which the command buffer
	 * keeps. */
	if (q->recording) {
		err = clGetKernelInfo(k->kernel, CL_KERNEL_PROGRAM,
				      sizeof program, &program, NULL);
		if (err == CL_SUCCESS)
			kernel = clCreateKernel(program, k->head.name, &err);
		if (err != CL_SUCCESS)
			return ocl_fail(host, err, "launch %s (recorded): "
					"clCreateKernel", k->head.name);
	}
	for (i = 0; i < n && err == CL_SUCCESS; i++)
		err = clSetKernelArg(kernel, i, sizeof(cl_mem), &mem[i]);
	if (err == CL_SUCCESS && k->head.entry.params_size)
		err = clSetKernelArg(kernel, i++, k->head.entry.params_size,
				     launch->params);
	if (err != CL_SUCCESS) {
		status = ocl_fail(host, err,
				  "launch %s: clSetKernelArg(%u, %zu bytes)",
				  k->head.name, i - 1,
				  i - 1 < n ? sizeof(cl_mem)
					    : k->head.entry.params_size);
		goto out;
	}
	err = ocl_enqueue_ndrange(q, kernel, dims, global, local, ev);
	if (err != CL_SUCCESS) {
		status = ocl_fail(host, err,
				  "launch %s: clEnqueueNDRangeKernel(global "
				  "%zu x %zu x %zu)",
				  k->head.name, global[0],
				  dims > 1 ? global[1] : 1,
				  dims > 2 ? global[2] : 1);
		goto out;
	}
	if (ev) {
		ocl_queue_timed(q, event);
		clReleaseEvent(event);
	}
out:
	if (kernel != k->kernel)
		clReleaseKernel(kernel);
	return status;
}

wafer_status ocl_program_launch(struct ocl_queue *q,
				const struct wafer_launch *launch)
{
	struct ocl_device *dev = q->device;
	const struct wafer_host_services *host = ocl_host(dev);
	struct ocl_program_kernel *k = (struct ocl_program_kernel *)
					    launch->kernel->impl;
	uint32_t n = k->head.entry.binding_count;
	cl_mem mem[MAX_BINDINGS], sub[MAX_BINDINGS];
	size_t global[3], local[3];
	int has_local = launch->local[0] || launch->local[1] ||
			launch->local[2];
	cl_uint dims = 1;
	wafer_status status;
	cl_int err;

	status = WAFER_PLUGIN_DEBUG_CHECK_LAUNCH(host, OCL_NAME, launch,
						 dev->alignment);
	if (status != WAFER_OK)
		return status;
	for (int d = 0; d < 3; d++) {
		uint64_t g = launch->global[d] ? launch->global[d] : 1;
		local[d] = launch->local[d] ? launch->local[d] : 1;
		/* NDRange: whole work-groups when a size is given. */
		if (has_local)
			g = (g + local[d] - 1) / local[d] * local[d];
		if (g > SIZE_MAX) {
			host->set_error(OCL_NAME ": launch %s: global[%d] of "
					"%" PRIu64 " items",
					k->head.name, d, g);
			return WAFER_ERROR_INVALID_ARGUMENT;
		}
		global[d] = (size_t)g;
		if (global[d] > 1 || local[d] > 1)
			dims = (cl_uint)d + 1;
	}

	/* The binding's first byte: the buffer, or a sub-buffer of it. The
	 * enqueued command keeps the sub-buffers it uses; ours go at once. */
	memset(sub, 0, sizeof sub);
	for (uint32_t i = 0; i < n; i++) {
		const struct wafer_binding *b =
			wafer_plugin_array_at(launch->bindings, i);
		cl_buffer_region region = {b->offset, b->size};

		mem[i] = ocl_resource_mem(b->resource);
		if (b->offset == 0)
			continue;
		sub[i] = clCreateSubBuffer(mem[i], CL_MEM_READ_WRITE,
					   CL_BUFFER_CREATE_TYPE_REGION,
					   &region, &err);
		if (!sub[i]) {
			status = ocl_fail(host, err,
					  "launch %s: binding %" PRIu32
					  ": clCreateSubBuffer(offset %zu, "
					  "%zu bytes)",
					  k->head.name, i, b->offset,
					  b->size);
			goto out;
		}
		mem[i] = sub[i];
	}
	pthread_mutex_lock(&k->lock);
	status = set_and_enqueue(q, k, mem, launch, dims, global,
				 has_local ? local : NULL);
	pthread_mutex_unlock(&k->lock);
out:
	for (uint32_t i = 0; i < n; i++)
		if (sub[i])
			clReleaseMemObject(sub[i]);
	return status;
}
