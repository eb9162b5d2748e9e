/* wafer — SPDX-License-Identifier: MIT
 *
 * client_util.h: the client-side helpers the tests of the client API
 * share, so that each is written once:
 *
 *   check(status, "what")          stop the test (exit 1) unless WAFER_OK,
 *                                  the status and wafer_last_error() in a
 *                                  diag: for setup a test does not assert
 *   open_default(options, &rt, &c) a runtime (|options| may be NULL) and a
 *                                  client on "default" (WAFER_BACKEND picks
 *                                  another), the device named in a diag;
 *                                  returns the device's backend name
 *   close_default(rt, c)           closes both again
 *   open_runtime_on(backends, path) a runtime on |backends| only, plugins
 *                                  from |path|, no configuration file read
 *   open_runtime_with(options, n, "what") a runtime of |options| alone
 *                                  (runtime_open_with: its status)
 *   open_test_plugin(plugin, "what") a runtime on a test plugin of
 *                                  t/plugins/
 *   usage_now(c)                   wafer_memory_usage after a wafer_sync
 *   ok_clean(c, "at the end")      one point: no handle alive, no byte in
 *                                  use
 *   fill_floats(c, h, n, value)    the "fill" kernel on |n| floats of |h|
 *   upload_f32(c, rank, shape, v)  a tensor of |v| (floats)
 *   download_f32(c, t)             a tensor's elements, malloc'd
 *   create_ramp(c, n, scale)       a handle of |n| floats i * scale;
 *                                  holds_ramp(c, h, n, scale) checks one
 *   ref_unary(op, x), ref_binary(op, a, b): the host's reference of an
 *                                  operation of ops.h, in double (NaN
 *                                  propagates, as the kernels do)
 *   needs_f32_kernels(c, label, test, "add", ..., NULL)
 *                                  whether |c|'s device has every f32
 *                                  kernel listed; if not, one point: a
 *                                  skip naming what is missing, or a
 *                                  failure on a backend that ships the
 *                                  whole catalogue (catalogue.h)
 *
 * Header-only, like tap.h (include it after tap.h). */
#ifndef WAFER_T_CLIENT_UTIL_H
#define WAFER_T_CLIENT_UTIL_H

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/ops.h>
#include <wafer/plugin.h>
#include <wafer/wafer.h>

#include "catalogue.h"
#include "tap.h"

static inline void check(wafer_status status, const char *what)
{
	if (status != WAFER_OK) {
		diag("%s: %s: %s", what, wafer_status_string(status),
		     wafer_last_error());
		exit(1);
	}
}

/* The backend name lives as long as the runtime (wafer.h). */
static inline const char *open_default(const wafer_runtime_options *options,
				       wafer_runtime **out_runtime,
				       wafer_client **out_client)
{
	wafer_device_desc device = {.struct_size = sizeof device};

	check(wafer_runtime_open(options, out_runtime), "runtime_open");
	check(wafer_client_open(*out_runtime, "default", NULL, out_client),
	      "client_open");
	check(wafer_client_device(*out_client, &device), "device");
	diag("backend %s: %s", device.backend, device.name);
	return device.backend;
}

static inline void close_default(wafer_runtime *runtime,
				 wafer_client *client)
{
	check(wafer_client_close(client), "client_close");
	wafer_runtime_close(runtime);
}

/* wafer_runtime_open of the |count| |options| alone, no configuration
 * file read. */
static inline wafer_status runtime_open_with(const wafer_option *options,
					     size_t count,
					     wafer_runtime **out)
{
	wafer_runtime_options ro = {
		.struct_size = sizeof ro,
		.options = options,
		.option_count = count,
		.flags = WAFER_RUNTIME_NO_CONFIG_FILES,
	};

	return wafer_runtime_open(&ro, out);
}

/* A runtime of the |count| |options| alone, no configuration file read;
 * |what| names it in the diag when it does not open. */
static inline wafer_runtime *open_runtime_with(const wafer_option *options,
					       size_t count, const char *what)
{
	wafer_runtime *rt = NULL;

	check(runtime_open_with(options, count, &rt), what);
	return rt;
}

static inline wafer_runtime *open_runtime_on(const char *backends,
					     const char *plugin_path)
{
	wafer_option options[] = {
		{"core", "backend", backends},
		{"core", "plugin_path", plugin_path},
	};
	char what[256];

	snprintf(what, sizeof what, "runtime_open(%.200s)", backends);
	return open_runtime_with(options, 2, what);
}

/* A runtime on |plugin|, a test plugin of t/plugins/ (built under
 * $T_BUILDDIR); NULL after a skip point named |what| where T_BUILDDIR is
 * not set. */
static inline wafer_runtime *open_test_plugin(const char *plugin,
					      const char *what)
{
	const char *builddir = getenv("T_BUILDDIR");
	char path[4096];

	if (!builddir) {
		ok(1, "%s # SKIP T_BUILDDIR is not set", what);
		return NULL;
	}
	snprintf(path, sizeof path, "%s/plugins/.libs", builddir);
	return open_runtime_on(plugin, path);
}

/* A client of |selector| on |channel| (NULL: the configured one). */
static inline wafer_client *open_client_on(wafer_runtime *rt,
					   const char *selector,
					   const char *channel)
{
	wafer_client_options options = {.struct_size = sizeof options,
					 .channel = channel};
	wafer_client *c;

	check(wafer_client_open(rt, selector, &options, &c), selector);
	return c;
}

/* |c|'s device's capability bits, and its backend in |*out_backend|
 * (when not NULL; the name lives as long as the runtime). */
static inline uint64_t caps_of(wafer_client *c, const char **out_backend)
{
	wafer_device_desc d = {.struct_size = sizeof d};

	check(wafer_client_device(c, &d), "device");
	if (out_backend)
		*out_backend = d.backend;
	return d.capabilities;
}

static inline wafer_memory_usage usage_now(wafer_client *client)
{
	wafer_memory_usage usage = {.struct_size = sizeof usage};

	check(wafer_sync(client), "sync");
	check(wafer_memory_usage_get(client, &usage), "memory_usage_get");
	return usage;
}

/* One point, named |what|: no handle alive, no byte in use. */
static inline int ok_clean(wafer_client *client, const char *what)
{
	wafer_memory_usage usage = usage_now(client);

	return ok(usage.handles_live == 0 && usage.bytes_in_use == 0,
		  "%s: no handle alive, no byte in use (%" PRIu64
		  " handles, %" PRIu64 " bytes)",
		  what, usage.handles_live, usage.bytes_in_use);
}

/* The arguments of |kernel| on f32 over |count| elements (global =
 * {count, 1, 1}); a test sets what else it needs (variant, kernel_ref). */
static inline wafer_execute_args
execute_args_f32(const char *kernel, const wafer_buffer_binding *bindings,
		 size_t n, const void *params, size_t params_size,
		 uint64_t count)
{
	return (wafer_execute_args){
		.struct_size = sizeof(wafer_execute_args),
		.kernel = kernel,
		.dtype = WAFER_DTYPE_F32,
		.bindings = bindings,
		.binding_count = n,
		.params = params,
		.params_size = params_size,
		.global = {count, 1, 1},
	};
}

/* Runs |kernel| on f32 over |count| elements, binding |handles| (at most
 * 8) whole, in order. */
static inline wafer_status execute_f32(wafer_client *client,
				       const char *kernel,
				       const wafer_handle *handles, size_t n,
				       const void *params, size_t params_size,
				       uint64_t count)
{
	wafer_buffer_binding bindings[8];
	memset(bindings, 0, sizeof bindings);
	if (n > 8)
		return WAFER_ERROR_INVALID_ARGUMENT;
	for (size_t i = 0; i < n; i++)
		bindings[i] = (wafer_buffer_binding){handles[i], 0, 0};
	wafer_execute_args args =
		execute_args_f32(kernel, bindings, n, params, params_size, count);

	return wafer_execute(client, &args);
}

static inline wafer_status fill_floats(wafer_client *client, wafer_handle h,
				       uint64_t count, double value)
{
	struct wafer_fill_params fill = {.count = count, .value = value};
	return execute_f32(client, WAFER_KERNEL_FILL, &h, 1, &fill,
			   sizeof fill, count);
}

static inline wafer_tensor upload_f32(wafer_client *client, uint32_t rank,
				      const uint64_t *shape, const float *data)
{
	wafer_tensor t;

	check(wafer_tensor_create(client, WAFER_DTYPE_F32, rank, shape, data,
				  &t),
	      "tensor_create");
	return t;
}

static inline float *download_f32(wafer_client *client, const wafer_tensor *t)
{
	size_t n = (size_t)wafer_tensor_count(t);
	float *v = malloc(n * sizeof *v);

	check(wafer_tensor_read(client, t, v, n * sizeof *v), "tensor_read");
	return v;
}

/* A handle of |n| floats i * scale. */
static inline wafer_handle create_ramp(wafer_client *client, size_t n,
				       float scale)
{
	float *data = malloc(n * sizeof *data);
	wafer_handle h;

	for (size_t i = 0; i < n; i++)
		data[i] = (float)i * scale;
	check(wafer_create(client, data, n * sizeof *data, &h), "create");
	free(data);
	return h;
}

/* Whether |h| holds |n| floats i * scale from its first byte. */
static inline int holds_ramp(wafer_client *client, wafer_handle h, size_t n,
			     float scale)
{
	float *data = malloc(n * sizeof *data);
	int same = wafer_read(client, h, 0, data, n * sizeof *data) == WAFER_OK;

	for (size_t i = 0; same && i < n; i++)
		same = data[i] == (float)i * scale;
	free(data);
	return same;
}

/* The ABI minor the plugin of |backend| was built for (0 when |runtime|
 * has no such plugin): a plugin is judged by its minor's rules
 * (wafer-plugin(7), ABI history). */
static inline uint32_t plugin_abi_minor(const wafer_runtime *runtime,
					const char *backend)
{
	for (size_t i = 0; i < wafer_runtime_plugin_count(runtime); i++) {
		wafer_plugin_report r = {.struct_size = sizeof r};

		if (wafer_runtime_plugin(runtime, i, &r) == WAFER_OK &&
		    strcmp(r.name, backend) == 0)
			return r.abi_minor;
	}
	return 0;
}

/* relu of NaN is NaN since ABI 1.6; before, the catalogue said only
 * max(in, 0), and 0 (fmax's answer) was right too. */
#define RELU_NAN_SINCE_MINOR 6

/* The references the catalogue's rows name (<wafer/catalogue.def>). */
static inline double ref_neg(double x) { return -x; }
static inline double ref_abs(double x) { return fabs(x); }
static inline double ref_exp(double x) { return exp(x); }
static inline double ref_log(double x) { return log(x); }
static inline double ref_sqrt(double x) { return sqrt(x); }
static inline double ref_relu(double x)
{
	return x > 0 || isnan(x) ? x : 0; /* NaN stays */
}
static inline double ref_gelu(double x) /* the tanh form (ops.h) */
{
	return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
static inline double ref_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static inline double ref_tanh(double x) { return tanh(x); }

static inline double ref_unary(wafer_unary_op op, double x)
{
	switch (op) {
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference)                   \
	case WAFER_UNARY_##NAME: return reference(x);
#include <wafer/catalogue.def>
	}
	return NAN;
}

/* On float operands, rounded back to float, it is the float operation
 * (double has more than twice float's precision: the second rounding
 * changes nothing). */
static inline double ref_add(double a, double b) { return a + b; }
static inline double ref_sub(double a, double b) { return a - b; }
static inline double ref_mul(double a, double b) { return a * b; }
static inline double ref_div(double a, double b) { return a / b; }
static inline double ref_max(double a, double b) { return a > b ? a : b; }
static inline double ref_min(double a, double b) { return a < b ? a : b; }

static inline double ref_binary(wafer_binary_op op, double a, double b)
{
	if (isnan(a) || isnan(b))
		return NAN;
	switch (op) {
#define WAFER_CATALOGUE_BINARY(name, NAME, reference)                          \
	case WAFER_BINARY_##NAME: return reference(a, b);
#include <wafer/catalogue.def>
	}
	return NAN;
}

/* Whether |c|'s device has every f32 kernel of the NULL-terminated list;
 * if not, one skip line (or a failure, for a backend that ships the whole
 * catalogue) names |label|, |test| and what is missing. */
static inline int needs_f32_kernels(wafer_client *c, const char *label,
				    const char *test, ...)
{
	char missing[256] = "";
	size_t used = 0;
	const char *kernel;
	va_list ap;

	va_start(ap, test);
	while ((kernel = va_arg(ap, const char *)) != NULL) {
		const wafer_kernel_ref *ref;
		if (wafer_kernel_find(c, kernel, NULL, WAFER_DTYPE_F32,
				      &ref) == WAFER_OK)
			continue;
		int n = snprintf(missing + used, sizeof missing - used, "%s%s",
				 used ? ", " : "", kernel);
		if (n > 0 && (size_t)n < sizeof missing - used)
			used += (size_t)n;
	}
	va_end(ap);
	if (!used)
		return 1;
	wafer_device_desc device = {.struct_size = sizeof device};
	check(wafer_client_device(c, &device), "device");
	if (backend_has_full_catalogue(device.backend))
		ok(0, "[%s] %s: %s ships the whole catalogue, yet has no f32 "
		   "kernel %s", label, test, device.backend, missing);
	else
		ok(1, "[%s] %s # SKIP no f32 kernel %s on %s", label, test,
		   missing, device.backend);
	return 0;
}

#endif
