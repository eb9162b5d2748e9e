/* wafer — SPDX-License-Identifier: MIT
 *
 * plugin.c: the cuda plugin's descriptor and its one exported symbol,
 * wafer_plugin_query; the plugin's lifetime (init, shutdown), its options
 * and its devices (count, info, open, close, kernels). Start reading at
 * the descriptor at the bottom of the file.
 *
 * init never fails for want of a GPU: it loads the driver (driver.c) and
 * lists the devices, and when either step fails it keeps the reason, which
 * device_count returns with an error status (the loader then reports
 * "no devices: <reason>", and wafer-info shows it).
 *
 * Options, in the [cuda] section of wafer.conf(5) (wafer-cuda(7)):
 *   driver_library = PATH    the driver to dlopen (default libcuda.so.1)
 *   release_threshold = SIZE bytes the default stream-ordered pool keeps
 *                            cached across synchronisations, or "max"
 *                            (the default: keep everything until a trim
 *                            or an allocation fails)
 *   staging_chunk = SIZE     largest pinned staging buffer, a power of
 *                            two from 64K to 1G (default 4M); larger
 *                            copies go in pieces of this size
 *   staging_limit = SIZE     pinned staging memory a device may hold
 *                            (default 64M; 0: no staging, copies go
 *                            straight from and to pageable memory)
 *   vm_page = SIZE|whole     page of virtual memory (vm_map): each is
 *                            one physical allocation; a power of two, at
 *                            least the driver's granularity (2M on
 *                            current GPUs). Larger pages cost fewer
 *                            driver calls per byte mapped and round more.
 *                            whole (the default): pages of the driver's
 *                            granularity, and each vm_map call one
 *                            physical allocation of its whole size;
 *                            vm_unmap then takes whole earlier vm_map
 *                            calls only (the pool, told so by the figure
 *                            WAFER_STORAGE_FIGURE_WHOLE_UNMAPS, keeps to
 *                            that).
 *   cublas = auto|no|PATH    offer cuBLAS as the matmul variant "cublas"
 *                            when it loads (auto, the default), never, or
 *                            from this file
 *   nvrtc = auto|no|PATH     compile programs in CUDA C with NVRTC when it
 *                            loads (auto, the default), never (programs
 *                            in PTX and CUBIN only), or from this file
 *   nccl = auto|no|PATH      collectives through NCCL (libnccl.so.2) when
 *                            it loads, at the first communicator (auto,
 *                            the default), never, or from this file */
#include "build-config.h"

#include <dlfcn.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plugins/cuda/cublas.h"
#include "plugins/cuda/cuda_plugin.h"
#include "plugins/cuda/nvrtc.h"

/*===----------------------------------------------------------------------===
 * Shared helpers
 *===----------------------------------------------------------------------===*/

wafer_status cuda_status(CUresult result)
{
	switch (result) {
	case CUDA_SUCCESS:
		return WAFER_OK;
	case CUDA_ERROR_OUT_OF_MEMORY:
		return WAFER_ERROR_OUT_OF_MEMORY;
	case CUDA_ERROR_NOT_SUPPORTED:
		return WAFER_ERROR_NOT_SUPPORTED;
	case CUDA_ERROR_NOT_FOUND:
		return WAFER_ERROR_NOT_FOUND;
	case CUDA_ERROR_INVALID_VALUE:
		return WAFER_ERROR_INVALID_ARGUMENT;
	default:
		return WAFER_ERROR_DEVICE;
	}
}

wafer_status cuda_fail(const struct cuda_state *state, CUresult result,
		       const char *format, ...)
{
	char what[512], text[256];
	va_list ap;

	va_start(ap, format);
	vsnprintf(what, sizeof what, format, ap);
	va_end(ap);
	state->host->set_error(
		"cuda: %s: %s", what,
		cuda_result_text(&state->driver, result, text, sizeof text));
	return cuda_status(result);
}

/* Asks first: on most calls the context is already current on the
 * thread, and reading the driver's thread-local costs less than setting
 * it (wafer-bench queues, events_raw_context). Never cached here: the
 * caller may make another context current between two calls. */
wafer_status cuda_enter(const struct cuda_device *device)
{
	CUcontext now = NULL;
	CUresult result = device->drv->cuCtxGetCurrent(&now);

	if (result == CUDA_SUCCESS && now == device->ctx)
		return WAFER_OK;
	result = device->drv->cuCtxSetCurrent(device->ctx);

	if (result == CUDA_SUCCESS)
		return WAFER_OK;
	return cuda_fail(device->state, result, "cuCtxSetCurrent (cuda:%" PRIu32
			 ")", device->index);
}

/* The name of the first of |symbols| |handle| lacks, or NULL when it has
 * them all (each stored into |table| at its offset). */
static const char *resolve(void *handle, const struct cuda_symbol *symbols,
			   size_t count, void *table)
{
	for (size_t i = 0; i < count; i++) {
		void *fn = dlsym(handle, symbols[i].name);
		if (!fn)
			return symbols[i].name;
		memcpy((char *)table + symbols[i].offset, &fn, sizeof fn);
	}
	return NULL;
}

static int library_try(const struct wafer_host_services *host,
		       const char *what, const char *file,
		       const struct cuda_symbol *symbols, size_t symbol_count,
		       void *table, struct cuda_library *out)
{
	const char *missing;
	void *handle;

	dlerror();
	handle = dlopen(file, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
	if (!handle) {
		const char *error = dlerror();
		host->log(host, WAFER_LOG_DEBUG, "%s: %s", what,
			  error ? error : file);
		return -1;
	}
	missing = resolve(handle, symbols, symbol_count, table);
	if (missing) {
		host->log(host, WAFER_LOG_WARN, "%s: %s has no %s; not used",
			  what, file, missing);
		dlclose(handle);
		return -1;
	}
	out->handle = handle;
	snprintf(out->path, sizeof out->path, "%s", file);
	return 0;
}

int cuda_library_open(const struct wafer_host_services *host, const char *what,
		      const char *configured, const char *const *names,
		      size_t count, const struct cuda_symbol *symbols,
		      size_t symbol_count, void *table,
		      struct cuda_library *out)
{
	memset(out, 0, sizeof *out);
	if (configured)
		return library_try(host, what, configured, symbols,
				   symbol_count, table, out);
	for (size_t i = 0; i < count; i++)
		if (library_try(host, what, names[i], symbols, symbol_count,
				table, out) == 0)
			return 0;
	return -1;
}

void cuda_library_close(struct cuda_library *library)
{
	/* RTLD_NODELETE: the mapping stays for the next instance. */
	if (library->handle)
		dlclose(library->handle);
	memset(library, 0, sizeof *library);
}

void *cuda_library_get(const struct wafer_host_services *host,
		       struct cuda_lazy_library *lazy,
		       const struct cuda_library_kind *kind,
		       const char *configured)
{
	struct cuda_library *table;
	char offers[256];

	pthread_mutex_lock(&lazy->lock);
	if (lazy->tried) {
		table = lazy->table;
		pthread_mutex_unlock(&lazy->lock);
		return table;
	}
	lazy->tried = 1;
	snprintf(offers, sizeof offers, "%s", kind->offers);
	table = calloc(1, kind->table_size);
	if (table && cuda_library_open(host, kind->what, configured,
				       kind->names, kind->name_count,
				       kind->symbols, kind->symbol_count, table,
				       table) != 0) {
		free(table);
		table = NULL;
	}
	if (table && kind->ready &&
	    kind->ready(host, table, offers, sizeof offers) != 0) {
		cuda_library_close(table);
		free(table);
		table = NULL;
	}
	lazy->table = table;
	pthread_mutex_unlock(&lazy->lock);

	if (table)
		host->log(host, WAFER_LOG_INFO, "%s from %s: %s", kind->what,
			  table->path, offers);
	else
		host->log(host, WAFER_LOG_INFO, "%s not found (%s): %s",
			  kind->what, configured ? configured : kind->searched,
			  kind->without);
	return table;
}

void cuda_library_unload(struct cuda_lazy_library *lazy)
{
	if (lazy->table) {
		cuda_library_close(lazy->table);
		free(lazy->table);
	}
	lazy->table = NULL;
	lazy->tried = 0;
}

/*===----------------------------------------------------------------------===
 * Options
 *===----------------------------------------------------------------------===*/

static int is_power_of_two(uint64_t n)
{
	return n && (n & (n - 1)) == 0;
}

static wafer_status bad_value(const struct cuda_state *state,
			      const char *origin, const char *key,
			      const char *expected, const char *value)
{
	state->host->set_error("%s: [cuda] %s: expected %s, got '%s'", origin,
			       key, expected, value ? value : "");
	return WAFER_ERROR_CONFIG;
}

/* Replaces *|slot| with a copy of |value|. */
static wafer_status set_string(struct cuda_state *state, char **slot,
			       const char *value)
{
	char *copy = strdup(value);

	if (!copy) {
		state->host->set_error("cuda: out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	free(*slot);
	*slot = copy;
	return WAFER_OK;
}

/* auto|no|PATH of a library loaded with dlopen (cublas, nvrtc). */
static wafer_status library_option(struct cuda_state *state,
				   const char *origin, const char *key,
				   const char *value, int *use, char **path)
{
	if (strcasecmp(value, "auto") == 0 || strcasecmp(value, "yes") == 0) {
		*use = 1;
		free(*path);
		*path = NULL;
		return WAFER_OK;
	}
	if (strcasecmp(value, "no") == 0 || strcasecmp(value, "off") == 0) {
		*use = 0;
		return WAFER_OK;
	}
	if (value[0] != '/')
		return bad_value(state, origin, key,
				 "auto, no or an absolute path", value);
	*use = 1;
	return set_string(state, path, value);
}

/* Applies one `key = value` line of [cuda]. Unknown keys are logged and
 * ignored (a configuration written for a newer plugin still loads); a bad
 * value fails init, naming where it was set. */
static wafer_status apply_option(void *state_arg,
				 const struct wafer_plugin_option *option)
{
	struct cuda_state *state = state_arg;
	struct cuda_options *o = &state->options;
	const struct wafer_host_services *host = state->host;
	const char *origin;
	const char *key, *value;
	uint64_t n;

	if (wafer_plugin_option_check(host, "cuda", option, &origin) != WAFER_OK)
		return WAFER_ERROR_INVALID_ARGUMENT;
	key = option->key;
	value = option->value ? option->value : "";

	if (strcmp(key, "driver_library") == 0) {
		if (!*value)
			return bad_value(state, origin, key, "a file name",
					 value);
		return set_string(state, &o->driver_library, value);
	}
	if (strcmp(key, "release_threshold") == 0) {
		if (strcasecmp(value, "max") == 0) {
			o->release_threshold = UINT64_MAX;
			return WAFER_OK;
		}
		if (wafer_plugin_parse_size(value, &o->release_threshold) != 0)
			return bad_value(state, origin, key,
					 "a size (1G, 512M, 0) or max", value);
		return WAFER_OK;
	}
	if (strcmp(key, "staging_chunk") == 0) {
		if (wafer_plugin_parse_size(value, &n) != 0 ||
		    !is_power_of_two(n) || n < CUDA_STAGING_MIN ||
		    n > CUDA_STAGING_MIN << (CUDA_STAGING_CLASSES - 1))
			return bad_value(state, origin, key,
					 "a power of two from 64K to 2G",
					 value);
		o->staging_chunk = (size_t)n;
		return WAFER_OK;
	}
	if (strcmp(key, "staging_limit") == 0) {
		if (wafer_plugin_parse_size(value, &n) != 0 || n > SIZE_MAX)
			return bad_value(state, origin, key,
					 "a size (64M, 1G, 0)", value);
		o->staging_limit = (size_t)n;
		return WAFER_OK;
	}
	if (strcmp(key, "vm_page") == 0) {
		o->vm_whole = strcmp(value, "whole") == 0;
		if (o->vm_whole) {
			o->vm_page = 0;
			return WAFER_OK;
		}
		if (wafer_plugin_parse_size(value, &n) != 0 ||
		    !is_power_of_two(n) || n > (uint64_t)1 << 40)
			return bad_value(state, origin, key,
					 "a power of two (2M, 8M) or whole",
					 value);
		o->vm_page = (size_t)n;
		return WAFER_OK;
	}
	if (strcmp(key, "cublas") == 0)
		return library_option(state, origin, key, value, &o->cublas,
				      &o->cublas_library);
	if (strcmp(key, "nvrtc") == 0)
		return library_option(state, origin, key, value, &o->nvrtc,
				      &o->nvrtc_library);
	if (strcmp(key, "nccl") == 0)
		return library_option(state, origin, key, value, &o->nccl,
				      &o->nccl_library);
	host->log(host, WAFER_LOG_WARN,
		  "%s: [cuda] unknown option '%s' ignored", origin, key);
	return WAFER_OK;
}

/* Checks that go across options, once all are read. */
static wafer_status check_options(struct cuda_state *state)
{
	struct cuda_options *o = &state->options;

	if (o->staging_limit && o->staging_limit < o->staging_chunk) {
		state->host->set_error(
			"cuda: [cuda] staging_limit (%zu bytes) is smaller "
			"than staging_chunk (%zu bytes); make it at least as "
			"large, or 0 for no staging",
			o->staging_limit, o->staging_chunk);
		return WAFER_ERROR_CONFIG;
	}
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Lifetime
 *===----------------------------------------------------------------------===*/

/* Lists the devices the kernels run on. Returns 0, or -1 with the reason
 * in state->unavailable. */
static int list_devices(struct cuda_state *state)
{
	const struct cuda_driver *drv = &state->driver;
	char text[256], skipped[256] = "";
	CUresult result;
	int count = 0;

	result = drv->cuDeviceGetCount(&count);
	if (result != CUDA_SUCCESS) {
		snprintf(state->unavailable, sizeof state->unavailable,
			 "cuDeviceGetCount: %s",
			 cuda_result_text(drv, result, text, sizeof text));
		return -1;
	}
	if (count <= 0) {
		snprintf(state->unavailable, sizeof state->unavailable,
			 "the driver sees no GPU (cuDeviceGetCount: 0)");
		return -1;
	}
	state->ordinals = calloc((size_t)count, sizeof *state->ordinals);
	if (!state->ordinals) {
		snprintf(state->unavailable, sizeof state->unavailable,
			 "out of host memory");
		return -1;
	}
	for (int i = 0; i < count; i++) {
		CUdevice dev;
		int major = 0, minor = 0;

		if (drv->cuDeviceGet(&dev, i) != CUDA_SUCCESS ||
		    drv->cuDeviceGetAttribute(
			    &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
			    dev) != CUDA_SUCCESS ||
		    drv->cuDeviceGetAttribute(
			    &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
			    dev) != CUDA_SUCCESS)
			continue;
		if (major * 10 + minor >= CUDA_MIN_ARCH) {
			state->ordinals[state->device_count++] = i;
			continue;
		}
		snprintf(skipped, sizeof skipped,
			 "GPU %d has compute capability %d.%d", i, major,
			 minor);
		state->host->log(state->host, WAFER_LOG_INFO,
				 "GPU %d (compute capability %d.%d) is older "
				 "than the kernels' %d.%d: not offered",
				 i, major, minor, CUDA_MIN_ARCH / 10,
				 CUDA_MIN_ARCH % 10);
	}
	if (state->device_count == 0) {
		snprintf(state->unavailable, sizeof state->unavailable,
			 "no GPU of compute capability %d.%d or later (%s)",
			 CUDA_MIN_ARCH / 10, CUDA_MIN_ARCH % 10,
			 skipped[0] ? skipped : "none usable");
		return -1;
	}
	return 0;
}

static void free_state(struct cuda_state *state)
{
	cuda_library_unload(&state->cublas);
	cuda_library_unload(&state->nvrtc);
	cuda_library_unload(&state->nccl);
	if (state->driver.library)
		cuda_driver_unload(&state->driver);
	pthread_mutex_destroy(&state->cublas.lock);
	pthread_mutex_destroy(&state->nvrtc.lock);
	pthread_mutex_destroy(&state->nccl.lock);
	pthread_mutex_destroy(&state->peer_lock);
	free(state->ordinals);
	free(state->options.driver_library);
	free(state->options.cublas_library);
	free(state->options.nvrtc_library);
	free(state->options.nccl_library);
	free(state);
}

static wafer_status cuda_init(const struct wafer_plugin_init_args *args,
			      void **out_state)
{
	struct cuda_state *state;
	wafer_status status;

	*out_state = NULL;
	state = wafer_plugin_init_state(args, "cuda", sizeof *state, &status);
	if (!state)
		return status;
	state->host = args->host;
	pthread_mutex_init(&state->cublas.lock, NULL);
	pthread_mutex_init(&state->nvrtc.lock, NULL);
	pthread_mutex_init(&state->nccl.lock, NULL);
	pthread_mutex_init(&state->peer_lock, NULL);
	state->options = (struct cuda_options){
		.release_threshold = UINT64_MAX,
		.staging_chunk = (size_t)4 << 20,
		.staging_limit = (size_t)64 << 20,
		/* One physical allocation per vm_map call: on an H200 the
		 * time goes with physical allocations, not bytes (README). */
		.vm_whole = 1,
		.cublas = 1,
		.nvrtc = 1,
		.nccl = 1,
	};
	status = wafer_plugin_apply_options(args, apply_option, state);
	if (status != WAFER_OK) {
		free_state(state);
		return status;
	}
	status = check_options(state);
	if (status != WAFER_OK) {
		free_state(state);
		return status;
	}

	/* From here on, nothing fails init: a missing driver or GPU is what
	 * device_count reports. */
	if (cuda_driver_load(&state->driver, state->options.driver_library,
			     state->unavailable,
			     sizeof state->unavailable) == 0 &&
	    list_devices(state) == 0)
		state->unavailable[0] = '\0';
	if (state->unavailable[0])
		state->host->log(state->host, WAFER_LOG_INFO, "no devices: %s",
				 state->unavailable);
	else
		state->host->log(state->host, WAFER_LOG_INFO,
				 "driver API %d, %" PRIu32 " device%s",
				 state->driver.version, state->device_count,
				 state->device_count == 1 ? "" : "s");
	*out_state = state;
	return WAFER_OK;
}

static void cuda_shutdown(void *state)
{
	free_state(state);
}

/*===----------------------------------------------------------------------===
 * Devices
 *===----------------------------------------------------------------------===*/

static wafer_status cuda_device_count(void *state, uint32_t *out_count)
{
	struct cuda_state *st = state;

	*out_count = st->unavailable[0] ? 0 : st->device_count;
	if (!st->unavailable[0])
		return WAFER_OK;
	st->host->set_error("%s", st->unavailable);
	return WAFER_ERROR_NO_DEVICE;
}

static wafer_status no_such_device(const struct cuda_state *state,
				   uint32_t index)
{
	return wafer_plugin_device_index_check(
		state->host, "cuda", index,
		state->unavailable[0] ? 0 : state->device_count);
}

/* What info needs of a device, read without a context. */
struct device_facts {
	CUdevice cu;
	char name[WAFER_DEVICE_NAME_MAX];
	size_t memory;
	int arch, sm_count, vmm, pools;
	size_t granularity;
};

static int attribute(const struct cuda_driver *drv, CUdevice dev,
		     CUdevice_attribute which)
{
	int value = 0;

	if (drv->cuDeviceGetAttribute(&value, which, dev) != CUDA_SUCCESS)
		return 0;
	return value;
}

/* The facts of device |index|, or no_such_device's failure. */
static wafer_status read_facts(const struct cuda_state *state, uint32_t index,
			       struct device_facts *f)
{
	const struct cuda_driver *drv = &state->driver;
	int ordinal;
	CUresult result;

	if (state->unavailable[0] || index >= state->device_count)
		return no_such_device(state, index);
	ordinal = state->ordinals[index];
	memset(f, 0, sizeof *f);
	result = drv->cuDeviceGet(&f->cu, ordinal);
	if (result == CUDA_SUCCESS)
		result = drv->cuDeviceGetName(f->name, sizeof f->name, f->cu);
	if (result == CUDA_SUCCESS)
		result = drv->cuDeviceTotalMem(&f->memory, f->cu);
	if (result != CUDA_SUCCESS)
		return cuda_fail(state, result, "GPU %d (cuda:%" PRIu32 ")",
				 ordinal, index);
	f->name[sizeof f->name - 1] = '\0';
	f->arch = attribute(drv, f->cu,
			    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR) * 10 +
		  attribute(drv, f->cu,
			    CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
	f->sm_count =
		attribute(drv, f->cu, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
	f->vmm = attribute(
		drv, f->cu,
		CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED);
	f->pools = attribute(drv, f->cu,
			     CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED);
	if (f->vmm) {
		CUmemAllocationProp prop = {
			.type = CU_MEM_ALLOCATION_TYPE_PINNED,
			.location = {.type = CU_MEM_LOCATION_TYPE_DEVICE,
				     .id = ordinal},
		};
		if (drv->cuMemGetAllocationGranularity(
			    &f->granularity, &prop,
			    CU_MEM_ALLOC_GRANULARITY_MINIMUM) != CUDA_SUCCESS ||
		    !is_power_of_two(f->granularity))
			f->granularity = 0;
		/* A power of two at least the granularity is a multiple. */
		if (f->granularity &&
		    state->options.vm_page > f->granularity)
			f->granularity = state->options.vm_page;
	}
	return WAFER_OK;
}

static wafer_status cuda_device_info(void *state, uint32_t index,
				     struct wafer_device_info *out)
{
	const struct cuda_state *st = state;
	struct wafer_device_info info = {
		.struct_size = out->struct_size,
		.capabilities = WAFER_CAP_F16 | WAFER_CAP_BF16 | WAFER_CAP_F64,
		.alloc_alignment = CUDA_ALIGNMENT,
	};
	struct device_facts f;
	wafer_status status;

	status = read_facts(st, index, &f);
	if (status != WAFER_OK)
		return status;
	snprintf(info.name, sizeof info.name, "%.90s (compute %d.%d, %d SMs)",
		 f.name, f.arch / 10, f.arch % 10, f.sm_count);
	info.memory_bytes = f.memory;
	info.vm_granularity = f.granularity;
	info.compute_units = (uint32_t)f.sm_count;

	/* Hand over the part of the struct the core knows (plugin.h). */
	return wafer_plugin_device_info_copy(out, &info);
}

/* The device's default stream-ordered pool, with the configured release
 * threshold. Without one, alloc_async is not offered on this device. */
static void open_pool(struct cuda_device *dev, int pools_supported)
{
	const struct cuda_driver *drv = dev->drv;
	cuuint64_t threshold = dev->state->options.release_threshold;
	char text[256];
	CUresult result;

	dev->pool = NULL;
	if (!pools_supported)
		return;
	result = drv->cuDeviceGetDefaultMemPool(&dev->pool, dev->cu);
	if (result == CUDA_SUCCESS)
		result = drv->cuMemPoolSetAttribute(
			dev->pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
			&threshold);
	if (result != CUDA_SUCCESS) {
		dev->host->log(dev->host, WAFER_LOG_WARN,
			       "cuda:%" PRIu32 ": default memory pool: %s; "
			       "stream-ordered allocation not offered",
			       dev->index,
			       cuda_result_text(drv, result, text,
						sizeof text));
		dev->pool = NULL;
	}
}

static wafer_status cuda_device_open(void *state, uint32_t index,
				     void **out_device)
{
	struct cuda_state *st = state;
	struct cuda_device *dev;
	struct device_facts f;
	wafer_status status;
	CUresult result;

	*out_device = NULL;
	status = read_facts(st, index, &f);
	if (status != WAFER_OK)
		return status;
	dev = wafer_plugin_calloc(st->host, sizeof *dev, "cuda: out of host memory");
	if (!dev)
		return WAFER_ERROR_OUT_OF_MEMORY;
	dev->state = st;
	dev->drv = &st->driver;
	dev->host = st->host;
	dev->index = index;
	dev->ordinal = st->ordinals[index];
	dev->cu = f.cu;
	dev->arch = f.arch;
	dev->sm_count = f.sm_count > 0 ? f.sm_count : 1;
	dev->smem_optin = attribute(
		dev->drv, f.cu, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
	dev->vm_granularity = f.granularity;
	dev->vm_whole = st->options.vm_whole;

	/* The primary context is shared with the CUDA runtime and anyone
	 * else in the process. It is retained here and never released: a
	 * context costs a long time to create and much device memory, and
	 * releasing the last reference would destroy it each time the last
	 * client closes. It lives, as the runtime's would, until exit. */
	result = dev->drv->cuDevicePrimaryCtxRetain(&dev->ctx, dev->cu);
	if (result != CUDA_SUCCESS) {
		status = cuda_fail(st, result,
				   "cuDevicePrimaryCtxRetain (GPU %d)",
				   dev->ordinal);
		free(dev);
		return status;
	}
	status = cuda_enter(dev);
	if (status == WAFER_OK)
		status = cuda_staging_open(dev);
	if (status != WAFER_OK) {
		free(dev);
		return status;
	}
	open_pool(dev, f.pools);
	cuda_storage_open(dev);
	if (st->options.cublas)
		dev->cublas = cuda_cublas_get(st);
	status = cuda_kernels_open(dev);
	if (status != WAFER_OK) {
		cuda_storage_close(dev);
		cuda_staging_close(dev);
		free(dev);
		return status;
	}
	*out_device = dev;
	return WAFER_OK;
}

static void cuda_device_close(void *device)
{
	struct cuda_device *dev = device;

	/* Nothing to report to: a failure here only leaks. */
	cuda_enter(dev);
	cuda_kernels_close(dev);
	cuda_storage_close(dev);
	cuda_staging_close(dev);
	free(dev);
}

static wafer_status cuda_device_kernels(void *device,
					const struct wafer_kernel **out_kernels,
					size_t *out_count)
{
	struct cuda_device *dev = device;

	*out_kernels = dev->table;
	*out_count = dev->table_count;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The descriptor and the entry point
 *===----------------------------------------------------------------------===*/

static const struct wafer_plugin cuda_plugin = {
	WAFER_PLUGIN_DESCRIPTOR(cuda),
	.name = "cuda",
	.version = PACKAGE_VERSION,
	.description = "NVIDIA GPUs through the CUDA driver API",
};

WAFER_PLUGIN_QUERY_RETURNS(cuda_plugin)
