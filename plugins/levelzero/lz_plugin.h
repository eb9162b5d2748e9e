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
 *   event.c      events and host callbacks (ABI 1.5): Level Zero events
 *                recycled through the device, signalled by barriers,
 *                waited on by other queues' lists
 *   graph.c      native graphs (ABI 1.6): launches recorded into a
 *                regular command list once, executed at every replay
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

struct vm_range;
struct lz_zevent;
struct lz_callbacks;
struct lz_graph;

/* What a queue holds until its next wait: an event or a graph. */
struct lz_held {
	struct lz_zevent *event;
	struct lz_graph *graph;
};

/* Regular command lists (server.c): those handed to a command queue
 * since a queue's last wait, or reset ones ready to take commands. */
struct lz_lists {
	ze_command_list_handle_t *list;
	size_t count, cap;
};

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
	struct vm_range *vm_ranges;
	/* Level Zero events no work uses any more, ready to be signalled
	 * again (event.c), and every event's count of users: under
	 * event_lock. [1]: from timestamp pools. */
	pthread_mutex_t event_lock;
	struct lz_zevent *free_events[2];
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
	struct lz_zevent *sync_event;
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
	/* Regular lists only: |list| has commands not yet handed to |cq|. */
	bool unsubmitted;
	/* With an immediate list, the command queue graphs run on, created
	 * at the first graph launch (graph.c). */
	ze_command_queue_handle_t graph_cq;
	/* Regular lists executed on |cq| or |graph_cq| since the last wait,
	 * and reset ones to use again. */
	struct lz_lists submitted, spare;
	/* Events that work issued since the last wait signals or waits on,
	 * and graphs it replays: the queue's references, dropped at its
	 * next wait. */
	struct lz_held *held;
	size_t held_count, held_cap;
	/* Host callbacks waiting to run, and the thread that runs them
	 * (event.c); NULL until the first. */
	struct lz_callbacks *callbacks;
	/* While a graph records (graph.c): the queue's own list, put back
	 * at graph_end, and its state then. */
	ze_command_list_handle_t saved_list;
	bool saved_dirty, saved_need_barrier, saved_unsubmitted;
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
/* Marks |queue| as having work since its last wait (appended or handed
 * over outside the helpers above). */
void lz_queue_dirty(struct lz_queue *queue);
/* Regular lists only: hands |queue|'s list to its command queue without
 * waiting, so that events it signals are signalled without a host wait
 * on the queue; a new list takes the queue's next commands. No-op on an
 * immediate list. */
wafer_status lz_queue_submit(struct lz_device *device, struct lz_queue *queue);
/* A reset regular list of the compute group: a spare of |queue|'s or a
 * new one. */
wafer_status lz_queue_take_list(struct lz_device *device,
				struct lz_queue *queue,
				ze_command_list_handle_t *out_list);
/* Keeps |list| (executed) until |queue|'s next wait, then resets it. */
wafer_status lz_queue_keep_list(struct lz_device *device,
				struct lz_queue *queue,
				ze_command_list_handle_t list);
/* Appends a barrier signalling |signal| (may be NULL) after everything
 * issued on |queue|; what follows needs no barrier of its own. */
wafer_status lz_queue_barrier(struct lz_device *device, struct lz_queue *queue,
			      ze_event_handle_t signal);
/* Destroys a queue's (or a graph's) kernel objects and their array. */
void lz_kernels_free(ze_kernel_handle_t *kernels);

/* event.c */
/* A Level Zero event nothing uses, reset: the caller's one reference. */
wafer_status lz_zevent_take(struct lz_device *device, bool timing,
			    struct lz_zevent **out);
ze_event_handle_t lz_zevent_handle(const struct lz_zevent *event);
/* Another reference to |what|'s event or graph, for |queue| until its
 * next wait. */
wafer_status lz_queue_hold(struct lz_device *device, struct lz_queue *queue,
			   struct lz_held what);
/* Appends to |queue| a wait on |event|, which |queue| holds until its
 * next wait; what |queue| runs after it waits for the event. */
wafer_status lz_queue_append_wait(struct lz_device *device,
				  struct lz_queue *queue,
				  struct lz_zevent *event);
/* Drops one reference; the last one resets the event for reuse. */
void lz_zevent_release(struct lz_device *device, struct lz_zevent *event);
/* After a failed wait (a lost device runs nothing more): signals from
 * the host every event |queue|'s work would have signalled or waited
 * on, so that no host callback thread or other queue waits for it
 * forever. */
void lz_queue_abandon_held(struct lz_queue *queue);
/* At a wait: drops |queue|'s references (events and graphs). */
void lz_queue_release_held(struct lz_device *device, struct lz_queue *queue);
/* At queue_destroy: ends the callback thread (the core synchronised the
 * queue, so every callback ran). */
void lz_callbacks_stop(struct lz_queue *queue);
/* At device_close: destroys the recycled events. */
void lz_events_close(struct lz_device *device);
WAFER_PLUGIN_EVENT_ENTRIES(lz);
/* Nanoseconds between two kernel-timestamp events' ends (0 when |to| ended
 * first), on |device|'s clock. */
wafer_status lz_timestamp_ns(struct lz_device *device, ze_event_handle_t from,
			     ze_event_handle_t to, uint64_t *out_ns);

/* graph.c */
WAFER_PLUGIN_GRAPH_ENTRIES(lz);
/* A graph's users, as an event's (lz_queue_hold). */
void lz_graph_use(struct lz_device *device, struct lz_graph *graph);
void lz_graph_release(struct lz_device *device, struct lz_graph *graph);

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
