/* wafer — SPDX-License-Identifier: MIT
 *
 * program.c: programs, the caller's own kernels (wafer-program(7)), on the
 * cuda plugin: the program entries of wafer_server_ops and the launch of
 * a program's kernel.
 *
 * Formats, as program_formats lists them:
 *   cuda-c  CUDA C++ source, compiled by NVRTC (nvrtc.c) for the GPU's
 *           architecture; offered only when NVRTC loads. The CUBIN (or PTX,
 *           for a GPU newer than NVRTC) goes to the host's binary cache,
 *           keyed by everything it depends on, so a second process loads
 *           it and compiles nothing.
 *   ptx     PTX text, which the driver compiles at load (and caches
 *           itself, in ~/.nv/ComputeCache).
 *   cubin   a CUBIN (ELF) or fatbin image, loaded as it is.
 * Everything ends in cuModuleLoadDataEx with the driver's error log: a PTX
 * the driver's compiler refuses, or an image without code for this GPU,
 * is WAFER_ERROR_BUILD with that log.
 *
 * Kernels are looked up by name with cuModuleGetFunction: the names of
 * extern "C" kernels (a C++ kernel's name is mangled). A launch passes, as
 * every format's calling convention says, one device pointer per binding
 * (the resource's base plus the binding's offset) and then the parameter
 * block by value; block = the launch's local size (256 x 1 x 1, or fewer
 * items when the global size is smaller, when it gives none), grid =
 * global / block rounded up. Kernels check their own bounds. */
#include "build-config.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/cuda/cuda_plugin.h"
#include "plugins/cuda/nvrtc.h"
#include "plugins/common/program_load.h"
#include "plugins/common/program_kernels.h"

/* Binding limit of a program kernel: more than the core ever passes. */
#define PROGRAM_MAX_BINDINGS 64

/* Bytes of the driver's error log we ask for. */
#define JIT_LOG_SIZE (64u << 10)

/* Version of what this file stores in the binary cache: change it when
 * the stored bytes change meaning. */
#define CACHE_LAYOUT "wafer cuda program 1"

/* The default block: 256 threads in x. */
#define DEFAULT_BLOCK 256u

struct cuda_program_kernel {
	/* First: head.entry.impl points back here. */
	struct wafer_plugin_program_kernel head;
	CUfunction function;
};

struct cuda_program {
	/* First: program_new makes it. */
	struct program_head head;
	CUmodule module;
};

static const wafer_program_format formats_nvrtc[] = {
	WAFER_PROGRAM_CUDA_C,
	WAFER_PROGRAM_PTX,
	WAFER_PROGRAM_CUBIN,
};

static const wafer_program_format formats_plain[] = {
	WAFER_PROGRAM_PTX,
	WAFER_PROGRAM_CUBIN,
};

wafer_status cuda_program_formats(void *device,
					 const wafer_program_format **out,
					 size_t *out_count)
{
	struct cuda_device *dev = device;

	if (cuda_nvrtc_get(dev->state)) {
		*out = formats_nvrtc;
		*out_count = sizeof formats_nvrtc / sizeof formats_nvrtc[0];
	} else {
		*out = formats_plain;
		*out_count = sizeof formats_plain / sizeof formats_plain[0];
	}
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Images
 *===----------------------------------------------------------------------===*/

static uint64_t read_le(const unsigned char *p, int bytes)
{
	uint64_t v = 0;

	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Whether [offset, offset + length) lies in |size| bytes. */
static int inside(uint64_t offset, uint64_t length, size_t size)
{
	return offset <= size && length <= size - offset;
}

/* Checks that |image| is a whole 64-bit ELF (a CUBIN) or fatbin of |size|
 * bytes, so the driver, which is given no size, reads nothing past it.
 * Returns NULL or what is wrong. */
static const char *image_problem(const unsigned char *p, size_t size)
{
	if (size >= 16 && read_le(p, 4) == 0xba55ed50u) {
		uint64_t header = read_le(p + 6, 2), body = read_le(p + 8, 8);
		return inside(header, body, size) ? NULL
						  : "a fatbin longer than its bytes";
	}
	if (size < 64 || memcmp(p, "\177ELF", 4) != 0)
		return "neither an ELF (CUBIN) nor a fatbin image";
	if (p[4] != 2 || p[5] != 1)
		return "not a 64-bit little-endian ELF";
	uint64_t phoff = read_le(p + 0x20, 8), shoff = read_le(p + 0x28, 8);
	uint64_t phsize = read_le(p + 0x36, 2), phnum = read_le(p + 0x38, 2);
	uint64_t shsize = read_le(p + 0x3a, 2), shnum = read_le(p + 0x3c, 2);
	if ((phnum && (phsize < 56 || !inside(phoff, phsize * phnum, size))) ||
	    (shnum && (shsize < 64 || !inside(shoff, shsize * shnum, size))))
		return "an ELF whose headers lie past its bytes";
	for (uint64_t i = 0; i < shnum; i++) {
		const unsigned char *sh = p + shoff + i * shsize;
		/* SHT_NOBITS occupies no bytes of the file. */
		if (read_le(sh + 4, 4) != 8 &&
		    !inside(read_le(sh + 0x18, 8), read_le(sh + 0x20, 8), size))
			return "an ELF whose sections lie past its bytes";
	}
	return NULL;
}

/* The driver refused the code itself (rather than failing to run). */
static int is_build_failure(CUresult r)
{
	switch (r) {
	case CUDA_ERROR_INVALID_PTX:
	case CUDA_ERROR_INVALID_IMAGE:
	case CUDA_ERROR_INVALID_SOURCE:
	case CUDA_ERROR_NO_BINARY_FOR_GPU:
	case CUDA_ERROR_UNSUPPORTED_PTX_VERSION:
	case CUDA_ERROR_JIT_COMPILER_NOT_FOUND:
	case CUDA_ERROR_JIT_COMPILATION_DISABLED:
	case CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND:
	case CUDA_ERROR_SHARED_OBJECT_INIT_FAILED:
		return 1;
	default:
		return 0;
	}
}

/* cuModuleLoadDataEx of |image| (a NUL-terminated PTX or a checked
 * binary), with the driver's error log in the error when it refuses. */
static wafer_status load_module(struct cuda_device *dev, const void *image,
				const char *format, const char *name,
				CUmodule *out)
{
	char *log = malloc(JIT_LOG_SIZE), text[256];
	CUjit_option keys[2] = {CU_JIT_ERROR_LOG_BUFFER,
				CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
	void *values[2] = {log, (void *)(uintptr_t)JIT_LOG_SIZE};
	CUresult r;

	*out = NULL;
	if (log)
		log[0] = '\0';
	r = dev->drv->cuModuleLoadDataEx(out, image, log ? 2 : 0, keys,
					 values);
	if (r == CUDA_SUCCESS) {
		free(log);
		return WAFER_OK;
	}
	*out = NULL;
	if (!is_build_failure(r)) {
		free(log);
		return cuda_fail(dev->state, r, "cuModuleLoadDataEx(%s %s) on "
				 "GPU %d", format, name, dev->ordinal);
	}
	dev->host->set_error("cuda: the driver (API %d) cannot load %s %s for "
			     "GPU %d (compute %d.%d): %s%s%s",
			     dev->drv->version, format, name, dev->ordinal,
			     dev->arch / 10, dev->arch % 10,
			     cuda_result_text(dev->drv, r, text, sizeof text),
			     log && log[0] ? ":\n" : "", log ? log : "");
	free(log);
	return WAFER_ERROR_BUILD;
}

/*===----------------------------------------------------------------------===
 * CUDA C
 *===----------------------------------------------------------------------===*/

/* What load_cached and compile read: the module being made, and NVRTC. */
struct build_ctx {
	/* First: program_cached_build hands load_cached and compile it. */
	struct program_build head;
	const struct cuda_nvrtc *nv;
	/* NVRTC's target (cuda_nvrtc_target). */
	const char *arch;
	CUmodule *out;
};

/* The module from cached NVRTC output (wafer_plugin_cached_build's load):
 * a stored PTX ends in its NUL; a CUBIN is checked. */
static wafer_status load_cached(void *ctx, const void *image, size_t size)
{
	struct build_ctx *b = ctx;
	const unsigned char *p = image;

	if (size == 0 || (p[size - 1] != '\0' && image_problem(p, size)))
		return WAFER_ERROR_BUILD;
	return load_module(b->head.device, image, "cuda-c", b->head.name,
			   b->out);
}

/* NVRTC's output, loaded; it is stored only when the driver took it. */
static wafer_status compile(void *ctx, void **out_image, size_t *out_size)
{
	struct build_ctx *b = ctx;
	const struct wafer_program_source *source = b->head.source;
	void *image = NULL;
	size_t size = 0;
	wafer_status status;

	status = cuda_nvrtc_compile(b->nv, b->head.host, source->data,
				    source->size, b->head.name, b->head.options,
				    b->arch, &image, &size);
	if (status != WAFER_OK)
		return status;
	status = load_module(b->head.device, image, "cuda-c", b->head.name,
			     b->out);
	return program_compiled(status, image, size, out_image, out_size);
}

/* NVRTC's output for |source|, from the cache or compiled (and then
 * stored); loaded into |*out|. */
static wafer_status load_cuda_c(struct cuda_device *dev,
				const struct wafer_program_source *source,
				const char *options, const char *name,
				CUmodule *out)
{
	const struct wafer_host_services *host = dev->host;
	const struct cuda_nvrtc *nv = cuda_nvrtc_get(dev->state);
	char target[32], driver[32], what[96];
	int cubin;

	if (!nv) {
		host->set_error("cuda: %s: CUDA C needs NVRTC, which is not "
				"loaded (see [cuda] nvrtc)",
				name);
		return WAFER_ERROR_NOT_SUPPORTED;
	}
	cuda_nvrtc_target(nv, dev->arch, target, sizeof target, &cubin);
	snprintf(driver, sizeof driver, "%d", dev->drv->version);
	snprintf(what, sizeof what, "%s %s, NVRTC %s", cubin ? "CUBIN" : "PTX",
		 target, cuda_nvrtc_version(nv));
	/* Everything the compiled code depends on. */
	const struct wafer_cache_part key[] = {
		wafer_plugin_cache_text(CACHE_LAYOUT),
		wafer_plugin_cache_text(PACKAGE_VERSION),
		wafer_plugin_cache_text("cuda-c"),
		wafer_plugin_cache_text(target),
		wafer_plugin_cache_text(driver),
		wafer_plugin_cache_text(cuda_nvrtc_version(nv)),
		wafer_plugin_cache_text(options ? options : ""),
		wafer_plugin_cache_text(name),
		wafer_plugin_cache_part(source->data, source->size),
	};
	struct build_ctx b = {
		{host, dev, NULL, source, options, name, what},
		nv,
		target,
		out,
	};

	return program_cached_build(&b.head, key, sizeof key / sizeof key[0],
				    load_cached, compile);
}

/*===----------------------------------------------------------------------===
 * The program entries
 *===----------------------------------------------------------------------===*/

wafer_status cuda_program_load(void *device,
				      const struct wafer_program_source *source,
				      const char *options, void **out_program)
{
	struct cuda_device *dev = device;
	const struct wafer_host_services *host = dev->host;
	const char *name = program_name(source);
	struct cuda_program *p;
	const char *problem;
	char *text;
	wafer_status status;

	*out_program = NULL;
	status = cuda_enter(dev);
	if (status != WAFER_OK)
		return status;
	p = program_new(host, "cuda", sizeof *p, source);
	if (!p)
		return WAFER_ERROR_OUT_OF_MEMORY;

	switch (source->format) {
	case WAFER_PROGRAM_CUDA_C:
		status = load_cuda_c(dev, source, options, p->head.name,
				     &p->module);
		break;
	case WAFER_PROGRAM_PTX:
		/* The driver reads PTX up to its NUL. */
		text = malloc(source->size + 1);
		if (!text) {
			host->set_error("cuda: %s: out of host memory", name);
			status = WAFER_ERROR_OUT_OF_MEMORY;
			break;
		}
		memcpy(text, source->data, source->size);
		text[source->size] = '\0';
		status = load_module(dev, text, "ptx", p->head.name,
				     &p->module);
		free(text);
		break;
	case WAFER_PROGRAM_CUBIN:
		problem = image_problem(source->data, source->size);
		if (problem) {
			host->set_error("cuda: cubin %s (%zu bytes): %s", name,
					source->size, problem);
			status = WAFER_ERROR_INVALID_ARGUMENT;
			break;
		}
		status = load_module(dev, source->data, "cubin", p->head.name,
				     &p->module);
		break;
	default:
		host->set_error("cuda: %s: format %d is not one cuda:%" PRIu32
				" takes (cuda-c, ptx, cubin)",
				name, (int)source->format, dev->index);
		status = WAFER_ERROR_NOT_SUPPORTED;
		break;
	}
	return program_loaded(&p->head, status, host, "cuda",
			      PROGRAM_MAX_BINDINGS, out_program);
}

/* What make_kernel needs besides the kernel. */
struct make {
	struct cuda_device *dev;
	struct cuda_program *p;
};

/* The CUfunction of |kernel|'s name (wafer_plugin_program_kernel_get's
 * make). */
static wafer_status make_kernel(void *ctx, void *kernel)
{
	const struct make *m = ctx;
	struct cuda_device *dev = m->dev;
	struct cuda_program_kernel *k = kernel;
	const char *name = k->head.name;
	wafer_status status;
	CUresult r;

	status = cuda_enter(dev);
	if (status != WAFER_OK)
		return status;
	r = dev->drv->cuModuleGetFunction(&k->function, m->p->module, name);
	if (r == CUDA_ERROR_NOT_FOUND) {
		dev->host->set_error("cuda: no kernel '%s' in program %s "
				     "(kernels are found by their extern \"C\" "
				     "name)",
				     name, m->p->head.name);
		return WAFER_ERROR_NOT_FOUND;
	}
	if (r != CUDA_SUCCESS)
		return cuda_fail(dev->state, r, "cuModuleGetFunction(%s, %s)",
				 m->p->head.name, name);
	return WAFER_OK;
}

wafer_status cuda_program_kernel(void *device, void *program,
				 const char *name, uint32_t binding_count,
				 size_t params_size,
				 const struct wafer_kernel **out_kernel)
{
	struct cuda_program *p = program;
	struct make m = {device, p};

	return program_kernels_get(&p->head.kernels, name, binding_count,
				   params_size,
				   sizeof(struct cuda_program_kernel),
				   make_kernel, &m, out_kernel);
}

void cuda_program_release(void *device, void *program)
{
	struct cuda_device *dev = device;
	struct cuda_program *p = program;

	/* The core released it after its launches ran; nothing to report
	 * to if unloading fails. */
	if (cuda_enter(dev) == WAFER_OK)
		dev->drv->cuModuleUnload(p->module);
	program_kernels_release(&p->head.kernels, NULL);
	free(p);
}

/*===----------------------------------------------------------------------===
 * Launch
 *===----------------------------------------------------------------------===*/

wafer_status cuda_program_launch(struct cuda_device *dev, struct cuda_queue *q,
				 const struct wafer_launch *launch)
{
	const struct cuda_program_kernel *k = launch->kernel->impl;
	uint32_t n = k->head.entry.binding_count;
	CUdeviceptr ptr[PROGRAM_MAX_BINDINGS];
	void *args[PROGRAM_MAX_BINDINGS + 1];
	_Alignas(16) unsigned char small[1024];
	unsigned char *params = small;
	unsigned block[3], grid[3];
	int defaulted = !launch->local[0] && !launch->local[1] &&
			!launch->local[2];
	wafer_status status;
	CUresult r;

	status = WAFER_PLUGIN_DEBUG_CHECK_LAUNCH(dev->host, "cuda", launch,
						 CUDA_ALIGNMENT);
	if (status != WAFER_OK)
		return status;
	for (int d = 0; d < 3; d++) {
		uint64_t g = launch->global[d] ? launch->global[d] : 1, blocks;

		if (defaulted)
			block[d] = d == 0 ? (g < DEFAULT_BLOCK ? (unsigned)g
							       : DEFAULT_BLOCK)
					  : 1;
		else
			block[d] = launch->local[d] ? launch->local[d] : 1;
		blocks = (g + block[d] - 1) / block[d];
		if (blocks > (d == 0 ? INT_MAX : 65535)) {
			dev->host->set_error(
				"cuda: launch %s: global[%d] = %" PRIu64
				" needs %" PRIu64 " blocks of %u, more than "
				"a grid holds",
				k->head.name, d, g, blocks, block[d]);
			return WAFER_ERROR_INVALID_ARGUMENT;
		}
		grid[d] = (unsigned)blocks;
	}
	for (uint32_t i = 0; i < n; i++) {
		const struct wafer_binding *b =
			wafer_plugin_array_at(launch->bindings, i);
		ptr[i] = cuda_ptr(b->resource) + b->offset;
		args[i] = &ptr[i];
	}
	/* The block by value, from aligned storage: the core's copy may sit
	 * at any address. */
	if (k->head.entry.params_size > sizeof small) {
		params = malloc(k->head.entry.params_size);
		if (!params) {
			dev->host->set_error("cuda: launch %s: out of host "
					     "memory",
					     k->head.name);
			return WAFER_ERROR_OUT_OF_MEMORY;
		}
	}
	if (k->head.entry.params_size) {
		memcpy(params, launch->params, k->head.entry.params_size);
		args[n] = params;
	}
	r = dev->drv->cuLaunchKernel(k->function, grid[0], grid[1], grid[2],
				     block[0], block[1], block[2], 0, q->stream,
				     n || k->head.entry.params_size ? args : NULL,
				     NULL);
	if (params != small)
		free(params);
	if (r != CUDA_SUCCESS)
		return cuda_fail(dev->state, r,
				 "cuLaunchKernel(%s, grid %ux%ux%u, block "
				 "%ux%ux%u)",
				 k->head.name, grid[0], grid[1], grid[2], block[0],
				 block[1], block[2]);
	return WAFER_OK;
}
