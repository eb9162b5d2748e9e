/* wafer — SPDX-License-Identifier: MIT
 *
 * program_load.h: what program_load shares in the plugins of this tree:
 * the build through the host's binary cache (cpu, cuda, opencl,
 * levelzero), and a program's head, its name and its kernels, made
 * before the build and finished after it (all but cpu, whose name has
 * no limit). Header-only and not installed, as program_kernels.h. */
#ifndef WAFER_PLUGINS_COMMON_PROGRAM_LOAD_H
#define WAFER_PLUGINS_COMMON_PROGRAM_LOAD_H

#include <stdio.h>
#include <stdlib.h>

#include <wafer/plugin_util.h>

#include "plugins/common/program_kernels.h"

/* What a program of cuda, opencl and levelzero begins with. */
struct program_head {
	/* The caller's name, cut to fit, or "(unnamed)". */
	char name[128];
	struct program_kernels kernels;
};

/* The name of |source| in messages: the caller's, or "(unnamed)". */
static inline const char *
program_name(const struct wafer_program_source *source)
{
	return source->name ? source->name : "(unnamed)";
}

/* program_load's program: |size| zeroed bytes, a struct that begins with
 * a program_head, named after |source|. NULL when out of host memory,
 * with the error "<plugin>: out of host memory". */
static inline void *program_new(const struct wafer_host_services *host,
				const char *plugin, size_t size,
				const struct wafer_program_source *source)
{
	struct program_head *p = calloc(1, size);

	if (!p) {
		host->set_error("%s: out of host memory", plugin);
		return NULL;
	}
	snprintf(p->name, sizeof p->name, "%s", program_name(source));
	return p;
}

/* program_load's end, given the build's |status|: on WAFER_OK, |p|'s
 * kernels (program_kernels_init: |plugin|, |max_bindings|) and
 * *|out_program|; else |p| is freed. Returns |status|. */
static inline wafer_status program_loaded(struct program_head *p,
					  wafer_status status,
					  const struct wafer_host_services *host,
					  const char *plugin,
					  uint32_t max_bindings,
					  void **out_program)
{
	if (status != WAFER_OK) {
		free(p);
		return status;
	}
	program_kernels_init(&p->kernels, host, plugin, p->name,
			     max_bindings);
	*out_program = p;
	return WAFER_OK;
}

/* A program being built: what program_cached_build and the plugin's
 * load and compile read (a plugin that needs more begins a struct of its
 * own with it). */
struct program_build {
	const struct wafer_host_services *host;
	/* The device it is built for, and the program being made (the
	 * plugin's; NULL where its own context holds what is made). */
	void *device;
	void *program;
	const struct wafer_program_source *source;
	const char *options;
	/* The program's name, and what it is built for ("spirv on 'GPU
	 * 0'"), for the log lines. */
	const char *name;
	const char *target;
};

/* wafer_plugin_cached_build of |b|, keyed by the array |key| of
 * |key_parts| (everything the binary depends on): |load| makes the
 * program from a cached binary, |compile| from the caller's bytes, both
 * given |b|. Returns WAFER_OK or compile's failure. */
static inline wafer_status
program_cached_build(struct program_build *b,
		     const struct wafer_cache_part *key, size_t key_parts,
		     wafer_status (*load)(void *b, const void *binary,
					  size_t size),
		     wafer_status (*compile)(void *b, void **out_binary,
					     size_t *out_size))
{
	const struct wafer_plugin_cached_build cached = {
		.host = b->host,
		.name = b->name,
		.target = b->target,
		.key = key,
		.key_parts = key_parts,
		.load = load,
		.compile = compile,
		.ctx = b,
	};

	return wafer_plugin_cached_build(&cached);
}

/* The end of a compile that loads what it compiled: |status| is the
 * load's. On WAFER_OK |image| (|size| bytes, malloc'd) is handed on to be
 * stored, so only what the driver took is; else it is freed. Returns
 * |status|. */
static inline wafer_status program_compiled(wafer_status status, void *image,
					    size_t size, void **out_image,
					    size_t *out_size)
{
	if (status != WAFER_OK) {
		free(image);
		return status;
	}
	*out_image = image;
	*out_size = size;
	return WAFER_OK;
}

#endif
