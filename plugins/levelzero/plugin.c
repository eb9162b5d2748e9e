/* wafer — SPDX-License-Identifier: MIT
 *
 * plugin.c: the Level Zero plugin's descriptor and its one exported
 * symbol, wafer_plugin_query; the plugin's lifetime (init finds the
 * drivers and their GPUs through the loader) and its devices (count, info,
 * open, close, kernels). Start reading at the descriptor at the bottom.
 *
 * Options, in the [levelzero] section of wafer.conf(5):
 *   immediate = auto | no   auto (default): a queue is an immediate
 *                           command list where the driver creates one;
 *                           no: always a command queue plus a command
 *                           list, executed at every wait
 *   staging = BYTES         per-queue host staging area for copies
 *                           (K, M, G suffixes; default 4M; 0: every copy
 *                           gets a host block of its own)
 *
 * Only GPU devices are listed: the kernels are OpenCL C compiled to SPIR-V,
 * which Level Zero's other device types (NPUs) do not run. */
#include "build-config.h"

#include <stdarg.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plugins/levelzero/kernels.h"
#include "plugins/levelzero/lz_plugin.h"

const struct wafer_host_services *lz_host(const struct lz_device *device)
{
	return device->state->host;
}

/*===----------------------------------------------------------------------===
 * Options
 *===----------------------------------------------------------------------===*/

/* Applies one `key = value` line of [levelzero]. Unknown keys are logged
 * and ignored, so a configuration written for a newer plugin still loads;
 * a bad value fails init, naming where it was set. */
static wafer_status apply_option(void *state_arg,
				 const struct wafer_plugin_option *option)
{
	struct lz_state *state = state_arg;
	const struct wafer_host_services *host = state->host;
	const char *origin;
	const char *value;

	if (wafer_plugin_option_check(host, "levelzero", option, &origin) != WAFER_OK)
		return WAFER_ERROR_INVALID_ARGUMENT;
	value = option->value ? option->value : "";

	if (strcmp(option->key, "immediate") == 0) {
		if (strcmp(value, "auto") == 0) {
			state->immediate = LZ_IMMEDIATE_AUTO;
			return WAFER_OK;
		}
		if (strcmp(value, "no") == 0) {
			state->immediate = LZ_IMMEDIATE_NO;
			return WAFER_OK;
		}
		host->set_error("%s: [levelzero] immediate: expected auto or "
				"no, got '%s'",
				origin, value);
		return WAFER_ERROR_CONFIG;
	}
	if (strcmp(option->key, "staging") == 0) {
		uint64_t bytes;

		if (wafer_plugin_parse_size(value, &bytes) == 0 &&
		    bytes <= SIZE_MAX) {
			state->staging = (size_t)bytes;
			return WAFER_OK;
		}
		host->set_error("%s: [levelzero] staging: expected a byte "
				"count (4M, 65536), got '%s'",
				origin, value);
		return WAFER_ERROR_CONFIG;
	}
	host->log(host, WAFER_LOG_WARN,
		  "%s: [levelzero] unknown option '%s' ignored", origin,
		  option->key);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Finding the devices
 *===----------------------------------------------------------------------===*/

/* Gives the reason there are no devices, for device_count. */
static void no_devices(struct lz_state *state, const char *format, ...)
	__attribute__((format(printf, 2, 3)));
static void no_devices(struct lz_state *state, const char *format, ...)
{
	va_list ap;

	va_start(ap, format);
	vsnprintf(state->no_device_reason, sizeof state->no_device_reason,
		  format, ap);
	va_end(ap);
}

/* The first command queue group that runs kernels, or -1. */
static int compute_ordinal(ze_device_handle_t device)
{
	ze_command_queue_group_properties_t *groups;
	uint32_t count = 0;
	int ordinal = -1;

	if (zeDeviceGetCommandQueueGroupProperties(device, &count, NULL) !=
		    ZE_RESULT_SUCCESS ||
	    count == 0)
		return -1;
	groups = calloc(count, sizeof *groups);
	if (!groups)
		return -1;
	for (uint32_t i = 0; i < count; i++)
		groups[i].stype = ZE_STRUCTURE_TYPE_COMMAND_QUEUE_GROUP_PROPERTIES;
	if (zeDeviceGetCommandQueueGroupProperties(device, &count, groups) ==
	    ZE_RESULT_SUCCESS) {
		for (uint32_t i = 0; i < count && ordinal < 0; i++)
			if (groups[i].flags &
			    ZE_COMMAND_QUEUE_GROUP_PROPERTY_FLAG_COMPUTE)
				ordinal = (int)i;
	}
	free(groups);
	return ordinal;
}

/* Fills everything device_info reports about |slot|. Queries that fail
 * leave zeros (an unknown memory size, no fp16) rather than hiding the
 * device; only the properties themselves are required. */
static ze_result_t describe(struct lz_device_slot *slot)
{
	ze_device_properties_t props = {
		/* 1.2 reports the timer in ticks per second, not whole ns. */
		.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES_1_2,
	};
	ze_device_compute_properties_t compute = {
		.stype = ZE_STRUCTURE_TYPE_DEVICE_COMPUTE_PROPERTIES,
	};
	ze_device_module_properties_t module = {
		.stype = ZE_STRUCTURE_TYPE_DEVICE_MODULE_PROPERTIES,
	};
	ze_device_memory_properties_t *memory;
	uint32_t memory_count = 0;
	ze_result_t r;

	r = zeDeviceGetProperties(slot->device, &props);
	if (r != ZE_RESULT_SUCCESS)
		return r;
	snprintf(slot->name, sizeof slot->name, "%.*s",
		 (int)(sizeof slot->name - 1), props.name);
	slot->compute_units = props.numSlices * props.numSubslicesPerSlice *
			      props.numEUsPerSubslice;
	slot->timer_frequency = props.timerResolution;
	slot->timestamp_bits = props.kernelTimestampValidBits;
	if (props.flags & ZE_DEVICE_PROPERTY_FLAG_INTEGRATED)
		slot->capabilities |= WAFER_CAP_HOST_MEMORY;

	r = zeDeviceGetComputeProperties(slot->device, &compute);
	if (r != ZE_RESULT_SUCCESS)
		return r;
	slot->limits = (struct lz_limits){
		.max_group_size = {compute.maxGroupSizeX, compute.maxGroupSizeY,
				   compute.maxGroupSizeZ},
		.max_total_group_size = compute.maxTotalGroupSize,
		.max_group_count = {compute.maxGroupCountX,
				    compute.maxGroupCountY,
				    compute.maxGroupCountZ},
	};

	if (zeDeviceGetModuleProperties(slot->device, &module) ==
	    ZE_RESULT_SUCCESS) {
		if (module.flags & ZE_DEVICE_MODULE_FLAG_FP16)
			slot->capabilities |= WAFER_CAP_F16;
		if (module.flags & ZE_DEVICE_MODULE_FLAG_FP64)
			slot->capabilities |= WAFER_CAP_F64;
	}

	if (zeDeviceGetMemoryProperties(slot->device, &memory_count, NULL) ==
		    ZE_RESULT_SUCCESS &&
	    memory_count > 0 &&
	    (memory = calloc(memory_count, sizeof *memory)) != NULL) {
		for (uint32_t i = 0; i < memory_count; i++)
			memory[i].stype =
				ZE_STRUCTURE_TYPE_DEVICE_MEMORY_PROPERTIES;
		if (zeDeviceGetMemoryProperties(slot->device, &memory_count,
						memory) == ZE_RESULT_SUCCESS)
			for (uint32_t i = 0; i < memory_count; i++)
				slot->memory_bytes += memory[i].totalSize;
		free(memory);
	}

	/* The page size of a 2 MiB request: the pool strategy maps whole
	 * multiples of it. Drivers without virtual memory say so here. */
	if (zeVirtualMemQueryPageSize(slot->context, slot->device,
				      (size_t)2 << 20,
				      &slot->vm_granularity) != ZE_RESULT_SUCCESS ||
	    slot->vm_granularity % LZ_ALIGNMENT)
		slot->vm_granularity = 0;
	return ZE_RESULT_SUCCESS;
}

/* Adds the GPUs of |driver| to state->devices, with |context|. */
static ze_result_t add_devices(struct lz_state *state,
			       ze_driver_handle_t driver,
			       ze_context_handle_t context)
{
	ze_device_handle_t *handles;
	uint32_t count = 0;
	ze_result_t r;

	r = zeDeviceGet(driver, &count, NULL);
	if (r != ZE_RESULT_SUCCESS || count == 0)
		return r;
	handles = calloc(count, sizeof *handles);
	struct lz_device_slot *grown =
		realloc(state->devices,
			(state->device_count + count) * sizeof *grown);
	if (!handles || !grown) {
		free(handles);
		if (grown)
			state->devices = grown;
		return ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
	}
	state->devices = grown;
	r = zeDeviceGet(driver, &count, handles);
	for (uint32_t i = 0; r == ZE_RESULT_SUCCESS && i < count; i++) {
		ze_device_properties_t props = {
			.stype = ZE_STRUCTURE_TYPE_DEVICE_PROPERTIES,
		};
		struct lz_device_slot *slot =
			&state->devices[state->device_count];

		if (zeDeviceGetProperties(handles[i], &props) !=
			    ZE_RESULT_SUCCESS ||
		    props.type != ZE_DEVICE_TYPE_GPU) {
			state->host->log(state->host, WAFER_LOG_INFO,
					 "skipping device %" PRIu32
					 " of a driver: not a GPU",
					 i);
			continue;
		}
		*slot = (struct lz_device_slot){
			.driver = driver,
			.device = handles[i],
			.context = context,
		};
		ze_result_t dr = describe(slot);
		if (dr != ZE_RESULT_SUCCESS) {
			state->host->log(state->host, WAFER_LOG_WARN,
					 "skipping device '%s': properties: %s",
					 props.name, lz_result_name(dr));
			continue;
		}
		state->device_count++;
	}
	free(handles);
	return r;
}

/* Whether the loader's intercept layer is on: it is with more than one
 * driver, or when ZE_ENABLE_LOADER_INTERCEPT says so (1 or true). */
static bool loader_intercepts(uint32_t driver_count)
{
	const char *v;

#ifdef HAVE_SECURE_GETENV
	v = secure_getenv("ZE_ENABLE_LOADER_INTERCEPT");
#else
	v = getenv("ZE_ENABLE_LOADER_INTERCEPT");
#endif
	return driver_count > 1 ||
	       (v && (strcmp(v, "1") == 0 || strcmp(v, "true") == 0));
}

/* zeInit, then every driver's GPUs. Failing here is not an init failure:
 * it leaves zero devices and the reason for device_count. */
static void find_devices(struct lz_state *state)
{
	ze_driver_handle_t *drivers = NULL;
	uint32_t driver_count = 0;
	ze_result_t r;

	r = zeInit(ZE_INIT_FLAG_GPU_ONLY);
	if (r != ZE_RESULT_SUCCESS) {
		no_devices(state,
			   "zeInit: %s (no Level Zero GPU driver was found "
			   "or initialised; an Intel GPU needs the compute "
			   "runtime's libze_intel_gpu.so.1: Debian 13 package "
			   "libze-intel-gpu1, or intel-level-zero-gpu from "
			   "Intel's repository)",
			   lz_result_name(r));
		return;
	}
	r = zeDriverGet(&driver_count, NULL);
	if (r == ZE_RESULT_SUCCESS && driver_count > 0) {
		drivers = calloc(driver_count, sizeof *drivers);
		state->contexts = calloc(driver_count, sizeof *state->contexts);
		if (!drivers || !state->contexts)
			r = ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY;
		else
			r = zeDriverGet(&driver_count, drivers);
	}
	if (r != ZE_RESULT_SUCCESS || driver_count == 0) {
		no_devices(state, "zeDriverGet: %s",
			   r != ZE_RESULT_SUCCESS ? lz_result_name(r)
						  : "no drivers");
		free(drivers);
		return;
	}
	state->loader_intercepts = loader_intercepts(driver_count);
	for (uint32_t i = 0; i < driver_count; i++) {
		ze_context_desc_t desc = {.stype = ZE_STRUCTURE_TYPE_CONTEXT_DESC};
		ze_context_handle_t context;

		r = zeContextCreate(drivers[i], &desc, &context);
		if (r != ZE_RESULT_SUCCESS) {
			no_devices(state, "zeContextCreate: %s",
				   lz_result_name(r));
			continue;
		}
		uint32_t before = state->device_count;
		r = add_devices(state, drivers[i], context);
		if (r != ZE_RESULT_SUCCESS)
			no_devices(state, "zeDeviceGet: %s", lz_result_name(r));
		if (state->device_count == before) {
			zeContextDestroy(context);
			continue;
		}
		state->contexts[state->context_count++] = context;
	}
	free(drivers);
	if (state->device_count > 0)
		state->no_device_reason[0] = '\0';
	else if (!state->no_device_reason[0])
		no_devices(state, "the Level Zero drivers (%" PRIu32
			   ") have no GPU",
			   driver_count);
}

/*===----------------------------------------------------------------------===
 * Lifetime
 *===----------------------------------------------------------------------===*/

static void lz_shutdown(void *state)
{
	struct lz_state *st = state;

	for (uint32_t i = 0; i < st->context_count; i++)
		zeContextDestroy(st->contexts[i]);
	free(st->contexts);
	free(st->devices);
	free(st);
}

static wafer_status lz_init(const struct wafer_plugin_init_args *args,
			    void **out_state)
{
	struct lz_state *state;
	wafer_status status;

	*out_state = NULL;
	state = wafer_plugin_init_state(args, "levelzero", sizeof *state, &status);
	if (!state)
		return status;
	state->host = args->host;
	state->immediate = LZ_IMMEDIATE_AUTO;
	state->staging = LZ_DEFAULT_STAGING;
	status = wafer_plugin_apply_options(args, apply_option, state);
	if (status != WAFER_OK) {
		free(state);
		return status;
	}
	find_devices(state);
	*out_state = state;
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Devices
 *===----------------------------------------------------------------------===*/

static wafer_status lz_device_count(void *state, uint32_t *out_count)
{
	const struct lz_state *st = state;

	*out_count = st->device_count;
	if (st->device_count == 0) {
		st->host->set_error("levelzero: %s", st->no_device_reason);
		return WAFER_ERROR_NO_DEVICE;
	}
	return WAFER_OK;
}

static const struct lz_device_slot *slot_of(const struct lz_state *st,
					    uint32_t index)
{
	if (wafer_plugin_device_index_check(st->host, "levelzero", index,
					    st->device_count))
		return NULL;
	return &st->devices[index];
}

static wafer_status lz_device_info(void *state, uint32_t index,
				   struct wafer_device_info *out)
{
	const struct lz_state *st = state;
	const struct lz_device_slot *slot = slot_of(st, index);

	if (!slot)
		return WAFER_ERROR_NOT_FOUND;
	struct wafer_device_info info = {
		.struct_size = out->struct_size,
		.memory_bytes = slot->memory_bytes,
		.capabilities = slot->capabilities,
		.alloc_alignment = LZ_ALIGNMENT,
		.vm_granularity = slot->vm_granularity,
		.compute_units = slot->compute_units,
	};
	snprintf(info.name, sizeof info.name, "%s", slot->name);
	/* Our whole struct, cut to what the core knows (see plugins/cpu). */
	return wafer_plugin_device_info_copy(out, &info);
}

/* Build flags for the module. OpenCL's default lets f32 division and
 * sqrt be off by 2.5 and 3 ulp; plugin.h wants division exact (IEEE), so
 * the module asks for correctly rounded ones first, and does without if
 * the driver refuses the flag. */
#define LZ_BUILD_FLAGS "-cl-fp32-correctly-rounded-divide-sqrt"

/* Builds the embedded module for |dev| with |flags|; |*log| receives the
 * build log, or NULL (see lz_state.loader_intercepts). */
static ze_result_t create_module(struct lz_device *dev, const char *flags,
				 ze_module_build_log_handle_t *log)
{
	ze_module_desc_t desc = {
		.stype = ZE_STRUCTURE_TYPE_MODULE_DESC,
		.format = ZE_MODULE_FORMAT_IL_SPIRV,
		.inputSize = lz_spirv_module_size,
		.pInputModule = lz_spirv_module,
		.pBuildFlags = flags,
	};

	*log = NULL;
	return zeModuleCreate(dev->context, dev->device, &desc, &dev->module,
			      dev->state->loader_intercepts ? NULL : log);
}

/* Builds the embedded module for |dev|; on failure the build log goes
 * into the error text. */
static wafer_status build_module(struct lz_device *dev)
{
	const struct wafer_host_services *host = dev->state->host;
	ze_module_build_log_handle_t log = NULL;
	ze_result_t r;

	r = create_module(dev, LZ_BUILD_FLAGS, &log);
	if (r == ZE_RESULT_ERROR_MODULE_BUILD_FAILURE ||
	    r == ZE_RESULT_ERROR_INVALID_ARGUMENT) {
		if (log)
			zeModuleBuildLogDestroy(log);
		host->log(host, WAFER_LOG_WARN,
			  "'%s' does not build the kernels with %s (%s); "
			  "building without: f32 division and sqrt may be off "
			  "by up to 3 ulp",
			  dev->slot->name, LZ_BUILD_FLAGS, lz_result_name(r));
		r = create_module(dev, "", &log);
	}
	if (r == ZE_RESULT_SUCCESS) {
		if (log)
			zeModuleBuildLogDestroy(log);
		return WAFER_OK;
	}
	char text[1024] = "";
	if (log) {
		char *all = lz_build_log(log);
		snprintf(text, sizeof text, "%s", all ? all : "");
		free(all);
		zeModuleBuildLogDestroy(log);
	}
	dev->module = NULL;
	host->set_error("levelzero: zeModuleCreate (%zu bytes of SPIR-V) "
			"for '%s': %s%s%s",
			lz_spirv_module_size, dev->slot->name,
			lz_result_name(r),
			text[0] ? "; build log: "
			: dev->state->loader_intercepts
				? " (no build log: the Level Zero loader's "
				  "intercept layer cannot return one)"
				: "",
			text);
	return r == ZE_RESULT_ERROR_OUT_OF_HOST_MEMORY ||
			       r == ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY
		       ? WAFER_ERROR_OUT_OF_MEMORY
		       : WAFER_ERROR_DEVICE;
}

static wafer_status lz_device_open(void *state, uint32_t index,
				   void **out_device)
{
	const struct lz_state *st = state;
	const struct lz_device_slot *slot = slot_of(st, index);
	struct lz_device *dev;
	int ordinal;
	wafer_status status;

	*out_device = NULL;
	if (!slot)
		return WAFER_ERROR_NOT_FOUND;
	ordinal = compute_ordinal(slot->device);
	if (ordinal < 0) {
		st->host->set_error("levelzero: '%s' has no command queue "
				    "group for compute",
				    slot->name);
		return WAFER_ERROR_DEVICE;
	}
	dev = wafer_plugin_calloc(st->host, sizeof *dev,
				  "levelzero: out of host memory");
	if (!dev)
		return WAFER_ERROR_OUT_OF_MEMORY;
	dev->state = st;
	dev->slot = slot;
	dev->context = slot->context;
	dev->device = slot->device;
	dev->compute_ordinal = (uint32_t)ordinal;
	status = build_module(dev);
	if (status != WAFER_OK) {
		free(dev);
		return status;
	}
	lz_storage_open(dev);
	pthread_mutex_init(&dev->event_lock, NULL);
	*out_device = dev;
	return WAFER_OK;
}

static void lz_device_close(void *device)
{
	struct lz_device *dev = device;

	lz_storage_close(dev);
	lz_events_close(dev);
	pthread_mutex_destroy(&dev->event_lock);
	zeModuleDestroy(dev->module);
	free(dev);
}

static wafer_status lz_device_kernels(void *device,
				      const struct wafer_kernel **out_kernels,
				      size_t *out_count)
{
	*out_kernels = lz_kernel_table(out_count);
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * The descriptor and the entry point
 *===----------------------------------------------------------------------===*/

static const struct wafer_plugin lz_plugin = {
	WAFER_PLUGIN_DESCRIPTOR(lz),
	.name = "levelzero",
	.version = PACKAGE_VERSION,
	.description = "Intel GPUs through the oneAPI Level Zero loader, "
		       "SPIR-V kernels (kernels not yet verified on Intel "
		       "hardware)",
};

WAFER_PLUGIN_QUERY_RETURNS(lz_plugin)
