/* wafer — SPDX-License-Identifier: MIT
 *
 * lz_plugin.h: what the files of the Level Zero plugin share — the plugin
 * instance, the devices it found, an open device and its queues, and the
 * ops tables each file provides. Reading order:
 *
 *   plugin.c     the descriptor and wafer_plugin_query; init (zeInit,
 *                drivers, devices, options), device info, open/close
 *   storage.c    wafer_storage_ops: zeMemAllocDevice, copies through the
 *                queue's command list, virtual memory, zeMemAllocHost
 *   server.c     wafer_server_ops: a command list per queue (immediate
 *                where the driver has them), launches, sync, timers
 *   kernels.c    the kernel table and how each launch becomes a SPIR-V
 *                kernel, its arguments and its group counts
 *   kernels.cl   the kernels themselves (OpenCL C, compiled to SPIR-V at
 *                build time and embedded)
 *   program.c    programs, the caller's own SPIR-V kernels: the program
 *                entries of wafer_server_ops, and their launches
 *   status.c     ze_result_t names and their wafer_status
 *
 * The plugin links the Level Zero loader (libze_loader.so.1), the vendor-
 * neutral library every Level Zero driver is reached through; the loader
 * finds the drivers (libze_intel_gpu.so.1, ...) at zeInit. Without a
 * driver the plugin loads and reports zero devices with the reason.
 *
 * Nothing here is exported: the plugin is built with -fvisibility=hidden
 * and a version script, so wafer_plugin_query is its only dynamic symbol. */
#ifndef WAFER_PLUGINS_LEVELZERO_LZ_PLUGIN_H
#define WAFER_PLUGINS_LEVELZERO_LZ_PLUGIN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <level_zero/ze_api.h>

#include <wafer/plugin.h>
#include <wafer/plugin_util.h>

/* Every allocation and binding offset is a multiple of this: a cache line
 * of Intel GPUs, and more than any vector load the kernels make. */
#define LZ_ALIGNMENT 64

/* Default per-queue staging area for copies ([levelzero] staging). */
#define LZ_DEFAULT_STAGING ((size_t)4 << 20)

/* What `immediate = ` asks for. */
enum lz_immediate {
	LZ_IMMEDIATE_AUTO, /* immediate command lists where the driver has them */
	LZ_IMMEDIATE_NO,   /* always a command queue and a command list */
};

/* Launch limits of a device, from zeDeviceGetComputeProperties; kernels.c
 * shapes every dispatch within them. */
struct lz_limits {
	uint32_t max_group_size[3];
	uint32_t max_total_group_size;
	uint32_t max_group_count[3];
};

/* One device found at init: everything device_info reports, and what
 * device_open needs. Read-only after init. */
struct lz_device_slot {
	ze_driver_handle_t driver;
	ze_device_handle_t device;
	/* The context of this device's driver (shared by its devices). */
	ze_context_handle_t context;
	char name[WAFER_DEVICE_NAME_MAX];
	uint64_t memory_bytes;
	uint64_t capabilities;
	uint32_t compute_units;
	/* zeVirtualMemQueryPageSize; 0 when the driver has no virtual
	 * memory (the vm_* entries then report "not supported"). */
	size_t vm_granularity;
	struct lz_limits limits;
	/* Kernel timestamps: ticks per second and valid bits. */
	uint64_t timer_frequency;
	uint32_t timestamp_bits;
};

/* The plugin instance: one per init, freed by shutdown. */
struct lz_state {
	const struct wafer_host_services *host;
	enum lz_immediate immediate;
	size_t staging;
	/* The loader wraps every handle in its own object (several drivers,
	 * or ZE_ENABLE_LOADER_INTERCEPT). Loader 1.8 then hands back the
	 * build log of a failed zeModuleCreate unwrapped, and reading it
	 * crashes: no build log is asked for in that mode. */
	bool loader_intercepts;
	/* Why there are no devices ("zeInit: ..."), or "" when there are. */
	char no_device_reason[512];
	uint32_t device_count;
	struct lz_device_slot *devices;
	/* One context per driver that has devices, destroyed at shutdown. */
	uint32_t context_count;
	ze_context_handle_t *contexts;
};

struct lz_vm_range;

/* An open device. Storage and server entries may be called on it from
 * several threads at once (plugin.h); Level Zero calls are thread-safe
 * except on one command list, which belongs to one queue. */
struct lz_device {
	const struct lz_state *state;
	const struct lz_device_slot *slot;
	ze_context_handle_t context;
	ze_device_handle_t device;
	/* The embedded SPIR-V module, built for this device at open. */
	ze_module_handle_t module;
	/* The command queue group that runs kernels (and copies). */
	uint32_t compute_ordinal;
	/* Reserved address ranges (storage.c), under vm_lock. */
	pthread_mutex_t vm_lock;
	struct lz_vm_range *vm_ranges;
};

/* A deferred host-side action of a queue, done when the queue next waits:
 * a download's bytes go from staging to the caller, a temporary is freed. */
struct lz_pending {
	void *staged;    /* host memory the device wrote */
	void *dst;       /* caller's memory; NULL: nothing to copy */
	size_t size;
	void *free_host; /* a dedicated staging block to free, or NULL */
	void *free_dev;  /* a device temporary to free, or NULL */
};

/* A queue (server.c): one command list, immediate where possible. */
struct lz_queue {
	ze_command_list_handle_t list;
	/* NULL for an immediate list; else the queue regular lists are
	 * executed on, at every wait. */
	ze_command_queue_handle_t cq;
	/* Signalled by a barrier at every wait on an immediate list. */
	ze_event_pool_handle_t sync_pool;
	ze_event_handle_t sync_event;
	/* Commands appended since the last wait, and whether the next one
	 * must first wait for the previous (a barrier in between). */
	bool dirty;
	bool need_barrier;
	/* Staging area: one zeMemAllocHost block used front to back, reset
	 * at every wait; copies larger than what is left get their own. */
	unsigned char *staging;
	size_t staging_size;
	size_t staging_used;
	/* Deferred actions, done at the next wait. */
	struct lz_pending *pending;
	size_t pending_count, pending_cap;
	/* Kernel objects of this queue, created on first use: argument
	 * values live in a kernel object, so queues launching concurrently
	 * must not share them. Indexed like lz_spirv_kernels[]. */
	ze_kernel_handle_t *kernels;
	/* Failures found while waiting; the next sync reports the first. */
	struct wafer_plugin_deferred failed;
};

/* plugin.c */
const struct wafer_host_services *lz_host(const struct lz_device *device);

/* The device_ordinal interop hands out: wafer's index of the device
 * (Level Zero numbers none of its own). */
static inline int lz_device_ordinal(const struct lz_device *device)
{
	return (int)(device->slot - device->state->devices);
}

/* storage.c */
extern const struct wafer_storage_ops lz_storage_ops;
void lz_storage_open(struct lz_device *device);
/* Releases any range the core left reserved (a core bug; logged). */
void lz_storage_close(struct lz_device *device);
/* Page-locked host memory (zeMemAllocHost) for the queues' staging: the
 * plugin's own, since storage.host_alloc is retired (ABI 1.1). */
wafer_status lz_host_alloc(struct lz_device *device, size_t size,
			   void **out_ptr);
void lz_host_free(struct lz_device *device, void *ptr);

/* server.c */
extern const struct wafer_server_ops lz_server_ops;
/* For storage.c's copies: appends a copy to |queue|'s list, after
 * everything issued before it. */
wafer_status lz_queue_copy(struct lz_device *device, struct lz_queue *queue,
			   void *dst, const void *src, size_t size);
/* Host memory of |size| bytes the device may read or write until the
 * queue next waits (staging area or a block of its own). */
wafer_status lz_queue_stage(struct lz_device *device, struct lz_queue *queue,
			    size_t size, void **out_host);
/* Waits for everything issued on |queue| and does the deferred host-side
 * actions. A failure is also kept for the next sync. */
wafer_status lz_queue_wait(struct lz_device *device, struct lz_queue *queue);
/* Records |p| for the queue's next wait. */
wafer_status lz_queue_defer(struct lz_device *device, struct lz_queue *queue,
			    const struct lz_pending *p);
/* Appends a launch of |kernel| (group size and arguments set) with
 * |group_count| groups to |queue|, after everything issued before it;
 * |name| is for the error. */
wafer_status lz_queue_launch(struct lz_device *device, struct lz_queue *queue,
			     ze_kernel_handle_t kernel,
			     const uint32_t group_count[3], const char *name);

/* program.c: the program entries of lz_server_ops (plugin.h) */
WAFER_PLUGIN_PROGRAM_ENTRIES(lz);
wafer_status lz_program_launch(struct lz_device *device, struct lz_queue *queue,
			       const struct wafer_launch *launch);
/* The text of a module build log, malloc'd ("" when it has none); NULL
 * when out of memory. */
char *lz_build_log(ze_module_build_log_handle_t log);

/* status.c */
const char *lz_result_name(ze_result_t result);
wafer_status lz_status(ze_result_t result);
/* set_error("levelzero: <what>: <ZE_RESULT_...>") and the mapped status. */
wafer_status lz_fail(const struct wafer_host_services *host, ze_result_t result,
		     const char *what);

/* A resource is a device address (from zeMemAllocDevice or
 * zeVirtualMemReserve) widened to 64 bits (plugin.h). */
static inline void *lz_resource_ptr(wafer_resource resource)
{
	return (void *)(uintptr_t)resource;
}

static inline wafer_resource lz_ptr_resource(void *ptr)
{
	return (wafer_resource)(uintptr_t)ptr;
}

#endif
