/* wafer — SPDX-License-Identifier: MIT
 *
 * tensor.c: the tensor calls of ops.h that make views and tensors rather
 * than compute — wafer_dtype_size for every dtype, wafer_tensor_view (its
 * fields, and the elements it names read back with wafer_tensor_read
 * against the handle's bytes on the host), and wafer_tensor_empty (the
 * tensor it returns, the bytes it reserves, and each documented error,
 * which must leave a null tensor and the client's memory as it was).
 *
 * Backend-neutral: it opens "default" (WAFER_BACKEND picks another). A
 * read of a strided view needs the backend's copy_strided kernel; without
 * it that check is a skip naming the backend. */
#include "build-config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <wafer/ops.h>
#include <wafer/wafer.h>

#include "t/client_util.h"
#include "t/dtypes.h"
#include "t/tap.h"

static wafer_client *client;

/* The fields a dense view of |rank| dims of |shape| must have: its
 * handle and dtype, the shape up to rank and zeros everywhere else. */
static int is_dense_view(const wafer_tensor *t, wafer_handle handle,
			 wafer_dtype dtype, uint32_t rank,
			 const uint64_t *shape)
{
	if (t->handle.bits != handle.bits || t->dtype != dtype ||
	    t->rank != rank || t->offset != 0 || t->strided != 0 ||
	    t->reserved != 0)
		return 0;
	for (uint32_t d = 0; d < WAFER_MAX_RANK; d++)
		if (t->shape[d] != (d < rank ? shape[d] : 0) || t->strides[d])
			return 0;
	return 1;
}

/*===----------------------------------------------------------------------===
 * wafer_dtype_size
 *===----------------------------------------------------------------------===*/

static void test_dtype_size(void)
{
	for (size_t i = 0; i < T_DTYPE_COUNT; i++)
		is_int((long long)wafer_dtype_size(t_dtypes[i].dtype),
		       (long long)t_dtypes[i].size, "wafer_dtype_size(%s) is %zu",
		       t_dtypes[i].name, t_dtypes[i].size);
	/* "0 for WAFER_DTYPE_NONE and unknown values" */
	static const struct {
		wafer_dtype dtype;
		const char *name;
	} none[] = {
		{WAFER_DTYPE_NONE, "none"},
		{(wafer_dtype)(WAFER_DTYPE_I64 + 1), "the value after i64"},
		{(wafer_dtype)99, "99"},
		{(wafer_dtype)-1, "-1"},
	};
	for (size_t i = 0; i < sizeof none / sizeof none[0]; i++)
		is_int((long long)wafer_dtype_size(none[i].dtype), 0,
		       "wafer_dtype_size(%s) is 0", none[i].name);
}

/*===----------------------------------------------------------------------===
 * wafer_tensor_view
 *===----------------------------------------------------------------------===*/

enum { BYTES = 96 };

static void test_view_fields(void)
{
	unsigned char bytes[BYTES] = {0};
	wafer_handle h;
	check(wafer_create(client, bytes, sizeof bytes, &h), "create");

	const uint64_t shape3[3] = {2, 3, 4};
	wafer_tensor t = wafer_tensor_view(h, WAFER_DTYPE_F32, 3, shape3);
	ok(is_dense_view(&t, h, WAFER_DTYPE_F32, 3, shape3),
	   "view [2, 3, 4] f32: handle, dtype, rank and shape as given; "
	   "offset, strides and the unused dimensions 0; dense (strided 0)");
	is_int((long long)wafer_tensor_count(&t), 24, "  ... 24 elements");

	/* "shape may be NULL when rank is 0" */
	wafer_tensor s = wafer_tensor_view(h, WAFER_DTYPE_I64, 0, NULL);
	ok(is_dense_view(&s, h, WAFER_DTYPE_I64, 0, NULL),
	   "view of rank 0 with a NULL shape: a scalar view of the handle");
	is_int((long long)wafer_tensor_count(&s), 1, "  ... one element");

	/* A view is a value: it takes no reference. */
	uint32_t refs = 0;
	check(wafer_handle_references(client, h, &refs), "references");
	is_int(refs, 1, "making views took no reference (still 1)");

	/* "Checks nothing": a view of a null handle or one larger than
	 * the handle is made as asked; the operation using it checks. */
	wafer_handle null = WAFER_HANDLE_NULL_INIT;
	const uint64_t big = 1000;
	wafer_tensor n = wafer_tensor_view(null, WAFER_DTYPE_F32, 1, &big);
	ok(is_dense_view(&n, null, WAFER_DTYPE_F32, 1, &big),
	   "a view of the null handle is made as asked");
	float dst[1000];
	wafer_tensor over = wafer_tensor_view(h, WAFER_DTYPE_F32, 1, &big);
	is_status(wafer_tensor_read(client, &over, dst, sizeof dst),
		  WAFER_ERROR_OUT_OF_RANGE,
		  "reading a view of 1000 f32 in a %d-byte handle", BYTES);
	is_status(wafer_tensor_read(client, &n, dst, sizeof dst),
		  WAFER_ERROR_INVALID_HANDLE, "reading a view of the null handle");
	check(wafer_release(client, h), "release");
}

/* The bytes a view names, read with wafer_tensor_read, are the handle's
 * bytes in row-major order: for each dtype, the whole handle, a prefix
 * and a scalar. */
static void test_view_read(void)
{
	static const wafer_dtype dtypes[] = {
		WAFER_DTYPE_F32, WAFER_DTYPE_F16, WAFER_DTYPE_BF16,
		WAFER_DTYPE_I32, WAFER_DTYPE_U8,  WAFER_DTYPE_F64,
		WAFER_DTYPE_I64,
	};
	unsigned char bytes[BYTES], got[BYTES];
	for (size_t i = 0; i < BYTES; i++)
		bytes[i] = (unsigned char)(i * 7 + 3);
	wafer_handle h;
	check(wafer_create(client, bytes, sizeof bytes, &h), "create");

	for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++) {
		size_t size = wafer_dtype_size(dtypes[i]);
		uint64_t n = BYTES / size;
		/* The whole handle as [2, n / 2], a prefix [n / 4, 3] of it,
		 * and its first element. */
		const uint64_t whole[2] = {2, n / 2};
		const uint64_t prefix[2] = {n / 4 / 3 ? n / 4 / 3 : 1, 3};
		struct {
			uint32_t rank;
			const uint64_t *shape;
			uint64_t count;
		} views[] = {
			{2, whole, n},
			{2, prefix, prefix[0] * 3},
			{0, NULL, 1},
		};
		for (size_t v = 0; v < sizeof views / sizeof views[0]; v++) {
			wafer_tensor t = wafer_tensor_view(h, dtypes[i],
							   views[v].rank,
							   views[v].shape);
			size_t want = (size_t)views[v].count * size;
			memset(got, 0, sizeof got);
			wafer_status status =
				wafer_tensor_read(client, &t, got, want);
			ok(status == WAFER_OK && !memcmp(got, bytes, want),
			   "dtype %d, rank %u: wafer_tensor_read gives the "
			   "handle's first %zu bytes",
			   (int)dtypes[i], views[v].rank, want);
			if (status != WAFER_OK)
				diag("%s: %s", wafer_status_string(status),
				     wafer_last_error());
		}
	}
	check(wafer_release(client, h), "release");
}

/* Row-major: in a view [3, 4, 5], element (i, j, k) is element
 * i * 20 + j * 5 + k of the handle. Transposed and sliced views of it
 * (gathered by wafer_tensor_read) show where each element lies. */
static void test_view_layout(void)
{
	float x[60], got[60];
	for (int i = 0; i < 60; i++)
		x[i] = (float)i;
	wafer_handle h;
	check(wafer_create(client, x, sizeof x, &h), "create");
	const uint64_t shape[3] = {3, 4, 5};
	wafer_tensor t = wafer_tensor_view(h, WAFER_DTYPE_F32, 3, shape), tt,
		     sl;

	check(wafer_tensor_transpose(&t, 0, 2, &tt), "transpose");
	wafer_status status = wafer_tensor_read(client, &tt, got, sizeof got);
	if (status == WAFER_ERROR_NOT_SUPPORTED) {
		ok(1, "# SKIP strided reads: %s", wafer_last_error());
		check(wafer_release(client, h), "release");
		return;
	}
	int same = status == WAFER_OK;
	for (int k = 0; same && k < 5; k++)
		for (int j = 0; j < 4; j++)
			for (int i = 0; i < 3; i++)
				same &= got[(k * 4 + j) * 3 + i] ==
					x[i * 20 + j * 5 + k];
	ok(same, "view [3, 4, 5] transposed to [5, 4, 3]: (k, j, i) is "
		 "element i*20 + j*5 + k");

	check(wafer_tensor_slice(&t, 1, 1, 2, &sl), "slice");
	status = wafer_tensor_read(client, &sl, got, 3 * 2 * 5 * sizeof *got);
	same = status == WAFER_OK;
	for (int i = 0; same && i < 3; i++)
		for (int j = 0; j < 2; j++)
			for (int k = 0; k < 5; k++)
				same &= got[(i * 2 + j) * 5 + k] ==
					x[i * 20 + (j + 1) * 5 + k];
	ok(same, "view [3, 4, 5] sliced to [3, 1:3, 5]: (i, j, k) is "
		 "element i*20 + (j+1)*5 + k");
	check(wafer_release(client, h), "release");
}

/*===----------------------------------------------------------------------===
 * wafer_tensor_empty
 *===----------------------------------------------------------------------===*/

static void test_empty(void)
{
	static const uint64_t s1[1] = {33}, s2[2] = {7, 9},
			      s8[8] = {2, 1, 3, 1, 2, 1, 1, 2};
	static const struct {
		wafer_dtype dtype;
		uint32_t rank;
		const uint64_t *shape;
		uint64_t count;
	} cases[] = {
		{WAFER_DTYPE_F32, 2, s2, 63}, {WAFER_DTYPE_U8, 1, s1, 33},
		{WAFER_DTYPE_F16, 8, s8, 24}, {WAFER_DTYPE_I64, 0, NULL, 1},
		{WAFER_DTYPE_BF16, 1, s1, 33},
	};
	wafer_memory_usage before = usage_now(client);

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		size_t bytes = (size_t)cases[i].count *
			       wafer_dtype_size(cases[i].dtype);
		wafer_tensor t;
		memset(&t, 0xa5, sizeof t);
		is_status(wafer_tensor_empty(client, cases[i].dtype,
					     cases[i].rank, cases[i].shape, &t),
			  WAFER_OK, "tensor_empty: dtype %d, rank %u",
			  (int)cases[i].dtype, cases[i].rank);
		ok(!wafer_handle_is_null(t.handle) &&
			   is_dense_view(&t, t.handle, cases[i].dtype,
					 cases[i].rank, cases[i].shape),
		   "  ... a dense view of a new handle with that dtype and "
		   "shape");
		size_t size = 0;
		check(wafer_handle_size(client, t.handle, &size), "size");
		is_int((long long)size, (long long)bytes,
		       "  ... whose handle is count x element size = %zu bytes",
		       bytes);
		uint32_t refs = 0;
		check(wafer_handle_references(client, t.handle, &refs),
		      "references");
		is_int(refs, 1, "  ... holding one reference");
		wafer_memory_usage now = usage_now(client);
		ok(now.handles_live == before.handles_live + 1 &&
			   now.bytes_in_use == before.bytes_in_use + bytes,
		   "  ... one more handle live and %zu more bytes in use", bytes);

		/* Reserved, so writable: what is written reads back. */
		unsigned char *pattern = malloc(bytes), *back = malloc(bytes);
		for (size_t b = 0; b < bytes; b++)
			pattern[b] = (unsigned char)(b * 13 + i);
		check(wafer_write(client, t.handle, 0, pattern, bytes), "write");
		ok(wafer_tensor_read(client, &t, back, bytes) == WAFER_OK &&
			   !memcmp(back, pattern, bytes),
		   "  ... its elements are what was written into the handle");
		free(pattern);
		free(back);
		is_status(wafer_tensor_release(client, &t), WAFER_OK,
			  "  ... and wafer_tensor_release releases it");
		now = usage_now(client);
		ok(now.handles_live == before.handles_live &&
			   now.bytes_in_use == before.bytes_in_use,
		   "  ... no handle and no byte left in use");
	}
}

static void test_empty_errors(void)
{
	const uint64_t s2[2] = {4, 8}, zero[2] = {4, 0},
		       huge[2] = {UINT64_C(1) << 40, UINT64_C(1) << 40},
		       s9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
	wafer_device_desc device = {.struct_size = sizeof device};
	check(wafer_client_device(client, &device), "device");
	/* One f32 more than the device has memory. */
	const uint64_t too_big = device.memory_bytes / 4 + 1;
	static const wafer_tensor null_tensor;
	struct {
		wafer_client *client;
		wafer_dtype dtype;
		uint32_t rank;
		const uint64_t *shape;
		wafer_status status;
		const char *detail, *name;
	} cases[] = {
		{NULL, WAFER_DTYPE_F32, 2, s2, WAFER_ERROR_INVALID_ARGUMENT,
		 "client is NULL", "NULL client"},
		{client, WAFER_DTYPE_NONE, 2, s2, WAFER_ERROR_INVALID_ARGUMENT,
		 "dtype 0 has no element size", "dtype none"},
		{client, (wafer_dtype)99, 2, s2, WAFER_ERROR_INVALID_ARGUMENT,
		 "dtype 99 has no element size", "an unknown dtype"},
		{client, WAFER_DTYPE_F32, 9, s9, WAFER_ERROR_INVALID_ARGUMENT,
		 "rank 9 is above 8", "rank 9"},
		{client, WAFER_DTYPE_F32, 2, NULL, WAFER_ERROR_INVALID_ARGUMENT,
		 "rank 2 with a NULL shape", "rank 2 with a NULL shape"},
		{client, WAFER_DTYPE_F32, 2, zero, WAFER_ERROR_INVALID_ARGUMENT,
		 "shape [4, 0] is empty", "a size of 0"},
		{client, WAFER_DTYPE_F32, 2, huge, WAFER_ERROR_INVALID_ARGUMENT,
		 "too large", "2^80 elements"},
		{client, WAFER_DTYPE_F32, 1, &too_big,
		 WAFER_ERROR_OUT_OF_MEMORY, "cannot reserve",
		 "more bytes than the device has"},
	};
	wafer_memory_usage before = usage_now(client);

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		if (cases[i].status == WAFER_ERROR_OUT_OF_MEMORY &&
		    !device.memory_bytes) {
			ok(1, "# SKIP %s: %s reports no memory size",
			   cases[i].name, device.backend);
			continue;
		}
		wafer_tensor t;
		memset(&t, 0xa5, sizeof t);
		is_status(wafer_tensor_empty(cases[i].client, cases[i].dtype,
					     cases[i].rank, cases[i].shape, &t),
			  cases[i].status, "tensor_empty with %s", cases[i].name);
		like(wafer_last_error(), cases[i].detail, "  ... detail: '%s'",
		     cases[i].detail);
		ok(!memcmp(&t, &null_tensor, sizeof t),
		   "  ... *out is a null tensor");
	}
	is_status(wafer_tensor_empty(client, WAFER_DTYPE_F32, 2, s2, NULL),
		  WAFER_ERROR_INVALID_ARGUMENT, "tensor_empty with a NULL out");
	like(wafer_last_error(), "out is NULL", "  ... detail names out");

	wafer_memory_usage after = usage_now(client);
	ok(after.handles_live == before.handles_live &&
		   after.bytes_in_use == before.bytes_in_use &&
		   after.bytes_reserved == before.bytes_reserved &&
		   after.storage_allocs == before.storage_allocs,
	   "the failed calls reserved nothing (handles %" PRIu64 " -> %" PRIu64
	   ", in use %" PRIu64 " -> %" PRIu64 ", storage allocations %" PRIu64
	   " -> %" PRIu64 ")",
	   before.handles_live, after.handles_live, before.bytes_in_use,
	   after.bytes_in_use, before.storage_allocs, after.storage_allocs);
}

int main(void)
{
	wafer_runtime *runtime;

	open_default(NULL, &runtime, &client);

	test_dtype_size();
	test_view_fields();
	test_view_read();
	test_view_layout();
	test_empty();
	test_empty_errors();

	ok_clean(client, "at the end");
	close_default(runtime, client);
	done_testing();
	return exit_status();
}
