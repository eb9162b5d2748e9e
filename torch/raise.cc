/* wafer — SPDX-License-Identifier: MIT
 *
 * raise.cc: wafer_torch_alloc, the allocation entry PyTorch calls. When
 * wafer cannot give the memory it throws std::runtime_error with wafer's
 * reason: PyTorch's pluggable allocator does not check for NULL (it
 * would hand the pointer to a kernel, which fails far from the cause as
 * an illegal memory access), but it lets a C++ exception through, and
 * its Python bindings turn a std::exception into a RuntimeError with the
 * same text. The allocation itself is allocator.c's, in C. */
#include "build-config.h"

#include <stdexcept>
#include <string>

#include "torch/raise.h"
#include "torch/wafer_torch.h"

void *wafer_torch_alloc(ssize_t size, int device, void *stream)
{
	void *ptr = torch_alloc_or_null(size, device, stream);

	if (ptr || size == 0)
		return ptr;
	throw std::runtime_error(std::string("wafer-torch: ") + torch_reason());
}
