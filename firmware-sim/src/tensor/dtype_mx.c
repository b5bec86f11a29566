// SPDX-License-Identifier: MIT
/*
 * Block (shared-scale) formats:
 * - OCP Microscaling v1.0: 32 elements share an E8M0 scale (2^(s-127),
 *   0xff = NaN). Elements FP8 E4M3/E5M2, FP6 E3M2/E2M3, FP4 E2M1, INT8
 *   (value = int8 * 2^-6). Packed little-endian, low bits first.
 * - Microsoft MX9/MX6/MX4 (shared microexponents): 16 elements share an
 *   8-bit exponent E (bias 127, 0xff = NaN); each pair of elements has a
 *   1-bit microexponent u and each element is sign + magnitude with m bits
 *   (7, 4, 2): value = (-1)^s * mag * 2^(E - 127 - u - (m - 1)).
 * Documentation/hw/dtypes.rst has the rules; this file is their reference.
 */
#include <math.h>
#include <string.h>

#include "te.h"

#define E8M0_NAN	0xffu
#define E8M0_BIAS	127

/* Element type, its largest exponent and width in bits. */
struct mx_elem {
	unsigned int elem;	/* MAIA_DTYPE_FP8_* / FW_ELEM_* or 0 for INT8 */
	int emax;
	unsigned int bits;
};

static bool mx_elem_of(unsigned int dtype, struct mx_elem *e)
{
	switch (dtype) {
	case MAIA_DTYPE_MXFP8_E4M3:
		*e = (struct mx_elem){ MAIA_DTYPE_FP8_E4M3, 8, 8 };
		return true;
	case MAIA_DTYPE_MXFP8_E5M2:
		*e = (struct mx_elem){ MAIA_DTYPE_FP8_E5M2, 15, 8 };
		return true;
	case MAIA_DTYPE_MXFP6_E3M2:
		*e = (struct mx_elem){ FW_ELEM_FP6_E3M2, 4, 6 };
		return true;
	case MAIA_DTYPE_MXFP6_E2M3:
		*e = (struct mx_elem){ FW_ELEM_FP6_E2M3, 2, 6 };
		return true;
	case MAIA_DTYPE_MXFP4_E2M1:
		*e = (struct mx_elem){ FW_ELEM_FP4_E2M1, 2, 4 };
		return true;
	case MAIA_DTYPE_MXINT8:
		*e = (struct mx_elem){ 0, 0, 8 };
		return true;
	default:
		return false;
	}
}

/*
 * Bit fields of up to 8 bits within a block, low bits first, through a 16-bit
 * window. The byte after a field's last byte always exists: every MX9/6/4
 * block ends with its microexponent byte.
 */
static unsigned int get_bits(const uint8_t *p, unsigned int pos, unsigned int width)
{
	unsigned int w = p[pos / 8] | (unsigned int)p[pos / 8 + 1] << 8;

	return (w >> (pos % 8)) & ((1u << width) - 1);
}

static void put_bits(uint8_t *p, unsigned int pos, unsigned int width, unsigned int v)
{
	unsigned int mask = ((1u << width) - 1) << (pos % 8);
	unsigned int w = p[pos / 8] | (unsigned int)p[pos / 8 + 1] << 8;

	w = (w & ~mask) | ((v << (pos % 8)) & mask);
	p[pos / 8] = (uint8_t)w;
	p[pos / 8 + 1] = (uint8_t)(w >> 8);
}

/* floor(log2(a)) for finite a > 0. */
static int ilog2f(float a)
{
	uint32_t ex = (fw_f32_bits(a) >> 23) & 0xff;
	int e;

	if (ex)
		return (int)ex - 127;
	frexpf(a, &e);		/* FP32 subnormal */
	return e - 1;
}

/* v * 2^n, rounded once like ldexpf; a multiply when 2^n is a normal float. */
static float mul_pow2(float v, int n)
{
	if (n >= -126 && n <= 127)
		return v * fw_f32_from_bits((uint32_t)(n + 127) << 23);
	return ldexpf(v, n);
}

static void ocp_decode(unsigned int dtype, const uint8_t *blk, uint8_t s, float *dst)
{
	const float *tab;
	struct mx_elem e;
	unsigned int i;
	float sc;

	mx_elem_of(dtype, &e);
	tab = fw_minifloat_table(e.elem);
	if (s == E8M0_NAN) {
		for (i = 0; i < MAIA_MX_BLOCK; i++)
			dst[i] = NAN;
		return;
	}
	/* 2^(s-127) by its bits: s = 0 is the subnormal 2^-127 */
	sc = fw_f32_from_bits(s ? (uint32_t)s << 23 : 0x00400000u);
	switch (e.bits) {
	case 8:
		if (!e.elem) {
			for (i = 0; i < MAIA_MX_BLOCK; i++)
				dst[i] = (float)(int8_t)blk[i] * (1.0f / 64.0f) * sc;
		} else {
			for (i = 0; i < MAIA_MX_BLOCK; i++)
				dst[i] = tab[blk[i]] * sc;
		}
		break;
	case 4:
		for (i = 0; i < MAIA_MX_BLOCK; i += 2) {
			dst[i] = tab[blk[i / 2] & 0xf] * sc;
			dst[i + 1] = tab[blk[i / 2] >> 4] * sc;
		}
		break;
	default:	/* 6 bits: 4 elements in 3 bytes */
		for (i = 0; i < MAIA_MX_BLOCK; i += 4) {
			const uint8_t *p = blk + i / 4 * 3;
			uint32_t w = p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16;

			for (unsigned int j = 0; j < 4; j++)
				dst[i + j] = tab[(w >> (6 * j)) & 0x3f] * sc;
		}
		break;
	}
}

static void ocp_encode(unsigned int dtype, const float *src, uint8_t *blk, uint8_t *s)
{
	uint8_t codes[MAIA_MX_BLOCK];
	struct mx_elem e;
	float amax = 0.0f;
	unsigned int i;
	int x;

	mx_elem_of(dtype, &e);
	for (i = 0; i < MAIA_MX_BLOCK; i++) {
		float a = fabsf(src[i]);

		if (!isfinite(a)) {	/* NaN or Inf: the whole block is NaN */
			*s = E8M0_NAN;
			memset(blk, 0, maia_dtype_block_bytes(dtype));
			return;
		}
		if (a > amax)
			amax = a;
	}
	x = amax == 0.0f ? -E8M0_BIAS : ilog2f(amax) - e.emax;
	if (x < -E8M0_BIAS)
		x = -E8M0_BIAS;
	if (x > E8M0_BIAS)
		x = E8M0_BIAS;
	*s = (uint8_t)(x + E8M0_BIAS);
	for (i = 0; i < MAIA_MX_BLOCK; i++) {
		float v = mul_pow2(src[i], -x);

		if (!e.elem) {
			float r = nearbyintf(v * 64.0f);

			r = r > 127.0f ? 127.0f : r < -127.0f ? -127.0f : r;
			codes[i] = (uint8_t)(int8_t)r;
		} else {
			codes[i] = fw_f32_to_elem(v, e.elem, true);
		}
	}
	switch (e.bits) {
	case 8:
		memcpy(blk, codes, MAIA_MX_BLOCK);
		break;
	case 4:
		for (i = 0; i < MAIA_MX_BLOCK; i += 2)
			blk[i / 2] = (uint8_t)(codes[i] | codes[i + 1] << 4);
		break;
	default:
		for (i = 0; i < MAIA_MX_BLOCK; i += 4) {
			uint32_t w = codes[i] | (uint32_t)codes[i + 1] << 6 |
				     (uint32_t)codes[i + 2] << 12 | (uint32_t)codes[i + 3] << 18;
			uint8_t *p = blk + i / 4 * 3;

			p[0] = (uint8_t)w;
			p[1] = (uint8_t)(w >> 8);
			p[2] = (uint8_t)(w >> 16);
		}
		break;
	}
}

/* Magnitude bits of the MX9/MX6/MX4 elements. */
static unsigned int msmx_mbits(unsigned int dtype)
{
	return dtype == MAIA_DTYPE_MX9 ? 7 : dtype == MAIA_DTYPE_MX6 ? 4 : 2;
}

static void msmx_decode(unsigned int dtype, const uint8_t *blk, uint8_t s, float *dst)
{
	unsigned int m = msmx_mbits(dtype), w = m + 1, i;
	uint8_t micro = blk[MAIA_MSMX_BLOCK * w / 8];

	for (i = 0; i < MAIA_MSMX_BLOCK; i++) {
		unsigned int v = get_bits(blk, i * w, w);
		unsigned int u = (micro >> (i / 2)) & 1;
		float mag = (float)(v & ((1u << m) - 1));

		if (s == E8M0_NAN) {
			dst[i] = NAN;
			continue;
		}
		mag = mul_pow2(mag, (int)s - E8M0_BIAS - (int)u - (int)(m - 1));
		dst[i] = (v >> m) & 1 ? -mag : mag;
	}
}

static void msmx_encode(unsigned int dtype, const float *src, uint8_t *blk, uint8_t *s)
{
	unsigned int m = msmx_mbits(dtype), w = m + 1, i, bytes = maia_dtype_block_bytes(dtype);
	float amax = 0.0f, magmax = (float)((1u << m) - 1);
	uint8_t micro = 0;
	int x;

	memset(blk, 0, bytes);
	for (i = 0; i < MAIA_MSMX_BLOCK; i++) {
		float a = fabsf(src[i]);

		if (!isfinite(a)) {
			*s = E8M0_NAN;
			return;
		}
		if (a > amax)
			amax = a;
	}
	x = amax == 0.0f ? -E8M0_BIAS : ilog2f(amax);
	if (x < -E8M0_BIAS)
		x = -E8M0_BIAS;
	if (x > E8M0_BIAS)
		x = E8M0_BIAS;
	*s = (uint8_t)(x + E8M0_BIAS);
	for (i = 0; i < MAIA_MSMX_BLOCK; i += 2) {
		unsigned int v[2], u = 0;

		/*
		 * Every pair first tries the extra bit of precision (u = 1) and
		 * keeps it when both elements fit after rounding. That includes
		 * x = -127 (blocks of FP32 subnormals): step 2^(-127 - 1 - (m - 1))
		 * is as valid a value of the format as any other, and the finer
		 * grid contains the coarse one, so u = 1 is never less accurate.
		 */
		for (int try_u = 1; ; try_u--) {
			bool fits = true;

			for (unsigned int j = 0; j < 2; j++) {
				float mag = nearbyintf(mul_pow2(fabsf(src[i + j]), (int)(m - 1) + try_u - x));

				if (mag > magmax) {
					fits = false;
					mag = magmax;
				}
				v[j] = (unsigned int)mag;
			}
			if (fits || !try_u) {
				u = (unsigned int)try_u;
				break;
			}
		}
		micro |= (uint8_t)(u << (i / 2));
		for (unsigned int j = 0; j < 2; j++) {
			if (signbit(src[i + j]) && v[j])
				v[j] |= 1u << m;
			put_bits(blk, (i + j) * w, w, v[j]);
		}
	}
	blk[MAIA_MSMX_BLOCK * w / 8] = micro;
}

void fw_mx_decode_scalar(unsigned int dtype, const uint8_t *blocks, const uint8_t *scales,
			   size_t nblocks, float *dst)
{
	unsigned int bb = maia_dtype_block_bytes(dtype), bs = maia_dtype_block(dtype);
	size_t b;

	for (b = 0; b < nblocks; b++) {
		if (dtype >= MAIA_DTYPE_MX9)
			msmx_decode(dtype, blocks + b * bb, scales[b], dst + b * bs);
		else
			ocp_decode(dtype, blocks + b * bb, scales[b], dst + b * bs);
	}
}

void fw_mx_decode(unsigned int dtype, const uint8_t *blocks, const uint8_t *scales,
		    size_t nblocks, float *dst)
{
	if (!fw_mx_decode_simd(dtype, blocks, scales, nblocks, MAIA_MX_BLOCK, MAIA_MX_BLOCK, dst))
		fw_mx_decode_scalar(dtype, blocks, scales, nblocks, dst);
}

void fw_mx_decode_groups(unsigned int dtype, const uint8_t *blocks, const uint8_t *scales,
			   size_t nblocks, unsigned int g, size_t gstride, float *dst)
{
	unsigned int bb = maia_dtype_block_bytes(dtype), bs = maia_dtype_block(dtype);
	float tmp[MAIA_MX_BLOCK];

	if (fw_mx_decode_simd(dtype, blocks, scales, nblocks, g, gstride, dst))
		return;
	/* a block at a time, then its runs of consecutive elements to their places */
	for (size_t b = 0; b < nblocks; b++) {
		fw_mx_decode_scalar(dtype, blocks + b * bb, scales + b, 1, tmp);
		for (unsigned int i = 0; i < bs;) {
			size_t e = b * bs + i;
			unsigned int run = g - e % g < bs - i ? g - (unsigned int)(e % g) : bs - i;

			memcpy(dst + e / g * gstride + e % g, tmp + i, run * sizeof(float));
			i += run;
		}
	}
}

void fw_mx_encode(unsigned int dtype, const float *src, size_t nblocks,
		    uint8_t *blocks, uint8_t *scales)
{
	unsigned int bb = maia_dtype_block_bytes(dtype), bs = maia_dtype_block(dtype);
	size_t b;

	for (b = 0; b < nblocks; b++) {
		if (dtype >= MAIA_DTYPE_MX9)
			msmx_encode(dtype, src + b * bs, blocks + b * bb, &scales[b]);
		else
			ocp_encode(dtype, src + b * bs, blocks + b * bb, &scales[b]);
	}
}
