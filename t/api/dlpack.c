/* wafer — SPDX-License-Identifier: MIT
 *
 * dlpack.c: DLPack exchange (include/wafer/dlpack.h). A DLManagedTensor
 * made here by hand, imported, used in an operation, its deleter counted
 * (exactly once, after the last release, also when the client closes
 * first); export and import back into the same client (same shape,
 * strides, dtype, bytes, memory); a transposed and a sliced view both
 * ways; the dtype mapping of every wafer dtype; and the refusals (another
 * device, dtypes wafer has not, negative strides, empty tensors, NULLs),
 * each leaving the deleter uncalled and nothing alive.
 *
 * Backend-neutral: it opens "default" (WAFER_BACKEND picks another). The
 * hand-made tensor's memory is malloc'd on cpu (host memory) and, on a
 * device with its own memory, a wafer handle's native memory (the test
 * cannot allocate device memory itself). On opencl the device's buffers
 * are cl_mem objects, which DLPack cannot carry: the refusals are checked
 * and the zero-copy points are skipped with that reason. */
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

static wafer_client *client;
static wafer_native_queue queue = {.struct_size = sizeof queue};
static int dl_device; /* the client's device as DLPack names it */

/*===----------------------------------------------------------------------===
 * A DLManagedTensor made by hand, its deleter counted
 *===----------------------------------------------------------------------===*/

struct made {
	DLManagedTensor m;
	int64_t shape[WAFER_MAX_RANK + 1];
	int64_t strides[WAFER_MAX_RANK + 1];
	int deleted; /* deleter calls */
	/* The memory: malloc'd (host), or a wafer handle's (backing). */
	void *host;
	wafer_handle backing;
};

static void made_deleter(DLManagedTensor *self)
{
	struct made *made = self->manager_ctx;
	made->deleted++;
}

/* Memory for |bytes| on the client's device, |*data| its first byte. */
static void made_memory(struct made *made, size_t bytes, const void *values)
{
	if (dl_device == kDLCPU) {
		made->host = aligned_alloc(256, (bytes + 255) / 256 * 256);
		if (!made->host)
			bail_out("out of host memory");
		memcpy(made->host, values, bytes);
		made->m.dl_tensor.data = made->host;
		return;
	}
	wafer_native_buffer nb = {.struct_size = sizeof nb};
	check(wafer_create(client, values, bytes, &made->backing), "create");
	check(wafer_handle_native(client, made->backing, &nb), "native");
	made->m.dl_tensor.data = (void *)(uintptr_t)nb.address;
}

/* A rank-|rank| f32 tensor of |values| on the client's device; |strides|
 * may be NULL (compact row-major). */
static struct made *made_f32(uint32_t rank, const int64_t *shape,
			     const int64_t *strides, const float *values,
			     size_t count)
{
	struct made *made = calloc(1, sizeof *made);
	if (!made)
		bail_out("out of host memory");
	made->m.manager_ctx = made;
	made->m.deleter = made_deleter;
	made->m.dl_tensor.device.device_type = (DLDeviceType)dl_device;
	made->m.dl_tensor.device.device_id =
		dl_device == kDLCPU ? 0 : queue.device_ordinal;
	made->m.dl_tensor.ndim = (int)rank;
	made->m.dl_tensor.dtype.code = kDLFloat;
	made->m.dl_tensor.dtype.bits = 32;
	made->m.dl_tensor.dtype.lanes = 1;
	for (uint32_t d = 0; d < rank; d++) {
		made->shape[d] = shape[d];
		if (strides)
			made->strides[d] = strides[d];
	}
	made->m.dl_tensor.shape = made->shape;
	made->m.dl_tensor.strides = strides ? made->strides : NULL;
	made_memory(made, count * sizeof(float), values);
	return made;
}

static void made_free(struct made *made)
{
	free(made->host);
	if (!wafer_handle_is_null(made->backing))
		check(wafer_release(client, made->backing), "release backing");
	free(made);
}

static uint32_t references(wafer_handle h)
{
	uint32_t n = 0;
	check(wafer_handle_references(client, h, &n), "references");
	return n;
}

static uint64_t native_address(wafer_handle h)
{
	wafer_native_buffer nb = {.struct_size = sizeof nb};
	check(wafer_handle_native(client, h, &nb), "native");
	return nb.address;
}

static int is_null_tensor(const wafer_tensor *t)
{
	static const wafer_tensor zero;
	return memcmp(t, &zero, sizeof zero) == 0;
}

/*===----------------------------------------------------------------------===
 * Import of a hand-made tensor
 *===----------------------------------------------------------------------===*/

static void test_import_made(void)
{
	const float v[6] = {1, -2, 3, -4, 5, -6};
	const int64_t shape[2] = {2, 3};
	struct made *made = made_f32(2, shape, NULL, v, 6);
	wafer_tensor x, y;

	is_status(wafer_tensor_from_dlpack(client, &made->m, &x), WAFER_OK,
		  "import: a hand-made 2x3 f32 tensor");
	ok(x.dtype == WAFER_DTYPE_F32 && x.rank == 2 && x.shape[0] == 2 &&
		   x.shape[1] == 3 && x.offset == 0 && !x.strided,
	   "import: a dense 2x3 f32 view at offset 0");
	is_int((long long)native_address(x.handle),
	       (long long)(uintptr_t)made->m.dl_tensor.data,
	       "import: the handle's memory is the tensor's (no copy)");

	/* Used in an operation, on what the producer wrote. */
	is_status(wafer_op_unary(client, WAFER_UNARY_NEG, &x, WAFER_ALWAYS_COPY,
				 &y),
		  WAFER_OK, "import: neg of the imported tensor");
	float *got = download_f32(client, &y);
	int same = 1;
	for (int i = 0; i < 6; i++)
		same &= got[i] == -v[i];
	ok(same, "import: neg's result is the negated producer's values");
	free(got);
	check(wafer_tensor_release(client, &y), "release y");

	/* Written through wafer, read by the producer: the same bytes. */
	const float nine = 9;
	check(wafer_write(client, x.handle, 4 * sizeof(float), &nine,
			  sizeof nine),
	      "write");
	check(wafer_sync(client), "sync");
	float seen;
	if (dl_device == kDLCPU)
		seen = ((float *)made->host)[4];
	else
		check(wafer_read(client, made->backing, 4 * sizeof(float),
				 &seen, sizeof seen),
		      "read backing");
	ok(seen == 9, "import: a write through wafer is in the producer's "
		      "memory (element 4 is %g)", (double)seen);

	/* The deleter: not while a reference is left, once after the last. */
	check(wafer_retain(client, x.handle), "retain");
	check(wafer_tensor_release(client, &x), "release 1");
	check(wafer_sync(client), "sync");
	is_int(made->deleted, 0, "deleter: not called while a reference is "
				 "left");
	check(wafer_tensor_release(client, &x), "release 2");
	check(wafer_sync(client), "sync");
	is_int(made->deleted, 1, "deleter: called once after the last release");
	check(wafer_sync(client), "sync");
	is_int(made->deleted, 1, "deleter: still once after another sync");
	made_free(made);
}

/* A tensor whose first element is not on the device's alignment (a
 * framework's slice): imported from the aligned address below, the view
 * offset covering the rest. */
static void test_import_unaligned(void)
{
	const float v[8] = {10, 11, 12, 13, 14, 15, 16, 17};
	const int64_t shape[1] = {8};
	struct made *made = made_f32(1, shape, NULL, v, 8);
	wafer_tensor x;

	made->shape[0] = 5;
	made->m.dl_tensor.byte_offset = 3 * sizeof(float);
	is_status(wafer_tensor_from_dlpack(client, &made->m, &x), WAFER_OK,
		  "import: a tensor starting 12 bytes into its memory");
	float *got = download_f32(client, &x);
	ok(got[0] == 13 && got[4] == 17,
	   "import at byte_offset 12: elements 3..7 (%g .. %g)",
	   (double)got[0], (double)got[4]);
	free(got);
	is_int((long long)(native_address(x.handle) +
			   x.offset * sizeof(float)),
	       (long long)((uintptr_t)made->m.dl_tensor.data + 12),
	       "import at byte_offset 12: the view's first element is the "
	       "producer's (no copy)");
	check(wafer_tensor_release(client, &x), "release");
	check(wafer_sync(client), "sync");
	is_int(made->deleted, 1, "import at byte_offset 12: deleter once");
	made_free(made);
}

/*===----------------------------------------------------------------------===
 * Export and import back
 *===----------------------------------------------------------------------===*/

/* Reads |t| and |u| and compares their elements. */
static int same_elements(const wafer_tensor *t, const wafer_tensor *u)
{
	float *a = download_f32(client, t), *b = download_f32(client, u);
	int same = wafer_tensor_count(t) == wafer_tensor_count(u) &&
		   memcmp(a, b, wafer_tensor_count(t) * sizeof *a) == 0;
	free(a);
	free(b);
	return same;
}

static void test_round_trip(void)
{
	float v[24];
	for (int i = 0; i < 24; i++)
		v[i] = (float)i * 0.5f - 3;
	const uint64_t shape[3] = {2, 3, 4};
	wafer_tensor t = upload_f32(client, 3, shape, v), u;
	DLManagedTensor *m = NULL;

	is_status(wafer_tensor_to_dlpack(client, &t, &m), WAFER_OK,
		  "export: a 2x3x4 f32 tensor");
	if (!m)
		bail_out("export gave no tensor");
	DLTensor *dl = &m->dl_tensor;
	ok(dl->ndim == 3 && dl->shape[0] == 2 && dl->shape[1] == 3 &&
		   dl->shape[2] == 4,
	   "export: shape 2x3x4");
	ok(dl->strides && dl->strides[0] == 12 && dl->strides[1] == 4 &&
		   dl->strides[2] == 1,
	   "export: row-major strides 12, 4, 1 (in elements)");
	ok(dl->dtype.code == kDLFloat && dl->dtype.bits == 32 &&
		   dl->dtype.lanes == 1,
	   "export: dtype float32");
	ok(dl->device.device_type == (DLDeviceType)dl_device &&
		   dl->device.device_id ==
			   (dl_device == kDLCPU ? 0 : queue.device_ordinal),
	   "export: device %d:%d is the client's", (int)dl->device.device_type,
	   dl->device.device_id);
	ok((uintptr_t)dl->data == native_address(t.handle) &&
		   dl->byte_offset == 0,
	   "export: data is the handle's memory, byte_offset 0");
	is_int(references(t.handle), 2, "export: holds one reference");
	if (dl_device == kDLCPU) {
		const float *host = (const float *)dl->data;
		ok(host[0] == v[0] && host[23] == v[23],
		   "export: the host reads the tensor's values at data");
	}

	is_status(wafer_tensor_from_dlpack(client, m, &u), WAFER_OK,
		  "round trip: import the export");
	ok(u.dtype == t.dtype && u.rank == 3 && u.shape[0] == 2 &&
		   u.shape[1] == 3 && u.shape[2] == 4 && !u.strided &&
		   u.offset == 0,
	   "round trip: same dtype, shape, dense layout");
	is_int((long long)native_address(u.handle),
	       (long long)native_address(t.handle),
	       "round trip: same memory");
	ok(same_elements(&t, &u), "round trip: same bytes");

	/* The import's release calls the export's deleter, which drops the
	 * export's reference on the same client. */
	check(wafer_tensor_release(client, &u), "release u");
	check(wafer_sync(client), "sync");
	is_int(references(t.handle), 1,
	       "round trip: releasing the import ran the export's deleter");
	check(wafer_tensor_release(client, &t), "release t");
	ok_clean(client, "round trip: at the end");
}

/* A transposed view (strides 1, 3), a broadcast (stride 0) and a slice
 * (byte_offset), both ways. */
static void test_views(void)
{
	const float v[6] = {1, 2, 3, 4, 5, 6};
	const uint64_t shape[2] = {2, 3};
	wafer_tensor t = upload_f32(client, 2, shape, v), tt, s, u;
	DLManagedTensor *m;
	float *got;

	check(wafer_tensor_transpose(&t, 0, 1, &tt), "transpose");
	is_status(wafer_tensor_to_dlpack(client, &tt, &m), WAFER_OK,
		  "export: the transpose of a 2x3 tensor");
	ok(m->dl_tensor.ndim == 2 && m->dl_tensor.shape[0] == 3 &&
		   m->dl_tensor.shape[1] == 2 && m->dl_tensor.strides[0] == 1 &&
		   m->dl_tensor.strides[1] == 3,
	   "export of the transpose: shape 3x2, strides 1, 3");
	is_status(wafer_tensor_from_dlpack(client, m, &u), WAFER_OK,
		  "import of the exported transpose");
	ok(u.strided && u.strides[0] == 1 && u.strides[1] == 3 &&
		   u.shape[0] == 3 && u.shape[1] == 2,
	   "import of the transpose: a strided 3x2 view, strides 1, 3");
	ok(same_elements(&tt, &u),
	   "import of the transpose: the transposed elements");
	check(wafer_tensor_release(client, &u), "release");

	/* A broadcast: row 0 twice (stride 0). */
	wafer_tensor b = t;
	b.strided = 1;
	b.shape[0] = 2;
	b.strides[0] = 0;
	b.strides[1] = 1;
	is_status(wafer_tensor_to_dlpack(client, &b, &m), WAFER_OK,
		  "export: row 0 broadcast to 2x3");
	ok(m->dl_tensor.strides[0] == 0 && m->dl_tensor.strides[1] == 1,
	   "export of the broadcast: strides 0, 1");
	is_status(wafer_tensor_from_dlpack(client, m, &u), WAFER_OK,
		  "import of the exported broadcast");
	got = download_f32(client, &u);
	ok(u.strided && u.strides[0] == 0 && got[0] == 1 && got[3] == 1 &&
		   got[5] == 3,
	   "import of the broadcast: row 0 twice");
	free(got);
	check(wafer_tensor_release(client, &u), "release");

	check(wafer_tensor_slice(&t, 0, 1, 1, &s), "slice");
	is_status(wafer_tensor_to_dlpack(client, &s, &m), WAFER_OK,
		  "export: row 1 of the 2x3 tensor");
	is_int((long long)m->dl_tensor.byte_offset, 3 * sizeof(float),
	       "export of row 1: byte_offset 12");
	is_status(wafer_tensor_from_dlpack(client, m, &u), WAFER_OK,
		  "import of the exported row");
	got = download_f32(client, &u);
	ok(got[0] == 4 && got[1] == 5 && got[2] == 6,
	   "import of row 1: 4, 5, 6");
	free(got);
	check(wafer_tensor_release(client, &u), "release");
	check(wafer_sync(client), "sync");
	is_int(references(t.handle), 1, "views: the exports' references "
					"dropped");
	check(wafer_tensor_release(client, &t), "release t");
	ok_clean(client, "views: at the end");
}

/* Every wafer dtype to DLPack and back. */
static void test_dtypes(void)
{
	static const struct {
		wafer_dtype dtype;
		uint8_t code, bits;
		const char *name;
	} cases[] = {
		{WAFER_DTYPE_F32, kDLFloat, 32, "f32"},
		{WAFER_DTYPE_F16, kDLFloat, 16, "f16"},
		{WAFER_DTYPE_BF16, kDLBfloat, 16, "bf16"},
		{WAFER_DTYPE_I32, kDLInt, 32, "i32"},
		{WAFER_DTYPE_U8, kDLUInt, 8, "u8"},
		{WAFER_DTYPE_F64, kDLFloat, 64, "f64"},
		{WAFER_DTYPE_I64, kDLInt, 64, "i64"},
	};
	const uint64_t shape[1] = {4};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		wafer_tensor t, u;
		DLManagedTensor *m = NULL;
		check(wafer_tensor_empty(client, cases[i].dtype, 1, shape, &t),
		      "empty");
		is_status(wafer_tensor_to_dlpack(client, &t, &m), WAFER_OK,
			  "dtype %s: export", cases[i].name);
		ok(m && m->dl_tensor.dtype.code == cases[i].code &&
			   m->dl_tensor.dtype.bits == cases[i].bits &&
			   m->dl_tensor.dtype.lanes == 1,
		   "dtype %s: DLPack code %u, %u bits, 1 lane", cases[i].name,
		   cases[i].code, cases[i].bits);
		is_status(wafer_tensor_from_dlpack(client, m, &u), WAFER_OK,
			  "dtype %s: import", cases[i].name);
		is_int(u.dtype, cases[i].dtype, "dtype %s: imported as %s",
		       cases[i].name, cases[i].name);
		check(wafer_tensor_release(client, &u), "release u");
		check(wafer_tensor_release(client, &t), "release t");
	}
	ok_clean(client, "dtypes: at the end");
}

/*===----------------------------------------------------------------------===
 * Refusals
 *===----------------------------------------------------------------------===*/

/* Imports |made| expecting |want| with |needle| in the detail; the deleter
 * must stay uncalled, *out a null tensor, nothing alive. */
static void refused(struct made *made, wafer_status want, const char *needle,
		    const char *what)
{
	wafer_tensor x;
	memset(&x, 0xab, sizeof x);
	is_status(wafer_tensor_from_dlpack(client, &made->m, &x), want,
		  "refused: %s", what);
	like(wafer_last_error(), needle, "refused: %s: the error says '%s'",
	     what, needle);
	ok(made->deleted == 0 && is_null_tensor(&x),
	   "refused: %s: deleter not called, a null tensor", what);
}

static void test_refusals(void)
{
	const float v[6] = {0};
	const int64_t shape[2] = {2, 3};
	struct made *made = made_f32(2, shape, NULL, v, 6);
	DLTensor *dl = &made->m.dl_tensor;
	wafer_tensor x;

	/* Another device. */
	dl->device.device_type = dl_device == kDLCPU ? kDLCUDA : kDLCPU;
	refused(made, WAFER_ERROR_NOT_SUPPORTED, "device",
		"a tensor of another device type");
	dl->device.device_type = (DLDeviceType)dl_device;
	dl->device.device_id = queue.device_ordinal + 1;
	refused(made, WAFER_ERROR_NOT_SUPPORTED, "device",
		"a tensor of another device of the type");
	dl->device.device_id = dl_device == kDLCPU ? 0 : queue.device_ordinal;

	/* Element types wafer has not. */
	dl->dtype.code = kDLComplex;
	dl->dtype.bits = 64;
	refused(made, WAFER_ERROR_NOT_SUPPORTED, "not one of wafer's",
		"complex64");
	dl->dtype.code = kDLInt;
	dl->dtype.bits = 16;
	refused(made, WAFER_ERROR_NOT_SUPPORTED, "not one of wafer's", "int16");
	dl->dtype.code = kDLFloat;
	dl->dtype.bits = 32;
	dl->dtype.lanes = 4;
	refused(made, WAFER_ERROR_NOT_SUPPORTED, "4 lanes", "float32x4");
	dl->dtype.lanes = 1;

	/* Layouts wafer_tensor cannot name. */
	made->strides[0] = -3;
	made->strides[1] = 1;
	dl->strides = made->strides;
	dl->byte_offset = 3 * sizeof(float);
	refused(made, WAFER_ERROR_NOT_SUPPORTED, "negative",
		"negative strides (rows flipped)");
	dl->byte_offset = 0;
	dl->strides = NULL;
	made->shape[1] = 0;
	refused(made, WAFER_ERROR_NOT_SUPPORTED, "no empty tensors",
		"an empty tensor");
	made->shape[1] = 3;
	dl->ndim = WAFER_MAX_RANK + 1;
	for (int d = 2; d <= WAFER_MAX_RANK; d++)
		made->shape[d] = 1;
	refused(made, WAFER_ERROR_NOT_SUPPORTED, "at most 8", "rank 9");
	dl->ndim = 2;
	dl->byte_offset = 2;
	refused(made, WAFER_ERROR_NOT_SUPPORTED, "aligned",
		"a first element off its element alignment");
	dl->byte_offset = 0;

	/* NULLs. */
	void *data = dl->data;
	dl->data = NULL;
	refused(made, WAFER_ERROR_INVALID_ARGUMENT, "NULL",
		"a NULL data pointer");
	dl->data = data;
	dl->shape = NULL;
	refused(made, WAFER_ERROR_INVALID_ARGUMENT, "NULL shape",
		"a NULL shape");
	dl->shape = made->shape;
	is_status(wafer_tensor_from_dlpack(NULL, &made->m, &x),
		  WAFER_ERROR_INVALID_ARGUMENT, "from_dlpack: NULL client");
	is_status(wafer_tensor_from_dlpack(client, NULL, &x),
		  WAFER_ERROR_INVALID_ARGUMENT, "from_dlpack: NULL tensor");
	is_status(wafer_tensor_from_dlpack(client, &made->m, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "from_dlpack: NULL out");
	is_int(made->deleted, 0, "refusals: the deleter was never called");
	made_free(made);

	const uint64_t tshape[1] = {4};
	wafer_tensor t;
	static DLManagedTensor sentinel;
	DLManagedTensor *m = &sentinel; /* to see it set to NULL */
	check(wafer_tensor_empty(client, WAFER_DTYPE_F32, 1, tshape, &t),
	      "empty");
	is_status(wafer_tensor_to_dlpack(NULL, &t, &m),
		  WAFER_ERROR_INVALID_ARGUMENT, "to_dlpack: NULL client");
	ok(m == NULL, "to_dlpack: *out is NULL after a failure");
	is_status(wafer_tensor_to_dlpack(client, NULL, &m),
		  WAFER_ERROR_INVALID_ARGUMENT, "to_dlpack: NULL tensor");
	is_status(wafer_tensor_to_dlpack(client, &t, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "to_dlpack: NULL out");
	wafer_tensor past = t;
	past.offset = 1;
	is_status(wafer_tensor_to_dlpack(client, &past, &m),
		  WAFER_ERROR_OUT_OF_RANGE,
		  "to_dlpack: a view past its handle's end");
	is_int(references(t.handle), 1, "to_dlpack: failures retained nothing");
	check(wafer_tensor_release(client, &t), "release");
	is_status(wafer_tensor_to_dlpack(client, &t, &m),
		  WAFER_ERROR_INVALID_HANDLE, "to_dlpack: a released handle");
	ok_clean(client, "refusals: at the end");
}

/*===----------------------------------------------------------------------===
 * The client closing first
 *===----------------------------------------------------------------------===*/

/* An export whose deleter comes after wafer_client_close, and an import
 * still alive at close: its deleter is called by the close, once. Uses a
 * client of its own. */
static void test_close_first(wafer_runtime *rt)
{
	wafer_client *saved = client;
	const float v[4] = {1, 2, 3, 4};
	const uint64_t shape[1] = {4};
	const int64_t dshape[1] = {4};
	DLManagedTensor *m;
	wafer_tensor t, x;

	check(wafer_client_open(rt, "default", NULL, &client), "open");
	t = upload_f32(client, 1, shape, v);
	struct made *made = made_f32(1, dshape, NULL, v, 4);
	check(wafer_tensor_to_dlpack(client, &t, &m), "export");
	check(wafer_tensor_release(client, &t), "release t");
	check(wafer_tensor_from_dlpack(client, &made->m, &x), "import");
	/* The backing handle of a device's hand-made tensor goes first: the
	 * import keeps the memory until close (the close frees both). */
	if (!wafer_handle_is_null(made->backing)) {
		check(wafer_release(client, made->backing), "release backing");
		made->backing = (wafer_handle)WAFER_HANDLE_NULL_INIT;
	}
	is_status(wafer_client_close(client), WAFER_OK,
		  "close with an export and an import alive");
	is_int(made->deleted, 1, "close: the import's deleter ran once");
	/* Frees its record only (ASan and valgrind check there is no use of
	 * the closed client and nothing leaks). */
	m->deleter(m);
	ok(1, "an export's deleter after close frees its record only (ASan, "
	      "valgrind: no use of the closed client, no leak)");
	made_free(made);
	client = saved;
}

int main(void)
{
	wafer_runtime *rt;
	const char *backend = open_default(NULL, &rt, &client);
	wafer_status status = wafer_client_native_queue(client, &queue);

	if (status == WAFER_ERROR_NOT_SUPPORTED) {
		/* A plugin without the interop entries: both calls say so. */
		const uint64_t shape[1] = {4};
		wafer_tensor t;
		DLManagedTensor *m;
		check(wafer_tensor_empty(client, WAFER_DTYPE_F32, 1, shape, &t),
		      "empty");
		is_status(wafer_tensor_to_dlpack(client, &t, &m),
			  WAFER_ERROR_NOT_SUPPORTED,
			  "%s has no interop: export refused", backend);
		like(wafer_last_error(), "interop not supported",
		     "%s has no interop: the error says so", backend);
		check(wafer_tensor_release(client, &t), "release");
		close_default(rt, client);
		done_testing();
		return exit_status();
	}
	check(status, "native_queue");

	if (queue.kind == WAFER_NATIVE_OPENCL_MEM) {
		const uint64_t shape[1] = {4};
		const int64_t dshape[1] = {4};
		wafer_tensor t, x;
		DLManagedTensor *m = NULL;
		DLManagedTensor hand = {0};
		float v[4] = {0};
		check(wafer_tensor_empty(client, WAFER_DTYPE_F32, 1, shape, &t),
		      "empty");
		is_status(wafer_tensor_to_dlpack(client, &t, &m),
			  WAFER_ERROR_NOT_SUPPORTED, "opencl: export refused");
		like(wafer_last_error(), "cl_mem",
		     "opencl: the error names cl_mem");
		ok(m == NULL && references(t.handle) == 1,
		   "opencl: nothing exported, nothing retained");
		hand.dl_tensor.data = v;
		hand.dl_tensor.device.device_type = kDLOpenCL;
		hand.dl_tensor.ndim = 1;
		hand.dl_tensor.shape = (int64_t *)dshape;
		hand.dl_tensor.dtype.code = kDLFloat;
		hand.dl_tensor.dtype.bits = 32;
		hand.dl_tensor.dtype.lanes = 1;
		is_status(wafer_tensor_from_dlpack(client, &hand, &x),
			  WAFER_ERROR_NOT_SUPPORTED, "opencl: import refused");
		like(wafer_last_error(), "cl_mem",
		     "opencl: the error names cl_mem");
		check(wafer_tensor_release(client, &t), "release");
		ok(1, "opencl # SKIP zero-copy exchange: the device's buffers "
		      "are cl_mem objects, which DLPack cannot carry");
		close_default(rt, client);
		done_testing();
		return exit_status();
	}

	switch (queue.kind) {
	case WAFER_NATIVE_HOST_POINTER: dl_device = kDLCPU; break;
	case WAFER_NATIVE_CUDA_POINTER: dl_device = kDLCUDA; break;
	case WAFER_NATIVE_LEVELZERO_POINTER: dl_device = WAFER_DLPACK_ONEAPI; break;
	default: bail_out("native kind %d", (int)queue.kind);
	}
	diag("DLPack device %d, ordinal %d", dl_device, queue.device_ordinal);

	test_import_made();
	test_import_unaligned();
	test_round_trip();
	test_views();
	test_dtypes();
	test_refusals();
	ok_clean(client, "at the end");
	test_close_first(rt);
	close_default(rt, client);
	done_testing();
	return exit_status();
}
