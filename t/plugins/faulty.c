/* wafer — SPDX-License-Identifier: MIT
 *
 * faulty.c: a fault-injecting shim. It loads a real plugin (the file in
 * WAFER_TEST_FAULTY_PLUGIN), hands the core that plugin's descriptor and
 * kernels, and fails the k-th call (option `fail_at = k`, 0: never; with
 * `fail_count = n`, that call and the n - 1 after it) of one kind of
 * storage call (option `site`):
 *   alloc   storage.alloc and vm_reserve   -> WAFER_ERROR_OUT_OF_MEMORY
 *   map     storage.vm_map                 -> WAFER_ERROR_OUT_OF_MEMORY
 *   copy    copy_in, copy_out, copy        -> WAFER_ERROR_DEVICE
 * as a device that runs out of memory or fails a transfer would. t/internal/faults
 * sweeps k over every call a scenario makes and checks each failure is a
 * clean error that loses nothing. It reads how many calls of the site
 * were made from `wafer_test_faulty_calls`, exported for that (so this
 * shim is linked without the plugin version script). */
#include "build-config.h"

#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>
#include <wafer/plugin_util.h>

enum site { SITE_ALLOC, SITE_MAP, SITE_COPY };

WAFER_PLUGIN_EXPORT _Atomic uint64_t wafer_test_faulty_calls;

static const struct wafer_host_services *host;
static const struct wafer_plugin *real;
static struct wafer_plugin shim;
static struct wafer_storage_ops storage;
static void *real_dl;
static enum site site;
static uint64_t fail_at, fail_count;

/* Counts a call of |s|; true when it is the one to fail. */
static int hit(enum site s)
{
	if (s != site)
		return 0;
	uint64_t n = atomic_fetch_add(&wafer_test_faulty_calls, 1) + 1;
	return fail_at && n >= fail_at && n - fail_at < fail_count;
}

static wafer_status fault(wafer_status status, const char *what)
{
	host->set_error("faulty: injected failure of %s (call %llu)", what,
			(unsigned long long)fail_at);
	return status;
}

static wafer_status f_alloc(void *device, size_t size, wafer_resource *out)
{
	if (hit(SITE_ALLOC))
		return fault(WAFER_ERROR_OUT_OF_MEMORY, "alloc");
	return real->storage->alloc(device, size, out);
}

static wafer_status f_vm_reserve(void *device, size_t size,
				 wafer_resource *out)
{
	if (hit(SITE_ALLOC))
		return fault(WAFER_ERROR_OUT_OF_MEMORY, "vm_reserve");
	return real->storage->vm_reserve(device, size, out);
}

static wafer_status f_vm_map(void *device, wafer_resource range,
			     size_t offset, size_t size)
{
	if (hit(SITE_MAP))
		return fault(WAFER_ERROR_OUT_OF_MEMORY, "vm_map");
	return real->storage->vm_map(device, range, offset, size);
}

static wafer_status f_copy_in(void *device, void *queue, wafer_resource dst,
			      size_t dst_offset, const void *src, size_t size)
{
	if (hit(SITE_COPY))
		return fault(WAFER_ERROR_DEVICE, "copy_in");
	return real->storage->copy_in(device, queue, dst, dst_offset, src, size);
}

static wafer_status f_copy_out(void *device, void *queue, wafer_resource src,
			       size_t src_offset, void *dst, size_t size)
{
	if (hit(SITE_COPY))
		return fault(WAFER_ERROR_DEVICE, "copy_out");
	return real->storage->copy_out(device, queue, src, src_offset, dst, size);
}

static wafer_status f_copy(void *device, void *queue, wafer_resource dst,
			   size_t dst_offset, wafer_resource src,
			   size_t src_offset, size_t size)
{
	if (hit(SITE_COPY))
		return fault(WAFER_ERROR_DEVICE, "copy");
	return real->storage->copy(device, queue, dst, dst_offset, src,
				   src_offset, size);
}

/* Reads the shim's own options and hands the rest to the real plugin. */
static wafer_status f_init(const struct wafer_plugin_init_args *args,
			   void **out_state)
{
	struct wafer_plugin_option kept[16];
	size_t kept_count = 0;

	site = SITE_ALLOC;
	fail_at = 0;
	fail_count = 1;
	atomic_store(&wafer_test_faulty_calls, 0);
	for (size_t i = 0; i < args->option_count; i++) {
		const struct wafer_plugin_option *o =
			wafer_plugin_array_at(args->options, i);
		if (strcmp(o->key, "site") == 0)
			site = strcmp(o->value, "map") == 0    ? SITE_MAP
			       : strcmp(o->value, "copy") == 0 ? SITE_COPY
							       : SITE_ALLOC;
		else if (strcmp(o->key, "fail_at") == 0)
			fail_at = strtoull(o->value, NULL, 10);
		else if (strcmp(o->key, "fail_count") == 0)
			fail_count = strtoull(o->value, NULL, 10);
		else if (kept_count < 16)
			kept[kept_count++] = *o;
	}
	struct wafer_plugin_init_args forwarded = *args;
	forwarded.options = kept;
	forwarded.option_count = kept_count;
	return real->init(&forwarded, out_state);
}

WAFER_PLUGIN_EXPORT const struct wafer_plugin *
wafer_plugin_query(uint32_t core_abi_major,
		   const struct wafer_host_services *services)
{
	host = services;
	/* The real plugin is needed before init, to answer the query with
	 * its descriptor: the test names it in the environment. */
	const char *path = getenv("WAFER_TEST_FAULTY_PLUGIN");
	if (!real) {
		real_dl = path ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
		wafer_plugin_query_fn query =
			real_dl ? (wafer_plugin_query_fn)(uintptr_t)dlsym(
					  real_dl, WAFER_PLUGIN_QUERY_SYMBOL)
				: NULL;
		real = query ? query(core_abi_major, services) : NULL;
		if (!real) {
			services->set_error("faulty: cannot load the plugin in "
					    "WAFER_TEST_FAULTY_PLUGIN (%s)",
					    path ? path : "unset");
			return NULL;
		}
	}
	shim = *real;
	shim.name = "faulty";
	shim.init = f_init;
	storage = *real->storage;
	storage.alloc = f_alloc;
	storage.copy_in = f_copy_in;
	storage.copy_out = f_copy_out;
	storage.copy = f_copy;
	if (storage.vm_reserve)
		storage.vm_reserve = f_vm_reserve;
	if (storage.vm_map)
		storage.vm_map = f_vm_map;
	shim.storage = &storage;
	return &shim;
}
