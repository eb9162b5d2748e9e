/* wafer — SPDX-License-Identifier: MIT
 *
 * wafer_torch.h: the entry points of libwafer-torch.so, PyTorch's CUDA
 * memory on wafer (wafer-torch(7)). PyTorch finds the first two by name:
 *
 *   alloc = torch.cuda.memory.CUDAPluggableAllocator(
 *           "/usr/lib/x86_64-linux-gnu/wafer/libwafer-torch.so",
 *           "wafer_torch_alloc", "wafer_torch_free")
 *   torch.cuda.memory.change_current_allocator(alloc)
 *
 * The stream is a cudaStream_t (a CUstream: the same handle), declared
 * here as void * so that nothing of CUDA is needed to build or load the
 * object. This header is not installed: C callers are the tests; Python
 * callers read the statistics through ctypes with the layout below. */
#ifndef WAFER_TORCH_H
#define WAFER_TORCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define WAFER_TORCH_EXPORT __attribute__((visibility("default")))

#ifdef __cplusplus
extern "C" {
#endif

/* |size| bytes on CUDA device |device| for work on |stream| (NULL: the
 * legacy default stream); NULL for size 0 (as PyTorch's own allocator
 * answers). When wafer cannot reserve the memory (or the size or device
 * is not one), it throws std::runtime_error whose what() is
 * "wafer-torch: " and the reason (also on stderr): PyTorch raises it in
 * Python as a RuntimeError with that text. A C caller cannot catch it:
 * the entry is for PyTorch, which is C++. */
WAFER_TORCH_EXPORT void *wafer_torch_alloc(ssize_t size, int device,
					   void *stream);

/* Gives back what wafer_torch_alloc returned; NULL is a no-op. |size|,
 * |device| and |stream| are PyTorch's record of the allocation and are
 * not needed: the pointer names it. A pointer that is not live is
 * reported on stderr and otherwise ignored. */
WAFER_TORCH_EXPORT void wafer_torch_free(void *ptr, ssize_t size, int device,
					 void *stream);

/* Statistics, summed over the clients of |device| (-1: of every device).
 * The caller sets struct_size; only fields inside it are written. Each
 * client is one (device, stream) pair: its wafer memory manager's own
 * figures (wafer_memory_usage_get) are added up. A sum of peaks is the
 * peak of the sum only with one client per device (one stream), which
 * is how a training loop runs; with several it is an upper bound. */
struct wafer_torch_stats {
	size_t struct_size;
	uint64_t clients;        /* (device, stream) pairs opened */
	uint64_t allocs;         /* wafer_torch_alloc calls that returned
				  * memory */
	uint64_t frees;          /* wafer_torch_free calls that gave it back */
	uint64_t zero_allocs;    /* size-0 requests (answered NULL) */
	uint64_t failed_allocs;  /* NULL returned for a size > 0 */
	uint64_t bytes_live;     /* as PyTorch asked: sizes of live pointers */
	uint64_t peak_live;
	/* wafer_memory_usage: */
	uint64_t bytes_in_use;   /* held by live handles (rounded up) */
	uint64_t peak_in_use;
	uint64_t bytes_reserved; /* taken from the device, in use or cached */
	uint64_t peak_reserved;
	uint64_t storage_allocs; /* cuMemAlloc, cuMemAllocAsync, address
				  * reservations */
	uint64_t storage_frees;
	uint64_t storage_maps;   /* pages mapped, unmapped (pool on virtual
				  * memory) */
	uint64_t storage_unmaps;
	uint64_t reuse_hits;     /* reserves served from cached memory */
};

/* 0, or -1 with the reason on stderr (a client's statistics could not
 * be read, struct_size too small). */
WAFER_TORCH_EXPORT int wafer_torch_stats(int device,
					 struct wafer_torch_stats *out);

/* PyTorch's record_stream (set with set_record_stream_fn): the block at
 * |ptr| is also used by work on |stream|. Its free then waits, on the
 * device, for the work issued on those streams before the free too, as
 * PyTorch's own allocator does with its events. */
WAFER_TORCH_EXPORT void wafer_torch_record_stream(void *ptr, void *stream);

/* Returns the memory every client holds cached, unused, to the device
 * (wafer_memory_trim), after the work issued on each stream before it
 * (torch.cuda.empty_cache's counterpart; PyTorch's pluggable allocator
 * does not call it, the program does, through ctypes). */
WAFER_TORCH_EXPORT void wafer_torch_empty_cache(void);

/* Closes every client and the runtime; the next wafer_torch_alloc opens
 * them again. Memory still allocated is freed with its client: the
 * return value is how many pointers were still live (0 in a tidy
 * program). Not to be called while other threads allocate or free. */
WAFER_TORCH_EXPORT size_t wafer_torch_close(void);

#ifdef __cplusplus
}

/* The CUDA-graph private-pool hooks (graph_pool.cc), with the C++
 * signatures PyTorch casts their addresses to (set_begin_allocate_to_pool,
 * set_end_allocate_to_pool_fn, set_release_pool; wafer-torch(7)). C
 * linkage, so that ctypes finds them by name. */
#include <functional>
#include <utility>
typedef struct CUstream_st *cudaStream_t;
extern "C" {
WAFER_TORCH_EXPORT void wafer_torch_begin_allocate_to_pool(
	int device, std::pair<unsigned long long, unsigned long long> pool,
	std::function<bool(cudaStream_t)> filter);
WAFER_TORCH_EXPORT void wafer_torch_end_allocate_to_pool(
	int device, std::pair<unsigned long long, unsigned long long> pool);
WAFER_TORCH_EXPORT void wafer_torch_release_pool(
	int device, std::pair<unsigned long long, unsigned long long> pool);
}
#endif

#endif
