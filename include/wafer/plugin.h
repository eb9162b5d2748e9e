/* wafer — vendor-neutral compute runtime.
 * SPDX-License-Identifier: MIT
 *
 * plugin.h: the vendor ABI, version 1. A backend plugin is a shared object
 * that exports exactly one symbol, wafer_plugin_query(), which returns a
 * const descriptor: a name, lifetime and device entries, a storage-ops
 * table, a server-ops table and a kernel table. The core (libwafer) does
 * everything else — configuration, handles, memory strategies, channels,
 * operations, autotune — on top of these tables. See wafer-plugin(7) for a
 * walk-through of plugins/cpu, the reference implementation.
 *
 * ABI rules
 *  - Every table and argument struct starts with `size_t struct_size`, set
 *    by whoever fills it in to sizeof() of the struct as they know it.
 *    Readers only touch fields that lie inside both their own and the
 *    received struct_size (WAFER_STRUCT_HAS below).
 *  - WAFER_PLUGIN_ABI_MAJOR must match exactly. A minor version only ever
 *    appends fields to the end of structs and entries to the catalogue.
 *  - An optional entry left NULL means "not supported": the core reports
 *    the feature as unavailable and never rejects the plugin for it.
 *  - Errors are wafer_status values (0 is OK). The human-readable detail
 *    goes through host->set_error() into the core's per-thread error text.
 *  - Nothing the plugin allocates crosses the boundary without a matching
 *    free entry in the same table (free, host_free, queue_destroy, ...).
 *  - Entries taking a `device` may be called from several threads at once
 *    for different queues; calls on one queue are never concurrent (the
 *    core's channel serialises them). storage.alloc/free and the vm_*
 *    entries may be called concurrently with launches on any queue.
 *
 * This header needs nothing but the C standard library and wafer/types.h. */
#ifndef WAFER_PLUGIN_H
#define WAFER_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WAFER_PLUGIN_ABI_MAJOR 1
#define WAFER_PLUGIN_ABI_MINOR 0

/* The one symbol a plugin exports. */
#define WAFER_PLUGIN_QUERY_SYMBOL "wafer_plugin_query"

/* True when a struct received with |struct_size| holds |field| in full. */
#define WAFER_STRUCT_HAS(ptr, type, field)                                     \
	((ptr)->struct_size >= offsetof(type, field) + sizeof(((type *)0)->field))

/* Marks wafer_plugin_query for export from a plugin built with
 * -fvisibility=hidden. */
#if defined(__GNUC__)
#define WAFER_PLUGIN_EXPORT __attribute__((visibility("default")))
#else
#define WAFER_PLUGIN_EXPORT
#endif

/* A plugin's storage object: a host pointer, a CUdeviceptr, a cl_mem, a
 * Level Zero pointer — whatever the plugin needs, widened to 64 bits. 0 is
 * never a valid resource. The core never dereferences it; it only passes
 * it back with an offset (struct wafer_binding). */
typedef uint64_t wafer_resource;

/*===----------------------------------------------------------------------===
 * Host services: what the core offers the plugin
 *===----------------------------------------------------------------------===*/

typedef enum wafer_log_level {
	WAFER_LOG_ERROR = 0,
	WAFER_LOG_WARN = 1,
	WAFER_LOG_INFO = 2,
	WAFER_LOG_DEBUG = 3,
} wafer_log_level;

struct wafer_host_services {
	size_t struct_size;
	uint32_t abi_major;
	uint32_t abi_minor;
	/* Sets the detail text of the calling thread's error, printf-style.
	 * Call it before returning a non-OK status; say what failed and with
	 * which values ("cuMemAlloc(1073741824): out of memory"). */
	void (*set_error)(const char *format, ...)
#if defined(__GNUC__)
		__attribute__((format(printf, 1, 2)))
#endif
		;
	/* Writes one line to the core's log if |level| is enabled (WAFER_LOG).
	 * The core prefixes the plugin's name. Cheap when disabled. */
	void (*log)(const struct wafer_host_services *host,
		    wafer_log_level level, const char *format, ...)
#if defined(__GNUC__)
		__attribute__((format(printf, 3, 4)))
#endif
		;
	/* Opaque to the plugin; identifies it in log lines. */
	void *host_data;
};

/*===----------------------------------------------------------------------===
 * Plugin lifetime and devices
 *===----------------------------------------------------------------------===*/

/* One `key = value` line of the plugin's own config section ([<name>]),
 * after the whole configuration chain was applied (later sources win).
 * |origin| says where it came from ("/etc/wafer/wafer.conf:12",
 * "environment WAFER_X", "options") for error messages. Strings live until init
 * returns: copy what you keep. */
struct wafer_plugin_option {
	size_t struct_size;
	const char *key;
	const char *value;
	const char *origin;
};

struct wafer_plugin_init_args {
	size_t struct_size;
	const struct wafer_plugin_option *options;
	size_t option_count;
	/* The host services again, for plugins that keep them per instance. */
	const struct wafer_host_services *host;
};

/* Capability bits of a device (wafer_device_info.capabilities). */
#define WAFER_CAP_F16 (UINT64_C(1) << 0)
#define WAFER_CAP_BF16 (UINT64_C(1) << 1)
#define WAFER_CAP_F64 (UINT64_C(1) << 2)
/* Device memory is ordinary host memory (cpu, integrated GPUs). */
#define WAFER_CAP_HOST_MEMORY (UINT64_C(1) << 3)
/* The next four are set by the core from the optional entries offered
 * (and cleared when a plugin claims one without the entries behind it). */
#define WAFER_CAP_STREAM_ORDERED_ALLOC (UINT64_C(1) << 4)
#define WAFER_CAP_VIRTUAL_MEMORY (UINT64_C(1) << 5)
#define WAFER_CAP_DEVICE_TIMERS (UINT64_C(1) << 6)
#define WAFER_CAP_PINNED_HOST (UINT64_C(1) << 7)

#define WAFER_DEVICE_NAME_MAX 128

struct wafer_device_info {
	size_t struct_size;
	char name[WAFER_DEVICE_NAME_MAX];
	/* Memory the device can allocate, in bytes. */
	uint64_t memory_bytes;
	/* WAFER_CAP_* bits the hardware has (the core adds the ones it derives
	 * from the optional ops). */
	uint64_t capabilities;
	/* Every storage allocation and binding offset the plugin hands out or
	 * accepts is a multiple of this (a power of two, at least 16). The
	 * memory strategies place slices on this alignment. */
	size_t alloc_alignment;
	/* Page size of the virtual-memory entries; 0 when they are not
	 * offered. vm_reserve/vm_map sizes and offsets are multiples of it. */
	size_t vm_granularity;
	/* Parallel units (cores, SMs, compute units), for information. */
	uint32_t compute_units;
};

/*===----------------------------------------------------------------------===
 * Storage: raw device memory
 *===----------------------------------------------------------------------===*/

/* Storage entries work on a device returned by device_open. Copies take the
 * queue (from server.queue_create) they are ordered on: a copy runs after
 * every launch and copy issued on that queue before it.
 *
 * Memory strategies (core/memory/) build everything else — pooling,
 * slicing, size classes — on these entries; a plugin should make them
 * correct, not clever. */
struct wafer_storage_ops {
	size_t struct_size;

	/* Required. Allocates |size| (> 0) bytes aligned to alloc_alignment.
	 * Returns WAFER_ERROR_OUT_OF_MEMORY when the device is full: the core
	 * then returns cached memory and retries once. */
	wafer_status (*alloc)(void *device, size_t size,
			      wafer_resource *out_resource);
	/* Required. Frees a resource from alloc. The core guarantees no
	 * queued work still uses it (it synchronises first when needed). */
	void (*free)(void *device, wafer_resource resource);

	/* Required. Copies |size| bytes from host memory |src| into the
	 * resource at |dst_offset|. |src| may be reused by the caller as soon
	 * as the call returns (stage it if the copy is deferred). */
	wafer_status (*copy_in)(void *device, void *queue, wafer_resource dst,
				size_t dst_offset, const void *src,
				size_t size);
	/* Required. Copies |size| bytes from the resource at |src_offset| to
	 * host memory |dst|. The bytes are in |dst| when server.sync on the
	 * same queue returns (or at once, if the copy is synchronous). */
	wafer_status (*copy_out)(void *device, void *queue, wafer_resource src,
				 size_t src_offset, void *dst, size_t size);
	/* Required. Device-to-device copy on |queue|. */
	wafer_status (*copy)(void *device, void *queue, wafer_resource dst,
			     size_t dst_offset, wafer_resource src,
			     size_t src_offset, size_t size);

	/* Optional: stream-ordered allocation (CUDA cuMemAllocAsync). The
	 * memory may be used by work on |queue| issued after alloc_async;
	 * free_async returns it once the work issued before it has run. */
	wafer_status (*alloc_async)(void *device, void *queue, size_t size,
				    wafer_resource *out_resource);
	wafer_status (*free_async)(void *device, void *queue,
				   wafer_resource resource);

	/* Optional: virtual memory. vm_reserve reserves an address range of
	 * |size| bytes with no memory behind it; vm_map backs [offset,
	 * offset+size) of it with physical memory, vm_unmap gives those pages
	 * back; vm_release frees the range (unmapping whatever is mapped).
	 * The range is a resource: bindings name it with an offset. Sizes and
	 * offsets are multiples of vm_granularity. */
	wafer_status (*vm_reserve)(void *device, size_t size,
				   wafer_resource *out_range);
	void (*vm_release)(void *device, wafer_resource range);
	wafer_status (*vm_map)(void *device, wafer_resource range,
			       size_t offset, size_t size);
	wafer_status (*vm_unmap)(void *device, wafer_resource range,
				 size_t offset, size_t size);

	/* Optional: page-locked host memory for staging uploads and
	 * downloads (cuMemHostAlloc, CL_MEM_ALLOC_HOST_PTR). */
	wafer_status (*host_alloc)(void *device, size_t size, void **out_ptr);
	void (*host_free)(void *device, void *ptr);
};

/*===----------------------------------------------------------------------===
 * Kernels and launches
 *===----------------------------------------------------------------------===*/

/* One entry of a device's kernel table. Several entries may share an
 * operation and dtype with different |variant| names: those are the
 * candidates autotune measures. The first entry for an (op, dtype) is the
 * default variant. */
struct wafer_kernel {
	size_t struct_size;
	/* Catalogue name (WAFER_KERNEL_* below) or a vendor-specific name. */
	const char *op;
	/* Variant name, unique per (op, dtype): "default", "tile64x64". */
	const char *variant;
	wafer_dtype dtype;
	/* Exact number of bindings and exact parameter-block size the kernel
	 * takes; the core checks both before it calls launch. */
	uint32_t binding_count;
	size_t params_size;
	/* Plugin-private: a function pointer, a CUfunction slot, ... */
	const void *impl;
};

/* A slice of a resource handed to a kernel. offset is a multiple of
 * alloc_alignment; [offset, offset+size) lies inside the resource. */
struct wafer_binding {
	size_t struct_size;
	wafer_resource resource;
	size_t offset;
	size_t size;
};

struct wafer_launch {
	size_t struct_size;
	const struct wafer_kernel *kernel;
	const struct wafer_binding *bindings;
	uint32_t binding_count;
	const void *params;
	size_t params_size;
	/* Total work items per dimension (at least 1 each). The catalogue
	 * below says what the standard kernels expect. */
	uint64_t global[3];
	/* Work-group size hint; 0 lets the plugin choose. */
	uint32_t local[3];
};

/*===----------------------------------------------------------------------===
 * Server: queues, launches, synchronisation, timers
 *===----------------------------------------------------------------------===*/

struct wafer_server_ops {
	size_t struct_size;

	/* Required, both. A queue is an in-order stream of copies and
	 * launches (a CUstream, a cl_command_queue, a task list on cpu). The
	 * core synchronises a queue before it destroys it. */
	wafer_status (*queue_create)(void *device, void **out_queue);
	void (*queue_destroy)(void *device, void *queue);

	/* Required. Issues a launch on |queue|. May return before the kernel
	 * ran; an error found later is returned by the next sync. The launch
	 * struct and parameter block are only valid during the call. */
	wafer_status (*launch)(void *device, void *queue,
			       const struct wafer_launch *launch);

	/* Required. Waits until everything issued on |queue| has finished and
	 * returns the first error among it (then forgets it). */
	wafer_status (*sync)(void *device, void *queue);

	/* Optional: device timers, for autotune. timer_begin records a start
	 * point on |queue| and returns a timer; timer_end records the end,
	 * waits for it, stores the nanoseconds between the two in |*out_ns|
	 * and frees the timer (also on failure). */
	wafer_status (*timer_begin)(void *device, void *queue,
				    void **out_timer);
	wafer_status (*timer_end)(void *device, void *queue, void *timer,
				  uint64_t *out_ns);
};

/*===----------------------------------------------------------------------===
 * The plugin descriptor
 *===----------------------------------------------------------------------===*/

struct wafer_plugin {
	size_t struct_size;
	/* WAFER_PLUGIN_ABI_MAJOR / _MINOR as the plugin was built. */
	uint32_t abi_major;
	uint32_t abi_minor;
	/* Backend name used in config and selectors: [a-z0-9_]+, "cpu". */
	const char *name;
	/* The plugin's own version ("1.0.0"): shown by wafer-info, part of
	 * the autotune cache key. */
	const char *version;
	/* One line for wafer-info. */
	const char *description;

	/* Required. Creates the plugin instance from its config section.
	 * Must not fail because there is no device or no vendor driver:
	 * report that through device_count instead. */
	wafer_status (*init)(const struct wafer_plugin_init_args *args,
			     void **out_state);
	/* Required. Called once, after every device was closed. */
	void (*shutdown)(void *state);

	/* Required. Number of devices. Returning a non-OK status (with
	 * set_error) explains why there are none — "libcuda.so.1 not found",
	 * "cuInit: CUDA_ERROR_NO_DEVICE" — and counts as zero devices. */
	wafer_status (*device_count)(void *state, uint32_t *out_count);
	/* Required. Fills |*out| (whose struct_size the core set). */
	wafer_status (*device_info)(void *state, uint32_t index,
				    struct wafer_device_info *out);
	/* Required. Opens a device for use by one or more clients; several
	 * clients' queues then call storage entries concurrently (see the
	 * rules at the top). device_close (required) is called once every
	 * queue on it was destroyed. */
	wafer_status (*device_open)(void *state, uint32_t index,
				    void **out_device);
	void (*device_close)(void *device);
	/* Required. The kernel table of an open device; it stays valid until
	 * device_close. */
	wafer_status (*device_kernels)(void *device,
				       const struct wafer_kernel **out_kernels,
				       size_t *out_count);

	const struct wafer_storage_ops *storage;
	const struct wafer_server_ops *server;
};

/* The plugin's entry point. |core_abi_major| is the major the core speaks;
 * |host| lives as long as the plugin is loaded. Return the descriptor for
 * that major if the plugin speaks it, else the plugin's own descriptor (the
 * core then reports both majors and unloads it). Return NULL only when the
 * plugin cannot describe itself at all, after host->set_error(). */
typedef const struct wafer_plugin *(*wafer_plugin_query_fn)(
	uint32_t core_abi_major, const struct wafer_host_services *host);

WAFER_PLUGIN_EXPORT const struct wafer_plugin *
wafer_plugin_query(uint32_t core_abi_major,
		   const struct wafer_host_services *host);

/*===----------------------------------------------------------------------===
 * The standard kernel catalogue
 *===----------------------------------------------------------------------===*/

/* Operations the core's ops layer calls by these names. A plugin offers
 * what it can; a missing kernel makes the operation fail with
 * WAFER_ERROR_NOT_SUPPORTED naming the plugin. For each: bindings in order,
 * the parameter block, and the launch shape the core uses.
 *
 * The core checks that every binding lies inside its handle, and the
 * binding count and parameter-block size against the table entry; it does
 * not know each kernel's shape rules, so a plugin checks that the element
 * counts in the parameter block fit its bindings and returns
 * WAFER_ERROR_OUT_OF_RANGE (with the sizes) when they do not.
 *
 * Arrays crossing the boundary (kernel tables, options, bindings) are
 * stepped by their first element's struct_size, so either side may have
 * been built against a later minor version. */

/* noop — bindings: none; params: none; global = {1, 1, 1}. Does nothing:
 * wafer-bench measures the cost of dispatch with it. */
#define WAFER_KERNEL_NOOP "noop"

/* fill — bindings: {out}; params: struct wafer_fill_params;
 * global = {count, 1, 1}. out[i] = value (converted to the dtype). */
#define WAFER_KERNEL_FILL "fill"
struct wafer_fill_params {
	uint64_t count;
	double value;
};

/* Elementwise kernels — params: struct wafer_elementwise_params;
 * global = {count, 1, 1}. Bindings may alias exactly (out == in), never
 * partially.
 *   copy:  {out, in}      out[i] = in[i]
 *   relu:  {out, in}      out[i] = max(in[i], 0)
 *   add:   {out, a, b}    out[i] = a[i] + b[i]
 *   mul:   {out, a, b}    out[i] = a[i] * b[i] */
#define WAFER_KERNEL_COPY "copy"
#define WAFER_KERNEL_RELU "relu"
#define WAFER_KERNEL_ADD "add"
#define WAFER_KERNEL_MUL "mul"
struct wafer_elementwise_params {
	uint64_t count;
};

#ifdef __cplusplus
}
#endif

#endif /* WAFER_PLUGIN_H */
