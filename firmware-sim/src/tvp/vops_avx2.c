// SPDX-License-Identifier: MIT
/* The element-wise vector ops (vops.h) compiled for AVX2 and FMA. */
#include <stdbool.h>

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC target("avx2,fma")
#define VOP_NAME		fw_tvp_vop_avx2
#define VOP_CMP_NAME		cmp_avx2
#define VOP_TRIG_FIX_NAME	trig_fix_avx2
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
