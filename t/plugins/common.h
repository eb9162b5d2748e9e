/* wafer — SPDX-License-Identifier: MIT
 *
 * common.h: what the test plugins in t/plugins/ share. Each test plugin is
 * a small file that fills a descriptor from these entries and changes the
 * one thing it tests (an ABI major, a NULL required entry, a failing
 * init, ...). The entries implement a minimal host-memory backend: a
 * resource is a host pointer, launches run at once on the calling thread,
 * kernels "fill" and "add" on f32.
 *
 * Options ([<plugin>] section):
 *   devices = N          number of devices (default from tp_plugin)
 *   name = TEXT          device name; shown as "TEXT [<origin>]" so tests
 *                        see that the origin arrived too
 *   memory = BYTES       memory_bytes of each device (default 1 GiB)
 *   caps = BITS          capabilities the plugin claims (default
 *                        HOST_MEMORY | F64)
 *   vm_granularity = N   (default from tp_plugin)
 * An unknown key fails init with "unknown option <key> (<origin>)".
 *
 * t/internal/loader.c includes this header to look into struct tp_device (open
 * and close counts) of a device it acquired. */
#ifndef WAFER_T_PLUGINS_COMMON_H
#define WAFER_T_PLUGINS_COMMON_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/plugin.h>

#define TP_MAX_DEVICES 8

/* Defined by each plugin file: what differs between them. */
struct tp_plugin_defaults {
	const char *name;
	const char *version;
	const char *description;
	uint32_t devices;
	size_t vm_granularity;
};
extern const struct tp_plugin_defaults tp_plugin;

/* TP_PLUGIN(name, version, description, devices, vm_granularity);
 * defines a plugin file's tp_plugin (a granularity of 0: the default). */
#define TP_PLUGIN(name_, version_, description_, devices_, granularity_) \
	const struct tp_plugin_defaults tp_plugin = {			\
		.name = name_,						\
		.version = version_,					\
		.description = description_,				\
		.devices = devices_,					\
		.vm_granularity = granularity_,				\
	}

/* One device; device_open hands out a pointer to it. It lives as long as
 * the plugin state, so a test can read the counts after a close. */
struct tp_device {
	uint32_t index;
	int open_count;
	int close_count;
	int queues_live;
};

struct tp_state {
	uint32_t device_count;
	uint64_t memory_bytes;
	uint64_t caps;
	size_t vm_granularity;
	char name[WAFER_DEVICE_NAME_MAX];
	struct tp_device devices[TP_MAX_DEVICES];
	/* Every runtime's state, with the services it was queried with. */
	const struct wafer_host_services *host;
	struct tp_state *next;
};

/* The host services of a runtime that has the plugin initialised (of
 * the one querying it while none has). Two runtimes in a process load the same copy of
 * the plugin, and each frees its services when it closes: a pointer kept
 * to the closed one's would be used after it is freed. */
extern const struct wafer_host_services *_Atomic tp_host;

/* Call from wafer_plugin_query: remembers |host| and fills |d| as a
 * complete, valid descriptor for ABI WAFER_PLUGIN_ABI_MAJOR.MINOR from
 * tp_plugin and the tp_* entries below (tables with every optional entry
 * NULL). The plugin then changes the one thing it tests and returns |d|. */
void tp_describe(const struct wafer_host_services *host,
		 struct wafer_plugin *d);

/* TP_PLUGIN_QUERY(d) { ... } defines the plugin's wafer_plugin_query: it
 * fills a static descriptor with tp_describe, then runs the block that
 * follows on it (|d| names it there) to change the one thing the plugin
 * tests, and returns it. */
#define TP_PLUGIN_QUERY(d)						\
	static void tp_adjust(struct wafer_plugin *d);			\
	WAFER_PLUGIN_EXPORT const struct wafer_plugin *			\
	wafer_plugin_query(uint32_t core_abi_major,			\
			   const struct wafer_host_services *host)	\
	{								\
		static struct wafer_plugin desc;			\
									\
		(void)core_abi_major;					\
		tp_describe(host, &desc);				\
		tp_adjust(&desc);					\
		return &desc;						\
	}								\
	static void tp_adjust(struct wafer_plugin *d)

/* The query of a plugin that has its own storage and server tables. */
#define TP_PLUGIN_TABLES(storage_ops, server_ops)			\
	TP_PLUGIN_QUERY(d)						\
	{								\
		d->storage = &storage_ops;				\
		d->server = &server_ops;				\
	}

/* The required server entries, for a plugin's own server table. */
#define TP_SERVER_REQUIRED						\
	.queue_create = tp_queue_create,				\
	.queue_destroy = tp_queue_destroy,				\
	.launch = tp_launch,						\
	.sync = tp_sync

/* The required storage entries, for a plugin's own storage table. */
#define TP_STORAGE_REQUIRED						\
	.alloc = tp_alloc,						\
	.free = tp_free,						\
	.copy_in = tp_copy_in,						\
	.copy_out = tp_copy_out,					\
	.copy = tp_copy

/* The optional memory entries below (stream-ordered, virtual, pinned). */
#define TP_STORAGE_MEMORY						\
	.alloc_async = tp_alloc_async,					\
	.free_async = tp_free_async,					\
	.vm_reserve = tp_vm_reserve,					\
	.vm_release = tp_vm_release,					\
	.vm_map = tp_vm_map,						\
	.vm_unmap = tp_vm_unmap,					\
	.host_alloc = tp_host_alloc,					\
	.host_free = tp_host_free

/* The optional groups below a plugin's table may take whole: native
 * buffers in and out; native queues out and in; device timers. */
#define TP_STORAGE_INTEROP						\
	.native = tp_native,						\
	.import = tp_import,						\
	.forget = tp_forget
#define TP_SERVER_INTEROP						\
	.queue_native = tp_queue_native,				\
	.queue_wrap = tp_queue_wrap
#define TP_SERVER_TIMERS						\
	.timer_begin = tp_timer_begin,					\
	.timer_end = tp_timer_end

/* A plugin's own storage or server table |name| of this minor: the
 * required entries, then the designated initializers that follow. */
#define TP_STORAGE_OPS(name, ...)					\
	static const struct wafer_storage_ops name = {			\
		.struct_size = sizeof(struct wafer_storage_ops),	\
		TP_STORAGE_REQUIRED, __VA_ARGS__}
#define TP_SERVER_OPS(name, ...)					\
	static const struct wafer_server_ops name = {			\
		.struct_size = sizeof(struct wafer_server_ops),		\
		TP_SERVER_REQUIRED, __VA_ARGS__}

/* Lifetime and devices. */
wafer_status tp_init(const struct wafer_plugin_init_args *args,
		     void **out_state);
void tp_shutdown(void *state);
wafer_status tp_device_count(void *state, uint32_t *out_count);
wafer_status tp_device_info(void *state, uint32_t index,
			    struct wafer_device_info *out);
wafer_status tp_device_open(void *state, uint32_t index, void **out_device);
void tp_device_close(void *device);
wafer_status tp_device_kernels(void *device,
			       const struct wafer_kernel **out_kernels,
			       size_t *out_count);

/* Required storage and server entries. */
wafer_status tp_alloc(void *device, size_t size, wafer_resource *out_resource);
void tp_free(void *device, wafer_resource resource);
wafer_status tp_copy_in(void *device, void *queue, wafer_resource dst,
			size_t dst_offset, const void *src, size_t size);
wafer_status tp_copy_out(void *device, void *queue, wafer_resource src,
			 size_t src_offset, void *dst, size_t size);
wafer_status tp_copy(void *device, void *queue, wafer_resource dst,
		     size_t dst_offset, wafer_resource src, size_t src_offset,
		     size_t size);
wafer_status tp_queue_create(void *device, void **out_queue);
void tp_queue_destroy(void *device, void *queue);
wafer_status tp_launch(void *device, void *queue,
		       const struct wafer_launch *launch);
wafer_status tp_sync(void *device, void *queue);

/* Optional entries (full.c, old_minor.c): host memory standing in for
 * stream-ordered, virtual and pinned memory; wall-clock timers. */
wafer_status tp_alloc_async(void *device, void *queue, size_t size,
			    wafer_resource *out_resource);
wafer_status tp_free_async(void *device, void *queue, wafer_resource resource);
wafer_status tp_vm_reserve(void *device, size_t size, wafer_resource *out_range);
void tp_vm_release(void *device, wafer_resource range);
wafer_status tp_vm_map(void *device, wafer_resource range, size_t offset,
		       size_t size);
wafer_status tp_vm_unmap(void *device, wafer_resource range, size_t offset,
			 size_t size);
wafer_status tp_host_alloc(void *device, size_t size, void **out_ptr);
void tp_host_free(void *device, void *ptr);
wafer_status tp_timer_begin(void *device, void *queue, void **out_timer);
wafer_status tp_timer_end(void *device, void *queue, void *timer,
			  uint64_t *out_ns);
/* Interop (ABI 1.3; full.c, half_interop.c): host pointers out and in;
 * the native queue is NULL for the plugin's own queues, and queue_wrap
 * takes any pointer as the caller's queue and gives it back as the
 * native one. */
wafer_status tp_native(void *device, wafer_resource resource, size_t offset,
		       struct wafer_native_buffer *out);
wafer_status tp_import(void *device, const struct wafer_native_buffer *buffer,
		       wafer_resource *out_resource);
void tp_forget(void *device, wafer_resource resource);
wafer_status tp_queue_native(void *device, void *queue,
			     struct wafer_native_queue *out);
wafer_status tp_queue_wrap(void *device, void *native, void **out_queue);

/* Tables with the required entries only (every optional one NULL). */
extern const struct wafer_storage_ops tp_storage_ops;
extern const struct wafer_server_ops tp_server_ops;

#endif
