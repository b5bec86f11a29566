// SPDX-License-Identifier: MIT
/*
 * AVX2 decoders for every MX format (MXFP8 E4M3/E5M2, MXFP6 E3M2/E2M3,
 * MXFP4, MXINT8, MX9/MX6/MX4), and AVX-512 VBMI ones for MXFP6 and
 * MX9/MX6/MX4. Same results as the scalar reference in dtype_mx.c, bit
 * for bit: every element value is exact in FP32 and is multiplied by the
 * block scale once, as there. The table lookups there cost about a
 * quarter of an MXFP8 GEMM's time.
 *
 * - FP8: E5M2 is the top byte of an FP16; E4M3 shifted left by 7 (sign
 *   apart) is an FP16 worth 2^-8 of the E4M3 value, subnormals included,
 *   and F16C converts both exactly. NaN codes (E4M3 S.1111.111, E5M2
 *   S.11111.mm with mm != 0) become the table's NaN, the default quiet NaN
 *   with the code's sign, not F16C's payload-keeping conversion. A block
 *   without NaN codes (one compare of its 32 bytes) skips that blend.
 * - FP4 E2M1: the 8 magnitudes times the scale, picked by the code's low
 *   3 bits (a permute), the sign bit set separately so -0 stays -0.
 * - INT8: int8 * 2^-6.
 * - FP6 E3M2/E2M3: AVX2, each field moved to the top of a word and made an
 *   FP16 worth 2^-12 / 2^-14 of the element (fp6_block()); with AVX512BW
 *   and VBMI, the 32 magnitudes times the scale, picked by each 6-bit
 *   field (run_fp6()).
 * - MX9/MX6/MX4: AVX2, 8 fields a register by VPSHUFB and VPSRLVD
 *   (run_msmx_avx2()); with AVX512BW and VBMI each 16-element block by
 *   msmx_values() (msmx_avx512.h, shared with the BF16 pair decoder;
 *   run_msmx()). Both take the block's factors from msmx_pow2.
 *
 * Each block's 32 values go to dst as two halves of 16, each anywhere, so
 * that a GEMM's panels (16 or 32 columns, or 16-k blocks of A) are decoded
 * in place (fw_mx_decode_groups()).
 *
 * Which of them run is fw_mx_simd()'s decision, made again at each GEMM
 * (fw_mx_simd_again()): the AVX-512 ones only where the CPU has them and
 * MAIA_TE_ISA does not make the engine take the avx2 (or a portable)
 * kernel, so that the AVX2 stand-in decodes as an AVX2-only CPU does.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "te.h"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <immintrin.h>

#include "msmx_avx512.h"

#define E8M0_NAN	0xffu

/*
 * Where the halves of the blocks go: element e of the run at dst + e / g *
 * gstride + e % g, g a multiple of 16, walked without dividing.
 */
struct mx_walk {
	float *grp;		/* the current group */
	size_t at, g;		/* the next element's place in it, and its size */
	size_t gstride;
};

static inline float *mx_next_half(struct mx_walk *w)
{
	float *p = w->grp + w->at;

	w->at += 16;
	if (w->at == w->g) {
		w->at = 0;
		w->grp += w->gstride;
	}
	return p;
}

/* element i of a block: d[0][i] for i < 16, else d[1][i - 16] */
#define MX_AT(d, i)	((d)[(i) / 16] + (i) % 16)

__attribute__((target("avx2,f16c"), always_inline))
static inline void fp8_block(bool e4m3, const uint8_t *blk, float sc, float *const d[2])
{
	const __m256 vsc = _mm256_set1_ps(sc), k256 = _mm256_set1_ps(256.0f);
	const __m256i qnan = _mm256_set1_epi32(0x7fc00000);
	const __m128i m7f = _mm_set1_epi16(0x7f), m80 = _mm_set1_epi16(0x80);
	const __m128i nan_above = _mm_set1_epi16(e4m3 ? 0x7e : 0x7c);

#pragma GCC unroll 4
	for (unsigned int i = 0; i < MAIA_MX_BLOCK; i += 8) {
		__m128i w = _mm_cvtepu8_epi16(_mm_loadl_epi64((const __m128i *)(const void *)(blk + i)));
		__m128i mag = _mm_and_si128(w, m7f);
		/* the code's sign on the default NaN, where the code is a NaN */
		__m256i sign = _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_and_si128(w, m80)), 24);
		__m256 nan = _mm256_castsi256_ps(_mm256_cvtepi16_epi32(_mm_cmpgt_epi16(mag, nan_above)));
		__m256 f;

		if (e4m3) {
			__m128i h = _mm_or_si128(_mm_slli_epi16(_mm_and_si128(w, m80), 8),
						 _mm_slli_epi16(mag, 7));

			f = _mm256_mul_ps(_mm256_cvtph_ps(h), k256);
		} else {
			f = _mm256_cvtph_ps(_mm_slli_epi16(w, 8));
		}
		f = _mm256_blendv_ps(f, _mm256_castsi256_ps(_mm256_or_si256(qnan, sign)), nan);
		_mm256_storeu_ps(MX_AT(d, i), _mm256_mul_ps(f, vsc));
	}
}

/*
 * A block without NaN codes: each byte unpacked to the top of an FP16
 * (E5M2 as it is; E4M3 shifted right by one, arithmetically so the sign
 * stays, and the copy of the sign in the exponent's top bit cleared). E4M3's
 * 2^8 joins the scale in one multiply when 2^8 sc is a float (s < 247):
 * either way the exact element value times sc, rounded once. (Placing the
 * code's bits straight into an FP32, subnormal codes as FP32 subnormals,
 * is no faster here and 20 times slower on blocks of subnormal codes: the
 * multiply by the scale takes a microcode assist for each.)
 */
__attribute__((target("avx2,f16c"), always_inline))
static inline void fp8_block_fast(bool e4m3, const uint8_t *blk, float sc, float *const d[2])
{
	const bool join = e4m3 && sc <= 0x1p119f;
	const __m256 vsc = _mm256_set1_ps(join ? sc * 256.0f : sc), k256 = _mm256_set1_ps(256.0f);
	const __m128i zero = _mm_setzero_si128(), keep = _mm_set1_epi16((short)0xbf80);

#pragma GCC unroll 2
	for (unsigned int i = 0; i < MAIA_MX_BLOCK; i += 16) {
		__m128i x = _mm_loadu_si128((const __m128i *)(const void *)(blk + i));
		__m128i h[2] = { _mm_unpacklo_epi8(zero, x), _mm_unpackhi_epi8(zero, x) };

#pragma GCC unroll 2
		for (unsigned int j = 0; j < 2; j++) {
			__m256 f;

			if (e4m3)
				h[j] = _mm_and_si128(_mm_srai_epi16(h[j], 1), keep);
			f = _mm256_cvtph_ps(h[j]);
			if (e4m3 && !join)
				f = _mm256_mul_ps(f, k256);
			_mm256_storeu_ps(MX_AT(d, i + 8 * j), _mm256_mul_ps(f, vsc));
		}
	}
}

/* Whether a block of FP8 codes holds a NaN code. */
__attribute__((target("avx2"), always_inline))
static inline bool fp8_has_nan(bool e4m3, const uint8_t *blk)
{
	__m256i x = _mm256_loadu_si256((const __m256i *)(const void *)blk);
	__m256i mag = _mm256_and_si256(x, _mm256_set1_epi8(0x7f));

	return _mm256_movemask_epi8(_mm256_cmpgt_epi8(mag, _mm256_set1_epi8(e4m3 ? 0x7e : 0x7c)));
}

__attribute__((target("avx2"), always_inline))
static inline void fp4_block(const uint8_t *blk, float sc, float *const d[2])
{
	/* |E2M1| by the code's low 3 bits, times the scale: one rounding, as elem * sc */
	const __m256 mag = _mm256_mul_ps(_mm256_setr_ps(0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f,
							6.0f), _mm256_set1_ps(sc));
	const __m256i sbit = _mm256_set1_epi32((int)0x80000000u);
	const __m128i low = _mm_set1_epi8(0x0f);
	__m128i b = _mm_loadu_si128((const __m128i *)(const void *)blk);
	__m128i lo = _mm_and_si128(b, low), hi = _mm_and_si128(_mm_srli_epi16(b, 4), low);
	__m128i codes[2] = { _mm_unpacklo_epi8(lo, hi), _mm_unpackhi_epi8(lo, hi) };

#pragma GCC unroll 2
	for (unsigned int h = 0; h < 2; h++) {
#pragma GCC unroll 2
		for (unsigned int q = 0; q < 2; q++) {
			__m256i c = _mm256_cvtepu8_epi32(q ? _mm_srli_si128(codes[h], 8) : codes[h]);
			__m256 f = _mm256_permutevar8x32_ps(mag, c);
			__m256i s = _mm256_and_si256(_mm256_slli_epi32(c, 28), sbit);

			_mm256_storeu_ps(MX_AT(d, h * 16 + q * 8), _mm256_or_ps(f, _mm256_castsi256_ps(s)));
		}
	}
}

__attribute__((target("avx2"), always_inline))
static inline void int8_block(const uint8_t *blk, float sc, float *const d[2])
{
	const __m256 vsc = _mm256_set1_ps(sc), k = _mm256_set1_ps(1.0f / 64.0f);

#pragma GCC unroll 4
	for (unsigned int i = 0; i < MAIA_MX_BLOCK; i += 8) {
		__m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(blk + i));
		__m256 f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));

		_mm256_storeu_ps(MX_AT(d, i), _mm256_mul_ps(_mm256_mul_ps(f, k), vsc));
	}
}

/*
 * The blocks of one format, their decoders inlined into the loop: a call
 * per block, and the constants it set up, cost as much as the decode.
 */
#define MX_RUN(name, target_isa, body)						\
	__attribute__((target(target_isa)))					\
	static void name(const uint8_t *blocks, const uint8_t *scales, size_t nblocks,	\
			 unsigned int bb, struct mx_walk w)				\
	{									\
		for (size_t b = 0; b < nblocks; b++, blocks += bb) {		\
			uint8_t s = scales[b];					\
			/* 2^(s-127) by its bits: s = 0 is the subnormal 2^-127 */	\
			float sc = fw_f32_from_bits(s ? (uint32_t)s << 23 : 0x00400000u); \
			float *d[2];						\
										\
			d[0] = mx_next_half(&w);				\
			d[1] = mx_next_half(&w);				\
			if (s == E8M0_NAN) {					\
				for (unsigned int i = 0; i < MAIA_MX_BLOCK; i++)	\
					*MX_AT(d, i) = NAN;			\
				continue;					\
			}							\
			body;							\
		}								\
	}

MX_RUN(run_e4m3, "avx2,f16c",
       if (!fp8_has_nan(true, blocks))
		fp8_block_fast(true, blocks, sc, d);
       else
		fp8_block(true, blocks, sc, d))
MX_RUN(run_e5m2, "avx2,f16c",
       if (!fp8_has_nan(false, blocks))
		fp8_block_fast(false, blocks, sc, d);
       else
		fp8_block(false, blocks, sc, d))
MX_RUN(run_fp4, "avx2", fp4_block(blocks, sc, d))
MX_RUN(run_int8, "avx2", int8_block(blocks, sc, d))

/*
 * FP6 (E3M2, E2M3) with AVX2: four codes in three bytes. Each 16 bytes of
 * the block (bytes 0-15 in the low lane, 8-23 in the high one) go through
 * a VPSHUFB that puts in word i the two bytes holding field i (its bits 6
 * i % 8 of bytes 0-1 of its group of three, the fourth field at bit 10 of
 * bytes 1-2), and a VPMULLW by 2^10, 2^4, 2^6 or 1 moves the field to bits
 * 10-15. Shifted right arithmetically by 2 (E3M2) or 3 (E2M3) and masked,
 * the field's sign is an FP16's sign and its exponent and mantissa the low
 * bits of the FP16's: the FP16 is worth 2^-12 (E3M2) or 2^-14 (E2M3) of
 * the element, subnormal codes included (FP6 has no Inf or NaN), and F16C
 * converts it exactly. That power of two joins the scale in one multiply
 * when the product is a float, as E4M3's 2^8 does: the exact element value
 * times sc, rounded once, as the reference's table lookup and multiply.
 */
#define FP6_W(b, j)	(b) + 3 * (j), (b) + 3 * (j) + 1, (b) + 3 * (j), (b) + 3 * (j) + 1, \
			(b) + 3 * (j) + 1, (b) + 3 * (j) + 2, (b) + 3 * (j) + 1, (b) + 3 * (j) + 2
#define FP6_W8(b)	FP6_W(b, 0), FP6_W(b, 1)
/* elements 0-7 and 16-23 (bytes 0-5, 12-17), then 8-15 and 24-31 (6-11, 18-23) */
static const uint8_t fp6_words[2][32] = { { FP6_W8(0), FP6_W8(4) }, { FP6_W8(6), FP6_W8(10) } };
static const uint16_t fp6_mul[16] = { 1024, 16, 64, 1, 1024, 16, 64, 1,
				      1024, 16, 64, 1, 1024, 16, 64, 1 };

__attribute__((target("avx2,f16c"), always_inline))
static inline void fp6_block(bool e3m2, const uint8_t *blk, float sc, float *const d[2])
{
	const float k = e3m2 ? 0x1p12f : 0x1p14f;
	const bool join = sc <= (e3m2 ? 0x1p115f : 0x1p113f);
	const __m256 vsc = _mm256_set1_ps(join ? sc * k : sc), vk = _mm256_set1_ps(k);
	const __m256i mul = _mm256_loadu_si256((const __m256i *)(const void *)fp6_mul);
	const __m256i keep = _mm256_set1_epi16((short)(e3m2 ? 0x9f00 : 0x8f80));
	__m256i x = _mm256_inserti128_si256(
		_mm256_castsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)blk)),
		_mm_loadu_si128((const __m128i *)(const void *)(blk + 8)), 1);

#pragma GCC unroll 2
	for (unsigned int q = 0; q < 2; q++) {
		__m256i h = _mm256_mullo_epi16(_mm256_shuffle_epi8(x, _mm256_loadu_si256(
			(const __m256i *)(const void *)fp6_words[q])), mul);

		h = _mm256_and_si256(e3m2 ? _mm256_srai_epi16(h, 2) : _mm256_srai_epi16(h, 3), keep);
#pragma GCC unroll 2
		for (unsigned int l = 0; l < 2; l++) {
			__m256 f = _mm256_cvtph_ps(l ? _mm256_extracti128_si256(h, 1) :
						       _mm256_castsi256_si128(h));

			if (!join)
				f = _mm256_mul_ps(f, vk);
			/* elements 16 l + 8 q .. + 7 */
			_mm256_storeu_ps(d[l] + 8 * q, _mm256_mul_ps(f, vsc));
		}
	}
}

MX_RUN(run_e3m2, "avx2,f16c", fp6_block(true, blocks, sc, d))
MX_RUN(run_e2m3, "avx2,f16c", fp6_block(false, blocks, sc, d))

/*
 * MX9/MX6/MX4 with AVX2, 8 elements a register: the block's first 16
 * bytes in both lanes, a VPSHUFB puts in dword i the byte(s) holding field
 * i (w i / 8, and the next when the field crosses into it), VPSRLVD by w i
 * % 8 brings it down; the pair's microexponent bit, VPSLLVD'd to bit 31 of
 * the broadcast microexponent byte, picks 2^(s - 127 - (m - 1)) or half
 * it by VBLENDVPS, both from msmx_pow2 (msmx_avx512.h); the magnitude
 * converted to FP32 times it, the sign ORed in: the same one rounding as
 * msmx_values() and the reference.
 */
#define MSMX2_B1(w, i)	((w) * (i) % 8 + (w) > 8 ? (w) * (i) / 8 + 1 : 0x80)
#define MSMX2_EL(w, i)	(w) * (i) / 8, MSMX2_B1(w, i), 0x80, 0x80
#define MSMX2_EL4(w, i)	MSMX2_EL(w, i), MSMX2_EL(w, (i) + 1), MSMX2_EL(w, (i) + 2), \
			MSMX2_EL(w, (i) + 3)
#define MSMX2_IDX(w)	{ { MSMX2_EL4(w, 0), MSMX2_EL4(w, 4) }, { MSMX2_EL4(w, 8), MSMX2_EL4(w, 12) } }
#define MSMX2_SH(w)	{ 0, (w) % 8, 2 * (w) % 8, 3 * (w) % 8, 4 * (w) % 8, 5 * (w) % 8, \
			  6 * (w) % 8, 7 * (w) % 8 }
/* MX9, MX6, MX4 (dtype - MAIA_DTYPE_MX9): elements 0-7, then 8-15 */
static const uint8_t msmx2_idx[3][2][32] = { MSMX2_IDX(8), MSMX2_IDX(5), MSMX2_IDX(3) };
static const uint32_t msmx2_shift[3][8] = { MSMX2_SH(8), MSMX2_SH(5), MSMX2_SH(3) };
/* element i's microexponent (bit i / 2 of its byte) to bit 31 */
static const uint32_t msmx2_ushift[2][8] = { { 31, 31, 30, 30, 29, 29, 28, 28 },
					     { 27, 27, 26, 26, 25, 25, 24, 24 } };

/* One MX9/MX6/MX4 block's 16 values to d: 16 bytes readable at src. */
__attribute__((target("avx2"), always_inline))
static inline void msmx_block_avx2(unsigned int m, const uint8_t *src, uint8_t s, float *d,
				   const __m256i idx[2], __m256i sh, const __m256i ush[2])
{
	const __m256i mag = _mm256_set1_epi32((int)((1u << m) - 1));
	const __m256i sbit = _mm256_set1_epi32((int)0x80000000u);
	const uint32_t *p = msmx_pow2 + s + 8 - m;
	__m256i x = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)(const void *)src));
	__m256i u = _mm256_set1_epi32(src[2 * (m + 1)]);
	__m256 st0 = _mm256_set1_ps(fw_f32_from_bits(p[0]));
	__m256 st1 = _mm256_set1_ps(fw_f32_from_bits(p[-1]));

#pragma GCC unroll 2
	for (unsigned int h = 0; h < 2; h++) {
		__m256i f = _mm256_srlv_epi32(_mm256_shuffle_epi8(x, idx[h]), sh);
		__m256 st = _mm256_blendv_ps(st0, st1, _mm256_castsi256_ps(
						     _mm256_sllv_epi32(u, ush[h])));
		__m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_and_si256(f, mag)), st);
		__m256i sign = _mm256_and_si256(_mm256_slli_epi32(f, 31 - (int)m), sbit);

		_mm256_storeu_ps(d + 8 * h, _mm256_or_ps(v, _mm256_castsi256_ps(sign)));
	}
}

/*
 * The last one or two blocks (MX6, MX4: fewer than 16 bytes left to read)
 * from a zero-padded copy, found by a count worked out once; where the
 * halves are consecutive (g == gstride: a row, as fw_mx_decode() asks),
 * their places without the walk.
 */
__attribute__((target("avx2"), always_inline))
static inline void run_msmx_avx2(unsigned int dtype, const uint8_t *blocks, const uint8_t *scales,
				 size_t nblocks, struct mx_walk w)
{
	const unsigned int m = msmx_m(dtype), bb = maia_dtype_block_bytes(dtype);
	const size_t tail = (16 + bb - 1) / bb - 1;	/* blocks too near the end for a 16-byte load */
	const size_t nmain = nblocks > tail ? nblocks - tail : 0;
	const bool row = w.g == w.gstride;
	uint8_t pad[32] = { 0 };
	__m256i idx[2], sh, ush[2];
	size_t b;

	sh = _mm256_loadu_si256((const __m256i *)(const void *)msmx2_shift[dtype - MAIA_DTYPE_MX9]);
	for (unsigned int h = 0; h < 2; h++) {
		idx[h] = _mm256_loadu_si256((const __m256i *)(const void *)
					    msmx2_idx[dtype - MAIA_DTYPE_MX9][h]);
		ush[h] = _mm256_loadu_si256((const __m256i *)(const void *)msmx2_ushift[h]);
	}
	for (b = 0; b < nblocks; b++, blocks += bb) {
		float *d = row ? w.grp + b * MAIA_MSMX_BLOCK : mx_next_half(&w);
		const uint8_t *src = blocks;

		if (scales[b] == E8M0_NAN) {
			for (unsigned int i = 0; i < MAIA_MSMX_BLOCK; i++)
				d[i] = NAN;
			continue;
		}
		if (b >= nmain) {	/* not 16 bytes left to read */
			memcpy(pad, blocks, bb);
			src = pad;
		}
		msmx_block_avx2(m, src, scales[b], d, idx, sh, ush);
	}
}

/* An MX9/MX6/MX4 loop (run) per format, its constants known inside. */
#define RUN_MSMX_OF(name, target_isa, run, dtype)					\
	__attribute__((target(target_isa)))						\
	static void name(const uint8_t *blocks, const uint8_t *scales, size_t nblocks,	\
			 struct mx_walk w)						\
	{										\
		run(dtype, blocks, scales, nblocks, w);					\
	}
RUN_MSMX_OF(run_mx9_avx2, "avx2", run_msmx_avx2, MAIA_DTYPE_MX9)
RUN_MSMX_OF(run_mx6_avx2, "avx2", run_msmx_avx2, MAIA_DTYPE_MX6)
RUN_MSMX_OF(run_mx4_avx2, "avx2", run_msmx_avx2, MAIA_DTYPE_MX4)

/*
 * FP6 (E3M2, E2M3) with AVX-512 VBMI: per block the 32 magnitudes times
 * the scale (the reference's multiply, two registers), each 16 elements a
 * VPERMB that puts the two bytes holding element i's 6-bit field (at bit
 * 6 i) in its dword, a VPSRLVD down by 6 i % 8, a VPERMT2PS lookup by the
 * field's low 5 bits (the permute ignores the rest) and its bit 5, the
 * sign, ORed into bit 31.
 */
#define FP6_EL(i)	6 * (i) / 8, 6 * (i) / 8 + 1, 0, 0
#define FP6_EL4(i)	FP6_EL(i), FP6_EL((i) + 1), FP6_EL((i) + 2), FP6_EL((i) + 3)
static const uint8_t fp6_bytes[2][64] = {
	{ FP6_EL4(0), FP6_EL4(4), FP6_EL4(8), FP6_EL4(12) },
	{ FP6_EL4(16), FP6_EL4(20), FP6_EL4(24), FP6_EL4(28) } };
static const uint32_t fp6_shift[16] = { 0, 6, 4, 2, 0, 6, 4, 2, 0, 6, 4, 2, 0, 6, 4, 2 };

__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static void run_fp6(unsigned int dtype, const uint8_t *blocks, const uint8_t *scales,
		    size_t nblocks, unsigned int bb, struct mx_walk w)
{
	const float *tab = fw_minifloat_table(dtype);
	const __m512 base0 = _mm512_loadu_ps(tab), base1 = _mm512_loadu_ps(tab + 16);
	const __m512i idx0 = _mm512_loadu_si512(fp6_bytes[0]), idx1 = _mm512_loadu_si512(fp6_bytes[1]);
	const __m512i shift = _mm512_loadu_si512(fp6_shift);
	const __m512i sbit = _mm512_set1_epi32((int)0x80000000u);

	for (size_t b = 0; b < nblocks; b++, blocks += bb) {
		uint8_t s = scales[b];
		/* 2^(s-127) by its bits: s = 0 is the subnormal 2^-127 */
		__m512 sc = _mm512_set1_ps(fw_f32_from_bits(s ? (uint32_t)s << 23 : 0x00400000u));
		__m512 t0 = _mm512_mul_ps(base0, sc), t1 = _mm512_mul_ps(base1, sc);
		__m512i x = _mm512_maskz_loadu_epi8(0xffffff, blocks);
		float *d[2];

		d[0] = mx_next_half(&w);
		d[1] = mx_next_half(&w);
		if (s == E8M0_NAN) {
			for (unsigned int i = 0; i < MAIA_MX_BLOCK; i++)
				*MX_AT(d, i) = NAN;
			continue;
		}
#pragma GCC unroll 2
		for (unsigned int h = 0; h < 2; h++) {
			__m512i c = _mm512_srlv_epi32(_mm512_permutexvar_epi8(h ? idx1 : idx0, x),
						      shift);
			__m512 f = _mm512_permutex2var_ps(t0, c, t1);

			_mm512_storeu_ps(d[h], _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
				_mm512_castps_si512(f), _mm512_slli_epi32(c, 26), sbit, 0xf8)));
		}
	}
}

/* MX9/MX6/MX4 blocks, 16 elements each, one half of the walk. */
__attribute__((target("avx512f,avx512bw,avx512vbmi"), always_inline))
static inline void run_msmx(unsigned int dtype, const uint8_t *blocks, const uint8_t *scales,
			    size_t nblocks, struct mx_walk w)
{
	const struct msmx_simd k = msmx_simd_of(dtype);

	for (size_t b = 0; b < nblocks; b++, blocks += k.bytes) {
		float *d = mx_next_half(&w);

		if (scales[b] == E8M0_NAN) {
			for (unsigned int i = 0; i < MAIA_MSMX_BLOCK; i++)
				d[i] = NAN;
			continue;
		}
		_mm512_storeu_ps(d, msmx_values(&k, k.idx, msmx_load(&k, blocks), scales[b]));
	}
}

#define AVX512_VBMI	"avx512f,avx512bw,avx512vbmi"
RUN_MSMX_OF(run_mx9, AVX512_VBMI, run_msmx, MAIA_DTYPE_MX9)
RUN_MSMX_OF(run_mx6, AVX512_VBMI, run_msmx, MAIA_DTYPE_MX6)
RUN_MSMX_OF(run_mx4, AVX512_VBMI, run_msmx, MAIA_DTYPE_MX4)

/*
 * The widest MX decoders this CPU runs. The AVX2 ones convert by F16C: every
 * AVX2 processor has it, but a hypervisor may offer AVX2 without it; asked
 * by CPUID, as not every compiler's __builtin_cpu_supports() knows "f16c"
 * (AVX2's answer includes the OS's AVX state, which F16C needs too).
 */
static enum fw_mx_simd mx_simd_cpu(void)
{
	enum fw_mx_simd cpu = FW_MX_SCALAR;
	unsigned int a, b, c, d;

	__builtin_cpu_init();
	if (__builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C))
		cpu = FW_MX_AVX2;
	if (cpu && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi"))
		cpu = FW_MX_AVX512;
	return cpu;
}

/* mx_simd_cpu() (which 0), once decided, and mx_simd_decide() (1), as last decided; -1 before */
static int decided[2] = { -1, -1 };
static enum fw_mx_simd decide(unsigned int which);

static inline enum fw_mx_simd simd_once(unsigned int which)
{
	int v = __atomic_load_n(&decided[which], __ATOMIC_ACQUIRE);

	return v >= 0 ? (enum fw_mx_simd)v : decide(which);
}

/*
 * The CPU's, capped by the kernel MAIA_TE_ISA makes the engine take
 * (fw_gemm_kernel_forced(): only one the CPU runs; avx2 needs AVX2, which
 * every CPU with the AVX-512 decoders has).
 */
static enum fw_mx_simd mx_simd_decide(void)
{
	enum fw_mx_simd cpu = simd_once(0);
	const struct fw_gemm_kernel *k = fw_gemm_kernel_forced();

	if (k && !strncmp(k->name, "portable", 8))
		return FW_MX_SCALAR;
	if (k && !strcmp(k->name, "avx2") && cpu > FW_MX_AVX2)
		return FW_MX_AVX2;
	return cpu;
}

static enum fw_mx_simd decide(unsigned int which)
{
	int v = (int)(which ? mx_simd_decide() : mx_simd_cpu());

	/* racing threads decide the same, or (fw_mx_simd_again()) bit-identical decoders */
	__atomic_store_n(&decided[which], v, __ATOMIC_RELEASE);
	return (enum fw_mx_simd)v;
}

enum fw_mx_simd fw_mx_simd(void)
{
	return simd_once(1);
}

void fw_mx_simd_again(void)
{
	decide(1);
}

bool fw_mx_decode_simd_as(enum fw_mx_simd simd, unsigned int dtype, const uint8_t *blocks,
			  const uint8_t *scales, size_t nblocks, unsigned int g, size_t gstride,
			  float *dst)
{
	unsigned int bb = maia_dtype_block_bytes(dtype);
	struct mx_walk w = { dst, 0, g, gstride };
	enum fw_mx_simd cpu = simd_once(0);
	bool vbmi;

	if (simd > cpu)
		simd = cpu;
	if (simd < FW_MX_AVX2 || !g || g % 16)
		return false;
	vbmi = simd == FW_MX_AVX512;
	switch (dtype) {
	case MAIA_DTYPE_MXFP8_E4M3:
		run_e4m3(blocks, scales, nblocks, bb, w);
		return true;
	case MAIA_DTYPE_MXFP8_E5M2:
		run_e5m2(blocks, scales, nblocks, bb, w);
		return true;
	case MAIA_DTYPE_MXFP4_E2M1:
		run_fp4(blocks, scales, nblocks, bb, w);
		return true;
	case MAIA_DTYPE_MXINT8:
		run_int8(blocks, scales, nblocks, bb, w);
		return true;
	case MAIA_DTYPE_MXFP6_E3M2:
	case MAIA_DTYPE_MXFP6_E2M3:
		if (vbmi)
			run_fp6(dtype, blocks, scales, nblocks, bb, w);
		else if (dtype == MAIA_DTYPE_MXFP6_E3M2)
			run_e3m2(blocks, scales, nblocks, bb, w);
		else
			run_e2m3(blocks, scales, nblocks, bb, w);
		return true;
	case MAIA_DTYPE_MX9:
	case MAIA_DTYPE_MX6:
	case MAIA_DTYPE_MX4:
		if (vbmi && dtype == MAIA_DTYPE_MX9)
			run_mx9(blocks, scales, nblocks, w);
		else if (vbmi && dtype == MAIA_DTYPE_MX6)
			run_mx6(blocks, scales, nblocks, w);
		else if (vbmi)
			run_mx4(blocks, scales, nblocks, w);
		else if (dtype == MAIA_DTYPE_MX9)
			run_mx9_avx2(blocks, scales, nblocks, w);
		else if (dtype == MAIA_DTYPE_MX6)
			run_mx6_avx2(blocks, scales, nblocks, w);
		else
			run_mx4_avx2(blocks, scales, nblocks, w);
		return true;
	default:
		return false;
	}
}

bool fw_mx_decode_simd(unsigned int dtype, const uint8_t *blocks, const uint8_t *scales,
		       size_t nblocks, unsigned int g, size_t gstride, float *dst)
{
	return fw_mx_decode_simd_as(fw_mx_simd(), dtype, blocks, scales, nblocks, g, gstride,
				    dst);
}
#else
enum fw_mx_simd fw_mx_simd(void)
{
	return FW_MX_SCALAR;
}

void fw_mx_simd_again(void)
{
}

bool fw_mx_decode_simd_as(enum fw_mx_simd simd, unsigned int dtype, const uint8_t *blocks,
			  const uint8_t *scales, size_t nblocks, unsigned int g, size_t gstride,
			  float *dst)
{
	(void)simd;
	(void)dtype;
	(void)blocks;
	(void)scales;
	(void)nblocks;
	(void)g;
	(void)gstride;
	(void)dst;
	return false;
}

bool fw_mx_decode_simd(unsigned int dtype, const uint8_t *blocks, const uint8_t *scales,
		       size_t nblocks, unsigned int g, size_t gstride, float *dst)
{
	return fw_mx_decode_simd_as(FW_MX_SCALAR, dtype, blocks, scales, nblocks, g, gstride,
				    dst);
}
#endif
