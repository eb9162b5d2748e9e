/* wafer — SPDX-License-Identifier: MIT
 *
 * torch_catch.cc: for t/cuda/torch_alloc (C), a call of wafer_torch_alloc
 * that catches what it throws, as PyTorch's Python bindings do. */
#include "build-config.h"

#include <stdexcept>
#include <stdio.h>

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
