// SPDX-License-Identifier: MIT
/*
 * The collective engine's arithmetic (fw_fabric_coll.h): the reduction of
 * a received chunk with this rank's data, in plain C and AVX2 (chosen at
 * run time, bit for bit the same), and BF16's one rounding. The protocol
 * that calls them is fw_fabric_coll.c.
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "fw_fabric_coll.h"
#include "maia/hw/cmd.h"
#include "tensor/te.h"

/*
 * The reduction of one chunk: out[i] = a[i] op b[i] (MAIA_REDOP_*) over n
 * FP32 partial results a, the left operand (from rank - 1), and n values b
 * of this rank, FP32 (b_es 4) or BF16 (b_es 2: widened to FP32 exactly, in
 * the same pass); none of them aligned (a is a frame's payload). MAX and MIN
 * return the left operand on ties and a NaN operand if there is one (the
 * left one first): they select an operand's bits and never compute, so a
 * NaN keeps its sign and payload. Elementwise, so the vector width changes
 * no bit of the result: the reduction order stays the documented one.
 */
static uint32_t ld_u32(const uint8_t *p)
{
	uint32_t u;

	memcpy(&u, p, 4);
	return u;
}

static float f32_of(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* Element i of b as FP32 bits. */
static uint32_t ld_b_bits(const uint8_t *b, unsigned int b_es, size_t i)
{
	uint16_t h;

	if (b_es == 4)
		return ld_u32(b + 4 * i);
	memcpy(&h, b + 2 * i, 2);
	return (uint32_t)h << 16;
}

/* a op b on bit patterns (MAX and MIN: one of the two, unchanged). */
static uint32_t op_bits(unsigned int redop, uint32_t ua, uint32_t ub)
{
	float a = f32_of(ua), b = f32_of(ub), sum;

	if (redop == MAIA_REDOP_SUM) {
		sum = a + b;
		memcpy(&ua, &sum, 4);
		return ua;
	}
	if (isnan(a) || isnan(b))
		return isnan(a) ? ua : ub;
	if (redop == MAIA_REDOP_MAX)
		return b > a ? ub : ua;
	return b < a ? ub : ua;	/* MAIA_REDOP_MIN */
}

/* out2 (NULL: none) gets the same bits as out, element by element. */
static void reduce2_scalar(unsigned int redop, unsigned int b_es, uint8_t *out, uint8_t *out2,
			   const uint8_t *a, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t r = op_bits(redop, ld_u32(a + 4 * i), ld_b_bits(b, b_es, i));

		memcpy(out + 4 * i, &r, 4);
		if (out2)
			memcpy(out2 + 4 * i, &r, 4);
	}
}

void fw_coll_reduce_scalar(unsigned int redop, unsigned int b_es, uint8_t *out,
			   const uint8_t *a, const uint8_t *b, size_t n)
{
	reduce2_scalar(redop, b_es, out, NULL, a, b, n);
}

#if defined(__x86_64__)
/* Eight elements of b from element i, as FP32. */
__attribute__((target("avx2"), always_inline))
static inline __m256 ld8_b(const uint8_t *b, unsigned int b_es, size_t i)
{
	__m128i h;

	if (b_es == 4)
		return _mm256_loadu_ps((const float *)(const void *)(b + 4 * i));
	h = _mm_loadu_si128((const __m128i *)(const void *)(b + 2 * i));
	return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

__attribute__((target("avx2"), always_inline))
static inline __m256 op8(unsigned int redop, __m256 a, __m256 b)
{
	__m256 m, only_b_nan;

	if (redop == MAIA_REDOP_SUM)
		return _mm256_add_ps(a, b);
	/* b > a ? b : a (b < a for MIN), and a when either is NaN: MAXPS/MINPS return the second. */
	m = redop == MAIA_REDOP_MAX ? _mm256_max_ps(b, a) : _mm256_min_ps(b, a);
	/* Only b a NaN: b. */
	only_b_nan = _mm256_andnot_ps(_mm256_cmp_ps(a, a, _CMP_UNORD_Q),
				      _mm256_cmp_ps(b, b, _CMP_UNORD_Q));
	return _mm256_blendv_ps(m, b, only_b_nan);
}

/*
 * Inlined with constant redop, b_es and (below) out2 NULL or not: one loop
 * without branches per case. Each vector is loaded before it is stored, so
 * out or out2 may be b itself (an all-reduce in place).
 */
__attribute__((target("avx2"), always_inline))
static inline void reduce_avx2(unsigned int redop, unsigned int b_es, uint8_t *out,
			       uint8_t *out2, const uint8_t *a, const uint8_t *b, size_t n)
{
	size_t i = 0;

	if (out2 && !((uintptr_t)out2 % 4)) {
		/* out2 (the job's memory) streamed past the caches, from its first 32-byte line */
		size_t head = ((32 - (uintptr_t)out2 % 32) % 32) / 4;

		i = head < n ? head : n;
		reduce2_scalar(redop, b_es, out, out2, a, b, i);
		for (; i + 8 <= n; i += 8) {
			__m256 r = op8(redop,
				       _mm256_loadu_ps((const float *)(const void *)(a + 4 * i)),
				       ld8_b(b, b_es, i));

			_mm256_storeu_ps((float *)(void *)(out + 4 * i), r);
			_mm256_stream_ps((float *)(void *)(out2 + 4 * i), r);
		}
		_mm_sfence();
	}
	for (; i + 8 <= n; i += 8) {
		__m256 r = op8(redop, _mm256_loadu_ps((const float *)(const void *)(a + 4 * i)),
			       ld8_b(b, b_es, i));

		_mm256_storeu_ps((float *)(void *)(out + 4 * i), r);
		if (out2)
			_mm256_storeu_ps((float *)(void *)(out2 + 4 * i), r);
	}
	reduce2_scalar(redop, b_es, out + 4 * i, out2 ? out2 + 4 * i : NULL, a + 4 * i,
		       b + b_es * i, n - i);
}

__attribute__((target("avx2"), always_inline))
static inline void reduce_avx2_case(unsigned int redop, unsigned int b_es, uint8_t *out,
				    uint8_t *out2, const uint8_t *a, const uint8_t *b, size_t n)
{
	switch (redop * 8 + b_es) {
	case MAIA_REDOP_SUM * 8 + 4:
		reduce_avx2(MAIA_REDOP_SUM, 4, out, out2, a, b, n);
		break;
	case MAIA_REDOP_SUM * 8 + 2:
		reduce_avx2(MAIA_REDOP_SUM, 2, out, out2, a, b, n);
		break;
	case MAIA_REDOP_MAX * 8 + 4:
		reduce_avx2(MAIA_REDOP_MAX, 4, out, out2, a, b, n);
		break;
	case MAIA_REDOP_MAX * 8 + 2:
		reduce_avx2(MAIA_REDOP_MAX, 2, out, out2, a, b, n);
		break;
	case MAIA_REDOP_MIN * 8 + 4:
		reduce_avx2(MAIA_REDOP_MIN, 4, out, out2, a, b, n);
		break;
	default:	/* MAIA_REDOP_MIN, BF16 */
		reduce_avx2(MAIA_REDOP_MIN, 2, out, out2, a, b, n);
		break;
	}
}

__attribute__((target("avx2")))
static void reduce_avx2_any(unsigned int redop, unsigned int b_es, uint8_t *out,
			    const uint8_t *a, const uint8_t *b, size_t n)
{
	reduce_avx2_case(redop, b_es, out, NULL, a, b, n);
}

__attribute__((target("avx2")))
static void reduce2_avx2_any(unsigned int redop, unsigned int b_es, uint8_t *out,
			     uint8_t *out2, const uint8_t *a, const uint8_t *b, size_t n)
{
	reduce_avx2_case(redop, b_es, out, out2, a, b, n);
}
#endif

bool fw_coll_reduce_simd(unsigned int redop, unsigned int b_es, uint8_t *out,
			 const uint8_t *a, const uint8_t *b, size_t n)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx2")) {
		reduce_avx2_any(redop, b_es, out, a, b, n);
		return true;
	}
#endif
	(void)redop;
	(void)b_es;
	(void)out;
	(void)a;
	(void)b;
	(void)n;
	return false;
}

/* AVX2 when the CPU has it, chosen at run time. */
void fw_coll_reduce(unsigned int redop, unsigned int b_es, uint8_t *out, const uint8_t *a,
			 const uint8_t *b, size_t n)
{
	if (!fw_coll_reduce_simd(redop, b_es, out, a, b, n))
		fw_coll_reduce_scalar(redop, b_es, out, a, b, n);
}

void fw_coll_reduce2(unsigned int redop, unsigned int b_es, uint8_t *out, uint8_t *out2,
		     const uint8_t *a, const uint8_t *b, size_t n, bool simd)
{
	if (!out2) {
		if (simd)
			fw_coll_reduce(redop, b_es, out, a, b, n);
		else
			fw_coll_reduce_scalar(redop, b_es, out, a, b, n);
		return;
	}
#if defined(__x86_64__)
	if (simd && __builtin_cpu_supports("avx2")) {
		reduce2_avx2_any(redop, b_es, out, out2, a, b, n);
		return;
	}
#endif
	reduce2_scalar(redop, b_es, out, out2, a, b, n);
}

#if defined(__x86_64__)
/*
 * len bytes of src to out (NULL: none) and to out2, out2 streamed past the
 * caches (MOVNTDQ from its first 32-byte line; the bytes before it and the
 * tail stored as usual): out2 is the job's memory, which the collective
 * does not read again, and a store that misses there then neither reads the
 * line first nor pushes the chunks in flight out of the caches.
 */
__attribute__((target("avx2")))
static void copy2_avx2(uint8_t *out, uint8_t *out2, const uint8_t *src, size_t len)
{
	size_t i = (32 - (uintptr_t)out2 % 32) % 32;

	i = i < len ? i : len;
	if (out)
		memcpy(out, src, i);
	memcpy(out2, src, i);
	for (; i + 128 <= len; i += 128) {
		__m256i v0 = _mm256_loadu_si256((const __m256i *)(const void *)(src + i));
		__m256i v1 = _mm256_loadu_si256((const __m256i *)(const void *)(src + i + 32));
		__m256i v2 = _mm256_loadu_si256((const __m256i *)(const void *)(src + i + 64));
		__m256i v3 = _mm256_loadu_si256((const __m256i *)(const void *)(src + i + 96));

		if (out) {
			_mm256_storeu_si256((__m256i *)(void *)(out + i), v0);
			_mm256_storeu_si256((__m256i *)(void *)(out + i + 32), v1);
			_mm256_storeu_si256((__m256i *)(void *)(out + i + 64), v2);
			_mm256_storeu_si256((__m256i *)(void *)(out + i + 96), v3);
		}
		_mm256_stream_si256((__m256i *)(void *)(out2 + i), v0);
		_mm256_stream_si256((__m256i *)(void *)(out2 + i + 32), v1);
		_mm256_stream_si256((__m256i *)(void *)(out2 + i + 64), v2);
		_mm256_stream_si256((__m256i *)(void *)(out2 + i + 96), v3);
	}
	_mm_sfence();
	if (out)
		memcpy(out + i, src + i, len - i);
	memcpy(out2 + i, src + i, len - i);
}
#endif

/* len bytes of src to out (NULL: none) and to out2, out2 as copy2_avx2()'s. */
static void copy_to(uint8_t *out, uint8_t *out2, const uint8_t *src, size_t len)
{
#if defined(__x86_64__)
	if (__builtin_cpu_supports("avx2")) {
		copy2_avx2(out, out2, src, len);
		return;
	}
#endif
	if (out)
		memcpy(out, src, len);
	memcpy(out2, src, len);
}

void fw_coll_copy2(uint8_t *out, uint8_t *out2, const uint8_t *src, size_t len)
{
	if (out2)
		copy_to(out, out2, src, len);
	else
		memcpy(out, src, len);
}

void fw_coll_land(uint8_t *dst, const uint8_t *src, size_t len)
{
	copy_to(NULL, dst, src, len);
}

/* BF16's one rounding: n final FP32 values into BF16, to nearest even. */
void fw_coll_round_bf16(uint8_t *out, const float *acc, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint16_t h = fw_f32_to_bf16(acc[i]);

		memcpy(out + 2 * i, &h, 2);
	}
}

