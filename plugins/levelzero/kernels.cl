/* wafer — SPDX-License-Identifier: MIT
 *
 * kernels.cl: the Level Zero plugin's kernels, in OpenCL C 2.0. The build
 * compiles this file for spir64 with clang, translates the bitcode to
 * SPIR-V with llvm-spirv, validates it with spirv-val and embeds the
 * module in levelzero.so (plugins/levelzero/local.mk); device_open loads
 * it with zeModuleCreate.
 *
 * NOT YET RUN ON INTEL HARDWARE. The test driver in t/ checks that every
 * launch names a kernel of this module with arguments of the sizes its
 * SPIR-V signature declares and runs a host emulation of the kernel (the
 * same arguments, the same groups); t/levelzero/kernels_cl.c runs this
 * source on an OpenCL device (pocl's CPU device in CI) against
 * references. Neither runs the SPIR-V on a Level Zero device (see
 * plugins/levelzero/README).
 *
 * Conventions, which kernels.c (the host side) follows:
 *  - Kernel names are <operation>_<type>: add_f32, cast_f16_i32. Kernels
 *    that only move bits are named by element width: copy_b32 serves f32
 *    and i32, copy_b16 f16 and bf16.
 *  - Pointer arguments come first (out, then inputs), then the sizes. A
 *    parameter block with arrays (strides, matmul) is passed by value as
 *    a struct laid out exactly as its wafer_*_params twin in plugin.h.
 *  - Every kernel walks its elements with a grid-stride loop, so the host
 *    may launch fewer work-groups than elements (it caps the group count
 *    at the device's maximum).
 *  - No double and no half arithmetic: many Intel GPUs have no fp64, and
 *    half is loaded and stored with vload_half/vstore_half (core OpenCL C,
 *    no cl_khr_fp16). t/levelzero/spirv.sh checks the module declares
 *    neither Float64 nor Float16. */

#define WAFER_MAX_RANK 8

/* Work-group size of the row kernels (reductions, softmax): the host
 * launches them with exactly this many work-items per group. */
#define ROW_GROUP 256

/* Tile edge of matmul: 16 x 16 work-items per group. */
#define TILE 16

/* A grid-stride loop over [0, n) along dimension 0. */
#define FOR_EACH(i, n)                                                         \
	for (ulong i = get_global_id(0); i < (n); i += get_global_size(0))

/*===----------------------------------------------------------------------===
 * noop and fill
 *===----------------------------------------------------------------------===*/

kernel void noop(void)
{
}

kernel void fill_f32(global float *out, ulong count, float value)
{
	FOR_EACH(i, count)
		out[i] = value;
}

kernel void fill_i32(global int *out, ulong count, int value)
{
	FOR_EACH(i, count)
		out[i] = value;
}

/*===----------------------------------------------------------------------===
 * Contiguous moves
 *===----------------------------------------------------------------------===*/

/* out == in (exact aliasing) is allowed: each item reads its element
 * before it writes it. */
kernel void copy_b32(global uint *out, global const uint *in, ulong count)
{
	FOR_EACH(i, count)
		out[i] = in[i];
}

kernel void copy_b16(global ushort *out, global const ushort *in, ulong count)
{
	FOR_EACH(i, count)
		out[i] = in[i];
}

/*===----------------------------------------------------------------------===
 * Elementwise f32: unary and binary
 *===----------------------------------------------------------------------===*/

/* max and min with NaN in, NaN out (fmax/fmin would drop the NaN). */
static inline float max_nan(float a, float b)
{
	return isnan(a) || isnan(b) ? NAN : fmax(a, b);
}

static inline float min_nan(float a, float b)
{
	return isnan(a) || isnan(b) ? NAN : fmin(a, b);
}

/* 1 / (1 + e^-x) without overflow: e^-x is only taken for x >= 0. */
static inline float sigmoid_f(float x)
{
	if (x >= 0.0f)
		return 1.0f / (1.0f + exp(-x));
	float e = exp(x);
	return e / (1.0f + e);
}

/* The tanh form of gelu (plugin.h), 0.5 x (1 + tanh(u)), written as
 * x / (1 + e^(-2u)): the same function, without the cancellation of
 * 1 + tanh(u) near -1 for large negative x (where it would be off by
 * x times an ulp of tanh), and with the right limits when u overflows. */
static inline float gelu_f(float x)
{
	const float k = 0.7978845608028654f; /* sqrt(2 / pi) */
	float u = k * (x + 0.044715f * x * x * x);
	return x / (1.0f + exp(-2.0f * u));
}

#define UNARY_F32(name, expr)                                                  \
	kernel void name##_f32(global float *out, global const float *in,     \
			       ulong count)                                    \
	{                                                                      \
		FOR_EACH(i, count)                                             \
		{                                                              \
			float x = in[i];                                       \
			out[i] = (expr);                                       \
		}                                                              \
	}

UNARY_F32(neg, -x)
UNARY_F32(abs, fabs(x))
UNARY_F32(exp, exp(x))
UNARY_F32(log, log(x))
UNARY_F32(sqrt, sqrt(x))
UNARY_F32(relu, x > 0.0f || isnan(x) ? x : 0.0f)
UNARY_F32(gelu, gelu_f(x))
UNARY_F32(sigmoid, sigmoid_f(x))
UNARY_F32(tanh, tanh(x))

#define BINARY_OPS(X)                                                          \
	X(add, a + b)                                                          \
	X(sub, a - b)                                                          \
	X(mul, a * b)                                                          \
	X(div, a / b)                                                          \
	X(max, max_nan(a, b))                                                  \
	X(min, min_nan(a, b))

#define BINARY_F32(name, expr)                                                 \
	kernel void name##_f32(global float *out, global const float *in_a,   \
			       global const float *in_b, ulong count)          \
	{                                                                      \
		FOR_EACH(i, count)                                             \
		{                                                              \
			float a = in_a[i], b = in_b[i];                        \
			out[i] = (expr);                                       \
		}                                                              \
	}
BINARY_OPS(BINARY_F32)

/* out[i] = op(a[i], s), or op(s, a[i]) when scalar_first. */
#define SCALAR_F32(name, expr)                                                 \
	kernel void name##_scalar_f32(global float *out,                      \
				      global const float *in_a, ulong count,  \
				      float scalar, uint scalar_first)         \
	{                                                                      \
		FOR_EACH(i, count)                                             \
		{                                                              \
			float a = scalar_first ? scalar : in_a[i];             \
			float b = scalar_first ? in_a[i] : scalar;             \
			out[i] = (expr);                                       \
		}                                                              \
	}
BINARY_OPS(SCALAR_F32)

/*===----------------------------------------------------------------------===
 * Strided views: broadcasting binary ops and copy_strided
 *===----------------------------------------------------------------------===*/

/* struct wafer_binary_strided_params, field for field. */
struct binary_strided {
	uint rank;
	uint reserved;
	ulong shape[WAFER_MAX_RANK];
	ulong a_strides[WAFER_MAX_RANK];
	ulong b_strides[WAFER_MAX_RANK];
	ulong a_offset;
	ulong b_offset;
};

/* struct wafer_strided_copy_params, field for field. */
struct strided_copy {
	uint rank;
	uint reserved;
	ulong shape[WAFER_MAX_RANK];
	ulong strides[WAFER_MAX_RANK];
	ulong offset;
};

static inline ulong shape_count(uint rank, private const ulong *shape)
{
	ulong n = 1;
	for (uint d = 0; d < rank; d++)
		n *= shape[d];
	return n;
}

/* Adds to *at_a and *at_b the offsets of flat index |i| of a dense walk
 * over |shape| in two views of it (strides |a_strides| and |b_strides|).
 * A kernel of one view passes its strides twice and ignores *at_b: once
 * inlined, that sum is dead code. The loop divides, then multiplies back
 * for the remainder: with a `%` next to the `/`, LLVM 14's DivRemPairs
 * pass emits a `freeze`, which llvm-spirv 14 cannot translate. */
static inline void strided_offsets(ulong i, uint rank,
				   private const ulong *shape,
				   private const ulong *a_strides,
				   private const ulong *b_strides,
				   private ulong *at_a, private ulong *at_b)
{
	ulong rest = i;

	for (uint d = rank; d-- > 0;) {
		ulong q = rest / shape[d];
		ulong idx = rest - q * shape[d];
		rest = q;
		*at_a += idx * a_strides[d];
		*at_b += idx * b_strides[d];
	}
}

#define BINARY_STRIDED_F32(name, expr)                                         \
	kernel void name##_strided_f32(global float *out,                     \
				       global const float *in_a,               \
				       global const float *in_b,               \
				       struct binary_strided p)                \
	{                                                                      \
		ulong count = shape_count(p.rank, p.shape);                    \
		FOR_EACH(i, count)                                             \
		{                                                              \
			ulong ia = p.a_offset, ib = p.b_offset;                \
			strided_offsets(i, p.rank, p.shape, p.a_strides,       \
					p.b_strides, &ia, &ib);                \
			float a = in_a[ia], b = in_b[ib];                      \
			out[i] = (expr);                                       \
		}                                                              \
	}
BINARY_OPS(BINARY_STRIDED_F32)

#define COPY_STRIDED(bits, type)                                               \
	kernel void copy_strided_b##bits(global type *out,                    \
					 global const type *in,                \
					 struct strided_copy p)                \
	{                                                                      \
		ulong count = shape_count(p.rank, p.shape);                    \
		FOR_EACH(i, count)                                             \
		{                                                              \
			ulong at = p.offset, unused = 0;                       \
			strided_offsets(i, p.rank, p.shape, p.strides,         \
					p.strides, &at, &unused);              \
			out[i] = in[at];                                       \
		}                                                              \
	}
COPY_STRIDED(32, uint)
COPY_STRIDED(16, ushort)

/*===----------------------------------------------------------------------===
 * cast between f32, f16, bf16 and i32
 *===----------------------------------------------------------------------===*/

/* Each type is loaded as f32 (exact for f16 and bf16; i32 rounds to
 * nearest even) and stored from f32 with the rounding plugin.h asks for. */
static inline float load_f32(global const void *p, ulong i)
{
	return ((global const float *)p)[i];
}

static inline float load_f16(global const void *p, ulong i)
{
	return vload_half(i, (global const half *)p);
}

static inline float load_bf16(global const void *p, ulong i)
{
	return as_float((uint)((global const ushort *)p)[i] << 16);
}

static inline float load_i32(global const void *p, ulong i)
{
	return convert_float_rte(((global const int *)p)[i]);
}

/* i32 on its way to f16 or bf16: to f32 rounded to odd (truncated, with
 * the lowest bit set when anything was cut off). Rounding that to nearest
 * even once more gives the correctly rounded result; rounding to nearest
 * twice would not, for integers past 2^24. */
static inline float load_i32_odd(global const void *p, ulong i)
{
	int x = ((global const int *)p)[i];
	float f = convert_float_rtz(x);

	if ((long)f != (long)x)
		f = as_float(as_uint(f) | 1u);
	return f;
}

static inline void store_f32(global void *p, ulong i, float x)
{
	((global float *)p)[i] = x;
}

/* Round to nearest even; overflow becomes inf; NaN stays NaN; subnormal
 * halves are kept (vstore_half_rte is exact IEEE rounding). */
static inline void store_f16(global void *p, ulong i, float x)
{
	vstore_half_rte(x, i, (global half *)p);
}

/* Round to nearest even on the upper 16 bits; a NaN is kept quiet (its
 * payload's low bits may be lost, never its NaN-ness). */
static inline void store_bf16(global void *p, ulong i, float x)
{
	uint bits = as_uint(x);
	ushort b;

	if (isnan(x))
		b = (ushort)((bits >> 16) | 0x0040u);
	else
		b = (ushort)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
	((global ushort *)p)[i] = b;
}

/* Truncate toward zero, saturate, NaN gives 0 (OpenCL's _sat_rtz). */
static inline void store_i32(global void *p, ulong i, float x)
{
	((global int *)p)[i] = convert_int_sat_rtz(x);
}

#define CAST_VIA(from, to, load)                                               \
	kernel void cast_##from##_##to(global void *out,                      \
				       global const void *in, ulong count)     \
	{                                                                      \
		FOR_EACH(i, count)                                             \
			store_##to(out, i, load(in, i));                       \
	}
#define CAST(from, to) CAST_VIA(from, to, load_##from)

/* i32 to i32 never comes here (a copy), and neither does any X to X. */
CAST(f32, f16)
CAST(f32, bf16)
CAST(f32, i32)
CAST(f16, f32)
CAST(f16, bf16)
CAST(f16, i32)
CAST(bf16, f32)
CAST(bf16, f16)
CAST(bf16, i32)
CAST(i32, f32)
CAST_VIA(i32, f16, load_i32_odd)
CAST_VIA(i32, bf16, load_i32_odd)

/*===----------------------------------------------------------------------===
 * Rows: reductions over the last axis and softmax
 *===----------------------------------------------------------------------===*/

/* One work-group of ROW_GROUP items per row (groups stride over rows when
 * there are more rows than groups); each item folds a strided part of the
 * row, then the group folds the partials in local memory. */

/* group_sum, group_max: the group's fold of each item's |x| through
 * |combine|, in a tree over local memory; every item gets the result. */
#define GROUP_FOLD(name, combine)                                              \
	static inline float name(local float *scratch, float x)               \
	{                                                                      \
		uint lid = get_local_id(0);                                    \
                                                                               \
		scratch[lid] = x;                                              \
		barrier(CLK_LOCAL_MEM_FENCE);                                  \
		for (uint s = ROW_GROUP / 2; s > 0; s >>= 1) {                 \
			if (lid < s)                                           \
				scratch[lid] =                                 \
					combine(scratch[lid], scratch[lid + s]); \
			barrier(CLK_LOCAL_MEM_FENCE);                          \
		}                                                              \
		float total = scratch[0];                                      \
		/* scratch is reused by the caller */                          \
		barrier(CLK_LOCAL_MEM_FENCE);                                  \
		return total;                                                  \
	}

static inline float add_f(float a, float b)
{
	return a + b;
}

GROUP_FOLD(group_sum, add_f)
GROUP_FOLD(group_max, max_nan)

#define FOR_EACH_ROW(r, rows)                                                  \
	for (ulong r = get_group_id(0); r < (rows); r += get_num_groups(0))

#define FOR_EACH_COL(c, cols)                                                  \
	for (ulong c = get_local_id(0); c < (cols); c += ROW_GROUP)

/* A row reduction: |acc| starts at |init| in each item, takes each of its
 * elements of the row through |step|, is folded across the group by
 * |group|, and item 0 writes |result|. */
#define ROW_REDUCE(name, init, step, group, result)                           \
	kernel __attribute__((reqd_work_group_size(ROW_GROUP, 1, 1))) void    \
	name(global float *out, global const float *in, ulong rows,           \
	     ulong cols)                                                       \
	{                                                                      \
		local float scratch[ROW_GROUP];                                \
                                                                               \
		FOR_EACH_ROW(r, rows)                                          \
		{                                                              \
			global const float *row = in + r * cols;               \
			float acc = (init);                                    \
			FOR_EACH_COL(c, cols)                                  \
				acc = step;                                    \
			acc = group(scratch, acc);                             \
			if (get_local_id(0) == 0)                              \
				out[r] = (result);                             \
		}                                                              \
	}

ROW_REDUCE(reduce_sum_f32, 0.0f, acc + row[c], group_sum, acc)
ROW_REDUCE(reduce_mean_f32, 0.0f, acc + row[c], group_sum, acc / (float)cols)
ROW_REDUCE(reduce_max_f32, -INFINITY, max_nan(acc, row[c]), group_max, acc)

/* out may alias in exactly: every read of a row's input happens in the
 * first two passes, before the barrier that ends group_sum, and the third
 * pass reads each element only in the item that then writes it. */
kernel __attribute__((reqd_work_group_size(ROW_GROUP, 1, 1))) void
softmax_f32(global float *out, global const float *in, ulong rows,
	    ulong cols)
{
	local float scratch[ROW_GROUP];

	FOR_EACH_ROW(r, rows)
	{
		global const float *row = in + r * cols;
		global float *dst = out + r * cols;
		float m = -INFINITY, sum = 0.0f;

		FOR_EACH_COL(c, cols)
			m = max_nan(m, row[c]);
		m = group_max(scratch, m);
		FOR_EACH_COL(c, cols)
			sum += exp(row[c] - m);
		sum = group_sum(scratch, sum);
		FOR_EACH_COL(c, cols)
			dst[c] = exp(row[c] - m) / sum;
	}
}

/*===----------------------------------------------------------------------===
 * matmul
 *===----------------------------------------------------------------------===*/

/* struct wafer_matmul_params, field for field. */
struct matmul {
	ulong batch, m, n, k;
	uint transpose_a, transpose_b;
	ulong batch_stride_a, batch_stride_b, batch_stride_c;
};

/* Tiled: each 16 x 16 group computes 16 x 16 tiles of C_t, staging 16 x
 * 16 tiles of op(A_t) and op(B_t) through local memory. Dimension 0 runs
 * over tile columns (n), 1 over tile rows (m), 2 over the batch; groups
 * stride over tiles and matrices when the host capped the group counts at
 * the device's maximum. The loop bounds are the same for every item of a
 * group, so every item reaches every barrier. */
kernel __attribute__((reqd_work_group_size(TILE, TILE, 1))) void
matmul_f32(global float *out, global const float *a, global const float *b,
	   struct matmul p)
{
	local float ta[TILE][TILE];
	local float tb[TILE][TILE];
	const uint lx = get_local_id(0), ly = get_local_id(1);
	const ulong tiles_n = (p.n + TILE - 1) / TILE;
	const ulong tiles_m = (p.m + TILE - 1) / TILE;

	for (ulong t = get_group_id(2); t < p.batch; t += get_num_groups(2))
	for (ulong tm = get_group_id(1); tm < tiles_m; tm += get_num_groups(1))
	for (ulong tn = get_group_id(0); tn < tiles_n; tn += get_num_groups(0)) {
		global const float *at = a + t * p.batch_stride_a;
		global const float *bt = b + t * p.batch_stride_b;
		const ulong row = tm * TILE + ly, col = tn * TILE + lx;
		float acc = 0.0f;

		for (ulong k0 = 0; k0 < p.k; k0 += TILE) {
			/* op(A)[row, k0 + lx] and op(B)[k0 + ly, col] */
			ulong ka = k0 + lx, kb = k0 + ly;
			float va = 0.0f, vb = 0.0f;

			if (row < p.m && ka < p.k)
				va = p.transpose_a ? at[ka * p.m + row]
						   : at[row * p.k + ka];
			if (col < p.n && kb < p.k)
				vb = p.transpose_b ? bt[col * p.k + kb]
						   : bt[kb * p.n + col];
			ta[ly][lx] = va;
			tb[ly][lx] = vb;
			barrier(CLK_LOCAL_MEM_FENCE);
			for (uint j = 0; j < TILE; j++)
				acc += ta[ly][j] * tb[j][lx];
			barrier(CLK_LOCAL_MEM_FENCE);
		}
		if (row < p.m && col < p.n)
			out[t * p.batch_stride_c + row * p.n + col] = acc;
	}
}
