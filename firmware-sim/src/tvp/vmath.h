/* SPDX-License-Identifier: MIT */
/*
 * The transcendentals of the TVP (VEXP ... VERF), one lane at a time in a
 * form the compiler vectorises: straight-line double arithmetic on the
 * binary32 input (every binary32, subnormals included, is a normal double),
 * range reduction by the round-to-integer trick instead of conversions,
 * selects instead of branches. The polynomials carry about 1e-13 relative
 * error in double, so the one final rounding to binary32 decides the
 * result: within 1 ULP (Documentation/hw/tvp.rst gives the measured
 * bounds). Included by vops.h only; must be compiled with fp-contract off
 * so that every ISA variant gives the same bits.
 */
#ifndef FWSIM_TVP_VMATH_H
#define FWSIM_TVP_VMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define VM_ROUND	0x1.8p52	/* adding it rounds |x| < 2^51 to an integer */
#define VM_LN2_HI	6.93147180369123816490e-01	/* 32 significant bits */
#define VM_LN2_LO	1.90821492927058770002e-10
#define VM_INV_LN2	1.44269504088896338700e+00
#define VM_LN2		6.93147180559945286227e-01
#define VM_LOG2E	1.44269504088896338700e+00
#define VM_PIO2_1	1.57079632673412561417e+00	/* first 33 bits of pi/2 */
#define VM_PIO2_1T	6.07710050650619224932e-11	/* pi/2 - PIO2_1 */
#define VM_2_PI		6.36619772367581382433e-01
#define VM_2_SQRTPI	1.12837916709551255856e+00
#define VM_SQRT2	1.41421356237309514547e+00

static inline uint64_t vm_bits(double d)
{
	uint64_t u;

	memcpy(&u, &d, 8);
	return u;
}

static inline double vm_double(uint64_t u)
{
	double d;

	memcpy(&d, &u, 8);
	return d;
}

/* e^r for |r| <= ln2 / 2: Taylor to r^11 (error below 1e-14 relative). */
static inline double vm_exp_poly(double r)
{
	double p = 1.0 / 39916800.0;

	p = p * r + 1.0 / 3628800.0;
	p = p * r + 1.0 / 362880.0;
	p = p * r + 1.0 / 40320.0;
	p = p * r + 1.0 / 5040.0;
	p = p * r + 1.0 / 720.0;
	p = p * r + 1.0 / 120.0;
	p = p * r + 1.0 / 24.0;
	p = p * r + 1.0 / 6.0;
	p = p * r + 0.5;
	p = p * r + 1.0;
	return p * r + 1.0;
}

/* 2^k for an integer k in [-1022, 1023] held as (k + VM_ROUND). */
static inline double vm_pow2(double kr)
{
	return vm_double((vm_bits(kr) - vm_bits(VM_ROUND) + 1023u) << 52);
}

/* e^x for |x| <= 700 (NaN in, NaN out). */
static inline double vm_exp(double x)
{
	double kr = x * VM_INV_LN2 + VM_ROUND;
	double k = kr - VM_ROUND;
	double r = (x - k * VM_LN2_HI) - k * VM_LN2_LO;

	return vm_exp_poly(r) * vm_pow2(kr);
}

/* 2^x for |x| <= 1000. */
static inline double vm_exp2(double x)
{
	double kr = x + VM_ROUND;
	double k = kr - VM_ROUND;

	return vm_exp_poly((x - k) * VM_LN2) * vm_pow2(kr);
}

static inline float vm_expf(float x)
{
	double d = x;

	d = d > 200.0 ? 200.0 : d;	/* far past binary32's range either way */
	d = d < -200.0 ? -200.0 : d;
	return (float)vm_exp(d);
}

static inline float vm_exp2f(float x)
{
	double d = x;

	d = d > 300.0 ? 300.0 : d;
	d = d < -300.0 ? -300.0 : d;
	return (float)vm_exp2(d);
}

/*
 * log(x) = e ln2 + 2 atanh(s), s = (m - 1) / (m + 1), for x = 2^e m with m
 * in [sqrt(2)/2, sqrt(2)): |s| < 0.172, series to s^17. *e_out gets e.
 */
static inline double vm_log_parts(double x, double *e_out)
{
	uint64_t u = vm_bits(x);
	uint64_t ef = (u >> 52) & 0x7ffu;
	double m = vm_double((u & 0x000fffffffffffffull) | 0x3ff0000000000000ull);
	/* e as a double without an int64 conversion: 2^52 + ef - (2^52 + 1023) */
	double e = vm_double(0x4330000000000000ull | ef) - (0x1p52 + 1023.0);
	double s, z, p;

	e = m > VM_SQRT2 ? e + 1.0 : e;
	m = m > VM_SQRT2 ? m * 0.5 : m;
	s = (m - 1.0) / (m + 1.0);
	z = s * s;
	p = 1.0 / 17.0;
	p = p * z + 1.0 / 15.0;
	p = p * z + 1.0 / 13.0;
	p = p * z + 1.0 / 11.0;
	p = p * z + 1.0 / 9.0;
	p = p * z + 1.0 / 7.0;
	p = p * z + 1.0 / 5.0;
	p = p * z + 1.0 / 3.0;
	p = p * z + 1.0;
	*e_out = e;
	return 2.0 * s * p;
}

/* The special inputs of log: 0 -> -inf, < 0 -> NaN, +inf -> +inf, NaN -> NaN. */
static inline float vm_log_special(float x, float r)
{
	r = x == 0.0f ? -INFINITY : r;
	r = x < 0.0f ? NAN : r;
	r = x == INFINITY ? INFINITY : r;
	return x != x ? x : r;
}

static inline float vm_logf(float x)
{
	double d = x > 0.0f && x < INFINITY ? (double)x : 1.0, e;
	double l = vm_log_parts(d, &e);

	return vm_log_special(x, (float)(e * VM_LN2 + l));
}

static inline float vm_log2f(float x)
{
	double d = x > 0.0f && x < INFINITY ? (double)x : 1.0, e;
	double l = vm_log_parts(d, &e);

	return vm_log_special(x, (float)(e + l * VM_LOG2E));
}

/* sin r and cos r for |r| <= pi/4 (Taylor to r^15 / r^16). */
static inline double vm_sin_poly(double r)
{
	double z = r * r, p = -1.0 / 1307674368000.0;

	p = p * z + 1.0 / 6227020800.0;
	p = p * z - 1.0 / 39916800.0;
	p = p * z + 1.0 / 362880.0;
	p = p * z - 1.0 / 5040.0;
	p = p * z + 1.0 / 120.0;
	p = p * z - 1.0 / 6.0;
	return r + r * z * p;
}

static inline double vm_cos_poly(double r)
{
	double z = r * r, p = 1.0 / 20922789888000.0;

	p = p * z - 1.0 / 87178291200.0;
	p = p * z + 1.0 / 479001600.0;
	p = p * z - 1.0 / 3628800.0;
	p = p * z + 1.0 / 40320.0;
	p = p * z - 1.0 / 720.0;
	p = p * z + 1.0 / 24.0;
	p = p * z - 0.5;
	return 1.0 + z * p;
}

/* Inputs the vector path reduces exactly enough; vops.h fixes up the others. */
#define VM_TRIG_MAX	65536.0f

/* sin (cos_shift 0) or cos (cos_shift 1) of |x| <= VM_TRIG_MAX. */
static inline float vm_trigf(float x, unsigned int cos_shift)
{
	double d = fabsf(x) <= VM_TRIG_MAX ? (double)x : 0.0;
	double kr = d * VM_2_PI + VM_ROUND;
	double k = kr - VM_ROUND;
	double r = (d - k * VM_PIO2_1) - k * VM_PIO2_1T;
	uint64_t q = (vm_bits(kr) + cos_shift) & 3u;
	double s = vm_sin_poly(r), c = vm_cos_poly(r);
	double v = (q & 1u) ? c : s;

	v = (q & 2u) ? -v : v;
	return x == 0.0f ? (cos_shift ? 1.0f : x) : (float)v;	/* sin(-0) = -0 */
}

/* tanh: (e^2x - 1) / (e^2x + 1), x - x^3/3 where that cancels, 1 past 10. */
static inline float vm_tanhf(float x)
{
	double a = fabs((double)x), e, t;

	a = a < 10.0 ? a : 10.0;
	e = vm_exp(2.0 * a);
	t = (e - 1.0) / (e + 1.0);
	t = a < 0x1p-13 ? a - a * a * a / 3.0 : t;
	t = copysign(t, (double)x);
	return x != x ? x : (float)t;
}

/*
 * erf: Taylor to x^33 for |x| <= 1; above, 1 - e^(-x^2) erfcx(x) with
 * erfcx = erfc(x) e^(x^2) (smooth, 0.43 .. 0.14 on [1, 4]) from a Chebyshev
 * fit (fw_tvp_erfcx_cheb[], set up by fw_tvp_math_init()); 1 past 4.
 */
static inline float vm_erff(float x)
{
	double a = fabs((double)x), z, p, t, b1 = 0.0, b2 = 0.0, b0, small, large, r;

	a = a < 4.0 ? a : 4.0;
	z = a * a;
	p = 0.0;
	/* sum_n (-1)^n z^n / (n! (2n + 1)), n = 16 .. 0 */
#define VM_ERF_TERM(n, fact) p = p * z + (((n) & 1 ? -1.0 : 1.0) / ((fact) * (2.0 * (n) + 1.0)))
	VM_ERF_TERM(16, 20922789888000.0);
	VM_ERF_TERM(15, 1307674368000.0);
	VM_ERF_TERM(14, 87178291200.0);
	VM_ERF_TERM(13, 6227020800.0);
	VM_ERF_TERM(12, 479001600.0);
	VM_ERF_TERM(11, 39916800.0);
	VM_ERF_TERM(10, 3628800.0);
	VM_ERF_TERM(9, 362880.0);
	VM_ERF_TERM(8, 40320.0);
	VM_ERF_TERM(7, 5040.0);
	VM_ERF_TERM(6, 720.0);
	VM_ERF_TERM(5, 120.0);
	VM_ERF_TERM(4, 24.0);
	VM_ERF_TERM(3, 6.0);
	VM_ERF_TERM(2, 2.0);
	VM_ERF_TERM(1, 1.0);
	VM_ERF_TERM(0, 1.0);
#undef VM_ERF_TERM
	small = VM_2_SQRTPI * a * p;
	/* Clenshaw over the Chebyshev series in t = (2a - 5) / 3 */
	t = (2.0 * (a > 1.0 ? a : 1.0) - 5.0) / 3.0;
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC unroll 32
#endif
	for (int k = FW_TVP_ERFCX_TERMS - 1; k >= 1; k--) {
		b0 = 2.0 * t * b1 - b2 + fw_tvp_erfcx_cheb[k];
		b2 = b1;
		b1 = b0;
	}
	large = 1.0 - vm_exp(-z) * (t * b1 - b2 + 0.5 * fw_tvp_erfcx_cheb[0]);
	r = a <= 1.0 ? small : large;
	r = copysign(r, (double)x);
	return x != x ? x : (float)r;
}

#endif /* FWSIM_TVP_VMATH_H */
