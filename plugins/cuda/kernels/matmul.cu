/* wafer — SPDX-License-Identifier: MIT
 *
 * matmul.cu: the matmul candidates (struct cuda_matmul_args gives the
 * layout). Each block computes one BM x BN tile of C for one matrix of
 * the batch: grid = (n tiles, m tiles, batch), 256 threads.
 *
 *   tiled<BM, BN, BK, TM, TN>   CUDA cores, fp32 arithmetic. A and B
 *       tiles are staged through shared memory, double-buffered with one
 *       barrier per k step; each thread accumulates a TM x TN block of C
 *       in registers. A tile that lies wholly inside its matrix, on an
 *       aligned row stride, is read 4 elements per access along the
 *       matrix's contiguous dimension; edge tiles read one element at a
 *       time and pad with zeros, so any m, n, k and either transpose
 *       works.
 *   reg_tile, warp_tile   CUDA cores, fp32 arithmetic, one kernel per
 *       layout for aligned row strides (the plugin's layouts_fit): 16-byte
 *       reads throughout. warp_tile (f32) gives each warp its own part of
 *       the block's tile, so that a warp's shared-memory reads are
 *       conflict-free, and copies with cp.async (sm_80 and later).
 *   wmma<T>   tensor cores through the WMMA API: f16 and bf16 operands
 *       (m16n16k16), and tf32 for f32 operands (m16n16k8: a 10-bit
 *       mantissa, a candidate autotune keeps only where its accuracy
 *       check allows it).
 *
 * Every kernel accumulates in fp32 and rounds once, when it stores C. */
#include <mma.h>

#include "plugins/cuda/kernels/common.cuh"

#define THREADS 256

/*===----------------------------------------------------------------------===
 * Reading tiles of A and B
 *===----------------------------------------------------------------------===*/

/* Four consecutive stored elements, as floats, in one access (16 bytes
 * for f32, 8 for f16 and bf16). |p| is aligned to the access size. */
template <typename T> struct Load4;

template <> struct Load4<F32> {
	static __device__ __forceinline__ void run(const float *p, float out[4])
	{
		float4 v = *(const float4 *)p;
		out[0] = v.x;
		out[1] = v.y;
		out[2] = v.z;
		out[3] = v.w;
	}
};

template <typename T> struct Load4Half {
	static __device__ __forceinline__ void run(const unsigned short *p,
						   float out[4])
	{
		uint2 v = *(const uint2 *)p;
		out[0] = Elem<T>::load((unsigned short)(v.x & 0xffffu));
		out[1] = Elem<T>::load((unsigned short)(v.x >> 16));
		out[2] = Elem<T>::load((unsigned short)(v.y & 0xffffu));
		out[3] = Elem<T>::load((unsigned short)(v.y >> 16));
	}
};

template <> struct Load4<F16> : Load4Half<F16> {};
template <> struct Load4<BF16> : Load4Half<BF16> {};

/* A tile of op(A) (OUTER = rows of C) or of op(B) (OUTER = columns of C)
 * by BK along k, held in registers between the global read and the store
 * into shared memory, where it lands as S[k][outer]. Both operands are
 * read the same way: element (o, l) of the tile is at
 *   x[o * ld + l]   when k is the contiguous dimension (k_contig), or
 *   x[l * ld + o]   otherwise,
 * counted from the tile's origin (o0, k0). For A, k_contig = !trans_a;
 * for B, k_contig = trans_b. */
/* Where element |e| of a Tile is, (o, l), read one at a time: consecutive
 * elements walk the contiguous dimension (a macro, so that load and store
 * keep their index arithmetic exactly as written, in their own types). */
#define TILE_PLACE(e, o, l)                                                    \
	do {                                                                   \
		if (k_contig) {                                                \
			l = (e) % BK;                                          \
			o = (e) / BK;                                          \
		} else {                                                       \
			o = (e) % OUTER;                                       \
			l = (e) / OUTER;                                       \
		}                                                              \
	} while (0)

template <typename T, int OUTER, int BK> struct Tile {
	typedef typename Elem<T>::Bits B;
	static const int PER = OUTER * BK / THREADS;
	/* 4-element accesses need whole vectors per thread. */
	static const bool CAN_VEC = PER % 4 == 0;
	float r[PER];
	bool vec;

	__device__ __forceinline__ void load(const B *x, uint64_t ld,
					     bool k_contig, uint64_t o0,
					     uint64_t outer_total, uint64_t k0,
					     uint64_t k_total, int tid)
	{
		vec = CAN_VEC && o0 + OUTER <= outer_total &&
		      k0 + BK <= k_total && ld % 4 == 0 &&
		      (uintptr_t)x % (4 * sizeof(B)) == 0;
		if (vec) {
#pragma unroll
			for (int v = 0; v < PER / 4; v++) {
				int e = tid + v * THREADS;
				uint64_t o, l;
				if (k_contig) {
					l = (uint64_t)(e % (BK / 4)) * 4;
					o = e / (BK / 4);
					Load4<T>::run(x + (o0 + o) * ld + k0 + l,
						      &r[v * 4]);
				} else {
					o = (uint64_t)(e % (OUTER / 4)) * 4;
					l = e / (OUTER / 4);
					Load4<T>::run(x + (k0 + l) * ld + o0 + o,
						      &r[v * 4]);
				}
			}
			return;
		}
#pragma unroll
		for (int i = 0; i < PER; i++) {
			int e = tid + i * THREADS;
			uint64_t o, l;
			TILE_PLACE(e, o, l);
			uint64_t go = o0 + o, gl = k0 + l;
			float v = 0.0f;
			if (go < outer_total && gl < k_total)
				v = Elem<T>::load(k_contig ? x[go * ld + gl]
							   : x[gl * ld + go]);
			r[i] = v;
		}
	}

	/* S is the shared tile, S[BK][OUTER + PAD]. */
	template <int STRIDE>
	__device__ __forceinline__ void store(float (*S)[STRIDE], bool k_contig,
					      int tid) const
	{
		if (vec) {
#pragma unroll
			for (int v = 0; v < PER / 4; v++) {
				int e = tid + v * THREADS;
				if (k_contig) {
					int l = (e % (BK / 4)) * 4;
					int o = e / (BK / 4);
#pragma unroll
					for (int j = 0; j < 4; j++)
						S[l + j][o] = r[v * 4 + j];
				} else {
					int o = (e % (OUTER / 4)) * 4;
					int l = e / (OUTER / 4);
#pragma unroll
					for (int j = 0; j < 4; j++)
						S[l][o + j] = r[v * 4 + j];
				}
			}
			return;
		}
#pragma unroll
		for (int i = 0; i < PER; i++) {
			int e = tid + i * THREADS;
			int o, l;
			TILE_PLACE(e, o, l);
			S[l][o] = r[i];
		}
	}
};

/* The matrices of batch entry blockIdx.z. */
template <typename B>
static __device__ __forceinline__ void batch_entry(void *c_, const void *a_,
						   const void *b_,
						   const cuda_matmul_args &p,
						   B **c, const B **a,
						   const B **b)
{
	const uint64_t z = blockIdx.z;

	*a = (const B *)a_ + z * p.stride_a;
	*b = (const B *)b_ + z * p.stride_b;
	*c = (B *)c_ + z * p.stride_c;
}

/* A kernel's opening: its batch entry's matrices a, b, c (of element type
 * B), the origin (m0, n0) of its block's tile of C (BM x BN) and its
 * thread's index tid. A macro: the declarations stay the kernel's own. */
#define BLOCK_ORIGIN(B)                                                        \
	const B *a, *b;                                                        \
	B *c;                                                                  \
	batch_entry<B>(c_, a_, b_, p, &c, &a, &b);                             \
	const uint64_t m0 = (uint64_t)blockIdx.y * BM;                         \
	const uint64_t n0 = (uint64_t)blockIdx.x * BN;                         \
	const int tid = threadIdx.x

/*===----------------------------------------------------------------------===
 * CUDA-core tiles
 *===----------------------------------------------------------------------===*/

template <typename T, int BM, int BN, int BK, int TM, int TN>
static __device__ __forceinline__ void
tiled(void *c_, const void *a_, const void *b_, const cuda_matmul_args &p)
{
	typedef typename Elem<T>::Bits B;
	static_assert((BM / TM) * (BN / TN) == THREADS, "one C block a thread");
	static_assert(TM % 4 == 0 && TN % 4 == 0, "float4 shared reads");
	const int SA = BM + 4, SB = BN + 4;
	__shared__ __align__(16) float As[2][BK][SA];
	__shared__ __align__(16) float Bs[2][BK][SB];

	BLOCK_ORIGIN(B);
	const int tx = tid % (BN / TN), ty = tid / (BN / TN);
	const bool a_kc = !p.trans_a, b_kc = p.trans_b != 0;

	Tile<T, BM, BK> ta;
	Tile<T, BN, BK> tb;
	float acc[TM][TN];
#pragma unroll
	for (int i = 0; i < TM; i++)
#pragma unroll
		for (int j = 0; j < TN; j++)
			acc[i][j] = 0.0f;

	ta.load(a, p.lda, a_kc, m0, p.m, 0, p.k, tid);
	tb.load(b, p.ldb, b_kc, n0, p.n, 0, p.k, tid);
	ta.store(As[0], a_kc, tid);
	tb.store(Bs[0], b_kc, tid);
	__syncthreads();

	int cur = 0;
	for (uint64_t k0 = 0; k0 < p.k; k0 += BK) {
		const bool more = k0 + BK < p.k;
		/* The next tiles' global reads are in flight while this one
		 * is multiplied. */
		if (more) {
			ta.load(a, p.lda, a_kc, m0, p.m, k0 + BK, p.k, tid);
			tb.load(b, p.ldb, b_kc, n0, p.n, k0 + BK, p.k, tid);
		}
#pragma unroll
		for (int l = 0; l < BK; l++) {
			float av[TM], bv[TN];
#pragma unroll
			for (int i = 0; i < TM; i += 4) {
				Load4<F32>::run(&As[cur][l][ty * TM + i], &av[i]);
			}
#pragma unroll
			for (int j = 0; j < TN; j += 4) {
				Load4<F32>::run(&Bs[cur][l][tx * TN + j], &bv[j]);
			}
#pragma unroll
			for (int i = 0; i < TM; i++)
#pragma unroll
				for (int j = 0; j < TN; j++)
					acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
		}
		/* The other buffer was last read before the previous
		 * barrier, so it may be overwritten now. */
		if (more) {
			ta.store(As[cur ^ 1], a_kc, tid);
			tb.store(Bs[cur ^ 1], b_kc, tid);
		}
		__syncthreads();
		cur ^= 1;
	}

#pragma unroll
	for (int i = 0; i < TM; i++) {
		const uint64_t row = m0 + ty * TM + i;
		if (row >= p.m)
			continue;
#pragma unroll
		for (int j = 0; j < TN; j++) {
			const uint64_t col = n0 + tx * TN + j;
			if (col < p.n)
				c[row * p.ldc + col] = Elem<T>::store(acc[i][j]);
		}
	}
}

/*===----------------------------------------------------------------------===
 * Register-blocked tiles for aligned operands (reg128, reg128x64)
 *===----------------------------------------------------------------------===*/

/* Four consecutive elements stored as floats into shared memory, or
 * zeros. */
template <typename T>
static __device__ __forceinline__ void load4_or_zero(
	const typename Elem<T>::Bits *p, bool valid, float out[4])
{
	if (valid) {
		Load4<T>::run(p, out);
	} else {
		out[0] = out[1] = out[2] = out[3] = 0.0f;
	}
}

/* Stores four consecutive results as one access (16 bytes for f32, 8 for
 * f16 and bf16). */
template <typename T> struct Store4;

template <> struct Store4<F32> {
	static __device__ __forceinline__ void run(float *p, const float v[4])
	{
		*(float4 *)p = make_float4(v[0], v[1], v[2], v[3]);
	}
};

template <typename T> struct Store4Half {
	static __device__ __forceinline__ void run(unsigned short *p,
						   const float v[4])
	{
		uint2 u;
		u.x = (unsigned)Elem<T>::store(v[0]) |
		      ((unsigned)Elem<T>::store(v[1]) << 16);
		u.y = (unsigned)Elem<T>::store(v[2]) |
		      ((unsigned)Elem<T>::store(v[3]) << 16);
		*(uint2 *)p = u;
	}
};

template <> struct Store4<F16> : Store4Half<F16> {};
template <> struct Store4<BF16> : Store4Half<BF16> {};

/* C tile 128 x BN (BN = 128 or 64), k step BK (8 or 16), 256 threads as
 * 16 x 16. Thread (ty, tx) owns rows ty*4 + 0..3 and 64 + ty*4 + 0..3,
 * and columns tx*4 + 0..3 (and 64 + tx*4 + 0..3 when BN is 128): split in
 * halves so that its shared-memory reads are 16-byte vectors that a warp
 * reads without bank conflicts. Each k step reads 4-element vectors of A
 * and B along each stored matrix's contiguous dimension, so the plugin
 * uses this kernel only when the row strides (lda, ldb) and batch strides
 * are multiples of 4 — then a vector lies wholly inside or wholly outside
 * its matrix, and edges are handled by skipping whole vectors. TA and TB
 * are the transposes.
 *
 * Vector v of a thread is element tid + v * THREADS of its tile's vector
 * grid; moving to the next v moves a whole number of stored rows, so one
 * pointer per operand and a row offset per v address them all. */
template <typename T, int BN, int BK, bool TA, bool TB>
static __device__ __forceinline__ void
reg_tile(void *c_, const void *a_, const void *b_, const cuda_matmul_args &p)
{
	typedef typename Elem<T>::Bits B;
	const int BM = 128, TN = BN / 16;
	/* Vectors of the A tile per thread; of the B tile in all and per
	 * thread (the B tile of BN 64 and BK 8 has one for half of them). */
	const int VA = BM * BK / 4 / THREADS;
	const int NB = BN * BK / 4;
	const int VB = NB >= THREADS ? NB / THREADS : 1;
	static_assert(VA >= 1 && BM * BK / 4 % THREADS == 0, "A vectors");
	static_assert(NB % THREADS == 0 || THREADS % NB == 0, "B vectors");
	/* Stored rows between a thread's consecutive vectors. */
	const int A_ROWS = !TA ? THREADS / (BK / 4) : THREADS / (BM / 4);
	const int B_ROWS = !TB ? THREADS / (BN / 4) : THREADS / (BK / 4);
	__shared__ __align__(16) float As[2][BK][BM];
	__shared__ __align__(16) float Bs[2][BK][BN];

	BLOCK_ORIGIN(B);
	const int tx = tid % 16, ty = tid / 16;

	/* Vector 0 of this thread: element (outer o, k l) of its tile. */
	int a_o, a_l, b_o, b_l;
	if (!TA) {
		a_o = tid / (BK / 4);
		a_l = (tid % (BK / 4)) * 4;
	} else {
		a_l = tid / (BM / 4);
		a_o = (tid % (BM / 4)) * 4;
	}
	if (!TB) {
		b_l = tid / (BN / 4);
		b_o = (tid % (BN / 4)) * 4;
	} else {
		b_o = tid / (BK / 4);
		b_l = (tid % (BK / 4)) * 4;
	}
	const bool b_loads = NB >= THREADS || tid < NB;
	const B *a_ptr = !TA ? a + (m0 + a_o) * p.lda + a_l
			     : a + (uint64_t)a_l * p.lda + m0 + a_o;
	const B *b_ptr = !TB ? b + (uint64_t)b_l * p.ldb + n0 + b_o
			     : b + (n0 + b_o) * p.ldb + b_l;
	const uint64_t a_step = !TA ? BK : BK * p.lda;
	const uint64_t b_step = !TB ? BK * p.ldb : BK;

	float ra[VA][4], rb[VB][4];
	float acc[8][TN];
#pragma unroll
	for (int i = 0; i < 8; i++)
#pragma unroll
		for (int j = 0; j < TN; j++)
			acc[i][j] = 0.0f;

	/* Whether each vector's outer index (row of C for A, column for B)
	 * is inside the matrix: fixed for the whole loop. The plugin runs
	 * this kernel only for k below 2^31, so k indices are ints. */
	const int K = (int)p.k;
	bool a_out[VA], b_out[VB];
#pragma unroll
	for (int v = 0; v < VA; v++)
		a_out[v] = m0 + a_o + (TA ? 0 : (uint64_t)v * A_ROWS) < p.m;
#pragma unroll
	for (int v = 0; v < VB; v++)
		b_out[v] = b_loads &&
			   n0 + b_o + (TB ? (uint64_t)v * B_ROWS : 0) < p.n;

	/* Reads k tile |k0| into ra, rb: vector v is A_ROWS (B_ROWS) stored
	 * rows after vector 0; along the outer dimension when the matrix is
	 * stored by rows of k, along k otherwise. */
#define REG_LOAD(k0)                                                           \
	do {                                                                   \
		_Pragma("unroll") for (int v = 0; v < VA; v++) {               \
			const int kk = (k0) + a_l + (TA ? v * A_ROWS : 0);     \
			load4_or_zero<T>(a_ptr + (uint64_t)v * A_ROWS * p.lda, \
					 a_out[v] && kk < K, ra[v]);           \
		}                                                              \
		_Pragma("unroll") for (int v = 0; v < VB; v++) {               \
			const int kk = (k0) + b_l + (!TB ? v * B_ROWS : 0);    \
			load4_or_zero<T>(b_ptr + (uint64_t)v * B_ROWS * p.ldb, \
					 b_out[v] && kk < K, rb[v]);           \
		}                                                              \
	} while (0)
	/* Writes ra, rb into buffer |buf| as As[k][m], Bs[k][n]. */
#define REG_STORE(buf)                                                         \
	do {                                                                   \
		_Pragma("unroll") for (int v = 0; v < VA; v++) {               \
			if (!TA) {                                             \
				_Pragma("unroll") for (int j = 0; j < 4; j++)  \
					As[buf][a_l + j][a_o + v * A_ROWS] =   \
						ra[v][j];                      \
			} else {                                               \
				*(float4 *)&As[buf][a_l + v * A_ROWS][a_o] =   \
					make_float4(ra[v][0], ra[v][1],        \
						    ra[v][2], ra[v][3]);       \
			}                                                      \
		}                                                              \
		_Pragma("unroll") for (int v = 0; v < VB; v++) {               \
			if (!b_loads)                                          \
				break;                                         \
			if (!TB) {                                             \
				*(float4 *)&Bs[buf][b_l + v * B_ROWS][b_o] =   \
					make_float4(rb[v][0], rb[v][1],        \
						    rb[v][2], rb[v][3]);       \
			} else {                                               \
				_Pragma("unroll") for (int j = 0; j < 4; j++)  \
					Bs[buf][b_l + j][b_o + v * B_ROWS] =   \
						rb[v][j];                      \
			}                                                      \
		}                                                              \
	} while (0)

	REG_LOAD(0);
	REG_STORE(0);
	__syncthreads();

	/* Tiles left after this one; k's own bound is in the loads. */
	int cur = 0;
	for (int k0 = 0;; k0 += BK) {
		const bool more = k0 + BK < K;
		if (more) {
			a_ptr += a_step;
			b_ptr += b_step;
			REG_LOAD(k0 + BK);
		}
#pragma unroll
		for (int l = 0; l < BK; l++) {
			float av[8], bv[TN];
			const float4 a0 = *(const float4 *)&As[cur][l][ty * 4];
			const float4 a1 =
				*(const float4 *)&As[cur][l][64 + ty * 4];
			av[0] = a0.x, av[1] = a0.y, av[2] = a0.z, av[3] = a0.w;
			av[4] = a1.x, av[5] = a1.y, av[6] = a1.z, av[7] = a1.w;
			const float4 b0 = *(const float4 *)&Bs[cur][l][tx * 4];
			bv[0] = b0.x, bv[1] = b0.y, bv[2] = b0.z, bv[3] = b0.w;
			if (TN == 8) {
				const float4 b1 =
					*(const float4 *)&Bs[cur][l][64 + tx * 4];
				bv[TN - 4] = b1.x, bv[TN - 3] = b1.y;
				bv[TN - 2] = b1.z, bv[TN - 1] = b1.w;
			}
#pragma unroll
			for (int i = 0; i < 8; i++)
#pragma unroll
				for (int j = 0; j < TN; j++)
					acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
		}
		/* The other buffer was last read before the previous
		 * barrier; after the last tile nothing is stored. */
		if (!more)
			break;
		REG_STORE(cur ^ 1);
		__syncthreads();
		cur ^= 1;
	}
#undef REG_LOAD
#undef REG_STORE

	/* Rows ty*4 + i (i < 4) and 64 + ty*4 + i - 4; columns in groups
	 * of 4 from tx*4 and 64 + tx*4. */
	const bool vec_c = p.ldc % 4 == 0 && p.n % 4 == 0;
#pragma unroll
	for (int i = 0; i < 8; i++) {
		const uint64_t row = m0 + (i < 4 ? ty * 4 + i : 64 + ty * 4 + i - 4);
		if (row >= p.m)
			continue;
#pragma unroll
		for (int g = 0; g < TN / 4; g++) {
			const uint64_t col = n0 + g * 64 + tx * 4;
			B *dst = c + row * p.ldc + col;
			if (vec_c) {
				if (col < p.n)
					Store4<T>::run(dst, &acc[i][g * 4]);
				continue;
			}
#pragma unroll
			for (int j = 0; j < 4; j++)
				if (col + j < p.n)
					dst[j] = Elem<T>::store(acc[i][g * 4 + j]);
		}
	}
}

/*===----------------------------------------------------------------------===
 * Warp-tiled f32 tiles (warp128, warp128x256)
 *===----------------------------------------------------------------------===*/

/* Global to shared memory without passing through registers (sm_80 and
 * later): 16 bytes from |src| to |dst|, or zeros where |valid| is false
 * (then nothing is read). */
static __device__ __forceinline__ void cp_async16(float *dst, const float *src,
						  bool valid)
{
	const unsigned s = (unsigned)__cvta_generic_to_shared(dst);
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s),
		     "l"(src), "r"(valid ? 16 : 0)
		     : "memory");
}

static __device__ __forceinline__ void cp_async_commit()
{
	asm volatile("cp.async.commit_group;\n" ::: "memory");
}

/* Waits for all of this thread's copies. */
static __device__ __forceinline__ void cp_async_wait_all()
{
	asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

/* One operand's k tile: OUTER (rows of C for A, columns for B) by BK,
 * read as vectors of 4 floats along the stored matrix's contiguous
 * dimension, V vectors a thread, and kept in shared memory as S[k][outer]
 * (rows of OUTER floats). K_CONTIG: the stored rows run along k (A not
 * transposed, B transposed). The plugin uses these kernels only when the
 * contiguous dimension is a multiple of 4, so a vector is wholly inside or
 * wholly outside its matrix.
 *
 * A vector along outer lands whole in a row of S: copy() starts that with
 * cp.async. A vector along k is spread over 4 rows of S, so it goes
 * through registers (load(), then store()); in those rows the 16-byte
 * pieces are permuted by bits of k / 4 (col_at), so that a warp's stores,
 * to 4 rows at once, land in distinct banks without padding the rows. */
template <int OUTER, int BK, bool K_CONTIG> struct WarpOperand {
	static const int V = OUTER * BK / 4 / THREADS;
	static_assert(V >= 1 && OUTER * BK / 4 % THREADS == 0, "vectors");
	static const int SIZE = BK * OUTER;
	/* Stored rows between a thread's consecutive vectors. */
	static const int ROWS = K_CONTIG ? THREADS / (BK / 4)
					 : THREADS / (OUTER / 4);
	const float *src; /* vector 0 at k tile 0 */
	uint64_t step;    /* elements between k tiles */
	uint64_t vstep;   /* elements between vectors */
	int o, l;         /* vector 0 in the tile */
	bool in[V];       /* whether each vector's outer index is inside */

	__device__ __forceinline__ void init(const float *x, uint64_t ld,
					     uint64_t o0, uint64_t outer_total,
					     int tid)
	{
		if (K_CONTIG) {
			o = tid / (BK / 4);
			l = (tid % (BK / 4)) * 4;
			src = x + (o0 + o) * ld + l;
			step = BK;
		} else {
			l = tid / (OUTER / 4);
			o = (tid % (OUTER / 4)) * 4;
			src = x + (uint64_t)l * ld + o0 + o;
			step = (uint64_t)BK * ld;
		}
		vstep = (uint64_t)ROWS * ld;
#pragma unroll
		for (int v = 0; v < V; v++)
			in[v] = o0 + o + (K_CONTIG ? v * ROWS : 0) < outer_total;
	}

	/* Whether vector v of k tile kt is inside the matrix. */
	__device__ __forceinline__ bool inside(int v, int kt, int K) const
	{
		return in[v] && kt * BK + l + (K_CONTIG ? 0 : v * ROWS) < K;
	}

	/* Element (k, outer) of S. */
	static __device__ __forceinline__ int col_at(int k, int outer)
	{
		if (!K_CONTIG)
			return k * OUTER + outer;
		/* A warp stores 32 / BK pieces of each of BK / 4 rows: the
		 * permutation moves row k's by a multiple of 32 / BK pieces,
		 * inside groups of 8 pieces (32 banks). */
		const int x = ((k >> 2) & (BK / 4 - 1)) * (32 / BK);
		return k * OUTER + (((outer >> 2) ^ x) << 2) + (outer & 3);
	}

	/* Where vector v lands in S (when K_CONTIG, its first k; the next
	 * ones are OUTER further on). */
	__device__ __forceinline__ int at(int v) const
	{
		if (!K_CONTIG)
			return (l + v * ROWS) * OUTER + o;
		return col_at(l, o + v * ROWS);
	}

	/* Starts the copy of k tile |kt| into S (vectors along outer). */
	__device__ __forceinline__ void copy(float *S, int kt, int K) const
	{
		const float *g = src + (uint64_t)kt * step;
#pragma unroll
		for (int v = 0; v < V; v++) {
			const bool ok = inside(v, kt, K);
			const float *gv = ok ? g + v * vstep : src;
			if (!K_CONTIG)
				cp_async16(S + at(v), gv, ok);
		}
	}

	/* Reads k tile |kt| into r ... */
	__device__ __forceinline__ void load(float r[V][4], int kt, int K) const
	{
		const float *g = src + (uint64_t)kt * step;
#pragma unroll
		for (int v = 0; v < V; v++)
			load4_or_zero<F32>(g + v * vstep, inside(v, kt, K), r[v]);
	}

	/* ... and writes r into S. */
	__device__ __forceinline__ void store(float *S, const float r[V][4]) const
	{
#pragma unroll
		for (int v = 0; v < V; v++) {
			if (K_CONTIG) {
#pragma unroll
				for (int j = 0; j < 4; j++)
					S[at(v) + j * OUTER] = r[v][j];
			} else {
				*(float4 *)&S[at(v)] = make_float4(
					r[v][0], r[v][1], r[v][2], r[v][3]);
			}
		}
	}

	/* A thread's N * 4 values at k |l| of S, outer |base| + i * SUB +
	 * 0..3 (i < N): N 16-byte reads. */
	template <int N, int SUB>
	static __device__ __forceinline__ void frag(const float *S, int base,
						    int l, float out[N * 4])
	{
#pragma unroll
		for (int i = 0; i < N; i++) {
			const float4 v =
				*(const float4 *)&S[col_at(l, base + i * SUB)];
			out[i * 4] = v.x, out[i * 4 + 1] = v.y;
			out[i * 4 + 2] = v.z, out[i * 4 + 3] = v.w;
		}
	}
};

/* C tile BM x BN, k step BK, two stages of shared memory: the next k
 * tile's reads are in flight while this one is multiplied. The 8 warps
 * tile the block as (BM / WM) x (BN / WN); a warp's WM x WN is MI x NI
 * sub-tiles, each covered once by the warp's 32 lanes at 4 x 4 results a
 * lane. So a lane owns MI * 4 x NI * 4 results, and its shared-memory
 * reads are 16-byte vectors that a warp reads without bank conflicts. f32
 * only (cp.async copies bits, not conversions); TA and TB are the
 * transposes. */
template <int BM, int BN, int BK, int WM, int WN, int MI, int NI, bool TA,
	  bool TB>
static __device__ __forceinline__ void
warp_tile(void *c_, const void *a_, const void *b_, const cuda_matmul_args &p)
{
	typedef WarpOperand<BM, BK, !TA> OpA;
	typedef WarpOperand<BN, BK, TB> OpB;
	/* Operands read through registers: the k-contiguous ones. */
	const bool RA = !TA, RB = TB;
	const int SUB_M = WM / MI, SUB_N = WN / NI;
	const int LN = SUB_N / 4; /* lanes along n */
	static_assert((SUB_M / 4) * LN == 32, "a sub-tile is one warp of 4 x 4");
	static_assert((BM / WM) * (BN / WN) * 32 == THREADS, "8 warps");
	static_assert(BK == 8 || BK == 16, "k step");
	__shared__ __align__(16) float As[2 * OpA::SIZE];
	__shared__ __align__(16) float Bs[2 * OpB::SIZE];

	BLOCK_ORIGIN(float);
	const int warp = tid / 32, lane = tid % 32;
	const int wm = warp / (BN / WN), wn = warp % (BN / WN);
	const int am = wm * WM + (lane / LN) * 4; /* first row in the tile */
	const int bn = wn * WN + (lane % LN) * 4; /* first column */
	/* The plugin runs these kernels only for k below 2^31. */
	const int K = (int)p.k;
	const int KT = (K + BK - 1) / BK;

	OpA ta;
	OpB tb;
	ta.init(a, p.lda, m0, p.m, tid);
	tb.init(b, p.ldb, n0, p.n, tid);

	float acc[MI * 4][NI * 4];
#pragma unroll
	for (int i = 0; i < MI * 4; i++)
#pragma unroll
		for (int j = 0; j < NI * 4; j++)
			acc[i][j] = 0.0f;

	/* One k tile from stage |st| into the accumulators. */
	auto multiply = [&](int st) {
		const float *sa = As + st * OpA::SIZE;
		const float *sb = Bs + st * OpB::SIZE;
#pragma unroll
		for (int l = 0; l < BK; l++) {
			float av[MI * 4], bv[NI * 4];
			OpA::template frag<MI, SUB_M>(sa, am, l, av);
			OpB::template frag<NI, SUB_N>(sb, bn, l, bv);
#pragma unroll
			for (int i = 0; i < MI * 4; i++)
#pragma unroll
				for (int j = 0; j < NI * 4; j++)
					acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
		}
	};

	/* Two loops. With an operand through registers: read the next
	 * tile, multiply, store it, wait for the copies, barrier. With both
	 * copied: wait, barrier, start the next copies, multiply. The steps
	 * are much the same, but nvcc schedules them differently, and each
	 * loop was the faster (by up to 3 TFLOP/s at 4096^3 on an H200)
	 * where it is used. */
	if (RA || RB) {
		/* Registers hold the next tile of RA (RB) operands while
		 * this one is multiplied; they land after the product. */
		float ra[RA ? OpA::V : 1][4], rb[RB ? OpB::V : 1][4];
		if (KT > 0) {
			if (RA) {
				ta.load(ra, 0, K);
				ta.store(As, ra);
			} else {
				ta.copy(As, 0, K);
			}
			if (RB) {
				tb.load(rb, 0, K);
				tb.store(Bs, rb);
			} else {
				tb.copy(Bs, 0, K);
			}
		}
		cp_async_commit();
		cp_async_wait_all();
		__syncthreads();
		for (int kt = 0; kt < KT; kt++) {
			const int cur = kt & 1;
			const bool more = kt + 1 < KT;
			/* The other stage was last read before the previous
			 * barrier. */
			float *na = As + (cur ^ 1) * OpA::SIZE;
			float *nb = Bs + (cur ^ 1) * OpB::SIZE;
			if (more) {
				if (RA)
					ta.load(ra, kt + 1, K);
				else
					ta.copy(na, kt + 1, K);
				if (RB)
					tb.load(rb, kt + 1, K);
				else
					tb.copy(nb, kt + 1, K);
			}
			cp_async_commit();
			multiply(cur);
			if (more) {
				if (RA)
					ta.store(na, ra);
				if (RB)
					tb.store(nb, rb);
			}
			cp_async_wait_all();
			__syncthreads();
		}
	} else {
		if (KT > 0) {
			ta.copy(As, 0, K);
			tb.copy(Bs, 0, K);
		}
		cp_async_commit();
		int cur = 0, next = 1;
		for (int kt = 0; kt < KT; kt++) {
			/* Tile kt is in for every thread, and every thread is
			 * done with tile kt - 1, whose stage the next copy
			 * takes. */
			cp_async_wait_all();
			__syncthreads();
			if (kt + 1 < KT) {
				ta.copy(As + next * OpA::SIZE, kt + 1, K);
				tb.copy(Bs + next * OpB::SIZE, kt + 1, K);
			}
			cp_async_commit();
			multiply(cur);
			cur = cur == 1 ? 0 : cur + 1;
			next = next == 1 ? 0 : next + 1;
		}
		cp_async_wait_all();
	}

	/* Row am + i / 4 * SUB_M + i % 4, columns in groups of 4 from
	 * bn + j * SUB_N. */
	const bool vec_c = p.ldc % 4 == 0 && p.n % 4 == 0;
#pragma unroll
	for (int i = 0; i < MI * 4; i++) {
		const uint64_t row = m0 + am + i / 4 * SUB_M + i % 4;
		if (row >= p.m)
			continue;
#pragma unroll
		for (int j = 0; j < NI; j++) {
			const uint64_t col = n0 + bn + j * SUB_N;
			float *dst = c + row * p.ldc + col;
			if (vec_c) {
				if (col < p.n)
					Store4<F32>::run(dst, &acc[i][j * 4]);
				continue;
			}
#pragma unroll
			for (int e = 0; e < 4; e++)
				if (col + e < p.n)
					dst[e] = acc[i][j * 4 + e];
		}
	}
}

/*===----------------------------------------------------------------------===
 * Tensor cores (WMMA)
 *===----------------------------------------------------------------------===*/

namespace wmma = nvcuda::wmma;

/* What the fragments hold for each storage type, and how many k one
 * mma_sync covers. Shared memory keeps f16/bf16 as their bits, f32 as
 * floats (rounded to tf32 in the fragment). */
template <typename T> struct WmmaOf;

template <> struct WmmaOf<F16> {
	typedef __half Frag;
	typedef __half Ptr;
	typedef unsigned short Smem;
	static const int K = 16;
};

template <> struct WmmaOf<BF16> {
	typedef __nv_bfloat16 Frag;
	typedef __nv_bfloat16 Ptr;
	typedef unsigned short Smem;
	static const int K = 16;
};

template <> struct WmmaOf<F32> {
	typedef wmma::precision::tf32 Frag;
	typedef float Ptr;
	typedef float Smem;
	static const int K = 8;
};

/* tf32 fragments hold floats that must be rounded to tf32 before the
 * product; f16 and bf16 fragments need nothing. */
template <typename Fragment>
static __device__ __forceinline__ void tf32_round(Fragment &)
{
}

template <typename Use, typename Layout>
static __device__ __forceinline__ void
tf32_round(wmma::fragment<Use, 16, 16, 8, wmma::precision::tf32, Layout> &f)
{
#pragma unroll
	for (int t = 0; t < f.num_elements; t++)
		f.x[t] = wmma::__float_to_tf32(f.x[t]);
}

template <typename T>
static __device__ __forceinline__ typename WmmaOf<T>::Smem
to_smem(typename Elem<T>::Bits bits)
{
	return bits; /* f16/bf16: the bits; f32: the float itself */
}

/* wmma_tile's operand staging: S[i][j] = op(X)(r0 + i, c0 + j) for
 * i < R, j < C, zero past |rows| x |cols|. X is stored row-major with
 * leading dimension |ld|, transposed when |trans|; consecutive threads
 * walk the stored matrix's contiguous dimension. */
template <typename T, int R, int C, int L, typename Smem, typename B>
static __device__ __forceinline__ void
stage_tile(Smem (*S)[L], const B *x, uint64_t ld, uint32_t trans,
	   uint64_t r0, uint64_t c0, uint64_t rows, uint64_t cols, int tid)
{
#pragma unroll 4
	for (int e = tid; e < R * C; e += THREADS) {
		int i, j;
		if (!trans) {
			j = e % C;
			i = e / C;
		} else {
			i = e % R;
			j = e / R;
		}
		uint64_t gi = r0 + i, gj = c0 + j;
		B v = 0;
		if (gi < rows && gj < cols)
			v = trans ? x[gj * ld + gi] : x[gi * ld + gj];
		S[i][j] = to_smem<T>(v);
	}
}

/* Block tile 128 x 128, k step 32; 8 warps as 2 (m) x 4 (n), each warp
 * 64 x 32 of C: 4 x 2 fragments of 16 x 16. Operands are read with
 * bounds checks one element at a time (zeros past the edges), so any
 * shape and transpose works. */
template <typename T>
static __device__ __forceinline__ void
wmma_tile(void *c_, const void *a_, const void *b_, const cuda_matmul_args &p)
{
	typedef typename Elem<T>::Bits B;
	typedef typename WmmaOf<T>::Smem S;
	typedef typename WmmaOf<T>::Frag F;
	const int BM = 128, BN = 128, BK = 32, KS = WmmaOf<T>::K;
	/* Row strides: multiples of 8 elements (16 bytes for 16-bit types,
	 * 32 for float), as load_matrix_sync needs, and fragment origins on
	 * 32-byte boundaries. */
	const int LA = BK + 8, LB = BN + 8;
	__shared__ __align__(128) S As[BM][LA];
	__shared__ __align__(128) S Bs[BK][LB];
	__shared__ __align__(128) float Cs[THREADS / 32][16 * 16];

	BLOCK_ORIGIN(B);
	const int warp = tid / 32, lane = tid % 32;
	const int wm = warp / 4, wn = warp % 4;

	wmma::fragment<wmma::accumulator, 16, 16, KS, float> acc[4][2];
#pragma unroll
	for (int i = 0; i < 4; i++)
#pragma unroll
		for (int j = 0; j < 2; j++)
			wmma::fill_fragment(acc[i][j], 0.0f);

	for (uint64_t k0 = 0; k0 < p.k; k0 += BK) {
		/* As[i][l] = op(A)(m0 + i, k0 + l); Bs[l][j] = op(B)(k0 + l,
		 * n0 + j). */
		stage_tile<T, BM, BK>(As, a, p.lda, p.trans_a, m0, k0, p.m,
				      p.k, tid);
		stage_tile<T, BK, BN>(Bs, b, p.ldb, p.trans_b, k0, n0, p.k,
				      p.n, tid);
		__syncthreads();

#pragma unroll
		for (int kk = 0; kk < BK; kk += KS) {
			wmma::fragment<wmma::matrix_a, 16, 16, KS, F,
				       wmma::row_major> af[4];
			wmma::fragment<wmma::matrix_b, 16, 16, KS, F,
				       wmma::row_major> bf[2];
#pragma unroll
			for (int i = 0; i < 4; i++) {
				wmma::load_matrix_sync(
					af[i],
					(const typename WmmaOf<T>::Ptr *)&As
						[wm * 64 + i * 16][kk],
					LA);
				tf32_round(af[i]);
			}
#pragma unroll
			for (int j = 0; j < 2; j++) {
				wmma::load_matrix_sync(
					bf[j],
					(const typename WmmaOf<T>::Ptr *)&Bs
						[kk][wn * 32 + j * 16],
					LB);
				tf32_round(bf[j]);
			}
#pragma unroll
			for (int i = 0; i < 4; i++)
#pragma unroll
				for (int j = 0; j < 2; j++)
					wmma::mma_sync(acc[i][j], af[i], bf[j],
						       acc[i][j]);
		}
		__syncthreads();
	}

	/* Each fragment goes through the warp's 16 x 16 float scratch, so
	 * edges are checked and values rounded to the output type. */
#pragma unroll
	for (int i = 0; i < 4; i++) {
#pragma unroll
		for (int j = 0; j < 2; j++) {
			wmma::store_matrix_sync(Cs[warp], acc[i][j], 16,
						wmma::mem_row_major);
			__syncwarp();
			for (int e = lane; e < 256; e += 32) {
				uint64_t row = m0 + wm * 64 + i * 16 + e / 16;
				uint64_t col = n0 + wn * 32 + j * 16 + e % 16;
				if (row < p.m && col < p.n)
					c[row * p.ldc + col] =
						Elem<T>::store(Cs[warp][e]);
			}
			__syncwarp();
		}
	}
}

/*===----------------------------------------------------------------------===
 * The kernels: wafer_matmul_<dtype>_<variant>
 *===----------------------------------------------------------------------===*/

#define TILED(dtype, T, variant, BM, BN, BK, TM, TN, MIN_BLOCKS)               \
	extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)      \
		wafer_matmul_##dtype##_##variant(void *c, const void *a,       \
						 const void *b,                \
						 struct cuda_matmul_args p)    \
	{                                                                      \
		tiled<T, BM, BN, BK, TM, TN>(c, a, b, p);                      \
	}

#define WMMA(dtype, T, variant)                                                \
	extern "C" __global__ void __launch_bounds__(THREADS)                  \
		wafer_matmul_##dtype##_##variant(void *c, const void *a,       \
						 const void *b,                \
						 struct cuda_matmul_args p)    \
	{                                                                      \
		wmma_tile<T>(c, a, b, p);                                      \
	}

/* One kernel per layout: _nn, _nt, _tn, _tt (transpose of A, of B).
 * 128-wide tiles keep their 64 accumulators and prefetch in registers at
 * one block a multiprocessor (up to 255 registers, no spills); 64-wide
 * ones fit two blocks in 128. */
#define REG1(dtype, T, variant, BN, BK, layout, TA, TB)                        \
	extern "C" __global__ void __launch_bounds__(THREADS, 3 - BN / 64)     \
		wafer_matmul_##dtype##_##variant##_##layout(                   \
			void *c, const void *a, const void *b,                 \
			struct cuda_matmul_args p)                             \
	{                                                                      \
		reg_tile<T, BN, BK, TA, TB>(c, a, b, p);                       \
	}
#define REG(dtype, T, variant, BN, BK)                                         \
	REG1(dtype, T, variant, BN, BK, nn, false, false)                      \
	REG1(dtype, T, variant, BN, BK, nt, false, true)                       \
	REG1(dtype, T, variant, BN, BK, tn, true, false)                       \
	REG1(dtype, T, variant, BN, BK, tt, true, true)

/* Warp-tiled, f32 only, one kernel per layout like REG: 128 x 128 tiles
 * fit two blocks a multiprocessor in 128 registers; 128 x 256 ones (8 x
 * 16 results a thread) run one. */
#define WARP1(variant, BM, BN, BK, WM, WN, MI, NI, MIN_BLOCKS, layout, TA, TB) \
	extern "C" __global__ void __launch_bounds__(THREADS, MIN_BLOCKS)      \
		wafer_matmul_f32_##variant##_##layout(                         \
			void *c, const void *a, const void *b,                 \
			struct cuda_matmul_args p)                             \
	{                                                                      \
		warp_tile<BM, BN, BK, WM, WN, MI, NI, TA, TB>(c, a, b, p);     \
	}
#define WARP(variant, ...)                                                     \
	WARP1(variant, __VA_ARGS__, nn, false, false)                          \
	WARP1(variant, __VA_ARGS__, nt, false, true)                           \
	WARP1(variant, __VA_ARGS__, tn, true, false)                           \
	WARP1(variant, __VA_ARGS__, tt, true, true)

/* Keep these in step with the matmul entries of kernels.c (tile sizes). */
TILED(f32, F32, tile64, 64, 64, 16, 4, 4, 1)
TILED(f32, F32, tile128, 128, 128, 8, 8, 8, 1)
REG(f32, F32, reg128, 128, 8)
REG(f32, F32, reg128k16, 128, 16)
REG(f32, F32, reg128x64, 64, 8)
WARP(warp128, 128, 128, 8, 64, 32, 2, 2, 2)
WARP(warp128x256, 128, 256, 16, 32, 128, 2, 4, 1)
WMMA(f32, F32, tf32)
TILED(f16, F16, tile64, 64, 64, 16, 4, 4, 1)
TILED(f16, F16, tile128, 128, 128, 8, 8, 8, 1)
REG(f16, F16, reg128, 128, 8)
REG(f16, F16, reg128x64, 64, 8)
WMMA(f16, F16, wmma)
TILED(bf16, BF16, tile64, 64, 64, 16, 4, 4, 1)
TILED(bf16, BF16, tile128, 128, 128, 8, 8, 8, 1)
REG(bf16, BF16, reg128, 128, 8)
REG(bf16, BF16, reg128x64, 64, 8)
WMMA(bf16, BF16, wmma)
