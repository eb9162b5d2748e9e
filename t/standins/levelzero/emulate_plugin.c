/* wafer — SPDX-License-Identifier: MIT
 *
 * emulate_plugin.c: the kernels of plugins/levelzero/kernels.cl, emulated
 * on host memory for the test driver (see emulate.h). Each function reads
 * the arguments in the order and at the sizes the OpenCL C signature
 * declares, and walks the work-items of the launched groups as the kernel
 * does: the grid-stride loops over get_global_id(0), the row kernels one
 * group per row with ROW_GROUP items folding in a tree, matmul in 16 x 16
 * tiles. The arithmetic is the kernels' own, in C float (the device's
 * last-ulp results of exp, log, tanh may differ; the tests that check
 * values allow for that, as they do on any device). */
#include "build-config.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "t/standins/levelzero/emulate.h"

#define WAFER_MAX_RANK 8
#define ROW_GROUP 256
#define TILE 16

/*===----------------------------------------------------------------------===
 * Arguments and memory
 *===----------------------------------------------------------------------===*/

int emulate_value(struct emulate_launch *l, uint32_t a, void *out,
		  size_t size)
{
	if (a >= l->arg_count || l->args[a].size != size || l->args[a].ptr) {
		emulate_fault(l, "argument %u is not a %zu-byte value", a, size);
		return 0;
	}
	memcpy(out, l->args[a].bytes, size);
	return 1;
}

unsigned char *emulate_at(struct emulate_launch *l, uint32_t a, uint64_t i,
			  size_t size)
{
	const struct emulate_arg *g = &l->args[a];

	if (l->faulted)
		return NULL;
	if (a >= l->arg_count || !g->ptr) {
		emulate_fault(l, "argument %u is not a global pointer", a);
		return NULL;
	}
	if (i >= g->reach / size) {
		emulate_fault(l,
			      "argument %u: element %llu (%zu bytes each) is "
			      "past the %zu bytes the device reaches from %p",
			      a, (unsigned long long)i, size, g->reach,
			      (void *)g->ptr);
		return NULL;
	}
	return g->ptr + i * size;
}

/* arg_<name>(l, a): by-value argument |a| of |type|, 0 after a fault. */
#define ARG(name, type)                                                        \
	static type arg_##name(struct emulate_launch *l, uint32_t a)          \
	{                                                                      \
		type v = 0;                                                    \
		emulate_value(l, a, &v, sizeof v);                             \
		return v;                                                      \
	}
ARG(u64, uint64_t)
ARG(u32, uint32_t)
ARG(f32, float)

/* ld_<name>(l, a, i), st_<name>(l, a, i, v): element |i| of |type|
 * through pointer argument |a|; after a fault a load gives 0 and a store
 * does nothing. */
#define LOAD_STORE(name, type)                                                 \
	static type ld_##name(struct emulate_launch *l, uint32_t a,           \
			      uint64_t i)                                      \
	{                                                                      \
		const unsigned char *p = emulate_at(l, a, i, sizeof(type));    \
		type v = 0;                                                    \
		if (p)                                                         \
			memcpy(&v, p, sizeof v);                               \
		return v;                                                      \
	}                                                                      \
	static void st_##name(struct emulate_launch *l, uint32_t a,           \
			      uint64_t i, type v)                              \
	{                                                                      \
		unsigned char *p = emulate_at(l, a, i, sizeof(type));          \
		if (p)                                                         \
			memcpy(p, &v, sizeof v);                               \
	}
LOAD_STORE(f32, float)
LOAD_STORE(u32, uint32_t)
LOAD_STORE(u16, uint16_t)

/* get_global_size(0) */
static uint64_t global_size(const struct emulate_launch *l)
{
	return (uint64_t)l->group_size[0] * l->group_count[0];
}

/* FOR_EACH(i, n) of kernels.cl: work-item g of dimension 0 takes g,
 * g + get_global_size(0), ... (items that share an x id do the same). */
#define FOR_EACH(l, i, n)                                                      \
	for (uint64_t g_ = 0, n_ = (n), G_ = global_size(l);                   \
	     g_ < G_ && g_ < n_ && !(l)->faulted; g_++)                        \
		for (uint64_t i = g_; i < n_ && !(l)->faulted; i += G_)

/*===----------------------------------------------------------------------===
 * noop, fill, copies
 *===----------------------------------------------------------------------===*/

static void noop(struct emulate_launch *l)
{
	(void)l;
}

/* fill_f32(out, ulong count, float value), fill_i32(..., int value): the
 * value's 4 bytes, stored as they came. */
static void fill_b32(struct emulate_launch *l)
{
	uint64_t count = arg_u64(l, 1);
	uint32_t v = arg_u32(l, 2);

	FOR_EACH(l, i, count)
		st_u32(l, 0, i, v);
}

static void copy_b32(struct emulate_launch *l)
{
	uint64_t count = arg_u64(l, 2);

	FOR_EACH(l, i, count)
		st_u32(l, 0, i, ld_u32(l, 1, i));
}

static void copy_b16(struct emulate_launch *l)
{
	uint64_t count = arg_u64(l, 2);

	FOR_EACH(l, i, count)
		st_u16(l, 0, i, ld_u16(l, 1, i));
}

/*===----------------------------------------------------------------------===
 * Elementwise f32
 *===----------------------------------------------------------------------===*/

/* f_<name>: the arithmetic of catalogue row <name> (catalogue.def), as
 * kernels.cl computes it; max and min give NaN when either side is. */
static float f_max(float a, float b)
{
	return isnan(a) || isnan(b) ? NAN : fmaxf(a, b);
}

static float f_min(float a, float b)
{
	return isnan(a) || isnan(b) ? NAN : fminf(a, b);
}

static float f_sigmoid(float x)
{
	if (x >= 0.0f)
		return 1.0f / (1.0f + expf(-x));
	float e = expf(x);
	return e / (1.0f + e);
}

static float f_gelu(float x)
{
	const float k = 0.7978845608028654f;
	float u = k * (x + 0.044715f * x * x * x);
	return x / (1.0f + expf(-2.0f * u));
}

static float f_neg(float x) { return -x; }
static float f_abs(float x) { return fabsf(x); }
static float f_exp(float x) { return expf(x); }
static float f_log(float x) { return logf(x); }
static float f_sqrt(float x) { return sqrtf(x); }
static float f_relu(float x) { return x > 0.0f || isnan(x) ? x : 0.0f; }
static float f_tanh(float x) { return tanhf(x); }

static float f_add(float a, float b) { return a + b; }
static float f_sub(float a, float b) { return a - b; }
static float f_mul(float a, float b) { return a * b; }
static float f_div(float a, float b) { return a / b; }

/* name_f32(out, in, ulong count) */
#define UNARY(name, f)                                                         \
	static void name##_f32(struct emulate_launch *l)                      \
	{                                                                      \
		uint64_t count = arg_u64(l, 2);                                \
		FOR_EACH(l, i, count)                                          \
			st_f32(l, 0, i, f(ld_f32(l, 1, i)));                   \
	}
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference)                   \
	UNARY(name, f_##name)
#include <wafer/catalogue.def>

struct strided {
	uint32_t rank, reserved;
	uint64_t shape[WAFER_MAX_RANK];
	uint64_t a_strides[WAFER_MAX_RANK];
	uint64_t b_strides[WAFER_MAX_RANK];
	uint64_t a_offset, b_offset;
};

struct strided_copy {
	uint32_t rank, reserved;
	uint64_t shape[WAFER_MAX_RANK];
	uint64_t strides[WAFER_MAX_RANK];
	uint64_t offset;
};

static uint64_t shape_count(uint32_t rank, const uint64_t *shape)
{
	uint64_t n = 1;
	for (uint32_t d = 0; d < rank && d < WAFER_MAX_RANK; d++)
		n *= shape[d];
	return n;
}

/* The element that flat index |i| of |shape| (|rank| dimensions, the last
 * the fastest) names under |strides|, from |offset|. */
static uint64_t strided_at(uint64_t i, uint32_t rank, const uint64_t *shape,
			   const uint64_t *strides, uint64_t offset)
{
	for (uint32_t d = rank; d-- > 0;) {
		uint64_t q = i / shape[d];
		offset += (i - q * shape[d]) * strides[d];
		i = q;
	}
	return offset;
}

/* name_f32(out, in_a, in_b, ulong count);
 * name_scalar_f32(out, in_a, ulong count, float scalar, uint scalar_first);
 * name_strided_f32(out, in_a, in_b, struct binary_strided p) */
#define BINARY(name, f)                                                        \
	static void name##_f32(struct emulate_launch *l)                      \
	{                                                                      \
		uint64_t count = arg_u64(l, 3);                                \
		FOR_EACH(l, i, count)                                          \
			st_f32(l, 0, i, f(ld_f32(l, 1, i), ld_f32(l, 2, i)));  \
	}                                                                      \
	static void name##_scalar_f32(struct emulate_launch *l)               \
	{                                                                      \
		uint64_t count = arg_u64(l, 2);                                \
		float s = arg_f32(l, 3);                                       \
		uint32_t first = arg_u32(l, 4);                                \
		FOR_EACH(l, i, count)                                          \
		{                                                              \
			float x = ld_f32(l, 1, i);                             \
			st_f32(l, 0, i, first ? f(s, x) : f(x, s));            \
		}                                                              \
	}                                                                      \
	static void name##_strided_f32(struct emulate_launch *l)              \
	{                                                                      \
		struct strided p;                                              \
		if (!emulate_value(l, 3, &p, sizeof p))                        \
			return;                                                \
		FOR_EACH(l, i, shape_count(p.rank, p.shape))                   \
		{                                                              \
			uint64_t ia = strided_at(i, p.rank, p.shape,           \
						 p.a_strides, p.a_offset);     \
			uint64_t ib = strided_at(i, p.rank, p.shape,           \
						 p.b_strides, p.b_offset);     \
			st_f32(l, 0, i, f(ld_f32(l, 1, ia), ld_f32(l, 2, ib))); \
		}                                                              \
	}
#define WAFER_CATALOGUE_BINARY(name, NAME, reference) BINARY(name, f_##name)
#include <wafer/catalogue.def>

/* copy_strided_bN(out, in, struct strided_copy p) */
#define COPY_STRIDED(bits)                                                     \
	static void copy_strided_b##bits(struct emulate_launch *l)            \
	{                                                                      \
		struct strided_copy p;                                         \
		if (!emulate_value(l, 2, &p, sizeof p))                        \
			return;                                                \
		FOR_EACH(l, i, shape_count(p.rank, p.shape))                   \
		{                                                              \
			uint64_t from = strided_at(i, p.rank, p.shape,         \
						   p.strides, p.offset);       \
			st_u##bits(l, 0, i, ld_u##bits(l, 1, from));           \
		}                                                              \
	}
COPY_STRIDED(32)
COPY_STRIDED(16)

/*===----------------------------------------------------------------------===
 * cast: each type loaded as f32, stored with the kernel's rounding
 *===----------------------------------------------------------------------===*/

static float load_f32(struct emulate_launch *l, uint64_t i)
{
	return ld_f32(l, 1, i);
}

static float load_f16(struct emulate_launch *l, uint64_t i)
{
	uint16_t bits = ld_u16(l, 1, i);
	_Float16 h;

	memcpy(&h, &bits, 2);
	return (float)h;
}

static float load_bf16(struct emulate_launch *l, uint64_t i)
{
	uint32_t bits = (uint32_t)ld_u16(l, 1, i) << 16;
	float f;

	memcpy(&f, &bits, 4);
	return f;
}

static float load_i32(struct emulate_launch *l, uint64_t i)
{
	return (float)(int32_t)ld_u32(l, 1, i); /* to nearest even */
}

/* Rounded to odd: toward zero, the lowest bit set when inexact. */
static float load_i32_odd(struct emulate_launch *l, uint64_t i)
{
	int32_t x = (int32_t)ld_u32(l, 1, i);
	float f = (float)x;
	uint32_t bits;

	if ((x > 0 && (int64_t)f > x) || (x < 0 && (int64_t)f < x))
		f = nextafterf(f, 0.0f); /* rounded away from zero: back */
	if ((int64_t)f != x) {
		memcpy(&bits, &f, 4);
		bits |= 1u;
		memcpy(&f, &bits, 4);
	}
	return f;
}

static void store_f32(struct emulate_launch *l, uint64_t i, float x)
{
	st_f32(l, 0, i, x);
}

static void store_f16(struct emulate_launch *l, uint64_t i, float x)
{
	_Float16 h = (_Float16)x; /* to nearest even, as vstore_half_rte */
	uint16_t bits;

	memcpy(&bits, &h, 2);
	st_u16(l, 0, i, bits);
}

static void store_bf16(struct emulate_launch *l, uint64_t i, float x)
{
	uint32_t bits;
	uint16_t b;

	memcpy(&bits, &x, 4);
	if (isnan(x))
		b = (uint16_t)((bits >> 16) | 0x0040u);
	else
		b = (uint16_t)((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
	st_u16(l, 0, i, b);
}

/* convert_int_sat_rtz */
static void store_i32(struct emulate_launch *l, uint64_t i, float x)
{
	int32_t v;

	if (isnan(x))
		v = 0;
	else if (x >= 2147483648.0f)
		v = INT32_MAX;
	else if (x < -2147483648.0f)
		v = INT32_MIN;
	else
		v = (int32_t)x;
	st_u32(l, 0, i, (uint32_t)v);
}

/* cast_from_to(global void *out, global const void *in, ulong count) */
#define CAST_VIA(from, to, load)                                               \
	static void cast_##from##_##to(struct emulate_launch *l)              \
	{                                                                      \
		uint64_t count = arg_u64(l, 2);                                \
		FOR_EACH(l, i, count)                                          \
			store_##to(l, i, load(l, i));                          \
	}
#define CAST(from, to) CAST_VIA(from, to, load_##from)
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
 * Rows: one group of ROW_GROUP items per row, a tree fold in local memory
 *===----------------------------------------------------------------------===*/

/* group_sum / group_max of kernels.cl over the items' values |x|. */
static float group_fold(float *x, float (*combine)(float, float))
{
	for (uint32_t s = ROW_GROUP / 2; s > 0; s >>= 1)
		for (uint32_t lid = 0; lid < s; lid++)
			x[lid] = combine(x[lid], x[lid + s]);
	return x[0];
}

enum row_op { ROW_SUM, ROW_MEAN, ROW_MAX };

/* name(out, in, ulong rows, ulong cols); FOR_EACH_ROW strides over rows
 * by get_num_groups(0), FOR_EACH_COL over columns by ROW_GROUP. */
static void row_reduce(struct emulate_launch *l, enum row_op op)
{
	uint64_t rows = arg_u64(l, 2), cols = arg_u64(l, 3);
	float acc[ROW_GROUP];

	for (uint64_t g = 0; g < l->group_count[0] && !l->faulted; g++)
		for (uint64_t r = g; r < rows && !l->faulted;
		     r += l->group_count[0]) {
			for (uint32_t lid = 0; lid < ROW_GROUP; lid++) {
				acc[lid] = op == ROW_MAX ? -INFINITY : 0.0f;
				for (uint64_t c = lid; c < cols; c += ROW_GROUP) {
					float v = ld_f32(l, 1, r * cols + c);
					acc[lid] = op == ROW_MAX
							   ? f_max(acc[lid], v)
							   : acc[lid] + v;
				}
			}
			float total = group_fold(acc, op == ROW_MAX ? f_max
								    : f_add);
			st_f32(l, 0, r,
			       op == ROW_MEAN ? total / (float)cols : total);
		}
}

static void reduce_sum_f32(struct emulate_launch *l)
{
	row_reduce(l, ROW_SUM);
}

static void reduce_mean_f32(struct emulate_launch *l)
{
	row_reduce(l, ROW_MEAN);
}

static void reduce_max_f32(struct emulate_launch *l)
{
	row_reduce(l, ROW_MAX);
}

/* softmax_f32(out, in, ulong rows, ulong cols): out may alias in; each
 * pass runs over all items before the next, as the barriers make it. */
static void softmax_f32(struct emulate_launch *l)
{
	uint64_t rows = arg_u64(l, 2), cols = arg_u64(l, 3);
	float part[ROW_GROUP];

	for (uint64_t g = 0; g < l->group_count[0] && !l->faulted; g++)
		for (uint64_t r = g; r < rows && !l->faulted;
		     r += l->group_count[0]) {
			for (uint32_t lid = 0; lid < ROW_GROUP; lid++) {
				part[lid] = -INFINITY;
				for (uint64_t c = lid; c < cols; c += ROW_GROUP)
					part[lid] = f_max(
						part[lid],
						ld_f32(l, 1, r * cols + c));
			}
			float m = group_fold(part, f_max);
			for (uint32_t lid = 0; lid < ROW_GROUP; lid++) {
				part[lid] = 0.0f;
				for (uint64_t c = lid; c < cols; c += ROW_GROUP)
					part[lid] += expf(
						ld_f32(l, 1, r * cols + c) - m);
			}
			float sum = group_fold(part, f_add);
			for (uint64_t c = 0; c < cols; c++)
				st_f32(l, 0, r * cols + c,
				       expf(ld_f32(l, 1, r * cols + c) - m) /
					       sum);
		}
}

/*===----------------------------------------------------------------------===
 * matmul: 16 x 16 tiles
 *===----------------------------------------------------------------------===*/

struct matmul {
	uint64_t batch, m, n, k;
	uint32_t transpose_a, transpose_b;
	uint64_t batch_stride_a, batch_stride_b, batch_stride_c;
};

/* One tile of C_t: item (lx, ly) sums op(A)[row, k0 + j] * op(B)[k0 + j,
 * col] over the staged tiles, zeros outside the matrices, in the
 * kernel's order. */
static void matmul_tile(struct emulate_launch *l, const struct matmul *p,
			uint64_t t, uint64_t tm, uint64_t tn)
{
	for (uint32_t ly = 0; ly < TILE; ly++)
		for (uint32_t lx = 0; lx < TILE && !l->faulted; lx++) {
			uint64_t row = tm * TILE + ly, col = tn * TILE + lx;
			float acc = 0.0f;
			if (row >= p->m || col >= p->n)
				continue; /* computes, never writes */
			for (uint64_t k0 = 0; k0 < p->k; k0 += TILE)
				for (uint32_t j = 0; j < TILE; j++) {
					uint64_t kk = k0 + j;
					float va = 0.0f, vb = 0.0f;
					if (kk < p->k) {
						va = ld_f32(l, 1,
							    t * p->batch_stride_a +
								    (p->transpose_a
									     ? kk * p->m + row
									     : row * p->k + kk));
						vb = ld_f32(l, 2,
							    t * p->batch_stride_b +
								    (p->transpose_b
									     ? col * p->k + kk
									     : kk * p->n + col));
					}
					acc += va * vb;
				}
			st_f32(l, 0, t * p->batch_stride_c + row * p->n + col,
			       acc);
		}
}

/* matmul_f32(out, a, b, struct matmul p): dimension 0 over tile columns,
 * 1 over tile rows, 2 over the batch; groups stride over all three. */
static void matmul_f32(struct emulate_launch *l)
{
	struct matmul p;
	const uint32_t *gc = l->group_count;

	if (!emulate_value(l, 3, &p, sizeof p))
		return;
	uint64_t tiles_n = (p.n + TILE - 1) / TILE;
	uint64_t tiles_m = (p.m + TILE - 1) / TILE;
	for (uint64_t gz = 0; gz < gc[2]; gz++)
		for (uint64_t t = gz; t < p.batch; t += gc[2])
			for (uint64_t gy = 0; gy < gc[1]; gy++)
				for (uint64_t tm = gy; tm < tiles_m; tm += gc[1])
					for (uint64_t gx = 0; gx < gc[0]; gx++)
						for (uint64_t tn = gx;
						     tn < tiles_n && !l->faulted;
						     tn += gc[0])
							matmul_tile(l, &p, t, tm,
								    tn);
}

/*===----------------------------------------------------------------------===
 * The table
 *===----------------------------------------------------------------------===*/

#define K(name) {#name, name}
#define K3(op) K(op##_f32), K(op##_scalar_f32), K(op##_strided_f32)

const struct emulate_kernel emulate_plugin_kernels[] = {
	K(noop),
	{"fill_f32", fill_b32},
	{"fill_i32", fill_b32},
	K(copy_b32), K(copy_b16),
#define WAFER_CATALOGUE_UNARY(name, NAME, dtypes, reference)                   \
	K(name##_f32),
#define WAFER_CATALOGUE_BINARY(name, NAME, reference) K3(name),
#include <wafer/catalogue.def>
	K(copy_strided_b32), K(copy_strided_b16),
	K(cast_f32_f16), K(cast_f32_bf16), K(cast_f32_i32),
	K(cast_f16_f32), K(cast_f16_bf16), K(cast_f16_i32),
	K(cast_bf16_f32), K(cast_bf16_f16), K(cast_bf16_i32),
	K(cast_i32_f32), K(cast_i32_f16), K(cast_i32_bf16),
#define WAFER_CATALOGUE_ROWS(name, NAME, dtypes, output) K(name##_f32),
#include <wafer/catalogue.def>
	K(matmul_f32),
	{NULL, NULL},
};
