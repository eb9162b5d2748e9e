/* wafer — SPDX-License-Identifier: MIT
 *
 * opencl_host.h: what the OpenCL plugin tests share — the built
 * opencl.so loaded by hand with a fake host services table that records
 * the plugin's error text and log lines (and counts source builds), and
 * small helpers around init options, buffers and launches. Header-only,
 * like tap.h, so each test stays one file. */
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

#include "t/tap.h"

static _Thread_local char last_error[4096];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char log_text[65536];
static int log_count;
/* "built <unit> for <device> from source" lines: clBuildProgram calls on
 * source (program.c logs each at info level). */
static int source_builds;

static void fake_set_error(const char *format, ...)
	__attribute__((format(printf, 1, 2)));
static void fake_set_error(const char *format, ...)
{
	va_list ap;
	va_start(ap, format);
	vsnprintf(last_error, sizeof last_error, format, ap);
	va_end(ap);
}

static void fake_log(const struct wafer_host_services *host,
		     wafer_log_level level, const char *format, ...)
	__attribute__((format(printf, 3, 4)));
static void fake_log(const struct wafer_host_services *host,
		     wafer_log_level level, const char *format, ...)
{
	char line[4096];
	size_t used;
	va_list ap;

	va_start(ap, format);
	vsnprintf(line, sizeof line, format, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	log_count++;
	if (strstr(line, " from source in "))
		source_builds++;
	used = strlen(log_text);
	if (used + 2 < sizeof log_text)
		snprintf(log_text + used, sizeof log_text - used, "%s\n", line);
	pthread_mutex_unlock(&log_lock);
	if (getenv("T_OPENCL_VERBOSE"))
		fprintf(stderr, "log: %s\n", line);
}

__attribute__((unused)) static void log_reset(void)
{
	pthread_mutex_lock(&log_lock);
	log_text[0] = '\0';
	log_count = 0;
	source_builds = 0;
	pthread_mutex_unlock(&log_lock);
}

static const struct wafer_host_services fake_host = {
	.struct_size = sizeof(struct wafer_host_services),
	.abi_major = WAFER_PLUGIN_ABI_MAJOR,
	.abi_minor = WAFER_PLUGIN_ABI_MINOR,
	.set_error = fake_set_error,
	.log = fake_log,
};

/* tap.h's is_status reads libwafer's error text; these tests have no
 * libwafer and show what the plugin passed to set_error instead. */
static int status_is(wafer_status got, wafer_status want, const char *format,
		     ...) __attribute__((format(printf, 3, 4), unused));
static int status_is(wafer_status got, wafer_status want, const char *format,
		     ...)
{
	char name[512];
	va_list ap;
	int pass;

	va_start(ap, format);
	vsnprintf(name, sizeof name, format, ap);
	va_end(ap);
	pass = ok(got == want, "%s", name);
	if (!pass)
		diag("got status %d, want %d; set_error: %s", (int)got,
		     (int)want, last_error);
	return pass;
}

static const struct wafer_plugin *plugin;

/* dlopens $T_BUILDDIR/../plugins/opencl/.libs/opencl.so and queries it;
 * skips the whole test when the plugin was not built. */
static void load_plugin(void)
{
	const char *builddir = getenv("T_BUILDDIR");
	char path[4096];
	void *so;
	wafer_plugin_query_fn query;

	if (!builddir)
		skip_all("T_BUILDDIR is not set (run through make check)");
	snprintf(path, sizeof path, "%s/../plugins/opencl/.libs/opencl.so",
		 builddir);
	so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!so) {
		printf("Bail out! dlopen %s: %s\n", path, dlerror());
		exit(1);
	}
	query = (wafer_plugin_query_fn)dlsym(so, WAFER_PLUGIN_QUERY_SYMBOL);
	plugin = query ? query(WAFER_PLUGIN_ABI_MAJOR, &fake_host) : NULL;
	if (!plugin) {
		printf("Bail out! %s: no descriptor\n", path);
		exit(1);
	}
}

static struct wafer_plugin_option option(const char *key, const char *value,
					 const char *origin)
{
	return (struct wafer_plugin_option){
		.struct_size = sizeof(struct wafer_plugin_option),
		.key = key,
		.value = value,
		.origin = origin,
	};
}

static wafer_status init_with(const struct wafer_plugin_option *options,
			      size_t count, void **out_state)
{
	struct wafer_plugin_init_args args = {
		.struct_size = sizeof args,
		.options = options,
		.option_count = count,
		.host = &fake_host,
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

static struct wafer_binding binding(wafer_resource resource, size_t offset,
				    size_t size)
{
	return (struct wafer_binding){
		.struct_size = sizeof(struct wafer_binding),
		.resource = resource,
		.offset = offset,
		.size = size,
	};
}

/* Launches |kernel| (NULL: not found, which fails the launch). */
static wafer_status launch_kernel(void *device, void *queue,
				  const struct wafer_kernel *kernel,
				  const struct wafer_binding *bindings,
				  uint32_t binding_count, const void *params,
				  size_t params_size)
{
	struct wafer_launch l = {
		.struct_size = sizeof l,
		.kernel = kernel,
		.bindings = bindings,
		.binding_count = binding_count,
		.params = params,
		.params_size = params_size,
		.global = {1, 1, 1},
	};
	if (!kernel) {
		snprintf(last_error, sizeof last_error, "(no such kernel)");
		return WAFER_ERROR_NOT_FOUND;
	}
	return plugin->server->launch(device, queue, &l);
}

#endif
