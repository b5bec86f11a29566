// SPDX-License-Identifier: MIT
/* The element-wise vector ops (vops.h) compiled for AVX-512 (F, DQ, VL, BW). */
#include <stdbool.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("avx512f,avx512dq,avx512vl,avx512bw,avx2,fma")
#define VOP_NAME		fw_tvp_vop_avx512
#define VOP_CMP_NAME		cmp_avx512
#define VOP_TRIG_FIX_NAME	trig_fix_avx512
#include <immintrin.h>
#include <math.h>

#include "tvp.h"

/* sqrt 16 lanes, 1 / sqrt (in double) 8 lanes at a time; a masked tail */
static void sqrt_avx512(unsigned int n, fw_tvp_f32 *restrict o, const fw_tvp_f32 *restrict a,
			bool rsqrt)
{
	unsigned int i = 0;

	if (!rsqrt) {
		for (; i < n; i += 16) {
			__mmask16 m = n - i >= 16 ? 0xffff : (__mmask16)((1u << (n - i)) - 1);

			_mm512_mask_storeu_ps((float *)(o + i), m,
					      _mm512_sqrt_ps(_mm512_maskz_loadu_ps(m, (const float *)(a + i))));
		}
	} else {
		const __m512d one = _mm512_set1_pd(1.0);

		for (; i < n; i += 8) {
			__mmask8 m = n - i >= 8 ? 0xff : (__mmask8)((1u << (n - i)) - 1);
			__m512d d = _mm512_cvtps_pd(_mm256_maskz_loadu_ps(m, (const float *)(a + i)));

			_mm256_mask_storeu_ps((float *)(o + i), m,
					      _mm512_cvtpd_ps(_mm512_div_pd(one, _mm512_sqrt_pd(d))));
		}
	}
}
#define VOP_SQRT		sqrt_avx512
#include "vops.h"

bool fw_tvp_vop_avx512_usable(void)
{
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
	       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw");
}
#else
#include "tvp.h"

void fw_tvp_vop_avx512(unsigned int op, unsigned int imm, unsigned int n, fw_tvp_u32 *o,
		       const fw_tvp_u32 *a, const fw_tvp_u32 *b, const fw_tvp_u32 *c)
{
	fw_tvp_vop_generic(op, imm, n, o, a, b, c);
}

bool fw_tvp_vop_avx512_usable(void)
{
	return false;
}
#endif
