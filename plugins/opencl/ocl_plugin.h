/* wafer — SPDX-License-Identifier: MIT
 *
 * ocl_plugin.h: what the files of the OpenCL plugin share — the plugin
 * instance and its device list, an open device, a queue, and the entry
 * points each file provides. Reading order:
 *
 *   plugin.c     the descriptor and wafer_plugin_query; init ([opencl]
 *                options), platform and device enumeration, device info,
 *                open and close
 *   errors.c     OpenCL error codes to names and wafer statuses
 *   storage.c    wafer_storage_ops: cl_mem buffers, copies, pinned
 *                staging of uploads
 *   event.c      events and host callbacks: markers, barriers, callbacks
 *   graph.c      native graphs (cl_khr_command_buffer), and the one
 *                place every command is enqueued or recorded
 *   server.c     wafer_server_ops: in-order profiling queues, launch,
 *                sync, device timers
 *   kernels_build.c  building the OpenCL C programs at first use
 *   program.c    programs the caller brings (OpenCL C, SPIR-V): the
 *                program entries of wafer_server_ops, and their launches
 *   cache.c      program binaries in the host's compiled-binary cache
 *   kernels.c    the kernel table: which catalogue entry runs which
 *                OpenCL C function, and how its arguments are set
 *   clblast.c    CLBlast's GEMM as a matmul variant (when configured)
 *   cl/<unit>.cl  the OpenCL C sources, embedded at build time
 *
 * The plugin links the OpenCL ICD loader (libOpenCL.so.1), which is
 * vendor-neutral and loads each vendor's driver itself; a machine with the
 * loader but no driver gets CL_PLATFORM_NOT_FOUND_KHR, which device_count
 * reports as the reason for zero devices. It speaks OpenCL 1.2 (the
 * build sets CL_TARGET_OPENCL_VERSION=120), which every 2.x and 3.0
 * platform also offers: PoCL, NVIDIA, AMD, Intel, ARM.
 *
 * A resource is a cl_mem widened to 64 bits; a binding is that buffer and
 * a byte offset, passed to kernels as the buffer and an element offset
 * (never a sub-buffer: their alignment rules differ per device). */
#ifndef WAFER_PLUGINS_OPENCL_OCL_PLUGIN_H
#define WAFER_PLUGINS_OPENCL_OCL_PLUGIN_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include <CL/cl.h>
#include <CL/cl_ext.h>

#include <wafer/plugin.h>
#include <wafer/plugin_util.h>

/* The plugin's name in messages and in wafer.conf ([opencl]). */
#define OCL_NAME "opencl"

/* Longest platform or device string we keep (names, versions). */
#define OCL_TEXT_MAX 256

/* The most bindings any kernel of the catalogue takes. */
#define OCL_MAX_BINDINGS 3

/* Cast targets, each a kernel per source: f32, f16, bf16, i32, i64, f64
 * (kernels.c: cast_slot, slot_names). */
#define OCL_DTYPE_SLOTS 6

/*===----------------------------------------------------------------------===
 * The plugin instance and its devices
 *===----------------------------------------------------------------------===*/

/* One OpenCL device as init found it. */
struct ocl_device_entry {
	cl_platform_id platform;
	cl_device_id id;
	cl_device_type type;
	char platform_name[OCL_TEXT_MAX];
	char platform_version[OCL_TEXT_MAX];
	char name[OCL_TEXT_MAX];
	char vendor[OCL_TEXT_MAX];
	char driver_version[OCL_TEXT_MAX];
	char device_version[OCL_TEXT_MAX];
};

/* The plugin instance: one per init, read-only after it, so every thread
 * may use it without locking. */
struct ocl_state {
	const struct wafer_host_services *host;

	/* [opencl] options (plugin.c has the list and wafer-opencl(7) the
	 * words). Filters are NULL when not set. */
	char *platform_filter;
	char *device_filter;
	cl_device_type type_mask;
	char *build_options;
	int cache_enabled;
	char *cache_dir; /* as set; the core reads it (binary_cache.c) */
	int clblast_enabled;
	enum {
		OCL_STAGING_AUTO,
		OCL_STAGING_ALWAYS,
		OCL_STAGING_NEVER
	} staging;

	/* The devices that passed the filters, GPUs first. */
	struct ocl_device_entry *devices;
	uint32_t device_count;
	/* Why there are none, when there are none: device_count's error. */
	wafer_status enum_status;
	char enum_error[1024];
};

/* Program units: the OpenCL C sources, each built as one cl_program per
 * device at the first launch of any of its kernels (kernels_build.c). */
enum ocl_unit {
	OCL_UNIT_ELEMENTWISE, /* noop, unary, binary, scalar */
	OCL_UNIT_STRIDED,     /* strided binary, copy_strided, cast */
	OCL_UNIT_ROWS,        /* reductions over the last axis, softmax */
	OCL_UNIT_MATMUL,      /* the tiled and naive matmul variants */
	OCL_UNIT_COUNT
};

/* A unit's program on one device: built (or loaded from the cache) once,
 * under the device's lock. A failed build is remembered, so each later
 * launch fails at once with the same detail instead of compiling again. */
struct ocl_unit_program {
	cl_program program;
	wafer_status status; /* WAFER_OK until a build failed */
	char *error;         /* the failure's detail, with the build log */
};

/* An open device. The core may call storage and server entries on it from
 * several threads at once (plugin.h): what is mutable is under |lock|, or
 * belongs to a queue. */
struct ocl_device {
	const struct ocl_state *state;
	const struct ocl_device_entry *entry;
	cl_context context;
	/* For work that belongs to no client queue: mapping and unmapping
	 * the staging rings. */
	cl_command_queue util_queue;

	/* From the device's properties (plugin.c). */
	size_t alignment;     /* alloc_alignment we announce */
	cl_ulong max_alloc;   /* CL_DEVICE_MAX_MEM_ALLOC_SIZE */
	size_t max_work_group;
	int host_unified;     /* device memory is host memory (PoCL, iGPUs) */
	int has_fp16;         /* cl_khr_fp16: half arithmetic in hardware */
	int has_fp64;
	/* CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT: the programs are built with
	 * -cl-fp32-correctly-rounded-divide-sqrt, so div is exact as the
	 * catalogue asks (OpenCL's default allows 2.5 ulp). */
	int exact_div_sqrt;

	/* Guards |programs|; held while one builds, so two queues needing
	 * the same program at once compile it once. */
	pthread_mutex_t program_lock;
	struct ocl_unit_program programs[OCL_UNIT_COUNT];

	/* cl_khr_command_buffer's entries, where the device has it with
	 * simultaneous use (graph.c). */
	struct ocl_command_buffers {
		int available;
		clCreateCommandBufferKHR_fn create;
		clFinalizeCommandBufferKHR_fn finalize;
		clReleaseCommandBufferKHR_fn release;
		clEnqueueCommandBufferKHR_fn enqueue;
		clCommandNDRangeKernelKHR_fn ndrange;
		clCommandFillBufferKHR_fn fill;
		clCommandCopyBufferKHR_fn copy;
	} command_buffers;

	/* The kernel table device_kernels returns (kernels.c). */
	struct wafer_kernel *kernels;
	size_t kernel_count;
	/* offered[i]: descriptor i of kernels.c is in this device's table. */
	unsigned char *offered;
};

/*===----------------------------------------------------------------------===
 * Queues
 *===----------------------------------------------------------------------===*/

/* Uploads go through a ring of pinned host memory (storage.c) so that
 * copy_in returns without waiting for the device and the caller may reuse
 * its buffer at once. Each staged write holds a range of the ring until
 * its event completes; the queue is in order, so they complete in the
 * order they were issued and the ring frees from its tail. */
#define OCL_STAGING_SLOTS 256

struct ocl_staging_slot {
	cl_event event;
	size_t begin, end; /* bytes of the ring this write holds */
};

struct ocl_staging {
	cl_mem buffer;  /* CL_MEM_ALLOC_HOST_PTR, mapped for its whole life */
	char *host;     /* the mapping */
	size_t size;    /* 0: not created yet; SIZE_MAX: creation failed */
	struct ocl_staging_slot slots[OCL_STAGING_SLOTS];
	unsigned first, count; /* in-flight writes, oldest first */
};

struct ocl_timer; /* server.c */
struct ocl_kernel_desc; /* cache.c: program binaries on disk */
#define OCL_PATH_MAX 4096
struct ocl_cache_key {
	char text[2048];         /* everything the binary depends on */
	uint64_t hash;           /* of |text|, for log lines */
	/* What the log lines name ("the binary cache (key ...)"); "" when
	 * caching is off or the host has no cache. */
	char path[OCL_PATH_MAX];
	/* Whose cache_load/cache_store keep the binaries. */
	const struct wafer_host_services *host;
};
/* FNV-1a, 64 bits, continuing from |hash| (start: 1469598103934665603). */
uint64_t ocl_fnv1a(uint64_t hash, const void *data, size_t size);
/* binary_check.c: 0 when |binary| is a PoCL binary whose sizes run past
 * its end (or that cannot be checked), the reason in |why|; 1 otherwise
 * (other drivers' binaries are not walked). */
int ocl_binary_check(const unsigned char *binary, size_t size, char *why,
		     size_t why_size);
void ocl_cache_key(const struct ocl_device *device, const char *unit,
		   const char *options, const char *const *sources,
		   size_t source_count, struct ocl_cache_key *key);
/* The cached binary for |key| (malloc'd), or NULL; |why| is "": the
 * host logs why it did not believe a file. */
unsigned char *ocl_cache_read(const struct ocl_cache_key *key,
			      size_t *out_size, char *why, size_t why_size);
/* Stores the binary (the host writes it atomically and logs a failure);
 * -1 on failure, |why| "". */
int ocl_cache_write(const struct ocl_cache_key *key,
		    const unsigned char *binary, size_t size, char *why,
		    size_t why_size);

/* kernels.c */

/* A client's queue. Calls on one queue are never concurrent (plugin.h),
 * so nothing here is locked. */
struct ocl_queue {
	struct ocl_device *device;
	/* In order, CL_QUEUE_PROFILING_ENABLE; or the caller's (queue_wrap:
	 * in order, retained). */
	cl_command_queue queue;
	int profiling; /* |queue| has CL_QUEUE_PROFILING_ENABLE: timers */

	/* clCreateKernel'd per queue, at first use: cl_kernel arguments
	 * are state, and two queues may launch the same kernel at once.
	 * Indexed by descriptor (kernels.c) and a sub-function (cast: the
	 * output dtype; 0 for the rest); kernel_wg holds each kernel's
	 * CL_KERNEL_WORK_GROUP_SIZE. */
	cl_kernel *kernels;
	size_t *kernel_wg;

	struct ocl_staging staging;

	/* Timers running on this queue: every command issued while one runs
	 * keeps its event, so the timer can read device time stamps. */
	struct ocl_timer *timers;

	/* Between graph_begin and graph_end: the command buffer the queue's
	 * commands are recorded into (graph.c). */
	cl_command_buffer_khr recording;

	/* Failures found after their command was issued (a staged write
	 * whose event failed); sync returns the first and forgets them. */
	struct wafer_plugin_deferred failed;
};

/*===----------------------------------------------------------------------===
 * Entry points of the files
 *===----------------------------------------------------------------------===*/

/* event.c: events and host callbacks (the server's ABI 1.5 entries) */
WAFER_PLUGIN_EVENT_ENTRIES(ocl);

/* graph.c: native graphs (the server's ABI 1.6 entries) and the commands
 * of the plugin, enqueued on |q| or recorded while it records a graph
 * (then |ev| is not set: ocl_queue_timing is 0 while recording). */
void ocl_graph_probe(struct ocl_device *dev);
WAFER_PLUGIN_GRAPH_ENTRIES(ocl);
cl_int ocl_enqueue_ndrange(struct ocl_queue *q, cl_kernel kernel,
			   cl_uint dims, const size_t *global,
			   const size_t *local, cl_event *ev);
cl_int ocl_enqueue_fill(struct ocl_queue *q, cl_mem mem, const void *pattern,
			size_t pattern_size, size_t offset, size_t size,
			cl_event *ev);
cl_int ocl_enqueue_copy(struct ocl_queue *q, cl_mem src, cl_mem dst,
			size_t src_offset, size_t dst_offset, size_t size,
			cl_event *ev);

/* plugin.c: whether the space-separated |extensions| list |name|. */
int ocl_has_extension(const char *extensions, const char *name);

/* errors.c */
/* "CL_OUT_OF_RESOURCES"; "unknown OpenCL error" for codes it does not
 * know. Covers OpenCL 1.0-3.0 and the common KHR extension codes. */
const char *ocl_error_name(cl_int code);
/* The wafer status an OpenCL failure becomes: allocation failures are
 * WAFER_ERROR_OUT_OF_MEMORY, a missing platform or device
 * WAFER_ERROR_NO_DEVICE, bad work sizes WAFER_ERROR_INVALID_ARGUMENT,
 * other CL_INVALID_* codes (our bugs) WAFER_ERROR_INTERNAL, everything
 * else WAFER_ERROR_DEVICE. */
wafer_status ocl_status_of(cl_int code);
/* set_error("opencl: <what>: CL_NAME (code)") and returns
 * ocl_status_of(code). |what| is printf-style. */
wafer_status ocl_fail(const struct wafer_host_services *host, cl_int code,
		      const char *format, ...)
	__attribute__((format(printf, 3, 4)));

/* storage.c */
extern const struct wafer_storage_ops ocl_storage_ops;
/* Reaps finished staged writes; with |wait_all|, waits for every one.
 * A failed write is kept as the queue's error. */
void ocl_staging_reap(struct ocl_queue *queue, int wait_all);
void ocl_staging_destroy(struct ocl_queue *queue);

/* server.c */
extern const struct wafer_server_ops ocl_server_ops;
/* While a timer runs on |queue|, every command issued on it asks for an
 * event and hands it to ocl_queue_timed (the timers retain what they
 * keep; the caller still releases its own reference). Otherwise commands
 * make no event: they cost. */
static inline int ocl_queue_timing(const struct ocl_queue *queue)
{
	return queue->timers != NULL && !queue->recording;
}
void ocl_queue_timed(struct ocl_queue *queue, cl_event event);
/* The end of a command enqueued with |ev| (NULL when not timed, else
 * &event): hands the event to ocl_queue_timed and releases it. Returns
 * WAFER_OK. */
wafer_status ocl_queue_done(struct ocl_queue *queue, cl_event *ev);

/* kernels_build.c */
/* The unit's program on |device|, built or loaded from the cache on the
 * first call. On failure set_error has the detail (with the build log). */
wafer_status ocl_unit_program_get(struct ocl_device *device, enum ocl_unit unit,
				  cl_program *out_program);
void ocl_unit_programs_release(struct ocl_device *device);
/* Name of a unit, for messages and cache files: "elementwise". */
const char *ocl_unit_name(enum ocl_unit unit);
/* The device's build log of |program|, malloc'd ("" when there is none);
 * NULL when out of memory. */
char *ocl_build_log(const struct ocl_device *device, cl_program program);

/* program.c: the program entries of ocl_server_ops (plugin.h) */
WAFER_PLUGIN_PROGRAM_ENTRIES(ocl);
wafer_status ocl_program_launch(struct ocl_queue *queue,
				const struct wafer_launch *launch);

/* kernels.c */
wafer_status ocl_kernels_open(struct ocl_device *device);
void ocl_kernels_close(struct ocl_device *device);
/* Slots of the per-queue kernel cache (queue->kernels). */
size_t ocl_kernel_slot_count(void);
wafer_status ocl_kernels_launch(struct ocl_queue *queue,
				const struct wafer_launch *launch);

/* clblast.c (stubs when the plugin was built without CLBlast) */
/* A binding resolved for a launch: buffer, byte offset, byte size. */
struct ocl_bound {
	cl_mem mem;
	size_t offset;
	size_t size;
};
/* Whether the clblast matmul variant is offered for |dtype| on |device|:
 * built with CLBlast, [opencl] clblast on, and for f16 cl_khr_fp16. */
int ocl_clblast_available(const struct ocl_device *device, wafer_dtype dtype);
/* C = op(A) op(B), batched, on |queue| ({out, a, b} = bind[0..2]). */
wafer_status ocl_clblast_gemm(struct ocl_queue *queue,
			      const struct ocl_bound *bind,
			      const struct wafer_matmul_params *params,
			      wafer_dtype dtype, cl_event *event);
/* Drops CLBlast's compiled kernels (at plugin shutdown). */
void ocl_clblast_shutdown(void);

/*===----------------------------------------------------------------------===
 * Small helpers
 *===----------------------------------------------------------------------===*/

static inline cl_mem ocl_resource_mem(wafer_resource resource)
{
	return (cl_mem)(uintptr_t)resource;
}

static inline wafer_resource ocl_mem_resource(cl_mem mem)
{
	return (wafer_resource)(uintptr_t)mem;
}


static inline const struct wafer_host_services *
ocl_host(const struct ocl_device *device)
{
	return device->state->host;
}

#endif
