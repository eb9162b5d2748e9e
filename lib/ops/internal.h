/* wafer — SPDX-License-Identifier: MIT
 *
 * internal.h: what the files of the ops layer (lib/ops/) share.
 *
 *   view.c       checking views against their handles, dense strides,
 *                broadcasting, coalescing dimensions; the tensor helpers
 *                of ops.h (create, read, transpose, ...)
 *   call.c       one operation's life: inputs checked, donation rules,
 *                the output chosen (reuse, donation or a new buffer),
 *                donated inputs dropped after the launch
 *   launch.c     kernel lookup and launch through the client, gathers
 *                (copy_strided) into dense buffers, temporaries
 *   elementwise.c  fill, copy, cast, unary, binary, scalar
 *   reduce.c     reductions and softmax over the last dimension
 *   matmul.c     batched matmul
 *
 * Every operation follows the same steps, so the donation rules live in
 * one place (call.c):
 *
 *   wafer__op_begin      copies and checks the input views, the donation
 *                       rules; sets *out to a null tensor
 *   (the operation)     shapes, kernels — every failure that can leave the
 *                       inputs untouched happens here
 *   wafer__op_output     the point of no return: reuses an input's buffer
 *                       (REUSE_INPUT, DONATE_INPUT) or reserves a new one
 *   (the operation)     launches, binding inputs by wafer__op_input_handle
 *   wafer__op_finish     drops donated inputs that were not reused, logs
 *                       why, hands the output over (or cleans up) */
#ifndef WAFER_CORE_OPS_INTERNAL_H
#define WAFER_CORE_OPS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <wafer/ops.h>
#include <wafer/plugin.h>
#include <wafer/wafer.h>

/*===----------------------------------------------------------------------===
 * Views (view.c)
 *===----------------------------------------------------------------------===*/

/* A view that was checked against its handle: strides always explicit. */
struct wafer__view {
	wafer_tensor t;      /* t.strided == 1, strides filled in */
	size_t element_size;
	uint64_t count;
	/* Dense row-major at offset 0: a kernel can take the handle as is. */
	bool dense;
	/* The handle's size in bytes, when the view was checked. */
	size_t handle_size;
};

/* Checks |tensor| (input |name| of operation |op|): dtype, rank, shape,
 * the handle is live, the view lies inside it. */
wafer_status wafer__view_check(wafer_client *client, const char *op,
			       const char *name, const wafer_tensor *tensor,
			       struct wafer__view *out);

/* Checks that inputs a and b of operation |op| have the same dtype (no
 * operation converts implicitly). */
wafer_status wafer__view_check_same_dtype(const char *op,
					  const struct wafer__view *a,
					  const struct wafer__view *b);

/* Checks |dtype| and |shape| for a new dense tensor (operation |what|):
 * rank <= 8, no size 0, a byte size that fits; returns the byte size. */
wafer_status wafer__view_check_shape(const char *what, wafer_dtype dtype,
				     uint32_t rank, const uint64_t *shape,
				     size_t *out_bytes);

/* Row-major strides of |shape|. */
void wafer__view_dense_strides(uint32_t rank, const uint64_t *shape,
			       uint64_t *strides);

/* The element count of |shape| in |*out_count|; false (and 0) when it
 * does not fit in 64 bits. A 0 dimension makes it 0, however large the
 * others are. */
bool wafer__view_shape_count_fits(uint32_t rank, const uint64_t *shape,
				  uint64_t *out_count);
/* The same, 0 when it does not fit: only where 0 is refused anyway. */
uint64_t wafer__view_shape_count(uint32_t rank, const uint64_t *shape);

/* wafer_tensor_empty whose reservation's outcome is known on return on
 * every channel (wafer__client_empty_now). */
wafer_status wafer__op_tensor_empty_now(wafer_client *client,
					wafer_dtype dtype, uint32_t rank,
					const uint64_t *shape, wafer_tensor *out);

/* Writes "[2, 3, 4]" into |buf|; returns buf. */
const char *wafer__view_shape_string(uint32_t rank, const uint64_t *shape,
				     char *buf, size_t size);
#define WAFER_SHAPE_STRING_MAX 192

/* The broadcast shape of |a| and |b| (numpy's rule), or
 * WAFER_ERROR_INVALID_ARGUMENT naming both shapes. */
wafer_status wafer__view_broadcast_shape(const char *op, uint32_t rank_a,
					 const uint64_t *shape_a,
					 uint32_t rank_b,
					 const uint64_t *shape_b,
					 uint32_t *out_rank,
					 uint64_t *out_shape);

/* The strides that read |view| as a tensor of |rank| dimensions (its
 * broadcast target, rank >= the view's): aligned at the last dimension,
 * 0 where the view has size 1 or no dimension. */
void wafer__view_broadcast_strides(const struct wafer__view *view,
				   uint32_t rank, uint64_t *strides);

/* Merges neighbouring dimensions that every one of |n| stride arrays
 * walks contiguously and drops dimensions of size 1, in place. Leaves at
 * least one dimension. Kernels then loop over fewer, longer rows. */
void wafer__view_coalesce(uint32_t *rank, uint64_t *shape,
			  uint64_t *const *strides, size_t n);

/*===----------------------------------------------------------------------===
 * One operation's inputs and output (call.c)
 *===----------------------------------------------------------------------===*/

#define WAFER_OP_MAX_INPUTS 2

struct wafer__op_input {
	const char *name; /* "x", "a", "b" */
	wafer_copy_semantics semantics;
	struct wafer__view view;
	/* The handle to bind for this input: the view's, or the output's
	 * new handle when the output took this input's buffer over. */
	wafer_handle live;
	/* Donated and not taken over: dropped (ended_by = op) by finish. */
	bool drop;
};

enum wafer__op_reuse {
	WAFER_OP_NEW,     /* a new buffer */
	WAFER_OP_REUSED,  /* an input's handle, retained (REUSE_INPUT) */
	WAFER_OP_DONATED, /* an input's buffer under a new handle */
};

struct wafer__op_call {
	wafer_client *client;
	const char *op; /* the operation's name: "add", "softmax" */
	struct wafer__op_input inputs[WAFER_OP_MAX_INPUTS];
	size_t input_count;
	wafer_tensor out; /* valid after wafer__op_output */
	bool have_out;
	enum wafer__op_reuse reuse;
	int reused_input; /* -1 unless reuse != WAFER_OP_NEW */
	/* |out| is one of the input tensors (op(c, &x, DONATE_INPUT, &x)):
	 * it keeps naming the input until the call succeeds. */
	bool out_is_input;
};

/* Clears *out (if not NULL) for a call that fails, unless |out| is one
 * of |inputs|: the in-place idiom op(c, &x, WAFER_DONATE_INPUT, &x) must
 * leave x naming the handle the caller still owns when the call fails. */
void wafer__op_clear_out(wafer_tensor *out, const wafer_tensor *const *inputs,
			 size_t count);

/* Starts a call: copies and checks each input view (NULL allowed for none:
 * pass count 0), checks the semantics values and the donation rules, and
 * sets *out to a null tensor unless |out| is one of the inputs (then it
 * is left as it is until wafer__op_finish succeeds). |out| NULL is an
 * error. */
wafer_status wafer__op_begin(struct wafer__op_call *call, wafer_client *client,
			     const char *op, const wafer_tensor *const *views,
			     const wafer_copy_semantics *semantics,
			     const char *const *names, size_t count,
			     wafer_tensor *out);

/* wafer__op_begin with one input |x| named |name|, or with two, |a| and
 * |b| named "a" and "b". */
wafer_status wafer__op_begin_one(struct wafer__op_call *call,
				 wafer_client *client, const char *op,
				 const char *name, const wafer_tensor *x,
				 wafer_copy_semantics sx, wafer_tensor *out);
wafer_status wafer__op_begin_two(struct wafer__op_call *call,
				 wafer_client *client, const char *op,
				 const wafer_tensor *a, wafer_copy_semantics sa,
				 const wafer_tensor *b, wafer_copy_semantics sb,
				 wafer_tensor *out);

/* Rejects a call before it begins (an unknown operation, a bad flag):
 * clears *out as wafer__op_clear_out does (not when it is one of the
 * call's |inputs|) and fails with WAFER_ERROR_INVALID_ARGUMENT and the
 * message |format|. */
wafer_status wafer__op_reject(wafer_tensor *out,
			      const wafer_tensor *const *inputs, size_t n_inputs,
			      const char *format, ...)
	__attribute__((format(printf, 4, 5)));

/* WAFER_OK where operation number |op| is below |count|, else rejects
 * the call (wafer__op_reject): "<fn>: unknown operation <op>". */
wafer_status wafer__op_known(wafer_tensor *out,
			     const wafer_tensor *const *inputs, size_t n_inputs,
			     const char *fn, unsigned op, size_t count);

/* Chooses the output: a dense tensor of |dtype| and |shape|. Inputs whose
 * bit is set in |can_alias| may be written over by the kernels the
 * operation launches (the catalogue allows exact aliasing for them); the
 * first one whose semantics, reference count, dtype and layout allow it
 * is reused, else a new buffer is reserved. */
wafer_status wafer__op_output(struct wafer__op_call *call, wafer_dtype dtype,
			      uint32_t rank, const uint64_t *shape,
			      unsigned can_alias);

static inline wafer_handle wafer__op_input_handle(const struct wafer__op_call *c,
						  size_t i)
{
	return c->inputs[i].live;
}

/* Ends a call with |status| (the result of the launches). On success
 * drops the donated inputs that were not reused and stores the output in
 * *out; on failure releases the output. Returns |status|. */
wafer_status wafer__op_finish(struct wafer__op_call *call, wafer_status status,
			      wafer_tensor *out);

/*===----------------------------------------------------------------------===
 * Kernels (launch.c)
 *===----------------------------------------------------------------------===*/

/* wafer__client_kernel with the operation's name in the error. */
const struct wafer_kernel *wafer__op_kernel(wafer_client *client,
					    const char *op, const char *kernel,
					    wafer_dtype dtype);

/* Launches |kernel| on whole handles (offset 0, to the end) with global
 * = {g0, g1, g2} (tuned.c). A kernel that has a tunable — matmul,
 * reduce_sum, reduce_max — goes through autotune: the plugin's variant
 * that is fastest for the shape runs. */
wafer_status wafer__op_launch(wafer_client *client,
			      const struct wafer_kernel *kernel,
			      const wafer_handle *handles, size_t count,
			      const void *params, size_t params_size,
			      uint64_t g0, uint64_t g1, uint64_t g2);

/* The copy_strided kernel when |view| needs a gather, else NULL and OK;
 * WAFER_ERROR_NOT_SUPPORTED where the plugin has none. */
wafer_status wafer__op_gather_kernel(const struct wafer__op_call *call,
				     const struct wafer__view *view,
				     const struct wafer_kernel **out);

/* Runs |kernel| (bindings {out, in}, global {|global|, 1, 1}) on the
 * call's one input into an output of its dtype and shape: straight from
 * the input when |gather| is NULL (the output may then reuse the input),
 * else after gathering the input into the output, in place there. Ends
 * the call (wafer__op_finish) once the output is chosen. */
wafer_status wafer__op_run_in_place(struct wafer__op_call *call,
				    const struct wafer_kernel *kernel,
				    const struct wafer_kernel *gather,
				    const void *params, size_t params_size,
				    uint64_t global, wafer_tensor *out);

/* Runs |kernel| (bindings {out, in}, global {|global|, 1, 1}, through
 * wafer__op_launch) on the call's one input into a new output of
 * |dtype|, |rank|, |shape| that does not alias it. With |gather|
 * (copy_strided) the input is first gathered into a dense temporary,
 * released after. Ends the call (wafer__op_finish) once the output is
 * chosen. */
wafer_status wafer__op_run_gathered(struct wafer__op_call *call,
				    const struct wafer_kernel *kernel,
				    const struct wafer_kernel *gather,
				    wafer_dtype dtype, uint32_t rank,
				    const uint64_t *shape, const void *params,
				    size_t params_size, uint64_t global,
				    wafer_tensor *out);

/* copy_strided: gathers |view| (read through handle |src|, which may be
 * the view's handle or its donated successor) into dense |dst|. */
wafer_status wafer__op_gather(wafer_client *client,
			      const struct wafer_kernel *copy_strided,
			      const struct wafer__view *view, wafer_handle src,
			      wafer_handle dst);

/* The copy_strided params of |view| read as |rank|/|shape| with |strides|
 * (coalesced). */
void wafer__op_strided_copy_params(uint32_t rank, const uint64_t *shape,
				   const uint64_t *strides, uint64_t offset,
				   struct wafer_strided_copy_params *out);

#endif
