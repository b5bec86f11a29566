// SPDX-License-Identifier: MIT
/*
 * AVX2 decoders for the OCP MX formats GEMM reads most (MXFP8 E4M3/E5M2,
 * MXFP4, MXINT8). Same results as the scalar reference in dtype_mx.c, bit
 * for bit: every element value is exact in FP32 and is multiplied by the
 * block scale once, as there. The table lookups there cost about a
 * quarter of an MXFP8 GEMM's time.
 *
 * - FP8: E5M2 is the top byte of an FP16; E4M3 shifted left by 7 (sign
 *   apart) is an FP16 worth 2^-8 of the E4M3 value, subnormals included,
 *   and F16C converts both exactly. NaN codes (E4M3 S.1111.111, E5M2
 *   S.11111.mm with mm != 0) become the table's NaN, the default quiet NaN
 *   with the code's sign, not F16C's payload-keeping conversion.
 * - FP4 E2M1: twice the magnitude is a small integer, looked up with a byte
 *   shuffle; the sign bit is set separately so -0 stays -0.
 * - INT8: int8 * 2^-6.
 */
#include <math.h>

#include "te.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#define E8M0_NAN	0xffu

__attribute__((target("avx2,f16c")))
static void fp8_block(bool e4m3, const uint8_t *blk, float sc, float *dst)
{
	const __m256 vsc = _mm256_set1_ps(sc), k256 = _mm256_set1_ps(256.0f);
	const __m256i qnan = _mm256_set1_epi32(0x7fc00000);
	const __m128i m7f = _mm_set1_epi16(0x7f), m80 = _mm_set1_epi16(0x80);
	const __m128i nan_above = _mm_set1_epi16(e4m3 ? 0x7e : 0x7c);

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
		_mm256_storeu_ps(dst + i, _mm256_mul_ps(f, vsc));
	}
}

__attribute__((target("avx2")))
static void fp4_block(const uint8_t *blk, float sc, float *dst)
{
	/* 2 * |E2M1| by code, for codes 0..15 (bit 3 is the sign) */
	const __m128i twice = _mm_setr_epi8(0, 1, 2, 3, 4, 6, 8, 12, 0, 1, 2, 3, 4, 6, 8, 12);
	const __m128i low = _mm_set1_epi8(0x0f), sign = _mm_set1_epi8(0x08);
	const __m256 vsc = _mm256_set1_ps(sc), half = _mm256_set1_ps(0.5f);
	__m128i b = _mm_loadu_si128((const __m128i *)(const void *)blk);
	__m128i lo = _mm_and_si128(b, low), hi = _mm_and_si128(_mm_srli_epi16(b, 4), low);
	__m128i codes[2] = { _mm_unpacklo_epi8(lo, hi), _mm_unpackhi_epi8(lo, hi) };

	for (unsigned int h = 0; h < 2; h++) {
		__m128i mag = _mm_shuffle_epi8(twice, codes[h]);
		__m128i neg = _mm_and_si128(codes[h], sign);

		for (unsigned int q = 0; q < 2; q++) {
			__m128i m8 = q ? _mm_srli_si128(mag, 8) : mag;
			__m128i s8 = q ? _mm_srli_si128(neg, 8) : neg;
			__m256 f = _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(m8)), half);
			__m256i sbit = _mm256_slli_epi32(_mm256_cvtepu8_epi32(s8), 28);

			f = _mm256_or_ps(f, _mm256_castsi256_ps(sbit));
			_mm256_storeu_ps(dst + h * 16 + q * 8, _mm256_mul_ps(f, vsc));
		}
	}
}

__attribute__((target("avx2")))
static void int8_block(const uint8_t *blk, float sc, float *dst)
{
	const __m256 vsc = _mm256_set1_ps(sc), k = _mm256_set1_ps(1.0f / 64.0f);

	for (unsigned int i = 0; i < MAIA_MX_BLOCK; i += 8) {
		__m128i b = _mm_loadl_epi64((const __m128i *)(const void *)(blk + i));
		__m256 f = _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(b));

		_mm256_storeu_ps(dst + i, _mm256_mul_ps(_mm256_mul_ps(f, k), vsc));
	}
}

bool fw_mx_decode_simd(unsigned int dtype, const uint8_t *blocks, const uint8_t *scales,
			 size_t nblocks, float *dst)
{
	unsigned int bb = maia_dtype_block_bytes(dtype);

	/* every AVX2 CPU has F16C; not every compiler can ask for "f16c" */
	if (!__builtin_cpu_supports("avx2"))
		return false;
	if (dtype != MAIA_DTYPE_MXFP8_E4M3 && dtype != MAIA_DTYPE_MXFP8_E5M2 &&
	    dtype != MAIA_DTYPE_MXFP4_E2M1 && dtype != MAIA_DTYPE_MXINT8)
		return false;
	for (size_t b = 0; b < nblocks; b++, blocks += bb, dst += MAIA_MX_BLOCK) {
		uint8_t s = scales[b];
		/* 2^(s-127) by its bits: s = 0 is the subnormal 2^-127 */
		float sc = fw_f32_from_bits(s ? (uint32_t)s << 23 : 0x00400000u);

		if (s == E8M0_NAN) {
			for (unsigned int i = 0; i < MAIA_MX_BLOCK; i++)
				dst[i] = NAN;
		} else if (dtype == MAIA_DTYPE_MXFP4_E2M1) {
			fp4_block(blocks, sc, dst);
		} else if (dtype == MAIA_DTYPE_MXINT8) {
			int8_block(blocks, sc, dst);
		} else {
			fp8_block(dtype == MAIA_DTYPE_MXFP8_E4M3, blocks, sc, dst);
		}
	}
	return true;
}
#else
bool fw_mx_decode_simd(unsigned int dtype, const uint8_t *blocks, const uint8_t *scales,
			 size_t nblocks, float *dst)
{
	(void)dtype;
	(void)blocks;
	(void)scales;
	(void)nblocks;
	(void)dst;
	return false;
}
#endif
