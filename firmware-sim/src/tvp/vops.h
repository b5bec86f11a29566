/* SPDX-License-Identifier: MIT */
/*
 * The element-wise vector ops, written once and compiled once per ISA
 * (vops_generic.c, vops_avx2.c, vops_avx512.c define VOP_NAME and the
 * target, then include this). Each op is a plain loop over the lanes that
 * the compiler vectorises; results are the same bits on every variant:
 * contraction into FMAs is off, no fast-math, IEEE throughout (NaN, Inf,
 * -0, subnormals, no flush to zero). Out of place: o is none of a, b, c,
 * so the loops need no alias checks (vd may be a source in the program:
 * exec.c copies the result in afterwards).
 */
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
/*
 * no-trapping-math lets the loops with selects be if-converted; it changes
 * no value (the FP exception flags are nobody's). -fno-math-errno cannot be
 * set this way (libm builtins take it from the command line), so sqrt goes
 * through VOP_SQRT (the variant file's intrinsics) instead of sqrtf().
 */
#pragma GCC optimize("tree-vectorize", "vect-cost-model=dynamic", "fp-contract=off", "no-trapping-math")
#endif

#include <limits.h>
#include <math.h>

#include "tvp.h"
#include "vmath.h"

#ifndef VOP_SQRT
#define VOP_SQRT	sqrt_portable
/* sqrt (or 1 / sqrt in double) lane by lane: the portable variant's */
static void sqrt_portable(unsigned int n, fw_tvp_f32 *restrict o, const fw_tvp_f32 *restrict a,
		     bool rsqrt)
{
	for (unsigned int i = 0; i < n; i++)
		o[i] = rsqrt ? (float)(1.0 / sqrt((double)a[i])) : sqrtf(a[i]);
}
#endif

#define LOOP(expr)	do { for (unsigned int i = 0; i < n; i++) expr; } while (0)

static void VOP_CMP_NAME(unsigned int cond, bool fl, unsigned int n, fw_tvp_u32 *restrict o,
			 const fw_tvp_u32 *restrict a, const fw_tvp_u32 *restrict b)
{
	const fw_tvp_f32 *fa = (const fw_tvp_f32 *)a, *fb = (const fw_tvp_f32 *)b;
	const fw_tvp_i32 *ia = (const fw_tvp_i32 *)a, *ib = (const fw_tvp_i32 *)b;

	if (fl) {
		switch (cond) {
		case MAIA_TVP_CMP_EQ: LOOP(o[i] = fa[i] == fb[i]); return;
		case MAIA_TVP_CMP_NE: LOOP(o[i] = fa[i] != fb[i]); return;
		case MAIA_TVP_CMP_LT: LOOP(o[i] = fa[i] < fb[i]); return;
		case MAIA_TVP_CMP_LE: LOOP(o[i] = fa[i] <= fb[i]); return;
		case MAIA_TVP_CMP_GT: LOOP(o[i] = fa[i] > fb[i]); return;
		default:	      LOOP(o[i] = fa[i] >= fb[i]); return;
		}
	}
	switch (cond) {
	case MAIA_TVP_CMP_EQ:  LOOP(o[i] = a[i] == b[i]); return;
	case MAIA_TVP_CMP_NE:  LOOP(o[i] = a[i] != b[i]); return;
	case MAIA_TVP_CMP_LT:  LOOP(o[i] = ia[i] < ib[i]); return;
	case MAIA_TVP_CMP_LE:  LOOP(o[i] = ia[i] <= ib[i]); return;
	case MAIA_TVP_CMP_GT:  LOOP(o[i] = ia[i] > ib[i]); return;
	case MAIA_TVP_CMP_GE:  LOOP(o[i] = ia[i] >= ib[i]); return;
	case MAIA_TVP_CMP_ULT: LOOP(o[i] = a[i] < b[i]); return;
	case MAIA_TVP_CMP_ULE: LOOP(o[i] = a[i] <= b[i]); return;
	case MAIA_TVP_CMP_UGT: LOOP(o[i] = a[i] > b[i]); return;
	default:	       LOOP(o[i] = a[i] >= b[i]); return;
	}
}

/* Lanes the vector sin/cos path does not reduce accurately: libm in double. */
static void VOP_TRIG_FIX_NAME(bool is_cos, unsigned int n, fw_tvp_f32 *o, const fw_tvp_f32 *a)
{
	for (unsigned int i = 0; i < n; i++)
		if (!(fabsf(a[i]) <= VM_TRIG_MAX))
			o[i] = (float)(is_cos ? cos((double)a[i]) : sin((double)a[i]));
}

void VOP_NAME(unsigned int op, unsigned int imm, unsigned int n, fw_tvp_u32 *restrict o,
	      const fw_tvp_u32 *restrict a, const fw_tvp_u32 *restrict b,
	      const fw_tvp_u32 *restrict c)
{
	fw_tvp_f32 *restrict fo = (fw_tvp_f32 *)o;
	const fw_tvp_f32 *fa = (const fw_tvp_f32 *)a, *fb = (const fw_tvp_f32 *)b;
	const fw_tvp_f32 *fc = (const fw_tvp_f32 *)c;
	const fw_tvp_i32 *ia = (const fw_tvp_i32 *)a, *ib = (const fw_tvp_i32 *)b;
	fw_tvp_i32 *restrict io = (fw_tvp_i32 *)o;

	switch (op) {
	case MAIA_TVP_OP_VMOV:	LOOP(o[i] = a[i]); break;
	case MAIA_TVP_OP_VSEL:	LOOP(o[i] = c[i] ? a[i] : b[i]); break;
	case MAIA_TVP_OP_VFADD:	LOOP(fo[i] = fa[i] + fb[i]); break;
	case MAIA_TVP_OP_VFSUB:	LOOP(fo[i] = fa[i] - fb[i]); break;
	case MAIA_TVP_OP_VFMUL:	LOOP(fo[i] = fa[i] * fb[i]); break;
	case MAIA_TVP_OP_VFDIV:	LOOP(fo[i] = fa[i] / fb[i]); break;
	case MAIA_TVP_OP_VFMA:	LOOP(fo[i] = fmaf(fa[i], fb[i], fc[i])); break;
	case MAIA_TVP_OP_VFMIN:
		/* minimumNumber: a NaN loses, -0 < +0 (equal values: OR of the bits) */
		for (unsigned int i = 0; i < n; i++) {
			uint32_t r = fa[i] < fb[i] ? a[i] : b[i];

			r = fa[i] == fb[i] ? (a[i] | b[i]) : r;
			r = fa[i] != fa[i] ? b[i] : r;
			o[i] = fb[i] != fb[i] ? a[i] : r;
		}
		break;
	case MAIA_TVP_OP_VFMAX:
		for (unsigned int i = 0; i < n; i++) {
			uint32_t r = fa[i] > fb[i] ? a[i] : b[i];

			r = fa[i] == fb[i] ? (a[i] & b[i]) : r;
			r = fa[i] != fa[i] ? b[i] : r;
			o[i] = fb[i] != fb[i] ? a[i] : r;
		}
		break;
	case MAIA_TVP_OP_VFCMP:	VOP_CMP_NAME(imm, true, n, o, a, b); break;
	case MAIA_TVP_OP_VICMP:	VOP_CMP_NAME(imm, false, n, o, a, b); break;
	case MAIA_TVP_OP_VFABS:	LOOP(o[i] = a[i] & 0x7fffffffu); break;
	case MAIA_TVP_OP_VFNEG:	LOOP(o[i] = a[i] ^ 0x80000000u); break;
	case MAIA_TVP_OP_VFLOOR: LOOP(fo[i] = floorf(fa[i])); break;
	case MAIA_TVP_OP_VFCEIL: LOOP(fo[i] = ceilf(fa[i])); break;
	case MAIA_TVP_OP_VEXP:	LOOP(fo[i] = vm_expf(fa[i])); break;
	case MAIA_TVP_OP_VEXP2:	LOOP(fo[i] = vm_exp2f(fa[i])); break;
	case MAIA_TVP_OP_VLOG:	LOOP(fo[i] = vm_logf(fa[i])); break;
	case MAIA_TVP_OP_VLOG2:	LOOP(fo[i] = vm_log2f(fa[i])); break;
	case MAIA_TVP_OP_VSQRT:	VOP_SQRT(n, fo, fa, false); break;
	/* in double: one rounding that matters, within 1 ULP */
	case MAIA_TVP_OP_VRSQRT: VOP_SQRT(n, fo, fa, true); break;
	case MAIA_TVP_OP_VRCP:	LOOP(fo[i] = 1.0f / fa[i]); break;
	case MAIA_TVP_OP_VSIN:
		LOOP(fo[i] = vm_trigf(fa[i], 0));
		VOP_TRIG_FIX_NAME(false, n, fo, fa);
		break;
	case MAIA_TVP_OP_VCOS:
		LOOP(fo[i] = vm_trigf(fa[i], 1));
		VOP_TRIG_FIX_NAME(true, n, fo, fa);
		break;
	case MAIA_TVP_OP_VTANH:	LOOP(fo[i] = vm_tanhf(fa[i])); break;
	case MAIA_TVP_OP_VERF:	LOOP(fo[i] = vm_erff(fa[i])); break;
	case MAIA_TVP_OP_VIADD:	LOOP(o[i] = a[i] + b[i]); break;
	case MAIA_TVP_OP_VISUB:	LOOP(o[i] = a[i] - b[i]); break;
	case MAIA_TVP_OP_VIMUL:	LOOP(o[i] = a[i] * b[i]); break;
	case MAIA_TVP_OP_VIDIV:
		/* x / 0 = -1, INT32_MIN / -1 = INT32_MIN */
		for (unsigned int i = 0; i < n; i++) {
			bool ovf = ia[i] == INT32_MIN && ib[i] == -1;
			int32_t d = ib[i] == 0 || ovf ? 1 : ib[i];
			int32_t q = ia[i] / d;

			q = ovf ? INT32_MIN : q;
			io[i] = ib[i] == 0 ? -1 : q;
		}
		break;
	case MAIA_TVP_OP_VIREM:
		/* x % 0 = x, INT32_MIN % -1 = 0 */
		for (unsigned int i = 0; i < n; i++) {
			bool ovf = ia[i] == INT32_MIN && ib[i] == -1;
			int32_t d = ib[i] == 0 || ovf ? 1 : ib[i];
			int32_t r = ia[i] % d;

			io[i] = ib[i] == 0 ? ia[i] : r;
		}
		break;
	case MAIA_TVP_OP_VIMIN:	LOOP(io[i] = ia[i] < ib[i] ? ia[i] : ib[i]); break;
	case MAIA_TVP_OP_VIMAX:	LOOP(io[i] = ia[i] > ib[i] ? ia[i] : ib[i]); break;
	case MAIA_TVP_OP_VAND:	LOOP(o[i] = a[i] & b[i]); break;
	case MAIA_TVP_OP_VOR:	LOOP(o[i] = a[i] | b[i]); break;
	case MAIA_TVP_OP_VXOR:	LOOP(o[i] = a[i] ^ b[i]); break;
	case MAIA_TVP_OP_VSHL:	LOOP(o[i] = a[i] << (b[i] & 31u)); break;
	case MAIA_TVP_OP_VSHR:	LOOP(o[i] = a[i] >> (b[i] & 31u)); break;
	case MAIA_TVP_OP_VSRA:	LOOP(io[i] = ia[i] >> (b[i] & 31u)); break;
	default:
		break;
	}
}

#undef LOOP
