/* wafer — vendor-neutral compute runtime.
 * SPDX-License-Identifier: MIT
 *
 * ops.h: standard operations on tensors, on any backend. A tensor is a view
 * of a handle (wafer.h): element type, shape, strides and offset. Each
 * operation checks its inputs, picks the standard kernels it needs from the
 * plugin's catalogue (plugin.h) and returns its result as a new dense
 * tensor the caller owns.
 *
 *   uint64_t shape[2] = {64, 128};
 *   wafer_tensor x, h, y;
 *   wafer_tensor_create(c, WAFER_DTYPE_F32, 2, shape, data, &x);
 *   wafer_op_matmul(c, &x, WAFER_ALWAYS_COPY, &w, WAFER_ALWAYS_COPY, 0, &h);
 *   wafer_op_add(c, &h, WAFER_DONATE_INPUT, &bias, WAFER_ALWAYS_COPY, &h);
 *   wafer_op_tanh(c, &h, WAFER_DONATE_INPUT, &y);   // h is gone, y owns it
 *   wafer_tensor_read(c, &y, out, sizeof out);
 *
 * Ownership. Every input takes a copy semantics (wafer_copy_semantics
 * below): keep the input (the default), let the operation overwrite it
 * when nobody else can see it, or give it up. Giving inputs up is how a
 * chain of operations runs in the memory of one tensor. See
 * wafer-donation(7) for the rules and wafer_ops(3) for every operation.
 *
 * Errors. Operations return a wafer_status, with the detail (operation,
 * handle, shapes) in wafer_last_error(), and set *out to a null tensor.
 * A failure found before anything was queued — a bad view, mismatched
 * shapes, a kernel the plugin lacks (WAFER_ERROR_NOT_SUPPORTED "kernel
 * 'gelu' (f32) is not supported by <plugin>"), no memory for the output —
 * leaves every input as it was, donated ones included. Should a launch
 * itself be refused after that (it is checked beforehand, so this means
 * a device or plugin failure), a donated input whose buffer the output
 * had already taken over is gone with the output. Errors of the kernels
 * while running surface at the next wafer_sync or read, as for
 * wafer_execute.
 *
 * Threading: as wafer.h. Operations one thread issues run in order. */
#ifndef WAFER_OPS_H
#define WAFER_OPS_H

#include <stddef.h>
#include <stdint.h>

#include <wafer/types.h>
#include <wafer/wafer.h>

#ifdef __cplusplus
extern "C" {
#endif

/*===----------------------------------------------------------------------===
 * Tensor views
 *===----------------------------------------------------------------------===*/

/* The largest rank of a tensor (the catalogue's WAFER_KERNEL_MAX_RANK). */
#define WAFER_MAX_RANK 8

/* A view of a handle's bytes as a tensor. A plain value: copy it freely;
 * it holds no reference of its own (its handle does, once, however many
 * views name it).
 *
 * Element (i_0, ..., i_{rank-1}) lies at element index
 *     offset + sum_d i_d * strides[d]
 * of the handle when |strided| is 1. When |strided| is 0 the strides are
 * ignored and the view is dense row-major (the last index moves fastest),
 * starting at |offset|. Counts, strides and offsets are in elements of
 * |dtype|, never bytes. A stride of 0 repeats an element (a broadcast
 * view); strides are never negative.
 *
 * rank 0 is a scalar (one element); every shape[d] of a view is at least
 * 1 (wafer has no empty tensors); entries at and past rank are ignored.
 * The whole view must lie inside the handle: operations check it. */
typedef struct wafer_tensor {
	wafer_handle handle;
	wafer_dtype dtype;
	uint32_t rank;
	uint64_t shape[WAFER_MAX_RANK];
	uint64_t strides[WAFER_MAX_RANK];
	uint64_t offset;
	uint32_t strided;
	uint32_t reserved; /* 0 */
} wafer_tensor;

/* Bytes per element of |dtype|; 0 for WAFER_DTYPE_NONE and unknown
 * values. */
WAFER_API size_t wafer_dtype_size(wafer_dtype dtype);

/* Elements in the view: the product of its shape (1 for rank 0). */
WAFER_API uint64_t wafer_tensor_count(const wafer_tensor *tensor);

/* A dense row-major view of a whole handle. |shape| may be NULL when rank
 * is 0. Checks nothing: operations check views when they use them. */
WAFER_API wafer_tensor wafer_tensor_view(wafer_handle handle, wafer_dtype dtype,
					 uint32_t rank, const uint64_t *shape);

/* Reserves a dense tensor of |shape| (contents undefined) / reserves and
 * uploads |data|, count * wafer_dtype_size(dtype) bytes in row-major
 * order. The tensor's handle holds one reference: release it with
 * wafer_tensor_release. */
WAFER_API wafer_status wafer_tensor_empty(wafer_client *client,
					  wafer_dtype dtype, uint32_t rank,
					  const uint64_t *shape,
					  wafer_tensor *out);
WAFER_API wafer_status wafer_tensor_create(wafer_client *client,
					   wafer_dtype dtype, uint32_t rank,
					   const uint64_t *shape,
					   const void *data, wafer_tensor *out);

/* Downloads the view's elements into |dst| in dense row-major order,
 * waiting for the work issued before. |size| must be exactly count *
 * element size. A dense view is one read; any other view is gathered into
 * a temporary on the device first (copy_strided), which costs one
 * temporary of the dense size. */
WAFER_API wafer_status wafer_tensor_read(wafer_client *client,
					 const wafer_tensor *tensor, void *dst,
					 size_t size);

/* wafer_release(client, tensor->handle). */
WAFER_API wafer_status wafer_tensor_release(wafer_client *client,
					    const wafer_tensor *tensor);

/* View arithmetic: pure functions of the view, no device work, no new
 * reference (the result names the same handle). Each fails with
 * WAFER_ERROR_INVALID_ARGUMENT on dimensions or sizes out of range and
 * leaves *out untouched then. */

/* Swaps dimensions |dim0| and |dim1| (a strided view). */
WAFER_API wafer_status wafer_tensor_transpose(const wafer_tensor *tensor,
					      uint32_t dim0, uint32_t dim1,
					      wafer_tensor *out);
/* The same elements in a new shape of equal count. The view must be
 * dense (copy it first otherwise: wafer_op_copy). */
WAFER_API wafer_status wafer_tensor_reshape(const wafer_tensor *tensor,
					    uint32_t rank,
					    const uint64_t *shape,
					    wafer_tensor *out);
/* Elements [start, start + length) along |dim| (a strided view). */
WAFER_API wafer_status wafer_tensor_slice(const wafer_tensor *tensor,
					  uint32_t dim, uint64_t start,
					  uint64_t length, wafer_tensor *out);

/*===----------------------------------------------------------------------===
 * Ownership: copy semantics per input
 *===----------------------------------------------------------------------===*/

/* What an operation may do with an input's buffer.
 *
 * WAFER_ALWAYS_COPY — the default. The input is read and left as it was;
 *   the output is a new buffer.
 *
 * WAFER_REUSE_INPUT — the operation writes its output over the input when
 *   the caller holds the only reference to the input's handle, the input
 *   is a dense view of its whole handle with the output's dtype and shape
 *   (the output's buffer is then exactly the input's), and the
 *   operation's kernel allows it (elementwise operations and softmax do;
 *   cast, reductions and matmul do not). The output is then the input's
 *   own handle with one more reference, so the caller still releases both
 *   as usual: a chain `y = op(x, REUSE); release(x); x = y` runs in one
 *   buffer. Otherwise it copies, as WAFER_ALWAYS_COPY would. The caller
 *   must not take a new reference to the handle on another thread during
 *   the call.
 *
 * WAFER_DONATE_INPUT — the caller gives its reference to the input up,
 *   whatever happens. When the caller held the only reference and the
 *   buffer fits as above, the output takes the buffer over: same memory,
 *   a new handle. When it does not fit or is shared, the operation still
 *   succeeds with a new output buffer, drops the caller's reference after
 *   the work reading the input is queued, and logs why at debug level
 *   (WAFER_LOG=debug). Either way the caller's reference is gone. When it
 *   was the only one, any later use of the old handle fails with
 *   WAFER_ERROR_DONATED naming the operation. When others hold references
 *   too, the handle stays valid for them (a handle is a value: wafer
 *   cannot tell the caller's copy from theirs), so the caller must simply
 *   not use it again.
 *
 * Errors, never crashes: donating one handle twice in a call, or donating
 * a handle that the same call also reads through a non-donated input, is
 * WAFER_ERROR_INVALID_ARGUMENT; using a donated handle is
 * WAFER_ERROR_DONATED. Binary operations and matmul decide per operand;
 * a binary operation writes over a (first) or b, whichever fits.
 *
 * Donation and concurrency: a donation takes effect only if, at one
 * atomic step, the caller's reference is the only one. A wafer_retain of
 * the same handle on another thread either comes first (the donation then
 * copies) or fails with WAFER_ERROR_DONATED; it never shares the new
 * output. */
typedef enum wafer_copy_semantics {
	WAFER_ALWAYS_COPY = 0,
	WAFER_REUSE_INPUT = 1,
	WAFER_DONATE_INPUT = 2,
} wafer_copy_semantics;

/* The number of references |handle| holds now. A snapshot for tests and
 * diagnostics: other threads may change it at once. */
WAFER_API wafer_status wafer_handle_references(wafer_client *client,
					       wafer_handle handle,
					       uint32_t *out_count);

/*===----------------------------------------------------------------------===
 * Operations
 *===----------------------------------------------------------------------===*/

/* Every operation below:
 *  - takes its inputs as views (any strides, offsets, broadcasts) with a
 *    copy semantics each, and writes a new dense row-major tensor to
 *    *out, holding one reference the caller releases. |out| may point at
 *    one of the inputs (the view is read before *out is written).
 *  - computes in the inputs' dtype; inputs of one operation share it.
 *    The cpu plugin offers f32 for everything and f32/f16/bf16/i32 for
 *    copy and cast; another dtype is WAFER_ERROR_NOT_SUPPORTED from the
 *    kernel lookup, naming the plugin.
 *  - names the catalogue kernels (plugin.h) it launches in its comment.
 *    Views a kernel cannot take directly (strided, offset, broadcast) are
 *    gathered first with copy_strided: into the output where the
 *    operation can then run in place, else into a temporary released
 *    right after (at the cost of one dense copy of that input). */

/* A dense tensor of |shape| with every element |value| (converted to
 * |dtype|). Kernel: fill. */
WAFER_API wafer_status wafer_op_fill(wafer_client *client, wafer_dtype dtype,
				     uint32_t rank, const uint64_t *shape,
				     double value, wafer_tensor *out);

/* A dense copy of any view: materialises transposes, slices and
 * broadcasts. Kernels: copy for a dense view at offset 0, else
 * copy_strided. With REUSE_INPUT or DONATE_INPUT on a view that fits
 * (see above) no kernel runs at all: the output is the input's buffer. */
WAFER_API wafer_status wafer_op_copy(wafer_client *client,
				     const wafer_tensor *x,
				     wafer_copy_semantics sx, wafer_tensor *out);

/* Converts to |dtype|, any element type the backend keeps (one it has a
 * copy kernel for; WAFER_ERROR_NOT_SUPPORTED otherwise). Rules in plugin.h
 * under cast: floating types round once to nearest even, integers
 * truncate and saturate. Kernel: cast
 * (the entry of x's dtype), after copy_strided for a view that is not
 * dense at offset 0. Casting to the same dtype is wafer_op_copy. The
 * output never reuses the input's buffer unless the dtype is unchanged. */
WAFER_API wafer_status wafer_op_cast(wafer_client *client,
				     const wafer_tensor *x,
				     wafer_copy_semantics sx, wafer_dtype dtype,
				     wafer_tensor *out);

/* Unary elementwise operations; the output has x's shape. Kernel: the
 * one named like the operation (plugin.h lists the exact formulas; gelu
 * is the tanh form), after copy_strided into the output for a view that
 * is not dense at offset 0. */
typedef enum wafer_unary_op {
	WAFER_UNARY_NEG = 0,
	WAFER_UNARY_ABS = 1,
	WAFER_UNARY_EXP = 2,
	WAFER_UNARY_LOG = 3,
	WAFER_UNARY_SQRT = 4,
	WAFER_UNARY_RELU = 5,
	WAFER_UNARY_GELU = 6,
	WAFER_UNARY_SIGMOID = 7,
	WAFER_UNARY_TANH = 8,
} wafer_unary_op;

WAFER_API wafer_status wafer_op_unary(wafer_client *client, wafer_unary_op op,
				      const wafer_tensor *x,
				      wafer_copy_semantics sx,
				      wafer_tensor *out);

/* Binary elementwise operations with broadcasting. Shapes are aligned at
 * their last dimension; each pair of sizes must be equal or one of them
 * 1, and the output takes the larger (numpy's rule): [64, 1] with [8]
 * gives [64, 8]; a rank-0 operand combines with anything. Kernels: the
 * plain one (add, ...) when both inputs are dense at offset 0 with the
 * output's shape, else the _strided one (add_strided, ...), which takes
 * the views and broadcasts as they are, with no copy. The output can
 * reuse a's buffer, else b's, when that operand has the output's shape. */
typedef enum wafer_binary_op {
	WAFER_BINARY_ADD = 0,
	WAFER_BINARY_SUB = 1,
	WAFER_BINARY_MUL = 2,
	WAFER_BINARY_DIV = 3,
	WAFER_BINARY_MAX = 4,
	WAFER_BINARY_MIN = 5,
} wafer_binary_op;

WAFER_API wafer_status wafer_op_binary(wafer_client *client,
				       wafer_binary_op op,
				       const wafer_tensor *a,
				       wafer_copy_semantics sa,
				       const wafer_tensor *b,
				       wafer_copy_semantics sb,
				       wafer_tensor *out);

/* A binary operation with a scalar operand: out = op(a, scalar), or
 * op(scalar, a) when |scalar_first| is 1 (scalar - a, scalar / a). No
 * handle for the scalar: it travels in the parameter block. Kernel: the
 * _scalar one (mul_scalar, ...), after copy_strided into the output for a
 * view that is not dense at offset 0. */
WAFER_API wafer_status wafer_op_binary_scalar(wafer_client *client,
					      wafer_binary_op op,
					      const wafer_tensor *a,
					      wafer_copy_semantics sa,
					      double scalar,
					      uint32_t scalar_first,
					      wafer_tensor *out);

/* Reductions over the last dimension. The output keeps the dimension with
 * size 1 ([r, c] gives [r, 1]), so it broadcasts back against the input
 * (x - max) without a reshape; reshape it to drop the 1. x needs rank >= 1.
 * Kernels: reduce_sum, reduce_max, reduce_mean, after copy_strided into a
 * temporary for a view that is not dense at offset 0. The output is
 * smaller than x and never reuses its buffer: a donated x is released
 * once the reduction is queued. */
/* wafer_reduce_op (SUM, MAX, MEAN) is in wafer/types.h: collectives
 * share it. */
WAFER_API wafer_status wafer_op_reduce(wafer_client *client,
				       wafer_reduce_op op,
				       const wafer_tensor *x,
				       wafer_copy_semantics sx,
				       wafer_tensor *out);

/* Softmax over the last dimension (rank >= 1), stable for any finite
 * input. The output has x's shape and may reuse its buffer. Kernel:
 * softmax, after copy_strided into the output for a view that is not
 * dense at offset 0. */
WAFER_API wafer_status wafer_op_softmax(wafer_client *client,
					const wafer_tensor *x,
					wafer_copy_semantics sx,
					wafer_tensor *out);

/* wafer_op_matmul flags. */
#define WAFER_MATMUL_TRANSPOSE_A (1u << 0)
#define WAFER_MATMUL_TRANSPOSE_B (1u << 1)

/* Batched matrix product, out = op(a) x op(b), where op transposes the
 * last two dimensions of an operand whose flag is set. a is [..., m, k]
 * ([..., k, m] with WAFER_MATMUL_TRANSPOSE_A), b is [..., k, n] ([..., n,
 * k] with WAFER_MATMUL_TRANSPOSE_B); both need rank >= 2. The leading
 * (batch) dimensions broadcast as for binary operations, and out is
 * [batch..., m, n]. Kernel: matmul. Each operand goes to the kernel as it
 * is when its matrices are row-major or column-major (a transposed view
 * costs nothing: it flips the flag) at offset 0 and its batch dimensions
 * reduce to one batch stride (0 when broadcast); otherwise it is gathered
 * into a dense temporary with copy_strided first. The output never reuses
 * an input's buffer; donated inputs are released once the product is
 * queued. */
WAFER_API wafer_status wafer_op_matmul(wafer_client *client,
				       const wafer_tensor *a,
				       wafer_copy_semantics sa,
				       const wafer_tensor *b,
				       wafer_copy_semantics sb, uint32_t flags,
				       wafer_tensor *out);

/*===----------------------------------------------------------------------===
 * One name per operation
 *===----------------------------------------------------------------------===*/

/* The same operations under their own names: wafer_op_exp(c, &x, s, &y)
 * is wafer_op_unary(c, WAFER_UNARY_EXP, &x, s, &y). */

#define WAFER_OPS_UNARY_(name, op)                                             \
	static inline wafer_status wafer_op_##name(                            \
		wafer_client *client, const wafer_tensor *x,                   \
		wafer_copy_semantics sx, wafer_tensor *out)                    \
	{                                                                      \
		return wafer_op_unary(client, op, x, sx, out);                 \
	}
WAFER_OPS_UNARY_(neg, WAFER_UNARY_NEG)
WAFER_OPS_UNARY_(abs, WAFER_UNARY_ABS)
WAFER_OPS_UNARY_(exp, WAFER_UNARY_EXP)
WAFER_OPS_UNARY_(log, WAFER_UNARY_LOG)
WAFER_OPS_UNARY_(sqrt, WAFER_UNARY_SQRT)
WAFER_OPS_UNARY_(relu, WAFER_UNARY_RELU)
WAFER_OPS_UNARY_(gelu, WAFER_UNARY_GELU)
WAFER_OPS_UNARY_(sigmoid, WAFER_UNARY_SIGMOID)
WAFER_OPS_UNARY_(tanh, WAFER_UNARY_TANH)
#undef WAFER_OPS_UNARY_

#define WAFER_OPS_BINARY_(name, op)                                            \
	static inline wafer_status wafer_op_##name(                            \
		wafer_client *client, const wafer_tensor *a,                   \
		wafer_copy_semantics sa, const wafer_tensor *b,                \
		wafer_copy_semantics sb, wafer_tensor *out)                    \
	{                                                                      \
		return wafer_op_binary(client, op, a, sa, b, sb, out);         \
	}                                                                      \
	static inline wafer_status wafer_op_##name##_scalar(                   \
		wafer_client *client, const wafer_tensor *a,                   \
		wafer_copy_semantics sa, double scalar, wafer_tensor *out)     \
	{                                                                      \
		return wafer_op_binary_scalar(client, op, a, sa, scalar, 0,    \
					      out);                            \
	}
WAFER_OPS_BINARY_(add, WAFER_BINARY_ADD)
WAFER_OPS_BINARY_(sub, WAFER_BINARY_SUB)
WAFER_OPS_BINARY_(mul, WAFER_BINARY_MUL)
WAFER_OPS_BINARY_(div, WAFER_BINARY_DIV)
WAFER_OPS_BINARY_(max, WAFER_BINARY_MAX)
WAFER_OPS_BINARY_(min, WAFER_BINARY_MIN)
#undef WAFER_OPS_BINARY_

/* scalar - a and scalar / a. */
static inline wafer_status wafer_op_scalar_sub(wafer_client *client,
					       double scalar,
					       const wafer_tensor *a,
					       wafer_copy_semantics sa,
					       wafer_tensor *out)
{
	return wafer_op_binary_scalar(client, WAFER_BINARY_SUB, a, sa, scalar,
				      1, out);
}

static inline wafer_status wafer_op_scalar_div(wafer_client *client,
					       double scalar,
					       const wafer_tensor *a,
					       wafer_copy_semantics sa,
					       wafer_tensor *out)
{
	return wafer_op_binary_scalar(client, WAFER_BINARY_DIV, a, sa, scalar,
				      1, out);
}

#define WAFER_OPS_REDUCE_(name, op)                                            \
	static inline wafer_status wafer_op_##name(                            \
		wafer_client *client, const wafer_tensor *x,                   \
		wafer_copy_semantics sx, wafer_tensor *out)                    \
	{                                                                      \
		return wafer_op_reduce(client, op, x, sx, out);                \
	}
WAFER_OPS_REDUCE_(reduce_sum, WAFER_REDUCE_SUM)
WAFER_OPS_REDUCE_(reduce_max, WAFER_REDUCE_MAX)
WAFER_OPS_REDUCE_(reduce_mean, WAFER_REDUCE_MEAN)
#undef WAFER_OPS_REDUCE_

#ifdef __cplusplus
}
#endif

#endif /* WAFER_OPS_H */
