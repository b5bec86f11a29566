// SPDX-License-Identifier: MIT
/* The element-wise vector ops (vops.h) compiled for AVX2 and FMA. */
#include <stdbool.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("avx2,fma")
#define VOP_NAME		fw_tvp_vop_avx2
#define VOP_CMP_NAME		cmp_avx2
#define VOP_TRIG_FIX_NAME	trig_fix_avx2
#include <immintrin.h>
#include <math.h>

#include "tvp.h"

/* sqrt and 1 / sqrt (in double) 8 and 4 lanes at a time, the tail lane by lane */
static void sqrt_avx2(unsigned int n, fw_tvp_f32 *restrict o, const fw_tvp_f32 *restrict a,
		      bool rsqrt)
{
	unsigned int i = 0;

	if (!rsqrt) {
		for (; i + 8 <= n; i += 8)
			_mm256_storeu_ps((float *)(o + i), _mm256_sqrt_ps(_mm256_loadu_ps((const float *)(a + i))));
	} else {
		const __m256d one = _mm256_set1_pd(1.0);

		for (; i + 4 <= n; i += 4) {
			__m256d d = _mm256_cvtps_pd(_mm_loadu_ps((const float *)(a + i)));

			_mm_storeu_ps((float *)(o + i), _mm256_cvtpd_ps(_mm256_div_pd(one, _mm256_sqrt_pd(d))));
		}
	}
	for (; i < n; i++)
		o[i] = rsqrt ? (float)(1.0 / sqrt((double)a[i])) : sqrtf(a[i]);
}
#define VOP_SQRT		sqrt_avx2
#include "vops.h"

bool fw_tvp_vop_avx2_usable(void)
{
	return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#else
#include "tvp.h"

void fw_tvp_vop_avx2(unsigned int op, unsigned int imm, unsigned int n, fw_tvp_u32 *o,
		     const fw_tvp_u32 *a, const fw_tvp_u32 *b, const fw_tvp_u32 *c)
{
	fw_tvp_vop_generic(op, imm, n, o, a, b, c);
}

bool fw_tvp_vop_avx2_usable(void)
{
	return false;
}
#endif
