/* wafer — SPDX-License-Identifier: MIT
 *
 * fuzz/dlpack.c: DLPack tensors as a framework hands them over
 * (wafer_tensor_from_dlpack on a cpu client): rank, shape, strides (or
 * none), byte offset, dtype and device taken from the input, the data a
 * host buffer. Besides "no crash, no undefined behaviour": an import
 * that succeeds gives a view of the tensor's rank and dtype, whose
 * release calls the deleter exactly once; a refusal calls it never and
 * leaves no tensor. Nothing reads or writes the memory (the shape may
 * reach past the buffer, which is the framework's promise to keep). */
#include "build-config.h"

#include <stdint.h>
#include <string.h>

#include <wafer/dlpack.h>

#include "fuzz/cpu_client.h"
#include "fuzz/input.h"

/* Mostly small values, sometimes any 64 bits (overflow paths). */
static int64_t take_small(struct input *in)
{
	uint8_t kind = (uint8_t)take(in, 1);
	return kind < 220 ? (int64_t)(kind % 12) - 1 : (int64_t)take(in, 8);
}

static int deleted;

static void deleter(DLManagedTensor *self)
{
	(void)self;
	deleted++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static _Alignas(64) unsigned char buffer[1 << 16];
	struct input in = {data, size};
	int64_t shape[40], strides[40];
	DLManagedTensor m;

	memset(&m, 0, sizeof m);
	uint8_t flags = (uint8_t)take(&in, 1);
	m.dl_tensor.ndim = (int32_t)(take_small(&in) % 40);
	for (int d = 0; d < 40; d++) {
		shape[d] = take_small(&in);
		strides[d] = take_small(&in);
	}
	m.dl_tensor.data = flags & 1 ? NULL : buffer + take(&in, 1);
	m.dl_tensor.shape = flags & 2 ? NULL : shape;
	m.dl_tensor.strides = flags & 4 ? NULL : strides;
	m.dl_tensor.byte_offset = flags & 8 ? take(&in, 8) : take(&in, 1);
	m.dl_tensor.dtype.code = (uint8_t)take(&in, 1) % 8;
	m.dl_tensor.dtype.bits = (uint8_t)(8u << (take(&in, 1) % 5));
	m.dl_tensor.dtype.lanes = flags & 16 ? (uint16_t)take(&in, 2) : 1;
	m.dl_tensor.device.device_type = flags & 32 ? (DLDeviceType)take(&in, 1)
						    : kDLCPU;
	m.dl_tensor.device.device_id = flags & 64 ? (int32_t)take(&in, 4) : 0;
	m.deleter = deleter;

	wafer_client *client = fuzz_cpu_client();
	wafer_tensor t;
	deleted = 0;
	wafer_status status = wafer_tensor_from_dlpack(client, &m, &t);
	if (status != WAFER_OK) {
		if (deleted || t.handle.bits)
			__builtin_trap();
		return 0;
	}
	if (t.rank != (uint32_t)m.dl_tensor.ndim || deleted)
		__builtin_trap();
	if (wafer_tensor_release(client, &t) != WAFER_OK ||
	    wafer_sync(client) != WAFER_OK || deleted != 1)
		__builtin_trap();
	return 0;
}
