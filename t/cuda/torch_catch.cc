/* wafer — SPDX-License-Identifier: MIT
 *
 * torch_catch.cc: for t/cuda/torch_alloc (C), a call of wafer_torch_alloc
 * that catches what it throws, as PyTorch's Python bindings do. */
#include "build-config.h"

#include <functional>
#include <stdexcept>
#include <stdio.h>
#include <utility>

#include "t/cuda/torch_catch.h"

int torch_catch_alloc(torch_catch_alloc_fn alloc, ssize_t size, int device,
		      void *stream, void **out, char *what, size_t what_size)
{
	what[0] = '\0';
	*out = NULL;
	try {
		*out = alloc(size, device, stream);
	} catch (const std::runtime_error &e) {
		snprintf(what, what_size, "%s", e.what());
		return 1;
	} catch (...) {
		snprintf(what, what_size, "(not a std::runtime_error)");
		return 2;
	}
	return 0;
}

/* The hooks' C++ types, as PyTorch calls them (graph_pool.cc). */
typedef void (*begin_fn)(int, std::pair<unsigned long long, unsigned long long>,
			 std::function<bool(struct CUstream_st *)>);
typedef void (*pool_fn)(int, std::pair<unsigned long long, unsigned long long>);

void torch_catch_begin_pool(void *begin, int device, unsigned long long a,
			    unsigned long long b, void *stream)
{
	/* PyTorch's filter: the capturing stream only. */
	((begin_fn)begin)(device, std::make_pair(a, b),
			  [stream](struct CUstream_st *s) {
				  return (void *)s == stream;
			  });
}

void torch_catch_pool_call(void *fn, int device, unsigned long long a,
			   unsigned long long b)
{
	((pool_fn)fn)(device, std::make_pair(a, b));
}
