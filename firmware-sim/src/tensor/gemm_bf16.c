// SPDX-License-Identifier: MIT
/*
 * BF16 pair GEMM micro-kernels: C[mr x nr] (+)= A * B over kc with FP32
 * accumulation, two k steps per instruction (AVX512_BF16 VDPBF16PS), and
 * the packers that turn FP32 panels, or B's rows as they come (BF16 from
 * device memory, decoded MX), into the BF16 pairs they read. Used
 * only when both operands are exact in BF16 (BF16 itself and the MX
 * formats, fw_gemm_kernel_for()), so packing is a plain truncation.
 *
 * Rounding, as VDPBF16PS does it (Intel SDM): per k pair the odd product
 * is added to the accumulator, then the even one, each add rounded to
 * nearest even in FP32; products of two BF16 values are exact in FP32.
 * BF16 inputs below 2^-126 read as zero and FP32 results below 2^-126 are
 * flushed to zero. The accumulators start at zero and the slice's sum is
 * added to C at the end with one plain FP32 add (C in place in memory is
 * fetched while the k loop runs, as in the FP32 kernels).
 * fw_gemm_bf16_portable() does exactly that in C; it is
 * the reference the SIMD kernel is tested against and the path that runs
 * gemm.c's BF16 pair packing on machines without AVX512_BF16.
 */
#include <string.h>

#include "te.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

#define MR	FW_GEMM_BF16_MR
#define NR	FW_GEMM_BF16_NR

/* A BF16 as FP32, denormals read as zero. */
static float bf16_daz(uint16_t h)
{
	return (h & 0x7f80) ? fw_f32_from_bits((uint32_t)h << 16) : 0.0f;
}

/* An FP32 result below 2^-126 flushed to (signed) zero. */
static float ftz(float x)
{
	uint32_t u = fw_f32_bits(x);

	return (u & 0x7f800000) ? x : fw_f32_from_bits(u & 0x80000000u);
}

void fw_gemm_bf16_portable(size_t kc, const void *ap, const void *bp, size_t ldb, float *c,
			   size_t ldc, int accumulate)
{
	const uint16_t *a = ap, *b = bp;
	float acc[MR][NR];
	size_t p;
	int i, j;

	for (i = 0; i < MR; i++)
		for (j = 0; j < NR; j++)
			acc[i][j] = 0.0f;
	for (p = 0; p < (kc + 1) / 2; p++, a += 2 * MR, b += ldb)
		for (i = 0; i < MR; i++)
			for (j = 0; j < NR; j++) {
				/* each product is exact: no contraction can change it */
				acc[i][j] = ftz(acc[i][j] + bf16_daz(a[2 * i + 1]) *
							    bf16_daz(b[2 * j + 1]));
				acc[i][j] = ftz(acc[i][j] + bf16_daz(a[2 * i]) * bf16_daz(b[2 * j]));
			}
	for (i = 0; i < MR; i++)
		for (j = 0; j < NR; j++)
			c[i * ldc + j] = accumulate ? c[i * ldc + j] + acc[i][j] : acc[i][j];
}

/* dst pair (k/2, i) = high halves of src[k][i] (low) and src[k + 1][i] (high, 0 past kc) */
void fw_gemm_to_pairs_portable(const float *src, size_t ld, size_t kc, unsigned int w,
			       uint16_t *dst)
{
	for (size_t k = 0; k < kc; k += 2)
		for (unsigned int i = 0; i < w; i++) {
			dst[k * w + 2 * i] = (uint16_t)(fw_f32_bits(src[k * ld + i]) >> 16);
			dst[k * w + 2 * i + 1] =
				k + 1 < kc ? (uint16_t)(fw_f32_bits(src[(k + 1) * ld + i]) >> 16) : 0;
		}
}

/*
 * One k pair of B across its panels: columns j < n of rows r0 (k even) and
 * r1 (k + 1; NULL: past kc, zero), BF16 (f32 false) or FP32 truncated to
 * BF16 (exact for the operands these kernels take), column j's pair at
 * dst[j / nr * pstride + j % nr * 2]; columns n..np-1 zero.
 */
void fw_gemm_pair_row_portable(const void *r0, const void *r1, bool f32, size_t n, size_t np,
			       unsigned int nr, size_t pstride, uint16_t *dst)
{
	for (size_t j = 0; j < np; j++) {
		uint16_t *d = dst + j / nr * pstride + j % nr * 2;

		if (j >= n) {
			d[0] = d[1] = 0;
		} else if (f32) {
			d[0] = (uint16_t)(fw_f32_bits(((const float *)r0)[j]) >> 16);
			d[1] = r1 ? (uint16_t)(fw_f32_bits(((const float *)r1)[j]) >> 16) : 0;
		} else {
			d[0] = ((const uint16_t *)r0)[j];
			d[1] = r1 ? ((const uint16_t *)r1)[j] : 0;
		}
	}
}

#if HAVE_X86
/*
 * 14 x 32, like the FP32 AVX-512 kernel: 28 accumulators, two B vectors of
 * 16 column pairs, one A pair broadcast per row, 28 VDPBF16PS per k pair.
 * The first rows rows of the tile (rows a constant once inlined): the
 * short tiles (fn_rows) run the same instructions for their rows, so give
 * the same results. On Zen 4 VDPBF16PS issues one zmm per cycle, so 3 rows
 * (6 chains) already hide most of its latency: a 32-row block in 14-row
 * tiles is 32 rows of work instead of 42.
 */
__attribute__((target("avx512f,avx512bf16"), always_inline))
static inline void bf16_tile(size_t kc, const uint32_t *a, const uint16_t *b, size_t ldb,
			     float *c, size_t ldc, int accumulate, const int rows)
{
	__m512 acc[MR][2];
	size_t p;
	int i;

#pragma GCC unroll 14
	for (i = 0; i < rows; i++) {
		if (accumulate) {
			_mm_prefetch((const char *)(c + i * ldc), _MM_HINT_T0);
			_mm_prefetch((const char *)(c + i * ldc + 16), _MM_HINT_T0);
		}
		acc[i][0] = _mm512_setzero_ps();
		acc[i][1] = _mm512_setzero_ps();
	}
	for (p = 0; p < (kc + 1) / 2; p++, b += ldb, a += MR) {
		__m512bh b0 = (__m512bh)_mm512_load_si512(b);
		__m512bh b1 = (__m512bh)_mm512_load_si512(b + 32);

#pragma GCC unroll 14
		for (i = 0; i < rows; i++) {
			__m512bh ai = (__m512bh)_mm512_set1_epi32((int)a[i]);

			acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
			acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
		}
	}
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

__attribute__((target("avx512f,avx512bf16")))
void fw_gemm_bf16_avx512(size_t kc, const void *ap, const void *bp, size_t ldb, float *c,
			 size_t ldc, int accumulate)
{
	bf16_tile(kc, ap, bp, ldb, c, ldc, accumulate, MR);
}

__attribute__((target("avx512f,avx512bf16")))
void fw_gemm_bf16_avx512_rows(size_t kc, const void *ap, const void *bp, size_t ldb, float *c,
			      size_t ldc, int accumulate, unsigned int rows)
{
	switch (rows) {
#define BF16_ROWS(r_)								\
	case r_:								\
		bf16_tile(kc, ap, bp, ldb, c, ldc, accumulate, r_);		\
		break
	BF16_ROWS(1); BF16_ROWS(2); BF16_ROWS(3); BF16_ROWS(4); BF16_ROWS(5);
	BF16_ROWS(6); BF16_ROWS(7); BF16_ROWS(8); BF16_ROWS(9); BF16_ROWS(10);
	BF16_ROWS(11); BF16_ROWS(12); BF16_ROWS(13);
#undef BF16_ROWS
	default:
		bf16_tile(kc, ap, bp, ldb, c, ldc, accumulate, MR);
		break;
	}
}

/* fw_gemm_to_pairs_portable(), 16 columns at a time (masked at the end of a row). */
__attribute__((target("avx512f")))
void fw_gemm_to_pairs_avx512(const float *src, size_t ld, size_t kc, unsigned int w,
			     uint16_t *dst)
{
	const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);
	uint32_t *out = (uint32_t *)dst;

	for (size_t k = 0; k < kc; k += 2, out += w)
		for (unsigned int i = 0; i < w; i += 16) {
			__mmask16 m = w - i >= 16 ? 0xffff : (__mmask16)((1u << (w - i)) - 1);
			__m512i x0 = _mm512_maskz_loadu_epi32(m, src + k * ld + i);
			__m512i x1 = k + 1 < kc ? _mm512_maskz_loadu_epi32(m, src + (k + 1) * ld + i)
						: _mm512_setzero_si512();

			_mm512_mask_storeu_epi32(out + i, m,
						 _mm512_or_si512(_mm512_and_si512(x1, hi),
								 _mm512_srli_epi32(x0, 16)));
		}
}

/*
 * fw_gemm_pair_row_portable(), 16 columns at a time (nr a multiple of 16):
 * BF16 rows zero-extended and the odd row shifted up, FP32 rows' high
 * halves; past n the columns masked to zero.
 */
__attribute__((target("avx512f")))
static void pair_row_avx512(const void *r0, const void *r1, bool f32, size_t n, size_t np,
			    unsigned int nr, size_t pstride, uint16_t *dst)
{
	const __m512i hi = _mm512_set1_epi32((int)0xffff0000u);

	for (size_t j = 0; j < np; j += 16) {
		__mmask16 m = n - (j < n ? j : n) >= 16 ? 0xffff :
			      (__mmask16)((1u << (n - (j < n ? j : n))) - 1);
		__m512i x0, x1 = _mm512_setzero_si512(), v;

		if (f32) {
			x0 = _mm512_maskz_loadu_epi32(m, (const float *)r0 + j);
			if (r1)
				x1 = _mm512_maskz_loadu_epi32(m, (const float *)r1 + j);
			v = _mm512_or_si512(_mm512_and_si512(x1, hi), _mm512_srli_epi32(x0, 16));
		} else if (m == 0xffff) {
			x0 = _mm512_cvtepu16_epi32(_mm256_loadu_si256((const void *)
								      ((const uint16_t *)r0 + j)));
			if (r1)
				x1 = _mm512_cvtepu16_epi32(_mm256_loadu_si256(
					(const void *)((const uint16_t *)r1 + j)));
			v = _mm512_or_si512(_mm512_slli_epi32(x1, 16), x0);
		} else {	/* a row's last columns: not read past n */
			uint32_t t[16];

			for (unsigned int q = 0; q < 16; q++)
				t[q] = j + q >= n ? 0 :
				       ((const uint16_t *)r0)[j + q] |
				       (r1 ? (uint32_t)((const uint16_t *)r1)[j + q] << 16 : 0);
			v = _mm512_loadu_si512(t);
		}
		_mm512_storeu_si512(dst + j / nr * pstride + j % nr * 2, v);
	}
}
#endif

void fw_gemm_pair_row(const void *r0, const void *r1, bool f32, size_t n, size_t np,
		      unsigned int nr, size_t pstride, uint16_t *dst)
{
#if HAVE_X86
	if (nr % 16 == 0 && np % 16 == 0 && __builtin_cpu_supports("avx512f")) {
		pair_row_avx512(r0, r1, f32, n, np, nr, pstride, dst);
		return;
	}
#endif
	fw_gemm_pair_row_portable(r0, r1, f32, n, np, nr, pstride, dst);
}
