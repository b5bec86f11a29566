// SPDX-License-Identifier: MIT
/*
 * GEMM micro-kernels: C[mr x nr] (+)= A_panel * B_panel over kc, FP32 with
 * FP32 accumulation. The A panel is one sequential stream (measured 4-8 %
 * faster than mr separate rows): kc columns of mr floats (a[k * mr + i]),
 * or for the avx512 and avx2 kernels blocks of 16 columns (te.h, a_kblock), and
 * the B panel kc rows of nr floats, ldb floats apart (ldb = nr for packed
 * panels). B rows and C rows (ldc apart) are 64-byte aligned. The BF16
 * pair kernels (gemm_bf16.c) are listed here too.
 *
 * Each kernel carries its own target attribute, so this file needs no
 * special compiler flags. The kernel is chosen at run time by measured
 * speed among those the CPU has (__builtin_cpu_supports) and that pass
 * their self-test, not by the widest ISA: Zen 4 runs 512-bit FMAs as two
 * halves, and VDPBF16PS runs at half the FP32 FMA rate on the Intel Xeon
 * measured here (Documentation/tensor-engine.rst). MAIA_TE_ISA=<name> in
 * the environment forces one (if the CPU has it), for tests and benchmarks.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "te.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

static void kern_portable(size_t kc, const void *ap, const void *bp, size_t ldb, float *c,
			  size_t ldc, int accumulate)
{
	const float *a = ap, *b = bp;
	float acc[6][16];
	size_t k;
	int i, j;

	for (i = 0; i < 6; i++)
		for (j = 0; j < 16; j++)
			acc[i][j] = accumulate ? c[i * ldc + j] : 0.0f;
	for (k = 0; k < kc; k++, b += ldb, a += 6)
		for (i = 0; i < 6; i++)
			for (j = 0; j < 16; j++)
				acc[i][j] += a[i] * b[j];
	for (i = 0; i < 6; i++)
		for (j = 0; j < 16; j++)
			c[i * ldc + j] = acc[i][j];
}

/* A panel from mr rows of kc floats (ld apart): panel[k * mr + i] = rows[i * ld + k]. */
static void pack_a_portable(const float *rows, size_t ld, size_t kc, unsigned int mr,
			    float *panel)
{
	for (size_t k = 0; k < kc; k++)
		for (unsigned int i = 0; i < mr; i++)
			panel[k * mr + i] = rows[i * ld + k];
}

#if HAVE_X86
/*
 * Eight columns k..k+7 of n = 6 or 8 rows (ld apart) to out + j * stride,
 * j = 0..7: an 8 x 8 transpose in registers (rows past n are zero), one
 * store per column, written out in full so that nothing spills. With n = 6
 * each store's last two floats land on the next column's first rows, which
 * the caller writes afterwards; the last column's store is masked. A scalar
 * loop spent 12-15 % of a 512^3 GEMM here.
 */
__attribute__((target("avx2"), always_inline))
static inline void tr8_avx2(const float *r, size_t ld, const unsigned int n, float *out,
			    size_t stride)
{
	const __m256i keep6 = _mm256_setr_epi32(-1, -1, -1, -1, -1, -1, 0, 0);
	const __m256 zero = _mm256_setzero_ps();
	__m256 r0 = _mm256_loadu_ps(r), r1 = _mm256_loadu_ps(r + ld);
	__m256 r2 = _mm256_loadu_ps(r + 2 * ld), r3 = _mm256_loadu_ps(r + 3 * ld);
	__m256 r4 = _mm256_loadu_ps(r + 4 * ld), r5 = _mm256_loadu_ps(r + 5 * ld);
	__m256 r6 = n == 8 ? _mm256_loadu_ps(r + 6 * ld) : zero;
	__m256 r7 = n == 8 ? _mm256_loadu_ps(r + 7 * ld) : zero;
	__m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
	__m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
	__m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
	__m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
	__m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xee);
	__m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xee);
	__m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xee);
	__m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xee);

	_mm256_storeu_ps(out + 0 * stride, _mm256_permute2f128_ps(s0, s4, 0x20));
	_mm256_storeu_ps(out + 1 * stride, _mm256_permute2f128_ps(s1, s5, 0x20));
	_mm256_storeu_ps(out + 2 * stride, _mm256_permute2f128_ps(s2, s6, 0x20));
	_mm256_storeu_ps(out + 3 * stride, _mm256_permute2f128_ps(s3, s7, 0x20));
	_mm256_storeu_ps(out + 4 * stride, _mm256_permute2f128_ps(s0, s4, 0x31));
	_mm256_storeu_ps(out + 5 * stride, _mm256_permute2f128_ps(s1, s5, 0x31));
	_mm256_storeu_ps(out + 6 * stride, _mm256_permute2f128_ps(s2, s6, 0x31));
	if (n == 8)
		_mm256_storeu_ps(out + 7 * stride, _mm256_permute2f128_ps(s3, s7, 0x31));
	else
		_mm256_maskstore_ps(out + 7 * stride, keep6, _mm256_permute2f128_ps(s3, s7, 0x31));
}

/* The A packer for mr = 6, 8 or 14 (rows 8..13 first: their stores spill onto rows 0..1). */
__attribute__((target("avx2")))
static void pack_a_avx2(const float *rows, size_t ld, size_t kc, unsigned int mr, float *panel)
{
	size_t k = 0;

	if (mr != 6 && mr != 8 && mr != 14) {
		pack_a_portable(rows, ld, kc, mr, panel);
		return;
	}
	for (; k + 8 <= kc; k += 8) {
		float *out = panel + k * mr;

		if (mr == 6) {
			tr8_avx2(rows + k, ld, 6, out, 6);
		} else if (mr == 8) {
			tr8_avx2(rows + k, ld, 8, out, 8);
		} else {
			tr8_avx2(rows + 8 * ld + k, ld, 6, out + 8, 14);
			tr8_avx2(rows + k, ld, 8, out, 14);
		}
	}
	if (k < kc)
		pack_a_portable(rows + k, ld, kc - k, mr, panel + k * mr);
}
#endif

/*
 * The FP32 kernels take A in blocks of GEMM_KB k (pack_a_k16(),
 * pack_a_k16_avx2()): A(i, k) at a[i * 16 + k % 16] within its block, an
 * offset their unrolled loops know at compile time, and a packer that
 * copies row pieces as they are instead of transposing them.
 */
#define GEMM_KB		16

/* The prefetch stream's state in locals (PF_LOAD), one line per PF_STEP, back (PF_SAVE). */
#define PF_LOAD(pf)								\
	const char *pp_ = (pf) ? (pf)->p : NULL;				\
	size_t pn_ = (pf) ? (pf)->n : 0, prs_ = (pf) ? (pf)->rs : 0;		\
	unsigned int pl_ = (pf) ? (pf)->line : 0, plines_ = (pf) ? (pf)->lines : 0
#define PF_STEP()								\
	do {									\
		if (pn_) {							\
			__builtin_prefetch(pp_ + (size_t)pl_ * 64, 0, 2);	\
			pn_--;							\
			if (++pl_ == plines_) {					\
				pl_ = 0;					\
				pp_ += prs_;					\
			}							\
		}								\
	} while (0)
#define PF_SAVE(pf)								\
	do {									\
		if (pf) {							\
			(pf)->p = pp_;						\
			(pf)->n = pn_;						\
			(pf)->line = pl_;					\
		}								\
	} while (0)

#if HAVE_X86
/*
 * 6 x 16: 12 ymm accumulators, two B vectors, A broadcast from memory (15
 * of the 16 registers). As kern_avx512 (below): the accumulators start at
 * zero, C is added at the end, and C's 6 lines (one per row) are fetched,
 * whether added to or overwritten, one per k block when there are more
 * blocks than rows, else at the start.
 * A in 16-k blocks: the k-major panel this replaced took 8 x 8 transposes
 * per 8 k at every column block.
 */
#define AVX2_MR		6

/* One k of rows (<= 6) rows of the 6 x 16 kernel: A(i, k) at a[i * w], B's row at b. */
#define AVX2_STEP(a, w, b, rows)						\
	do {									\
		__m256 b0_ = _mm256_load_ps(b), b1_ = _mm256_load_ps((b) + 8);	\
		_Pragma("GCC unroll 6")						\
		for (int i_ = 0; i_ < (rows); i_++) {				\
			__m256 ai_ = _mm256_broadcast_ss((a) + i_ * (w));	\
										\
			acc[i_][0] = _mm256_fmadd_ps(ai_, b0_, acc[i_][0]);	\
			acc[i_][1] = _mm256_fmadd_ps(ai_, b1_, acc[i_][1]);	\
		}								\
	} while (0)

/* The first rows rows of the tile (rows a constant once inlined; the rest not read or written). */
__attribute__((target("avx2,fma"), always_inline))
static inline void avx2_tile(size_t kc, const float *a, const float *b, size_t ldb, float *c,
			     size_t ldc, int accumulate, const int rows, struct fw_gemm_pf *pf)
{
	PF_LOAD(pf);
	__m256 acc[AVX2_MR][2];
	size_t k, kk, w, blk = 0;
	bool spread = kc / GEMM_KB > (size_t)rows;
	int i;

#pragma GCC unroll 6
	for (i = 0; i < rows; i++) {
		if (!spread)
			_mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
		acc[i][0] = _mm256_setzero_ps();
		acc[i][1] = _mm256_setzero_ps();
	}
	for (k = 0; k + GEMM_KB <= kc; k += GEMM_KB, a += GEMM_KB * AVX2_MR, blk++) {
		if (spread && blk < (size_t)rows)
			_mm_prefetch((const char *)(c + blk * ldc), _MM_HINT_T0);
#pragma GCC unroll 16
		for (kk = 0; kk < GEMM_KB; kk++, b += ldb) {
			AVX2_STEP(a + kk, GEMM_KB, b, rows);
			PF_STEP();
		}
	}
	for (kk = 0, w = kc - k; kk < w; kk++, b += ldb) {	/* the last block, w < 16 */
		AVX2_STEP(a + kk, w, b, rows);
		PF_STEP();
	}
	PF_SAVE(pf);
#pragma GCC unroll 6
	for (i = 0; i < rows; i++) {
		if (accumulate) {
			acc[i][0] = _mm256_add_ps(acc[i][0], _mm256_load_ps(c + i * ldc));
			acc[i][1] = _mm256_add_ps(acc[i][1], _mm256_load_ps(c + i * ldc + 8));
		}
		_mm256_store_ps(c + i * ldc, acc[i][0]);
		_mm256_store_ps(c + i * ldc + 8, acc[i][1]);
	}
}

__attribute__((target("avx2,fma")))
static void kern_avx2(size_t kc, const void *ap, const void *bp, size_t ldb, float *c,
		      size_t ldc, int accumulate)
{
	avx2_tile(kc, ap, bp, ldb, c, ldc, accumulate, AVX2_MR, NULL);
}

/*
 * A tile cut by the block's last rows: only its rows rows computed (32 x N
 * in 6-row tiles is 36 rows of work otherwise; 2 rows take 4 of the full
 * tile's 6 cycles per k, their 4 FMA chains bound by latency).
 */
__attribute__((target("avx2,fma")))
static void kern_avx2_pf(size_t kc, const void *ap, const void *bp, size_t ldb, float *c,
			 size_t ldc, int accumulate, unsigned int rows, struct fw_gemm_pf *pf)
{
	switch (rows) {
	case 1:
		avx2_tile(kc, ap, bp, ldb, c, ldc, accumulate, 1, pf);
		break;
	case 2:
		avx2_tile(kc, ap, bp, ldb, c, ldc, accumulate, 2, pf);
		break;
	case 3:
		avx2_tile(kc, ap, bp, ldb, c, ldc, accumulate, 3, pf);
		break;
	case 4:
		avx2_tile(kc, ap, bp, ldb, c, ldc, accumulate, 4, pf);
		break;
	case 5:
		avx2_tile(kc, ap, bp, ldb, c, ldc, accumulate, 5, pf);
		break;
	default:
		avx2_tile(kc, ap, bp, ldb, c, ldc, accumulate, AVX2_MR, pf);
		break;
	}
}

__attribute__((target("avx2,fma")))
static void kern_avx2_rows(size_t kc, const void *ap, const void *bp, size_t ldb, float *c,
			   size_t ldc, int accumulate, unsigned int rows)
{
	kern_avx2_pf(kc, ap, bp, ldb, c, ldc, accumulate, rows, NULL);
}

/*
 * rows (1..3) rows of two 16-column tiles, the second's B at b + bnext and
 * its C at c + 16: 4 to 12 FMA chains where one tile has 2 to 6, which
 * with the FMA's 4-cycle latency on two ports ran 1 and 2 rows at a
 * quarter and half of the full tile's rate per row (a 32-row block is 5
 * full tiles and 2 rows). Each B vector is loaded and used by all rows
 * before the next: 12 accumulators, 3 A broadcasts and 1 B vector are
 * the 16 registers. Per element the same FMAs in the same k order as
 * avx2_tile(), so the same results.
 */
__attribute__((target("avx2,fma"), always_inline))
static inline void avx2_tile2(size_t kc, const float *a, const float *b, size_t ldb,
			      size_t bnext, float *c, size_t ldc, int accumulate, const int rows,
			      struct fw_gemm_pf *pf)
{
	PF_LOAD(pf);
	__m256 acc[3][4];
	size_t k, kk, w, blk = 0;
	bool spread = kc / GEMM_KB > (size_t)rows;
	int i, v;

#pragma GCC unroll 3
	for (i = 0; i < rows; i++) {
		if (!spread) {
			_mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
			_mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
		}
#pragma GCC unroll 4
		for (v = 0; v < 4; v++)
			acc[i][v] = _mm256_setzero_ps();
	}
#define AVX2_STEP2(a, w, b, rows)							\
	do {										\
		__m256 ai_[3];								\
		_Pragma("GCC unroll 3")							\
		for (int i_ = 0; i_ < (rows); i_++)					\
			ai_[i_] = _mm256_broadcast_ss((a) + i_ * (w));			\
		_Pragma("GCC unroll 4")							\
		for (int v_ = 0; v_ < 4; v_++) {					\
			__m256 bv_ = _mm256_load_ps((b) + (v_ / 2) * bnext + (v_ % 2) * 8); \
			_Pragma("GCC unroll 3")						\
			for (int i_ = 0; i_ < (rows); i_++)				\
				acc[i_][v_] = _mm256_fmadd_ps(ai_[i_], bv_, acc[i_][v_]); \
		}									\
	} while (0)
	for (k = 0; k + GEMM_KB <= kc; k += GEMM_KB, a += GEMM_KB * AVX2_MR, blk++) {
		if (spread && blk < 2 * (size_t)rows)
			_mm_prefetch((const char *)(c + blk / 2 * ldc + blk % 2 * 16), _MM_HINT_T0);
#pragma GCC unroll 16
		for (kk = 0; kk < GEMM_KB; kk++, b += ldb) {
			AVX2_STEP2(a + kk, GEMM_KB, b, rows);
			PF_STEP();
		}
	}
	for (kk = 0, w = kc - k; kk < w; kk++, b += ldb) {	/* the last block, w < 16 */
		AVX2_STEP2(a + kk, w, b, rows);
		PF_STEP();
	}
	PF_SAVE(pf);
#undef AVX2_STEP2
#pragma GCC unroll 3
	for (i = 0; i < rows; i++) {
#pragma GCC unroll 4
		for (v = 0; v < 4; v++) {
			float *cv = c + i * ldc + v * 8;

			if (accumulate)
				acc[i][v] = _mm256_add_ps(acc[i][v], _mm256_load_ps(cv));
			_mm256_store_ps(cv, acc[i][v]);
		}
	}
}

__attribute__((target("avx2,fma")))
static void kern_avx2_rows2(size_t kc, const void *ap, const void *bp, size_t ldb, size_t bnext,
			    float *c, size_t ldc, int accumulate, unsigned int rows,
			    struct fw_gemm_pf *pf)
{
	switch (rows) {
	case 1:
		avx2_tile2(kc, ap, bp, ldb, bnext, c, ldc, accumulate, 1, pf);
		break;
	case 2:
		avx2_tile2(kc, ap, bp, ldb, bnext, c, ldc, accumulate, 2, pf);
		break;
	case 3:
		avx2_tile2(kc, ap, bp, ldb, bnext, c, ldc, accumulate, 3, pf);
		break;
	default:	/* 4 and 5 rows keep a tile's FMA ports busy on their own */
		kern_avx2_pf(kc, ap, bp, ldb, c, ldc, accumulate, rows, pf);
		kern_avx2_pf(kc, ap, (const float *)bp + bnext, ldb, c + 16, ldc, accumulate, rows,
			     pf);
		break;
	}
}

/* pack_a_k16() (below) with 32-byte copies, for kern_avx2. */
__attribute__((target("avx2")))
static void pack_a_k16_avx2(const float *rows, size_t ld, size_t kc, unsigned int mr,
			    float *panel)
{
	size_t k = 0;

	for (; k + GEMM_KB <= kc; k += GEMM_KB, panel += GEMM_KB * mr)
		for (unsigned int i = 0; i < mr; i++) {
			_mm256_storeu_ps(panel + i * GEMM_KB, _mm256_loadu_ps(rows + i * ld + k));
			_mm256_storeu_ps(panel + i * GEMM_KB + 8,
					 _mm256_loadu_ps(rows + i * ld + k + 8));
		}
	for (unsigned int i = 0; k < kc && i < mr; i++)
		memcpy(panel + i * (kc - k), rows + i * ld + k, (kc - k) * sizeof(float));
}

/*
 * 14 x 32: 28 zmm accumulators, two B vectors, A broadcast from memory:
 * 28 FMAs per 16 loads, enough independent FMAs to keep two 512-bit FMA
 * ports busy (4-cycle latency). Written with unrolled loops over arrays
 * that the compiler keeps in registers: as plain loops at -O2 the
 * accumulators lived in memory and the kernel ran at 40 % of peak.
 * The accumulators start at zero and C is added at the end, its lines
 * prefetched first: when C is in place in device memory (gemm.c) its
 * tile is a miss that loads at the start would wait for before the
 * first FMA; this way it arrives while the k loop runs (4096^3 FP32,
 * one thread: 3 % faster). C + (sum over the slice) is one more order
 * of the same rounded adds.
 *
 * A comes in blocks of 16 k (pack_a_k16()): A(i, k) at a[i * 16 + k % 16]
 * within its block, an offset the unrolled loop knows at compile time.
 * With more k blocks than rows, C's rows are fetched one per block rather
 * than all 28 lines at the start: those held the L1's fill buffers (16 on
 * recent Intel cores) for a memory latency while B's panel streams in
 * from L2 through the same buffers (one thread, C in place, engine /
 * sgemm: 4096^3 0.966 -> 0.974, 2048^3 0.973 -> 0.990, medians of three).
 * C's lines are fetched so when the kernel overwrites C too (the first K
 * slice): otherwise its 28 stores at the end each wait for their line
 * (AMD Zen 4, one thread, engine / sgemm, medians of four to six pairs:
 * 4096x4096x256 avx512 0.976 -> 0.996, avx2 0.988 -> 1.024; 32x4096x4096
 * avx512 1.080 -> 1.121, avx2 0.984 -> 1.001; the square shapes unmoved).
 */
#define AVX512_MR	14
#define AVX512_KB	GEMM_KB

/* One k of rows (<= 14) rows of the 14 x 32 kernel: A(i, k) at a[i * w], B's row at b. */
#define AVX512_STEP(a, w, b, rows)						\
	do {									\
		__m512 b0_ = _mm512_load_ps(b), b1_ = _mm512_load_ps((b) + 16);\
		_Pragma("GCC unroll 14")					\
		for (int i_ = 0; i_ < (rows); i_++) {				\
			__m512 ai_ = _mm512_set1_ps((a)[i_ * (w)]);		\
										\
			acc[i_][0] = _mm512_fmadd_ps(ai_, b0_, acc[i_][0]);	\
			acc[i_][1] = _mm512_fmadd_ps(ai_, b1_, acc[i_][1]);	\
		}								\
	} while (0)

/* The first rows rows of the tile (rows a constant once inlined; the rest not read or written). */
__attribute__((target("avx512f"), always_inline))
static inline void avx512_tile(size_t kc, const float *a, const float *b, size_t ldb, float *c,
			       size_t ldc, int accumulate, const int rows, struct fw_gemm_pf *pf)
{
	PF_LOAD(pf);
	__m512 acc[AVX512_MR][2];
	size_t k, kk, w;
	int i;

	/* C's rows fetched one per k block when there are enough blocks (above) */
	bool spread = kc / AVX512_KB > (size_t)rows;
	size_t blk = 0;

#pragma GCC unroll 14
	for (i = 0; i < rows; i++) {
		if (!spread) {
			_mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
			_mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
		}
		acc[i][0] = _mm512_setzero_ps();
		acc[i][1] = _mm512_setzero_ps();
	}
	for (k = 0; k + AVX512_KB <= kc; k += AVX512_KB, a += AVX512_KB * AVX512_MR, blk++) {
		if (spread && blk < (size_t)rows) {
			_mm_prefetch((const char *)(c + blk * ldc), _MM_HINT_T0);
			_mm_prefetch((const char *)(c + blk * ldc + 16), _MM_HINT_T0);
		}
#pragma GCC unroll 16
		for (kk = 0; kk < AVX512_KB; kk++, b += ldb) {
			AVX512_STEP(a + kk, AVX512_KB, b, rows);
			PF_STEP();
		}
	}
	for (kk = 0, w = kc - k; kk < w; kk++, b += ldb) {	/* the last block, w < 16 */
		AVX512_STEP(a + kk, w, b, rows);
		PF_STEP();
	}
	PF_SAVE(pf);
#pragma GCC unroll 14
	for (i = 0; i < rows; i++) {
		if (accumulate) {
			acc[i][0] = _mm512_add_ps(acc[i][0], _mm512_load_ps(c + i * ldc));
			acc[i][1] = _mm512_add_ps(acc[i][1], _mm512_load_ps(c + i * ldc + 16));
		}
		_mm512_store_ps(c + i * ldc, acc[i][0]);
		_mm512_store_ps(c + i * ldc + 16, acc[i][1]);
	}
}

__attribute__((target("avx512f")))
static void kern_avx512(size_t kc, const void *ap, const void *bp, size_t ldb, float *c,
			size_t ldc, int accumulate)
{
	avx512_tile(kc, ap, bp, ldb, c, ldc, accumulate, AVX512_MR, NULL);
}

/*
 * A tile cut by the block's last rows: only its rows rows computed, the
 * same FMAs in the same order for each (a 32-row block in 14-row tiles was
 * 42 rows of work; r rows take max(r, 4) of the full tile's 14 cycles per
 * k, 2 r FMA chains against the FMA's 4-cycle latency on two ports).
 */
__attribute__((target("avx512f")))
static void kern_avx512_pf(size_t kc, const void *ap, const void *bp, size_t ldb, float *c,
			   size_t ldc, int accumulate, unsigned int rows, struct fw_gemm_pf *pf)
{
	switch (rows) {
#define AVX512_ROWS(r_)								\
	case r_:								\
		avx512_tile(kc, ap, bp, ldb, c, ldc, accumulate, r_, pf);		\
		break
	AVX512_ROWS(1); AVX512_ROWS(2); AVX512_ROWS(3); AVX512_ROWS(4); AVX512_ROWS(5);
	AVX512_ROWS(6); AVX512_ROWS(7); AVX512_ROWS(8); AVX512_ROWS(9); AVX512_ROWS(10);
	AVX512_ROWS(11); AVX512_ROWS(12); AVX512_ROWS(13);
#undef AVX512_ROWS
	default:
		avx512_tile(kc, ap, bp, ldb, c, ldc, accumulate, AVX512_MR, pf);
		break;
	}
}

__attribute__((target("avx512f")))
static void kern_avx512_rows(size_t kc, const void *ap, const void *bp, size_t ldb, float *c,
			     size_t ldc, int accumulate, unsigned int rows)
{
	kern_avx512_pf(kc, ap, bp, ldb, c, ldc, accumulate, rows, NULL);
}

/*
 * kern_avx512's A from mr rows of kc floats (ld apart): k in blocks of 16,
 * the last w = kc % 16 wide if not whole, each block mr rows of its width:
 * A(i, k) at panel[k0 * mr + i * w + k - k0] (k0 the block's first k).
 * Row pieces copied as they are: the k-major panel took 8 x 8 transposes,
 * 2.4 % of a 4096^3 GEMM on one thread with A in cache.
 */
__attribute__((target("avx512f")))
static void pack_a_k16(const float *rows, size_t ld, size_t kc, unsigned int mr, float *panel)
{
	size_t k = 0;

	for (; k + AVX512_KB <= kc; k += AVX512_KB, panel += AVX512_KB * mr)
		for (unsigned int i = 0; i < mr; i++)
			_mm512_storeu_ps(panel + i * AVX512_KB, _mm512_loadu_ps(rows + i * ld + k));
	for (unsigned int i = 0; k < kc && i < mr; i++)
		memcpy(panel + i * (kc - k), rows + i * ld + k, (kc - k) * sizeof(float));
}
#endif

/* The order only breaks ties in speed; "portable" is the last but one. */
static const struct fw_gemm_kernel kernels[] = {
#if HAVE_X86
	{ "avx512", AVX512_MR, 32, kern_avx512, pack_a_k16, 0, NULL, false, AVX512_KB,
	  kern_avx512_rows, NULL, kern_avx512_pf },
	{ "avx2", AVX2_MR, 16, kern_avx2, pack_a_k16_avx2, 0, NULL, false, GEMM_KB,
	  kern_avx2_rows, kern_avx2_rows2, kern_avx2_pf },
	{ "avx512bf16", FW_GEMM_BF16_MR, FW_GEMM_BF16_NR, fw_gemm_bf16_avx512, pack_a_avx2, 2,
	  fw_gemm_to_pairs_avx512, false, 0, fw_gemm_bf16_avx512_rows, NULL, NULL },
#endif
#if HAVE_X86 && defined(__linux__)
	{ "amx", 32, 32, fw_gemm_amx, fw_gemm_amx_pack_a, 32, fw_gemm_amx_to_pairs, true, 0,
	  NULL, NULL, NULL },
#endif
	{ "portable", 6, 16, kern_portable, pack_a_portable, 0, NULL, false, 0, NULL, NULL,
	  NULL },
	{ "portable-bf16", FW_GEMM_BF16_MR, FW_GEMM_BF16_NR, fw_gemm_bf16_portable,
	  pack_a_portable, 2, fw_gemm_to_pairs_portable, false, 0, NULL, NULL, NULL },
};

#define NKERNELS	(sizeof(kernels) / sizeof(kernels[0]))

bool fw_gemm_kernel_usable(const struct fw_gemm_kernel *k)
{
#if HAVE_X86
	__builtin_cpu_init();
	if (!strcmp(k->name, "avx512"))
		return __builtin_cpu_supports("avx512f");
	if (!strcmp(k->name, "avx2"))
		return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
	if (!strcmp(k->name, "avx512bf16"))	/* its A packer is the AVX2 one */
		return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bf16") &&
		       __builtin_cpu_supports("avx2");
	if (!strcmp(k->name, "amx"))	/* its packers use AVX-512F */
		return fw_gemm_amx_usable();
#endif
	return !strcmp(k->name, "portable") || !strcmp(k->name, "portable-bf16");
}

const struct fw_gemm_kernel *fw_gemm_kernel_list(size_t *n)
{
	*n = NKERNELS;
	return kernels;
}

/*
 * A panels (npanels of mr rows x kc, rows[p][i * kc + k]) and B (kc rows of
 * w floats, ldb apart) in k's format: a_out and b_out are FP32 (a_out
 * packed by k->pack_a, b_out = b) or BF16 (a16, b16). Returns the ldb the
 * kernel takes.
 */
static size_t to_format(const struct fw_gemm_kernel *k, const float *rows, size_t npanels,
			size_t kc, const float *b, size_t ldb, unsigned int w, float *a32,
			void **a_out, const void **b_out, uint16_t *a16, uint16_t *b16)
{
	size_t kq = k->kpair ? (kc + k->kpair - 1) / k->kpair * k->kpair : kc;

	for (size_t p = 0; p < npanels; p++) {
		const float *r = rows + p * k->mr * kc;

		if (k->a_rows) {
			k->pack_a(r, kc, kc, k->mr, (float *)(a16 + p * k->mr * kq));
			continue;
		}
		k->pack_a(r, kc, kc, k->mr, a32 + p * k->mr * kc);
		if (k->kpair)
			k->to_pairs(a32 + p * k->mr * kc, k->mr, kc, k->mr, a16 + p * k->mr * kq);
	}
	if (!k->kpair) {
		*a_out = a32;
		*b_out = b;
		return ldb;
	}
	k->to_pairs(b, ldb, kc, w, b16);
	*a_out = a16;
	*b_out = b16;
	return 2 * (size_t)w;
}

/* The byte offset in B of column col: FP32 or a BF16 pair per k. */
static size_t b_col(const struct fw_gemm_kernel *k, size_t col)
{
	return k->kpair ? col * 2 * sizeof(uint16_t) : col * sizeof(float);
}

/*
 * Run a kernel once on small integers (exact in FP32 and in BF16) and
 * compare with a plain loop, both without and with accumulation, its
 * packers included (KC is odd: whole and partial column groups, a lone
 * last k of a pair). A kernel that disagrees is never used: a wrong GEMM
 * is worse than a slow one.
 */
static bool kernel_selftest(const struct fw_gemm_kernel *k)
{
	enum { KC = 37, KQ = 64, MAXR = 32, MAXC = 32, LDC = 2 * MAXC, LDB = MAXC + 16 };
	float rows[MAXR * KC];
	float a[MAXR * KC + 8] __attribute__((aligned(64)));
	float b[LDB * KC] __attribute__((aligned(64)));
	float c[MAXR * LDC] __attribute__((aligned(64)));
	uint16_t a16[MAXR * KQ] __attribute__((aligned(64)));	/* k padded to 2 or 32 */
	uint16_t b16[LDB * KQ] __attribute__((aligned(64)));
	const void *bk;
	void *ak;
	size_t ldb;
	unsigned int i, j, kk;

	if (k->mr > MAXR || k->nr > MAXC)
		return false;
	for (i = 0; i < k->mr * KC; i++)
		rows[i] = (float)((int)(i * 7 % 13) - 6);
	a[k->mr * KC] = 12345.0f;	/* the packer must not write past the panel */
	for (i = 0; i < LDB * KC; i++)
		b[i] = (float)((int)(i * 5 % 11) - 5);
	ldb = to_format(k, rows, 1, KC, b, LDB, LDB, a, &ak, &bk, a16, b16);
	if (a[k->mr * KC] != 12345.0f)
		return false;
	for (i = 0; i < MAXR * LDC; i++)
		c[i] = (float)(i % 9);
	for (int acc = 1; acc >= 0; acc--) {
		k->fn(KC, ak, bk, ldb, c, LDC, acc);
		for (i = 0; i < k->mr; i++)
			for (j = 0; j < k->nr; j++) {
				float want = acc ? (float)((i * LDC + j) % 9) : 0.0f;

				for (kk = 0; kk < KC; kk++)
					want += rows[i * KC + kk] * b[kk * LDB + j];
				if (c[i * LDC + j] != want)
					return false;
			}
		for (i = 0; i < MAXR * LDC; i++)	/* back to the start for acc = 0 */
			c[i] = (float)(i % 9);
	}
	/* the short tiles: their rows as above, accumulating, the next row untouched */
	for (unsigned int nrows = 1; k->fn_rows && nrows < k->mr; nrows++) {
		k->fn_rows(KC, ak, bk, ldb, c, LDC, 1, nrows);
		for (i = 0; i <= nrows; i++)
			for (j = 0; j < k->nr; j++) {
				float want = (float)((i * LDC + j) % 9);

				for (kk = 0; i < nrows && kk < KC; kk++)
					want += rows[i * KC + kk] * b[kk * LDB + j];
				if (c[i * LDC + j] != want)
					return false;
			}
		for (i = 0; i < MAXR * LDC; i++)
			c[i] = (float)(i % 9);
	}
	/* and two column tiles at once: B's second tile nr columns on, C's too */
	for (unsigned int nrows = 1; k->fn_rows2 && nrows < k->mr; nrows++) {
		k->fn_rows2(KC, ak, bk, ldb, k->nr, c, LDC, 1, nrows, NULL);
		for (i = 0; i <= nrows; i++)
			for (j = 0; j <= 2 * k->nr && j < LDC; j++) {
				float want = (float)((i * LDC + j) % 9);

				for (kk = 0; i < nrows && j < 2 * k->nr && kk < KC; kk++)
					want += rows[i * KC + kk] * b[kk * LDB + j];
				if (c[i * LDC + j] != want)
					return false;
			}
		for (i = 0; i < MAXR * LDC; i++)
			c[i] = (float)(i % 9);
	}
	return true;
}

static bool kernel_ok(const struct fw_gemm_kernel *k)
{
	return fw_gemm_kernel_usable(k) && kernel_selftest(k);
}

static double seconds_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/*
 * A kernel's speed in FLOP/s on one thread: the best of three runs over
 * packed panels that stay in cache (KC deep, a few C tiles wide), about a
 * millisecond each. Only the ranking matters; best-of-three keeps a busy
 * host's interruptions out of it.
 */
double fw_gemm_kernel_speed(const struct fw_gemm_kernel *k)
{
	enum { KC = 256, LDB = 64, PANELS = 16, ITERS = 8, RUNS = 3, MAXR = 32 };
	size_t a_len = (size_t)k->mr * KC * PANELS, cols = LDB / k->nr * k->nr, ldb;
	float *rows = aligned_alloc(64, a_len * sizeof(float));
	float *a = aligned_alloc(64, a_len * sizeof(float));
	float *b = aligned_alloc(64, (size_t)LDB * KC * sizeof(float));
	float *c = aligned_alloc(64, (size_t)MAXR * LDB * PANELS * sizeof(float));
	uint16_t *a16 = aligned_alloc(64, a_len * sizeof(uint16_t));
	uint16_t *b16 = aligned_alloc(64, (size_t)LDB * KC * sizeof(uint16_t));
	double best = 0.0;
	const void *bk;
	void *ak;

	if (rows && a && b && c && a16 && b16 && k->mr <= MAXR) {
		for (size_t i = 0; i < a_len; i++)
			rows[i] = (float)(i % 7);
		for (size_t i = 0; i < (size_t)LDB * KC; i++)
			b[i] = (float)(i % 5);
		memset(c, 0, (size_t)MAXR * LDB * PANELS * sizeof(float));
		ldb = to_format(k, rows, PANELS, KC, b, LDB, LDB, a, &ak, &bk, a16, b16);
		for (int r = 0; r < RUNS; r++) {
			double t0 = seconds_now(), dt;

			for (int it = 0; it < ITERS; it++)
				for (size_t p = 0; p < PANELS; p++)
					for (size_t col = 0; col + k->nr <= LDB; col += k->nr)
						k->fn(KC, (const char *)ak + p * k->mr * KC *
							  (k->kpair ? 2 : 4),
						      (const char *)bk + b_col(k, col), ldb,
						      c + p * MAXR * LDB + col, LDB, 1);
			dt = seconds_now() - t0;
			if (dt > 0.0 && 2.0 * k->mr * KC * cols * PANELS * ITERS / dt > best)
				best = 2.0 * k->mr * KC * cols * PANELS * ITERS / dt;
		}
	}
	free(rows);
	free(a);
	free(b);
	free(c);
	free(a16);
	free(b16);
	return best;
}

/* The fastest FP32 kernel, and the fastest of all (BF16 pair kernels too). */
static const struct fw_gemm_kernel *fastest, *fastest_any;
static pthread_once_t fastest_once = PTHREAD_ONCE_INIT;

/*
 * Once per process: the fastest kernels of those that run here correctly.
 * The portable ones are not timed (about 0.1 s for the BF16 one): they are
 * what is left when no SIMD kernel passes.
 */
static void pick_fastest(void)
{
	double best = -1.0, best_any = -1.0;

	for (size_t i = 0; i < NKERNELS; i++) {
		double speed;

		if (!strncmp(kernels[i].name, "portable", 8) || !kernel_ok(&kernels[i]))
			continue;
		speed = fw_gemm_kernel_speed(&kernels[i]);
		if (!kernels[i].kpair && speed > best) {
			best = speed;
			fastest = &kernels[i];
		}
		if (speed > best_any) {
			best_any = speed;
			fastest_any = &kernels[i];
		}
	}
	if (!fastest)	/* "portable": no SIMD kernel runs here */
		fastest = &kernels[NKERNELS - 2];
	if (!fastest_any || fastest_any->kpair == 0)
		fastest_any = fastest;
}

/* A kernel named in MAIA_TE_ISA that runs here, or NULL. */
static const struct fw_gemm_kernel *env_kernel(void)
{
	const char *force = getenv("MAIA_TE_ISA");

	for (size_t i = 0; force && i < NKERNELS; i++)
		if (!strcmp(kernels[i].name, force) && kernel_ok(&kernels[i]))
			return &kernels[i];
	return NULL;
}

const struct fw_gemm_kernel *fw_gemm_kernel_forced(void)
{
	return env_kernel();
}

const struct fw_gemm_kernel *fw_gemm_kernel_find(const char *name)
{
	const struct fw_gemm_kernel *k = NULL;

	for (size_t i = 0; name && i < NKERNELS; i++)
		if (!strcmp(kernels[i].name, name) && kernel_ok(&kernels[i]))
			k = &kernels[i];
	if (!name)
		k = env_kernel();
	if (k)
		return k;
	pthread_once(&fastest_once, pick_fastest);
	return fastest;
}

const struct fw_gemm_kernel *fw_gemm_kernel_for(const struct fw_gemm_kernel *k,
						bool bf16_exact)
{
	pthread_once(&fastest_once, pick_fastest);
	if (k->kpair && !bf16_exact)
		return fastest;
	if (k == fastest && bf16_exact && !env_kernel())
		return fastest_any;
	return k;
}
