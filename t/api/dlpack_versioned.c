/* wafer — SPDX-License-Identifier: MIT
 *
 * dlpack_versioned.c: the DLPack 1.x calls of <wafer/dlpack.h>
 * (wafer_tensor_to_dlpack_versioned, wafer_tensor_from_dlpack_versioned),
 * which exist only where DLPack's header defines DLPACK_MAJOR_VERSION.
 * Built with lib/dlpack.c compiled again against t/api/dlpack-v1/ (the
 * installed 0.6 header plus 1.0's additions), so the versioned path is
 * compiled and run here too: the version and flags of an export, a round
 * trip (same shape, strides, bytes, memory; the deleter run once), and
 * the refusals of a read-only tensor and of another major version, each
 * leaving the deleter uncalled.
 *
 * Backend-neutral: it opens "default". On opencl (cl_mem, which DLPack
 * cannot carry) and on a plugin without interop it skips, saying so; the
 * refusals themselves are t/api/dlpack's. */
#include "build-config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/dlpack.h>
#include <wafer/interop.h>
#include <wafer/ops.h>
#include <wafer/wafer.h>

#include "t/client_util.h"
#include "t/tap.h"

#if !defined(DLPACK_MAJOR_VERSION)
#error "t/api/dlpack_versioned is built against t/api/dlpack-v1 (DLPack 1.x)"
#endif

static wafer_client *client;

static uint64_t native_address(wafer_handle h)
{
	wafer_native_buffer nb = {.struct_size = sizeof nb};
	check(wafer_handle_native(client, h, &nb), "native");
	return nb.address;
}

/* A versioned tensor the test owns, wrapping an export: its deleter
 * counts and hands the export back to wafer's deleter. */
struct wrapped {
	DLManagedTensorVersioned m;
	DLManagedTensorVersioned *inner;
	int deleted;
};

static void wrapped_deleter(DLManagedTensorVersioned *self)
{
	struct wrapped *w = self->manager_ctx;
	w->deleted++;
	w->inner->deleter(w->inner);
}

int main(void)
{
	wafer_runtime *rt;
	const char *backend = open_default(NULL, &rt, &client);
	wafer_native_queue queue = {.struct_size = sizeof queue};
	wafer_status status = wafer_client_native_queue(client, &queue);

	if (status == WAFER_ERROR_NOT_SUPPORTED || queue.kind ==
						      WAFER_NATIVE_OPENCL_MEM) {
		printf("1..0 # SKIP %s: %s\n", backend,
		       status != WAFER_OK ? "no interop entries"
					  : "cl_mem buffers, which DLPack "
					    "cannot carry (t/api/dlpack checks the "
					    "refusal)");
		close_default(rt, client);
		return 0;
	}
	check(status, "native_queue");

	const float v[6] = {1, 2, 3, 4, 5, 6};
	const uint64_t shape[2] = {2, 3};
	wafer_tensor t = upload_f32(client, 2, shape, v), tt, u;
	DLManagedTensorVersioned *m = NULL;

	check(wafer_tensor_transpose(&t, 0, 1, &tt), "transpose");
	is_status(wafer_tensor_to_dlpack_versioned(client, &tt, &m), WAFER_OK,
		  "export (versioned): the transpose of a 2x3 tensor");
	if (!m)
		bail_out("no tensor exported");
	ok(m->version.major == DLPACK_MAJOR_VERSION &&
		   m->version.minor == DLPACK_MINOR_VERSION && m->flags == 0,
	   "export (versioned): version %u.%u, flags 0", m->version.major,
	   m->version.minor);
	ok(m->dl_tensor.ndim == 2 && m->dl_tensor.shape[0] == 3 &&
		   m->dl_tensor.shape[1] == 2 && m->dl_tensor.strides[0] == 1 &&
		   m->dl_tensor.strides[1] == 3 &&
		   (uintptr_t)m->dl_tensor.data == native_address(t.handle),
	   "export (versioned): shape 3x2, strides 1, 3, the handle's memory");

	/* Refusals: read-only, another major. */
	struct wrapped w = {.inner = m};
	w.m = *m;
	w.m.manager_ctx = &w;
	w.m.deleter = wrapped_deleter;
	w.m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
	memset(&u, 0xab, sizeof u);
	is_status(wafer_tensor_from_dlpack_versioned(client, &w.m, &u),
		  WAFER_ERROR_NOT_SUPPORTED, "import (versioned): read-only "
					     "refused");
	like(wafer_last_error(), "read-only",
	     "import (versioned): the error says read-only");
	w.m.flags = 0;
	w.m.version.major = 2;
	is_status(wafer_tensor_from_dlpack_versioned(client, &w.m, &u),
		  WAFER_ERROR_NOT_SUPPORTED, "import (versioned): version 2.x "
					     "refused");
	is_int(w.deleted, 0, "import (versioned): refusals did not call the "
			     "deleter");

	/* Accepted: flagged as a copy is fine. */
	w.m.version.major = 1;
	w.m.flags = DLPACK_FLAG_BITMASK_IS_COPIED;
	is_status(wafer_tensor_from_dlpack_versioned(client, &w.m, &u),
		  WAFER_OK, "import (versioned): the export back");
	ok(u.strided && u.shape[0] == 3 && u.shape[1] == 2 &&
		   u.strides[0] == 1 && u.strides[1] == 3 &&
		   native_address(u.handle) == native_address(t.handle),
	   "import (versioned): the strided 3x2 view, the same memory");
	float *a = download_f32(client, &tt), *b = download_f32(client, &u);
	ok(memcmp(a, b, sizeof v) == 0, "import (versioned): same elements");
	free(a);
	free(b);
	check(wafer_tensor_release(client, &u), "release u");
	check(wafer_sync(client), "sync");
	is_int(w.deleted, 1, "import (versioned): the deleter ran once");
	uint32_t refs = 0;
	check(wafer_handle_references(client, t.handle, &refs), "references");
	is_int(refs, 1, "export (versioned): its reference dropped");
	check(wafer_tensor_release(client, &t), "release t");
	ok_clean(client, "at the end");
	close_default(rt, client);
	done_testing();
	return exit_status();
}
