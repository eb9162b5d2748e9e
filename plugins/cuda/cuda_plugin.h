/* wafer — SPDX-License-Identifier: MIT
 *
 * cuda_plugin.h: what the files of the cuda plugin share — the plugin
 * instance, the open device, the queue, and the ops tables each file
 * provides. Reading order:
 *
 *   driver.c     libcuda loaded with dlopen, entry points resolved with
 *                cuGetProcAddress at a pinned API version (driver.h)
 *   plugin.c     the descriptor and wafer_plugin_query; [cuda] options;
 *                devices (count, info, open, close)
 *   storage.c    wafer_storage_ops: device memory, stream-ordered
 *                allocation, virtual memory, pinned host memory, copies
 *   staging.c    the pinned staging buffers uploads and downloads go
 *                through, and when a download's bytes reach the caller
 *   server.c     wafer_server_ops: streams, launch, sync, event timers
 *   kernels.c    the kernel table: which CUDA function serves which
 *                catalogue entry, and how each is launched
 *   cublas.c     cuBLAS, loaded with dlopen, as a matmul variant
 *   program.c    programs: the caller's own kernels (CUDA C, PTX,
 *                CUBIN), loaded and launched
 *   nvrtc.c      NVRTC, loaded with dlopen, compiling CUDA C
 *   peer.c       peer copies between two devices (or queues) of the plugin
 *   event.c      events and host callbacks: queues ordered on the device
 *   nccl.c       collectives through NCCL, loaded with dlopen
 *   kernels/ the device code (.cu), compiled by nvcc to fatbins that
 *                fatbins.S embeds in the plugin
 *
 * Threads: plugin.h lets the core call entries on one device from several
 * threads at once (different queues), and a thread has no current CUDA
 * context until someone sets one. Every entry that reaches the driver
 * first makes the device's context current (cuda_enter). */
#ifndef WAFER_PLUGINS_CUDA_CUDA_PLUGIN_H
#define WAFER_PLUGINS_CUDA_CUDA_PLUGIN_H

#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <wafer/plugin.h>
#include <wafer/plugin_util.h>

#include "plugins/cuda/driver.h"
#include "plugins/cuda/kernels.h"

/* Every allocation and binding offset is a multiple of this. cuMemAlloc
 * and the stream-ordered pool return 256-byte aligned pointers, and the
 * widest vector access in the kernels is 16 bytes. */
#define CUDA_ALIGNMENT 256

/* The oldest GPU the embedded kernels run on: compute capability 8.0
 * (SASS for sm_80 and sm_90, PTX for compute_80 and compute_90). */
#define CUDA_MIN_ARCH 80

/* Staging buffers come in power-of-two sizes from this up to the
 * configured chunk. */
#define CUDA_STAGING_MIN ((size_t)64 << 10)
#define CUDA_STAGING_CLASSES 16

/* Devices (CUDA ordinals) below this have their peer access tried by
 * copy_peer (peer.c); others copy without it. */
#define CUDA_PEER_MAX 64

/* [cuda] options after init (plugin.c documents each). */
struct cuda_options {
	char *driver_library;       /* NULL: libcuda.so.1 */
	uint64_t release_threshold; /* UINT64_MAX: the pool keeps all */
	size_t staging_chunk;       /* largest staging buffer */
	size_t staging_limit;       /* pinned staging bytes per device */
	size_t vm_page;             /* 0: the driver's granularity */
	int vm_whole;               /* vm_page = whole: one allocation a map */
	int cublas;                 /* 0: never; 1: when it loads */
	char *cublas_library;       /* NULL: search the usual names */
	int nvrtc;                  /* 0: never; 1: when it loads */
	char *nvrtc_library;        /* NULL: search the usual names */
	int nccl;                   /* 0: no collectives; 1: when NCCL loads */
	char *nccl_library;         /* NULL: libnccl.so.2 */
};

/* A library of the toolkit loaded with dlopen (cuBLAS, NVRTC). */
struct cuda_library {
	void *handle;
	char path[256]; /* the name it was opened by */
};

/* One loaded on first use, tried once per plugin instance: its table
 * (cublas.c's struct cuda_cublas, ...: it begins with its struct
 * cuda_library), NULL until then or when it did not load. */
struct cuda_lazy_library {
	pthread_mutex_t lock;
	int tried;
	struct cuda_library *table;
};

/* The plugin instance. Read-only after init except the cuBLAS and NVRTC
 * loaders, which have their own locks. */
struct cuda_state {
	const struct wafer_host_services *host;
	struct cuda_options options;
	struct cuda_driver driver;
	/* Why there are no devices ("" when there are some): what
	 * device_count reports. */
	char unavailable[512];
	/* The devices offered, as CUDA ordinals: those of compute capability
	 * CUDA_MIN_ARCH and later, in the driver's order. */
	uint32_t device_count;
	int *ordinals;
	struct cuda_lazy_library cublas;
	struct cuda_lazy_library nvrtc;
	struct cuda_lazy_library nccl;
	/* Peer access tried (peer.c): bit p of peer_tried[d], device d's
	 * context towards device p's memory (CUDA ordinals). */
	pthread_mutex_t peer_lock;
	uint64_t peer_tried[CUDA_PEER_MAX];
};

/* One pinned staging buffer and, while a copy uses it, that copy. */
struct cuda_staging {
	void *host;           /* cuMemHostAlloc'd, |size| bytes */
	size_t size;          /* its size class */
	CUevent done;         /* recorded after the copy that uses it */
	/* A download owns the buffer until its bytes reach |dst|. */
	void *dst;            /* NULL for an upload */
	size_t bytes;
	struct cuda_staging *next;
};

/* The device's staging buffers not in use, by size class, and the bytes
 * they hold in all (free or in use). Shared by the device's queues. */
struct cuda_staging_pool {
	pthread_mutex_t lock;
	struct cuda_staging *free[CUDA_STAGING_CLASSES];
	size_t bytes;  /* pinned bytes held, free and in use */
	size_t limit;  /* the most it may hold */
	size_t chunk;  /* the largest buffer; a power of two */
	int failed;    /* pinning failed once (logged once) */
};

struct vm_range;

/* An open device. */
struct cuda_device {
	struct cuda_state *state;
	const struct cuda_driver *drv;
	const struct wafer_host_services *host;
	uint32_t index;  /* wafer's index: cuda:N */
	int ordinal;     /* CUDA's */
	CUdevice cu;
	CUcontext ctx;   /* the primary context, retained for the process */
	int arch;        /* compute capability x 10 + minor: 90 for 9.0 */
	int sm_count;
	int smem_optin;  /* shared memory a block may opt into */
	/* cuMemGetAllocationGranularity; 0 when the device has no virtual
	 * memory management (the core then treats vm_* as not offered). */
	size_t vm_granularity;
	/* [cuda] vm_page = whole: each vm_map call is one physical
	 * allocation, and vm_unmap takes whole earlier vm_map calls only. */
	int vm_whole;
	/* The device's default stream-ordered pool; NULL when the device has
	 * none (alloc_async then reports WAFER_ERROR_NOT_SUPPORTED). */
	CUmemoryPool pool;

	CUmodule modules[CUDA_MODULE_COUNT];
	/* Per kernel descriptor (cuda_kernel_descs[i]): its function, NULL
	 * when this device does not offer it; the 64-bit-index version of a
	 * strided kernel; and for a family (casts: one per target dtype
	 * f32, f16, bf16, i32, u8, f64, i64; layout-specific matmuls: nn,
	 * nt, tn, tt), its members. */
	CUfunction *functions;
	CUfunction *wide;
	CUfunction (*family)[CUDA_FAMILY_MAX];
	/* The table device_kernels returns: the descriptors offered. */
	struct wafer_kernel *table;
	size_t table_count;
	/* cuBLAS, when the matmul variant "cublas" is offered. */
	const struct cuda_cublas *cublas;

	struct cuda_staging_pool staging;

	/* The other GPUs that can reach this one's memory
	 * (cuDeviceCanAccessPeer), CUDA ordinals: vm_map grants them access
	 * too, as peer access does for cuMemAlloc'd memory, so that peer
	 * copies (peer.c) and NCCL may read and write mapped pages. */
	int peers[CUDA_PEER_MAX];
	int peer_count;

	/* vm_reserve'd ranges (storage.c), under vm_lock. */
	pthread_mutex_t vm_lock;
	struct vm_range *vm_ranges;
};

/* A queue: one non-blocking stream (or the caller's), and the staging buffers whose copies
 * it has issued and not yet retired, oldest first (stream order). Calls on
 * one queue never overlap (plugin.h), so none of this is locked. */
struct cuda_queue {
	CUstream stream;
	/* The caller's stream (queue_wrap): synchronised, never destroyed,
	 * by queue_destroy. */
	int wrapped;
	struct cuda_staging *head, *tail;
	/* Failures met while retiring a staged copy outside sync; sync
	 * reports the first. */
	struct wafer_plugin_deferred failed;
	/* cuBLAS handle bound to |stream|, made at the first cuBLAS launch. */
	void *blas;
	/* The communicators of the collectives issued here since the last
	 * sync, which sync watches (nccl.c). */
	struct cuda_comm_watch {
		struct cuda_comm **comms;
		size_t count, capacity;
		CUevent done; /* recorded by sync, polled */
	} watch;
};

/*===----------------------------------------------------------------------===
 * Shared helpers (plugin.c)
 *===----------------------------------------------------------------------===*/

/* The wafer status for a CUresult: out of memory, not supported, not
 * found, invalid value; everything else is a device failure. */
wafer_status cuda_status(CUresult result);

/* Sets the error text "cuda: <what>: <CUDA_ERROR_X: text>" and returns
 * cuda_status(result). */
wafer_status cuda_fail(const struct cuda_state *state, CUresult result,
		       const char *format, ...)
	__attribute__((format(printf, 3, 4)));

/* Makes |device|'s context current on the calling thread. */
wafer_status cuda_enter(const struct cuda_device *device);

/* The body of an entry that is one driver call: makes |dev|'s context
 * current, calls dev->drv->FN(...) and returns WAFER_OK, or cuda_fail's
 * status naming FN. */
#define CUDA_ENTER_RETURN(dev, fn, ...)					\
	CUDA_ENTER_RETURN_AS(dev, (#fn), fn, __VA_ARGS__)

/* CUDA_ENTER_RETURN whose error names the call with |what|: cuda_fail's
 * format and its arguments, in parentheses ("cuX(%zu)", size). */
#define CUDA_ENTER_RETURN_AS(dev, what, fn, ...)			\
	do {								\
		wafer_status entered_ = cuda_enter(dev);		\
		CUresult result_;					\
									\
		if (entered_ != WAFER_OK)				\
			return entered_;				\
		result_ = (dev)->drv->fn(__VA_ARGS__);			\
		return result_ == CUDA_SUCCESS				\
			       ? WAFER_OK				\
			       : cuda_fail((dev)->state, result_,	\
					   CUDA_UNPAREN what);		\
	} while (0)
#define CUDA_UNPAREN(...) __VA_ARGS__

/* A function a library's table keeps: its symbol in the library and the
 * offset of its pointer in the table. CUDA_SYMBOL(struct, member, symbol)
 * makes one, for an X-macro list of a library's functions. */
struct cuda_symbol {
	const char *name;
	size_t offset;
};
#define CUDA_SYMBOL(type, member, symbol) {symbol, offsetof(type, member)},
/* A cuda_library_kind's files |names|, its |symbols| and its table |type|
 * (whose first member is a struct cuda_library). */
#define CUDA_LIBRARY_FILES(names_, symbols_, type_)                            \
	.names = names_, .name_count = sizeof names_ / sizeof names_[0],       \
	.table_size = sizeof(type_), .symbols = symbols_,                      \
	.symbol_count = sizeof symbols_ / sizeof symbols_[0]

/* Opens |configured| alone when it is not NULL, else the first of |names|
 * that dlopens (RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE: it stays mapped for
 * the process) and has every one of |symbols|, stored into |table|. Each failure is
 * logged under |what| ("cuBLAS"): at debug level a file that does not
 * open, at warn level one that lacks a symbol. Returns 0, or -1 with
 * nothing open. */
int cuda_library_open(const struct wafer_host_services *host, const char *what,
		      const char *configured, const char *const *names,
		      size_t count, const struct cuda_symbol *symbols,
		      size_t symbol_count, void *table,
		      struct cuda_library *out);
void cuda_library_close(struct cuda_library *library);

/* What cuda_library_get loads: |what| ("cuBLAS") from the first of
 * |names| (when the configuration names no file) into a table of
 * |table_size| bytes that begins with its struct cuda_library, |resolve|
 * filling it; then |ready|, when not NULL, says whether the library is
 * usable (0; it may rewrite |offers|, else it logs why not). The log
 * says "<what> from <path>: <offers>", or "<what> not found (<searched>):
 * <without>". */
struct cuda_library_kind {
	const char *what;
	const char *const *names;
	size_t name_count;
	size_t table_size;
	const struct cuda_symbol *symbols;
	size_t symbol_count;
	int (*ready)(const struct wafer_host_services *host, void *table,
		     char *offers, size_t size);
	const char *offers;   /* "matmul variant \"cublas\"" */
	const char *searched; /* "libcublas.so.13, .12" */
	const char *without;  /* "no matmul variant \"cublas\"" */
};

/* The table of |lazy|, loaded on the first call (from |configured| when
 * not NULL); NULL when it did not load. */
void *cuda_library_get(const struct wafer_host_services *host,
		       struct cuda_lazy_library *lazy,
		       const struct cuda_library_kind *kind,
		       const char *configured);
/* Closes and frees |lazy|'s table; the next get tries again. */
void cuda_library_unload(struct cuda_lazy_library *lazy);

/* storage.c */
extern const struct wafer_storage_ops cuda_storage_ops;
/* peer.c: storage.copy_peer */
wafer_status cuda_storage_copy_peer(void *device, void *queue,
				    wafer_resource dst, size_t dst_offset,
				    void *src_device, void *src_queue,
				    wafer_resource src, size_t src_offset,
				    size_t size);
void cuda_storage_open(struct cuda_device *device);
void cuda_storage_close(struct cuda_device *device);

/* staging.c */
wafer_status cuda_staging_open(struct cuda_device *device);
void cuda_staging_close(struct cuda_device *device);
/* Uploads |size| bytes from |src| (reusable on return) to dst on |q|,
 * entering the device's context first (nothing for 0 bytes). */
wafer_status cuda_staging_upload(struct cuda_device *device,
				 struct cuda_queue *q, CUdeviceptr dst,
				 const void *src, size_t size);
/* Downloads |size| bytes at src into |dst|; the bytes are in |dst| when
 * cuda_staging_retire_all() after a successful stream sync returns. */
wafer_status cuda_staging_download(struct cuda_device *device,
				   struct cuda_queue *q, void *dst,
				   CUdeviceptr src, size_t size);
/* After the stream was synchronised: delivers every pending download
 * (when |deliver|) and returns every buffer of |q| to the pool. */
void cuda_staging_retire_all(struct cuda_device *device, struct cuda_queue *q,
			     int deliver);

/* server.c */
extern const struct wafer_server_ops cuda_server_ops;

/* nccl.c: the server's comm entries (plugin.h, ABI 1.4) */
wafer_status cuda_comm_id(void *device, wafer_comm_id *out_id);
wafer_status cuda_comm_open(void *device,
			    const struct wafer_comm_open_args *args,
			    void **out_comm);
void cuda_comm_close(void *device, void *comm);
wafer_status cuda_comm_group_begin(void *device);
wafer_status cuda_comm_group_end(void *device);
/* Sync's and copy_out's part for collectives (nccl.c): when |q| issued collectives
 * since its last sync, waits for them by polling, aborting their
 * communicators on an asynchronous error or past their timeout, and
 * returns that failure naming communicator, rank and collective; WAFER_OK
 * at once otherwise. The stream may still hold other work after. */
wafer_status cuda_comm_wait(struct cuda_device *dev, struct cuda_queue *q);
/* Forgets what |q| watches and frees the watch (queue_destroy). */
void cuda_comm_watch_free(struct cuda_device *dev, struct cuda_queue *q);
wafer_status cuda_comm_split(void *device, void *comm, int32_t color,
			     int32_t key, void **out_comm, uint32_t *out_rank,
			     uint32_t *out_size);
wafer_status cuda_comm_run(void *device, void *queue, void *comm,
			   const struct wafer_collective *c);

/* event.c: events and host callbacks (the server's ABI 1.5 entries). */
WAFER_PLUGIN_EVENT_ENTRIES(cuda);
/* A new event of |flags|, recorded on |stream| (context current); on
 * failure *out is NULL and nothing is left to destroy. */
CUresult cuda_event_recorded(const struct cuda_driver *drv, CUstream stream,
			     unsigned flags, CUevent *out);

/* Native graphs (graph.c). */
WAFER_PLUGIN_GRAPH_ENTRIES(cuda);

/* program.c: the program entries of cuda_server_ops (plugin.h) */
WAFER_PLUGIN_PROGRAM_ENTRIES(cuda);
/* Issues a launch of a program's kernel on |q| (context current). */
wafer_status cuda_program_launch(struct cuda_device *device,
				 struct cuda_queue *q,
				 const struct wafer_launch *launch);

/* A resource is a CUdeviceptr widened to 64 bits (plugin.h). */
static inline CUdeviceptr cuda_ptr(wafer_resource resource)
{
	return (CUdeviceptr)resource;
}

#endif
