// SPDX-License-Identifier: MIT
/*
 * The TVP's instructions (maia/hw/tvp.h) one by one against independent
 * references written here in plain C and libm (double): every vector
 * float, int and conversion op over edge values (NaN, Inf, -0,
 * subnormals, INT32_MIN, shift counts past 31) and random bit patterns;
 * the transcendentals' ULP error over many inputs against libm in double;
 * moves, reductions, broadcasts, transpose and VDOT; loads and stores of
 * every dtype (rounding, saturation, sign extension, gathers, masks, page
 * crossings, with and without in-place mapping); the scalar ALU, compares,
 * branches and PID/NPROG. Runs through fw_tvp_kernel() on a flat fake
 * address space, every element-wise op on every ISA variant this host has.
 */
#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tap.h"
#include "tvp_util.h"

static struct tvp_mem M;

#define NI	64u			/* instances per lane run */
#define LANES	MAIA_TVP_VLEN
#define ARR	((uint64_t)NI * LANES * 4u)
#define A_VA	TVP_DATA
#define B_VA	(A_VA + ARR)
#define C_VA	(B_VA + ARR)
#define O_VA	(C_VA + ARR)

static uint32_t *arr(uint64_t va)
{
	return tvp_ptr(&M, va);
}

static const float fedge[] = {
	0.0f, -0.0f, 1.0f, -1.0f, INFINITY, -INFINITY, NAN, -NAN, FLT_MIN, -FLT_MIN,
	1e-40f, -1e-45f, FLT_MAX, -FLT_MAX, 0.5f, 3.0f, 2.5f, -2.5f, 1e10f, -7.25f,
	0x1p-126f * 0.5f, 100.0f, -88.0f, 1.0f + 0x1p-23f,
};
#define NFEDGE (sizeof(fedge) / sizeof(fedge[0]))

static const int32_t iedge[] = { 0, 1, -1, 2, -2, 31, 32, 33, 63, -32, INT32_MIN, INT32_MAX,
				 INT32_MIN + 1, 7, -7, 0x12345678, (int32_t)0x80000001u };
#define NIEDGE (sizeof(iedge) / sizeof(iedge[0]))

/* Fills A, B, C: edge pairs first, then random bits. */
static void fill_inputs(bool fl, uint64_t seed)
{
	uint32_t *a = arr(A_VA), *b = arr(B_VA), *c = arr(C_VA);
	uint64_t s = seed;
	size_t n = NI * LANES, i = 0;

	if (fl) {
		for (size_t x = 0; x < NFEDGE; x++)
			for (size_t y = 0; y < NFEDGE; y++, i++) {
				a[i] = tvp_u(fedge[x]);
				b[i] = tvp_u(fedge[y]);
				c[i] = tvp_u(fedge[(x + y) % NFEDGE]);
			}
	} else {
		for (size_t x = 0; x < NIEDGE; x++)
			for (size_t y = 0; y < NIEDGE; y++, i++) {
				a[i] = (uint32_t)iedge[x];
				b[i] = (uint32_t)iedge[y];
				c[i] = (uint32_t)iedge[(x + y) % NIEDGE];
			}
	}
	for (; i < n; i++) {
		a[i] = tvp_rand(&s);
		b[i] = tvp_rand(&s);
		c[i] = (i & 1) ? tvp_rand(&s) : 0;
	}
}

/*
 * Each instance loads its 1024 lanes of A, B, C (v1, v2, v3), applies op
 * into v4 and stores O. The scalar address arithmetic doubles as a test.
 */
static int run_lane_op(unsigned int op, uint32_t imm)
{
	static struct tvp_prog p;
	static const uint64_t args[4] = { A_VA, B_VA, C_VA, O_VA };
	struct tvp_run_opts o = { .grid = { NI }, .args = args, .nargs = 4 };
	unsigned int fmt = 0;

#define FMT_OF(name, code, mnem, f, c) if (op == code) fmt = f;
	MAIA_TVP_OPS(FMT_OF)
#undef FMT_OF
	p.n = 0;
	tvp_emit(&p, MAIA_TVP_OP_PID, 5, 0, 0, 0);
	tvp_emit(&p, MAIA_TVP_OP_LI, 6, 0, 0, LANES * 4);
	tvp_emit(&p, MAIA_TVP_OP_MUL, 7, 5, 6, 0);
	for (unsigned int r = 1; r <= 4; r++)
		tvp_emit(&p, MAIA_TVP_OP_ADD, r, r, 7, 0);
	for (unsigned int r = 1; r <= 3; r++)
		tvp_emit(&p, MAIA_TVP_OP_VLD, r, r, 0, tvp_memimm(MAIA_DTYPE_FP32, true, -1));
	switch (fmt) {
	case MAIA_TVP_FMT_V_V:
		tvp_emit(&p, op, 4, 1, 0, 0);
		break;
	case MAIA_TVP_FMT_V_V_I:
		tvp_emit(&p, op, 4, 1, 0, imm);
		break;
	case MAIA_TVP_FMT_V_V_V_V:
		tvp_emit(&p, op, 4, 1, 2, 3);
		break;
	default:
		tvp_emit(&p, op, 4, 1, 2, imm);
		break;
	}
	tvp_emit(&p, MAIA_TVP_OP_VST, 4, 4, 0, tvp_memimm(MAIA_DTYPE_FP32, true, -1));
	tvp_emit(&p, MAIA_TVP_OP_HALT, 0, 0, 0, 0);
	return tvp_run(&M, &p, &o, NULL);
}

static bool same_float(uint32_t got, float ref)
{
	return isnan(ref) ? isnan(tvp_f(got)) : got == tvp_u(ref);
}

static float ref_minmax(float a, float b, bool max)
{
	if (isnan(a))
		return b;
	if (isnan(b))
		return a;
	if (a == b)	/* only zeros differ: -0 is the smaller */
		return (signbit(a) != 0) != max ? a : b;
	return (a > b) == max ? a : b;
}

static bool ref_fcmp(unsigned int c, float a, float b)
{
	switch (c) {
	case MAIA_TVP_CMP_EQ:	return a == b;
	case MAIA_TVP_CMP_NE:	return !(a == b);
	case MAIA_TVP_CMP_LT:	return a < b;
	case MAIA_TVP_CMP_LE:	return a <= b;
	case MAIA_TVP_CMP_GT:	return a > b;
	default:		return a >= b;
	}
}

/* Exact float ops: the device's bits must equal the reference's (any NaN for NaN). */
static float ref_float(unsigned int op, unsigned int imm, float a, float b, float c, uint32_t cu)
{
	switch (op) {
	case MAIA_TVP_OP_VFADD:	return (float)((double)a + b);
	case MAIA_TVP_OP_VFSUB:	return (float)((double)a - b);
	case MAIA_TVP_OP_VFMUL:	return (float)((double)a * b);
	case MAIA_TVP_OP_VFDIV:	return (float)((double)a / b);
	case MAIA_TVP_OP_VFMA:	return fmaf(a, b, c);
	case MAIA_TVP_OP_VFMIN:	return ref_minmax(a, b, false);
	case MAIA_TVP_OP_VFMAX:	return ref_minmax(a, b, true);
	case MAIA_TVP_OP_VSEL:	return cu ? a : b;
	case MAIA_TVP_OP_VFABS:	return fabsf(a);
	case MAIA_TVP_OP_VFNEG:	return -a;
	case MAIA_TVP_OP_VFLOOR: return (float)floor(a);
	case MAIA_TVP_OP_VFCEIL: return (float)ceil(a);
	case MAIA_TVP_OP_VSQRT:	return (float)sqrt(a);
	case MAIA_TVP_OP_VRCP:	return (float)(1.0 / a);
	default:		return tvp_f(ref_fcmp(imm, a, b));
	}
}

static void test_float_exact(void)
{
	static const unsigned int ops[] = {
		MAIA_TVP_OP_VFADD, MAIA_TVP_OP_VFSUB, MAIA_TVP_OP_VFMUL, MAIA_TVP_OP_VFDIV,
		MAIA_TVP_OP_VFMA, MAIA_TVP_OP_VFMIN, MAIA_TVP_OP_VFMAX, MAIA_TVP_OP_VSEL,
		MAIA_TVP_OP_VFABS, MAIA_TVP_OP_VFNEG, MAIA_TVP_OP_VFLOOR, MAIA_TVP_OP_VFCEIL,
		MAIA_TVP_OP_VSQRT, MAIA_TVP_OP_VRCP,
	};
	const uint32_t *a = arr(A_VA), *b = arr(B_VA), *c = arr(C_VA), *o = arr(O_VA);

	fill_inputs(true, 11);
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		unsigned int op = ops[k], bad = 0, first = 0;
		int rc = run_lane_op(op, 0);

		for (size_t i = 0; i < NI * LANES; i++) {
			float r = ref_float(op, 0, tvp_f(a[i]), tvp_f(b[i]), tvp_f(c[i]), c[i]);
			bool ok = op == MAIA_TVP_OP_VSEL || op == MAIA_TVP_OP_VFABS ||
				  op == MAIA_TVP_OP_VFNEG ? o[i] == tvp_u(r) : same_float(o[i], r);

			if (!ok && !bad++)
				first = (unsigned int)i;
		}
		tap_ok(rc == MAIA_STATUS_OK && !bad,
		       "op 0x%02x: %u lanes bit-exact against the reference (%u wrong, first %u: "
		       "0x%08x op 0x%08x = 0x%08x)", op, NI * LANES, bad, first, a[first], b[first],
		       o[first]);
	}
	for (unsigned int cond = 0; cond <= MAIA_TVP_CMP_GE; cond++) {
		unsigned int bad = 0;
		int rc = run_lane_op(MAIA_TVP_OP_VFCMP, cond);

		for (size_t i = 0; i < NI * LANES; i++)
			bad += o[i] != (uint32_t)ref_fcmp(cond, tvp_f(a[i]), tvp_f(b[i]));
		tap_ok(rc == MAIA_STATUS_OK && !bad, "vfcmp condition %u: %u wrong", cond, bad);
	}
}

static void test_rsqrt(void)
{
	const uint32_t *a = arr(A_VA), *o = arr(O_VA);
	double worst = 0.0;
	int rc;

	fill_inputs(true, 12);
	rc = run_lane_op(MAIA_TVP_OP_VRSQRT, 0);
	for (size_t i = 0; i < NI * LANES; i++) {
		double x = tvp_f(a[i]), ref = x < 0 ? NAN : 1.0 / sqrt(x);
		double u = tvp_ulps(tvp_f(o[i]), ref);

		if (x == 0.0)	/* 1 / +-0 = +-Inf */
			u = tvp_f(o[i]) == (signbit(x) ? -INFINITY : INFINITY) ? 0.0 : INFINITY;
		if (u > worst)
			worst = u;
	}
	tap_ok(rc == MAIA_STATUS_OK && worst <= 1.0, "vrsqrt within 1 ULP (worst %.3f)", worst);
}

struct tcase {
	unsigned int op;
	const char *name;
	double (*ref)(double);
	float lo, hi;		/* the range most inputs come from */
};

static double ref_exp2(double x) { return exp2(x); }
static double ref_log2(double x) { return log2(x); }

/* ULP bound asserted for every transcendental (Documentation/hw/tvp.rst). */
#define TRANS_ULP_BOUND	1.0

static void test_transcendental(void)
{
	static const struct tcase cases[] = {
		{ MAIA_TVP_OP_VEXP, "vexp", exp, -110.0f, 95.0f },
		{ MAIA_TVP_OP_VEXP2, "vexp2", ref_exp2, -155.0f, 130.0f },
		{ MAIA_TVP_OP_VLOG, "vlog", log, 0.0f, 4.0f },
		{ MAIA_TVP_OP_VLOG2, "vlog2", ref_log2, 0.0f, 4.0f },
		{ MAIA_TVP_OP_VSIN, "vsin", sin, -20.0f, 20.0f },
		{ MAIA_TVP_OP_VCOS, "vcos", cos, -20.0f, 20.0f },
		{ MAIA_TVP_OP_VTANH, "vtanh", tanh, -12.0f, 12.0f },
		{ MAIA_TVP_OP_VERF, "verf", erf, -5.0f, 5.0f },
	};
	uint32_t *a = arr(A_VA);
	const uint32_t *o = arr(O_VA);

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct tcase *t = &cases[k];
		uint64_t s = 99 + k;
		double worst = 0.0;
		float worst_x = 0.0f;
		unsigned int edge_bad = 0;
		int rc;

		fill_inputs(true, 13 + k);
		for (size_t i = NFEDGE * NFEDGE; i < NI * LANES; i++) {
			uint32_t r = tvp_rand(&s);

			switch (i % 4) {
			case 0:		/* any bit pattern */
				break;
			case 1:		/* tiny and subnormal magnitudes */
				r = (r & 0x80000000u) | (r % 0x33000000u);
				break;
			default:	/* uniform over the interesting range */
				a[i] = tvp_u(t->lo + (t->hi - t->lo) * (float)(r >> 8) * 0x1p-24f);
				continue;
			}
			a[i] = r;
		}
		rc = run_lane_op(t->op, 0);
		for (size_t i = 0; i < NI * LANES; i++) {
			float x = tvp_f(a[i]);
			double ref = t->ref((double)x), u = tvp_ulps(tvp_f(o[i]), ref);

			if (u > worst) {
				worst = u;
				worst_x = x;
			}
		}
		/* signed zeros and the special values, exactly */
		for (size_t i = 0; i < NFEDGE * NFEDGE; i += NFEDGE) {
			float x = tvp_f(a[i]), r = tvp_f(o[i]), ref = (float)t->ref((double)x);

			if (isnan(ref) ? !isnan(r) : (tvp_u(r) != tvp_u(ref) &&
						     (isinf(ref) || ref == 0.0f)))
				edge_bad++;
		}
		tap_ok(rc == MAIA_STATUS_OK && worst <= TRANS_ULP_BOUND && !edge_bad,
		       "%s: %u inputs within %.1f ULP of libm (worst %.3f at %a), special values "
		       "exact (%u wrong)", t->name, NI * LANES, TRANS_ULP_BOUND, worst,
		       (double)worst_x, edge_bad);
		printf("# %s max error %.3f ULP\n", t->name, worst);
	}
}

static bool ref_icmp(unsigned int c, int32_t a, int32_t b)
{
	uint32_t x = (uint32_t)a, y = (uint32_t)b;

	switch (c) {
	case MAIA_TVP_CMP_EQ:	return a == b;
	case MAIA_TVP_CMP_NE:	return a != b;
	case MAIA_TVP_CMP_LT:	return a < b;
	case MAIA_TVP_CMP_LE:	return a <= b;
	case MAIA_TVP_CMP_GT:	return a > b;
	case MAIA_TVP_CMP_GE:	return a >= b;
	case MAIA_TVP_CMP_ULT:	return x < y;
	case MAIA_TVP_CMP_ULE:	return x <= y;
	case MAIA_TVP_CMP_UGT:	return x > y;
	default:		return x >= y;
	}
}

/* The int32 rules of maia/hw/tvp.h, in 64-bit arithmetic. */
static int32_t ref_int(unsigned int op, int32_t a, int32_t b)
{
	int64_t x = a, y = b;
	unsigned int sh = (uint32_t)b & 31u;

	switch (op) {
	case MAIA_TVP_OP_VIADD:	return (int32_t)(uint32_t)(uint64_t)(x + y);
	case MAIA_TVP_OP_VISUB:	return (int32_t)(uint32_t)(uint64_t)(x - y);
	case MAIA_TVP_OP_VIMUL:	return (int32_t)(uint32_t)(uint64_t)(x * y);
	case MAIA_TVP_OP_VIDIV:
		if (!y)
			return -1;
		return (int32_t)(uint32_t)(uint64_t)(x / y);	/* INT32_MIN / -1 wraps */
	case MAIA_TVP_OP_VIREM:
		return y ? (int32_t)(x % y) : a;
	case MAIA_TVP_OP_VIMIN:	return a < b ? a : b;
	case MAIA_TVP_OP_VIMAX:	return a > b ? a : b;
	case MAIA_TVP_OP_VAND:	return a & b;
	case MAIA_TVP_OP_VOR:	return a | b;
	case MAIA_TVP_OP_VXOR:	return a ^ b;
	case MAIA_TVP_OP_VSHL:	return (int32_t)((uint32_t)a << sh);
	case MAIA_TVP_OP_VSHR:	return (int32_t)((uint32_t)a >> sh);
	default:		return (int32_t)(x >> sh);	/* VSRA */
	}
}

static void test_int(void)
{
	static const unsigned int ops[] = {
		MAIA_TVP_OP_VIADD, MAIA_TVP_OP_VISUB, MAIA_TVP_OP_VIMUL, MAIA_TVP_OP_VIDIV,
		MAIA_TVP_OP_VIREM, MAIA_TVP_OP_VIMIN, MAIA_TVP_OP_VIMAX, MAIA_TVP_OP_VAND,
		MAIA_TVP_OP_VOR, MAIA_TVP_OP_VXOR, MAIA_TVP_OP_VSHL, MAIA_TVP_OP_VSHR,
		MAIA_TVP_OP_VSRA,
	};
	const uint32_t *a = arr(A_VA), *b = arr(B_VA), *o = arr(O_VA);

	fill_inputs(false, 21);
	for (size_t k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
		unsigned int bad = 0;
		int rc = run_lane_op(ops[k], 0);

		for (size_t i = 0; i < NI * LANES; i++)
			bad += o[i] != (uint32_t)ref_int(ops[k], (int32_t)a[i], (int32_t)b[i]);
		tap_ok(rc == MAIA_STATUS_OK && !bad, "int op 0x%02x: %u lanes, %u wrong", ops[k],
		       NI * LANES, bad);
	}
	for (unsigned int cond = 0; cond < MAIA_TVP_CMP_COUNT; cond++) {
		unsigned int bad = 0;
		int rc = run_lane_op(MAIA_TVP_OP_VICMP, cond);

		for (size_t i = 0; i < NI * LANES; i++)
			bad += o[i] != (uint32_t)ref_icmp(cond, (int32_t)a[i], (int32_t)b[i]);
		tap_ok(rc == MAIA_STATUS_OK && !bad, "vicmp condition %u: %u wrong", cond, bad);
	}
}

static int32_t ref_f2i(float f)
{
	if (isnan(f))
		return 0;
	if (f >= 2147483648.0)
		return INT32_MAX;
	if (f <= -2147483649.0)
		return INT32_MIN;
	return (int32_t)trunc(f);
}

static void test_cvt(void)
{
	const uint32_t *a = arr(A_VA), *o = arr(O_VA);

	fill_inputs(true, 31);
	for (unsigned int kind = 0; kind < MAIA_TVP_CVT_COUNT; kind++) {
		unsigned int bad = 0, first = 0;
		int rc = run_lane_op(MAIA_TVP_OP_VCVT, kind);

		for (size_t i = 0; i < NI * LANES; i++) {
			float x = tvp_f(a[i]);
			bool ok;

			switch (kind) {
			case MAIA_TVP_CVT_F2I:
				ok = o[i] == (uint32_t)ref_f2i(x);
				break;
			case MAIA_TVP_CVT_I2F:
				ok = o[i] == tvp_u((float)(int32_t)a[i]);
				break;
			case MAIA_TVP_CVT_U2F:
				ok = o[i] == tvp_u((float)a[i]);
				break;
			case MAIA_TVP_CVT_BF16:
				ok = same_float(o[i], tvp_ref_bf16(x));
				break;
			case MAIA_TVP_CVT_FP16:
				ok = same_float(o[i], (float)(_Float16)x);
				break;
			default:
				ok = same_float(o[i], tvp_ref_fp8(x, kind == MAIA_TVP_CVT_FP8_E4M3 ?
								 MAIA_DTYPE_FP8_E4M3 :
								 MAIA_DTYPE_FP8_E5M2));
				break;
			}
			if (!ok && !bad++)
				first = (unsigned int)i;
		}
		tap_ok(rc == MAIA_STATUS_OK && !bad, "vcvt %u: %u lanes, %u wrong (first 0x%08x -> "
		       "0x%08x)", kind, NI * LANES, bad, a[first], o[first]);
	}
}

/* ---- single-instance programs ---- */

static struct tvp_prog P;

static int run1(const uint64_t *args, uint32_t nargs)
{
	struct tvp_run_opts o = { .args = args, .nargs = nargs };

	return tvp_run(&M, &P, &o, NULL);
}

#define E(op, rd, ra, rb, imm) tvp_emit(&P, MAIA_TVP_OP_##op, rd, ra, rb, imm)
#define UNIT32 tvp_memimm(MAIA_DTYPE_FP32, true, -1)

static void test_moves_shape(void)
{
	uint32_t *o = arr(O_VA);
	const uint64_t args[2] = { O_VA, 0xabcdef0012345678ull };
	bool ok = true;
	int rc;

	/* v1 = 7 everywhere; then shape 3 x 5: VIOTA touches 15 lanes only */
	P.n = 0;
	E(VSPLATI, 1, 0, 0, 7);
	E(SHAPE, 0, 0, 0, 3u << 16 | 5u);
	E(VIOTA, 1, 0, 0, (uint32_t)-3);
	E(VSPLAT, 2, 2, 0, 0);
	E(VMOV, 3, 1, 0, 0);
	E(VEXT, 4, 1, 0, 14);		/* lane 14: 11 */
	E(VEXT, 5, 1, 0, 1023);		/* untouched: 7 */
	E(SHAPE, 0, 0, 0, 1u << 16 | 1024u);
	E(VST, 1, 1, 0, UNIT32);
	E(ADDI, 1, 1, 0, 4096);
	E(VST, 2, 1, 0, UNIT32);
	E(ADDI, 1, 1, 0, 4096);
	E(VST, 3, 1, 0, UNIT32);
	E(ADDI, 1, 1, 0, 4096);
	E(SST, 4, 1, 0, MAIA_DTYPE_INT32);
	E(ADDI, 1, 1, 0, 4);
	E(SST, 5, 1, 0, MAIA_DTYPE_INT32);
	memset(o, 0xee, 5 * 4096);
	rc = run1(args, 2);
	for (uint32_t i = 0; i < LANES; i++) {
		uint32_t want = i < 15 ? i - 3 : 7;

		ok &= o[i] == want && o[2048 + i] == (i < 15 ? want : 0);
		ok &= o[1024 + i] == (i < 15 ? 0x12345678u : 0);
	}
	tap_ok(rc == MAIA_STATUS_OK && ok, "viota, vsplat, vmov work on the shape's lanes only");
	tap_ok(o[3072] == 11 && o[3073] == 7, "vext reads any lane, sign-extended into sd");
}

static void test_perm(void)
{
	uint32_t *in = arr(A_VA), *o = arr(O_VA);
	float *fi = (float *)in;
	const uint64_t args[2] = { A_VA, O_VA };
	uint64_t s = 5;
	static const uint32_t shapes[][2] = { { 4, 8 }, { 1, 1024 }, { 32, 32 }, { 7, 3 },
					      { 1024, 1 } };

	for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
		uint32_t R = shapes[k][0], C = shapes[k][1];
		static const unsigned int ops[] = { MAIA_TVP_OP_VREDSUM, MAIA_TVP_OP_VREDMAX,
						    MAIA_TVP_OP_VREDMIN };
		bool ok = true;
		int rc;

		for (uint32_t i = 0; i < LANES; i++)
			fi[i] = (float)((int)(tvp_rand(&s) % 2001) - 1000) * 0.01f;
		fi[1] = NAN;	/* maximumNumber: loses to the numbers of its row */
		P.n = 0;
		E(VSPLATI, 9, 0, 0, tvp_u(-5.0f));
		for (unsigned int j = 0; j < 6; j++)
			E(VMOV, 10 + j, 9, 0, 0);
		E(SHAPE, 0, 0, 0, R << 16 | C);
		E(VLD, 1, 1, 0, UNIT32);
		for (unsigned int j = 0; j < 3; j++) {
			tvp_emit(&P, ops[j], 10 + 2 * j, 1, 0, 1);
			tvp_emit(&P, ops[j], 11 + 2 * j, 1, 0, 0);
		}
		E(VBCAST, 16, 1, 0, 0);
		E(VBROW, 17, 1, 0, 0);
		E(VBCOL, 18, 1, 0, 0);
		E(VTRANS, 19, 1, 0, 0);
		E(SHAPE, 0, 0, 0, 1u << 16 | 1024u);
		for (unsigned int j = 10; j < 20; j++) {
			E(VST, j, 2, 0, UNIT32);
			E(ADDI, 2, 2, 0, 4096);
		}
		memset(o, 0, 10 * 4096);
		rc = run1(args, 2);
		for (unsigned int j = 0; j < 3; j++) {
			const float *rrow = (const float *)o + (2 * j) * LANES;
			const float *rcol = (const float *)o + (2 * j + 1) * LANES;

			for (uint32_t r = 0; r < R; r++) {
				float acc = fi[r * C];

				for (uint32_t c = 1; c < C; c++)
					acc = j == 0 ? acc + fi[r * C + c] :
					      ref_minmax(acc, fi[r * C + c], j == 1);
				ok &= tvp_u(acc) == tvp_u(rrow[r]) ||
				      (isnan(acc) && isnan(rrow[r]));
			}
			for (uint32_t r = R; r < LANES; r++)
				ok &= rrow[r] == -5.0f;
			for (uint32_t c = 0; c < C; c++) {
				float acc = fi[c];

				for (uint32_t r = 1; r < R; r++)
					acc = j == 0 ? acc + fi[r * C + c] :
					      ref_minmax(acc, fi[r * C + c], j == 1);
				ok &= tvp_u(acc) == tvp_u(rcol[c]) ||
				      (isnan(acc) && isnan(rcol[c]));
			}
			for (uint32_t c = C; c < LANES; c++)
				ok &= rcol[c] == -5.0f;
		}
		for (uint32_t r = 0; r < R; r++)
			for (uint32_t c = 0; c < C; c++) {
				uint32_t l = r * C + c;

				ok &= o[6 * LANES + l] == in[0];
				ok &= o[7 * LANES + l] == in[c];
				ok &= o[8 * LANES + l] == in[r];
				ok &= o[9 * LANES + c * R + r] == in[l];
			}
		tap_ok(rc == MAIA_STATUS_OK && ok, "shape %u x %u: vredsum/max/min along both axes, "
		       "vbcast, vbrow, vbcol, vtrans", R, C);
	}
}

static void test_vdot(void)
{
	float *a = (float *)arr(A_VA), *b = (float *)arr(B_VA), *o = (float *)arr(O_VA);
	const uint64_t args[3] = { A_VA, B_VA, O_VA };
	static const uint32_t dims[][3] = { { 32, 32, 32 }, { 4, 8, 16 }, { 1, 1, 1 }, { 2, 3, 400 },
					    { 8, 128, 8 } };
	uint64_t s = 77;

	for (size_t k = 0; k < sizeof(dims) / sizeof(dims[0]); k++) {
		uint32_t m = dims[k][0], n = dims[k][1], kk = dims[k][2];
		bool ok = true;
		int rc;

		for (uint32_t i = 0; i < LANES; i++) {
			a[i] = (float)((int)(tvp_rand(&s) % 200) - 100) / 7.0f;
			b[i] = (float)((int)(tvp_rand(&s) % 200) - 100) / 3.0f;
		}
		P.n = 0;
		E(VLD, 1, 1, 0, UNIT32);
		E(VLD, 2, 2, 0, UNIT32);
		E(VSPLATI, 3, 0, 0, tvp_u(0.5f));
		E(SHAPE, 0, 0, 0, m << 16 | n);
		E(VDOT, 3, 1, 2, kk);
		E(VDOT, 4, 3, 3, 1);		/* vd = vd + va * vb with all three the same */
		E(SHAPE, 0, 0, 0, 1u << 16 | 1024u);
		E(VST, 3, 3, 0, UNIT32);
		rc = run1(args, 3);
		for (uint32_t i = 0; i < m; i++)
			for (uint32_t j = 0; j < n; j++) {
				float acc = 0.5f;

				for (uint32_t q = 0; q < kk; q++) {
					uint64_t ai = (uint64_t)i * kk + q, bi = (uint64_t)q * n + j;
					float p = (ai < LANES ? a[ai] : 0.0f) * (bi < LANES ? b[bi] : 0.0f);

					acc = acc + p;
				}
				ok &= tvp_u(acc) == tvp_u(o[i * n + j]);
			}
		tap_ok(rc == MAIA_STATUS_OK && ok, "vdot %u x %u x %u (operand lanes past 1024 read "
		       "0) matches products and sums in k order", m, n, kk);
	}
}

/* ---- memory ---- */

static const unsigned int dtypes[] = { MAIA_DTYPE_FP32, MAIA_DTYPE_FP16, MAIA_DTYPE_BF16,
				       MAIA_DTYPE_FP8_E4M3, MAIA_DTYPE_FP8_E5M2,
				       MAIA_DTYPE_INT32, MAIA_DTYPE_INT8 };

/* What a lane reads from one stored element, by the format's definition. */
static uint32_t ref_load(unsigned int dt, const uint8_t *p)
{
	uint32_t u = 0;
	uint16_t h;

	switch (dt) {
	case MAIA_DTYPE_FP16: {
		_Float16 f;

		memcpy(&f, p, 2);
		return tvp_u((float)f);
	}
	case MAIA_DTYPE_BF16:
		memcpy(&h, p, 2);
		return (uint32_t)h << 16;
	case MAIA_DTYPE_FP8_E4M3:
	case MAIA_DTYPE_FP8_E5M2: {
		u = p[0];
		{
			unsigned int eb = dt == MAIA_DTYPE_FP8_E4M3 ? 4 : 5, mb = 7 - eb;
			int bias = dt == MAIA_DTYPE_FP8_E4M3 ? 7 : 15;
			unsigned int e = (u >> mb) & ((1u << eb) - 1), f = u & ((1u << mb) - 1);
			double v;

			if (dt == MAIA_DTYPE_FP8_E4M3 && e == 15 && f == 7)
				return tvp_u(NAN);
			if (dt == MAIA_DTYPE_FP8_E5M2 && e == 31)
				return tvp_u(f ? NAN : (u & 0x80 ? -INFINITY : INFINITY));
			v = e ? ldexp(1.0 + f / (double)(1u << mb), (int)e - bias) :
				ldexp(f / (double)(1u << mb), 1 - bias);
			return tvp_u((float)((u & 0x80) ? -v : v));
		}
	}
	case MAIA_DTYPE_INT8:
		return (uint32_t)(int32_t)(int8_t)p[0];
	default:
		memcpy(&u, p, 4);
		return u;
	}
}

static void test_mem_dtypes(void)
{
	const uint64_t args[4] = { A_VA, O_VA, B_VA, C_VA };
	uint8_t *src = (uint8_t *)arr(A_VA), *dst = (uint8_t *)arr(O_VA);
	uint32_t *lanes = arr(B_VA);
	float *fl = (float *)arr(C_VA);
	uint64_t s = 123;

	for (size_t k = 0; k < sizeof(dtypes) / sizeof(dtypes[0]); k++) {
		unsigned int dt = dtypes[k], es = maia_dtype_size(dt);
		bool isint = dt == MAIA_DTYPE_INT32 || dt == MAIA_DTYPE_INT8;
		bool load_ok = true, store_ok = true;
		int rc;

		for (uint32_t i = 0; i < LANES * 4; i++)
			src[i] = (uint8_t)tvp_rand(&s);
		for (uint32_t i = 0; i < LANES; i++)
			fl[i] = i < NFEDGE ? fedge[i] : tvp_f(tvp_rand(&s));
		if (isint)
			for (uint32_t i = 0; i < LANES; i++)
				((int32_t *)fl)[i] = i < NIEDGE ? iedge[i] :
						     (int32_t)tvp_rand(&s) >> (i % 24);
		/* load src (dtype) -> store as FP32/INT32 to B; load C as 32 bits -> store (dtype) to O */
		P.n = 0;
		E(VLD, 1, 1, 0, tvp_memimm(dt, true, -1));
		E(VST, 1, 3, 0, UNIT32);
		E(VLD, 2, 4, 0, UNIT32);
		E(VST, 2, 2, 0, tvp_memimm(dt, true, -1));
		rc = run1(args, 4);
		for (uint32_t i = 0; i < LANES; i++) {
			uint32_t want = ref_load(dt, src + (size_t)i * es), got = lanes[i];

			load_ok &= isint || !isnan(tvp_f(want)) ? got == want : isnan(tvp_f(got));
		}
		for (uint32_t i = 0; i < LANES; i++) {
			uint32_t v = tvp_u(fl[i]), back = ref_load(dt, dst + (size_t)i * es);
			int32_t iv = (int32_t)v;

			switch (dt) {
			case MAIA_DTYPE_FP32:
			case MAIA_DTYPE_INT32:
				store_ok &= back == v;
				break;
			case MAIA_DTYPE_INT8:
				store_ok &= (int32_t)back == (iv < -128 ? -128 : iv > 127 ? 127 : iv);
				break;
			case MAIA_DTYPE_FP16:
				store_ok &= same_float(back, (float)(_Float16)fl[i]);
				break;
			case MAIA_DTYPE_BF16:
				store_ok &= same_float(back, tvp_ref_bf16(fl[i]));
				break;
			default:
				store_ok &= same_float(back, tvp_ref_fp8(fl[i], dt));
				break;
			}
		}
		tap_ok(rc == MAIA_STATUS_OK && load_ok, "vld dtype %u: 1024 elements decode as the "
		       "format defines (sign-extended integers)", dt);
		tap_ok(rc == MAIA_STATUS_OK && store_ok, "vst dtype %u: rounds to nearest even, FP8 "
		       "and INT8 saturate", dt);
	}
}

/* Gathers, scatters, masks, page crossings; the same with every access by read()/write(). */
static void test_mem_gather(void)
{
	const uint64_t args[3] = { A_VA + 4096 * 4 - 2, O_VA + 4096 - 6, B_VA };
	uint8_t *a8 = (uint8_t *)arr(A_VA), *o8 = (uint8_t *)arr(O_VA);
	int32_t *offs = (int32_t *)arr(B_VA);
	uint32_t *mask = arr(B_VA) + LANES;
	static uint8_t expect[16 * 4096];

	for (int mode = 0; mode < 2; mode++) {
		uint64_t s = 9;
		bool ok;
		int rc;

		M.no_map = mode == 1;
		for (uint32_t i = 0; i < 16 * 4096; i++)
			a8[i] = (uint8_t)tvp_rand(&s);
		memset(o8, 0x5a, 16 * 4096);
		memcpy(expect, o8, sizeof(expect));
		for (uint32_t i = 0; i < LANES; i++) {
			offs[i] = (int32_t)(tvp_rand(&s) % 4000) - 2000;	/* negative too */
			mask[i] = tvp_rand(&s) & 1;
		}
		/* v1 = gather(A' + off * 4), masked by v2; scatter v1 to O' + i * 4 (unit) masked,
		 * then a contiguous run via explicit offsets 5.. across a page */
		P.n = 0;
		E(VLD, 3, 3, 0, UNIT32);		/* offsets */
		E(ADDI, 4, 3, 0, 4096);
		E(VLD, 2, 4, 0, UNIT32);		/* mask */
		E(VLD, 1, 1, 3, tvp_memimm(MAIA_DTYPE_FP32, false, 2));
		E(VST, 1, 2, 0, tvp_memimm(MAIA_DTYPE_FP32, true, 2));
		E(VIOTA, 4, 0, 0, 5);
		E(VLD, 5, 1, 4, tvp_memimm(MAIA_DTYPE_FP32, false, -1));
		E(ADDI, 5, 2, 0, 8192);
		E(VST, 5, 5, 4, tvp_memimm(MAIA_DTYPE_FP32, false, -1));
		rc = run1(args, 3);
		for (uint32_t i = 0; i < LANES; i++) {
			uint32_t v = 0;

			if (mask[i])
				memcpy(&v, a8 + 4096 * 4 - 2 + (int64_t)offs[i] * 4, 4);
			if (mask[i])
				memcpy(expect + 4096 - 6 + i * 4, &v, 4);
			memcpy(&v, a8 + 4096 * 4 - 2 + (5 + i) * 4, 4);
			memcpy(expect + 4096 - 6 + 8192 + (5 + i) * 4, &v, 4);
		}
		ok = !memcmp(expect, o8, sizeof(expect));
		tap_ok(rc == MAIA_STATUS_OK && ok, "%s: masked gather with negative offsets, masked "
		       "unit scatter, contiguous offsets across pages, unaligned", mode ?
		       "read()/write() only" : "in place");
	}
	M.no_map = false;
}

/* A 32 x 32 tile of a matrix with rows 100 elements apart, in and out (rows as runs). */
static void test_mem_tile(void)
{
	float *mat = (float *)arr(A_VA), *out = (float *)arr(O_VA);
	const uint64_t args[3] = { A_VA, O_VA, 0 };
	bool ok = true;
	int rc;

	for (uint32_t i = 0; i < 100 * 40; i++)
		mat[i] = (float)i;
	memset(out, 0, 100 * 40 * 4);
	P.n = 0;
	E(SHAPE, 0, 0, 0, 32u << 16 | 32);
	E(VIOTA, 1, 0, 0, 0);
	E(LI, 5, 0, 0, 32);
	E(VSPLAT, 2, 5, 0, 0);
	E(VIDIV, 3, 1, 2, 0);		/* row */
	E(VIREM, 4, 1, 2, 0);		/* col */
	E(LI, 5, 0, 0, 100);
	E(VSPLAT, 2, 5, 0, 0);
	E(VIMUL, 3, 3, 2, 0);
	E(VIADD, 3, 3, 4, 0);		/* row * 100 + col */
	E(VLD, 6, 1, 3, tvp_memimm(MAIA_DTYPE_FP32, false, -1));
	E(VTRANS, 7, 6, 0, 0);
	E(VST, 7, 2, 3, tvp_memimm(MAIA_DTYPE_FP32, false, -1));
	rc = run1(args, 3);
	for (uint32_t r = 0; r < 40; r++)
		for (uint32_t c = 0; c < 100; c++)
			ok &= out[r * 100 + c] == (r < 32 && c < 32 ? mat[c * 100 + r] : 0.0f);
	tap_ok(rc == MAIA_STATUS_OK && ok, "a 32 x 32 tile of a 100-wide matrix loaded, "
	       "transposed and stored back by row offsets");
}

/* Offsets are int32: past INT32_MAX comes INT32_MIN, not the next element. */
static void test_mem_offset_wrap(void)
{
	uint8_t *a8 = (uint8_t *)arr(A_VA);
	const uint64_t sa = A_VA - ((uint64_t)INT32_MAX - 1);
	const uint64_t args[1] = { sa };
	int rc;

	a8[0] = 11;
	a8[1] = 22;
	P.n = 0;
	E(SHAPE, 0, 0, 0, 1u << 16 | 3);
	E(VSPLATI, 1, 0, 0, (uint32_t)INT32_MAX - 1);
	E(VIOTA, 2, 0, 0, 0);
	E(VIADD, 1, 1, 2, 0);		/* INT32_MAX - 1, INT32_MAX, INT32_MIN */
	E(SHAPE, 0, 0, 0, 1u << 16 | 2);
	E(VLD, 3, 1, 1, tvp_memimm(MAIA_DTYPE_INT8, false, -1));
	E(VEXT, 3, 3, 0, 0);
	E(VEXT, 4, 3, 0, 1);
	E(SHAPE, 0, 0, 0, 1u << 16 | 3);
	E(VLD, 3, 1, 1, tvp_memimm(MAIA_DTYPE_INT8, false, -1));
	M.faults = 0;
	rc = run1(args, 1);
	tap_ok(rc == MAIA_STATUS_MMU_FAULT && M.faults == 1 &&
	       M.fault_va == sa + (uint64_t)(int64_t)INT32_MIN,
	       "lane offsets INT32_MAX - 1, INT32_MAX load in place; INT32_MIN next faults at "
	       "sa - 2^31");
}

static void test_sld_sst(void)
{
	uint8_t *a8 = (uint8_t *)arr(A_VA);
	uint64_t *o = (uint64_t *)arr(O_VA);
	const uint64_t args[2] = { A_VA, O_VA };
	bool ok = true;
	int rc;

	memset(a8, 0, 64);
	a8[0] = 0x80;				/* int8 -128 */
	memcpy(a8 + 4, &(int32_t){ -5 }, 4);
	memcpy(a8 + 8, &(float){ -1.5f }, 4);
	memcpy(a8 + 12, &(uint16_t){ 0x3c00 }, 2);	/* fp16 1.0 */
	P.n = 0;
	E(SLD, 3, 1, 0, MAIA_DTYPE_INT8);
	E(ADDI, 1, 1, 0, 4);
	E(SLD, 4, 1, 0, MAIA_DTYPE_INT32);
	E(ADDI, 1, 1, 0, 4);
	E(SLD, 5, 1, 0, MAIA_DTYPE_FP32);
	E(ADDI, 1, 1, 0, 4);
	E(SLD, 6, 1, 0, MAIA_DTYPE_FP16);
	E(SLD, 0, 1, 0, MAIA_DTYPE_FP16);	/* s0 stays 0 */
	for (unsigned int r = 3; r <= 6; r++) {
		E(SST, r, 2, 0, MAIA_DTYPE_INT32);
		E(LI, 8, 0, 0, 32);
		E(SRA, 9, r, 8, 0);
		E(ADDI, 10, 2, 0, 4);
		E(SST, 9, 10, 0, MAIA_DTYPE_INT32);
		E(ADDI, 2, 2, 0, 8);
	}
	E(SST, 0, 2, 0, MAIA_DTYPE_INT32);
	E(LI, 11, 0, 0, 300);
	E(ADDI, 2, 2, 0, 4);
	E(SST, 11, 2, 0, MAIA_DTYPE_INT8);	/* saturates to 127 */
	rc = run1(args, 2);
	ok &= o[0] == (uint64_t)-128 && o[1] == (uint64_t)-5;
	ok &= o[2] == tvp_u(-1.5f) && o[3] == tvp_u(1.0f);
	ok &= ((uint32_t *)o)[8] == 0 && ((int8_t *)o)[36] == 127;
	tap_ok(rc == MAIA_STATUS_OK && ok, "sld sign-extends integers and zero-extends binary32 "
	       "bits; sst stores the low bits (INT8 saturated); s0 reads 0");
}

/* ---- scalar ---- */

static uint64_t ref_salu(unsigned int op, uint64_t a, uint64_t b)
{
	int64_t x = (int64_t)a, y = (int64_t)b;

	switch (op) {
	case MAIA_TVP_OP_ADD:	return a + b;
	case MAIA_TVP_OP_SUB:	return a - b;
	case MAIA_TVP_OP_MUL:	return a * b;
	case MAIA_TVP_OP_DIV:	return !y ? (uint64_t)-1 : (x == INT64_MIN && y == -1) ? a :
				       (uint64_t)(x / y);
	case MAIA_TVP_OP_REM:	return !y ? a : (x == INT64_MIN && y == -1) ? 0 : (uint64_t)(x % y);
	case MAIA_TVP_OP_MIN:	return x < y ? a : b;
	case MAIA_TVP_OP_MAX:	return x > y ? a : b;
	case MAIA_TVP_OP_AND:	return a & b;
	case MAIA_TVP_OP_OR:	return a | b;
	case MAIA_TVP_OP_XOR:	return a ^ b;
	case MAIA_TVP_OP_SHL:	return a << (b % 64);
	case MAIA_TVP_OP_SHR:	return a >> (b % 64);
	default:		return x < 0 ? ~(~a >> (b % 64)) : a >> (b % 64);	/* SRA */
	}
}

static bool ref_scmp(unsigned int c, uint64_t a, uint64_t b)
{
	int64_t x = (int64_t)a, y = (int64_t)b;

	switch (c) {
	case MAIA_TVP_CMP_EQ:	return a == b;
	case MAIA_TVP_CMP_NE:	return a != b;
	case MAIA_TVP_CMP_LT:	return x < y;
	case MAIA_TVP_CMP_LE:	return x <= y;
	case MAIA_TVP_CMP_GT:	return x > y;
	case MAIA_TVP_CMP_GE:	return x >= y;
	case MAIA_TVP_CMP_ULT:	return a < b;
	case MAIA_TVP_CMP_ULE:	return a <= b;
	case MAIA_TVP_CMP_UGT:	return a > b;
	default:		return a >= b;
	}
}

/* Stores s3 (64 bits) at s4. */
static void emit_store64(unsigned int r)
{
	E(SST, r, 4, 0, MAIA_DTYPE_INT32);
	E(LI, 20, 0, 0, 32);
	E(SHR, 21, r, 20, 0);
	E(ADDI, 22, 4, 0, 4);
	E(SST, 21, 22, 0, MAIA_DTYPE_INT32);
}

static void test_scalar(void)
{
	static const uint64_t vals[] = { 0, 1, (uint64_t)-1, 2, 63, 64, 65, (uint64_t)INT64_MIN,
					 INT64_MAX, 0x123456789abcdefull, (uint64_t)-7, 7,
					 0xffffffffull, 0x80000000ull };
	const size_t nv = sizeof(vals) / sizeof(vals[0]);
	uint64_t *o = (uint64_t *)arr(O_VA);
	unsigned int bad = 0, runs = 0;

	for (unsigned int op = MAIA_TVP_OP_ADD; op <= MAIA_TVP_OP_SCMP; op++) {
		for (unsigned int cond = 0; cond < (op == MAIA_TVP_OP_SCMP ? MAIA_TVP_CMP_COUNT : 1);
		     cond++) {
			P.n = 0;
			tvp_emit(&P, op, 3, 1, 2, op == MAIA_TVP_OP_SCMP ? cond : 0);
			emit_store64(3);
			for (size_t i = 0; i < nv; i++)
				for (size_t j = 0; j < nv; j++) {
					const uint64_t args[4] = { vals[i], vals[j], 0, O_VA };
					uint64_t want = op == MAIA_TVP_OP_SCMP ?
							ref_scmp(cond, vals[i], vals[j]) :
							ref_salu(op, vals[i], vals[j]);

					o[0] = 0xdeadbeef;
					bad += run1(args, 4) != MAIA_STATUS_OK || o[0] != want;
					runs++;
				}
		}
	}
	tap_ok(!bad, "scalar ALU and scmp: %u operand pairs, %u wrong", runs, bad);

	/* immediates: li, lih, addi, muli (sign-extended) */
	{
		const uint64_t args[4] = { 0, 0, 0, O_VA };
		bool ok = true;

		P.n = 0;
		E(LI, 3, 0, 0, (uint32_t)-2);
		emit_store64(3);
		E(ADDI, 4, 4, 0, 8);
		E(LIH, 3, 0, 0, 0x12345678u);
		emit_store64(3);
		E(ADDI, 4, 4, 0, 8);
		E(ADDI, 3, 3, 0, (uint32_t)-3);
		emit_store64(3);
		E(ADDI, 4, 4, 0, 8);
		E(MULI, 3, 3, 0, (uint32_t)-1);
		emit_store64(3);
		ok &= run1(args, 4) == MAIA_STATUS_OK;
		ok &= o[0] == (uint64_t)-2 && o[1] == 0x12345678fffffffeull;
		ok &= o[2] == 0x12345678fffffffbull && o[3] == (uint64_t)-(int64_t)0x12345678fffffffbull;
		tap_ok(ok, "li sign-extends, lih sets the high half, addi/muli sign-extend imm");
	}
}

static void test_branches_pid(void)
{
	uint32_t *o = arr(O_VA);
	const uint64_t args[1] = { O_VA };
	struct tvp_run_opts opt = { .grid = { 3, 4, 5 }, .args = args, .nargs = 1 };
	bool ok = true;
	int rc;

	/* out[x + 3 (y + 4 z)] = x | y << 8 | z << 16 | nprog(0..2) checks; plus a loop */
	P.n = 0;
	E(PID, 2, 0, 0, 0);
	E(PID, 3, 0, 0, 1);
	E(PID, 4, 0, 0, 2);
	E(NPROG, 5, 0, 0, 0);
	E(NPROG, 6, 0, 0, 1);
	E(NPROG, 7, 0, 0, 2);
	E(MUL, 8, 4, 6, 0);
	E(ADD, 8, 8, 3, 0);
	E(MUL, 8, 8, 5, 0);
	E(ADD, 8, 8, 2, 0);		/* linear index */
	E(LI, 9, 0, 0, 8);
	E(SHL, 10, 3, 9, 0);
	E(OR, 10, 10, 2, 0);
	E(LI, 9, 0, 0, 16);
	E(SHL, 11, 4, 9, 0);
	E(OR, 10, 10, 11, 0);
	/* count 0..9 with blt, 10..19 with bge/jmp, beqz/bnez skips */
	E(LI, 12, 0, 0, 0);
	E(LI, 13, 0, 0, 10);
	E(ADDI, 12, 12, 0, 1);		/* 18 */
	E(BLT, 0, 12, 13, 18);
	E(LI, 13, 0, 0, 20);
	E(BGE, 0, 12, 13, 24);		/* 21 */
	E(ADDI, 12, 12, 0, 1);
	E(JMP, 0, 0, 0, 21);
	E(BEQZ, 0, 0, 0, 26);		/* 24: s0 == 0: taken */
	E(LI, 12, 0, 0, 999);
	E(BNEZ, 0, 12, 0, 28);		/* 26: taken */
	E(LI, 12, 0, 0, 999);
	E(LI, 9, 0, 0, 24);		/* 28 */
	E(SHL, 12, 12, 9, 0);
	E(OR, 10, 10, 12, 0);
	E(LI, 9, 0, 0, 2);
	E(SHL, 8, 8, 9, 0);
	E(ADD, 8, 8, 1, 0);
	E(SST, 10, 8, 0, MAIA_DTYPE_INT32);
	memset(o, 0xff, 60 * 4);
	rc = tvp_run(&M, &P, &opt, NULL);
	for (uint32_t z = 0; z < 5; z++)
		for (uint32_t y = 0; y < 4; y++)
			for (uint32_t x = 0; x < 3; x++)
				ok &= o[x + 3 * (y + 4 * z)] == (x | y << 8 | z << 16 | 20u << 24);
	tap_ok(rc == MAIA_STATUS_OK && ok, "60 instances of a 3 x 4 x 5 grid: pid and nprog per "
	       "axis, blt/bge/jmp loops, beqz/bnez");
}

/* Every compiled variant of the element-wise ops gives the same bits as the generic one. */
static void test_variants(void)
{
	size_t n;
	const struct fw_tvp_vop_impl *im = fw_tvp_vop_impls(&n);
	static fw_tvp_u32 a[LANES], b[LANES], c[LANES], o0[LANES], o1[LANES];
	uint64_t s = 4242;

	fw_tvp_vop_best();	/* sets up the erf fit */
	for (uint32_t i = 0; i < LANES; i++) {
		a[i] = i < NFEDGE ? tvp_u(fedge[i]) : tvp_rand(&s);
		b[i] = tvp_rand(&s);
		c[i] = tvp_rand(&s);
		if (i % 3 == 0)
			a[i] = tvp_u((float)((int)(tvp_rand(&s) % 2000) - 1000) / 100.0f);
	}
	for (size_t v = 1; v < n; v++) {
		unsigned int bad = 0;

		if (!im[v].usable()) {
			tap_ok(1, "# SKIP variant %s not usable on this host", im[v].name);
			continue;
		}
		for (unsigned int op = MAIA_TVP_OP_VMOV; op <= MAIA_TVP_OP_VICMP; op++) {
			if (op == MAIA_TVP_OP_VSPLAT || op == MAIA_TVP_OP_VSPLATI ||
			    op == MAIA_TVP_OP_VIOTA || op == MAIA_TVP_OP_VEXT ||
			    op == MAIA_TVP_OP_VCVT || fw_tvp_class((uint8_t)op) == 0)
				continue;
			for (unsigned int cond = 0; cond < 6; cond++) {
				im[0].fn(op, cond, LANES, o0, a, b, c);
				im[v].fn(op, cond, LANES, o1, a, b, c);
				for (uint32_t i = 0; i < LANES; i++)
					bad += o0[i] != o1[i] &&
					       !(isnan(tvp_f(o0[i])) && isnan(tvp_f(o1[i])));
			}
		}
		tap_ok(!bad, "variant %s gives the generic variant's bits for every element-wise op "
		       "(%u lanes differ)", im[v].name, bad);
	}
	printf("# element-wise variant in use: %s\n", fw_tvp_vop_best_name());
}

int main(void)
{
	tvp_mem_init(&M, 8u << 20);
	test_float_exact();
	test_rsqrt();
	test_transcendental();
	test_int();
	test_cvt();
	test_moves_shape();
	test_perm();
	test_vdot();
	test_mem_dtypes();
	test_mem_gather();
	test_mem_tile();
	test_mem_offset_wrap();
	test_sld_sst();
	test_scalar();
	test_branches_pid();
	test_variants();
	tvp_mem_fini(&M);
	return tap_done();
}
