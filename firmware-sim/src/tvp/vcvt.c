// SPDX-License-Identifier: MIT
/*
 * VCVT and the element conversions of loads and stores. Narrow float
 * formats go through the tensor engine's encoders (tensor/dtype.c: round
 * to nearest even, FP16 overflows to Inf, FP8 saturates to its largest
 * finite value, NaN stays NaN), so a VST of a value keeps exactly what a
 * VCVT of it gives.
 */
#include <limits.h>
#include <math.h>
#include <string.h>

#include "../tensor/te.h"
#include "tvp.h"

static float f32(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

uint32_t fw_tvp_load_elem(unsigned int dtype, const uint8_t *p)
{
	uint32_t u = 0;
	uint16_t h;

	switch (dtype) {
	case MAIA_DTYPE_FP32:
	case MAIA_DTYPE_INT32:
		memcpy(&u, p, 4);
		return u;
	case MAIA_DTYPE_BF16:
		memcpy(&h, p, 2);
		return (uint32_t)h << 16;
	case MAIA_DTYPE_FP16:
		memcpy(&h, p, 2);
		return bits(fw_fp16_to_f32(h));
	case MAIA_DTYPE_FP8_E4M3:
	case MAIA_DTYPE_FP8_E5M2:
		return bits(fw_fp8_to_f32(*p, dtype));
	default:	/* INT8: sign-extended */
		return (uint32_t)(int32_t)(int8_t)*p;
	}
}

void fw_tvp_store_elem(unsigned int dtype, uint32_t lane, uint8_t *p)
{
	int32_t v = (int32_t)lane;
	uint16_t h;

	switch (dtype) {
	case MAIA_DTYPE_FP32:
	case MAIA_DTYPE_INT32:
		memcpy(p, &lane, 4);
		return;
	case MAIA_DTYPE_BF16:
		h = fw_f32_to_bf16(f32(lane));
		memcpy(p, &h, 2);
		return;
	case MAIA_DTYPE_FP16:
		h = fw_f32_to_fp16(f32(lane));
		memcpy(p, &h, 2);
		return;
	case MAIA_DTYPE_FP8_E4M3:
	case MAIA_DTYPE_FP8_E5M2:
		*p = fw_f32_to_fp8(f32(lane), dtype, true);
		return;
	default:	/* INT8: saturated */
		*p = (uint8_t)(int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
		return;
	}
}

uint32_t fw_tvp_round_to(unsigned int dtype, uint32_t u)
{
	uint8_t buf[4];

	fw_tvp_store_elem(dtype, u, buf);
	return fw_tvp_load_elem(dtype, buf);
}

/* binary32 -> int32 toward zero, saturating, NaN -> 0 */
static int32_t f2i(float f)
{
	if (f != f)
		return 0;
	if (f >= 2147483648.0f)
		return INT32_MAX;
	if (f <= -2147483648.0f)
		return INT32_MIN;
	return (int32_t)f;
}

void fw_tvp_cvt(unsigned int kind, unsigned int n, fw_tvp_u32 *o, const fw_tvp_u32 *a)
{
	switch (kind) {
	case MAIA_TVP_CVT_F2I:
		for (unsigned int i = 0; i < n; i++)
			o[i] = (uint32_t)f2i(f32(a[i]));
		break;
	case MAIA_TVP_CVT_I2F:
		for (unsigned int i = 0; i < n; i++)
			o[i] = bits((float)(int32_t)a[i]);
		break;
	case MAIA_TVP_CVT_U2F:
		for (unsigned int i = 0; i < n; i++)
			o[i] = bits((float)a[i]);
		break;
	case MAIA_TVP_CVT_BF16:
		for (unsigned int i = 0; i < n; i++)
			o[i] = fw_tvp_round_to(MAIA_DTYPE_BF16, a[i]);
		break;
	case MAIA_TVP_CVT_FP16:
		for (unsigned int i = 0; i < n; i++)
			o[i] = fw_tvp_round_to(MAIA_DTYPE_FP16, a[i]);
		break;
	case MAIA_TVP_CVT_FP8_E4M3:
		for (unsigned int i = 0; i < n; i++)
			o[i] = fw_tvp_round_to(MAIA_DTYPE_FP8_E4M3, a[i]);
		break;
	default:	/* MAIA_TVP_CVT_FP8_E5M2 */
		for (unsigned int i = 0; i < n; i++)
			o[i] = fw_tvp_round_to(MAIA_DTYPE_FP8_E5M2, a[i]);
		break;
	}
}
