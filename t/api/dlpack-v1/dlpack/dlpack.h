/* wafer — SPDX-License-Identifier: MIT
 *
 * t/api/dlpack-v1/dlpack/dlpack.h: a stand-in for DLPack 1.x's header, so that
 * the versioned calls of <wafer/dlpack.h> (compiled only where the header
 * defines DLPACK_MAJOR_VERSION) are built and tested on a machine that
 * has DLPack 0.6 (Debian's libdlpack-dev). It takes the installed header
 * and adds what DLPack 1.0 added to its ABI: the version, the versioned
 * managed tensor (version first, then manager_ctx, deleter, flags, the
 * DLTensor) and the flag bits. Used by t/api/dlpack_versioned only; where the
 * installed header is 1.x already, it is that header unchanged. */
#ifndef WAFER_T_DLPACK_V1_H
#define WAFER_T_DLPACK_V1_H

#include_next <dlpack/dlpack.h>

#ifndef DLPACK_MAJOR_VERSION
#define DLPACK_MAJOR_VERSION 1
#define DLPACK_MINOR_VERSION 0

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
	uint32_t major;
	uint32_t minor;
} DLPackVersion;

#define DLPACK_FLAG_BITMASK_READ_ONLY (UINT64_C(1) << 0)
#define DLPACK_FLAG_BITMASK_IS_COPIED (UINT64_C(1) << 1)

typedef struct DLManagedTensorVersioned {
	DLPackVersion version;
	void *manager_ctx;
	void (*deleter)(struct DLManagedTensorVersioned *self);
	uint64_t flags;
	DLTensor dl_tensor;
} DLManagedTensorVersioned;

#ifdef __cplusplus
}
#endif
#endif /* !DLPACK_MAJOR_VERSION */

#endif
