// SPDX-License-Identifier: MIT
/*
 * Element format conversions against an independent reference built from
 * the format definitions: every code of every 16-bit-or-smaller format is
 * decoded, every 8/6/4-bit value and every midpoint between neighbours is
 * encoded (ties to even, saturating and not), FP32 -> BF16/FP16 is checked on
 * a dense sample of all 2^32 bit patterns, and the MX block formats are
 * round-tripped with their corner cases (NaN/Inf, all-zero and
 * max-magnitude blocks, subnormal scales).
 */
#include <errno.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "helpers.h"
#include "tap.h"
#include "../../../firmware-sim/src/tensor/te.h"

struct fmt {
	const char *name;
	unsigned int type;	/* dtype or FW_ELEM_* for the encoder */
	unsigned int mx;	/* MX dtype whose element this is, for ref_elem */
	int ebits, mbits, bias, kind;
	double max;
};

static const struct fmt fmts[] = {
	{ "fp16", MAIA_DTYPE_FP16, 0, 5, 10, 15, REF_IEEE, 65504 },
	{ "fp8_e4m3", MAIA_DTYPE_FP8_E4M3, MAIA_DTYPE_MXFP8_E4M3, 4, 3, 7, REF_FN, 448 },
	{ "fp8_e5m2", MAIA_DTYPE_FP8_E5M2, MAIA_DTYPE_MXFP8_E5M2, 5, 2, 15, REF_IEEE, 57344 },
	{ "fp6_e3m2", FW_ELEM_FP6_E3M2, MAIA_DTYPE_MXFP6_E3M2, 3, 2, 3, REF_FINITE, 28 },
	{ "fp6_e2m3", FW_ELEM_FP6_E2M3, MAIA_DTYPE_MXFP6_E2M3, 2, 3, 1, REF_FINITE, 7.5 },
	{ "fp4_e2m1", FW_ELEM_FP4_E2M1, MAIA_DTYPE_MXFP4_E2M1, 2, 1, 1, REF_FINITE, 6 },
};

static unsigned int ncodes(const struct fmt *f)
{
	return 1u << (1 + f->ebits + f->mbits);
}

static double dec_ref(const struct fmt *f, uint32_t c)
{
	return ref_minifloat(c, f->ebits, f->mbits, f->bias, f->kind);
}

static float dec_engine(const struct fmt *f, uint32_t c)
{
	if (f->type == MAIA_DTYPE_FP16)
		return fw_fp16_to_f32((uint16_t)c);
	if (f->type == MAIA_DTYPE_FP8_E4M3 || f->type == MAIA_DTYPE_FP8_E5M2)
		return fw_fp8_to_f32((uint8_t)c, f->type);
	return fw_elem_to_f32((uint8_t)c, f->type);
}

static uint32_t enc_engine(const struct fmt *f, float x, bool sat)
{
	if (f->type == MAIA_DTYPE_FP16)
		return sat && fabsf(x) > 65504.0f && !isnan(x) ?
		       (x < 0 ? 0xfbffu : 0x7bffu) : fw_f32_to_fp16(x);
	if (f->type == MAIA_DTYPE_FP8_E4M3 || f->type == MAIA_DTYPE_FP8_E5M2)
		return fw_f32_to_fp8(x, f->type, sat);
	return fw_f32_to_elem(x, f->type, sat);
}

/*
 * Reference encoder: the nearest of the format's finite values, ties to the
 * even code. Overflow is decided after rounding, as in IEEE 754: above max
 * the candidates are max and the next value the format would have with one
 * more exponent, max + ulp(max), whose code is max's plus one; |x| rounding
 * to that one overflows: Inf (IEEE), NaN (E4M3), or max when saturating or
 * when the format has neither. So the midpoint max + ulp/2 stays max when
 * max's code is even (E4M3 448: 464 -> 448) and overflows when it is odd.
 */
static uint32_t enc_ref(const struct fmt *f, double x, bool sat)
{
	uint32_t signbit = 1u << (f->ebits + f->mbits), best = 0, c;
	double a = fabs(x), bestd = INFINITY;
	uint32_t sign = signbit * (signbit && signbit(x) ? 1 : 0);

	if (isnan(x))
		return f->kind == REF_IEEE ? sign | (((1u << f->ebits) - 1) << f->mbits) |
			(1u << (f->mbits - 1)) : f->kind == REF_FN ? sign | (signbit - 1) : sign;
	/* finite non-negative values increase with the code: bisect */
	{
		uint32_t lo = 0, hi = signbit - 1;
		double top, next;

		while (!isfinite(dec_ref(f, hi)))
			hi--;
		top = dec_ref(f, hi);
		next = top + ldexp(1, (int)floor(log2(top)) - f->mbits);	/* code hi + 1 */
		if (a >= top) {
			bool over = a - top > next - a || (a - top == next - a && (hi & 1));

			if (!over || sat || f->kind == REF_FINITE)
				return sign | hi;
			return f->kind == REF_IEEE ? sign | (((1u << f->ebits) - 1) << f->mbits) :
			       sign | (signbit - 1);
		}
		while (hi - lo > 1) {	/* v(lo) <= a < v(hi) */
			c = lo + (hi - lo) / 2;
			if (dec_ref(f, c) <= a)
				lo = c;
			else
				hi = c;
		}
		bestd = a - dec_ref(f, lo);
		best = lo;
		if (dec_ref(f, hi) - a < bestd || (dec_ref(f, hi) - a == bestd && !(hi & 1)))
			best = hi;
	}
	return sign | best;
}

static float f_from_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static bool same_value(double a, double b)
{
	return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

static void test_minifloat(const struct fmt *f)
{
	unsigned int n = ncodes(f), bad_dec = 0, bad_rt = 0, bad_mid = 0, bad_big = 0;

	for (uint32_t c = 0; c < n; c++)
		if (!same_value(dec_engine(f, c), dec_ref(f, c)))
			bad_dec++;
	tap_ok(!bad_dec, "%s: all %u codes decode exactly (%u wrong)", f->name, n, bad_dec);

	for (uint32_t c = 0; c < n; c++) {
		double v = dec_ref(f, c);

		if (isnan(v))
			continue;
		if (enc_engine(f, (float)v, false) != (isinf(v) ? c : enc_ref(f, v, false)))
			bad_rt++;
		if (isfinite(v) && enc_engine(f, (float)v, false) != c)
			bad_rt++;
	}
	tap_ok(!bad_rt, "%s: every value encodes back to its code (%u wrong)", f->name, bad_rt);

	/* every midpoint (ties to even) and points just either side of it */
	{
		uint32_t half = n / 2;

		for (uint32_t c = 0; c + 1 < half; c++) {
			double lo = dec_ref(f, c), hi = dec_ref(f, c + 1), mid = (lo + hi) / 2;
			float pts[3] = { (float)mid, nextafterf((float)mid, 0), nextafterf((float)mid, INFINITY) };

			if (!isfinite(hi) || isnan(hi))
				continue;
			for (int s = 0; s < 2; s++)
				for (int p = 0; p < 3; p++) {
					float x = s ? -pts[p] : pts[p];

					for (int sat = 0; sat < 2; sat++)
						if (enc_engine(f, x, sat) != enc_ref(f, x, sat))
							bad_mid++;
				}
		}
	}
	tap_ok(!bad_mid, "%s: midpoints round to even, neighbours to nearest (%u wrong)", f->name, bad_mid);

	/* overflow, Inf and NaN, saturating and not */
	{
		const float big[] = { (float)f->max, (float)(f->max * 1.01), (float)(f->max * 1.5), 1e30f,
				      INFINITY, NAN, FLT_MAX, FLT_MIN, 1e-30f, 0.0f };

		for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++)
			for (int s = 0; s < 2; s++)
				for (int sat = 0; sat < 2; sat++) {
					float x = s ? -big[i] : big[i];
					uint32_t got = enc_engine(f, x, sat), want = enc_ref(f, x, sat);

					if (isnan(x) ? !isnan(dec_ref(f, got)) && f->kind != REF_FINITE
						     : got != want)
						bad_big++;
				}
	}
	tap_ok(!bad_big, "%s: overflow/Inf/NaN/underflow, saturating and not (%u wrong)", f->name, bad_big);
}

/* BF16 from FP32: every 2^32 / 2^22 th pattern, plus both neighbours of each. */
static uint16_t bf16_ref(uint32_t u)
{
	union { uint32_t u; float f; } x = { .u = u }, lo, hi;
	double dl, dh, hv;

	if (isnan(x.f))
		return (uint16_t)((u >> 16) | 0x40);
	if (isinf(x.f))
		return (uint16_t)(u >> 16);
	lo.u = u & 0xffff0000u;
	hi.u = lo.u + 0x10000u;
	hv = isinf(hi.f) ? copysign(ldexp(1, 128), hi.f) : hi.f;
	dl = fabs((double)x.f - lo.f);
	dh = fabs(hv - (double)x.f);
	if (dl < dh || (dl == dh && !((lo.u >> 16) & 1)))
		return (uint16_t)(lo.u >> 16);
	return (uint16_t)(hi.u >> 16);
}

static void test_bf16(void)
{
	unsigned int bad = 0, bad_nan = 0, checked = 0;

	for (uint32_t c = 0; c < 65536; c++)
		if (!same_value(fw_bf16_to_f32((uint16_t)c), ref_decode(MAIA_DTYPE_BF16, c)))
			bad++;
	tap_ok(!bad, "bf16: all 65536 codes decode exactly (%u wrong)", bad);
	bad = 0;
	for (uint64_t base = 0; base < (1ull << 32); base += 1u << 10) {
		for (uint32_t d = 0; d < 3; d++) {
			uint32_t u = (uint32_t)base + (d == 0 ? 0 : d == 1 ? 0x8000u : 0x7fffu);
			union { uint32_t u; float f; } x = { .u = u };
			uint16_t got = fw_f32_to_bf16(x.f);

			checked++;
			if (isnan(x.f)) {
				if ((got & 0x7fc0) != 0x7fc0 || (got >> 15) != (u >> 31))
					bad_nan++;
			} else if (got != bf16_ref(u)) {
				bad++;
			}
		}
	}
	tap_ok(!bad, "bf16: RNE on %u FP32 patterns incl. every tie (%u wrong)", checked, bad);
	tap_ok(!bad_nan, "bf16: NaN stays a quiet NaN with its sign (%u wrong)", bad_nan);
}

static void test_fp16_sample(void)
{
	const struct fmt *f = &fmts[0];
	unsigned int bad = 0, n = 0;

	for (uint64_t base = 0; base < (1ull << 32); base += 40009) {
		union { uint32_t u; float f; } x = { .u = (uint32_t)base };

		if (fabsf(x.f) > 1e6f && !isinf(x.f) && !isnan(x.f))
			continue;	/* far beyond max: covered by the overflow test */
		n++;
		if (isnan(x.f) ? !isnan(fw_fp16_to_f32(fw_f32_to_fp16(x.f)))
			       : fw_f32_to_fp16(x.f) != enc_ref(f, x.f, false))
			bad++;
	}
	tap_ok(!bad, "fp16: RNE on %u sampled FP32 patterns (%u wrong)", n, bad);
}

static void test_int8(void)
{
	unsigned int bad = 0;
	uint8_t b[256];
	float v[256], back[256];

	for (int i = 0; i < 256; i++)
		v[i] = (float)(i - 128) * 0.25f;
	fw_encode(MAIA_DTYPE_INT8, v, 256, 0.25f, false, b);
	fw_decode(MAIA_DTYPE_INT8, b, 256, 0.25f, back);
	for (int i = 0; i < 256; i++)
		if (back[i] != v[i])
			bad++;
	tap_ok(!bad, "int8: all 256 values round-trip with scale 0.25 (%u wrong)", bad);
	tap_ok(fw_f32_to_int8(1000.0f) == 127 && fw_f32_to_int8(-1000.0f) == -128 &&
	       fw_f32_to_int8(NAN) == 0 && fw_f32_to_int8(2.5f) == 2 &&
	       fw_f32_to_int8(-3.5f) == -4 && fw_f32_to_int8(INFINITY) == 127,
	       "int8: saturation, NaN -> 0, ties to even");
}

/*
 * The top of every format: the midpoint between max and the next (virtual)
 * value max + ulp(max), and the FP32 values one ulp either side of it, both
 * signs, saturating and not, through the engine's casts (fw_encode with its
 * saturate flag for the plain dtypes, the element encoder for FP6/FP4).
 * Checked twice: against the reference encoders, and against the rule as
 * dtypes.rst states it: the tie stays max only for E4M3 (448's code 0x7e is
 * even); below it max, above it overflow (Inf / NaN, or max saturating or
 * without either).
 */
struct top_case {
	const char *name;
	unsigned int dtype;	/* plain dtype, or FW_ELEM_* */
	const struct fmt *f;	/* reference encoder; NULL: BF16 */
	double max, next;
	bool tie_stays;		/* documented: the tie rounds down to max */
	int over;		/* non-saturating overflow: 0 max, 1 Inf, 2 NaN */
};

static double top_engine(const struct top_case *t, float x, bool sat)
{
	uint8_t b[2];

	if (t->dtype == FW_ELEM_FP6_E3M2 || t->dtype == FW_ELEM_FP6_E2M3 || t->dtype == FW_ELEM_FP4_E2M1)
		return dec_ref(t->f, fw_f32_to_elem(x, t->dtype, sat));
	fw_encode(t->dtype, &x, 1, 1.0f, sat, b);
	return ref_decode(t->dtype, t->dtype == MAIA_DTYPE_FP16 || t->dtype == MAIA_DTYPE_BF16 ?
			  (uint32_t)(b[0] | b[1] << 8) : b[0]);
}

static double top_ref(const struct top_case *t, float x, bool sat)
{
	if (!t->f)
		return ref_decode(MAIA_DTYPE_BF16, bf16_ref(f2u(x)));
	return dec_ref(t->f, enc_ref(t->f, x, sat));
}

static void test_tops(void)
{
	const struct top_case cases[] = {
		{ "fp16", MAIA_DTYPE_FP16, &fmts[0], 65504, 65536, false, 1 },
		{ "bf16", MAIA_DTYPE_BF16, NULL, ldexp(255, 120), ldexp(1, 128), false, 1 },
		{ "fp8_e4m3", MAIA_DTYPE_FP8_E4M3, &fmts[1], 448, 480, true, 2 },
		{ "fp8_e5m2", MAIA_DTYPE_FP8_E5M2, &fmts[2], 57344, 65536, false, 1 },
		{ "fp6_e3m2", FW_ELEM_FP6_E3M2, &fmts[3], 28, 32, false, 0 },
		{ "fp6_e2m3", FW_ELEM_FP6_E2M3, &fmts[4], 7.5, 8, false, 0 },
		{ "fp4_e2m1", FW_ELEM_FP4_E2M1, &fmts[5], 6, 8, false, 0 },
	};

	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
		const struct top_case *t = &cases[k];
		/* FP8 and FP16/BF16 ignore or honour the flag; both are checked */
		float mid = (float)((t->max + t->next) / 2);
		float pts[3] = { nextafterf(mid, 0), mid, nextafterf(mid, INFINITY) };
		unsigned int bad_ref = 0, bad_rule = 0;
		double got_tie[2] = { 0, 0 };

		for (int p = 0; p < 3; p++)
			for (int neg = 0; neg < 2; neg++)
				for (int sat = 0; sat < 2; sat++) {
					float x = neg ? -pts[p] : pts[p];
					double got = top_engine(t, x, sat), want;
					/* FP16/BF16 always overflow to Inf: the flag is FP8's only */
					bool s = sat && (t->dtype == MAIA_DTYPE_FP8_E4M3 ||
							 t->dtype == MAIA_DTYPE_FP8_E5M2);
					bool over = p == 2 || (p == 1 && !t->tie_stays);

					bad_ref += !same_value(got, top_ref(t, x, s));
					if (!over || s || t->over == 0)
						want = t->max;
					else
						want = t->over == 1 ? INFINITY : NAN;
					bad_rule += !same_value(got, neg ? -want : want);
					if (p == 1 && !neg)
						got_tie[sat] = got;
				}
		tap_ok(!bad_ref && !bad_rule && (double)mid == (t->max + t->next) / 2,
		       "%s: top tie %.9g -> %g (saturating %g), +-1 FP32 ulp either side, both signs, "
		       "saturating and not: %u differ from the reference, %u from the documented rule",
		       t->name, (double)mid, got_tie[0], got_tie[1], bad_ref, bad_rule);
	}

	/* FP8 with a per-tensor scale: the rule applies to x / scale */
	{
		unsigned int bad = 0;
		float sc = 0.25f, x[4] = { 464 * 0.25f, nextafterf(464, INFINITY) * 0.25f,
					   61440 * 0.25f, nextafterf(61440, 0) * 0.25f };
		uint8_t b[4];

		fw_encode(MAIA_DTYPE_FP8_E4M3, x, 2, sc, false, b);
		bad += b[0] != 0x7e || b[1] != 0x7f;
		fw_encode(MAIA_DTYPE_FP8_E5M2, x + 2, 2, sc, false, b + 2);
		bad += b[2] != 0x7c || b[3] != 0x7b;
		fw_encode(MAIA_DTYPE_FP8_E5M2, x + 2, 2, sc, true, b + 2);
		bad += b[2] != 0x7b || b[3] != 0x7b;
		tap_ok(!bad, "fp8 with scale 0.25: 116 -> 448, 116.00001 -> NaN (E4M3); 15360 -> Inf "
		       "(E5M2), saturating 57344");
	}

	/* INT8 rounds to even and then clamps */
	{
		const float in[] = { 127.5f, nextafterf(127.5f, 0), nextafterf(127.5f, 200), 126.5f,
				     -128.5f, nextafterf(-128.5f, 0), nextafterf(-128.5f, -200), -127.5f };
		const int8_t want[] = { 127, 127, 127, 126, -128, -128, -128, -128 };
		unsigned int bad = 0;
		uint8_t b[8];

		for (int sat = 0; sat < 2; sat++) {
			fw_encode(MAIA_DTYPE_INT8, in, 8, 1.0f, sat, b);
			for (int i = 0; i < 8; i++) {
				double r = fmin(fmax(nearbyint(in[i]), -128), 127);

				bad += (int8_t)b[i] != want[i] || (int8_t)b[i] != r;
			}
		}
		tap_ok(!bad, "int8: 127.5 -> 127, -128.5 -> -128, -127.5 -> -128, +-1 ulp, both flags");
	}
}

/* ---- MX block formats ---- */

static const unsigned int mx_types[] = {
	MAIA_DTYPE_MXFP8_E4M3, MAIA_DTYPE_MXFP8_E5M2, MAIA_DTYPE_MXFP6_E3M2,
	MAIA_DTYPE_MXFP6_E2M3, MAIA_DTYPE_MXFP4_E2M1, MAIA_DTYPE_MXINT8,
};

static const struct fmt *elem_fmt(unsigned int mx)
{
	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++)
		if (fmts[i].mx == mx)
			return &fmts[i];
	return NULL;	/* MXINT8 */
}

static int emax_of(unsigned int mx)
{
	const struct fmt *f = elem_fmt(mx);

	return f ? (int)floor(log2(f->max)) : 0;
}

static double elem_max(unsigned int mx)
{
	const struct fmt *f = elem_fmt(mx);

	return f ? f->max : 127.0 / 64;
}

/* Reference MX quantization of one block into values (not codes). */
static void mx_ref_block(unsigned int mx, const float *x, double *out, int *scale_exp)
{
	double amax = 0;
	int e;

	for (int i = 0; i < 32; i++) {
		if (!isfinite(x[i])) {
			*scale_exp = 128;	/* NaN scale */
			for (int j = 0; j < 32; j++)
				out[j] = NAN;
			return;
		}
		amax = fmax(amax, fabs(x[i]));
	}
	e = amax == 0 ? -127 : (int)floor(log2(amax)) - emax_of(mx);
	if (e < -127)
		e = -127;
	if (e > 127)
		e = 127;
	*scale_exp = e;
	for (int i = 0; i < 32; i++) {
		double v = ldexp(x[i], -e), q;
		const struct fmt *f = elem_fmt(mx);

		if (f) {
			q = dec_ref(f, enc_ref(f, v, true));
		} else {
			q = nearbyint(v * 64);
			q = fmin(fmax(q, -127), 127) / 64;
		}
		out[i] = ldexp(q, e);
	}
}

static void test_mx(unsigned int mx)
{
	const struct fmt *f = elem_fmt(mx);
	const char *name = f ? f->name : "int8";
	unsigned int bb = maia_dtype_block_bytes(mx), bad = 0, bad_rt = 0, blocks = 0;
	uint8_t blk[32], sc[2], blk2[32], sc2[2];
	int dummy_exp;
	float x[32], y[32];
	double ref[32];
	struct tmem m;

	tmem_init(&m, 65536);
	/* every element code, in blocks pinned by a max-magnitude element */
	{
		unsigned int n = f ? ncodes(f) : 256, per = 31;

		for (unsigned int c0 = 0; c0 < n; c0 += per) {
			uint64_t va = TMEM_BASE, sva = TMEM_BASE + 64;
			int scale = 120 + (int)(c0 % 17);	/* various scales */

			for (unsigned int i = 0; i < 32; i++) {
				unsigned int c = i == 31 ? 0 : c0 + i;
				double v;

				if (i == 31 || c >= n)
					v = elem_max(mx);
				else
					v = f ? dec_ref(f, c) : (int8_t)c / 64.0;
				if (!isfinite(v) || (!f && c == 0x80))
					v = 0;		/* NaN/Inf element codes and -128 are not produced */
				x[i] = (float)ldexp(v, scale - 127);
			}
			fw_mx_encode(mx, x, 1, tmem_ptr(&m, va), tmem_ptr(&m, sva));
			tget(&m, mx, va, sva, 32, 1, ref);
			fw_mx_decode(mx, tmem_ptr(&m, va), tmem_ptr(&m, sva), 1, y);
			for (int i = 0; i < 32; i++) {
				if (!same_value(y[i], ref[i]))
					bad++;
				if (!same_value(y[i], x[i]))
					bad_rt++;
			}
			blocks++;
		}
	}
	tap_ok(!bad, "mx %s: engine decode == reference decode (%u blocks, %u wrong)", name, blocks, bad);
	tap_ok(!bad_rt, "mx %s: every element value round-trips exactly (%u wrong)", name, bad_rt);

	/* random blocks against the reference quantizer, over a wide range of magnitudes */
	bad = 0;
	trand_seed(mx);
	for (int t = 0; t < 2000; t++) {
		int sc_exp, mag = (t % 60) - 30;

		for (int i = 0; i < 32; i++)
			x[i] = ldexpf(trand_uniform(-1, 1), mag + (i % 3 == 0 ? -(t % 20) : 0));
		mx_ref_block(mx, x, ref, &sc_exp);
		fw_mx_encode(mx, x, 1, blk, sc);
		fw_mx_decode(mx, blk, sc, 1, y);
		if (sc[0] != sc_exp + 127)
			bad++;
		for (int i = 0; i < 32; i++)
			if (!same_value(y[i], ref[i]) && !(y[i] == 0 && ref[i] == 0))
				bad++;
		/* quantizing the dequantized block is the identity */
		fw_mx_encode(mx, y, 1, blk2, sc2);
		if (memcmp(blk, blk2, bb) || sc[0] != sc2[0])
			bad_rt++;
	}
	tap_ok(!bad, "mx %s: 2000 random blocks match the reference quantizer", name);
	tap_ok(!bad_rt, "mx %s: quantize(dequantize(q)) == q", name);

	/*
	 * Raw blocks: every byte value at every byte position (so every code,
	 * NaN codes and INT8 -128 included, in every element slot), under
	 * scales from 2^-127 to 2^127 and NaN. Covers the SIMD decoders too.
	 */
	{
		enum { NB = 256 };
		/* 246 and 247: the last scale and the first with 2^8 sc not a float (E4M3) */
		static const uint8_t scales[] = { 0, 1, 60, 127, 200, 246, 247, 254, 255 };
		uint64_t va = tmem_alloc(&m, NB * bb), sva = tmem_alloc(&m, NB);
		uint8_t *raw = tmem_ptr(&m, va), *rs = tmem_ptr(&m, sva);
		float *yy = malloc(sizeof(float) * NB * 32);
		double *rr = malloc(sizeof(double) * NB * 32);

		for (unsigned int b = 0; b < NB; b++) {
			for (unsigned int j = 0; j < bb; j++)
				raw[b * bb + j] = (uint8_t)(b + 37 * j);
			rs[b] = scales[b % sizeof(scales)];
		}
		tget(&m, mx, va, sva, NB * 32, 1, rr);
		fw_mx_decode(mx, raw, rs, NB, yy);
		bad = 0;
		/* the one FP32 multiply by the scale rounds (2^-127 * small) and overflows (2^127 * big) */
		for (unsigned int i = 0; i < NB * 32; i++)
			bad += !same_value(yy[i], (float)rr[i]);
		tap_ok(!bad, "mx %s: %u raw blocks (all bytes everywhere, 9 scales) decode as the reference (%u wrong)",
		       name, NB, bad);
		/*
		 * Decoded into groups (a GEMM's panels): 16 of every 40 floats,
		 * and 48 of every 56 (groups across blocks), the same values bit
		 * for bit, nothing written between the groups.
		 */
		{
			static const unsigned int gs[][2] = { { 16, 40 }, { 48, 56 } };
			size_t cap = NB * 32 / 16 * 40 + 64;
			float *yg = malloc(sizeof(float) * cap);

			for (size_t v = 0; v < sizeof(gs) / sizeof(gs[0]); v++) {
				unsigned int g = gs[v][0], gst = gs[v][1];

				for (size_t i = 0; i < cap; i++)
					yg[i] = 12345.0f;
				fw_mx_decode_groups(mx, raw, rs, NB, g, gst, yg);
				bad = 0;
				for (size_t i = 0; i < cap; i++) {
					size_t grp = i / gst, at = i % gst, e = grp * g + at;

					if (at < g && e < NB * 32)
						bad += memcmp(&yg[i], &yy[e], 4) != 0;
					else
						bad += yg[i] != 12345.0f;
				}
				tap_ok(!bad, "mx %s: the same blocks in groups of %u every %u floats: "
				       "bit for bit, nothing between written (%u wrong)", name, g, gst,
				       bad);
			}
			free(yg);
		}
		/*
		 * The formats with SIMD decoders, bit for bit (NaN sign and payload
		 * included) against element table x scale, the scalar definition.
		 */
		if (mx == MAIA_DTYPE_MXFP8_E4M3 || mx == MAIA_DTYPE_MXFP8_E5M2 ||
		    mx == MAIA_DTYPE_MXFP4_E2M1 || mx == MAIA_DTYPE_MXINT8) {
			const float *tab = fw_minifloat_table(mx == MAIA_DTYPE_MXFP8_E4M3 ?
				MAIA_DTYPE_FP8_E4M3 : mx == MAIA_DTYPE_MXFP8_E5M2 ? MAIA_DTYPE_FP8_E5M2 :
				FW_ELEM_FP4_E2M1);

			bad = 0;
			for (unsigned int i = 0; i < NB * 32; i++) {
				unsigned int b = i / 32, e = i % 32, code;
				uint8_t sb = rs[b];
				float scl = f_from_bits(sb ? (uint32_t)sb << 23 : 0x00400000u), want;

				if (mx == MAIA_DTYPE_MXFP4_E2M1)
					code = raw[b * bb + e / 2] >> (4 * (e % 2)) & 0xf;
				else
					code = raw[b * bb + e];
				if (sb == 0xff)
					want = NAN;
				else if (mx == MAIA_DTYPE_MXINT8)
					want = (float)(int8_t)code * (1.0f / 64.0f) * scl;
				else
					want = tab[code] * scl;
				bad += memcmp(&want, &yy[i], 4) != 0;
			}
			tap_ok(!bad, "mx %s: the same blocks bit for bit against table x scale (%u differ)",
			       name, bad);
		}
		free(yy);
		free(rr);
	}

	/* corners */
	memset(x, 0, sizeof(x));
	fw_mx_encode(mx, x, 1, blk, sc);
	fw_mx_decode(mx, blk, sc, 1, y);
	bad = sc[0] != 0;
	for (int i = 0; i < 32; i++)
		bad += y[i] != 0;
	tap_ok(!bad, "mx %s: all-zero block -> scale 2^-127, zeros", name);
	for (int i = 0; i < 32; i++)
		x[i] = i & 1 ? -FLT_MAX : FLT_MAX;
	fw_mx_encode(mx, x, 1, blk, sc);
	fw_mx_decode(mx, blk, sc, 1, y);
	mx_ref_block(mx, x, ref, &dummy_exp);
	bad = sc[0] != 127 + 127 - emax_of(mx);
	for (int i = 0; i < 32; i++)
		bad += !same_value(y[i], ref[i]) || !isfinite(y[i]) || (i & 1 ? y[i] > 0 : y[i] < 0);
	tap_ok(!bad, "mx %s: max-magnitude block keeps signs, finite (scale %u)", name, sc[0]);
	for (int special = 0; special < 3; special++) {
		for (int i = 0; i < 32; i++)
			x[i] = trand_uniform(-1, 1);
		x[7] = special == 0 ? NAN : special == 1 ? INFINITY : -INFINITY;
		fw_mx_encode(mx, x, 1, blk, sc);
		fw_mx_decode(mx, blk, sc, 1, y);
		bad = sc[0] != 0xff;
		for (int i = 0; i < 32; i++)
			bad += !isnan(y[i]);
		tap_ok(!bad, "mx %s: block with %s -> NaN scale, all NaN", name,
		       special == 0 ? "NaN" : special == 1 ? "+Inf" : "-Inf");
	}
	for (int i = 0; i < 32; i++)
		x[i] = ldexpf(trand_uniform(-1, 1), -140);	/* FP32 subnormals */
	fw_mx_encode(mx, x, 1, blk, sc);
	fw_mx_decode(mx, blk, sc, 1, y);
	mx_ref_block(mx, x, ref, &dummy_exp);
	bad = sc[0] != 0;
	for (int i = 0; i < 32; i++)
		bad += !same_value(y[i], ref[i]) && !(y[i] == 0 && ref[i] == 0);
	tap_ok(!bad, "mx %s: subnormal block clamps the scale to 2^-127", name);
	tmem_free(&m);
}

/*
 * Reference MX9/MX6/MX4 quantization of one block of 16, from
 * Documentation/hw/dtypes.rst: E - 127 = floor(log2(max|x|)) clamped to
 * [-127, 127]; each pair takes u = 1 when both magnitudes, rounded to nearest
 * even at the finer step, fit in m bits (at every E, the minimum included),
 * else u = 0 with magnitudes clamped to 2^m - 1. Values (zero always +0) and
 * the microexponent bits; *e_out is E - 127, or 128 for a NaN block.
 */
static void msmx_ref_block(unsigned int mb, const float *x, double *out, unsigned int *micro,
			   int *e_out)
{
	double amax = 0, top = (1 << mb) - 1;
	int e;

	*micro = 0;
	for (int i = 0; i < 16; i++) {
		if (!isfinite(x[i])) {
			for (int j = 0; j < 16; j++)
				out[j] = NAN;
			*e_out = 128;
			return;
		}
		amax = fmax(amax, fabs(x[i]));
	}
	e = amax == 0 ? -127 : (int)floor(log2(amax));
	e = e < -127 ? -127 : e > 127 ? 127 : e;
	*e_out = e;
	for (int i = 0; i < 16; i += 2) {
		for (int u = 1; u >= 0; u--) {
			double step = ldexp(1, e - u - (int)(mb - 1)), q[2];
			bool fits = true;

			for (int j = 0; j < 2; j++) {
				q[j] = nearbyint(fabs((double)x[i + j]) / step);
				if (q[j] > top) {
					fits = false;
					q[j] = top;
				}
			}
			if (fits || !u) {
				*micro |= (unsigned int)u << (i / 2);
				for (int j = 0; j < 2; j++)
					out[i + j] = q[j] == 0 ? 0.0 : copysign(q[j] * step, x[i + j]);
				break;
			}
		}
	}
}

/*
 * Encode one block with the engine, decode it with the engine and with the
 * reference decoder; count values and microexponent bits that differ from
 * msmx_ref_block(), and the shared exponent.
 */
static unsigned int msmx_check_block(struct tmem *m, unsigned int dt, unsigned int mb,
				     const float *x)
{
	unsigned int bad = 0, micro, bb = maia_dtype_block_bytes(dt);
	uint8_t *blk = tmem_ptr(m, TMEM_BASE), *sc = tmem_ptr(m, TMEM_BASE + 64);
	double want[16], got[16];
	float y[16];
	int e;

	msmx_ref_block(mb, x, want, &micro, &e);
	fw_mx_encode(dt, x, 1, blk, sc);
	fw_mx_decode(dt, blk, sc, 1, y);
	tget(m, dt, TMEM_BASE, TMEM_BASE + 64, 16, 1, got);
	bad += *sc != (uint8_t)(e + 127);
	if (e != 128)
		bad += blk[bb - 1] != micro;
	for (int i = 0; i < 16; i++)
		bad += !same_value(got[i], want[i]) + !same_value(y[i], want[i]);
	return bad;
}

/*
 * Blocks of FP32 subnormals (shared exponent at its minimum, E = 0) and the
 * normal range next to it: the engine against msmx_ref_block(), which takes
 * u = 1 there as everywhere else.
 */
static void test_msmx_subnormal(unsigned int dt)
{
	unsigned int mb = dt == MAIA_DTYPE_MX9 ? 7 : dt == MAIA_DTYPE_MX6 ? 4 : 2;
	const char *name = dt == MAIA_DTYPE_MX9 ? "mx9" : dt == MAIA_DTYPE_MX6 ? "mx6" : "mx4";
	unsigned int bad = 0, nblocks = 0, fine_pairs = 0, micro, bad_u = 0;
	float x[16];
	double want[16];
	int e;
	struct tmem m;

	tmem_init(&m, 4096);

	/*
	 * The block: 16 x 3 * 2^(-127 - mb) (FP32 subnormals). E = 0;
	 * u = 1 stores 3 exactly, u = 0 would store the tie 1.5 as 2 (error
	 * 2^(-127 - mb), a third of the value).
	 */
	for (int i = 0; i < 16; i++)
		x[i] = (float)ldexp(i & 1 ? -3 : 3, -127 - (int)mb);
	msmx_ref_block(mb, x, want, &micro, &e);
	bad_u = msmx_check_block(&m, dt, mb, x) != 0 || micro != 0xff || e != -127 ||
		want[0] != x[0] || want[1] != x[1];
	tap_ok(!bad_u, "%s: subnormal block 16 x +-3*2^%d: E = 0, every u = 1, exact", name,
	       -127 - (int)mb);

	trand_seed(dt * 7 + 1);
	/* block maxima with exponents -149 (smallest subnormal) .. -118 (normal) */
	for (int emx = -149; emx <= -118; emx++) {
		for (int t = 0; t < 200; t++) {
			for (int i = 0; i < 16; i++) {
				int sh = (t & 3) == 0 ? 0 : (int)(trand_uniform(0, 1) * (float)(t % 12));
				float r = trand_uniform(-2, 2);

				x[i] = ldexpf(r, emx - sh);
			}
			/* pairs at the top of the fine step's range and at its rounding tie */
			if (t % 5 == 1) {
				double fine = ldexp(1, (emx < -127 ? -127 : emx) - 1 - (int)(mb - 1));

				x[2] = (float)(fine * ((1 << mb) - 1));
				x[3] = (float)(fine * ((1 << mb) - 0.5));
				x[4] = (float)(fine * ((1 << mb) - 1.5));
				x[5] = -x[4];
			}
			bad += msmx_check_block(&m, dt, mb, x);
			msmx_ref_block(mb, x, want, &micro, &e);
			if (e == -127)
				fine_pairs += (unsigned int)__builtin_popcount(micro);
			nblocks++;
		}
	}
	tap_ok(!bad && fine_pairs > 0,
	       "%s: %u blocks with maxima 2^-149 .. 2^-117 match the reference quantizer "
	       "(%u pairs with u = 1 at E = 0; %u wrong)", name, nblocks, fine_pairs, bad);
	tmem_free(&m);
}

/*
 * Edge blocks of the OCP MX formats: elements at the tie above the element's
 * top (E4M3 464, E5M2 61440, E3M2 30, E2M3 7.75, E2M1 7, MXINT8 127.5/64),
 * one FP32 ulp either side, the top itself, both signs, with block scales
 * from 2^-127 (a subnormal scale) up; and blocks of FP32 subnormals. The
 * engine's quantizer against mx_ref_block() (elements saturate, so every
 * one of these is the element max), and the decoders: the SIMD ones (each
 * level this CPU has) and scalar bit for bit, both against the reference.
 */
static void test_mx_edges(unsigned int mx)
{
	const struct fmt *f = elem_fmt(mx);
	const char *name = f ? f->name : "int8";
	int emax = emax_of(mx);
	double top = elem_max(mx), next = f ? top + ldexp(1, emax - f->mbits) : 2.0;
	const int xs[] = { -127, -126, -125, -60, -1, 0, 1, 60, 126 - emax };
	unsigned int bad_enc = 0, bad_dec = 0, bad_simd = 0, nblocks = 0, nsimd = 0;
	uint8_t *blk, *sc;
	float x[32], ys[32], yv[32];
	double ref[32], rd[32];
	int sc_exp;
	struct tmem m;

	tmem_init(&m, 4096);
	blk = tmem_ptr(&m, TMEM_BASE);
	sc = tmem_ptr(&m, TMEM_BASE + 64);
	trand_seed(mx * 3 + 11);
	for (size_t k = 0; k < sizeof(xs) / sizeof(xs[0]) + 1; k++) {
		for (int t = 0; t < 8; t++) {
			bool subn = k == sizeof(xs) / sizeof(xs[0]);
			float mid;

			if (subn) {	/* FP32 subnormals, scale clamped to 2^-127 */
				for (int i = 0; i < 32; i++)
					x[i] = ldexpf(trand_uniform(-1, 1), -127 - t * 3);
			} else {
				mid = (float)ldexp((top + next) / 2, xs[k]);
				for (int i = 0; i < 32; i++)
					x[i] = ldexpf(trand_uniform(-1, 1), emax + xs[k] - (i % 5));
				x[0] = mid;
				x[1] = -mid;
				x[2 + t % 3] = nextafterf(mid, 0);
				x[5 + t % 3] = nextafterf(mid, INFINITY);
				x[8] = -nextafterf(mid, INFINITY);
				x[9] = -nextafterf(mid, 0);
				x[10] = (float)ldexp(top, xs[k]);
				x[11] = -x[10];
			}
			mx_ref_block(mx, x, ref, &sc_exp);
			fw_mx_encode(mx, x, 1, blk, sc);
			bad_enc += sc[0] != sc_exp + 127;
			tget(&m, mx, TMEM_BASE, TMEM_BASE + 64, 32, 1, rd);
			fw_mx_decode_scalar(mx, blk, sc, 1, ys);
			for (int i = 0; i < 32; i++) {
				bad_enc += !same_value(rd[i], ref[i]) && !(rd[i] == 0 && ref[i] == 0);
				bad_dec += !same_value(ys[i], (float)rd[i]);
			}
			if (!subn) {	/* the tie and its neighbours all give the element max */
				const int at[] = { 0, 1, 2 + t % 3, 5 + t % 3, 8, 9, 10, 11 };

				for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++)
					bad_enc += fabs(rd[at[i]]) != ldexp(top, xs[k]) ||
						   !signbit(rd[at[i]]) != !signbit(x[at[i]]);
			}
			for (int simd = FW_MX_AVX2; simd <= FW_MX_AVX512; simd++) {
				if (!fw_mx_decode_simd_as(simd, mx, blk, sc, 1, 32, 32, yv))
					continue;
				nsimd++;
				bad_simd += memcmp(ys, yv, sizeof(ys)) != 0;
			}
			nblocks++;
		}
	}
	tap_ok(!bad_enc && !bad_dec && !bad_simd,
	       "mx %s: %u edge blocks (top tie %g +-1 ulp, scales 2^-127..2^%d, FP32 subnormals): "
	       "quantizer and scalar decode match the reference, %u SIMD decodes equal the scalar "
	       "bit for bit (%u/%u/%u wrong)", name, nblocks, (top + next) / 2, 126 - emax, nsimd,
	       bad_enc, bad_dec, bad_simd);
	tmem_free(&m);
}

/* MX9/MX6/MX4: error within half a step of the pair's exponent, idempotent. */
static void test_msmx(unsigned int dt)
{
	unsigned int mb = dt == MAIA_DTYPE_MX9 ? 7 : dt == MAIA_DTYPE_MX6 ? 4 : 2;
	const char *name = dt == MAIA_DTYPE_MX9 ? "mx9" : dt == MAIA_DTYPE_MX6 ? "mx6" : "mx4";
	unsigned int bad = 0, bad_rt = 0, bad_ref = 0;
	uint8_t blk[17], sc, blk2[17], sc2;
	float x[16], y[16];
	double ref[16];
	struct tmem m;

	tmem_init(&m, 4096);
	trand_seed(dt);
	for (int t = 0; t < 4000; t++) {
		double amax = 0;
		int e;

		for (int i = 0; i < 16; i++)
			x[i] = ldexpf(trand_uniform(-1, 1), (t % 40) - 20 - (i % 4 == 1 ? t % 5 : 0));
		fw_mx_encode(dt, x, 1, blk, &sc);
		fw_mx_decode(dt, blk, &sc, 1, y);
		memcpy(tmem_ptr(&m, TMEM_BASE), blk, sizeof(blk));
		memcpy(tmem_ptr(&m, TMEM_BASE + 64), &sc, 1);
		tget(&m, dt, TMEM_BASE, TMEM_BASE + 64, 16, 1, ref);
		for (int i = 0; i < 16; i++) {
			amax = fmax(amax, fabs(x[i]));
			bad_ref += !same_value(y[i], ref[i]);
		}
		e = amax == 0 ? -127 : (int)fmin(fmax(floor(log2(amax)), -127), 127);
		for (int i = 0; i < 16; i += 2) {
			/* u = 1 (one more bit) exactly when both elements fit with it, at every E */
			unsigned int u = (blk[16 * (mb + 1) / 8] >> (i / 2)) & 1, want_u = 1;
			double fine = ldexp(1, e - 1 - (int)(mb - 1)), top = ((1 << mb) - 1);
			double step = ldexp(1, e - (int)u - (int)(mb - 1));

			for (int j = i; j < i + 2; j++)
				if (nearbyint(fabs(x[j]) / fine) > top)
					want_u = 0;
			if (u != want_u)
				bad++;
			for (int j = i; j < i + 2; j++) {
				double want = fmin(fabs(x[j]), top * step);

				if (fabs(fabs(y[j]) - want) > step / 2 + 1e-30 ||
				    (y[j] != 0 && signbit(y[j]) != signbit(x[j])))
					bad++;
			}
		}
		/* the same values may have two encodings (microexponent): compare values */
		fw_mx_encode(dt, y, 1, blk2, &sc2);
		fw_mx_decode(dt, blk2, &sc2, 1, x);
		for (int i = 0; i < 16; i++)
			bad_rt += !same_value(x[i], y[i]);
	}
	tap_ok(!bad_ref, "%s: engine decode == reference decode on 4000 blocks", name);
	tap_ok(!bad, "%s: microexponent set iff the pair fits; elements within half a step (%u wrong)", name, bad);
	tap_ok(!bad_rt, "%s: dequantize(quantize(dequantize(q))) == dequantize(q) (%u wrong)", name, bad_rt);
	for (int i = 0; i < 16; i++)
		x[i] = 0;
	x[3] = NAN;
	fw_mx_encode(dt, x, 1, blk, &sc);
	fw_mx_decode(dt, blk, &sc, 1, y);
	tap_ok(sc == 0xff && isnan(y[0]) && isnan(y[15]), "%s: NaN in a block -> NaN block", name);
	tmem_free(&m);
}

/* Whether this CPU has the SIMD MX decoders (AVX2: every MX format, at either level). */
/* AVX2 and F16C (cpuid.h: not every compiler's __builtin_cpu_supports() knows "f16c") */
static bool cpu_avx2(void)
{
#if defined(__x86_64__) || defined(__i386__)
	unsigned int a, b, c, d;

	return __builtin_cpu_supports("avx2") && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
#else
	return false;
#endif
}

/*
 * fw_mx_simd() in a fresh process (a child, before anything decoded) with
 * MAIA_TE_ISA unset, avx2 and portable: the CPU's level, no AVX-512
 * decoder (the AVX2 stand-in decodes as an AVX2-only CPU), none at all;
 * and decided unset, then MAIA_TE_ISA=avx2 and fw_mx_simd_again() (as at
 * each GEMM): AVX2's.
 */
static void test_mx_simd_choice(void)
{
	static const char *const isa[] = { NULL, "avx2", "portable", "avx2" };
	int got[4], cpu = -1, want_avx2;

	for (int i = 0; i < 4; i++) {
		pid_t pid = fork();
		int st = 0;

		if (pid == 0) {
			unsetenv("MAIA_TE_ISA");
			if (i == 3)
				(void)fw_mx_simd();
			if (isa[i])
				setenv("MAIA_TE_ISA", isa[i], 1);
			if (i == 3)
				fw_mx_simd_again();
			_exit((int)fw_mx_simd());
		}
		got[i] = pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ?
			 WEXITSTATUS(st) : -1;
	}
#if defined(__x86_64__) || defined(__i386__)
	cpu = !cpu_avx2() ? FW_MX_SCALAR :
	      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vbmi") ?
	      FW_MX_AVX512 : FW_MX_AVX2;
#else
	cpu = FW_MX_SCALAR;
#endif
	want_avx2 = cpu < FW_MX_AVX2 ? cpu : FW_MX_AVX2;
	tap_ok(got[0] == cpu && got[1] == want_avx2 && got[2] == FW_MX_SCALAR &&
	       got[3] == want_avx2, "fw_mx_simd(): MAIA_TE_ISA unset %d (the CPU's %d), avx2 %d "
	       "(want %d), portable %d (want 0), avx2 after a decision unset %d", got[0], cpu,
	       got[1], want_avx2, got[2], got[3]);
}

static const char *simd_name(enum fw_mx_simd simd)
{
	return simd == FW_MX_AVX2 ? "avx2" : "up to avx512";
}

/*
 * The SIMD decoders (fw_mx_decode_simd_as() at each level: AVX2 alone,
 * then with AVX-512 VBMI where the CPU has it) against the scalar one, bit for bit: every code in every
 * element slot (FP8, INT8: code c at element c of 8 blocks; FP4: byte i
 * of a block i | (15 - i) << 4, and again with the halves swapped; FP6:
 * element i of 8 blocks code i % 64 in the first 4, (37 i + 11) % 64 in
 * the others) under each of the 256 scales.
 */
static void test_mx_simd_all_scales(unsigned int mx, const char *name, enum fw_mx_simd simd)
{
	unsigned int bb = maia_dtype_block_bytes(mx), nb = bb == 16 ? 2 : 8;
	uint8_t raw[8 * 32], sc[8];
	float ys[8 * 32], yv[8 * 32];
	unsigned int bad = 0, n = 0;

	for (unsigned int i = 0; i < nb * bb; i++)
		raw[i] = (uint8_t)(bb == 16 ? (i < 16 ? (i | (15 - i) << 4) :
					       ((31 - i) | (i - 16) << 4)) : i);
	for (unsigned int i = 0; i < nb * 32 && bb == 24; i += 4) {
		uint32_t w = 0;

		for (unsigned int j = 0; j < 4; j++)
			w |= ((i + j) * (i < 128 ? 1 : 37) + 11 * (i >= 128)) % 64 << (6 * j);
		for (unsigned int j = 0; j < 3; j++)
			raw[i / 4 * 3 + j] = (uint8_t)(w >> (8 * j));
	}
	for (unsigned int s = 0; s < 256; s++) {
		memset(sc, (int)s, sizeof(sc));
		fw_mx_decode_scalar(mx, raw, sc, nb, ys);
		if (!fw_mx_decode_simd_as(simd, mx, raw, sc, nb, 32, 32, yv))
			break;
		bad += memcmp(ys, yv, sizeof(float) * nb * 32) != 0;
		n++;
	}
	tap_ok(!bad && n == (cpu_avx2() ? 256 : 0), "mx %s, %s: %s (every code x %u scales; "
	       "%u scales differ)", name, simd_name(simd), n ? "SIMD decode bit for bit as the "
	       "scalar one" : "no SIMD decoder here", n, bad);
}

/*
 * The same for MX9/MX6/MX4: 16 blocks of 16 elements, element i code
 * (37 i + 11) mod 2^w (w the element's bits; 37 is odd, so any 2^w
 * consecutive elements take every code: each code in 1 to 32 slots),
 * microexponent byte 0x5a + 29 b and then each flipped (every code under
 * both microexponents),
 * under each of the 256 scales; decoded in groups of 16, 48 floats apart.
 */
static void test_msmx_simd_all_scales(unsigned int mx, const char *name, enum fw_mx_simd simd)
{
	unsigned int bb = maia_dtype_block_bytes(mx), w = (bb - 1) / 2, nb = 16;
	uint8_t raw[16 * 17], sc[16];
	float ys[16 * 16], yv[16 * 48];
	unsigned int bad = 0, n = 0;

	for (unsigned int flip = 0; flip < 2; flip++) {
		memset(raw, 0, sizeof(raw));
		for (unsigned int i = 0; i < nb * 16; i++) {
			unsigned int v = (37 * i + 11) % (1u << w);
			unsigned int pos = i % 16 * w;
			uint8_t *p = raw + i / 16 * bb + pos / 8;

			p[0] |= (uint8_t)(v << (pos % 8));
			p[1] |= (uint8_t)(v << (pos % 8) >> 8);
		}
		for (unsigned int b = 0; b < nb; b++)
			raw[b * bb + bb - 1] = (uint8_t)((0x5a + 29 * b) ^ (flip ? 0xff : 0));
		for (unsigned int s = 0; s < 256; s++) {
			memset(sc, (int)s, sizeof(sc));
			fw_mx_decode_scalar(mx, raw, sc, nb, ys);
			if (!fw_mx_decode_simd_as(simd, mx, raw, sc, nb, 16, 48, yv))
				break;
			for (unsigned int b = 0; b < nb; b++)
				bad += memcmp(ys + 16 * b, yv + 48 * b, sizeof(float) * 16) != 0;
			n++;
		}
	}
	tap_ok(!bad && n == (cpu_avx2() ? 512 : 0), "mx %s, %s: %s (every code x both "
	       "microexponents x %u scales; %u blocks differ)", name, simd_name(simd),
	       n ? "SIMD decode bit for bit as the scalar one" : "no SIMD decoder here", n / 2,
	       bad);
}

/*
 * The SIMD decoders at the end of readable memory (the blocks end where a
 * PROT_NONE page starts: a read past the last block faults), 1 to 9 blocks
 * of random bytes under random scales (0, 1, 254 and 255 among them), into
 * groups of 16 floats 24 apart, of 32 and 48 floats 56 apart and of 32
 * back to back (a row, as fw_mx_decode() asks): bit for bit the scalar
 * decode, nothing between the groups written.
 */
static void test_mx_simd_ends(unsigned int mx, const char *name, enum fw_mx_simd simd)
{
	static const uint8_t some[] = { 0, 1, 254, 255 };
	static const unsigned int gs[][2] = { { 16, 24 }, { 32, 56 }, { 48, 56 }, { 32, 32 } };
	unsigned int bb = maia_dtype_block_bytes(mx), bs = maia_dtype_block(mx);
	long page = sysconf(_SC_PAGESIZE);
	uint8_t *map = mmap(NULL, 2 * (size_t)page, PROT_READ | PROT_WRITE,
			    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	unsigned int bad = 0, calls = 0, done = 0;
	uint8_t sc[9];
	float ys[9 * 32], yv[9 * 32 / 16 * 56];

	if (map == MAP_FAILED || mprotect(map + page, (size_t)page, PROT_NONE)) {
		tap_ok(0, "mx %s, %s: guard page (%s)", name, simd_name(simd), strerror(errno));
		return;
	}
	trand_seed(mx * 7 + simd);
	for (unsigned int nb = 1; nb <= 9; nb++) {
		for (unsigned int t = 0; t < 40; t++) {
			uint8_t *raw = map + page - nb * bb;

			for (unsigned int i = 0; i < nb * bb; i++)
				raw[i] = (uint8_t)trand_uniform(0, 256);
			for (unsigned int b = 0; b < nb; b++)
				sc[b] = t % 3 ? (uint8_t)trand_uniform(0, 256) : some[(b + t) % 4];
			fw_mx_decode_scalar(mx, raw, sc, nb, ys);
			for (size_t v = 0; v < sizeof(gs) / sizeof(gs[0]); v++) {
				unsigned int g = gs[v][0], gst = gs[v][1];
				size_t cap = (nb * bs + g - 1) / g * gst;

				for (size_t i = 0; i < sizeof(yv) / sizeof(yv[0]); i++)
					yv[i] = 12345.0f;
				calls++;
				if (!fw_mx_decode_simd_as(simd, mx, raw, sc, nb, g, gst, yv))
					continue;
				done++;
				for (size_t i = 0; i < sizeof(yv) / sizeof(yv[0]); i++) {
					size_t e = i / gst * g + i % gst;

					if (i < cap && i % gst < g && e < nb * bs)
						bad += memcmp(&yv[i], &ys[e], 4) != 0;
					else
						bad += yv[i] != 12345.0f;
				}
			}
		}
	}
	munmap(map, 2 * (size_t)page);
	tap_ok(!bad && done == (cpu_avx2() ? calls : 0), "mx %s, %s: %u decodes of 1-9 blocks "
	       "ending at a guard page, in groups of 16, 32, 48 and a row: bit for bit the scalar one, "
	       "nothing between the groups written (%u floats wrong)", name, simd_name(simd),
	       done, bad);
}

/*
 * Device worker threads decode at once while others start GEMMs
 * (gemm_run(): fw_mx_simd_again()): three threads decode blocks of every
 * MX format (random bytes, random scales with 0, 1, 254 and 255) through
 * fw_mx_decode(), the level fw_mx_simd() gives, while a fourth decides
 * again and again (MAIA_TE_ISA unchanged). Every thread sees the same
 * level, every decode bit for bit the scalar one; under
 * ThreadSanitizer (make -C tests/unit tsan TSAN_TESTS=tensor/test_dtype)
 * the decision's store and loads are no data race.
 */
/* every MX format, for the SIMD tests */
static const struct {
	unsigned int dt;
	const char *name;
} simd_types[] = {
	{ MAIA_DTYPE_MXFP8_E4M3, "mxfp8_e4m3" }, { MAIA_DTYPE_MXFP8_E5M2, "mxfp8_e5m2" },
	{ MAIA_DTYPE_MXFP6_E3M2, "mxfp6_e3m2" }, { MAIA_DTYPE_MXFP6_E2M3, "mxfp6_e2m3" },
	{ MAIA_DTYPE_MXFP4_E2M1, "mxfp4" }, { MAIA_DTYPE_MXINT8, "mxint8" },
	{ MAIA_DTYPE_MX9, "mx9" }, { MAIA_DTYPE_MX6, "mx6" }, { MAIA_DTYPE_MX4, "mx4" },
};

#define RACE_TYPES	(sizeof(simd_types) / sizeof(simd_types[0]))
#define RACE_BLOCKS	8

struct mx_race {
	uint8_t raw[RACE_TYPES][RACE_BLOCKS * 32], sc[RACE_TYPES][RACE_BLOCKS];
	float ref[RACE_TYPES][RACE_BLOCKS * 32];
	int stop;
};

struct mx_race_arg {
	struct mx_race *r;
	unsigned int bad, decodes, levels;	/* levels: bit fw_mx_simd() of each decode */
};

static void *mx_race_decoder(void *p)
{
	struct mx_race_arg *a = p;
	float y[RACE_BLOCKS * 32];

	for (unsigned int it = 0; it < 200; it++) {
		for (size_t t = 0; t < RACE_TYPES; t++) {
			unsigned int bs = maia_dtype_block(simd_types[t].dt);

			a->levels |= 1u << fw_mx_simd();
			fw_mx_decode(simd_types[t].dt, a->r->raw[t], a->r->sc[t], RACE_BLOCKS, y);
			a->bad += memcmp(y, a->r->ref[t], RACE_BLOCKS * bs * sizeof(float)) != 0;
			a->decodes++;
		}
	}
	return NULL;
}

static void *mx_race_decider(void *p)
{
	struct mx_race *r = p;
	unsigned long n = 0;

	while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE) || n < 1000) {
		fw_mx_simd_again();
		n++;
	}
	return NULL;
}

static void test_mx_simd_threads(void)
{
	static const uint8_t some[] = { 0, 1, 254, 255 };
	static struct mx_race r;
	struct mx_race_arg arg[3] = { { &r, 0, 0, 0 }, { &r, 0, 0, 0 }, { &r, 0, 0, 0 } };
	pthread_t dec[3], decider;
	unsigned int bad = 0, decodes = 0, started = 0, levels = 0, want = 1u << fw_mx_simd();
	bool decider_up;

	trand_seed(28);
	for (size_t t = 0; t < RACE_TYPES; t++) {
		for (unsigned int i = 0; i < sizeof(r.raw[t]); i++)
			r.raw[t][i] = (uint8_t)trand_uniform(0, 256);
		for (unsigned int b = 0; b < RACE_BLOCKS; b++)
			r.sc[t][b] = b < 4 ? some[b] : (uint8_t)trand_uniform(0, 256);
		fw_mx_decode_scalar(simd_types[t].dt, r.raw[t], r.sc[t], RACE_BLOCKS, r.ref[t]);
	}
	decider_up = !pthread_create(&decider, NULL, mx_race_decider, &r);
	for (unsigned int i = 0; i < 3; i++)
		started += !pthread_create(&dec[i], NULL, mx_race_decoder, &arg[i]);
	for (unsigned int i = 0; i < started; i++) {
		pthread_join(dec[i], NULL);
		bad += arg[i].bad;
		decodes += arg[i].decodes;
		levels |= arg[i].levels;
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	if (decider_up)
		pthread_join(decider, NULL);
	tap_ok(decider_up && started == 3 && !bad && decodes == 3 * 200 * RACE_TYPES &&
	       levels == want, "mx: %u decodes of every format on 3 threads while a fourth "
	       "decides the decoders again: all at fw_mx_simd() %#x (want %#x), bit for bit the "
	       "scalar one (%u wrong)", decodes, levels, want, bad);
}

int main(void)
{
	test_mx_simd_choice();	/* first: its children must not inherit a decision */

	for (size_t i = 0; i < sizeof(fmts) / sizeof(fmts[0]); i++)
		test_minifloat(&fmts[i]);
	test_bf16();
	test_fp16_sample();
	test_int8();
	test_tops();
	for (size_t i = 0; i < sizeof(mx_types) / sizeof(mx_types[0]); i++)
		test_mx(mx_types[i]);
	for (size_t i = 0; i < sizeof(mx_types) / sizeof(mx_types[0]); i++)
		test_mx_edges(mx_types[i]);
	test_msmx(MAIA_DTYPE_MX9);
	test_msmx(MAIA_DTYPE_MX6);
	test_msmx(MAIA_DTYPE_MX4);
	test_msmx_subnormal(MAIA_DTYPE_MX9);
	test_msmx_subnormal(MAIA_DTYPE_MX6);
	test_msmx_subnormal(MAIA_DTYPE_MX4);
	for (int simd = FW_MX_AVX2; simd <= FW_MX_AVX512; simd++) {
		test_mx_simd_all_scales(MAIA_DTYPE_MXFP8_E4M3, "mxfp8_e4m3", simd);
		test_mx_simd_all_scales(MAIA_DTYPE_MXFP8_E5M2, "mxfp8_e5m2", simd);
		test_mx_simd_all_scales(MAIA_DTYPE_MXFP4_E2M1, "mxfp4", simd);
		test_mx_simd_all_scales(MAIA_DTYPE_MXINT8, "mxint8", simd);
		test_mx_simd_all_scales(MAIA_DTYPE_MXFP6_E3M2, "mxfp6_e3m2", simd);
		test_mx_simd_all_scales(MAIA_DTYPE_MXFP6_E2M3, "mxfp6_e2m3", simd);
		test_msmx_simd_all_scales(MAIA_DTYPE_MX9, "mx9", simd);
		test_msmx_simd_all_scales(MAIA_DTYPE_MX6, "mx6", simd);
		test_msmx_simd_all_scales(MAIA_DTYPE_MX4, "mx4", simd);
		for (size_t i = 0; i < sizeof(simd_types) / sizeof(simd_types[0]); i++)
			test_mx_simd_ends(simd_types[i].dt, simd_types[i].name, simd);
	}
	test_mx_simd_threads();
	return tap_done();
}
