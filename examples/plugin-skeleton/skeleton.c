/* wafer plugin skeleton — SPDX-License-Identifier: MIT
 *
 * skeleton.c: the smallest complete wafer backend, to copy and grow into a
 * real one. It offers one device whose memory is host memory, a queue
 * that runs everything at once in the caller's thread, and the five
 * kernels of the standard catalogue that the client API's tests need
 * (fill, copy, relu, add and mul on f32). Every optional entry
 * (stream-ordered allocation, virtual memory, timers, programs) is left
 * NULL, which the core reads as "not supported"; host_alloc/host_free are
 * retired (ABI 1.1) and stay NULL in every plugin.
 *
 * To turn it into a plugin for real hardware, replace in order:
 *   1. skeleton_device_count/_info/_open: ask the vendor driver (dlopen it,
 *      so that the plugin still loads on a machine without the driver).
 *   2. skeleton_storage_*: device allocations and copies on a queue.
 *   3. skeleton_queue_* and skeleton_launch: the driver's streams and
 *      kernel launches; keep the first asynchronous error for sync.
 *   4. skeleton_kernels: your kernels, under the catalogue names.
 * wafer-plugin(7) explains each entry's contract.
 *
 * Build: see Makefile (pkg-config --cflags wafer; skeleton.map hides
 * every symbol but wafer_plugin_query). */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/plugin.h>

#define SKELETON_VERSION "0.1.0"
/* Allocation alignment: a power of two, at least 16; 64 is a cache line. */
#define SKELETON_ALIGNMENT 64
/* Memory the device reports when the config does not say (1 GiB). */
#define SKELETON_DEFAULT_MEMORY (UINT64_C(1) << 30)

/*===----------------------------------------------------------------------===
 * State: one per plugin instance (init/shutdown)
 *===----------------------------------------------------------------------===*/

struct skeleton_state {
	const struct wafer_host_services *host;
	/* [skeleton] memory = <bytes>: what device_info reports. */
	uint64_t memory_bytes;
};

/* An open device. The skeleton has one, so this only links back to the
 * state; a real plugin keeps its driver context here. */
struct skeleton_device {
	struct skeleton_state *state;
};

/* A queue. Work runs synchronously inside launch and copy_in, so there is
 * never an error left for sync; a plugin whose work runs later keeps the
 * first error of its queue here and hands it out in sync. */
struct skeleton_queue {
	wafer_status pending;
	char pending_detail[256];
};

/* Resources are host pointers widened to 64 bits. */
static void *ptr_of(wafer_resource resource)
{
	return (void *)(uintptr_t)resource;
}

/* Element |i| of an array of ABI structs the core built (options,
 * bindings). Step by the struct_size the core wrote into the first
 * element, not by our sizeof: a core built against a later minor version
 * has longer structs, and this keeps reading them right. */
static const void *abi_at(const void *array, size_t i)
{
	size_t stride = *(const size_t *)array; /* struct_size comes first */
	return (const char *)array + i * stride;
}

/*===----------------------------------------------------------------------===
 * Lifetime and devices
 *===----------------------------------------------------------------------===*/

/* Parses "[skeleton] memory = <bytes>" (a plain decimal number). */
static wafer_status parse_memory(const struct wafer_plugin_option *option,
				 uint64_t *out_bytes)
{
	char *end;
	errno = 0;
	unsigned long long value = strtoull(option->value, &end, 10);
	if (errno || end == option->value || *end || value == 0)
		return WAFER_ERROR_CONFIG;
	*out_bytes = value;
	return WAFER_OK;
}

static wafer_status skeleton_init(const struct wafer_plugin_init_args *args,
				  void **out_state)
{
	*out_state = NULL;
	struct skeleton_state *state = calloc(1, sizeof *state);
	if (!state) {
		args->host->set_error("skeleton: out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	state->host = args->host;
	state->memory_bytes = SKELETON_DEFAULT_MEMORY;

	/* Option strings live only until init returns: copy what you keep. */
	for (size_t i = 0; i < args->option_count; i++) {
		const struct wafer_plugin_option *o = abi_at(args->options, i);
		if (strcmp(o->key, "memory") == 0) {
			if (parse_memory(o, &state->memory_bytes) != WAFER_OK) {
				args->host->set_error(
					"%s: [skeleton] memory: expected a "
					"number of bytes, got '%s'",
					o->origin, o->value);
				free(state);
				return WAFER_ERROR_CONFIG;
			}
		} else {
			/* Unknown keys are worth a warning, not a failure:
			 * an older plugin must accept a newer config. */
			args->host->log(args->host, WAFER_LOG_WARN,
					"%s: unknown key [skeleton] %s",
					o->origin, o->key);
		}
	}
	*out_state = state;
	return WAFER_OK;
}

static void skeleton_shutdown(void *state)
{
	free(state);
}

static wafer_status skeleton_device_count(void *state, uint32_t *out_count)
{
	(void)state;
	*out_count = 1;
	return WAFER_OK;
}

static wafer_status skeleton_device_info(void *opaque, uint32_t index,
					 struct wafer_device_info *out)
{
	struct skeleton_state *state = opaque;
	if (index != 0) {
		state->host->set_error("skeleton: no device %" PRIu32, index);
		return WAFER_ERROR_NOT_FOUND;
	}
	/* The core set out->struct_size: write only what fits. Every field
	 * of ABI 1.0 is needed here, so check the last one. */
	if (!WAFER_STRUCT_HAS(out, struct wafer_device_info, compute_units)) {
		state->host->set_error("skeleton: device_info struct_size %zu "
				       "too small",
				       out->struct_size);
		return WAFER_ERROR_INVALID_ARGUMENT;
	}
	memset(out->name, 0, sizeof out->name);
	strncpy(out->name, "skeleton host memory", sizeof out->name - 1);
	out->memory_bytes = state->memory_bytes;
	out->capabilities = WAFER_CAP_HOST_MEMORY;
	out->alloc_alignment = SKELETON_ALIGNMENT;
	out->vm_granularity = 0; /* no virtual-memory entries */
	out->compute_units = 1;
	return WAFER_OK;
}

static wafer_status skeleton_device_open(void *opaque, uint32_t index,
					 void **out_device)
{
	struct skeleton_state *state = opaque;
	*out_device = NULL;
	if (index != 0) {
		state->host->set_error("skeleton: no device %" PRIu32, index);
		return WAFER_ERROR_NOT_FOUND;
	}
	struct skeleton_device *device = calloc(1, sizeof *device);
	if (!device) {
		state->host->set_error("skeleton: out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	device->state = state;
	*out_device = device;
	return WAFER_OK;
}

static void skeleton_device_close(void *device)
{
	free(device);
}

/*===----------------------------------------------------------------------===
 * Storage: host memory
 *===----------------------------------------------------------------------===*/

static wafer_status skeleton_storage_alloc(void *opaque, size_t size,
					   wafer_resource *out_resource)
{
	struct skeleton_device *device = opaque;
	*out_resource = 0;
	/* aligned_alloc wants a multiple of the alignment. */
	size_t rounded = (size + SKELETON_ALIGNMENT - 1) &
			 ~(size_t)(SKELETON_ALIGNMENT - 1);
	void *p = rounded >= size ? aligned_alloc(SKELETON_ALIGNMENT, rounded)
				  : NULL;
	if (!p) {
		device->state->host->set_error(
			"skeleton: aligned_alloc(%zu) failed", size);
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	*out_resource = (wafer_resource)(uintptr_t)p;
	return WAFER_OK;
}

static void skeleton_storage_free(void *device, wafer_resource resource)
{
	(void)device;
	free(ptr_of(resource));
}

/* Copies run at once, so |src| is free for the caller on return and the
 * bytes are in |dst| before copy_out returns. */
static wafer_status skeleton_storage_copy_in(void *device, void *queue,
					     wafer_resource dst,
					     size_t dst_offset, const void *src,
					     size_t size)
{
	(void)device;
	(void)queue;
	memcpy((char *)ptr_of(dst) + dst_offset, src, size);
	return WAFER_OK;
}

static wafer_status skeleton_storage_copy_out(void *device, void *queue,
					      wafer_resource src,
					      size_t src_offset, void *dst,
					      size_t size)
{
	(void)device;
	(void)queue;
	memcpy(dst, (const char *)ptr_of(src) + src_offset, size);
	return WAFER_OK;
}

static wafer_status skeleton_storage_copy(void *device, void *queue,
					  wafer_resource dst, size_t dst_offset,
					  wafer_resource src, size_t src_offset,
					  size_t size)
{
	(void)device;
	(void)queue;
	/* memmove: a copy within one resource may overlap. */
	memmove((char *)ptr_of(dst) + dst_offset,
		(const char *)ptr_of(src) + src_offset, size);
	return WAFER_OK;
}

static const struct wafer_storage_ops skeleton_storage_ops = {
	.struct_size = sizeof(struct wafer_storage_ops),
	.alloc = skeleton_storage_alloc,
	.free = skeleton_storage_free,
	.copy_in = skeleton_storage_copy_in,
	.copy_out = skeleton_storage_copy_out,
	.copy = skeleton_storage_copy,
	/* alloc_async, free_async, vm_*: NULL, not supported.
	 * host_alloc, host_free: NULL, retired (the core never calls them;
	 * pinned staging, where wanted, lives inside copy_in/copy_out).
	 * figure (ABI 1.2): NULL, no figures only the plugin knows.
	 * native, import, forget (ABI 1.3, with the server's queue_native
	 * and queue_wrap: one group of five): NULL, so interop is "not
	 * supported by skeleton". For host memory like this, native gives
	 * WAFER_NATIVE_HOST_POINTER and the address, import takes one
	 * (plugins/cpu/storage.c); a kind of buffer of your own is
	 * WAFER_NATIVE_VENDOR + n (wafer-plugin(7), INTEROP).
	 * copy_peer (ABI 1.4, alone): NULL, so the core stages a copy
	 * between two devices through the host. Order it on both queues
	 * with device-side waits, never by the host waiting for the other
	 * queue (wafer-plugin(7), SCALE-OUT).
	 * host_register, host_unregister, copy_in_registered,
	 * copy_out_registered (ABI 1.7, all four): NULL, so copies from
	 * host memory the caller registered are made with copy_in and
	 * copy_out like any other. A device that reads page-locked host
	 * memory itself offers them (wafer-plugin(7), STAGING;
	 * plugins/cuda/storage.c). */
};

/*===----------------------------------------------------------------------===
 * Kernels
 *===----------------------------------------------------------------------===*/

/* wafer_kernel.impl is plugin-private. Here it points at one of these, so
 * that no function pointer has to pass through a void pointer. */
struct skeleton_kernel_impl {
	wafer_status (*run)(struct skeleton_device *device,
			    const struct wafer_launch *launch);
};

/* The element count must fit each binding. The core has checked the
 * bindings themselves (count, alignment, each inside its handle and
 * resource; see wafer-plugin(7)), but not what the parameter block
 * reaches: a program may launch a catalogue kernel through wafer_execute
 * with any block. A count past a binding is WAFER_ERROR_OUT_OF_RANGE,
 * refused before anything runs. */
static wafer_status check_count(struct skeleton_device *device,
				const struct wafer_launch *launch,
				uint64_t count, size_t element_size)
{
	for (uint32_t i = 0; i < launch->binding_count; i++) {
		const struct wafer_binding *b = abi_at(launch->bindings, i);
		if (count > b->size / element_size) {
			device->state->host->set_error(
				"skeleton: %s: count %" PRIu64 " does not fit "
				"binding %" PRIu32 " of %zu bytes",
				launch->kernel->op, count, i, b->size);
			return WAFER_ERROR_OUT_OF_RANGE;
		}
	}
	return WAFER_OK;
}

/* Binding |i| of |launch| as an array of floats. */
static float *f32_at(const struct wafer_launch *launch, uint32_t i)
{
	const struct wafer_binding *b = abi_at(launch->bindings, i);
	return (float *)((char *)ptr_of(b->resource) + b->offset);
}

/* fill: bindings {out}; struct wafer_fill_params. */
static wafer_status skeleton_fill_f32(struct skeleton_device *device,
				      const struct wafer_launch *launch)
{
	struct wafer_fill_params p;
	memcpy(&p, launch->params, sizeof p);
	wafer_status status = check_count(device, launch, p.count, sizeof(float));
	if (status != WAFER_OK)
		return status;
	float *out = f32_at(launch, 0);
	float value = (float)p.value;
	for (uint64_t i = 0; i < p.count; i++)
		out[i] = value;
	return WAFER_OK;
}

/* copy and relu: bindings {out, in}; struct wafer_elementwise_params.
 * add and mul: bindings {out, a, b}. out may be the same range as an
 * input (never a partial overlap), which an index-by-index loop handles.
 * relu keeps NaN (ABI 1.6): x > 0 is false for it, so test it apart. */
static wafer_status skeleton_elementwise_f32(struct skeleton_device *device,
					     const struct wafer_launch *launch)
{
	struct wafer_elementwise_params p;
	memcpy(&p, launch->params, sizeof p);
	wafer_status status = check_count(device, launch, p.count, sizeof(float));
	if (status != WAFER_OK)
		return status;
	const char *op = launch->kernel->op;
	float *out = f32_at(launch, 0);
	const float *a = f32_at(launch, 1);
	const float *b = launch->binding_count > 2 ? f32_at(launch, 2) : a;
	if (!strcmp(op, WAFER_KERNEL_ADD))
		for (uint64_t i = 0; i < p.count; i++)
			out[i] = a[i] + b[i];
	else if (!strcmp(op, WAFER_KERNEL_MUL))
		for (uint64_t i = 0; i < p.count; i++)
			out[i] = a[i] * b[i];
	else if (!strcmp(op, WAFER_KERNEL_RELU))
		for (uint64_t i = 0; i < p.count; i++)
			out[i] = a[i] > 0 || a[i] != a[i] ? a[i] : 0.0f;
	else /* copy */
		memmove(out, a, p.count * sizeof *out);
	return WAFER_OK;
}

static const struct skeleton_kernel_impl fill_f32_impl = {skeleton_fill_f32};
static const struct skeleton_kernel_impl elementwise_f32_impl = {
	skeleton_elementwise_f32};

/* One entry of an elementwise kernel (copy, relu: 2 bindings; add,
 * mul: 3). */
#define SKELETON_ELEMENTWISE(name, bindings)                                   \
	{                                                                      \
		.struct_size = sizeof(struct wafer_kernel), .op = (name),      \
		.variant = "default", .dtype = WAFER_DTYPE_F32,                \
		.binding_count = (bindings),                                   \
		.params_size = sizeof(struct wafer_elementwise_params),        \
		.impl = &elementwise_f32_impl,                                 \
	}

/* The kernel table. The core checks binding_count and params_size against
 * these entries before it calls launch, so a kernel may rely on them. The
 * first entry for an (op, dtype) is its default variant. */
static const struct wafer_kernel skeleton_kernels[] = {
	{
		.struct_size = sizeof(struct wafer_kernel),
		.op = WAFER_KERNEL_FILL,
		.variant = "default",
		.dtype = WAFER_DTYPE_F32,
		.binding_count = 1,
		.params_size = sizeof(struct wafer_fill_params),
		.impl = &fill_f32_impl,
	},
	SKELETON_ELEMENTWISE(WAFER_KERNEL_COPY, 2),
	SKELETON_ELEMENTWISE(WAFER_KERNEL_RELU, 2),
	SKELETON_ELEMENTWISE(WAFER_KERNEL_ADD, 3),
	SKELETON_ELEMENTWISE(WAFER_KERNEL_MUL, 3),
};

static wafer_status skeleton_device_kernels(void *device,
					    const struct wafer_kernel **out_kernels,
					    size_t *out_count)
{
	(void)device;
	*out_kernels = skeleton_kernels;
	*out_count = sizeof skeleton_kernels / sizeof skeleton_kernels[0];
	return WAFER_OK;
}

/*===----------------------------------------------------------------------===
 * Server: queues, launches, sync
 *===----------------------------------------------------------------------===*/

static wafer_status skeleton_queue_create(void *opaque, void **out_queue)
{
	struct skeleton_device *device = opaque;
	*out_queue = calloc(1, sizeof(struct skeleton_queue));
	if (!*out_queue) {
		device->state->host->set_error("skeleton: out of host memory");
		return WAFER_ERROR_OUT_OF_MEMORY;
	}
	return WAFER_OK;
}

static void skeleton_queue_destroy(void *device, void *queue)
{
	(void)device;
	free(queue);
}

/* Runs the kernel at once. A plugin that queues the work instead must copy
 * what it needs from |launch| and its parameter block before returning:
 * both are only valid during this call. */
static wafer_status skeleton_launch(void *opaque, void *queue,
				    const struct wafer_launch *launch)
{
	(void)queue;
	const struct skeleton_kernel_impl *impl = launch->kernel->impl;
	return impl->run(opaque, launch);
}

/* Everything already ran; hand out (once) an error a deferred piece of
 * work would have left. */
static wafer_status skeleton_sync(void *opaque, void *queue_opaque)
{
	struct skeleton_device *device = opaque;
	struct skeleton_queue *queue = queue_opaque;
	wafer_status status = queue->pending;
	if (status != WAFER_OK) {
		/* set_error writes the calling thread's error text, so it is
		 * called here, on the thread that syncs. */
		device->state->host->set_error("%s", queue->pending_detail);
		queue->pending = WAFER_OK;
	}
	return status;
}

static const struct wafer_server_ops skeleton_server_ops = {
	.struct_size = sizeof(struct wafer_server_ops),
	.queue_create = skeleton_queue_create,
	.queue_destroy = skeleton_queue_destroy,
	.launch = skeleton_launch,
	.sync = skeleton_sync,
	/* timer_begin, timer_end: NULL, no device timers. */
	/* program_formats, program_load, program_kernel, program_release
	 * (ABI 1.2): NULL, so wafer_program_create reports "programs not
	 * supported by plugin skeleton". A plugin that loads the caller's
	 * own kernels sets all four (wafer-plugin(7), PROGRAMS):
	 *   program_formats  the formats it takes, e.g. {WAFER_PROGRAM_SPIRV},
	 *                    or your own ISA, WAFER_PROGRAM_VENDOR + n
	 *   program_load     build the source (the host's cache_load and
	 *                    cache_store keep compiled binaries), return a
	 *                    handle; WAFER_ERROR_BUILD with the log on failure
	 *   program_kernel   a struct wafer_kernel the program owns, with
	 *                    an impl that skeleton_launch can tell from the
	 *                    catalogue's
	 *   program_release  free it: no launch of it is queued any more
	 * plugins/cpu/program.c in the wafer sources is a complete one. */
	/* queue_native, queue_wrap (ABI 1.3): with the storage's interop
	 * entries above, or NULL. comm_id, comm_open, comm_close, comm_run
	 * (ABI 1.4, all four): NULL, so wafer_comm_open reports
	 * "collectives not supported by skeleton" (wafer-plugin(7),
	 * SCALE-OUT). The loader drops part of any group with a warning,
	 * shown by wafer-info. */
	/* event_create ... queue_callback (ABI 1.5, all eight): NULL, so a
	 * client's queues are ordered on the host and do not overlap. A
	 * plugin whose queues run asynchronously sets all eight
	 * (wafer-plugin(7), EVENTS); one whose queues are synchronous, as
	 * this one's are, may too, in a few lines: plugins/cpu/event.c. */
	/* graph_begin ... graph_destroy (ABI 1.6, all four): NULL, so the
	 * core replays a graph's launches itself (wafer-plugin(7), GRAPHS).
	 * comm_split (ABI 1.7) and comm_group_begin/end (ABI 1.7, both):
	 * NULL, as the collectives are. */
};

/*===----------------------------------------------------------------------===
 * The descriptor and the one exported symbol
 *===----------------------------------------------------------------------===*/

static const struct wafer_plugin skeleton_plugin = {
	.struct_size = sizeof(struct wafer_plugin),
	.abi_major = WAFER_PLUGIN_ABI_MAJOR,
	.abi_minor = WAFER_PLUGIN_ABI_MINOR,
	.name = "skeleton",
	.version = SKELETON_VERSION,
	.description = "wafer plugin skeleton: host memory, the five f32 kernels",
	.init = skeleton_init,
	.shutdown = skeleton_shutdown,
	.device_count = skeleton_device_count,
	.device_info = skeleton_device_info,
	.device_open = skeleton_device_open,
	.device_close = skeleton_device_close,
	.device_kernels = skeleton_device_kernels,
	.storage = &skeleton_storage_ops,
	.server = &skeleton_server_ops,
	/* vendor_names (ABI 1.7): NULL, no value of its own to name (a
	 * program format or buffer kind in the vendor range gets its name
	 * there: wafer-plugin(7), VENDOR VALUES; examples/plugin-sim). */
};

/* The core passes the ABI major it speaks. This plugin speaks only the
 * major it was built with and returns its descriptor either way: on a
 * mismatch the core reports both numbers and unloads it. */
WAFER_PLUGIN_EXPORT const struct wafer_plugin *
wafer_plugin_query(uint32_t core_abi_major,
		   const struct wafer_host_services *host)
{
	(void)core_abi_major;
	(void)host;
	return &skeleton_plugin;
}
