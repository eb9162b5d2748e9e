/* wafer — SPDX-License-Identifier: MIT
 *
 * replay_device.h: wafer-replay's `--storage SELECTOR`: a real device's
 * storage (its plugin's storage ops on a queue of its own) in place of
 * the accounting-only null storage, so a trace replays against the real
 * allocator and its costs (cuMemAlloc, cuMemCreate + cuMemMap, the
 * stream-ordered pool...). */
#ifndef WAFER_TOOLS_REPLAY_DEVICE_H
#define WAFER_TOOLS_REPLAY_DEVICE_H

#include "core/storage.h"

struct replay_device;

/* Opens a runtime (the configuration chain as usual), the device
 * |selector| names ("cuda", "cuda:1", "default") and a queue on it, and
 * fills |*out_storage| to allocate from it. Returns NULL with the reason
 * in wafer_last_error() (the core's error text). */
struct replay_device *replay_device_open(const char *selector,
					 struct wafer_storage *out_storage);

/* "cuda:0 (NVIDIA H100 ...)", for the report. */
const char *replay_device_name(const struct replay_device *device);

/* Synchronises the queue, destroys it and closes the device and runtime.
 * Call after the memory manager gave everything back. */
void replay_device_close(struct replay_device *device);

#endif
