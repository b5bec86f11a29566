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
#include "msmx_avx512.h"
#else
#define HAVE_X86 0
#endif

#define E8M0_NAN	0xffu
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

/*
 * One block of both rows (columns c..c + the block's size) the reference
 * way: each decoded to FP32 (fw_mx_decode_scalar()) and truncated.
 */
static void mx_pair_block_portable(unsigned int dtype, const uint8_t *e0, const uint8_t *s0,
				   const uint8_t *e1, const uint8_t *s1, size_t c,
				   unsigned int nr, size_t pstride, uint16_t *dst)
{
	unsigned int bs = maia_dtype_block(dtype);
	float f[2][MAIA_MX_BLOCK];

	fw_mx_decode_scalar(dtype, e0, s0, 1, f[0]);
	if (e1)
		fw_mx_decode_scalar(dtype, e1, s1, 1, f[1]);
	for (unsigned int i = 0; i < bs; i++) {
		uint16_t *d = dst + (c + i) / nr * pstride + (c + i) % nr * 2;

		d[0] = (uint16_t)(fw_f32_bits(f[0][i]) >> 16);
		d[1] = e1 ? (uint16_t)(fw_f32_bits(f[1][i]) >> 16) : 0;
	}
}

void fw_gemm_mx_pair_row_portable(unsigned int dtype, const uint8_t *e0, const uint8_t *s0,
				  const uint8_t *e1, const uint8_t *s1, size_t n, size_t np,
				  unsigned int nr, size_t pstride, uint16_t *dst)
{
	unsigned int bs = maia_dtype_block(dtype), bb = maia_dtype_block_bytes(dtype);

	for (size_t b = 0; b < n / bs; b++)
		mx_pair_block_portable(dtype, e0 + b * bb, s0 + b, e1 ? e1 + b * bb : NULL,
				       e1 ? s1 + b : NULL, b * bs, nr, pstride, dst);
	for (size_t j = n; j < np; j++) {
		uint16_t *d = dst + j / nr * pstride + j % nr * 2;

		d[0] = d[1] = 0;
	}
}

#if HAVE_X86
/*
 * VPERMB indices that put two rows' codes into pair order: the 64 bytes
 * hold row 0's codes (FP8: 32 columns, a byte each; FP4: 32 columns, two a
 * byte) and then row 1's (from byte 32, FP4 from byte 16); word w of the
 * 16 pairs from column 16 q takes the byte that holds column 16 q + w / 2
 * of row w % 2, in both its bytes.
 */
#define FP8_COL(c)	(c), (c), 32 + (c), 32 + (c)
#define FP4_COL(c)	(c) / 2, (c) / 2, 16 + (c) / 2, 16 + (c) / 2
#define COLS4(f, c)	f(c), f((c) + 1), f((c) + 2), f((c) + 3)
#define COLS16(f, c)	COLS4(f, c), COLS4(f, (c) + 4), COLS4(f, (c) + 8), COLS4(f, (c) + 12)
static const uint8_t fp8_idx[2][64] = { { COLS16(FP8_COL, 0) }, { COLS16(FP8_COL, 16) } };
static const uint8_t fp4_idx[2][64] = { { COLS16(FP4_COL, 0) }, { COLS16(FP4_COL, 16) } };

/*
 * FP8 subnormal codes m (exponent field 0) as BF16, less the normal codes'
 * bias term (127 - bias) << 7: E4M3 m 2^-9 (m = 1..7), E5M2 m 2^-16 (1..3).
 */
static const uint16_t e4m3_sub[32] = { 0, 0xff00, 0xff80, 0xffc0, 0, 0x20, 0x40, 0x60 };
static const uint16_t e5m2_sub[32] = { 0, 0xff80, 0, 0x40 };

/*
 * A constant made opaque to the compiler, so that it stays in its register
 * instead of being broadcast again from an immediate in every iteration
 * (GCC 12 did that for each of the loops' constants).
 */
#define KEEP(v)		__asm__("" : "+v"(v))

/* Where the 16 pairs of the next 16 columns go: panel pan, at column in of its nr. */
struct pair_out {
	uint16_t *pan;
	size_t pstride;
	unsigned int in, nr;
};

static inline uint16_t *pair_next(struct pair_out *o)
{
	uint16_t *p = o->pan + 2 * o->in;

	o->in += 16;
	if (o->in == o->nr) {
		o->in = 0;
		o->pan += o->pstride;
	}
	return p;
}

/* 2^(s-127) by its bits: s = 0 is the subnormal 2^-127 */
static inline float e8m0_f32(unsigned int s)
{
	return fw_f32_from_bits(s ? s << 23 : 0x00400000u);
}

/* The columns from n to np zero, 16 at a time. */
__attribute__((target("avx512f"), always_inline))
static inline void pair_zero_tail(struct pair_out *o, size_t n, size_t np)
{
	for (size_t j = n; j < np; j += 16)
		_mm512_storeu_si512(pair_next(o), _mm512_setzero_si512());
}

/*
 * The blocks the SIMD loops left (bit i of slow: block c0 / bs + i of both
 * rows, bs the dtype's block size), the reference way: a second pass, so
 * that the loops hold no call (which would have them set their constants
 * up again after it).
 */
static void mx_pair_slow(unsigned int dtype, uint64_t slow, size_t c0, const uint8_t *e0,
			 const uint8_t *s0, const uint8_t *e1, const uint8_t *s1, unsigned int nr,
			 size_t pstride, uint16_t *dst)
{
	unsigned int bb = maia_dtype_block_bytes(dtype), bs = maia_dtype_block(dtype);

	for (; slow; slow &= slow - 1) {
		size_t b = c0 / bs + (size_t)__builtin_ctzll(slow);

		mx_pair_block_portable(dtype, e0 + b * bb, s0 + b, e1 ? e1 + b * bb : NULL,
				       e1 ? s1 + b : NULL, bs * b, nr, pstride, dst);
	}
}

/*
 * The loop of the MX pair decoders below, over both rows' blocks of bs
 * columns (32, or 16 for MX9/6/4), 64 blocks at a time: per block, with c
 * its first column, b its index and sa, sb its scales (127 for an absent
 * row 1), the blocks for which skip holds are left to a second pass
 * (mx_pair_slow()), the others written by the body, bs / 16 groups of 16
 * pairs through pair_next(&o); then the columns from n to np zero. Uses
 * the decoders' parameters and o.
 */
#define MX_PAIR_BLOCKS(dtype, skip, ...)						\
	do {										\
		const size_t bs_ = maia_dtype_block(dtype);				\
											\
		for (size_t c0 = 0; c0 < n; c0 += 64 * bs_) {				\
			size_t c1 = n - c0 < 64 * bs_ ? n : c0 + 64 * bs_;		\
			uint64_t slow = 0;						\
											\
			for (size_t c = c0, b = c0 / bs_; c < c1; c += bs_, b++) {	\
				unsigned int sa = s0[b], sb = e1 ? s1[b] : 127;		\
											\
				if (skip) {						\
					slow |= 1ull << (b - c0 / bs_);			\
					for (size_t q_ = 0; q_ < bs_; q_ += 16)		\
						pair_next(&o);				\
					continue;					\
				}							\
				__VA_ARGS__						\
			}								\
			mx_pair_slow(dtype, slow, c0, e0, s0, e1, s1, nr, pstride, dst); \
		}									\
		pair_zero_tail(&o, n, np);						\
	} while (0)

/*
 * MXFP8 rows into pairs, 32 columns (a block of each row) at a time, in
 * 16-bit lanes: the code's magnitude shifted into a BF16's exponent and
 * mantissa fields, its exponent bias and the block's scale added to the
 * exponent field at once ((s - bias) << 7), subnormal codes looked up
 * (VPERMW), zero codes left zero, the sign ORed in. Exact (the same bits
 * as the FP32 decode truncated) when every nonzero element times
 * 2^(s - 127) is a normal BF16: s in [10, 246] for E4M3, [17, 239] for
 * E5M2. Blocks outside that, or holding NaN (E4M3 S.1111.111) or Inf/NaN
 * (E5M2 S.11111.xx) codes, or a NaN scale, are decoded the reference way.
 */
__attribute__((target("avx512f,avx512bw,avx512vbmi"), always_inline))
static inline void mx_fp8_pairs(bool e4m3, const uint8_t *e0, const uint8_t *s0,
				const uint8_t *e1, const uint8_t *s1, size_t n, size_t np,
				unsigned int nr, size_t pstride, uint16_t *dst)
{
	const unsigned int dtype = e4m3 ? MAIA_DTYPE_MXFP8_E4M3 : MAIA_DTYPE_MXFP8_E5M2;
	const unsigned int bias = e4m3 ? 7 : 15, sh = e4m3 ? 4 : 5;
	const unsigned int lo = e4m3 ? 10 : 17, hi = e4m3 ? 246 : 239;
	__m512i magm = _mm512_set1_epi16(e4m3 ? 0x7f0 : 0xfe0);
	__m512i expm = _mm512_set1_epi16(e4m3 ? 0x78 : 0x7c);
	__m512i m7f = _mm512_set1_epi16(0x7f), sgn = _mm512_set1_epi16((short)0x8000);
	__m512i b7f = _mm512_set1_epi8(0x7f), special = _mm512_set1_epi8(e4m3 ? 0x7f : 0x7c);
	const __m512i tsub = _mm512_loadu_si512(e4m3 ? e4m3_sub : e5m2_sub);
	const __m512i idx0 = _mm512_loadu_si512(fp8_idx[0]), idx1 = _mm512_loadu_si512(fp8_idx[1]);
	struct pair_out o = { dst, pstride, 0, nr };
	__m512i x;

	KEEP(magm);
	KEEP(expm);
	KEEP(m7f);
	KEEP(sgn);
	KEEP(b7f);
	KEEP(special);

	/* x: both rows' codes of the block, row 1's (or zeros) from byte 32 */
	MX_PAIR_BLOCKS(dtype, (x = _mm512_inserti64x4(
				      _mm512_castsi256_si512(_mm256_loadu_si256((const void *)(e0 + c))),
				      e1 ? _mm256_loadu_si256((const void *)(e1 + c)) :
					   _mm256_setzero_si256(), 1),
			       sa - lo > hi - lo || sb - lo > hi - lo ||
			       _mm512_cmpge_epu8_mask(_mm512_and_si512(x, b7f), special)), {
		/* (s - bias) << 7 in each word, row 0's in the even ones */
		__m512i d = _mm512_set1_epi32((int)(((sa - bias) << 7 & 0xffff) |
						    (sb - bias) << 23));

		_Pragma("GCC unroll 2")
		for (unsigned int q = 0; q < 2; q++) {
			__m512i w = _mm512_permutexvar_epi8(q ? idx1 : idx0, x);
			__m512i v = _mm512_and_si512(_mm512_slli_epi16(w, sh), magm);

			v = _mm512_mask_permutexvar_epi16(v, _mm512_testn_epi16_mask(w, expm), w,
							  tsub);
			v = _mm512_mask_add_epi16(v, _mm512_test_epi16_mask(w, m7f), v, d);
			v = _mm512_ternarylogic_epi32(v, w, sgn, 0xf8);	/* v | (w & sgn) */
			_mm512_storeu_si512(pair_next(&o), v);
		}
	});
}

/*
 * MXFP4 rows into pairs: per block of each row the 16 codes' values times
 * the scale in FP32 (the reference's multiply), their BF16 halves a
 * 32-entry table (row 0's, then row 1's), and each word of the pair panels
 * a VPERMW lookup of its code (the byte's low or high half) plus 16 for
 * row 1. Exact for every scale; a NaN scale's block the reference way.
 */
static const uint16_t fp4_shift[32] = {		/* odd columns: the byte's high half */
	0, 0, 4, 4, 0, 0, 4, 4, 0, 0, 4, 4, 0, 0, 4, 4,
	0, 0, 4, 4, 0, 0, 4, 4, 0, 0, 4, 4, 0, 0, 4, 4 };
static const uint16_t fp4_row[32] = {		/* row 1's words: its half of the table */
	0, 16, 0, 16, 0, 16, 0, 16, 0, 16, 0, 16, 0, 16, 0, 16,
	0, 16, 0, 16, 0, 16, 0, 16, 0, 16, 0, 16, 0, 16, 0, 16 };
static const uint16_t fp4_high[32] = {		/* the high halves of 16 + 16 floats */
	1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31,
	33, 35, 37, 39, 41, 43, 45, 47, 49, 51, 53, 55, 57, 59, 61, 63 };

__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static void mx_fp4_pairs(const uint8_t *e0, const uint8_t *s0, const uint8_t *e1,
			 const uint8_t *s1, size_t n, size_t np, unsigned int nr, size_t pstride,
			 uint16_t *dst)
{
	const __m512 base = _mm512_loadu_ps(fw_minifloat_table(FW_ELEM_FP4_E2M1));
	const __m512i shift = _mm512_loadu_si512(fp4_shift), row = _mm512_loadu_si512(fp4_row);
	const __m512i high = _mm512_loadu_si512(fp4_high);
	__m512i m0f = _mm512_set1_epi16(0x0f);
	const __m512i idx0 = _mm512_loadu_si512(fp4_idx[0]), idx1 = _mm512_loadu_si512(fp4_idx[1]);
	struct pair_out o = { dst, pstride, 0, nr };

	KEEP(m0f);

	MX_PAIR_BLOCKS(MAIA_DTYPE_MXFP4_E2M1, sa == E8M0_NAN || sb == E8M0_NAN, {
		__m512 t0 = _mm512_mul_ps(base, _mm512_set1_ps(e8m0_f32(sa)));
		__m512 t1 = _mm512_mul_ps(base, _mm512_set1_ps(e8m0_f32(sb)));
		__m512i tab = _mm512_permutex2var_epi16(_mm512_castps_si512(t0), high,
							_mm512_castps_si512(t1));
		__m512i x = _mm512_castsi128_si512(_mm_loadu_si128((const void *)(e0 + c / 2)));

		x = _mm512_inserti32x4(x, e1 ? _mm_loadu_si128((const void *)(e1 + c / 2)) :
					       _mm_setzero_si128(), 1);
		_Pragma("GCC unroll 2")
		for (unsigned int q = 0; q < 2; q++) {
			__m512i w = _mm512_permutexvar_epi8(q ? idx1 : idx0, x);

			w = _mm512_srlv_epi16(w, shift);
			w = _mm512_ternarylogic_epi32(w, m0f, row, 0xea); /* (w & 15) | row */
			_mm512_storeu_si512(pair_next(&o), _mm512_permutexvar_epi16(w, tab));
		}
	});
}

/*
 * MXFP6 rows into pairs, as MXFP4: per block of each row the 32 codes'
 * magnitudes times the scale in FP32 (the reference's multiply), their
 * BF16 halves a 64-entry table in two registers (row 0's 32, then row
 * 1's), each word of the pair panels a VPERMI2W lookup of its code's
 * magnitude plus 32 for row 1, with the code's sign ORed in. The codes are
 * 6-bit fields, four in three bytes: VPERMB puts the two bytes that hold
 * a word's field in that word (both rows' 24 bytes loaded masked, row 1's
 * from byte 32), VPSRLVW shifts it down. Exact for every scale (the
 * product's sign is the code's: the reference's -0 codes give 0x8000 too);
 * a NaN scale's block the reference way.
 */
#define FP6_COL(c)	6 * (c) / 8, 6 * (c) / 8 + 1, 32 + 6 * (c) / 8, 33 + 6 * (c) / 8
static const uint8_t fp6_idx[2][64] = { { COLS16(FP6_COL, 0) }, { COLS16(FP6_COL, 16) } };
static const uint16_t fp6_shift[32] = {		/* column c's field at bit 6 c % 8 */
	0, 0, 6, 6, 4, 4, 2, 2, 0, 0, 6, 6, 4, 4, 2, 2,
	0, 0, 6, 6, 4, 4, 2, 2, 0, 0, 6, 6, 4, 4, 2, 2 };
static const uint16_t fp6_row[32] = {		/* row 1's words: the second register */
	0, 32, 0, 32, 0, 32, 0, 32, 0, 32, 0, 32, 0, 32, 0, 32,
	0, 32, 0, 32, 0, 32, 0, 32, 0, 32, 0, 32, 0, 32, 0, 32 };

__attribute__((target("avx512f,avx512bw,avx512vbmi"), always_inline))
static inline void mx_fp6_pairs(bool e3m2, const uint8_t *e0, const uint8_t *s0,
				const uint8_t *e1, const uint8_t *s1, size_t n, size_t np,
				unsigned int nr, size_t pstride, uint16_t *dst)
{
	const unsigned int dtype = e3m2 ? MAIA_DTYPE_MXFP6_E3M2 : MAIA_DTYPE_MXFP6_E2M3;
	const float *tab = fw_minifloat_table(dtype);
	const __m512 base0 = _mm512_loadu_ps(tab), base1 = _mm512_loadu_ps(tab + 16);
	const __m512i shift = _mm512_loadu_si512(fp6_shift), row = _mm512_loadu_si512(fp6_row);
	const __m512i high = _mm512_loadu_si512(fp4_high);
	__m512i m1f = _mm512_set1_epi16(0x1f), sgn = _mm512_set1_epi16((short)0x8000);
	const __m512i idx0 = _mm512_loadu_si512(fp6_idx[0]), idx1 = _mm512_loadu_si512(fp6_idx[1]);
	struct pair_out o = { dst, pstride, 0, nr };

	KEEP(m1f);
	KEEP(sgn);

	MX_PAIR_BLOCKS(dtype, sa == E8M0_NAN || sb == E8M0_NAN, {
		__m512 f0 = _mm512_set1_ps(e8m0_f32(sa)), f1 = _mm512_set1_ps(e8m0_f32(sb));
		__m512i tab0 = _mm512_permutex2var_epi16(
			_mm512_castps_si512(_mm512_mul_ps(base0, f0)), high,
			_mm512_castps_si512(_mm512_mul_ps(base1, f0)));
		__m512i tab1 = _mm512_permutex2var_epi16(
			_mm512_castps_si512(_mm512_mul_ps(base0, f1)), high,
			_mm512_castps_si512(_mm512_mul_ps(base1, f1)));
		__m512i x = _mm512_maskz_loadu_epi8(0xffffff, e0 + c / 4 * 3);
		__m512i y = e1 ? _mm512_maskz_loadu_epi8(0xffffff, e1 + c / 4 * 3) :
				 _mm512_setzero_si512();

		x = _mm512_inserti64x4(x, _mm512_castsi512_si256(y), 1);
		_Pragma("GCC unroll 2")
		for (unsigned int q = 0; q < 2; q++) {
			__m512i w = _mm512_permutexvar_epi8(q ? idx1 : idx0, x), v;

			w = _mm512_srlv_epi16(w, shift);
			v = _mm512_ternarylogic_epi32(w, m1f, row, 0xea); /* (w & 31) | row */
			v = _mm512_permutex2var_epi16(tab0, v, tab1);
			v = _mm512_ternarylogic_epi32(v, _mm512_slli_epi16(w, 10), sgn, 0xf8);
			_mm512_storeu_si512(pair_next(&o), v);
		}
	});
}

/*
 * MXINT8 rows into pairs: each 16 codes of a row widened to 32 bits
 * (VPMOVSXBD), converted to FP32 (exact) and multiplied by 2^(s - 133),
 * the element's 2^-6 and the block's scale in one factor (a subnormal
 * FP32 for s < 7), and the two rows' high halves put together. The
 * reference multiplies by 2^-6 (exact) and then by 2^(s - 127): both are
 * one rounding of the same exact product, so the results are the same
 * bits for every scale, subnormal and overflowing products included; a
 * NaN scale's block the reference way.
 */
__attribute__((target("avx512f,avx512bw")))
static void mx_int8_pairs(const uint8_t *e0, const uint8_t *s0, const uint8_t *e1,
			  const uint8_t *s1, size_t n, size_t np, unsigned int nr, size_t pstride,
			  uint16_t *dst)
{
	__m512i hi = _mm512_set1_epi32((int)0xffff0000u);
	struct pair_out o = { dst, pstride, 0, nr };

	KEEP(hi);

	MX_PAIR_BLOCKS(MAIA_DTYPE_MXINT8, sa == E8M0_NAN || sb == E8M0_NAN, {
		/* 2^(s - 133) by its bits, FP32 subnormal below s = 7 */
		__m512 f0 = _mm512_set1_ps(fw_f32_from_bits(sa >= 7 ? (sa - 6) << 23 :
							    1u << (16 + sa)));
		__m512 f1 = _mm512_set1_ps(fw_f32_from_bits(sb >= 7 ? (sb - 6) << 23 :
							    1u << (16 + sb)));

		_Pragma("GCC unroll 2")
		for (unsigned int q = 0; q < 2; q++) {
			__m512 x0 = _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
				_mm_loadu_si128((const void *)(e0 + c + 16 * q))));
			__m512 x1 = e1 ? _mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(
				_mm_loadu_si128((const void *)(e1 + c + 16 * q)))) :
				_mm512_setzero_ps();
			__m512i v0 = _mm512_castps_si512(_mm512_mul_ps(x0, f0));
			__m512i v1 = _mm512_castps_si512(_mm512_mul_ps(x1, f1));

			/* (v1 & hi) | v0 >> 16 */
			_mm512_storeu_si512(pair_next(&o),
					    _mm512_ternarylogic_epi32(v1, hi, _mm512_srli_epi32(v0, 16),
								      0xea));
		}
	});
}

/*
 * MX9, MX6, MX4 rows into pairs, a block of 16 columns of each row at a
 * time: both rows' blocks loaded masked (row 1's from byte 32), each
 * row's 16 values in FP32 by msmx_values() (msmx_avx512.h: the
 * reference's value, one rounding of the same exact product, for every
 * scale), the two rows' high halves put together: the FP32 decode
 * truncated, as the reference. The values are exact in BF16 but for FP32
 * subnormal ones (scale bytes below 8, 5, 3 for MX9, MX6, MX4), whose
 * truncation keeps the high bits as the reference's does (and the kernel
 * reads as zero); a NaN scale's block the reference way.
 */
__attribute__((target("avx512f,avx512bw,avx512vbmi"), always_inline))
static inline void msmx_pairs(unsigned int dtype, const uint8_t *e0, const uint8_t *s0,
			      const uint8_t *e1, const uint8_t *s1, size_t n, size_t np,
			      unsigned int nr, size_t pstride, uint16_t *dst)
{
	const struct msmx_simd k = msmx_simd_of(dtype);
	const unsigned int bb = k.bytes;
	__m512i hi = _mm512_set1_epi32((int)0xffff0000u);
	const __m512i idx1 = _mm512_add_epi8(k.idx, _mm512_set1_epi8(32));
	struct pair_out o = { dst, pstride, 0, nr };

	KEEP(hi);

	MX_PAIR_BLOCKS(dtype, sa == E8M0_NAN || sb == E8M0_NAN, {
		__m512i x;

		if ((n - c) / 16 * bb >= 32) {	/* 32 bytes in the row: plain loads */
			x = _mm512_castsi256_si512(_mm256_loadu_si256((const void *)(e0 + b * bb)));
			x = _mm512_inserti64x4(x, e1 ? _mm256_loadu_si256((const void *)(e1 + b * bb)) :
						       _mm256_setzero_si256(), 1);
		} else {
			x = msmx_load(&k, e0 + b * bb);
			if (e1)
				x = _mm512_inserti64x4(x, _mm512_castsi512_si256(
							       msmx_load(&k, e1 + b * bb)), 1);
		}
		/* (v1 & hi) | v0 >> 16 */
		_mm512_storeu_si512(pair_next(&o), _mm512_ternarylogic_epi32(
			_mm512_castps_si512(msmx_values(&k, idx1, x, sb)), hi,
			_mm512_srli_epi32(_mm512_castps_si512(msmx_values(&k, k.idx, x, sa)), 16),
			0xea));
	});
}

/* The FP8, FP6 and MX9/6/4 decoders, one function per element format (a constant inside). */
#define MX_PAIRS_OF(name, decoder, first)						\
	__attribute__((target("avx512f,avx512bw,avx512vbmi")))				\
	static void name(const uint8_t *e0, const uint8_t *s0, const uint8_t *e1,	\
			 const uint8_t *s1, size_t n, size_t np, unsigned int nr,	\
			 size_t pstride, uint16_t *dst)					\
	{										\
		decoder(first, e0, s0, e1, s1, n, np, nr, pstride, dst);		\
	}
MX_PAIRS_OF(mx_e4m3_pairs, mx_fp8_pairs, true)
MX_PAIRS_OF(mx_e5m2_pairs, mx_fp8_pairs, false)
MX_PAIRS_OF(mx_e3m2_pairs, mx_fp6_pairs, true)
MX_PAIRS_OF(mx_e2m3_pairs, mx_fp6_pairs, false)
MX_PAIRS_OF(mx9_pairs, msmx_pairs, MAIA_DTYPE_MX9)
MX_PAIRS_OF(mx6_pairs, msmx_pairs, MAIA_DTYPE_MX6)
MX_PAIRS_OF(mx4_pairs, msmx_pairs, MAIA_DTYPE_MX4)

/* The decoder of each MX dtype that has one. */
static void (*const mx_pairs[])(const uint8_t *e0, const uint8_t *s0, const uint8_t *e1,
				const uint8_t *s1, size_t n, size_t np, unsigned int nr,
				size_t pstride, uint16_t *dst) = {
	[MAIA_DTYPE_MXFP8_E4M3] = mx_e4m3_pairs,
	[MAIA_DTYPE_MXFP8_E5M2] = mx_e5m2_pairs,
	[MAIA_DTYPE_MXFP6_E3M2] = mx_e3m2_pairs,
	[MAIA_DTYPE_MXFP6_E2M3] = mx_e2m3_pairs,
	[MAIA_DTYPE_MXFP4_E2M1] = mx_fp4_pairs,
	[MAIA_DTYPE_MXINT8] = mx_int8_pairs,
	[MAIA_DTYPE_MX9] = mx9_pairs,
	[MAIA_DTYPE_MX6] = mx6_pairs,
	[MAIA_DTYPE_MX4] = mx4_pairs,
};
#endif

bool fw_gemm_mx_pair_row(unsigned int dtype, const uint8_t *e0, const uint8_t *s0,
			 const uint8_t *e1, const uint8_t *s1, size_t n, size_t np,
			 unsigned int nr, size_t pstride, uint16_t *dst)
{
#if HAVE_X86
	if (dtype >= sizeof(mx_pairs) / sizeof(mx_pairs[0]) || !mx_pairs[dtype])
		return false;
	if (n % maia_dtype_block(dtype) || nr % 16 || np % 16 || fw_mx_simd() < FW_MX_AVX512)
		return false;
	mx_pairs[dtype](e0, s0, e1, s1, n, np, nr, pstride, dst);
	return true;
#else
	(void)dtype;
	(void)e0;
	(void)s0;
	(void)e1;
	(void)s1;
	(void)n;
	(void)np;
	(void)nr;
	(void)pstride;
	(void)dst;
	return false;
#endif
}
