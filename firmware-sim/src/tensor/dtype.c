// SPDX-License-Identifier: MIT
/*
 * Element format conversions for the plain (non-block) dtypes: FP16, BF16,
 * FP8 E4M3/E5M2, INT8, INT32, and the FP6/FP4 element types the MX block
 * formats use. Rules are in Documentation/hw/dtypes.rst: round to nearest
 * even everywhere, NaN stays a quiet NaN where the format has one.
 */
#include <math.h>
#include <pthread.h>
#include <string.h>

#include "te.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#else
#define HAVE_X86 0
#endif

/* Unaligned, aliasing-safe views of element arrays. */
typedef uint16_t u16_any __attribute__((aligned(1), may_alias));
typedef uint32_t u32_any __attribute__((aligned(1), may_alias));

/* A small binary floating-point format. */
struct minifloat {
	int ebits;
	int mbits;
	int bias;
	bool has_inf;		/* IEEE style: top exponent is Inf/NaN */
	bool has_nan;		/* E4M3: only S.1111.111 is NaN */
	float max;
	int emax;		/* max = rmax * 2^(emax - mbits) */
	uint32_t rmax;		/* with 2^mbits <= rmax < 2^(mbits + 1) */
};

static const struct minifloat fmt_fp16 = { 5, 10, 15, true, true, 65504.0f, 15, 2047 };
static const struct minifloat fmt_e5m2 = { 5, 2, 15, true, true, 57344.0f, 15, 7 };
static const struct minifloat fmt_e4m3 = { 4, 3, 7, false, true, 448.0f, 8, 14 };
static const struct minifloat fmt_e3m2 = { 3, 2, 3, false, false, 28.0f, 4, 7 };
static const struct minifloat fmt_e2m3 = { 2, 3, 1, false, false, 7.5f, 2, 15 };
static const struct minifloat fmt_e2m1 = { 2, 1, 1, false, false, 6.0f, 2, 3 };

static const struct minifloat *minifloat_of(unsigned int type)
{
	switch (type) {
	case MAIA_DTYPE_FP16:
		return &fmt_fp16;
	case MAIA_DTYPE_FP8_E5M2:
	case MAIA_DTYPE_MXFP8_E5M2:
		return &fmt_e5m2;
	case MAIA_DTYPE_FP8_E4M3:
	case MAIA_DTYPE_MXFP8_E4M3:
		return &fmt_e4m3;
	case FW_ELEM_FP6_E3M2:
	case MAIA_DTYPE_MXFP6_E3M2:
		return &fmt_e3m2;
	case FW_ELEM_FP6_E2M3:
	case MAIA_DTYPE_MXFP6_E2M3:
		return &fmt_e2m3;
	case FW_ELEM_FP4_E2M1:
	case MAIA_DTYPE_MXFP4_E2M1:
		return &fmt_e2m1;
	default:
		return NULL;
	}
}

static uint32_t mf_max_code(const struct minifloat *m)
{
	if (m->has_inf)		/* largest exponent below Inf, all-ones mantissa */
		return ((((1u << m->ebits) - 2) << m->mbits) | ((1u << m->mbits) - 1));
	if (m->has_nan)		/* all ones is NaN: one below */
		return (1u << (m->ebits + m->mbits)) - 2;
	return (1u << (m->ebits + m->mbits)) - 1;
}

static uint32_t mf_nan_code(const struct minifloat *m)
{
	if (m->has_inf)		/* quiet NaN: top mantissa bit set */
		return (((1u << m->ebits) - 1) << m->mbits) | (1u << (m->mbits - 1));
	return (1u << (m->ebits + m->mbits)) - 1;
}

/*
 * FP32 -> minifloat, round to nearest even, on the FP32 bits: the 24-bit
 * significand is shifted right to the target's precision at the value's
 * exponent (clamped to the target's subnormal range), rounding on the
 * dropped bits.
 */
static uint32_t mf_encode(float f, const struct minifloat *m, bool saturate)
{
	uint32_t u = fw_f32_bits(f), sign = (u >> 31) << (m->ebits + m->mbits);
	uint32_t ex = (u >> 23) & 0xff, sig, r, rem, half, shift;
	int emin = 1 - m->bias, e;

	if (ex == 0xff) {
		if (u & 0x7fffff)	/* NaN */
			return m->has_nan ? sign | mf_nan_code(m) : sign;
		if (saturate || (!m->has_inf && !m->has_nan))
			return sign | mf_max_code(m);
		return sign | (m->has_inf ? ((1u << m->ebits) - 1) << m->mbits : mf_nan_code(m));
	}
	if (ex == 0)		/* zero or FP32 subnormal: below every target's half-ulp */
		return sign;
	e = (int)ex - 127;
	sig = (u & 0x7fffff) | 0x800000;
	shift = (uint32_t)(23 - m->mbits + (e < emin ? emin - e : 0));
	if (shift > 25)
		return sign;	/* below half the smallest subnormal */
	r = sig >> shift;
	rem = sig & ((1u << shift) - 1);
	half = 1u << (shift - 1);
	if (rem > half || (rem == half && (r & 1)))
		r++;
	if (e < emin)
		e = emin;
	if (r >= (2u << m->mbits)) {	/* rounding carried into the next binade */
		r >>= 1;
		e++;
	}
	if (e > m->emax || (e == m->emax && r > m->rmax)) {
		if (saturate || (!m->has_inf && !m->has_nan))
			return sign | mf_max_code(m);
		return sign | (m->has_inf ? ((1u << m->ebits) - 1) << m->mbits : mf_nan_code(m));
	}
	if (r < (1u << m->mbits))	/* subnormal */
		return sign | r;
	return sign | ((uint32_t)(e + m->bias) << m->mbits) | (r - (1u << m->mbits));
}

static float mf_decode(uint32_t v, const struct minifloat *m)
{
	uint32_t emask = (1u << m->ebits) - 1, mmask = (1u << m->mbits) - 1;
	uint32_t ex = (v >> m->mbits) & emask, man = v & mmask;
	bool neg = (v >> (m->ebits + m->mbits)) & 1;
	float r;

	if (m->has_inf && ex == emask)
		r = man ? NAN : INFINITY;
	else if (!m->has_inf && m->has_nan && ex == emask && man == mmask)
		r = NAN;
	else if (ex == 0)
		r = ldexpf((float)man, 1 - m->bias - m->mbits);
	else
		r = ldexpf((float)(man | (1u << m->mbits)), (int)ex - m->bias - m->mbits);
	return neg ? -r : r;
}

/* Decode tables for the 8-bit and smaller formats, built once. */
static float tab_e4m3[256], tab_e5m2[256], tab_e3m2[64], tab_e2m3[64], tab_e2m1[16];
static pthread_once_t tab_once = PTHREAD_ONCE_INIT;

static void tab_init(void)
{
	unsigned int i;

	for (i = 0; i < 256; i++) {
		tab_e4m3[i] = mf_decode(i, &fmt_e4m3);
		tab_e5m2[i] = mf_decode(i, &fmt_e5m2);
	}
	for (i = 0; i < 64; i++) {
		tab_e3m2[i] = mf_decode(i, &fmt_e3m2);
		tab_e2m3[i] = mf_decode(i, &fmt_e2m3);
	}
	for (i = 0; i < 16; i++)
		tab_e2m1[i] = mf_decode(i, &fmt_e2m1);
}

const float *fw_minifloat_table(unsigned int type)
{
	pthread_once(&tab_once, tab_init);
	switch (type) {
	case MAIA_DTYPE_FP8_E4M3:
	case MAIA_DTYPE_MXFP8_E4M3:
		return tab_e4m3;
	case MAIA_DTYPE_FP8_E5M2:
	case MAIA_DTYPE_MXFP8_E5M2:
		return tab_e5m2;
	case FW_ELEM_FP6_E3M2:
	case MAIA_DTYPE_MXFP6_E3M2:
		return tab_e3m2;
	case FW_ELEM_FP6_E2M3:
	case MAIA_DTYPE_MXFP6_E2M3:
		return tab_e2m3;
	case FW_ELEM_FP4_E2M1:
	case MAIA_DTYPE_MXFP4_E2M1:
		return tab_e2m1;
	default:
		return NULL;
	}
}

float fw_bf16_to_f32(uint16_t h)
{
	return fw_f32_from_bits((uint32_t)h << 16);
}

uint16_t fw_f32_to_bf16(float f)
{
	uint32_t u = fw_f32_bits(f);

	if (isnan(f))
		return (uint16_t)((u >> 16) | 0x0040);	/* keep sign and payload, set quiet */
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

float fw_fp16_to_f32(uint16_t h)
{
	return mf_decode(h, &fmt_fp16);
}

uint16_t fw_f32_to_fp16(float f)
{
	uint16_t h = (uint16_t)mf_encode(f, &fmt_fp16, false);

	if (isnan(f))		/* keep the top payload bits, like hardware */
		h |= (uint16_t)((fw_f32_bits(f) >> 13) & 0x3ff);
	return h;
}

float fw_fp8_to_f32(uint8_t v, unsigned int dtype)
{
	const float *t = fw_minifloat_table(dtype);

	return t ? t[v] : NAN;
}

uint8_t fw_f32_to_fp8(float f, unsigned int dtype, bool saturate)
{
	const struct minifloat *m = minifloat_of(dtype);

	return m ? (uint8_t)mf_encode(f, m, saturate) : 0;
}

float fw_elem_to_f32(uint8_t v, unsigned int elem)
{
	const float *t = fw_minifloat_table(elem);
	const struct minifloat *m = minifloat_of(elem);

	return t ? t[v & ((1u << (m->ebits + m->mbits + 1)) - 1)] : NAN;
}

uint8_t fw_f32_to_elem(float f, unsigned int elem, bool saturate)
{
	const struct minifloat *m = minifloat_of(elem);

	return m ? (uint8_t)mf_encode(f, m, saturate) : 0;
}

int8_t fw_f32_to_int8(float f)
{
	float r;

	if (isnan(f))
		return 0;
	r = nearbyintf(f);
	if (r > 127.0f)
		return 127;
	if (r < -128.0f)
		return -128;
	return (int8_t)r;
}

static int32_t f32_to_int32(float f)
{
	float r;

	if (isnan(f))
		return 0;
	r = nearbyintf(f);
	if (r >= 2147483648.0f)
		return INT32_MAX;
	if (r < -2147483648.0f)
		return INT32_MIN;
	return (int32_t)r;
}

float fw_dtype_max(unsigned int dtype)
{
	const struct minifloat *m = minifloat_of(dtype);

	if (m)
		return m->max;
	switch (dtype) {
	case MAIA_DTYPE_BF16:
		return fw_bf16_to_f32(0x7f7f);
	case MAIA_DTYPE_INT8:
		return 127.0f;
	case MAIA_DTYPE_MXINT8:
		return 127.0f / 64.0f;
	case MAIA_DTYPE_INT32:
		return 2147483520.0f;	/* largest float below 2^31 */
	default:
		return 3.40282347e38f;
	}
}

static void decode_bf16_c(const u16_any *src, size_t n, float *dst)
{
	u32_any *d = (u32_any *)dst;

	for (size_t i = 0; i < n; i++)
		d[i] = (uint32_t)src[i] << 16;
}

#if HAVE_X86
__attribute__((target("avx2")))
static void decode_bf16_avx2(const u16_any *src, size_t n, float *dst)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m128i h = _mm_loadu_si128((const __m128i *)(const void *)(src + i));
		__m256i w = _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16);

		_mm256_storeu_si256((__m256i *)(void *)(dst + i), w);
	}
	decode_bf16_c(src + i, n - i, dst + i);
}

/* F16C converts exactly, subnormals included. */
__attribute__((target("avx,f16c")))
static size_t decode_fp16_f16c(const u16_any *src, size_t n, float *dst)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m128i h = _mm_loadu_si128((const __m128i *)(const void *)(src + i));

		_mm256_storeu_ps(dst + i, _mm256_cvtph_ps(h));
	}
	return i;
}
#endif

static void decode_bf16(const u16_any *src, size_t n, float *dst)
{
#if HAVE_X86
	if (__builtin_cpu_supports("avx2")) {
		decode_bf16_avx2(src, n, dst);
		return;
	}
#endif
	decode_bf16_c(src, n, dst);
}

static void decode_fp16(const u16_any *src, size_t n, float *dst)
{
	size_t i = 0;

#if HAVE_X86
	/* every AVX2 CPU has F16C; not every compiler can ask for "f16c" */
	if (__builtin_cpu_supports("avx2"))
		i = decode_fp16_f16c(src, n, dst);
#endif
	for (; i < n; i++)
		dst[i] = fw_fp16_to_f32(src[i]);
}

void fw_decode(unsigned int dtype, const void *src, size_t n, float scale, float *dst)
{
	const uint8_t *b = src;
	const float *t;
	size_t i;

	switch (dtype) {
	case MAIA_DTYPE_FP32:
		memcpy(dst, src, n * 4);
		break;
	case MAIA_DTYPE_BF16:
		decode_bf16((const u16_any *)src, n, dst);
		break;
	case MAIA_DTYPE_FP16:
		decode_fp16((const u16_any *)src, n, dst);
		break;
	case MAIA_DTYPE_FP8_E4M3:
	case MAIA_DTYPE_FP8_E5M2:
		t = fw_minifloat_table(dtype);
		for (i = 0; i < n; i++)
			dst[i] = t[b[i]] * scale;
		break;
	case MAIA_DTYPE_INT8:
		for (i = 0; i < n; i++)
			dst[i] = (float)(int8_t)b[i] * scale;
		break;
	case MAIA_DTYPE_INT32:
		for (i = 0; i < n; i++) {
			int32_t v;

			memcpy(&v, b + 4 * i, 4);
			dst[i] = (float)v;
		}
		break;
	default:
		for (i = 0; i < n; i++)
			dst[i] = NAN;
		break;
	}
}

#if HAVE_X86
__attribute__((target("avx2")))
static void decode_bf16_groups_avx2(const u16_any *src, size_t ngroups, unsigned int g,
				    size_t gstride, float *dst)
{
	for (size_t i = 0; i < ngroups; i++, src += g, dst += gstride)
		for (unsigned int j = 0; j < g; j += 8) {
			__m128i h = _mm_loadu_si128((const __m128i *)(const void *)(src + j));

			_mm256_storeu_si256((__m256i *)(void *)(dst + j),
					    _mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
		}
}
#endif

void fw_decode_groups(unsigned int dtype, const void *src, size_t ngroups, unsigned int g,
			size_t gstride, float scale, float *dst)
{
	size_t bytes = (size_t)g * maia_dtype_size(dtype);
	const float *f = src;

	/*
	 * FP32 into the kernels' 16- and 32-column B panels: copies of a
	 * constant size, inlined, not a fw_decode() and a memcpy() call per
	 * group (256x4096x1024 FP32: 6 % of the time went to those calls).
	 */
	if (dtype == MAIA_DTYPE_FP32 && g == 32) {
		for (size_t i = 0; i < ngroups; i++)
			memcpy(dst + i * gstride, f + i * 32, 32 * sizeof(float));
		return;
	}
	if (dtype == MAIA_DTYPE_FP32 && g == 16) {
		for (size_t i = 0; i < ngroups; i++)
			memcpy(dst + i * gstride, f + i * 16, 16 * sizeof(float));
		return;
	}
#if HAVE_X86
	if (dtype == MAIA_DTYPE_BF16 && g % 8 == 0 && __builtin_cpu_supports("avx2")) {
		decode_bf16_groups_avx2(src, ngroups, g, gstride, dst);
		return;
	}
#endif
	for (size_t i = 0; i < ngroups; i++)
		fw_decode(dtype, (const uint8_t *)src + i * bytes, g, scale, dst + i * gstride);
}

void fw_encode(unsigned int dtype, const float *src, size_t n, float scale,
		 bool saturate, void *dst)
{
	uint8_t *b = dst;
	size_t i;

	switch (dtype) {
	case MAIA_DTYPE_FP32:
		memcpy(dst, src, n * 4);
		break;
	case MAIA_DTYPE_BF16:
		for (i = 0; i < n; i++) {
			uint16_t h = fw_f32_to_bf16(src[i]);

			memcpy(b + 2 * i, &h, 2);
		}
		break;
	case MAIA_DTYPE_FP16:
		for (i = 0; i < n; i++) {
			uint16_t h = fw_f32_to_fp16(src[i]);

			memcpy(b + 2 * i, &h, 2);
		}
		break;
	case MAIA_DTYPE_FP8_E4M3:
	case MAIA_DTYPE_FP8_E5M2:
		for (i = 0; i < n; i++)
			b[i] = fw_f32_to_fp8(src[i] / scale, dtype, saturate);
		break;
	case MAIA_DTYPE_INT8:
		for (i = 0; i < n; i++)
			b[i] = (uint8_t)fw_f32_to_int8(src[i] / scale);
		break;
	case MAIA_DTYPE_INT32:
		for (i = 0; i < n; i++) {
			int32_t v = f32_to_int32(src[i]);

			memcpy(b + 4 * i, &v, 4);
		}
		break;
	default:
		break;
	}
}
