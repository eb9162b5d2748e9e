/* wafer — vendor-neutral compute runtime.
 * SPDX-License-Identifier: MIT
 *
 * wafer.h: the client API. Open a runtime (it reads the configuration chain
 * and loads backend plugins), open a client on a device, reserve and fill
 * buffers (handles), run kernels on them, read results back.
 *
 *   wafer_runtime *rt;  wafer_client *c;  wafer_handle a, b, out;
 *   wafer_runtime_open(NULL, &rt);
 *   wafer_client_open(rt, "default", NULL, &c);
 *   wafer_create(c, xs, sizeof xs, &a);  ...
 *   wafer_execute(c, &args);              // "add" on a, b into out
 *   wafer_read(c, out, 0, ys, sizeof ys); // waits for the add
 *   wafer_release(c, a); ... wafer_client_close(c); wafer_runtime_close(rt);
 *
 * Threading: a runtime and its clients may be used from any number of
 * threads at once (the client's channel decides how calls are serialised;
 * "direct" is the exception, for single-threaded programs). Commands one
 * thread issues on a client run in the order issued.
 *
 * Errors: every fallible call returns a wafer_status; the detail of the
 * last failure on the calling thread is in wafer_last_error(). Output
 * parameters are set on every path (to NULL / WAFER_HANDLE_NULL / 0 on
 * failure).
 *
 * Structs the library fills (wafer_device_desc, wafer_plugin_report,
 * wafer_config_source, wafer_memory_usage): the caller sets struct_size
 * to sizeof the struct it was compiled with, and only fields inside it
 * are written — so a program built against an older header keeps working.
 *
 * Queued channels (mpsc, see wafer-channels(7)): calls that return no
 * result (empty, create, write, execute, release) check their arguments
 * at once but may return before the work ran; a failure of the work
 * itself — a device that refuses a reservation, a kernel that fails — is
 * reported by the next wafer_sync or wafer_read on the client. */
#ifndef WAFER_WAFER_H
#define WAFER_WAFER_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/types.h>

#ifdef __cplusplus
extern "C" {
#endif

#define WAFER_VERSION_MAJOR 0
#define WAFER_VERSION_MINOR 1
#define WAFER_VERSION_PATCH 0

/*===----------------------------------------------------------------------===
 * Status and version
 *===----------------------------------------------------------------------===*/

/* A constant string naming |status| ("WAFER_ERROR_OUT_OF_MEMORY"); never
 * NULL, also for unknown values. */
WAFER_API const char *wafer_status_string(wafer_status status);

/* The detail of the most recent failure on the calling thread: what failed
 * and where (config file:line, plugin path, handle, sizes). Valid until the
 * next wafer call on this thread; "" when there was none. */
WAFER_API const char *wafer_last_error(void);

/* "0.1.0": the library's version, which may differ from the header's. */
WAFER_API const char *wafer_version_string(void);

/*===----------------------------------------------------------------------===
 * Runtime: configuration, plugins, devices
 *===----------------------------------------------------------------------===*/

typedef struct wafer_runtime wafer_runtime;

/* A configuration value passed through the API: the last and strongest
 * source in the configuration chain (see wafer.conf(5)). */
typedef struct wafer_option {
	const char *section; /* "core", "memory", "cpu", ... */
	const char *key;
	const char *value;
} wafer_option;

/* wafer_runtime_options.flags */
/* Keep going past malformed configuration lines and files (each one is
 * logged and listed by wafer_runtime_config_source); by default a
 * malformed line makes wafer_runtime_open fail with WAFER_ERROR_CONFIG. */
#define WAFER_RUNTIME_TOLERATE_CONFIG_ERRORS (1u << 0)
/* Read no configuration files (environment and options still apply). */
#define WAFER_RUNTIME_NO_CONFIG_FILES (1u << 1)

typedef struct wafer_runtime_options {
	size_t struct_size;
	const wafer_option *options;
	size_t option_count;
	uint32_t flags;
} wafer_runtime_options;

/* Reads the configuration chain (built-in defaults, system file, conf.d
 * drop-ins, user file, WAFER_CONFIG, environment, |options|), then loads
 * every plugin the `[core] backend` list names, in order. A plugin that is
 * missing or fails to load is recorded (wafer_runtime_plugin) and skipped;
 * only a configuration error fails the open. |options| may be NULL. */
WAFER_API wafer_status wafer_runtime_open(const wafer_runtime_options *options,
					  wafer_runtime **out_runtime);

/* Unloads the plugins. Every client of the runtime must be closed first;
 * closing with open clients is a caller bug that is logged and leaks
 * them rather than pulling plugins out from under them. NULL is a no-op. */
WAFER_API void wafer_runtime_close(wafer_runtime *runtime);

/* Device capability bits: WAFER_CAP_* in wafer/types.h. */

/* A device as the runtime lists it. Strings live as long as the runtime. */
typedef struct wafer_device_desc {
	size_t struct_size;
	const char *backend;  /* plugin name: "cpu" */
	uint32_t index;       /* index within the backend: the N of "cpu:N" */
	const char *name;     /* device name from the plugin */
	uint64_t memory_bytes;
	uint64_t capabilities; /* WAFER_CAP_* */
} wafer_device_desc;

/* Devices of every accepted plugin, in the order of the backend list. */
WAFER_API size_t wafer_runtime_device_count(const wafer_runtime *runtime);
WAFER_API wafer_status wafer_runtime_device(const wafer_runtime *runtime,
					    size_t index,
					    wafer_device_desc *out_desc);

/* Where a configuration source came from and what became of it. */
typedef enum wafer_config_source_state {
	WAFER_CONFIG_SOURCE_READ = 0,   /* read and applied */
	WAFER_CONFIG_SOURCE_ABSENT = 1, /* no such file: fine */
	WAFER_CONFIG_SOURCE_FAILED = 2, /* unreadable or malformed; detail */
} wafer_config_source_state;

typedef struct wafer_config_source {
	size_t struct_size;
	const char *path; /* file, or "environment" / "options" */
	wafer_config_source_state state;
	const char *detail; /* "" or the first problem, "file:line: why" */
} wafer_config_source;

/* Configuration sources in the order they were applied. */
WAFER_API size_t wafer_runtime_config_source_count(const wafer_runtime *runtime);
WAFER_API wafer_status wafer_runtime_config_source(const wafer_runtime *runtime,
						   size_t index,
						   wafer_config_source *out_source);

/* One plugin the runtime looked for, loaded or not. */
typedef struct wafer_plugin_report {
	size_t struct_size;
	const char *name;    /* as listed in `backend`, or the plugin's own */
	const char *path;    /* resolved file, or NULL when none was found */
	const char *version; /* plugin's version, NULL unless it was loaded */
	const char *description; /* NULL unless it was loaded */
	uint32_t abi_major;  /* as the plugin declared; 0 if unknown */
	uint32_t abi_minor;
	int accepted;        /* 1: loaded, initialised, has >= 1 device */
	uint32_t device_count;
	/* Why it was not accepted ("not found in: ...", "dlopen failed: ...",
	 * "missing wafer_plugin_query", "ABI major 2, core speaks 1",
	 * "init failed: ...", "no devices: ..."), or "" when accepted. */
	const char *reason;
	/* What the loader warned about the plugin, one line each ("interop
	 * entries come together; it has native import but not ...: interop
	 * off", "built for ABI 1.9, newer than this core's 1.5: ..."), or
	 * "" when nothing. */
	const char *warnings;
	/* The names the plugin gives its own program formats and native
	 * kinds (wafer-plugin(7), VENDOR VALUES), one line each ("sim-c
	 * (program format 0x10001)"), or "" when none. */
	const char *vendor_names;
} wafer_plugin_report;

WAFER_API size_t wafer_runtime_plugin_count(const wafer_runtime *runtime);
WAFER_API wafer_status wafer_runtime_plugin(const wafer_runtime *runtime,
					    size_t index,
					    wafer_plugin_report *out_report);

/* The value a configuration key ended up with after the whole chain, or
 * NULL when unset. |out_origin| (may be NULL) receives "file:line",
 * "environment WAFER_X", "options" or "default". */
WAFER_API const char *wafer_runtime_config_value(const wafer_runtime *runtime,
						 const char *section,
						 const char *key,
						 const char **out_origin);

/*===----------------------------------------------------------------------===
 * Client
 *===----------------------------------------------------------------------===*/

typedef struct wafer_client wafer_client;

typedef struct wafer_client_options {
	size_t struct_size;
	/* Channel: "direct" (one thread at a time, no locking), "mutex" (one
	 * lock, calls run in the caller's thread), "mpsc" (a runner thread;
	 * calls without a result return at once) or "auto" (mpsc for devices
	 * with their own memory, mutex for host-memory devices). NULL:
	 * `[core] channel` from the configuration, default auto. */
	const char *channel;
	/* Memory strategy name, NULL: `[memory] strategy`. */
	const char *memory;
	/* Appended for interop (interop.h): NULL, or the caller's own queue (a
	 * CUstream, cl_command_queue, ...) for the client's work, so that it
	 * is ordered with the caller's. wafer never destroys it; it must
	 * outlive the client. WAFER_ERROR_NOT_SUPPORTED on a plugin without
	 * the interop entries. */
	void *native_queue;
} wafer_client_options;

/* Opens a client on the device named by |selector|:
 *   "default"   the first device of the first backend in `[core] backend`
 *               that has one;
 *   "cpu"       device 0 of backend cpu;  "cuda:1"  device 1 of cuda.
 * Several clients may share a device. |options| may be NULL. Returns
 * WAFER_ERROR_NO_DEVICE when nothing matches: for "default" every backend's
 * reason; for a backend its devices or its reason; for an unknown name the
 * backend it is a typo of, or the list. */
WAFER_API wafer_status wafer_client_open(wafer_runtime *runtime,
					 const char *selector,
					 const wafer_client_options *options,
					 wafer_client **out_client);

/* Finishes queued work, frees every handle still alive (logging how many
 * leaked at info level) and the client. Returns the first error from the
 * work it finished, or WAFER_OK. NULL is a no-op returning WAFER_OK. */
WAFER_API wafer_status wafer_client_close(wafer_client *client);

/* The client's device. */
WAFER_API wafer_status wafer_client_device(const wafer_client *client,
					   wafer_device_desc *out_desc);

/*===----------------------------------------------------------------------===
 * Handles: reference-counted device buffers
 *===----------------------------------------------------------------------===*/

/* A handle names a buffer of one client. It is a value: copy it freely.
 * Each handle carries a generation, so using one after its last release
 * returns WAFER_ERROR_INVALID_HANDLE (never a crash), in every build. */
typedef struct wafer_handle {
	uint64_t bits;
} wafer_handle;

#define WAFER_HANDLE_NULL_INIT {0}
static inline int wafer_handle_is_null(wafer_handle handle)
{
	return handle.bits == 0;
}

/* Reserves |size| (> 0) bytes on the client's device and returns a handle
 * holding one reference. Contents are undefined. Cost: a cached size is a
 * free-list pop; a new size is one storage allocation. Returns
 * WAFER_ERROR_OUT_OF_MEMORY, with bytes asked, in use and reserved in
 * wafer_last_error(), when neither the cache nor the device has room. */
WAFER_API wafer_status wafer_empty(wafer_client *client, size_t size,
				   wafer_handle *out_handle);

/* wafer_empty, then uploads |size| bytes from |data|. |data| may be
 * reused as soon as the call returns. */
WAFER_API wafer_status wafer_create(wafer_client *client, const void *data,
				    size_t size, wafer_handle *out_handle);

/* Uploads |size| bytes from |data| into the handle at |offset|, ordered
 * after work issued before it. |data| may be reused as soon as the call
 * returns. */
WAFER_API wafer_status wafer_write(wafer_client *client, wafer_handle handle,
				   size_t offset, const void *data,
				   size_t size);

/* Downloads |size| bytes at |offset| of the handle into |dst|, waiting for
 * the work issued before it. Returns an error from queued work if there
 * was one (see wafer_sync). WAFER_ERROR_OUT_OF_RANGE when offset + size
 * passes the handle's end. */
WAFER_API wafer_status wafer_read(wafer_client *client, wafer_handle handle,
				  size_t offset, void *dst, size_t size);

/* Queues a download of |size| bytes at |offset| into |dst| and returns at
 * once (on the mpsc channel) or after the copy (direct, mutex). The bytes
 * are in |dst| when the next wafer_sync on the client returns WAFER_OK;
 * |dst| must stay valid until then. Argument errors are returned now,
 * errors of the copy by that sync. */
WAFER_API wafer_status wafer_read_async(wafer_client *client,
					wafer_handle handle, size_t offset,
					void *dst, size_t size);

/* Registers [ptr, ptr+size) of the caller's host memory with the
 * client's device (page-locks it where the plugin can: CUDA
 * cuMemHostRegister). A wafer_write, wafer_create or wafer_read_async
 * whose host bytes lie wholly inside a registered range then copies them
 * directly, in queue order, with no staging copy, so an upload on one
 * queue overlaps work on another: the bytes are read (or written) when
 * the copy runs, and the caller keeps them unchanged (does not read
 * them) until then — until wafer_sync of the queue, or an event recorded
 * after the copy, completes. Ranges may not overlap; registering waits
 * for every queue of the client. On a plugin without registration
 * (wafer-info: no "host-register") it succeeds and copies are staged
 * as before. wafer_host_register(3). */
WAFER_API wafer_status wafer_host_register(wafer_client *client, void *ptr,
					   size_t size);

/* Unregisters the range that starts at |ptr|, after every queue of the
 * client has run what was issued before. Ranges left registered go when
 * the client closes. */
WAFER_API wafer_status wafer_host_unregister(wafer_client *client, void *ptr);

/* Adds one reference. */
WAFER_API wafer_status wafer_retain(wafer_client *client, wafer_handle handle);

/* Drops one reference; the last one frees the buffer for reuse once the
 * work issued before the release has run. */
WAFER_API wafer_status wafer_release(wafer_client *client, wafer_handle handle);

/* Size in bytes the handle was created with. */
WAFER_API wafer_status wafer_handle_size(wafer_client *client,
					 wafer_handle handle, size_t *out_size);

/*===----------------------------------------------------------------------===
 * Execution
 *===----------------------------------------------------------------------===*/

/* A range of a handle bound to a kernel argument. size 0 means "to the
 * end of the handle". offset must respect the device's alignment for
 * kernels that need it (the standard catalogue takes offset 0). */
typedef struct wafer_buffer_binding {
	wafer_handle handle;
	size_t offset;
	size_t size;
} wafer_buffer_binding;

/* A kernel of a client's device resolved once, by wafer_kernel_find, so
 * that launches skip the lookup by name (as a CUfunction or cl_kernel
 * does). Valid for that client until it closes; opaque. */
typedef struct wafer_kernel_ref wafer_kernel_ref;

/* Finds kernel |kernel| (variant |variant|, NULL: the default one) for
 * |dtype| on the client's device and stores its ref in *out_kernel. An
 * unknown kernel is WAFER_ERROR_NOT_SUPPORTED naming the plugin and what
 * it has, as wafer_execute reports it. */
WAFER_API wafer_status wafer_kernel_find(wafer_client *client,
					 const char *kernel,
					 const char *variant, wafer_dtype dtype,
					 const wafer_kernel_ref **out_kernel);

typedef struct wafer_execute_args {
	size_t struct_size;
	/* Kernel: operation name from the plugin's table ("add"), variant
	 * (NULL: the default one) and dtype; ignored when kernel_ref is set. */
	const char *kernel;
	const char *variant;
	wafer_dtype dtype;
	const wafer_buffer_binding *bindings;
	size_t binding_count;
	/* Parameter block, copied before the call returns. */
	const void *params;
	size_t params_size;
	/* Launch shape: total work items per dimension (0 counts as 1) and an
	 * optional work-group hint (0: plugin chooses). */
	uint64_t global[3];
	uint32_t local[3];
	/* A kernel from wafer_kernel_find on this client, or NULL: launch by
	 * name. (Added after the first release: struct_size says whether a
	 * caller has it.) */
	const wafer_kernel_ref *kernel_ref;
} wafer_execute_args;

/* Runs a kernel on handles. The binding count and parameter size are
 * checked against the kernel's table entry, each binding against its
 * handle; an unknown kernel is WAFER_ERROR_NOT_SUPPORTED naming the
 * plugin. May return before the kernel ran: a failure inside it is
 * reported by the next wafer_sync or wafer_read. */
WAFER_API wafer_status wafer_execute(wafer_client *client,
				     const wafer_execute_args *args);

/* Waits for all work issued on the client and returns the first error it
 * raised (reported once), or WAFER_OK. */
WAFER_API wafer_status wafer_sync(wafer_client *client);

/* Autotune (include/wafer/autotune.h, wafer_execute_autotune(3)):
 *   wafer_status wafer_execute_autotune(wafer_client *client,
 *                                       const wafer_tunable *op,
 *                                       const void *inputs,
 *                                       wafer_autotune_result *out_result);
 * runs the fastest candidate of |op| for the key of |inputs|, measuring
 * once per key and device and keeping the choice in memory and on disk. */

/*===----------------------------------------------------------------------===
 * Memory
 *===----------------------------------------------------------------------===*/

typedef struct wafer_memory_usage {
	size_t struct_size;
	uint64_t bytes_in_use;    /* held by live handles */
	uint64_t bytes_reserved;  /* taken from storage, in use or cached */
	uint64_t peak_in_use;
	uint64_t peak_reserved;
	uint64_t storage_allocs;  /* calls to the plugin's storage */
	uint64_t storage_frees;
	uint64_t storage_maps;
	uint64_t storage_unmaps;
	uint64_t reuse_hits;      /* reserves served from cached memory */
	uint64_t handles_live;
	/* Since 0.2 (read them only where struct_size covers them): calls
	 * per entry of the plugin's storage (the storage_* sums above add
	 * them up: allocs = alloc + alloc_async + vm_reserve, frees = free +
	 * free_async + vm_release), the calls of them that failed, and the
	 * reserves retried after the cache was trimmed. */
	uint64_t calls_alloc;
	uint64_t calls_free;
	uint64_t calls_alloc_async;
	uint64_t calls_free_async;
	uint64_t calls_vm_reserve;
	uint64_t calls_vm_release;
	uint64_t calls_vm_map;
	uint64_t calls_vm_unmap;
	uint64_t storage_failures;
	uint64_t reserve_retries;
} wafer_memory_usage;

/* Memory statistics of the client's memory manager. */
WAFER_API wafer_status wafer_memory_usage_get(wafer_client *client,
					      wafer_memory_usage *out_usage);

/* Returns cached (unused) memory to the device. */
WAFER_API wafer_status wafer_memory_trim(wafer_client *client);

/* Out of memory (wafer_memory_set_oom_handler(3)): what a reserve that is
 * about to fail asked for and what is held. */
typedef struct wafer_oom_info {
	size_t struct_size;
	size_t size;              /* bytes the reserve asked for */
	uint64_t bytes_in_use;    /* this client's live handles */
	uint64_t bytes_reserved;  /* this client's, from storage */
	uint64_t device_reserved; /* all clients of the device, from storage */
	uint64_t limit;           /* [memory] limit in bytes; 0: none */
	const char *detail;       /* why it failed (the error text so far) */
} wafer_oom_info;

typedef enum wafer_oom_action {
	WAFER_OOM_FAIL = 0,  /* the reserve fails with OUT_OF_MEMORY */
	WAFER_OOM_RETRY = 1, /* handles were released: try once more */
} wafer_oom_action;

typedef wafer_oom_action (*wafer_oom_handler)(wafer_client *client,
					      const wafer_oom_info *info,
					      void *user);

/* Calls |handler| (NULL: none) before a reserve of |client| fails for
 * want of memory — its device's [memory] limit or the device itself —
 * after the cache was trimmed. It may release handles (wafer_release)
 * and ask for one retry. It runs on the thread that runs the client's
 * commands: the caller's on the direct and mutex channels, the runner
 * thread on mpsc; see the man page for what it may call. */
WAFER_API wafer_status wafer_memory_set_oom_handler(wafer_client *client,
						    wafer_oom_handler handler,
						    void *user);

/* A snapshot of the client's memory, for debugging fragmentation
 * (wafer_memory_snapshot(3)): one item per segment (a storage allocation
 * or reserved address range), then the runs of its pages, mapped or not
 * (paged segments only), then its blocks in address order, live or free
 * (free ones where the strategy keeps them: pool). */
typedef enum wafer_memory_item_kind {
	WAFER_MEMORY_ITEM_SEGMENT = 1,
	WAFER_MEMORY_ITEM_PAGES = 2,
	WAFER_MEMORY_ITEM_BLOCK = 3,
} wafer_memory_item_kind;

typedef struct wafer_memory_item {
	size_t struct_size; /* the library's: read only fields inside it */
	wafer_memory_item_kind kind;
	uint32_t segment;       /* the segment's number in this snapshot */
	const char *arena;      /* SEGMENT: "small", "large", the strategy */
	uint64_t offset;        /* PAGES, BLOCK: from the segment's start */
	uint64_t size;          /* SEGMENT: its bytes (address range or
				 * allocation); PAGES: the run's; BLOCK:
				 * the bytes it spans */
	uint64_t mapped_bytes;  /* SEGMENT: bytes backed by memory */
	uint64_t page_size;     /* SEGMENT: 0 when not paged */
	uint32_t mapped;        /* PAGES: 1 mapped, 0 not */
	uint32_t live;          /* BLOCK: 1 held for a handle, 0 free */
	uint64_t requested;     /* BLOCK, live: bytes asked */
	wafer_handle handle;    /* BLOCK, live: its handle; null once the
				 * handle is released but its release is
				 * still queued */
} wafer_memory_item;

typedef void (*wafer_memory_visitor)(const wafer_memory_item *item,
				     void *user);

/* Calls |visit| on each item of a snapshot of the client's memory, on
 * the calling thread, after the snapshot was taken (so |visit| may call
 * the client). WAFER_ERROR_OUT_OF_MEMORY when the snapshot does not fit
 * in host memory (nothing is visited). */
WAFER_API wafer_status wafer_memory_snapshot(wafer_client *client,
					     wafer_memory_visitor visit,
					     void *user);

/*===----------------------------------------------------------------------===
 * Scopes: handles released together (wafer_scope_begin(3))
 *===----------------------------------------------------------------------===*/

/* A scope names a stretch of a thread's work on a client; a value, like a
 * handle (0 is never a scope). While it is open, every handle the thread
 * creates on the client — wafer_empty, wafer_create, the tensors and the
 * outputs of the operations of ops.h — is entered in it, and
 * wafer_scope_end drops that creation reference. A handle outlives its
 * scope when the caller retained it (wafer_retain adds a reference the
 * scope never drops) or kept it (wafer_scope_keep). Released with the
 * end, the scope's buffers go back to the memory manager's cache, not to
 * the device: the next scope's temporaries of the same sizes reuse them
 * without a storage call. See wafer-memory(7). */
typedef struct wafer_scope {
	uint64_t bits;
} wafer_scope;

/* Opens a scope on |client| for the calling thread, inside the thread's
 * innermost open scope on the client if it has one. Only the thread that
 * began a scope may keep in it or end it; other threads' handles never
 * enter it. Cost: nothing on the device; each handle created inside adds
 * a few host instructions under the client's scope lock. */
WAFER_API wafer_status wafer_scope_begin(wafer_client *client,
					 wafer_scope *out_scope);

/* Drops the reference of every handle created in |scope| that is still
 * alive (newest first, in queue order like wafer_release), and closes it.
 * A handle the caller released, or gave up to an operation
 * (WAFER_DONATE_INPUT), inside the scope is not released again. |scope|
 * must be the calling thread's innermost open scope on the client: else
 * WAFER_ERROR_INVALID_ARGUMENT naming the scope and the reason, and
 * nothing changes. Memory is not trimmed. */
WAFER_API wafer_status wafer_scope_end(wafer_client *client,
				       wafer_scope scope);

/* Moves one reference of |handle| that |scope| holds out of it, as if the
 * handle had been created just after the scope ended: into the thread's
 * enclosing scope on the client, or to the caller (who releases it) when
 * |scope| is the outermost. WAFER_ERROR_INVALID_ARGUMENT when the scope
 * holds no reference of |handle| (made before the scope began, or kept
 * already); the handle's own errors (released, donated) as wafer_retain. */
WAFER_API wafer_status wafer_scope_keep(wafer_client *client,
					wafer_scope scope, wafer_handle handle);

#ifdef __cplusplus
}
#endif

#endif /* WAFER_WAFER_H */
