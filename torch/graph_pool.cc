/* wafer — SPDX-License-Identifier: MIT
 *
 * graph_pool.cc: the CUDA-graph hooks of PyTorch's pluggable allocator
 * (wafer-torch(7), "CUDA graphs"). While PyTorch captures a graph it
 * asks for memory from a private pool: begin(device, pool, filter) says
 * that from now on the allocations on |device| whose stream |filter|
 * accepts (the capturing stream) belong to |pool|, end stops that, and
 * release_pool says the graph is gone. allocator.c keeps a pool's memory
 * in clients of its own (torch_pool_of picks them), so a block freed
 * inside a capture is reused only by the same graph's later allocations,
 * as PyTorch's own private pools behave.
 *
 * The hooks take C++ types (std::pair, std::function), so they are
 * defined here with the exact signatures PyTorch casts their addresses
 * to: void(int, MempoolId_t, std::function<bool(cudaStream_t)>) and
 * void(int, MempoolId_t), MempoolId_t being
 * std::pair<unsigned long long, unsigned long long>. */
#include "build-config.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <utility>
#include <vector>

#include "torch/raise.h"
#include "torch/wafer_torch.h"

namespace {

struct Capture {
	int device;
	std::pair<unsigned long long, unsigned long long> pool;
	std::function<bool(cudaStream_t)> filter;
};

std::mutex lock;
std::vector<Capture> captures;
std::atomic<int> capturing{0};

} // namespace

void wafer_torch_begin_allocate_to_pool(
	int device, std::pair<unsigned long long, unsigned long long> pool,
	std::function<bool(cudaStream_t)> filter)
{
	std::lock_guard<std::mutex> hold(lock);
	captures.push_back(Capture{device, pool, std::move(filter)});
	capturing.store((int)captures.size());
}

void wafer_torch_end_allocate_to_pool(
	int device, std::pair<unsigned long long, unsigned long long> pool)
{
	std::lock_guard<std::mutex> hold(lock);
	for (auto it = captures.begin(); it != captures.end(); ++it)
		if (it->device == device && it->pool == pool) {
			captures.erase(it);
			break;
		}
	capturing.store((int)captures.size());
}

void wafer_torch_release_pool(
	int device, std::pair<unsigned long long, unsigned long long> pool)
{
	torch_pool_release(device, pool.first, pool.second);
}

/* The pool an allocation on (|device|, |stream|) belongs to: the latest
 * capture of the device whose filter takes the stream. */
int torch_pool_of(int device, void *stream, uint64_t out_pool[2])
{
	if (!capturing.load(std::memory_order_relaxed))
		return 0;
	std::lock_guard<std::mutex> hold(lock);
	for (auto it = captures.rbegin(); it != captures.rend(); ++it)
		if (it->device == device &&
		    it->filter(static_cast<cudaStream_t>(stream))) {
			out_pool[0] = it->pool.first;
			out_pool[1] = it->pool.second;
			return 1;
		}
	return 0;
}
