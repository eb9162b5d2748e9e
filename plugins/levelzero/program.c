/* wafer — SPDX-License-Identifier: MIT
 *
 * program.c: programs, the caller's own kernels (wafer-program(7)), on the
 * Level Zero plugin — the program entries of wafer_server_ops and the
 * launch of a program's kernel.
 *
 * The format is SPIR-V: zeModuleCreate(ZE_MODULE_FORMAT_IL_SPIRV) with the
 * caller's options as build flags. A module that does not build is
 * WAFER_ERROR_BUILD with the driver's whole build log. The driver's native
 * binary of a built module (zeModuleGetNativeBinary) goes to the host's
 * binary cache, keyed by the SPIR-V, the options, the device and the
 * driver, so a second process creates the module from it
 * (ZE_MODULE_FORMAT_NATIVE) and compiles nothing; a native binary the
 * driver no longer takes is compiled again from the SPIR-V.
 *
 * Kernels are looked up in zeModuleGetKernelNames before zeKernelCreate,
 * so an unknown name is WAFER_ERROR_NOT_FOUND listing the names there
 * are. A launch follows the calling convention: one USM pointer per
 * binding (the allocation plus the binding's offset), then the parameter
 * block by value; the group size is the launch's local size, or
 * zeKernelSuggestGroupSize's for the global size when it gives none; the
 * group counts cover the global size rounded up. A kernel's arguments
 * are state of its kernel object until the launch is appended (the
 * command list keeps their values), so launches of one program kernel
 * from several queues take turns setting and appending. */
#include "build-config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/levelzero/lz_plugin.h"
#include "plugins/common/program_load.h"
#include "plugins/common/program_kernels.h"

/* Version of what this file stores in the binary cache. */
#define CACHE_LAYOUT "wafer levelzero program 1"

/* More bindings than the core ever passes. */
#define MAX_BINDINGS 64

struct lz_program_kernel {
	/* First: head.entry.impl points back here. */
	struct wafer_plugin_program_kernel head;
	/* Guards the kernel object's group size and arguments from set to
	 * append. */
	pthread_mutex_t lock;
	ze_kernel_handle_t kernel;
};

struct lz_program {
	/* First: program_new makes it. */
	struct program_head head;
	ze_module_handle_t module;
};

static const wafer_program_format formats[] = {WAFER_PROGRAM_SPIRV};

wafer_status lz_program_formats(void *device,
				const wafer_program_format **out_formats,
				size_t *out_count)
{
	*out_formats = formats;
	*out_count = sizeof formats / sizeof formats[0];
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Building
 *===----------------------------------------------------------------------===*/

char *lz_build_log(ze_module_build_log_handle_t log)
{
	size_t size = 0;
	char *text;

	if (!log || zeModuleBuildLogGetString(log, &size, NULL) !=
			    ZE_RESULT_SUCCESS)
		size = 0;
	text = malloc(size + 1);
	if (!text)
		return NULL;
	if (size && zeModuleBuildLogGetString(log, &size, text) !=
			    ZE_RESULT_SUCCESS)
		size = 0;
	text[size] = '\0';
	return text;
}

/* zeModuleCreate of |size| bytes in |format|; on a build failure the log
 * (malloc'd) in |*out_log| when the loader can return one. */
static ze_result_t create(struct lz_device *dev, ze_module_format_t format,
			  const void *code, size_t size, const char *options,
			  ze_module_handle_t *out, char **out_log)
{
	ze_module_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
		.format = format,
		.inputSize = size,
		.pInputModule = code,
		.pBuildFlags = options ? options : "",
	};
	ze_module_build_log_handle_t log = NULL;
	ze_result_t r;

	*out = NULL;
	if (out_log)
		*out_log = NULL;
	r = zeModuleCreate(dev->context, dev->device, &desc, out,
			   dev->state->loader_intercepts ? NULL : &log);
	if (r != ZE_RESULT_SUCCESS) {
		*out = NULL;
		if (out_log && log)
			*out_log = lz_build_log(log);
	}
	if (log)
		zeModuleBuildLogDestroy(log);
	return r;
}

/* The module from its cached native binary (wafer_plugin_cached_build's
 * load): the driver may no longer take it. */
static wafer_status load_native(void *ctx, const void *binary, size_t size)
{
	const struct program_build *b = ctx;
	struct lz_program *p = b->program;

	return create(b->device, ZE_MODULE_FORMAT_NATIVE, binary, size,
		      b->options, &p->module, NULL) == ZE_RESULT_SUCCESS
		       ? WAFER_OK
		       : WAFER_ERROR_BUILD;
}

/* The module from the SPIR-V, and the driver's native binary of it to
 * store (none when the driver does not give it). */
static wafer_status build(void *ctx, void **out_binary, size_t *out_size)
{
	const struct program_build *b = ctx;
	struct lz_device *dev = b->device;
	const struct wafer_program_source *source = b->source;
	struct lz_program *p = b->program;
	const char *options = b->options;
	size_t size = 0;
	char *log = NULL;
	uint8_t *binary;
	ze_result_t r;

	r = create(dev, ZE_MODULE_FORMAT_IL_SPIRV, source->data, source->size,
		   options, &p->module, &log);
	if (r != ZE_RESULT_SUCCESS) {
		int failed = r == ZE_RESULT_ERROR_MODULE_BUILD_FAILURE ||
			     r == ZE_RESULT_ERROR_INVALID_NATIVE_BINARY ||
			     r == ZE_RESULT_ERROR_INVALID_ARGUMENT;
		lz_host(dev)->set_error(
			"levelzero: spirv %s (%zu bytes) does not build on "
			"'%s' with flags '%s': %s%s%s",
			p->head.name, source->size, dev->slot->name,
			options ? options : "", lz_result_name(r),
			log && log[0] ? ":\n" : "", log ? log : "");
		free(log);
		return failed ? WAFER_ERROR_BUILD : lz_status(r);
	}
	if (zeModuleGetNativeBinary(p->module, &size, NULL) !=
		    ZE_RESULT_SUCCESS ||
	    size == 0 || !(binary = malloc(size)))
		return WAFER_OK;
	if (zeModuleGetNativeBinary(p->module, &size, binary) !=
	    ZE_RESULT_SUCCESS) {
		free(binary);
		return WAFER_OK;
	}
	*out_binary = binary;
	*out_size = size;
	return WAFER_OK;
}

/* What the native code depends on besides the SPIR-V and the options:
 * the device, and the driver's version where the driver says it. */
static void driver_text(struct lz_device *dev, char *buf, size_t size)
{
	ze_driver_properties_t props = {
		.stype = ZE_STRUCTURE_TYPE_DRIVER_PROPERTIES,
	};
	ze_api_version_t api = 0;

	if (zeDriverGetProperties(dev->slot->driver, &props) !=
	    ZE_RESULT_SUCCESS)
		props.driverVersion = 0;
	if (zeDriverGetApiVersion(dev->slot->driver, &api) != ZE_RESULT_SUCCESS)
		api = 0;
	snprintf(buf, size, "driver %" PRIu32 ", API %#x", props.driverVersion,
		 (unsigned)api);
}

wafer_status lz_program_load(void *device,
			     const struct wafer_program_source *source,
			     const char *options, void **out_program)
{
	struct lz_device *dev = device;
	const struct wafer_host_services *host = lz_host(dev);
	const char *name = program_name(source);
	struct lz_program *p;
	char driver[96], target[256];
	wafer_status status;

	*out_program = NULL;
	if (source->format != WAFER_PROGRAM_SPIRV) {
		host->set_error("levelzero: %s: format %d is not one '%s' "
				"takes (spirv)",
				name, (int)source->format, dev->slot->name);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	if (source->size == 0) {
		host->set_error("levelzero: spirv %s is empty", name);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	driver_text(dev, driver, sizeof driver);
	/* Everything the native binary depends on. */
	const struct wafer_cache_part key[] = {
		wafer_plugin_cache_text(CACHE_LAYOUT),
		wafer_plugin_cache_text(PACKAGE_VERSION),
		wafer_plugin_cache_text("spirv"),
		wafer_plugin_cache_text(dev->slot->name),
		wafer_plugin_cache_text(driver),
		wafer_plugin_cache_text(options ? options : ""),
		wafer_plugin_cache_text(name),
		wafer_plugin_cache_part(source->data, source->size),
	};

	p = program_new(host, "levelzero", sizeof *p, source);
	if (!p)
		return WAFER_ERROR_OUT_OF_MEMORY;
	snprintf(target, sizeof target, "spirv on '%s'", dev->slot->name);
	struct program_build b = {
		host, dev, p, source, options, p->head.name, target,
	};
	status = program_cached_build(&b, key, sizeof key / sizeof key[0],
				      load_native, build);
	return program_loaded(&p->head, status, host, "levelzero",
			      MAX_BINDINGS, out_program);
}

/*===----------------------------------------------------------------------===
 * Kernels
 *===----------------------------------------------------------------------===*/

/* Whether |module| has a kernel |name|; the names it has go to |list|
 * (for the error), comma-separated. */
static int module_has(ze_module_handle_t module, const char *name, char *list,
		      size_t size)
{
	uint32_t count = 0;
	const char **names;
	int found = 0;

	list[0] = '\0';
	if (zeModuleGetKernelNames(module, &count, NULL) != ZE_RESULT_SUCCESS)
		return -1; /* cannot tell: let zeKernelCreate say */
	names = calloc(count ? count : 1, sizeof *names);
	if (!names ||
	    zeModuleGetKernelNames(module, &count, names) != ZE_RESULT_SUCCESS) {
		free(names);
		return -1;
	}
	for (uint32_t i = 0; i < count; i++) {
		size_t used = strlen(list);
		found |= strcmp(names[i], name) == 0;
		snprintf(list + used, size - used, "%s%s", i ? ", " : "",
			 names[i]);
	}
	free(names);
	return found;
}

/* Undoes make_kernel (wafer_plugin_program_kernels_release's destroy). */
static void destroy_kernel(void *kernel)
{
	struct lz_program_kernel *k = kernel;

	zeKernelDestroy(k->kernel);
	pthread_mutex_destroy(&k->lock);
}

/* What make_kernel needs besides the kernel. */
struct make {
	struct lz_device *dev;
	struct lz_program *p;
};

/* The kernel object of |kernel|'s name (wafer_plugin_program_kernel_get's
 * make), found in the module's kernel names first. */
static wafer_status make_kernel(void *ctx, void *kernel)
{
	const struct make *m = ctx;
	const struct wafer_host_services *host = lz_host(m->dev);
	struct lz_program *p = m->p;
	struct lz_program_kernel *k = kernel;
	const char *name = k->head.name;
	ze_kernel_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_KERNEL_DESC,
		.pKernelName = name,
	};
	ze_kernel_properties_t props = {
		.stype = ZE_STRUCTURE_TYPE_KERNEL_PROPERTIES,
	};
	char names[512];
	ze_result_t r;

	if (module_has(p->module, name, names, sizeof names) == 0) {
		host->set_error("levelzero: no kernel '%s' in program %s (it "
				"has: %s)",
				name, p->head.name, names[0] ? names : "none");
		return WAFER_ERROR_NOT_FOUND;
	}
	r = zeKernelCreate(p->module, &desc, &k->kernel);
	if (r == ZE_RESULT_ERROR_INVALID_KERNEL_NAME) {
		host->set_error("levelzero: no kernel '%s' in program %s", name,
				p->head.name);
		return WAFER_ERROR_NOT_FOUND;
	}
	if (r != ZE_RESULT_SUCCESS) {
		host->set_error("levelzero: zeKernelCreate(%s of %s): %s", name,
				p->head.name, lz_result_name(r));
		return lz_status(r);
	}
	pthread_mutex_init(&k->lock, NULL);
	if (zeKernelGetProperties(k->kernel, &props) == ZE_RESULT_SUCCESS &&
	    program_kernel_args_check(&p->head.kernels, &k->head,
				      props.numKernelArgs) != WAFER_OK) {
		destroy_kernel(k);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	return WAFER_OK;
}

wafer_status lz_program_kernel(void *device, void *program, const char *name,
			       uint32_t binding_count, size_t params_size,
			       const struct wafer_kernel **out_kernel)
{
	struct lz_program *p = program;
	struct make m = {device, p};

	return program_kernels_get(&p->head.kernels, name, binding_count,
				   params_size, sizeof(struct lz_program_kernel),
				   make_kernel, &m, out_kernel);
}

void lz_program_release(void *device, void *program)
{
	struct lz_program *p = program;

	program_kernels_release(&p->head.kernels, destroy_kernel);
	zeModuleDestroy(p->module);
	free(p);
}

/*===----------------------------------------------------------------------===
 * Launch
 *===----------------------------------------------------------------------===*/

/* Group size and counts for |launch| on |k| (its lock held: the
 * suggestion is the kernel object's). */
static wafer_status shape(struct lz_device *dev,
			  const struct lz_program_kernel *k,
			  const struct wafer_launch *launch, uint32_t size[3],
			  uint32_t count[3])
{
	const struct wafer_host_services *host = lz_host(dev);
	const struct lz_limits *lim = &dev->slot->limits;
	uint64_t global[3];
	ze_result_t r;

	for (int d = 0; d < 3; d++) {
		global[d] = launch->global[d] ? launch->global[d] : 1;
		size[d] = launch->local[d] ? launch->local[d] : 1;
	}
	if (!launch->local[0] && !launch->local[1] && !launch->local[2]) {
		r = zeKernelSuggestGroupSize(
			k->kernel,
			global[0] > UINT32_MAX ? UINT32_MAX : (uint32_t)global[0],
			global[1] > UINT32_MAX ? UINT32_MAX : (uint32_t)global[1],
			global[2] > UINT32_MAX ? UINT32_MAX : (uint32_t)global[2],
			&size[0], &size[1], &size[2]);
		if (r != ZE_RESULT_SUCCESS) {
			host->set_error("levelzero: launch %s: "
					"zeKernelSuggestGroupSize: %s",
					k->head.name, lz_result_name(r));
			return lz_status(r);
		}
	}
	for (int d = 0; d < 3; d++) {
		uint64_t groups;

		if (size[d] == 0 || size[d] > lim->max_group_size[d]) {
			host->set_error("levelzero: launch %s: a group of %" PRIu32
					" in dimension %d; the device takes "
					"1 to %" PRIu32,
					k->head.name, size[d], d,
					lim->max_group_size[d]);
			return WAFER_ERROR_INVALID_ARGUMENT;
		}
		groups = (global[d] + size[d] - 1) / size[d];
		if (groups > lim->max_group_count[d]) {
			host->set_error("levelzero: launch %s: %" PRIu64
					" groups of %" PRIu32 " in dimension "
					"%d, more than the device's %" PRIu32,
					k->head.name, groups, size[d], d,
					lim->max_group_count[d]);
			return WAFER_ERROR_NOT_SUPPORTED;
		}
		count[d] = (uint32_t)groups;
	}
	if ((uint64_t)size[0] * size[1] * size[2] > lim->max_total_group_size) {
		host->set_error("levelzero: launch %s: a group of %" PRIu32
				" x %" PRIu32 " x %" PRIu32 " items, more than "
				"the device's %" PRIu32,
				k->head.name, size[0], size[1], size[2],
				lim->max_total_group_size);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	return WAFER_OK;
}

wafer_status lz_program_launch(struct lz_device *dev, struct lz_queue *q,
			       const struct wafer_launch *launch)
{
	const struct wafer_host_services *host = lz_host(dev);
	struct lz_program_kernel *k =
		(struct lz_program_kernel *)launch->kernel->impl;
	uint32_t n = k->head.entry.binding_count, size[3], count[3];
	void *ptr[MAX_BINDINGS];
	const char *what = "zeKernelSetGroupSize";
	wafer_status status;
	ze_result_t r;

	status = WAFER_PLUGIN_DEBUG_CHECK_LAUNCH(host, "levelzero", launch,
						 LZ_ALIGNMENT);
	if (status != WAFER_OK)
		return status;
	for (uint32_t i = 0; i < n; i++) {
		const struct wafer_binding *b =
			wafer_plugin_array_at(launch->bindings, i);
		ptr[i] = (char *)lz_resource_ptr(b->resource) + b->offset;
	}
	pthread_mutex_lock(&k->lock);
	status = shape(dev, k, launch, size, count);
	if (status != WAFER_OK)
		goto out;
	r = zeKernelSetGroupSize(k->kernel, size[0], size[1], size[2]);
	for (uint32_t i = 0; r == ZE_RESULT_SUCCESS && i < n; i++) {
		what = "zeKernelSetArgumentValue";
		r = zeKernelSetArgumentValue(k->kernel, i, sizeof ptr[i],
					     &ptr[i]);
	}
	if (r == ZE_RESULT_SUCCESS && k->head.entry.params_size)
		r = zeKernelSetArgumentValue(k->kernel, n,
					     k->head.entry.params_size,
					     launch->params);
	if (r != ZE_RESULT_SUCCESS) {
		host->set_error("levelzero: launch %s: %s: %s", k->head.name,
				what, lz_result_name(r));
		status = lz_status(r);
		goto out;
	}
	status = lz_queue_launch(dev, q, k->kernel, count, k->head.name);
out:
	pthread_mutex_unlock(&k->lock);
	return status;
}
