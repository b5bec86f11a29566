/* SPDX-License-Identifier: MIT */
/*
 * MX9 / MX6 / MX4 blocks with AVX-512 VBMI, for the A decoder
 * (dtype_mx_avx2.c, FP32) and the B pair decoder (gemm_bf16.c, BF16 pairs):
 * a block's 16 elements as 16 FP32 lanes, bit for bit what msmx_decode()
 * (dtype_mx.c) gives for a scale byte s other than 0xff.
 *
 * Element i is the w-bit field (w = m + 1: 8, 5, 3) at bit w i, sign bit m
 * over an m-bit magnitude; its pair's microexponent u is bit i / 2 of the
 * byte after the fields (byte 2 w). One VPERMB puts, in dword i, the two
 * bytes holding field i (bytes 0 and 1) and the microexponent byte (byte
 * 2); VPSRLVD by w i % 8 brings the field down; VPTESTMD against bit
 * 16 + i / 2 gives the lanes with u = 1. The value is the magnitude
 * converted to FP32 times 2^(-u - (m - 1)) (both exact: a normal FP32 or
 * zero), times the scale 2^(s - 127) (2^-127 a subnormal FP32): one
 * rounding of the same exact product as the reference's ldexp-like
 * multiply, so the same bits for every s, FP32 subnormal results
 * included; the sign ORed in (a -0 code gives -0, as the reference's
 * negation).
 */
#ifndef FW_TENSOR_MSMX_AVX512_H
#define FW_TENSOR_MSMX_AVX512_H

#include <immintrin.h>

#include "te.h"

/* dword i of a w-bit format: bytes w i / 8 and w i / 8 + 1, the microexponent byte 2 w */
#define MSMX_EL(w, i)	(w) * (i) / 8, (w) * (i) / 8 + 1, 2 * (w), 0
#define MSMX_EL4(w, i)	MSMX_EL(w, i), MSMX_EL(w, (i) + 1), MSMX_EL(w, (i) + 2), MSMX_EL(w, (i) + 3)
#define MSMX_IDX(w)	{ MSMX_EL4(w, 0), MSMX_EL4(w, 4), MSMX_EL4(w, 8), MSMX_EL4(w, 12) }
#define MSMX_SH(w, i)	(w) * (i) % 8, (w) * ((i) + 1) % 8, (w) * ((i) + 2) % 8, (w) * ((i) + 3) % 8
#define MSMX_SHIFT(w)	{ MSMX_SH(w, 0), MSMX_SH(w, 4), MSMX_SH(w, 8), MSMX_SH(w, 12) }

/* MX9, MX6, MX4 (dtype - MAIA_DTYPE_MX9) */
static const uint8_t msmx_idx[3][64] = { MSMX_IDX(8), MSMX_IDX(5), MSMX_IDX(3) };
static const uint32_t msmx_shift[3][16] = { MSMX_SHIFT(8), MSMX_SHIFT(5), MSMX_SHIFT(3) };
static const uint32_t msmx_ubit[16] = {
	1u << 16, 1u << 16, 1u << 17, 1u << 17, 1u << 18, 1u << 18, 1u << 19, 1u << 19,
	1u << 20, 1u << 20, 1u << 21, 1u << 21, 1u << 22, 1u << 22, 1u << 23, 1u << 23 };

/* Magnitude bits m of MX9, MX6, MX4. */
static inline unsigned int msmx_m(unsigned int dtype)
{
	return dtype == MAIA_DTYPE_MX9 ? 7 : dtype == MAIA_DTYPE_MX6 ? 4 : 2;
}

/* A format's constants, set up once per loop: step 2^-(m - 1), half it for u = 1. */
struct msmx_simd {
	__m512i idx, shift, ubit, mag, sbit;
	__m512 step, half;
	unsigned int m, bytes;
};

__attribute__((target("avx512f,avx512bw,avx512vbmi"), always_inline))
static inline struct msmx_simd msmx_simd_of(unsigned int dtype)
{
	struct msmx_simd k;

	k.m = msmx_m(dtype);
	k.bytes = maia_dtype_block_bytes(dtype);
	k.idx = _mm512_loadu_si512(msmx_idx[dtype - MAIA_DTYPE_MX9]);
	k.shift = _mm512_loadu_si512(msmx_shift[dtype - MAIA_DTYPE_MX9]);
	k.ubit = _mm512_loadu_si512(msmx_ubit);
	k.mag = _mm512_set1_epi32((int)((1u << k.m) - 1));
	k.sbit = _mm512_set1_epi32((int)0x80000000u);
	k.step = _mm512_set1_ps(fw_f32_from_bits((128 - k.m) << 23));
	k.half = _mm512_set1_ps(fw_f32_from_bits((127 - k.m) << 23));
	return k;
}

/* A block's bytes (the rest zero), from byte 32 with off 32. */
__attribute__((target("avx512f,avx512bw"), always_inline))
static inline __m512i msmx_load(const struct msmx_simd *k, const uint8_t *blk)
{
	return _mm512_maskz_loadu_epi8((1ull << k->bytes) - 1, blk);
}

/*
 * The 16 values of the block in x from byte off (0 or 32: idx plus off)
 * under scale s (not 0xff).
 */
__attribute__((target("avx512f,avx512bw,avx512vbmi"), always_inline))
static inline __m512 msmx_values(const struct msmx_simd *k, __m512i idx, __m512i x,
				 unsigned int s)
{
	__m512i d = _mm512_permutexvar_epi8(idx, x);
	__m512i f = _mm512_srlv_epi32(d, k->shift);
	__m512 st = _mm512_mask_blend_ps(_mm512_test_epi32_mask(d, k->ubit), k->step, k->half);
	__m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(f, k->mag)), st);

	/* 2^(s - 127) by its bits: s = 0 is the subnormal 2^-127 */
	v = _mm512_mul_ps(v, _mm512_set1_ps(fw_f32_from_bits(s ? s << 23 : 0x00400000u)));

	/* v | (f << (31 - m) & sign) */
	return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
		_mm512_castps_si512(v), _mm512_slli_epi32(f, 31 - k->m), k->sbit, 0xf8));
}

#endif /* FW_TENSOR_MSMX_AVX512_H */
