/* wafer — SPDX-License-Identifier: MIT
 *
 * opencl_host.h: what the OpenCL plugin tests share — the built
 * opencl.so loaded by hand with a fake host services table that records
 * the plugin's error text and log lines (and counts source builds) and
 * offers the core's own compiled-binary cache (lib/binary_cache.c, in
 * the directory the core would choose for the init options given), and
 * small helpers around init options, buffers and launches. Header-only,
 * like tap.h, so each test stays one file; it links the core's
 * convenience library. */
#ifndef WAFER_T_OPENCL_HOST_H
#define WAFER_T_OPENCL_HOST_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>
#include <wafer/plugin_util.h>

#include "t/tap.h"

#include "t/standins/fake_host.h"

#include "lib/binary_cache.h"
#include "lib/config.h"

/* The cache directory the core would give the plugin for the options of
 * the last init_with (NULL: off). */
static char *cache_dir;

static wafer_status host_cache_load(const struct wafer_host_services *host,
				    const struct wafer_cache_part *parts,
				    size_t part_count, void **out_data,
				    size_t *out_size)
{
	return wafer__binary_cache_load(cache_dir, host, parts, part_count,
					out_data, out_size);
}

static wafer_status host_cache_store(const struct wafer_host_services *host,
				     const struct wafer_cache_part *parts,
				     size_t part_count, const void *data,
				     size_t size)
{
	return wafer__binary_cache_store(cache_dir, host, parts, part_count,
					 data, size);
}

/* fake_host with the cache services (set up by load_plugin). */
static struct wafer_host_services opencl_host;

/* Picks the cache directory from |options| by the core's own rule
 * ([opencl] cache_dir and cache, else the XDG default). */
static void choose_cache_dir(const struct wafer_plugin_option *options,
			     size_t count)
{
	struct wafer__config *config = NULL;

	free(cache_dir);
	cache_dir = NULL;
	if (wafer__config_create(&config) != WAFER_OK) {
		printf("Bail out! wafer__config_create failed\n");
		exit(1);
	}
	for (size_t i = 0; i < count; i++)
		wafer__config_set(config, "opencl", options[i].key,
				  options[i].value, options[i].origin);
	if (wafer__binary_cache_dir(config, "opencl", &cache_dir) != WAFER_OK) {
		printf("Bail out! wafer__binary_cache_dir failed\n");
		exit(1);
	}
	wafer__config_destroy(config);
}

/* "built <unit> for <device> from source" lines: clBuildProgram calls on
 * source (program.c logs each at info level). */
static int source_builds;

static void count_source_builds(const char *line)
{
	if (strstr(line, " from source in "))
		source_builds++;
}

static const struct wafer_plugin *plugin;
static void *plugin_so;

/* dlopens $T_BUILDDIR/../plugins/opencl/.libs/opencl.so and queries it;
 * a plugin that configure built and that does not load is a failure. */
static void load_plugin(void)
{
	const char *builddir = tap_builddir();
	char path[4096];
	void *so;
	wafer_plugin_query_fn query;

	snprintf(path, sizeof path, "%s/../plugins/opencl/.libs/opencl.so",
		 builddir);
	so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!so)
		bail_out("dlopen %s: %s", path, dlerror());
	plugin_so = so;
	query = (wafer_plugin_query_fn)dlsym(so, WAFER_PLUGIN_QUERY_SYMBOL);
	fake_log_hook = count_source_builds;
	opencl_host = fake_host;
	opencl_host.cache_load = host_cache_load;
	opencl_host.cache_free = wafer__binary_cache_free;
	opencl_host.cache_store = host_cache_store;
	plugin = query ? query(WAFER_PLUGIN_ABI_MAJOR, &opencl_host) : NULL;
	if (!plugin) {
		printf("Bail out! %s: no descriptor\n", path);
		exit(1);
	}
}

/* How many OpenCL devices of any type the machine has, asked of the ICD
 * loader the plugin itself links (dlsym on the plugin's handle searches
 * its dependencies), not of the plugin: when the plugin finds none, this
 * says whether there really is none — then a test may skip — or the
 * plugin failed on a machine that has a device, which is a failure.
 * |why| gets what was found, or why nothing was. The OpenCL types are
 * spelled out to keep the tests free of <CL/cl.h>. */
static unsigned opencl_devices_present(char *why, size_t why_size)
{
	typedef int32_t (*get_platforms_fn)(uint32_t, void **, uint32_t *);
	typedef int32_t (*get_devices_fn)(void *, uint64_t, uint32_t,
					  void **, uint32_t *);
	const uint64_t device_type_all = 0xffffffffu; /* CL_DEVICE_TYPE_ALL */
	get_platforms_fn get_platforms;
	get_devices_fn get_devices;
	void *platforms[16];
	uint32_t platform_count = 0;
	unsigned devices = 0;
	int32_t err;

	*(void **)&get_platforms = dlsym(plugin_so, "clGetPlatformIDs");
	*(void **)&get_devices = dlsym(plugin_so, "clGetDeviceIDs");
	if (!get_platforms || !get_devices) {
		snprintf(why, why_size, "the plugin links no clGetPlatformIDs");
		return 0;
	}
	err = get_platforms(16, platforms, &platform_count);
	if (err != 0) {
		snprintf(why, why_size, "clGetPlatformIDs: error %d", err);
		return 0;
	}
	if (platform_count > 16)
		platform_count = 16;
	for (uint32_t i = 0; i < platform_count; i++) {
		uint32_t n = 0;
		if (get_devices(platforms[i], device_type_all, 0, NULL, &n) ==
		    0)
			devices += n;
	}
	snprintf(why, why_size, "%u platform(s), %u device(s)",
		 platform_count, devices);
	return devices;
}

/* Initialises the plugin with |options| after `type = all`: CPU OpenCL
 * devices such as PoCL are opt-in, and the tests run on whatever device
 * the machine has (a `type` among |options| still wins, being later). */
static wafer_status init_with(const struct wafer_plugin_option *options,
			      size_t count, void **out_state)
{
	struct wafer_plugin_option all[32];
	if (count >= sizeof all / sizeof all[0]) {
		printf("Bail out! init_with: %zu options is too many\n", count);
		exit(1);
	}
	all[0] = option("type", "all", "t/standins/opencl_host.h");
	for (size_t i = 0; i < count; i++)
		all[i + 1] = options[i];
	choose_cache_dir(all, count + 1);
	struct wafer_plugin_init_args args = {
		.struct_size = sizeof args,
		.options = all,
		.option_count = count + 1,
		.host = &opencl_host,
	};
	return plugin->init(&args, out_state);
}

/* The table entry for (op, dtype, variant); variant NULL: the first. */
static const struct wafer_kernel *find_kernel(void *device, const char *op,
					      wafer_dtype dtype,
					      const char *variant)
{
	const struct wafer_kernel *table;
	size_t count;

	if (plugin->device_kernels(device, &table, &count) != WAFER_OK)
		return NULL;
	for (size_t i = 0; i < count; i++)
		if (strcmp(table[i].op, op) == 0 && table[i].dtype == dtype &&
		    (!variant || strcmp(table[i].variant, variant) == 0))
			return &table[i];
	return NULL;
}

/* When nonzero, launch_kernel runs only the checks the core makes before
 * launch (the debug-only helper of <wafer/plugin_util.h>), with this
 * binding alignment. */
static size_t core_checks_alignment;

/* Launches |kernel| (NULL: not found, which fails the launch). */
static wafer_status launch_kernel(void *device, void *queue,
				  const struct wafer_kernel *kernel,
				  const struct wafer_binding *bindings,
				  uint32_t binding_count, const void *params,
				  size_t params_size)
{
	struct wafer_launch l = launch_of(kernel, bindings, binding_count,
					  params, params_size, 1);

	if (!kernel) {
		snprintf(last_error, sizeof last_error, "(no such kernel)");
		return WAFER_ERROR_NOT_FOUND;
	}
	if (core_checks_alignment)
		return wafer_plugin_debug_check_launch(&fake_host, "opencl", &l,
						       core_checks_alignment);
	return plugin->server->launch(device, queue, &l);
}

#endif
