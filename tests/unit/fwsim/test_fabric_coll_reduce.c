// SPDX-License-Identifier: MIT
/*
 * The collective engine's reduction kernels (fw_coll_reduce_scalar() and
 * fw_coll_reduce_simd(), fw_fabric_coll.c): out[i] = a[i] op b[i] for SUM,
 * MAX and MIN, b FP32 or BF16, at every length 0..67 (whole vectors and
 * every tail) from misaligned pointers, on random bit patterns (so NaNs of
 * both kinds, denormals and infinities) mixed with quiet and signalling
 * NaNs, +0/-0, infinities, denormals and ties. The scalar kernel is checked
 * against the CPU reference's step (coll_ref.c ref_op(), written from
 * Documentation/hw/fabric.rst) and the AVX2 one against the scalar one, bit
 * for bit: MAX/MIN always, NaN payloads included; SUM except which NaN
 * payload a NaN sum carries, which the documentation leaves open. Nothing
 * may be written past out[n - 1]. fw_coll_reduce2() (the result into two
 * places in one pass), AVX2 and plain C, writes the scalar kernel's bits to
 * both, also when the second place is b itself (in place); fw_coll_copy2()
 * copies every length 0..300 from misaligned sources to both places, and
 * fw_coll_land() to one. The second place starts at every offset of a
 * 32-byte line that a 4-byte element can (the non-temporal stores' line
 * before it stored as usual) and at offsets no element is aligned to.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../../firmware-sim/src/fw_fabric_coll.h"
#include "coll_ref.h"
#include "maia/hw/dtype.h"
#include "maia/hw/queue.h"
#include "tap.h"

#define MAX_LEN		67
#define GUARD		32	/* bytes after out[n - 1] that must stay 0xa5 */
#define ROUNDS		8	/* random fills per length and alignment */

static uint64_t rng_state = 0x5eed2026;

static uint32_t rng32(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (uint32_t)((z ^ (z >> 31)) >> 16);
}

/* Random bits, or (half the time) one of the values that decide MAX/MIN's rules. */
static uint32_t some_f32(void)
{
	static const uint32_t special[] = {
		0x7fc00000, 0xffc00001, 0x7fc12345, 0xffe00000,	/* quiet NaNs */
		0x7f800001, 0xff812345, 0x7fa00000,		/* signalling NaNs */
		0x00000000, 0x80000000, 0x00000000, 0x80000000,	/* +0, -0 */
		0x7f800000, 0xff800000,				/* +inf, -inf */
		0x00000001, 0x807fffff, 0x00010000, 0x80400000,	/* denormals */
		0x3f800000, 0xbf800000, 0x7f7fffff, 0xff7fffff,	/* +-1, +-max */
	};
	uint32_t r = rng32();

	if (r & 1)
		return rng32() ^ (r << 16);
	return special[(r >> 1) % (sizeof(special) / sizeof(special[0]))];
}

/* n FP32 inputs at a and n at b (FP32, or BF16 when b_es is 2), one in 8 pairs equal. */
static void fill_inputs(uint8_t *a, uint8_t *b, unsigned int n, unsigned int b_es)
{
	for (unsigned int i = 0; i < n; i++) {
		uint32_t ua = some_f32(), ub = rng32() % 8 ? some_f32() : ua;
		uint16_t h = (uint16_t)(ub >> 16);

		memcpy(a + 4 * i, &ua, 4);
		if (b_es == 4)
			memcpy(b + 4 * i, &ub, 4);
		else
			memcpy(b + 2 * i, &h, 2);
	}
}

static uint32_t bits_of(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static bool is_nan_bits(uint32_t u)
{
	return (u & 0x7f800000u) == 0x7f800000u && (u & 0x007fffffu);
}

/* Whether two results agree: bitwise, except SUM's NaNs, where being NaN is enough. */
static bool same(unsigned int op, uint32_t x, uint32_t y)
{
	if (op == MAIA_REDOP_SUM && is_nan_bits(x))
		return is_nan_bits(y);
	return x == y;
}

static bool guard_intact(const uint8_t *p)
{
	for (unsigned int i = 0; i < GUARD; i++)
		if (p[i] != 0xa5)
			return false;
	return true;
}

static void test_kernels(unsigned int op, unsigned int b_es)
{
	static const char *const op_name[] = { "SUM", "MAX", "MIN" };
	/* 3 spare bytes in front of each buffer for the misalignment */
	uint8_t abuf[3 + 4 * MAX_LEN], bbuf[3 + 4 * MAX_LEN];
	uint8_t sbuf[3 + 4 * MAX_LEN + GUARD], vbuf[3 + 4 * MAX_LEN + GUARD];
	unsigned long elems = 0, nans = 0, ties = 0, bad_ref = 0, bad_simd = 0, bad_guard = 0;
	unsigned long simd_calls = 0;

	for (unsigned int n = 0; n <= MAX_LEN; n++) {
		for (unsigned int k = 0; k < 4 * ROUNDS; k++) {
			/* a, b and out each 0..3 bytes off a 4-byte boundary */
			uint8_t *a = abuf + k % 4, *b = bbuf + (k + 1 + n) % 4;
			uint8_t *out_s = sbuf + (k / 4) % 4, *out_v = vbuf + (k + 3) % 4;

			fill_inputs(a, b, n, b_es);
			memset(sbuf, 0xa5, sizeof(sbuf));
			memset(vbuf, 0xa5, sizeof(vbuf));
			fw_coll_reduce_scalar(op, b_es, out_s, a, b, n);
			if (fw_coll_reduce_simd(op, b_es, out_v, a, b, n)) {
				simd_calls++;
				bad_guard += !guard_intact(out_v + 4 * n);
			} else {
				memcpy(out_v, out_s, 4 * n);
			}
			bad_guard += !guard_intact(out_s + 4 * n);
			for (unsigned int i = 0; i < n; i++) {
				float fa = ref_ld(a, i, MAIA_DTYPE_FP32);
				float fb = ref_ld(b, i, b_es == 4 ? MAIA_DTYPE_FP32 : MAIA_DTYPE_BF16);
				uint32_t want = bits_of(ref_op(op, fa, fb)), got_s, got_v;

				memcpy(&got_s, out_s + 4 * i, 4);
				memcpy(&got_v, out_v + 4 * i, 4);
				bad_ref += !same(op, want, got_s);
				bad_simd += !same(op, got_s, got_v);
				nans += isnan(fa) || isnan(fb);
				ties += fa == fb;
				elems++;
			}
		}
	}
	tap_ok(!bad_ref && !bad_guard,
	       "%s a fp32, b %s: the scalar kernel matches the reference on %lu elements (%lu with a NaN, %lu ties), lengths 0..%u, misaligned; #wrong = %lu, writes past the end %lu",
	       op_name[op], b_es == 4 ? "fp32" : "bf16", elems, nans, ties, MAX_LEN, bad_ref,
	       bad_guard);
	if (!simd_calls)
		tap_ok(1, "# SKIP %s %s: this CPU has no AVX2", op_name[op],
		       b_es == 4 ? "fp32" : "bf16");
	else
		tap_ok(!bad_simd,
		       "%s a fp32, b %s: in %lu calls AVX2 equals the scalar kernel bit for bit%s; #differ = %lu",
		       op_name[op], b_es == 4 ? "fp32" : "bf16", simd_calls,
		       op == MAIA_REDOP_SUM ? " (NaN sums: NaN)" : ", NaN payloads included",
		       bad_simd);
}

/* fw_coll_reduce2(): both places get the scalar kernel's bits; out2 may be b (FP32). */
static void test_reduce2(unsigned int op, unsigned int b_es)
{
	static const char *const op_name[] = { "SUM", "MAX", "MIN" };
	uint8_t abuf[3 + 4 * MAX_LEN], bbuf[3 + 4 * MAX_LEN + GUARD];
	uint8_t sbuf[3 + 4 * MAX_LEN], obuf[3 + 4 * MAX_LEN + GUARD];
	_Alignas(32) uint8_t o2buf[36 + 4 * MAX_LEN + GUARD];
	unsigned long calls = 0, bad = 0, bad_guard = 0;

	for (unsigned int n = 0; n <= MAX_LEN; n++) {
		for (unsigned int k = 0; k < 8 * ROUNDS; k++) {
			uint8_t *a = abuf + k % 4, *b = bbuf + (k + 1 + n) % 4;
			/* k / 2 a multiple of 4: out2 at 0, 20, 4, 24 ... 32 of a line (AVX2 and C) */
			uint8_t *out_s = sbuf, *out = obuf + (k / 4) % 4;
			uint8_t *out2 = o2buf + (k / 2 * 5) % 36;
			bool simd = k % 2, in_place = b_es == 4 && k % 8 >= 6;

			fill_inputs(a, b, n, b_es);
			memset(bbuf + (3 + 4 * MAX_LEN), 0xa5, GUARD);
			memset(obuf, 0xa5, sizeof(obuf));
			memset(o2buf, 0xa5, sizeof(o2buf));
			fw_coll_reduce_scalar(op, b_es, out_s, a, b, n);
			if (in_place)
				out2 = b;
			fw_coll_reduce2(op, b_es, out, out2, a, b, n, simd);
			calls++;
			bad_guard += !guard_intact(out + 4 * n) ||
				     (!in_place && !guard_intact(out2 + 4 * n)) ||
				     !guard_intact(bbuf + (3 + 4 * MAX_LEN));
			for (unsigned int i = 0; i < n; i++) {
				uint32_t want, got, got2;

				memcpy(&want, out_s + 4 * i, 4);
				memcpy(&got, out + 4 * i, 4);
				memcpy(&got2, out2 + 4 * i, 4);
				bad += !same(op, want, got) || got2 != got;
			}
		}
	}
	tap_ok(!bad && !bad_guard,
	       "%s a fp32, b %s: fw_coll_reduce2() in %lu calls (AVX2 and plain C, a quarter of the fp32 ones in place into b) writes the scalar kernel's result to both places; #wrong = %lu, writes past the end %lu",
	       op_name[op], b_es == 4 ? "fp32" : "bf16", calls, bad, bad_guard);
}

/* fw_coll_copy2(): every length and misalignment, both places (or one), nothing past the end. */
static void test_copy2(void)
{
	enum { LEN = 300 };
	uint8_t src[3 + LEN], o[3 + LEN + GUARD];
	_Alignas(32) uint8_t o2[36 + LEN + GUARD];
	unsigned long calls = 0, bad = 0, bad_guard = 0;

	for (unsigned int len = 0; len <= LEN; len++) {
		for (unsigned int k = 0; k < 16; k++) {
			/* op2 at 0, 5, 10 ... 35: every residue of a line that an element has, and others */
			uint8_t *sp = src + k % 4, *op = o + (k / 4) % 4, *op2 = o2 + (k * 5) % 36;
			bool two = k % 8 != 7, land = k % 8 == 6;

			for (unsigned int i = 0; i < len; i++)
				sp[i] = (uint8_t)rng32();
			memset(o, 0xa5, sizeof(o));
			memset(o2, 0xa5, sizeof(o2));
			if (land)
				fw_coll_land(op2, sp, len);
			else
				fw_coll_copy2(op, two ? op2 : NULL, sp, len);
			calls++;
			bad += (!land && memcmp(op, sp, len) != 0) || (two && memcmp(op2, sp, len) != 0);
			bad_guard += (land ? !guard_intact(o) : !guard_intact(op + len)) ||
				     (two ? !guard_intact(op2 + len) : !guard_intact(o2));
		}
	}
	tap_ok(!bad && !bad_guard,
	       "fw_coll_copy2() and fw_coll_land(): %lu calls, lengths 0..%u from misaligned sources to misaligned places (one in eight to one place, one in eight fw_coll_land()): #wrong = %lu, writes past the end or to a place not given %lu",
	       calls, LEN, bad, bad_guard);
}

int main(void)
{
	test_copy2();
	for (unsigned int op = MAIA_REDOP_SUM; op <= MAIA_REDOP_MIN; op++) {
		test_kernels(op, 4);
		test_kernels(op, 2);
		test_reduce2(op, 4);
		test_reduce2(op, 2);
	}
	return tap_done();
}
