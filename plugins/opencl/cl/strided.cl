/* wafer — SPDX-License-Identifier: MIT
 *
 * strided.cl: kernels that read strided views — the binary operations
 * with broadcasting (<op>_strided_<dtype>), copy_strided (by element
 * size: b32 for f32 and i32, b16 for f16 and bf16) — and cast between
 * f32, f16, bf16 and i32 (cast_<in>_<out>; a cast to the same type is a
 * buffer copy on the host side).
 *
 * Shapes and strides arrive as ulong8 (rank <= 8, unused entries 0), in
 * elements. Output element i is the row-major index of out; its position
 * in an input is offset + sum_d i_d * stride_d. */

/* Positions of output element |i| in two strided views. */
void strided_pos2(ulong i, uint rank, ulong8 shape, ulong8 sa, ulong8 sb,
		  ulong *pa, ulong *pb)
{
	ulong sh[8], a[8], b[8], oa = 0, ob = 0;

	vstore8(shape, 0, sh);
	vstore8(sa, 0, a);
	vstore8(sb, 0, b);
	for (int d = (int)rank - 1; d >= 0; d--) {
		ulong k = i % sh[d];
		i /= sh[d];
		oa += k * a[d];
		ob += k * b[d];
	}
	*pa = oa;
	*pb = ob;
}

ulong strided_pos(ulong i, uint rank, ulong8 shape, ulong8 strides)
{
	ulong sh[8], s[8], o = 0;

	vstore8(shape, 0, sh);
	vstore8(strides, 0, s);
	for (int d = (int)rank - 1; d >= 0; d--) {
		o += (i % sh[d]) * s[d];
		i /= sh[d];
	}
	return o;
}

/* Binary kernels of element type DT computing in CT (see elementwise.cl). */
#define STRIDED(NAME, DT, CT, EXPR)                                            \
	__kernel void NAME##_strided_##DT(                                     \
		__global ST_##DT *out, ulong out_off,                          \
		__global const ST_##DT *a, ulong a_off,                        \
		__global const ST_##DT *b, ulong b_off, uint rank,             \
		ulong8 shape, ulong8 a_strides, ulong8 b_strides,              \
		ulong a_offset, ulong b_offset, ulong n)                       \
	{                                                                      \
		size_t i = get_global_id(0);                                   \
		ulong pa, pb;                                                  \
		if (i >= n)                                                    \
			return;                                                \
		strided_pos2(i, rank, shape, a_strides, b_strides, &pa, &pb);  \
		CT x = LOAD_##DT(a + a_off, a_offset + pa);                    \
		CT y = LOAD_##DT(b + b_off, b_offset + pb);                    \
		STORE_##DT(out + out_off, i, (EXPR));                          \
	}

FLOAT_BINARY_OPS(STRIDED, f32)
FLOAT_BINARY_OPS(STRIDED, f16)

/* copy_strided moves bits: the element size is all that matters. */
#define COPY_STRIDED(BITS, T)                                                  \
	__kernel void copy_strided_##BITS(                                     \
		__global T *out, ulong out_off, __global const T *in,          \
		ulong in_off, uint rank, ulong8 shape, ulong8 strides,         \
		ulong offset, ulong n)                                         \
	{                                                                      \
		size_t i = get_global_id(0);                                   \
		if (i >= n)                                                    \
			return;                                                \
		out[out_off + i] =                                             \
			in[in_off + offset +                                   \
			   strided_pos(i, rank, shape, strides)];              \
	}

COPY_STRIDED(b32, uint)
COPY_STRIDED(b16, ushort)

/* Casts. Between the float types: through f32, which holds f16 and bf16
 * exactly, then one rounding. To i32: truncate, saturate, NaN gives 0
 * (convert_int_sat_rtz does all three). From i32: to f32 and f16 round
 * once (an i32 too large for f32's 24 bits is far past f16's range); to
 * bf16 a direct rounding would round twice, so the f32 value is truncated
 * and marked inexact in its last bit ("round to odd"), which makes the
 * second rounding exact. */
#define CAST(IN, OUT, EXPR)                                                    \
	__kernel void cast_##IN##_##OUT(__global ST_##OUT *out, ulong out_off, \
					__global const ST_##IN *in,            \
					ulong in_off, ulong n)                 \
	{                                                                      \
		size_t i = get_global_id(0);                                   \
		if (i >= n)                                                    \
			return;                                                \
		EXPR;                                                          \
	}

#define CAST_FLOAT(IN, OUT)                                                    \
	CAST(IN, OUT,                                                          \
	     STORE_##OUT(out + out_off, i, LOAD_##IN(in + in_off, i)))
#define CAST_TO_INT(IN)                                                        \
	CAST(IN, i32,                                                          \
	     out[out_off + i] = convert_int_sat_rtz(LOAD_##IN(in + in_off, i)))

/* bf16_from_int and bf16_from_long: the integer truncated to f32 and
 * marked inexact in its last bit, then rounded once to bf16. */
#define BF16_FROM_INTEGER(T)                                                   \
	ushort bf16_from_##T(T x)                                              \
	{                                                                      \
		float f = convert_float_rtz(x);                                \
		uint u = as_uint(f);                                           \
		if (convert_##T##_rtz(f) != x)                                 \
			u |= 1u;                                               \
		return bf16_from_float(as_float(u));                           \
	}
BF16_FROM_INTEGER(int)
BF16_FROM_INTEGER(long)

CAST_FLOAT(f32, f16)
CAST_FLOAT(f32, bf16)
CAST_FLOAT(f16, f32)
CAST_FLOAT(f16, bf16)
CAST_FLOAT(bf16, f32)
CAST_FLOAT(bf16, f16)
CAST_TO_INT(f32)
CAST_TO_INT(f16)
CAST_TO_INT(bf16)
CAST(i32, f32, out[out_off + i] = convert_float_rte(in[in_off + i]))
CAST(i32, f16, vstore_half_rte(convert_float_rte(in[in_off + i]), i,
			       out + out_off))
CAST(i32, bf16, out[out_off + i] = bf16_from_int(in[in_off + i]))

/* Strided binary kernels of the integer types. */
INT_BINARY_OPS(STRIDED, i32)
INT_BINARY_OPS(STRIDED, i64)
COPY_STRIDED(b64, ulong)

/* Casts from and into int64: integers saturate (convert_*_sat: NaN gives
 * 0), floats round once to nearest even (an int64 is exact in f32 below
 * 2^24 and beyond f16's range above it; bf16 keeps a sticky bit). */
#define CAST_TO_I64(IN)                                                        \
	CAST(IN, i64,                                                          \
	     out[out_off + i] = convert_long_sat_rtz(LOAD_##IN(in + in_off, i)))
CAST_TO_I64(f32)
CAST_TO_I64(f16)
CAST_TO_I64(bf16)
CAST(i32, i64, out[out_off + i] = (long)in[in_off + i])
CAST(i64, i32, out[out_off + i] = convert_int_sat(in[in_off + i]))
CAST(i64, f32, out[out_off + i] = convert_float_rte(in[in_off + i]))
CAST(i64, f16, vstore_half_rte(convert_float_rte(in[in_off + i]), i,
			       out + out_off))
CAST(i64, bf16, out[out_off + i] = bf16_from_long(in[in_off + i]))

#ifdef cl_khr_fp64
F64_BINARY_OPS(STRIDED)

/* f64 to f32 rounded to odd: a further rounding to bf16 then rounds as if
 * from the f64 (f16 has its own double store). */
float f32_odd_from_f64(double x)
{
	float f = convert_float_rtz(x);

	if (!isnan(x) && (double)f != x)
		f = as_float(as_uint(f) | 1u);
	return f;
}

#define CAST_TO_F64(IN)                                                        \
	CAST(IN, f64, out[out_off + i] = (double)LOAD_##IN(in + in_off, i))
CAST_TO_F64(f32)
CAST_TO_F64(f16)
CAST_TO_F64(bf16)
CAST(i32, f64, out[out_off + i] = convert_double(in[in_off + i]))
CAST(i64, f64, out[out_off + i] = convert_double_rte(in[in_off + i]))
CAST(f64, f32, out[out_off + i] = convert_float_rte(in[in_off + i]))
CAST(f64, f16, vstore_half_rte(in[in_off + i], i, out + out_off))
CAST(f64, bf16,
     out[out_off + i] = bf16_from_float(f32_odd_from_f64(in[in_off + i])))
CAST(f64, i32, out[out_off + i] = convert_int_sat_rtz(in[in_off + i]))
CAST(f64, i64, out[out_off + i] = convert_long_sat_rtz(in[in_off + i]))
#endif
