/* wafer — vendor-neutral compute runtime.
 * SPDX-License-Identifier: MIT
 *
 * types.h: the few types that both sides of wafer share — the client API
 * (wafer.h) and the vendor plugin ABI (plugin.h): status codes, element
 * types, and the symbol-export macro. It needs nothing but the C standard
 * library, so plugin.h stays free of any other dependency. */
#ifndef WAFER_TYPES_H
#define WAFER_TYPES_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* WAFER_API marks the public entry points of libwafer. The library is
 * built with -fvisibility=hidden, so everything else stays private. */
#if defined(_WIN32)
#define WAFER_API
#elif defined(__GNUC__) && defined(WAFER_BUILDING_LIBRARY)
#define WAFER_API __attribute__((visibility("default")))
#else
#define WAFER_API
#endif

/*===----------------------------------------------------------------------===
 * Status codes
 *===----------------------------------------------------------------------===*/

/* Every fallible call returns a wafer_status. 0 is success; the numbers are
 * part of the ABI and never change meaning (new codes are appended). The
 * human-readable detail of the last failure on the calling thread is in
 * wafer_last_error() (wafer.h); a plugin reports its detail through the
 * host's set_error service (plugin.h). */
typedef enum wafer_status {
	WAFER_OK = 0,
	/* An argument is NULL, zero or out of its range where that is not
	 * allowed. Nothing was changed. */
	WAFER_ERROR_INVALID_ARGUMENT = 1,
	/* Neither cached memory nor the device had room for the request. */
	WAFER_ERROR_OUT_OF_MEMORY = 2,
	/* A named thing (plugin, device, kernel, config file) does not exist. */
	WAFER_ERROR_NOT_FOUND = 3,
	/* The backend does not offer this feature (an optional plugin entry
	 * was NULL, or a kernel is missing from its catalogue). */
	WAFER_ERROR_NOT_SUPPORTED = 4,
	/* A configuration file or option is malformed; the detail names the
	 * file and line. */
	WAFER_ERROR_CONFIG = 5,
	/* A plugin could not be loaded or rejected itself (dlopen failure,
	 * missing query symbol, ABI mismatch, failing init). */
	WAFER_ERROR_PLUGIN = 6,
	/* No loaded plugin has a device matching the selector. */
	WAFER_ERROR_NO_DEVICE = 7,
	/* The device or a kernel failed while running queued work. */
	WAFER_ERROR_DEVICE = 8,
	/* An offset or size reaches past the end of a handle, or what a
	 * kernel's parameter block reaches (a count, a view) past the end of
	 * a binding. */
	WAFER_ERROR_OUT_OF_RANGE = 9,
	/* The handle was released (its last reference dropped) or never
	 * belonged to this client. */
	WAFER_ERROR_INVALID_HANDLE = 10,
	/* The handle was given up by WAFER_DONATE_INPUT to an operation; the
	 * detail names the operation that took it. */
	WAFER_ERROR_DONATED = 11,
	/* Reading or writing a file failed (config, cache). */
	WAFER_ERROR_IO = 12,
	/* The plugin ABI major the plugin speaks is not the core's. */
	WAFER_ERROR_ABI_MISMATCH = 13,
	/* A bug inside wafer or a plugin: an invariant did not hold. */
	WAFER_ERROR_INTERNAL = 14,
	/* A program did not compile or link; wafer_last_error() holds the
	 * compiler's log, line numbers as the compiler gave them. */
	WAFER_ERROR_BUILD = 15,
	/* Work an event captured has not finished yet (wafer_event_query):
	 * not a failure; nothing was changed. */
	WAFER_ERROR_NOT_READY = 16,
} wafer_status;

/*===----------------------------------------------------------------------===
 * Element types
 *===----------------------------------------------------------------------===*/

/* Element type of tensor data and of kernel variants. The numbers are part
 * of the ABI. WAFER_DTYPE_NONE is no element type: no tensor has it and no
 * catalogue kernel is looked up with it (kernels are found by name and
 * dtype exactly, so copy is listed once per element type); a vendor's own
 * kernel may use it for "typeless", and wafer_execute finds it under it. */
typedef enum wafer_dtype {
	WAFER_DTYPE_NONE = 0,
	WAFER_DTYPE_F32 = 1,
	WAFER_DTYPE_F16 = 2,
	WAFER_DTYPE_BF16 = 3,
	WAFER_DTYPE_I32 = 4,
	WAFER_DTYPE_U8 = 5,
	WAFER_DTYPE_F64 = 6,
	WAFER_DTYPE_I64 = 7,
} wafer_dtype;

/*===----------------------------------------------------------------------===
 * Program sources
 *===----------------------------------------------------------------------===*/

/* The formats of a program's sources (program.h), which the plugin ABI
 * passes on as they are (plugin.h). The numbers are part of the ABI; new
 * formats are appended. */
typedef enum wafer_program_format {
	WAFER_PROGRAM_NONE = 0,
	WAFER_PROGRAM_CUDA_C = 1,   /* CUDA C++ source text, compiled with NVRTC */
	WAFER_PROGRAM_PTX = 2,      /* PTX text */
	WAFER_PROGRAM_CUBIN = 3,    /* a CUBIN or fatbin image */
	WAFER_PROGRAM_OPENCL_C = 4, /* OpenCL C source text */
	WAFER_PROGRAM_SPIRV = 5,    /* a SPIR-V module (OpenCL, Level Zero) */
	WAFER_PROGRAM_HOST_C = 6,   /* C source of host kernels, built with
				     * the system's C compiler */
	WAFER_PROGRAM_HOST_SO = 7,  /* an ELF shared object image exporting
				     * host kernels (host_kernel.h) */
	/* WAFER_PROGRAM_VENDOR to _VENDOR_LAST: a vendor's own formats (its
	 * IL, its ISA, its binaries), which the core passes on as they are.
	 * The vendor's header names them, WAFER_PROGRAM_VENDOR + n, and its
	 * plugin lists them in program_formats; the core's messages show
	 * one as "vendor-0x10001" (wafer_program_format_name). */
	WAFER_PROGRAM_VENDOR = 0x10000,
	WAFER_PROGRAM_VENDOR_LAST = 0x1ffff,
} wafer_program_format;

/* One source of a program. */
typedef struct wafer_program_source {
	size_t struct_size;
	wafer_program_format format;
	/* The bytes; text need not be NUL-terminated. Read during
	 * wafer_program_create (and the plugin's program_load) only. */
	const void *data;
	size_t size;
	/* Optional, for the compiler's messages: "saxpy.cu". */
	const char *name;
} wafer_program_source;

/*===----------------------------------------------------------------------===
 * Native handles (interop.h, and the plugin ABI's interop entries)
 *===----------------------------------------------------------------------===*/

/* What a native buffer is. */
typedef enum wafer_native_kind {
	WAFER_NATIVE_NONE = 0,
	/* Host memory: |address| is a pointer the process can dereference
	 * (the cpu plugin). */
	WAFER_NATIVE_HOST_POINTER = 1,
	/* |address| is a CUdeviceptr in the primary context of CUDA device
	 * |device_ordinal| (|context| is that CUcontext). */
	WAFER_NATIVE_CUDA_POINTER = 2,
	/* |object| is a cl_mem, the handle's bytes start |offset| bytes into
	 * it; |context| is its cl_context. */
	WAFER_NATIVE_OPENCL_MEM = 3,
	/* |address| is a Level Zero USM device pointer; |context| is its
	 * ze_context_handle_t. */
	WAFER_NATIVE_LEVELZERO_POINTER = 4,
	/* WAFER_NATIVE_VENDOR to _VENDOR_LAST: a vendor's own kinds of
	 * buffer, named by its header (WAFER_NATIVE_VENDOR + n). The core
	 * treats them as object kinds (|object| and |offset|, which it keeps
	 * as the handle's offset) and hands them to the plugin as they are;
	 * wafer_native_kind_name shows one as "vendor-0x10001". */
	WAFER_NATIVE_VENDOR = 0x10000,
	WAFER_NATIVE_VENDOR_LAST = 0x1ffff,
} wafer_native_kind;

/* A buffer as the backend knows it. The caller sets struct_size; fields
 * past it are neither read nor written. */
typedef struct wafer_native_buffer {
	size_t struct_size;
	wafer_native_kind kind;
	/* The plugin's name ("cuda"); set by wafer_handle_native, ignored
	 * by wafer_handle_import. */
	const char *backend;
	/* The first byte, for the pointer kinds (offset already applied). */
	uint64_t address;
	/* The backend's object, for the object kinds (cl_mem), and where in
	 * it the bytes start. */
	void *object;
	size_t offset;
	/* Bytes: the handle's size. */
	size_t size;
	/* The backend's context (CUcontext, cl_context,
	 * ze_context_handle_t); NULL on cpu. */
	void *context;
	/* The backend's own device number (CUDA ordinal, ...); 0 on cpu. */
	int device_ordinal;
} wafer_native_buffer;

/* The client's queue. */
typedef struct wafer_native_queue {
	size_t struct_size;
	wafer_native_kind kind; /* the kind of the device's buffers */
	const char *backend;
	/* CUstream, cl_command_queue, ze_command_list_handle_t; NULL on cpu
	 * (work there runs in order on the client's own thread). */
	void *queue;
	void *context;
	int device_ordinal;
} wafer_native_queue;

/*===----------------------------------------------------------------------===
 * Collectives (comm.h, and the plugin ABI's comm entries since 1.4)
 *===----------------------------------------------------------------------===*/

/* What ranks exchange to meet in one communicator: NCCL's unique id
 * (ncclUniqueId is 128 bytes), or all zeros for a transport that needs
 * none (MPI finds its peers through the MPI communicator). Plain bytes:
 * send them to the other ranks any way you like (MPI_Bcast, a file). */
#define WAFER_COMM_ID_BYTES 128
typedef struct wafer_comm_id {
	uint8_t bytes[WAFER_COMM_ID_BYTES];
} wafer_comm_id;

/* Reductions (wafer_op_reduce) and the reducing collectives, which take
 * SUM and MAX. */
typedef enum wafer_reduce_op {
	WAFER_REDUCE_SUM = 0,
	WAFER_REDUCE_MAX = 1,
	WAFER_REDUCE_MEAN = 2,
} wafer_reduce_op;

typedef enum wafer_collective_kind {
	/* dst[i] = op over ranks of src[i], count elements on every rank. */
	WAFER_COLLECTIVE_ALL_REDUCE = 1,
	/* dst = root's src, count elements (src is read on root only). */
	WAFER_COLLECTIVE_BROADCAST = 2,
	/* dst[r * count + i] = rank r's src[i]: src count, dst count * size. */
	WAFER_COLLECTIVE_ALL_GATHER = 3,
	/* dst[i] = op over ranks of src[rank * count + i]: src count * size,
	 * dst count. */
	WAFER_COLLECTIVE_REDUCE_SCATTER = 4,
	/* Point to point (plugin ABI 1.6): count elements of src to rank
	 * |root| (the peer), which receives them in dst with RECV from this
	 * rank. Only the two ranks take part. */
	WAFER_COLLECTIVE_SEND = 5,
	WAFER_COLLECTIVE_RECV = 6,
} wafer_collective_kind;

/*===----------------------------------------------------------------------===
 * Device capabilities
 *===----------------------------------------------------------------------===*/

/* Bits of wafer_device_info.capabilities (plugin.h) and
 * wafer_device_desc.capabilities (wafer.h). */
#define WAFER_CAP_F16 (UINT64_C(1) << 0)
#define WAFER_CAP_BF16 (UINT64_C(1) << 1)
#define WAFER_CAP_F64 (UINT64_C(1) << 2)
/* Device memory is ordinary host memory (cpu, integrated GPUs). */
#define WAFER_CAP_HOST_MEMORY (UINT64_C(1) << 3)
/* The next three are set by the core from the optional plugin entries
 * offered (and cleared when a plugin claims one without the entries
 * behind it). WAFER_CAP_PINNED_HOST keeps its number only: it follows the
 * retired host_alloc/host_free slots, which plugins leave NULL, and
 * nothing in the core uses it. */
#define WAFER_CAP_STREAM_ORDERED_ALLOC (UINT64_C(1) << 4)
#define WAFER_CAP_VIRTUAL_MEMORY (UINT64_C(1) << 5)
#define WAFER_CAP_DEVICE_TIMERS (UINT64_C(1) << 6)
/* Retired: never set by the core since ABI 1.1 (host_alloc/host_free
 * are retired); the bit keeps its number and is cleared if claimed. */
#define WAFER_CAP_PINNED_HOST (UINT64_C(1) << 7)
/* Since ABI 1.2, set by the core from the optional entries too: the
 * plugin loads programs, the caller's own kernels (program.h). */
#define WAFER_CAP_PROGRAMS (UINT64_C(1) << 8)
/* Since ABI 1.4, set by the core from the optional entries: the plugin
 * copies between two of its devices' buffers without the host
 * (storage.copy_peer), and runs collectives (the server's comm entries). */
#define WAFER_CAP_PEER_COPY (UINT64_C(1) << 9)
#define WAFER_CAP_COLLECTIVES (UINT64_C(1) << 10)
/* Since ABI 1.5, set by the core from the optional entries: the plugin
 * has events (the server's event entries), so a client's queues run side
 * by side, ordered on the device. Without it they are ordered on the
 * host and do not overlap. */
#define WAFER_CAP_EVENTS (UINT64_C(1) << 11)
/* Since ABI 1.6, set by the core from the optional entries: the plugin
 * has native graphs (the server's graph entries), so the device replays
 * a graph's launches itself. Every plugin can capture and replay graphs
 * (wafer_graph(3)); without it the core replays them. */
#define WAFER_CAP_NATIVE_GRAPHS (UINT64_C(1) << 12)
/* Since ABI 1.7, set by the core from the optional entries: the plugin
 * copies from and to registered host memory directly, in queue order
 * (wafer_host_register(3)); without it such copies are staged. */
#define WAFER_CAP_HOST_REGISTER (UINT64_C(1) << 13)

#ifdef __cplusplus
}
#endif

#endif /* WAFER_TYPES_H */
