/* wafer — SPDX-License-Identifier: MIT
 *
 * cuda_host.h: the cuda plugin loaded by hand (t/standins/fake_host.h's host
 * services), on the stand-in driver t/standins/fakecuda.c or, with --real, on
 * libcuda.so.1: what t/cuda/plugin and t/cuda/comm both need.
 *   plugin       the plugin's table (the test sets it from the query)
 *   real         --real: libcuda.so.1 and a GPU (the test sets it)
 *   fake_path    the stand-in's path, fake_stats its fakecuda_stats
 *                (NULL with --real: stats() is then all zeros)
 *   init_with    init with this run's driver and |count| more options
 *   find_kernel  a device's kernel of (op, dtype), NULL when none
 *   alloc_or_die, bytes, pattern: device and host buffers for the cases
 *
 * Header-only; include it once, after tap.h. */
#ifndef WAFER_T_CUDA_HOST_H
#define WAFER_T_CUDA_HOST_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>

#include "t/standins/fakecuda.h"
#include "t/tap.h"

#include "t/standins/fake_host.h"

static const struct wafer_plugin *plugin;
static int real;
static char fake_path[4096];
static fakecuda_stats_fn fake_stats;

__attribute__((unused)) static struct fakecuda_stats stats(void)
{
	struct fakecuda_stats s;

	memset(&s, 0, sizeof s);
	if (fake_stats)
		fake_stats(&s);
	return s;
}

#define CUDA_HOST_MAX_OPTIONS 8

/* init with the driver of this run (the stand-in unless --real; cuBLAS
 * off with the stand-in, as cuBLAS would look for the real driver), and
 * |count| more options. */
__attribute__((unused)) static wafer_status
init_with(const struct wafer_plugin_option *options, size_t count,
	  void **out_state)
{
	struct wafer_plugin_option all[CUDA_HOST_MAX_OPTIONS];
	size_t n = 0;

	if (!real) {
		all[n++] = option("driver_library", fake_path, "test");
		all[n++] = option("cublas", "no", "test");
	}
	for (size_t i = 0; i < count && n < CUDA_HOST_MAX_OPTIONS; i++)
		all[n++] = options[i];
	return host_init(plugin, all, n, out_state);
}

/* The first entry of |device|'s table for (|op|, |dtype|); NULL when
 * there is none (or no table). */
__attribute__((unused)) static const struct wafer_kernel *
find_kernel(void *device, const char *op, wafer_dtype dtype)
{
	return host_find_kernel(plugin, device, op, dtype);
}

__attribute__((unused)) static wafer_resource alloc_or_die(void *device,
							   size_t size)
{
	wafer_resource r;

	if (plugin->storage->alloc(device, size, &r) != WAFER_OK)
		bail_out("alloc(%zu): %s", size, last_error);
	return r;
}

__attribute__((unused)) static unsigned char *bytes(size_t n)
{
	unsigned char *x = malloc(n ? n : 1);

	if (!x)
		bail_out("out of host memory");
	return x;
}

/* A pattern that differs for each seed and position. */
__attribute__((unused)) static void pattern(unsigned char *x, size_t n,
					    uint32_t seed)
{
	uint32_t s = seed * 2654435761u + 7;

	for (size_t i = 0; i < n; i++)
		x[i] = (unsigned char)(host_lcg(&s) >> 24);
}

#endif
