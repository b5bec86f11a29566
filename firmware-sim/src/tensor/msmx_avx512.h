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
 * bytes holding field i (bytes 0 and 1), the microexponent byte (byte 2)
 * and the byte holding the sign bit (byte 3: MX9's sign is bit 31, ORed
 * in as it is); VPSRLVD by w i % 8 brings the field down; VPTESTMD
 * against bit 16 + i / 2 gives the lanes with u = 1. The value is the
 * magnitude converted to FP32 (exact) times one factor
 * 2^(s - 127 - u - (m - 1)), read from a table of powers of two
 * (msmx_pow2: normal or subnormal FP32, all exact): one rounding of the
 * same exact product as the reference's ldexp-like multiply, so the same
 * bits for every s, FP32 subnormal results included; the sign ORed in (a
 * -0 code gives -0, as the reference's negation).
 */
#ifndef FW_TENSOR_MSMX_AVX512_H
#define FW_TENSOR_MSMX_AVX512_H

#include <immintrin.h>

#include "te.h"

/*
 * dword i of a w-bit format: bytes w i / 8 and w i / 8 + 1, the
 * microexponent byte 2 w, then the byte holding the sign (bit 31 with w = 8)
 */
#define MSMX_EL(w, i)	(w) * (i) / 8, (w) * (i) / 8 + 1, 2 * (w), ((w) * (i) + (w) - 1) / 8
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

/*
 * msmx_pow2[j] = 2^(j - 134) by its bits, j = 0 .. 260: a normal FP32 from
 * j = 8, below it the subnormals 2^-127 .. 2^-134. The factor of a lane
 * under scale s, 2^(s - 127 - (m - 1) - u), is msmx_pow2[s - m + 8 - u]
 * (here and in the AVX2 decoder, run_msmx_avx2() in dtype_mx_avx2.c).
 */
#define MSMX_P2(j)	((j) >= 8 ? (uint32_t)((j) - 7) << 23 : 0x00400000u >> ((7 - (j)) & 31))
#define MSMX_P2_4(j)	MSMX_P2(j), MSMX_P2((j) + 1), MSMX_P2((j) + 2), MSMX_P2((j) + 3)
#define MSMX_P2_16(j)	MSMX_P2_4(j), MSMX_P2_4((j) + 4), MSMX_P2_4((j) + 8), MSMX_P2_4((j) + 12)
#define MSMX_P2_64(j)	MSMX_P2_16(j), MSMX_P2_16((j) + 16), MSMX_P2_16((j) + 32), \
			MSMX_P2_16((j) + 48)
static const uint32_t msmx_pow2[261] = {
	MSMX_P2_64(0), MSMX_P2_64(64), MSMX_P2_64(128), MSMX_P2_64(192), MSMX_P2_4(256),
	MSMX_P2(260) };

/* Magnitude bits m of MX9, MX6, MX4. */
static inline unsigned int msmx_m(unsigned int dtype)
{
	return dtype == MAIA_DTYPE_MX9 ? 7 : dtype == MAIA_DTYPE_MX6 ? 4 : 2;
}

/* A format's constants, set up once per loop. */
struct msmx_simd {
	__m512i idx, shift, ubit, mag, sbit;
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
	/* 2^(s - 127 - (m - 1)) and half it (u = 1), from the table */
	const uint32_t *p = msmx_pow2 + s + 8 - k->m;
	__m512i d = _mm512_permutexvar_epi8(idx, x);
	__m512i f = _mm512_srlv_epi32(d, k->shift);
	__m512 st = _mm512_mask_blend_ps(_mm512_test_epi32_mask(d, k->ubit),
					 _mm512_set1_ps(fw_f32_from_bits(p[0])),
					 _mm512_set1_ps(fw_f32_from_bits(p[-1])));
	__m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_and_si512(f, k->mag)), st);

	/* v | (f << (31 - m) & sign), MX9's sign already bit 31 of d */
	return _mm512_castsi512_ps(_mm512_ternarylogic_epi32(
		_mm512_castps_si512(v), k->m == 7 ? d : _mm512_slli_epi32(f, 31 - k->m),
		k->sbit, 0xf8));
}

#endif /* FW_TENSOR_MSMX_AVX512_H */
