/* wafer — SPDX-License-Identifier: MIT
 *
 * fake_host.h: the core's side of the plugin ABI, for tests that load a
 * plugin by hand (dlopen + wafer_plugin_query) with no libwafer. The host
 * services record what the plugin says:
 *   last_error   the calling thread's last set_error text
 *   last_log     the last log line; log_text every line since log_count
 *                was last 0 (log_reset(), or a test setting it to 0)
 *   log_count    lines logged
 *   fake_log_hook, when set, sees each line under log_lock
 * T_VERBOSE=1 echoes log lines as TAP comments. binding() builds a
 * wafer_binding as the core does, option() a configuration option as
 * the core hands it to init. status_is() is tap.h's
 * is_status for such tests: it shows the set_error text on failure.
 * host_open() dlopens a plugin and finds its query function,
 * host_init() inits a plugin with these services and some options,
 * host_init_rejects() checks that one option is a configuration error,
 * host_find_kernel() finds a device's (op, dtype) entry, launch_of()
 * builds a launch of it as the core does, host_launch() launches it,
 * host_values() makes test inputs, host_resolve() looks up what the
 * plugin's own library links (a loader's entry points).
 *
 * Header-only; include it once, after tap.h. */
#ifndef WAFER_T_FAKE_HOST_H
#define WAFER_T_FAKE_HOST_H

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>

#include "t/tap.h"

static _Thread_local char last_error[4096];
static pthread_mutex_t log_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_log[4096];
static char log_text[65536];
static int log_count;
static void (*fake_log_hook)(const char *line);

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
	char line[sizeof last_log];
	va_list ap;

	va_start(ap, format);
	vsnprintf(line, sizeof line, format, ap);
	va_end(ap);
	pthread_mutex_lock(&log_lock);
	memcpy(last_log, line, sizeof last_log);
	if (log_count == 0)
		log_text[0] = '\0';
	log_count++;
	size_t used = strlen(log_text);
	if (used + 2 < sizeof log_text)
		snprintf(log_text + used, sizeof log_text - used, "%s\n", line);
	if (fake_log_hook)
		fake_log_hook(line);
	pthread_mutex_unlock(&log_lock);
	if (getenv("T_VERBOSE"))
		printf("# log: %s\n", line);
}

__attribute__((unused)) static void log_reset(void)
{
	pthread_mutex_lock(&log_lock);
	log_text[0] = '\0';
	log_count = 0;
	pthread_mutex_unlock(&log_lock);
}

static const struct wafer_host_services fake_host = {
	.struct_size = sizeof(struct wafer_host_services),
	.abi_major = WAFER_PLUGIN_ABI_MAJOR,
	.abi_minor = WAFER_PLUGIN_ABI_MINOR,
	.set_error = fake_set_error,
	.log = fake_log,
};

/* A binding as the core would hand it to launch. */
__attribute__((unused)) static struct wafer_binding
binding(wafer_resource resource, size_t offset, size_t size)
{
	return (struct wafer_binding){
		.struct_size = sizeof(struct wafer_binding),
		.resource = resource,
		.offset = offset,
		.size = size,
	};
}

/* An option as the core would hand it to init; |origin| is where it
 * was set (a file:line, "api"). */
__attribute__((unused)) static struct wafer_plugin_option
option(const char *key, const char *value, const char *origin)
{
	return (struct wafer_plugin_option){
		.struct_size = sizeof(struct wafer_plugin_option),
		.key = key,
		.value = value,
		.origin = origin,
	};
}

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

/* dlopens the plugin at |path| (its handle in *out_so) and returns its
 * wafer_plugin_query, one point for each step; NULL when either fails. */
__attribute__((unused)) static wafer_plugin_query_fn
host_open(const char *path, void **out_so)
{
	void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	wafer_plugin_query_fn query = NULL;

	*out_so = so;
	if (!ok(so != NULL, "dlopen %s", path)) {
		diag("%s", dlerror());
		return NULL;
	}
	query = (wafer_plugin_query_fn)(uintptr_t)dlsym(
		so, WAFER_PLUGIN_QUERY_SYMBOL);
	ok(query != NULL, "%s is exported", WAFER_PLUGIN_QUERY_SYMBOL);
	return query;
}

/* init |p| with |count| |options| and these host services. */
__attribute__((unused)) static wafer_status
host_init(const struct wafer_plugin *p,
	  const struct wafer_plugin_option *options, size_t count,
	  void **out_state)
{
	struct wafer_plugin_init_args args = {
		.struct_size = sizeof args,
		.options = options,
		.option_count = count,
		.host = &fake_host,
	};
	return p->init(&args, out_state);
}

/* One point: init of |p| with the one option |key| = |value|, set at
 * |origin|, is a configuration error (set_error's text in last_error). */
__attribute__((unused)) static int
host_init_rejects(const struct wafer_plugin *p, const char *key,
		  const char *value, const char *origin)
{
	struct wafer_plugin_option opt = option(key, value, origin);
	void *state = (void *)1;

	return status_is(host_init(p, &opt, 1, &state), WAFER_ERROR_CONFIG,
			 "%s = %s is a configuration error", key, value);
}

/* The first entry of (|op|, |dtype|) in |device|'s kernel table (stepped
 * by its struct_size, as the core reads it), or NULL. */
__attribute__((unused)) static const struct wafer_kernel *
host_find_kernel(const struct wafer_plugin *p, void *device, const char *op,
		 wafer_dtype dtype)
{
	const struct wafer_kernel *table;
	size_t count;

	if (p->device_kernels(device, &table, &count) != WAFER_OK)
		return NULL;
	for (size_t i = 0; i < count; i++) {
		const struct wafer_kernel *k =
			(const void *)((const char *)table +
				       i * table[0].struct_size);
		if (strcmp(k->op, op) == 0 && k->dtype == dtype)
			return k;
	}
	return NULL;
}

/* The launch of |k| over |count| work items (global = {count, 1, 1}, at
 * least 1), as the core builds it. */
__attribute__((unused)) static struct wafer_launch
launch_of(const struct wafer_kernel *k, const struct wafer_binding *b,
	  uint32_t nb, const void *params, size_t params_size, uint64_t count)
{
	return (struct wafer_launch){
		.struct_size = sizeof(struct wafer_launch),
		.kernel = k,
		.bindings = b,
		.binding_count = nb,
		.params = params,
		.params_size = params_size,
		.global = {count ? count : 1, 1, 1},
	};
}

/* Launches |k| on |queue| over |count| work items, as the core would. */
__attribute__((unused)) static wafer_status
host_launch(const struct wafer_plugin *p, void *device, void *queue,
	    const struct wafer_kernel *k, const struct wafer_binding *b,
	    uint32_t nb, const void *params, size_t params_size,
	    uint64_t count)
{
	struct wafer_launch l = launch_of(k, b, nb, params, params_size, count);

	return p->server->launch(device, queue, &l);
}

/* The next number of a deterministic sequence (a linear congruential
 * generator) from its state |s|. */
static inline uint32_t host_lcg(uint32_t *s)
{
	return *s = *s * 1664525u + 1013904223u;
}

/* Deterministic inputs in [-64, 64), with exact zeros and negative
 * zeros. */
__attribute__((unused)) static void host_values(float *x, size_t n,
						uint32_t seed)
{
	uint32_t s = seed * 2654435761u + 1;

	for (size_t i = 0; i < n; i++) {
		x[i] = (float)((int32_t)(host_lcg(&s) >> 8) % 65536) / 512.0f;
		if (i % 97 == 5)
			x[i] = 0.0f;
		if (i % 89 == 3)
			x[i] = -0.0f;
	}
}

/* Looks |names| up in |so| into |slots|, the function pointers of a
 * struct in the same order; 0, with a diag naming the first missing one
 * in |library|, when one is missing. */
__attribute__((unused)) static int host_resolve(void *so,
						const char *const *names,
						size_t count, void **slots,
						const char *library)
{
	for (size_t i = 0; i < count; i++)
		if (!(slots[i] = dlsym(so, names[i]))) {
			diag("no %s in the %s", names[i], library);
			return 0;
		}
	return 1;
}

#endif
