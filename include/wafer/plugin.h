/* wafer — vendor-neutral compute runtime.
 * SPDX-License-Identifier: MIT
 *
 * plugin.h: the vendor ABI, version 1 (WAFER_PLUGIN_ABI_MINOR below). A backend plugin is a shared object
 * that exports exactly one symbol, wafer_plugin_query(), which returns a
 * const descriptor: a name, lifetime and device entries, a storage-ops
 * table, a server-ops table and a kernel table. The core (libwafer) does
 * everything else — configuration, handles, memory strategies, channels,
 * operations, autotune — on top of these tables. See wafer-plugin(7) for
 * the contracts, a walk-through of plugins/cpu (the reference plugin, in
 * the wafer source tree) and the installed skeleton plugin to copy.
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
 *    free entry in the same table (free, vm_release, queue_destroy, ...).
 *  - Entries taking a `device` may be called from several threads at once
 *    for different queues; calls on one queue are never concurrent (the
 *    core's channel serialises them). storage.alloc/free and the vm_*
 *    entries may be called concurrently with launches on any queue.
 *
 * ABI history: a plugin is judged by the rules of the minor it was built
 * for (the loader knows it); a change of meaning takes a new minor and a
 * line here and in wafer-plugin(7), ABI history.
 *  1.1  the catalogue's families; host_alloc/host_free retired
 *  1.2  programs; the host's binary cache; storage.figure
 *  1.3  interop
 *  1.4  peer copy, collectives
 *  1.5  events and host callbacks
 *  1.6  native graphs; relu of NaN is NaN (before: 0 or NaN)
 *  1.7  names for the plugin's vendor values (vendor_names); registered
 *       host memory (storage.host_register ..); sub-communicators
 *       (comm_split); comm_open_args.timeout_ms; grouped collectives
 *       (comm_group_begin/end)
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
/* The newest minor this header describes. */
#define WAFER_PLUGIN_ABI_MINOR_LATEST 7
/* The minor a plugin is built for. A plugin that targets an older one
 * (to load in an older core, or to be held to that minor's rules)
 * defines it first, `-DWAFER_PLUGIN_ABI_MINOR=1` or a #define before
 * this header: the structs then end where they ended in that minor (so
 * sizeof is that minor's struct_size), later entries are not declared,
 * and abi_minor = WAFER_PLUGIN_ABI_MINOR says which rules judge it
 * (ABI history above). The core is built with the latest. */
#ifndef WAFER_PLUGIN_ABI_MINOR
#define WAFER_PLUGIN_ABI_MINOR WAFER_PLUGIN_ABI_MINOR_LATEST
#elif WAFER_PLUGIN_ABI_MINOR > WAFER_PLUGIN_ABI_MINOR_LATEST
#error "WAFER_PLUGIN_ABI_MINOR is newer than this <wafer/plugin.h> knows"
#endif

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

/* One part of a compiled-binary cache key (cache_load and cache_store
 * below). A NULL |data| with |size| 0 is an empty part. Arrays of parts
 * are stepped by their first element's struct_size. */
struct wafer_cache_part {
	size_t struct_size;
	const void *data;
	size_t size;
};

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

#if WAFER_PLUGIN_ABI_MINOR >= 2
	/* Since ABI 1.2 (check with WAFER_STRUCT_HAS before use): the
	 * compiled-binary cache, one mechanism for every plugin. Binaries
	 * live in the plugin's own directory, $XDG_CACHE_HOME/wafer/<plugin>/
	 * (else $HOME/.cache/wafer/<plugin>/; `[core] cache_dir` replaces
	 * the base, and "off" there turns the cache off). The key is the
	 * concatenation of |parts| — what the binary depends on: source
	 * bytes, format, build options, device name, driver version, the
	 * plugin's version. It is stored in full in the file and compared
	 * on read (a hash of it only names the file), with a checksum of the
	 * binary: a damaged or foreign file is a miss, never handed back.
	 * Files are written atomically (temporary file, then rename) and
	 * readable by the user only. Without a usable directory every
	 * lookup misses and every store does nothing.
	 *
	 * cache_load: the binary for the key in |*out_data| (free it with
	 * cache_free) and its size; WAFER_ERROR_NOT_FOUND on a miss (a
	 * damaged file is logged and is a miss too). Both outputs are set
	 * on every path. */
	wafer_status (*cache_load)(const struct wafer_host_services *host,
				   const struct wafer_cache_part *parts,
				   size_t part_count, void **out_data,
				   size_t *out_size);
	void (*cache_free)(void *data);
	/* Stores |size| (> 0) bytes for the key. A failure (no directory, a
	 * full disk) is logged and returned, and costs only the next
	 * process a compilation: callers usually ignore it. */
	wafer_status (*cache_store)(const struct wafer_host_services *host,
				    const struct wafer_cache_part *parts,
				    size_t part_count, const void *data,
				    size_t size);
#endif
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

/* Capability bits (WAFER_CAP_*) are in wafer/types.h. */

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
 * every launch and copy issued on that queue before it. The queue is
 * always the calling client's, as queue_create returned it; the core
 * never passes NULL of its own.
 *
 * Memory strategies (lib/memory/) build everything else — pooling,
 * slicing, size classes — on these entries; a plugin should make them
 * correct, not clever. */
struct wafer_storage_ops {
	size_t struct_size;

	/* Required. Allocates |size| (> 0; not always a multiple of
	 * alloc_alignment) bytes aligned to alloc_alignment.
	 * Returns WAFER_ERROR_OUT_OF_MEMORY when the device is full: the core
	 * then returns cached memory and retries once. */
	wafer_status (*alloc)(void *device, size_t size,
			      wafer_resource *out_resource);
	/* Required. Frees a resource from alloc. The core guarantees no
	 * queued work still uses it (it synchronises first when needed). */
	void (*free)(void *device, wafer_resource resource);

	/* Required. Copies |size| (> 0) bytes from host memory |src| into
	 * the resource at |dst_offset| (any byte offset; the range lies
	 * inside the resource). |src| may be reused by the caller as soon
	 * as the call returns (stage it if the copy is deferred). */
	wafer_status (*copy_in)(void *device, void *queue, wafer_resource dst,
				size_t dst_offset, const void *src,
				size_t size);
	/* Required. Copies |size| (> 0) bytes from the resource at
	 * |src_offset| (any byte offset, inside the resource) to host memory
	 * |dst|. The bytes are in |dst| when server.sync on the
	 * same queue returns (or at once, if the copy is synchronous). */
	wafer_status (*copy_out)(void *device, void *queue, wafer_resource src,
				 size_t src_offset, void *dst, size_t size);
	/* Required (the loader rejects a plugin without it), though this
	 * release of the core never calls it: wafer_op_copy launches the
	 * copy kernel. Device-to-device copy on |queue|; source and
	 * destination may be overlapping slices of one resource. */
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

	/* Retired in ABI 1.1: the core never calls these; leave them NULL. */
	wafer_status (*host_alloc)(void *device, size_t size, void **out_ptr);
	void (*host_free)(void *device, void *ptr);

#if WAFER_PLUGIN_ABI_MINOR >= 2
	/* Since ABI 1.2, optional (NULL: no figures): a figure
	 * about the device's memory that only the plugin knows, in *value;
	 * WAFER_ERROR_NOT_SUPPORTED for one it does not keep. |what| is a
	 * WAFER_STORAGE_FIGURE_* below. */
	wafer_status (*figure)(void *device, int what, uint64_t *value);
#endif

#if WAFER_PLUGIN_ABI_MINOR >= 3
	/* Since ABI 1.3, optional, all three or none: interop
	 * (wafer-interop(7)). Without them wafer_handle_native and
	 * wafer_handle_import report "interop not supported by <plugin>".
	 *
	 * native: fills |out|'s kind, address (pointer kinds) or object and
	 * offset (object kinds), context and device_ordinal for the byte at
	 * |offset| of |resource| (a resource from alloc, alloc_async,
	 * import, or a vm range whose page at |offset| is mapped). The core
	 * sets struct_size, backend and size. */
	wafer_status (*native)(void *device, wafer_resource resource,
			       size_t offset, struct wafer_native_buffer *out);
	/* import: a resource over the caller's memory |buffer| (size > 0,
	 * its kind checked; another device's or context's memory is
	 * WAFER_ERROR_INVALID_ARGUMENT naming both). For the pointer kinds
	 * the resource starts at |address|; for the object kinds it is the
	 * object, and the core keeps |offset| as the handle's offset into
	 * it. It is used like any resource (bindings, copies) but never
	 * freed by the plugin: the core calls forget, once no queued work
	 * uses it, instead of free. */
	wafer_status (*import)(void *device,
			       const struct wafer_native_buffer *buffer,
			       wafer_resource *out_resource);
	void (*forget)(void *device, wafer_resource resource);
#endif

#if WAFER_PLUGIN_ABI_MINOR >= 4
	/* Since ABI 1.4, optional: peer copy (wafer_copy_peer). Copies
	 * |size| (> 0) bytes from |src| at |src_offset|, a resource of
	 * |src_device| (another device of this plugin, or |device| itself),
	 * into |dst| at |dst_offset| on |device|, without the host where the
	 * hardware allows. Ordered on both queues: after everything issued
	 * on |src_queue| and on |queue| before the call, and before anything
	 * issued on either later (CUDA: an event recorded on one stream and
	 * waited on by the other, both ways). Called from the destination
	 * client's thread: the plugin's entries on |src_queue| may run at the
	 * same time from the source client's, so what it does on |src_queue|
	 * must be safe alongside them (CUDA streams are). NULL: the core
	 * stages the bytes through the host. */
	wafer_status (*copy_peer)(void *device, void *queue, wafer_resource dst,
				  size_t dst_offset, void *src_device,
				  void *src_queue, wafer_resource src,
				  size_t src_offset, size_t size);
#endif
#if WAFER_PLUGIN_ABI_MINOR >= 7
	/* Since ABI 1.7, optional, all four or none: host memory the caller
	 * registered (wafer_host_register(3)), copied to and from without a
	 * staging copy. NULL: registering still works, and copies go through
	 * copy_in/copy_out as before.
	 *
	 * host_register: makes [ptr, ptr+size) ready for direct copies
	 * (CUDA: cuMemHostRegister); the core never registers overlapping
	 * ranges and has no copy queued when it calls. host_unregister:
	 * undoes it for the range starting at |ptr|; no queued copy uses it.
	 * Either may be called from any thread, as alloc may.
	 *
	 * copy_in_registered: copy_in from a registered range, except that
	 * |src| is read when the copy runs in queue order, not before the
	 * call returns: the caller keeps the bytes unchanged until then.
	 * copy_out_registered: copy_out into a registered range; the bytes
	 * are in |dst| once the work issued on |queue| before the next
	 * event record or sync has run (no host copy at sync). */
	wafer_status (*host_register)(void *device, void *ptr, size_t size);
	void (*host_unregister)(void *device, void *ptr);
	wafer_status (*copy_in_registered)(void *device, void *queue,
					   wafer_resource dst,
					   size_t dst_offset, const void *src,
					   size_t size);
	wafer_status (*copy_out_registered)(void *device, void *queue,
					    wafer_resource src,
					    size_t src_offset, void *dst,
					    size_t size);

	/* Since ABI 1.7, optional (with the vm entries): vm_map in pieces.
	 * Maps [offset, offset+size) of |range| as vm_map calls of |piece|
	 * bytes each would (the last one shorter; |piece| a multiple of
	 * vm_granularity), so that vm_unmap may take each piece back on its
	 * own, where the plugin's vm_unmap takes whole vm_map calls only
	 * (WAFER_STORAGE_FIGURE_WHOLE_UNMAPS) — but in one call, so that
	 * what the driver does once per call is done once (CUDA: one
	 * cuMemSetAccess for all the pieces, the larger part of a map's
	 * cost). On a failure nothing of the call stays mapped. NULL: the
	 * core calls vm_map once per piece. */
	wafer_status (*vm_map_pieces)(void *device, wafer_resource range,
				      size_t offset, size_t size,
				      size_t piece);
#endif
};

/* The most bytes the stream-ordered allocator (alloc_async) has held
 * from the device at once since the device was opened: memory it keeps
 * cached after free_async counts too (CUDA:
 * CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH of the pool alloc_async uses). */
#define WAFER_STORAGE_FIGURE_ASYNC_RESERVED_HIGH 1
/* 1 when vm_unmap takes only whole earlier vm_map calls (each call one
 * physical allocation, as the cuda plugin's `vm_page = whole`); 0 or
 * NOT_SUPPORTED when any page-aligned part may be unmapped. The pool
 * then unmaps whole units only. */
#define WAFER_STORAGE_FIGURE_WHOLE_UNMAPS 2

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
	/* Element type. Kernels are looked up by (op, dtype) exactly, with no
	 * fallback and never as WAFER_DTYPE_NONE for a catalogue kernel: list
	 * one entry per element type, also for kernels that only move bytes
	 * (copy). */
	wafer_dtype dtype;
	/* Exact number of bindings and exact parameter-block size the kernel
	 * takes; the core checks both before it calls launch. */
	uint32_t binding_count;
	size_t params_size;
	/* Plugin-private: a function pointer, a CUfunction slot, ... */
	const void *impl;
};

/* A slice of a resource handed to a kernel. |offset| is into the
 * resource, not the handle: a handle is often a slice of a larger pooled
 * allocation, so it is often non-zero. It is a multiple of
 * alloc_alignment; |size| is never 0 (a caller's "to the end of the
 * handle" is resolved by the core); [offset, offset+size) lies inside
 * the handle and so inside the resource. */
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
 * Collectives (since ABI 1.4): the arguments of the server's comm entries
 *===----------------------------------------------------------------------===*/

struct wafer_comm_open_args {
	size_t struct_size;
	uint32_t rank;
	uint32_t size;
	/* From comm_id on one rank, the same bytes on every rank. */
	const wafer_comm_id *id;
	/* NULL, or the caller's own communicator to run on, as the plugin
	 * documents it (cpu: an MPI_Comm *; cuda: an ncclComm_t); the plugin
	 * never frees it. */
	void *native;
#if WAFER_PLUGIN_ABI_MINOR >= 7
	/* Since ABI 1.7 (check struct_size): how long a wait for this
	 * communicator's collectives may go without their finishing before
	 * the plugin aborts the communicator and fails the wait, naming it,
	 * its rank and the collective ([comm] timeout, wafer.conf(5)); 0
	 * for ever. Asynchronous errors of the engine abort at once. A
	 * communicator split from this one keeps it. */
	uint64_t timeout_ms;
#endif
};

/* One collective on |count| elements of |dtype| (see
 * wafer_collective_kind in types.h for how count relates to each side). */
struct wafer_collective {
	size_t struct_size;
	wafer_collective_kind kind;
	wafer_reduce_op op; /* ALL_REDUCE and REDUCE_SCATTER */
	wafer_dtype dtype;
	size_t count;
	uint32_t root; /* BROADCAST; SEND's and RECV's peer (since 1.6) */
	/* May be the same range (in place) for ALL_REDUCE and BROADCAST. */
	wafer_resource src;
	size_t src_offset;
	wafer_resource dst;
	size_t dst_offset;
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
	 * struct and parameter block are only valid during the call. What
	 * the core has checked before (and what it leaves to the kernel) is
	 * listed above the catalogue below and in wafer-plugin(7). */
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

#if WAFER_PLUGIN_ABI_MINOR >= 2
	/* Since ABI 1.2, optional, all four or none: programs, the caller's
	 * own kernels (wafer-program(7)). Without them
	 * wafer_program_create reports "programs not supported by <plugin>"
	 * and nothing else changes.
	 *
	 * program_formats: the formats this device accepts, best first
	 * (WAFER_PROGRAM_* of wafer/types.h); the array stays valid until
	 * device_close. The core hands program_load the first of the
	 * caller's sources whose format is listed. */
	wafer_status (*program_formats)(void *device,
					const wafer_program_format **out_formats,
					size_t *out_count);
	/* Builds or loads |source| (a listed format; its bytes are valid
	 * during the call only) with |options| (NULL or the caller's build
	 * options) and returns the plugin's program. A compile or link
	 * failure is WAFER_ERROR_BUILD with the compiler's whole log, line
	 * numbers as it gave them, through set_error. Use the host's
	 * cache_load/cache_store so that a second process compiles nothing,
	 * and log "program: compiled <name>" or "program: from cache
	 * <name>" at debug level (the tests count them). May be called
	 * from any client's thread, concurrently with launches. */
	wafer_status (*program_load)(void *device,
				     const struct wafer_program_source *source,
				     const char *options, void **out_program);
	/* The kernel |name| of |program| as a table entry: op = |name|,
	 * variant "default", dtype WAFER_DTYPE_NONE, binding_count and
	 * params_size as the caller declared them (the core checks each
	 * launch against them), impl the plugin's. It is owned by the
	 * program and valid until program_release. The core passes it to
	 * launch as launch->kernel like a catalogue entry: the plugin tells
	 * the two apart by its own impl. Unknown name: WAFER_ERROR_NOT_FOUND
	 * naming the kernel. */
	wafer_status (*program_kernel)(void *device, void *program,
				       const char *name,
				       uint32_t binding_count,
				       size_t params_size,
				       const struct wafer_kernel **out_kernel);
	/* Frees |program| and its kernels. The core calls it once no
	 * launch of them is queued any more: after the queues that
	 * launched them were synchronised. */
	void (*program_release)(void *device, void *program);
#endif

#if WAFER_PLUGIN_ABI_MINOR >= 3
	/* Since ABI 1.3, optional, both or none: interop. queue_native fills
	 * |out|'s kind, queue, context and device_ordinal with |queue|'s
	 * native queue (the core sets struct_size and backend). queue_wrap
	 * makes a queue over the caller's |native| one (a CUstream, a
	 * cl_command_queue, ...); queue_destroy of such a queue synchronises
	 * it and frees the plugin's record, never |native| itself. */
	wafer_status (*queue_native)(void *device, void *queue,
				     struct wafer_native_queue *out);
	wafer_status (*queue_wrap)(void *device, void *native,
				   void **out_queue);
#endif

#if WAFER_PLUGIN_ABI_MINOR >= 4
	/* Since ABI 1.4, optional, all four or none: collectives
	 * (wafer-comm(7)) through the vendor's engine (NCCL, MPI, ...).
	 * Without them wafer_comm_open reports "collectives not supported by
	 * <plugin>" and nothing else changes.
	 *
	 * comm_id: a new id for rank 0 to hand to the others (NCCL:
	 * ncclGetUniqueId); all zeros when the transport needs none. */
	wafer_status (*comm_id)(void *device, wafer_comm_id *out_id);
	/* Joins communicator |args->id| as rank |args->rank| of
	 * |args->size| on |device|. Blocks until every rank joined, like
	 * ncclCommInitRank: ranks of one process call it from different
	 * threads (the core does so for wafer_comm_open_group). A rank or
	 * size the transport sees otherwise (MPI_Comm_rank) is
	 * WAFER_ERROR_INVALID_ARGUMENT naming both. */
	wafer_status (*comm_open)(void *device,
				  const struct wafer_comm_open_args *args,
				  void **out_comm);
	/* Frees |comm|; the core synchronised the queues that used it. */
	void (*comm_close)(void *device, void *comm);
	/* Issues |c| on |queue|, ordered with launches and copies like one
	 * of them. The core checked the kind, op, dtype (f32, f16, bf16 on
	 * every plugin with collectives; others where the plugin says so by
	 * returning NOT_SUPPORTED for what it lacks), root and that the
	 * ranges lie inside their resources. Every rank issues the same
	 * collectives in the same order. Since ABI 1.6 also SEND (src only)
	 * and RECV (dst only) between two ranks, |root| the peer, which
	 * the core issues only to plugins built at 1.6 or later; each may
	 * block the queue until the peer's matching call (ncclSend,
	 * MPI_Send); a plugin without them returns NOT_SUPPORTED. */
	wafer_status (*comm_run)(void *device, void *queue, void *comm,
				 const struct wafer_collective *c);
#endif

#if WAFER_PLUGIN_ABI_MINOR >= 5
	/* Since ABI 1.5, optional, all eight or none: events and host
	 * callbacks (wafer-queue(7)). With them the core runs a client's
	 * queues side by side and orders them on the device; without them
	 * it orders them by syncing on the host, so they never overlap. The
	 * core calls them from any client's thread; entries on one queue are
	 * never called concurrently, entries on different queues may be.
	 *
	 * event_create: a new event, never recorded (it counts as complete).
	 * |flags|: WAFER_PLUGIN_EVENT_TIMING when event_elapsed will be asked
	 * of it (CUDA: no CU_EVENT_DISABLE_TIMING); without it the event is
	 * only for ordering and should be as cheap as the device allows. */
	wafer_status (*event_create)(void *device, uint32_t flags,
				     void **out_event);
	/* Frees |event|; the core calls it only once nothing waits on it and
	 * what it captured has finished. */
	void (*event_destroy)(void *device, void *event);
	/* Captures in |event| everything issued on |queue| so far (CUDA
	 * cuEventRecord; OpenCL a marker). Recording again replaces it. */
	wafer_status (*event_record)(void *device, void *queue, void *event);
	/* Work issued on |queue| after this call starts once what |event|
	 * captured has finished (CUDA cuStreamWaitEvent; OpenCL a barrier
	 * with a wait list). Must not block the calling thread. */
	wafer_status (*queue_wait_event)(void *device, void *queue,
					 void *event);
	/* Blocks until what |event| captured has finished. */
	wafer_status (*event_sync)(void *device, void *event);
	/* WAFER_OK when finished, WAFER_ERROR_NOT_READY when not; a failure
	 * of the device is returned as such. Never blocks. */
	wafer_status (*event_query)(void *device, void *event);
	/* Nanoseconds between two finished timing events; waits for |end|.
	 * WAFER_ERROR_NOT_SUPPORTED where the device has no timers. */
	wafer_status (*event_elapsed)(void *device, void *start, void *end,
				      uint64_t *out_ns);
	/* Calls |fn(arg)| once everything issued on |queue| before has
	 * finished; work issued on |queue| after it waits for |fn| to
	 * return (CUDA cuLaunchHostFunc; OpenCL clSetEventCallback on a
	 * marker, with a user event gating what follows). It runs on a
	 * thread of the plugin's or the driver's, or inside this call
	 * where the queue's work has already finished (a synchronous
	 * device such as cpu). |fn| takes no lock the caller may hold and
	 * does not call the plugin's entries for |queue|. */
	wafer_status (*queue_callback)(void *device, void *queue,
				       void (*fn)(void *arg), void *arg);
#endif

#if WAFER_PLUGIN_ABI_MINOR >= 6
	/* Since ABI 1.6, optional, all four or none: native graphs
	 * (wafer_graph(3)). Every plugin can capture: the core records the
	 * steps and replays them itself, one launch entry call each. With
	 * these the device replays a run of launches as one graph (CUDA
	 * graphs; OpenCL cl_khr_command_buffer; Level Zero immutable
	 * command lists). The core calls them on its own queue, one the
	 * program never sees, from one thread at a time per queue.
	 *
	 * graph_begin: from now on the launches issued on |queue| are
	 * recorded, not run (CUDA cuStreamBeginCapture). The core issues
	 * only launch calls on |queue| until graph_end. */
	wafer_status (*graph_begin)(void *device, void *queue);
	/* Ends recording on |queue| and stores in |*out_graph| something
	 * graph_launch can run any number of times, on any queue of the
	 * device (CUDA cuStreamEndCapture and cuGraphInstantiate). On
	 * failure |queue| is left usable, recording nothing. */
	wafer_status (*graph_end)(void *device, void *queue, void **out_graph);
	/* Runs |graph|'s launches on |queue|, in queue order like one
	 * launch (CUDA cuGraphLaunch). The same graph may be launched again
	 * before an earlier launch finished, on this or another queue. */
	wafer_status (*graph_launch)(void *device, void *queue, void *graph);
	/* Frees |graph|; launches of it issued before still run (CUDA
	 * cuGraphExecDestroy). */
	void (*graph_destroy)(void *device, void *graph);
#endif
#if WAFER_PLUGIN_ABI_MINOR >= 7
	/* Since ABI 1.7, optional: sub-communicators (wafer_comm_split).
	 * Every rank of |comm| calls it (from its own thread where ranks
	 * share a process) once the core synchronised the queues that used
	 * |comm|; it blocks until all did (ncclCommSplit, MPI_Comm_split).
	 * The ranks of one |color| (0 or more) form a new communicator on
	 * |device|, ranked by |key|, ties by their rank in |comm|; the new
	 * rank and size go to |*out_rank| and |*out_size|. |color| -1
	 * joins none: |*out_comm| NULL, WAFER_OK. Without it
	 * wafer_comm_split reports NOT_SUPPORTED. */
	wafer_status (*comm_split)(void *device, void *comm, int32_t color,
				   int32_t key, void **out_comm,
				   uint32_t *out_rank, uint32_t *out_size);

	/* Since ABI 1.7, optional, both or none: grouped collectives
	 * (wafer_comm_group_begin). The comm_run calls between begin and
	 * end, on the same thread, go to the transport together at end
	 * (ncclGroupStart/ncclGroupEnd); pairs nest. Without them the core
	 * issues each collective alone. */
	wafer_status (*comm_group_begin)(void *device);
	wafer_status (*comm_group_end)(void *device);
#endif
};

/* event_create's flags. */
#define WAFER_PLUGIN_EVENT_TIMING (UINT32_C(1) << 0)

/*===----------------------------------------------------------------------===
 * The plugin descriptor
 *===----------------------------------------------------------------------===*/

/* One name of a vendor value (since ABI 1.7): a program format from
 * WAFER_PROGRAM_VENDOR to _VENDOR_LAST or a native buffer kind from
 * WAFER_NATIVE_VENDOR to _VENDOR_LAST (wafer/types.h), and what the
 * core shows for it. |name| is 1 to WAFER_VENDOR_NAME_MAX - 1
 * characters of [a-z0-9_.-], not a name the core gives one of its own
 * values ("host-c", "cuda-pointer"). The loader skips, with a warning
 * in the plugin's report, an entry outside the vendor range, with a
 * bad name, one naming a value twice, or one that names a value another
 * loaded plugin named otherwise (the first name stays: two vendors
 * sharing a number should share its name). Arrays are stepped by the
 * first element's struct_size. */
#define WAFER_VENDOR_NAME_MAX 32
#define WAFER_VENDOR_PROGRAM_FORMAT 1 /* |value| is a wafer_program_format */
#define WAFER_VENDOR_NATIVE_KIND 2    /* |value| is a wafer_native_kind */
struct wafer_vendor_name {
	size_t struct_size;
	uint32_t what; /* WAFER_VENDOR_PROGRAM_FORMAT or _NATIVE_KIND */
	uint32_t value;
	const char *name;
};

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

#if WAFER_PLUGIN_ABI_MINOR >= 7
	/* Since ABI 1.7, optional, both or none: names for the plugin's
	 * vendor values (struct wafer_vendor_name above), so that
	 * wafer-info, the core's messages and wafer_program_format_name /
	 * wafer_native_kind_name say "acme-isa" rather than
	 * "vendor-0x10001". |vendor_names| stays valid while the plugin is
	 * loaded; the loader copies what it accepts. */
	const struct wafer_vendor_name *vendor_names;
	size_t vendor_name_count;
#endif
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

/* Operations the core's ops layer (ops.h) calls by these names. A plugin
 * offers what it can; a missing kernel makes the operation fail with
 * WAFER_ERROR_NOT_SUPPORTED naming the kernel and the plugin. For each:
 * bindings in order, the parameter block, the launch shape the core uses,
 * and what the kernel computes. The table entry's dtype is the element
 * type of every binding unless the entry says otherwise (cast).
 *
 * Before launch the core has checked, and a plugin does not check again:
 * that launch->kernel is an entry of this device's table; the binding
 * count and the parameter-block size against it (exactly); that every
 * binding is of a live handle, at an offset that is a multiple of
 * alloc_alignment, non-empty, inside its handle and so inside its
 * resource; global[i] >= 1. Its operations (ops.h) also build only
 * parameter blocks that fit their bindings; but a program may launch a
 * catalogue kernel through wafer_execute with any block, so a plugin
 * checks that the elements the parameter block reaches fit its bindings
 * and returns WAFER_ERROR_OUT_OF_RANGE (with the sizes) when they do not
 * or the reach overflows, and WAFER_ERROR_INVALID_ARGUMENT for a
 * malformed block: a rank of 0 or above WAFER_KERNEL_MAX_RANK, a zero
 * extent (shape[d], rows, cols, m, n, k or batch), an unknown dtype. A
 * count of 0 is not malformed: the launch does nothing and returns
 * WAFER_OK. On either error nothing runs; a kernel never reads or writes
 * past a binding. Two bindings of one handle are either the same range
 * or disjoint: the core refuses a launch whose bindings overlap
 * partially.
 *
 * Arrays crossing the boundary (kernel tables, options, bindings) are
 * stepped by their first element's struct_size, so either side may have
 * been built against a later minor version.
 *
 * Conventions for every entry below:
 *  - Counts, shapes, strides and offsets are in elements, never bytes.
 *    Strides and offsets are never negative (hence unsigned).
 *  - The core's operations bind each handle from its start (offset 0 of
 *    the HANDLE; element offsets go in the parameter block). The
 *    binding's offset into the RESOURCE is often non-zero, since
 *    handles are slices of pooled allocations: always add
 *    wafer_binding.offset.
 *  - Outputs are dense and row-major. Where an entry allows aliasing, it
 *    is exact aliasing only (the same resource, offset and layout); the
 *    core never passes partially overlapping bindings (see above).
 *  - Parameter blocks have no implicit padding (explicit `reserved`
 *    fields, set to 0 by the core), so their layout is the same for
 *    every compiler. They may sit at any address: copy them out with
 *    memcpy rather than casting the pointer.
 *  - One kernel name per operation. A plugin lists exactly the operations
 *    it has, so "is gelu supported?" is a table lookup, a missing one is
 *    reported when the operation is called (not when a launch fails
 *    later), and autotune can attach variants to one operation. A GPU
 *    plugin typically instantiates one templated body per name.
 *  - The launch shape is the core's suggestion of the work: a plugin maps
 *    it to threads, work-groups or loops as it likes, reading the real
 *    sizes from the parameter block.
 *
 * Since ABI 1.1: copy_strided, cast, the unary, binary, scalar and
 * strided-binary families, the reductions, softmax and matmul. Version 1.0
 * had noop, fill, copy, relu, add and mul, which keep their meaning, but
 * for relu of NaN, defined in 1.6 (the ABI history at the top). */

/* The largest rank a strided parameter block describes. */
#define WAFER_KERNEL_MAX_RANK 8

/* noop — bindings: none; params: none; global = {1, 1, 1}; list it as
 * WAFER_DTYPE_F32 (wafer-bench dispatch launches it as f32). Does
 * nothing: wafer-bench measures the cost of dispatch with it. */
#define WAFER_KERNEL_NOOP "noop"

/* fill — bindings: {out}; params: struct wafer_fill_params;
 * global = {count, 1, 1}. out[i] = value (converted to the dtype). */
#define WAFER_KERNEL_FILL "fill"
struct wafer_fill_params {
	uint64_t count;
	double value;
};

/* Contiguous elementwise kernels — params: struct
 * wafer_elementwise_params; global = {count, 1, 1}; i runs over
 * [0, count). Bindings may alias exactly (out == in, out == a, out == b,
 * a == b), never partially.
 *
 * Moves:
 *   copy:    {out, in}     out[i] = in[i], count elements of the entry's
 *                          dtype; the ops look it up with the tensor's
 *                          dtype (the tests use every dtype), so
 *                          list an entry per element type
 *
 * Unary, {out, in}:
 *   neg      out[i] = -in[i]
 *   abs      out[i] = |in[i]|
 *   exp      out[i] = e^in[i]
 *   log      out[i] = ln in[i]      (-inf at 0, NaN below 0)
 *   sqrt     out[i] = sqrt(in[i])   (NaN below 0)
 *   relu     out[i] = max(in[i], 0); NaN stays NaN (since ABI 1.6; a
 *            plugin built for 1.0 to 1.5 may give 0, as fmax does)
 *   gelu     the tanh form:
 *            out[i] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
 *            with x = in[i] (not the erf form; the two differ by < 1e-3)
 *   sigmoid  out[i] = 1 / (1 + e^-in[i]), without overflow for large |x|
 *   tanh     out[i] = tanh(in[i])
 *
 * Binary, {out, a, b}:
 *   add      out[i] = a[i] + b[i]
 *   sub      out[i] = a[i] - b[i]
 *   mul      out[i] = a[i] * b[i]
 *   div      out[i] = a[i] / b[i]   (IEEE: x/0 is +-inf or NaN)
 *   max      out[i] = max(a[i], b[i]); NaN if either is NaN
 *   min      out[i] = min(a[i], b[i]); NaN if either is NaN
 *
 * Accuracy: exp, log, sqrt, sigmoid, tanh and gelu within a few ulp of
 * the correctly rounded result (the core's tests allow 1e-5 relative
 * plus 1e-6 absolute in f32); the rest exact. */
#define WAFER_KERNEL_COPY "copy"
#define WAFER_KERNEL_NEG "neg"
#define WAFER_KERNEL_ABS "abs"
#define WAFER_KERNEL_EXP "exp"
#define WAFER_KERNEL_LOG "log"
#define WAFER_KERNEL_SQRT "sqrt"
#define WAFER_KERNEL_RELU "relu"
#define WAFER_KERNEL_GELU "gelu"
#define WAFER_KERNEL_SIGMOID "sigmoid"
#define WAFER_KERNEL_TANH "tanh"
#define WAFER_KERNEL_ADD "add"
#define WAFER_KERNEL_SUB "sub"
#define WAFER_KERNEL_MUL "mul"
#define WAFER_KERNEL_DIV "div"
#define WAFER_KERNEL_MAX "max"
#define WAFER_KERNEL_MIN "min"
struct wafer_elementwise_params {
	uint64_t count;
};

/* Binary with a scalar operand — bindings: {out, a}; params: struct
 * wafer_scalar_params; global = {count, 1, 1}. With s = scalar converted
 * to the dtype:
 *   out[i] = op(a[i], s)   when scalar_first == 0
 *   out[i] = op(s, a[i])   when scalar_first == 1  (s - a[i], s / a[i])
 * op as in the binary list above. out may alias a exactly. */
#define WAFER_KERNEL_ADD_SCALAR "add_scalar"
#define WAFER_KERNEL_SUB_SCALAR "sub_scalar"
#define WAFER_KERNEL_MUL_SCALAR "mul_scalar"
#define WAFER_KERNEL_DIV_SCALAR "div_scalar"
#define WAFER_KERNEL_MAX_SCALAR "max_scalar"
#define WAFER_KERNEL_MIN_SCALAR "min_scalar"
struct wafer_scalar_params {
	uint64_t count;
	double scalar;
	uint32_t scalar_first;
	uint32_t reserved;
};

/* Binary on strided views, which is how broadcasting reaches a kernel —
 * bindings: {out, a, b}; params: struct wafer_binary_strided_params;
 * global = {count, 1, 1} with count = the product of shape[0..rank).
 *
 * out is dense row-major with |shape|. For every index (i_0 .. i_{r-1})
 * of out:
 *   out[i]  = op(a[a_offset + sum_d i_d * a_strides[d]],
 *                b[b_offset + sum_d i_d * b_strides[d]])
 * A stride of 0 repeats the input along that dimension (broadcasting a
 * size-1 dimension, or a whole input when every stride is 0). rank is
 * 1..WAFER_KERNEL_MAX_RANK; entries at and past rank are 0 and ignored.
 * Every shape[d] >= 1. out may alias a or b exactly only when that input
 * is itself dense with out's shape and offset 0 (the core guarantees it;
 * an input read at other positions than it is written would be
 * clobbered). op as in the binary list. */
#define WAFER_KERNEL_ADD_STRIDED "add_strided"
#define WAFER_KERNEL_SUB_STRIDED "sub_strided"
#define WAFER_KERNEL_MUL_STRIDED "mul_strided"
#define WAFER_KERNEL_DIV_STRIDED "div_strided"
#define WAFER_KERNEL_MAX_STRIDED "max_strided"
#define WAFER_KERNEL_MIN_STRIDED "min_strided"
struct wafer_binary_strided_params {
	uint32_t rank;
	uint32_t reserved;
	uint64_t shape[WAFER_KERNEL_MAX_RANK];
	uint64_t a_strides[WAFER_KERNEL_MAX_RANK];
	uint64_t b_strides[WAFER_KERNEL_MAX_RANK];
	uint64_t a_offset;
	uint64_t b_offset;
};

/* copy_strided — bindings: {out, in}; params: struct
 * wafer_strided_copy_params; global = {count, 1, 1} with count = the
 * product of shape[0..rank). Gathers a strided view into a dense
 * row-major output:
 *   out[i] = in[offset + sum_d i_d * strides[d]]
 * rank, shape and zero strides as for the strided binary kernels (a
 * stride of 0 materialises a broadcast). out never aliases in. The
 * entry's dtype says the element size; a plugin should offer at least
 * f32, and f16, bf16, i32 where it offers cast to them. */
#define WAFER_KERNEL_COPY_STRIDED "copy_strided"
struct wafer_strided_copy_params {
	uint32_t rank;
	uint32_t reserved;
	uint64_t shape[WAFER_KERNEL_MAX_RANK];
	uint64_t strides[WAFER_KERNEL_MAX_RANK];
	uint64_t offset;
};

/* cast — bindings: {out, in}; params: struct wafer_cast_params;
 * global = {count, 1, 1}. Converts count elements of dtype_in into
 * dtype_out. The table entry's dtype is dtype_in: an entry for dtype X
 * converts X into every dtype the plugin keeps, that is lists a copy
 * kernel of (the core asks only for those; dtype_out == dtype_in is a
 * plain copy). Every conversion rounds once, from the exact source value:
 *   to f16, bf16,  round to nearest even; overflow gives +-inf; NaN stays
 *   f32, f64:      NaN (f16 subnormals are kept, not flushed);
 *   to i32, i64,   truncate toward zero, saturate at the type's limits,
 *   u8:            NaN gives 0.
 * A dtype_out the plugin does not keep is WAFER_ERROR_INVALID_ARGUMENT.
 * out never aliases in (sizes differ in general). */
#define WAFER_KERNEL_CAST "cast"
struct wafer_cast_params {
	uint64_t count;
	uint32_t dtype_in;  /* wafer_dtype */
	uint32_t dtype_out; /* wafer_dtype */
};

/* Reductions over the last axis — bindings: {out, in}; params: struct
 * wafer_rows_params; global = {rows, 1, 1} (one row per item; a GPU
 * plugin may give each row a work-group). in is rows x cols row-major
 * (cols >= 1), out holds rows elements:
 *   reduce_sum   out[r] = sum_c in[r, c]
 *   reduce_max   out[r] = max_c in[r, c]  (NaN if any is NaN)
 *   reduce_mean  out[r] = (sum_c in[r, c]) / cols
 * Summation order is the plugin's; results may differ from a sequential
 * sum by rounding (the tests allow 1e-5 relative of the sum of |x|).
 * out never aliases in. */
#define WAFER_KERNEL_REDUCE_SUM "reduce_sum"
#define WAFER_KERNEL_REDUCE_MAX "reduce_max"
#define WAFER_KERNEL_REDUCE_MEAN "reduce_mean"
struct wafer_rows_params {
	uint64_t rows;
	uint64_t cols;
};

/* softmax over the last axis — bindings: {out, in}; params: struct
 * wafer_rows_params; global = {rows, 1, 1}. For each row r:
 *   out[r, c] = e^(in[r, c] - m) / sum_j e^(in[r, j] - m),  m = max_j in[r, j]
 * (subtracting the row maximum keeps it finite for any finite input).
 * out may alias in exactly. */
#define WAFER_KERNEL_SOFTMAX "softmax"

/* matmul, batched — bindings: {out, a, b}; params: struct
 * wafer_matmul_params; global = {n, m, batch}. For each batch index t:
 *   C_t = op(A_t) x op(B_t)
 * with, row-major and in elements,
 *   A_t at a + t * batch_stride_a: m x k, or k x m stored when
 *       transpose_a (then op(A_t) is its transpose);
 *   B_t at b + t * batch_stride_b: k x n, or n x k stored when
 *       transpose_b;
 *   C_t at out + t * batch_stride_c: m x n.
 * A batch stride of 0 uses the same matrix for every t (a shared weight);
 * batch_stride_c is at least m * n unless batch == 1. m, n, k, batch >= 1.
 * Accumulation is in the dtype or wider, in any order. out never aliases
 * a or b. */
#define WAFER_KERNEL_MATMUL "matmul"
struct wafer_matmul_params {
	uint64_t batch, m, n, k;
	uint32_t transpose_a, transpose_b;
	uint64_t batch_stride_a, batch_stride_b, batch_stride_c;
};

#ifdef __cplusplus
}
#endif

#endif /* WAFER_PLUGIN_H */
