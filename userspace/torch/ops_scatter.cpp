// SPDX-License-Identifier: MIT
/*
 * scatter (src and value forms, reduce= add/multiply), scatter_reduce
 * (sum, prod, amax, amin, mean; include_self), index_copy and index_fill_
 * as one TVP program family, deterministic.
 *
 * index_copy and index_fill_ are scatters along dim of an index expanded
 * over the other dimensions. Two lanes never update one element of the
 * same buffer, so there are no atomics and the result depends on the
 * shapes and values only. A short walk along dim is serial: a lane takes
 * one position of the index's shape with dim left out (its "outer"
 * coordinates, rank <= 5 with dim last and of size 1) and walks j = 0 ..
 * J - 1 in order, reading index and src there and updating self[..,
 * index, ..] by a load, the reduction, a store. A long one (chunks_for()
 * decides) is chunked: C lanes per outer position walk positions c, c +
 * C, c + 2C, .. each into a partial row of its own (P, filled with the
 * reduction's identity, and M: per element the updates or, for plain
 * scatters, the last writer's position + 1), and a combine pass, a lane
 * per element of self, folds the rows into self in chunk order.
 *
 * So for plain scatter and index_copy with repeated indices the last one
 * along dim wins (what CPU torch's loop leaves in practice; torch leaves
 * it undefined), amax and amin equal CPU torch's (NaN propagating), and
 * integer reductions too (int32 wrapping; mean rounds down as CPU
 * torch's floor division). sum, prod and mean on floats round to self's
 * dtype each step: serially in index order as CPU torch does, chunked in
 * the partials' order (within float rounding of CPU torch).
 * include_self=False starts from the identity where src lands (CPU
 * torch's scatter_ of it); mean divides by the updates + include_self
 * (at least 1).
 *
 * The result is a contiguous copy of self, so a bad index (out of range;
 * for index_fill_ also below -size) leaves self as it was: the lane sets
 * a flag word, the op waits for its job, reads it and re-runs the op on
 * CPU copies for CPU torch's own error (a host wait per op). Indices are
 * int64, as CPU torch requires for these ops. Plain scatters take any
 * type the gathers keep exactly, and int64 and float64 as pairs of int32
 * words; the reductions float32, bfloat16, float16, int32 and int64 (as
 * two words, through the chunked programs only), and int8, uint8 and
 * int16 as int32 (widen()).
 */
#include <torch/library.h>

#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>

#include "ops_mask.h"

namespace maia_torch {
namespace ops {

using tvp::Launch;

enum class Red { Set, Add, Mul, Max, Min, Mean };

/* ---- the programs ------------------------------------------------------------ */

static bool is_float(const std::string &t)
{
	return t == "f32" || t == "bf16" || t == "f16";
}

/*
 * a = red(a, x) in registers, t1/t2 temporaries. Floats: a NaN on either
 * side wins amax/amin, as CPU torch's; int32: wrapping add and multiply.
 */
static std::string red_asm(Red r, bool flt, const std::string &a, const std::string &x, const std::string &t1,
			   const std::string &t2)
{
	switch (r) {
	case Red::Set:
		return "\tvmov " + a + ", " + x + "\n";
	case Red::Add:
	case Red::Mean:
		return std::string(flt ? "\tvfadd " : "\tviadd ") + a + ", " + a + ", " + x + "\n";
	case Red::Mul:
		return std::string(flt ? "\tvfmul " : "\tvimul ") + a + ", " + a + ", " + x + "\n";
	default:
		break;
	}
	if (!flt)
		return std::string(r == Red::Max ? "\tvimax " : "\tvimin ") + a + ", " + a + ", " + x + "\n";
	return std::string("\t") + (r == Red::Max ? "vfmax " : "vfmin ") + t1 + ", " + a + ", " + x + "\n\tvfcmp " +
	       t2 + ", " + x + ", " + x + ", ne\n\tvsel " + t1 + ", " + x + ", " + t1 + ", " + t2 + "\n\tvfcmp " + t2 +
	       ", " + a + ", " + a + ", ne\n\tvsel " + a + ", " + a + ", " + t1 + ", " + t2 + "\n";
}

static std::string identity(Red r, bool flt)
{
	static const char *const f[] = { "0", "0.0", "1.0", "-inf", "inf", "0.0" };
	static const char *const i[] = { "0", "0", "1", "-2147483648", "2147483647", "0" };

	return (flt ? f : i)[(int)r];
}

/*
 * int64 as two int32 words (lo, hi): lo/hi = the element at base + off
 * (element offsets; tmp a temporary), stored likewise; v9 is taken for 1.
 */
static std::string ld64(const std::string &lo, const std::string &hi, const std::string &base, const std::string &off,
			const std::string &m, const std::string &tmp, bool store = false)
{
	std::string op = store ? "\tvst " : "\tvld ";

	return "\tviadd " + tmp + ", " + off + ", " + off + "\n" + op + lo + ", " + base + ", " + tmp + ", i32, " + m +
	       "\n\tvsplati v9, 1\n\tviadd " + tmp + ", " + tmp + ", v9\n" + op + hi + ", " + base + ", " + tmp +
	       ", i32, " + m + "\n";
}

/*
 * (alo, ahi) = red((alo, ahi), (xlo, xhi)) on int64, wrapping; t: eight
 * temporaries. Unsigned compares of the low words: the sign bits flipped,
 * compared signed. mul: the low 64 bits of the product, alo x xlo from
 * 16-bit halves (the TVP multiplies 32 x 32 bits into 32).
 */
static std::string red64(Red r, const std::string &alo, const std::string &ahi, const std::string &xlo,
			 const std::string &xhi, const std::vector<std::string> &t)
{
	auto i = [](const std::string &op, const std::string &d, const std::string &a, const std::string &b) {
		return "\t" + op + " " + d + ", " + a + ", " + b + "\n";
	};
	/* d = a <u b; k, u, v temporaries (d may be u) */
	auto ult = [&](const std::string &d, const std::string &a, const std::string &b, const std::string &k,
		       const std::string &u, const std::string &v) {
		return "\tvsplati " + k + ", -2147483648\n" + i("vxor", u, a, k) + i("vxor", v, b, k) + "\tvicmp " + d +
		       ", " + u + ", " + v + ", lt\n";
	};

	switch (r) {
	case Red::Add:
		return i("viadd", t[0], alo, xlo) + ult(t[1], t[0], alo, t[3], t[1], t[2]) + i("viadd", ahi, ahi, xhi) +
		       i("viadd", ahi, ahi, t[1]) + "\tvmov " + alo + ", " + t[0] + "\n";
	case Red::Max:
	case Red::Min: {
		/* x wins: max where a < x, min where x < a */
		const std::string &p = r == Red::Max ? ahi : xhi, &q = r == Red::Max ? xhi : ahi;
		const std::string &pl = r == Red::Max ? alo : xlo, &ql = r == Red::Max ? xlo : alo;

		return "\tvicmp " + t[0] + ", " + p + ", " + q + ", lt\n\tvicmp " + t[1] + ", " + p + ", " + q +
		       ", eq\n" + ult(t[2], pl, ql, t[5], t[3], t[4]) + i("vand", t[1], t[1], t[2]) +
		       i("vor", t[0], t[0], t[1]) + "\tvsel " + alo + ", " + xlo + ", " + alo + ", " + t[0] + "\n\tvsel " +
		       ahi + ", " + xhi + ", " + ahi + ", " + t[0] + "\n";
	}
	case Red::Mul:
		return "\tvsplati " + t[7] + ", 65535\n" + i("vand", t[0], alo, t[7]) + i("vand", t[1], xlo, t[7]) +
		       "\tvsplati " + t[7] + ", 16\n" + i("vshr", t[2], alo, t[7]) + i("vshr", t[3], xlo, t[7]) +
		       i("vimul", t[4], t[0], t[1]) + i("vimul", t[5], t[0], t[3]) + i("vimul", t[6], t[2], t[1]) +
		       i("vimul", t[2], t[2], t[3]) +					/* p00 p01 p10 p11 */
		       i("viadd", t[1], t[5], t[6]) + ult(t[0], t[1], t[5], t[6], t[0], t[3]) +	/* mid, its carry */
		       i("vshl", t[3], t[1], t[7]) + i("vshr", t[1], t[1], t[7]) +
		       i("viadd", t[5], t[4], t[3]) + ult(t[6], t[5], t[4], t[6], t[3], t[4]) +	/* low word, carry */
		       i("viadd", t[2], t[2], t[1]) + i("vshl", t[0], t[0], t[7]) + i("viadd", t[2], t[2], t[0]) +
		       i("viadd", t[2], t[2], t[6]) +					/* the high word of alo x xlo */
		       i("vimul", t[0], alo, xhi) + i("vimul", t[1], ahi, xlo) + i("viadd", t[2], t[2], t[0]) +
		       i("viadd", ahi, t[2], t[1]) + "\tvmov " + alo + ", " + t[5] + "\n";
	default:
		return "";
	}
}

/*
 * mean's last step: v25 /= max(v26 + v5, 1), v26 the count (int32), v5
 * include_self (int32), v17 = 0; integers divide rounding down, as CPU
 * torch's floor division. narrow ("i8", "u8", "i16"; int32 lanes standing
 * for that type): the sum first wraps to it, as CPU torch's sum in that
 * type does (the count does not: the caller keeps it below the type's
 * limit).
 */
static std::string mean_div(bool flt, const std::string &narrow = "")
{
	std::string s = "\tviadd v26, v26, v5\n\tvsplati v27, 1\n\tvimax v26, v26, v27\n";

	if (narrow == "u8")
		s += "\tvsplati v27, 255\n\tvand v25, v25, v27\n";
	else if (!narrow.empty())
		s += "\tvsplati v27, " + std::string(narrow == "i8" ? "24" : "16") +
		     "\n\tvshl v25, v25, v27\n\tvsra v25, v25, v27\n";
	if (flt)
		return s + "\tvcvt v26, v26, i2f\n\tvfdiv v25, v25, v26\n";
	return s + "\tvirem v27, v25, v26\n\tvidiv v25, v25, v26\n\tvicmp v3, v27, v17, lt\n\tvisub v25, v25, v3\n";
}

/*
 * One walk along dim (label l): j = 0 .. s23 - 1 (s26), the index at v12
 * (int64 elements), src at v13, both stepping by their dim strides (v20,
 * v21); v15 = the index, wrapped from [-size, 0) where v7 says so; a bad
 * one sets the flag word (s4) and its lane sits the step out; v23 = the
 * target (v11 + index x v22). init: store the identity there; else reduce
 * src (or the value v6 when s18 != 0) into it and, with counts, add 1 to
 * the int32 count at s27 + the target. chunked: the lane is at v10 along
 * dim (masked from J, v28, on) and steps by C (v30; v20 and v21 are C
 * strides); with s19 != 0 it counts, or for sset stores its position + 1.
 */
static std::string walk(const std::string &l, Red r, bool init, const std::string &t, bool counts, bool chunked)
{
	bool flt = is_float(t);
	std::string m = chunked ? "v5" : "v29";
	std::string s = "\tli s26, 0\n\tvmov v12, v1\n\tvmov v13, v2\n" + l + ":\n\tbge s26, s23, " + l + "_end\n";

	if (chunked)
		s += "\tvicmp v5, v10, v28, lt\n\tvand v5, v5, v29\t# j < J\n";
	s += "\tviadd v14, v12, v12\n\tvld v15, s2, v14, i32, " + m + "\n\tvsplati v9, 1\n"
	     "\tviadd v14, v14, v9\n\tvld v16, s2, v14, i32, " + m + "\n"
	     "\tvicmp v18, v16, v17, eq\n\tvicmp v19, v15, v17, ge\n\tvand v18, v18, v19\n"
	     "\tvicmp v19, v15, v8, lt\n\tvand v18, v18, v19\t# in [0, size)\n"
	     "\tvsplati v9, -1\n\tviadd v3, v15, v8\n\tvicmp v4, v16, v9, eq\n\tvicmp v19, v15, v17, lt\n"
	     "\tvand v4, v4, v19\n\tvicmp v19, v3, v17, ge\n\tvand v4, v4, v19\n\tvand v4, v4, v7\n"
	     "\tvsel v15, v3, v15, v4\n\tvor v18, v18, v4\t# in [-size, 0), wrapping\n"
	     "\tvicmp v19, v18, v17, eq\n\tvand v19, v19, " + m + "\n\tvsplati v9, 1\n"
	     "\tvst v9, s4, v17, i32, v19\t# a bad one: flag = 1\n"
	     "\tvand v18, v18, " + m + "\n\tvimul v23, v15, v22\n\tviadd v23, v23, v11\t# the target\n";

	if (init) {
		s += "\tvsplati v24, " + identity(r, flt) + "\n\tvst v24, s1, v23, " + t + ", v18\n";
	} else if (t == "i64") {
		/* src or the value (its high word from s3) in v24/v0, the target in v25/v31 */
		s += "\tbnez s18, " + l + "_v\n" + ld64("v24", "v0", "s3", "v13", "v18", "v14") + "\tjmp " + l + "_s\n" +
		     l + "_v:\n\tvmov v24, v6\n\tshr s22, s3, s30\n\tvsplat v0, s22\n" + l + "_s:\n" +
		     ld64("v25", "v31", "s1", "v23", "v18", "v14") +
		     red64(r, "v25", "v31", "v24", "v0", { "v3", "v4", "v14", "v15", "v16", "v19", "v26", "v27" }) +
		     ld64("v25", "v31", "s1", "v23", "v18", "v14", true);
	} else {
		s += "\tbnez s18, " + l + "_v\n\tvld v24, s3, v13, " + t + ", v18\n\tjmp " + l + "_s\n" + l +
		     "_v:\n\tvmov v24, v6\n" + l + "_s:\n";
		if (r != Red::Set)
			s += "\tvld v25, s1, v23, " + t + ", v18\n";
		s += red_asm(r, flt, "v25", "v24", "v26", "v27") + "\tvst v25, s1, v23, " + t + ", v18\n";
	}
	if (!init) {
		if (chunked)
			s += "\tbeqz s19, " + l + "_n\n";
		if (chunked && r == Red::Set)
			s += "\tvsplati v27, 1\n\tviadd v26, v10, v27\n\tvst v26, s27, v23, i32, v18\t# j + 1\n";
		else if (counts)
			s += "\tvld v26, s27, v23, i32, v18\n\tvsplati v27, 1\n\tviadd v26, v26, v27\n"
			     "\tvst v26, s27, v23, i32, v18\t# count\n";
		if (chunked)
			s += l + "_n:\n\tviadd v10, v10, v30\n";
	}
	return s + "\tviadd v12, v12, v20\n\tviadd v13, v13, v21\n\taddi s26, s26, 1\n\tjmp " + l + "\n" + l +
	       "_end:\n";
}

/*
 * The serial walk, sset / sadd / smul / smax / smin / smean: s1 = self
 * (updated in place), s2 = index (int64), s3 = src or the value (binary32
 * bits or the integer), s4 = aux (int32: the flag word, then smean's
 * counts at self's offsets), s5 = the outer element count, s6/s7 = the
 * outer shape, s8-s10 / s11-s13 / s14-s16 = the strides of self / index /
 * src over it (the last, dim's, in the low half of s10 / s13 / s16), and
 * in the high halves of s10 J, of s13 self.size(dim), of s16 the mode: 1
 * wrap negative indices, 2 include_self, 4 the value form.
 */
static std::string sloop(Red r, const std::string &t, const std::string &narrow)
{
	std::string s = tvp_asm_coords5(5, 6) + tvp_asm_dot5(11, 8) + tvp_asm_dot5(12, 11) + tvp_asm_dot5(13, 14);

	s += "\tvmov v1, v12\n\tvmov v2, v13\n\tshr s23, s10, s30\t# J\n\tshr s24, s13, s30\t# size\n"
	     "\tshr s25, s16, s30\t# mode\n\tvsplat v20, s13\n\tvsplat v21, s16\n\tvsplat v22, s10\n"
	     "\tvsplat v8, s24\n\tvsplati v17, 0\n\tvsplat v6, s3\n\taddi s27, s4, 4\t# counts\n"
	     "\tli s31, 1\n\tand s17, s25, s31\n\tvsplat v7, s17\t# wrap\n"
	     "\tli s31, 4\n\tand s18, s25, s31\t# the value form\n"
	     "\tli s31, 1\n\tshr s19, s25, s31\n\tand s19, s19, s31\t# include_self\n";
	if (r != Red::Set)
		s += "\tbnez s19, self_in\n" + walk("ini", r, true, t, false, false) + "self_in:\n";
	s += walk("red", r, false, t, r == Red::Mean, false);
	if (r == Red::Mean)
		s += "\tvsplat v5, s19\n\tvmov v23, v11\n\tli s26, 0\n"
		     "fin:\n\tbge s26, s24, fin_end\n\tvld v25, s1, v23, " + t + ", v29\n"
		     "\tvld v26, s27, v23, i32, v29\n" + mean_div(is_float(t), narrow) + "\tvst v25, s1, v23, " + t + ", v29\n"
		     "\tviadd v23, v23, v22\n\taddi s26, s26, 1\n\tjmp fin\nfin_end:\n";
	return s + "\thalt\n";
}

/*
 * The chunked walk, wset / wadd / wmul / wmax / wmin / wmean: a lane per
 * (outer position o, chunk c) walks positions c, c + C, c + 2C, .. of dim
 * (L steps; so the C lanes of one o read consecutive index and src
 * elements) into its own partial row P[c][o][0 .. size): the value of the
 * last writer (wset), or src folded from the reduction's identity (P is
 * filled with it) in index order (wmean: the sum). With counts it keeps
 * M[c][o][..] (int32): wset the last writer's position + 1, the others
 * the number of updates. s1 = P, s2 = index, s3 = src or the value, s4 =
 * the flag word, s5 = the lanes (outer count x C), s6/s7 = the outer
 * shape with C last, s8-s10 / s11-s13 = the strides of index / src over
 * it (dim's last; J in the high half of s10, self.size(dim) in that of
 * s13), s14 = M, s15 = L | mode << 32 (1 wrap, 4 the value form, 8
 * counts), s16 = T (outer count x size, a partial's length).
 */
static std::string wloop(Red r, const std::string &t)
{
	std::string s = tvp_asm_coords5(5, 6) + tvp_asm_dot5(12, 8) + tvp_asm_dot5(13, 11);

	s += "\tshr s24, s13, s30\t# size\n\tvsplat v8, s24\n"
	     "\tshr s25, s15, s30\t# mode\n\tshl s23, s15, s30\n\tshr s23, s23, s30\t# L\n"
	     "\tvsplat v30, s6\t# C\n\tvsplat v20, s10\n\tvimul v20, v20, v30\n"
	     "\tvsplat v21, s13\n\tvimul v21, v21, v30\n\tvsplati v22, 1\n\tvsplati v17, 0\n\tvsplat v6, s3\n"
	     "\taddi s27, s14, 0\t# M\n"
	     "\tli s31, 1\n\tand s17, s25, s31\n\tvsplat v7, s17\t# wrap\n"
	     "\tli s31, 4\n\tand s18, s25, s31\t# the value form\n"
	     "\tli s31, 8\n\tand s19, s25, s31\t# counts\n"
	     "\tvmov v10, v4\n\tvmov v1, v12\n\tvmov v2, v13\t# position c, index and src there\n"
	     "\tvidiv v9, v28, v30\n\tvimul v11, v9, v8\t# o x size (o = f / C)\n"
	     "\tvsplat v9, s16\n\tvimul v3, v4, v9\n\tviadd v11, v11, v3\t# P[c][o]\n"
	     "\tshr s22, s10, s30\n\tvsplat v28, s22\t# J\n";
	s += walk("red", r == Red::Mean ? Red::Add : r, false, t, true, true);
	return s + "\thalt\n";
}
/*
 * int64 mean's last step: (v25, v1) = floor((v25, v1) / max(v21 + v5, 1))
 * (v21 the updates, v5 include_self, v17 = 0): |x| divided by shifting
 * it left into a 32-bit remainder 64 times, a quotient bit per step
 * shifted in behind it; a negative x's quotient is -(q + (rem != 0)).
 */
static std::string div64()
{
	return "\tviadd v26, v21, v5\n\tvsplati v27, 1\n\tvimax v26, v26, v27\t# d\n"
	       "\tvicmp v30, v1, v17, lt\t# x < 0\n"
	       "\tvisub v3, v17, v25\n\tvicmp v4, v25, v17, ne\n\tvisub v6, v17, v1\n\tvisub v6, v6, v4\n"
	       "\tvsel v25, v3, v25, v30\n\tvsel v1, v6, v1, v30\t# |x|\n"
	       "\tvmov v8, v17\n\tvsplati v10, 31\n\tvsplati v13, 1\n\tli s26, 0\n\tli s31, 64\n"
	       "mdiv:\n\tbge s26, s31, mdiv_end\n"
	       "\tvshr v14, v1, v10\n\tvshl v1, v1, v13\n\tvshr v15, v25, v10\n\tvor v1, v1, v15\n\tvshl v25, v25, v13\n"
	       "\tvshl v8, v8, v13\n\tvor v8, v8, v14\n\tvicmp v16, v8, v26, lt\n\tvxor v16, v16, v13\t# rem >= d\n"
	       "\tvimul v19, v16, v26\n\tvisub v8, v8, v19\n\tvor v25, v25, v16\n"
	       "\taddi s26, s26, 1\n\tjmp mdiv\nmdiv_end:\n"
	       "\tvicmp v14, v8, v17, ne\n\tvand v14, v14, v30\n\tviadd v3, v25, v14\n"
	       "\tvicmp v15, v3, v17, eq\n\tvand v15, v15, v14\n\tviadd v6, v1, v15\t# q + (rem != 0) if x < 0\n"
	       "\tvisub v4, v17, v3\n\tvicmp v15, v3, v17, ne\n\tvisub v16, v17, v6\n\tvisub v16, v16, v15\n"
	       "\tvsel v25, v4, v3, v30\n\tvsel v1, v16, v6, v30\n";
}

/*
 * The combine, cset / cadd / cmul / cmax / cmin / cmean: a lane per
 * element e of self that the walks reach (outer position, k along dim)
 * folds the chunks' partials into it in chunk order: cset takes the one
 * with the last writer (the largest M[c][e]); the others fold those that
 * updated e (M[c][e] > 0; without counts every one but an add's +0.0,
 * the identity, which would turn a -0.0 self into +0.0) into self, or
 * without include_self start from the first one's P (the identity folded
 * with src already); untouched elements keep self. cmean divides by the
 * counts' sum + include_self (at least 1). s1 = self, s2 = P, s3 = M, s4
 * = T (the lanes: outer count x size), s5 = C, s6/s7 = the outer shape
 * with size(dim) last, s8-s10 = self's strides over it (dim's last), s11
 * = include_self, s12 = counts (M was kept; else M is not read).
 */
static std::string cloop(Red r, const std::string &t, const std::string &narrow)
{
	bool flt = is_float(t);
	std::string s = tvp_asm_coords5(4, 6) + tvp_asm_dot5(11, 8);

	if (t == "i64") {
		/* self in v25/v1, P in v24/v0, the fold in v30/v2 */
		s += "\tvmov v12, v28\n\tvsplat v20, s4\n\tvsplati v17, 0\n\tvsplat v5, s11\n\tvicmp v7, v5, v17, eq\n"
		     "\tvsplat v31, s12\n\tvicmp v31, v31, v17, eq\n\tvmov v21, v17\n" +
		     ld64("v25", "v1", "s1", "v11", "v29", "v22") + "\tli s26, 0\n"
		     "comb:\n\tbge s26, s5, comb_end\n\tvmov v26, v17\n\tbeqz s12, comb_m\n\tvld v26, s3, v12, i32, v29\n"
		     "comb_m:\n" + ld64("v24", "v0", "s2", "v12", "v29", "v23") +
		     "\tvicmp v18, v26, v17, ne\n\tvor v18, v18, v31\n\tvand v18, v18, v29\n"
		     "\tvicmp v19, v21, v17, eq\n\tvand v19, v19, v7\n\tvand v19, v19, v18\n"
		     "\tviadd v21, v21, v26\n\tvmov v30, v25\n\tvmov v2, v1\n" +
		     red64(r == Red::Mean ? Red::Add : r, "v30", "v2", "v24", "v0",
			   { "v3", "v4", "v6", "v8", "v10", "v13", "v14", "v15" }) +
		     "\tvsel v30, v24, v30, v19\n\tvsel v2, v0, v2, v19\n\tvsel v25, v30, v25, v18\n\tvsel v1, v2, v1, v18\n"
		     "\tviadd v12, v12, v20\n\taddi s26, s26, 1\n\tjmp comb\ncomb_end:\n";
		if (r == Red::Mean)
			s += div64();
		s += ld64("v25", "v1", "s1", "v11", "v29", "v22", true);
		return s + "\thalt\n";
	}

	s += "\tvmov v12, v28\t# e: the partials' offset\n\tvsplat v20, s4\n\tvsplati v17, 0\n\tvsplat v5, s11\n"
	     "\tvicmp v7, v5, v17, eq\t# not include_self\n\tvsplat v31, s12\n\tvicmp v31, v31, v17, eq\t# no counts\n"
	     "\tvmov v21, v17\t# the counts' sum (cset: the last position + 1)\n"
	     "\tvld v25, s1, v11, " + t + ", v29\n\tli s26, 0\n"
	     "comb:\n\tbge s26, s5, comb_end\n\tvmov v26, v17\n\tbeqz s12, comb_m\n\tvld v26, s3, v12, i32, v29\n"
	     "comb_m:\n\tvld v24, s2, v12, " + t + ", v29\n";
	if (r == Red::Set) {
		s += "\tvicmp v18, v26, v21, gt\n\tvand v18, v18, v29\n\tvsel v25, v24, v25, v18\n\tvimax v21, v21, v26\n";
	} else {
		s += "\tvicmp v18, v26, v17, ne\n";
		if (flt && (r == Red::Add || r == Red::Mean))
			s += "\tvicmp v3, v24, v17, ne\n\tvand v3, v3, v31\n\tvor v18, v18, v3\n";
		else
			s += "\tvor v18, v18, v31\n";
		s += "\tvand v18, v18, v29\t# chunk c updated e\n"
		     "\tvicmp v19, v21, v17, eq\n\tvand v19, v19, v7\n\tvand v19, v19, v18\t# P is all there is\n"
		     "\tviadd v21, v21, v26\n\tvmov v30, v25\n" +
		     red_asm(r == Red::Mean ? Red::Add : r, flt, "v30", "v24", "v26", "v27") +
		     "\tvsel v30, v24, v30, v19\n\tvsel v25, v30, v25, v18\n";
	}
	s += "\tviadd v12, v12, v20\n\taddi s26, s26, 1\n\tjmp comb\ncomb_end:\n";
	if (r == Red::Mean)
		s += "\tvmov v26, v21\n" + mean_div(flt, narrow);
	return s + "\tvst v25, s1, v11, " + t + ", v29\n\thalt\n";
}

static const char *const red_names[] = { "set", "add", "mul", "max", "min", "mean" };

/*
 * "s<red>": the serial walk; "w<red>" and "c<red>": the chunked walk and
 * its combine. smean and cmean also for "i32:i8", "i32:u8", "i32:i16":
 * int32 lanes standing for that type (mean_div()).
 */
static std::string family(const std::string &kind, const std::string &type)
{
	size_t colon = type.find(':');
	std::string t = type.substr(0, colon), narrow = colon == std::string::npos ? "" : type.substr(colon + 1);

	if (!narrow.empty() && (t != "i32" || (kind != "smean" && kind != "cmean") ||
				(narrow != "i8" && narrow != "u8" && narrow != "i16")))
		return "";
	for (int r = 0; r <= (int)Red::Mean; r++) {
		if (kind.substr(1) != red_names[r])
			continue;
		bool i64 = t == "i64" && kind[0] != 's' && r != (int)Red::Set;

		if (!(is_float(t) || t == "i32" || i64 || (r == (int)Red::Set && t == "i8")))
			return "";
		switch (kind[0]) {
		case 's': return sloop((Red)r, t, narrow);
		case 'w': return wloop((Red)r, t);
		case 'c': return cloop((Red)r, t, narrow);
		default: return "";
		}
	}
	return "";
}

[[maybe_unused]] static const bool registered = tvp::add_family(
	{ "sset", "sadd", "smul", "smax", "smin", "smean", "wset", "wadd", "wmul", "wmax", "wmin", "wmean",
	  "cset", "cadd", "cmul", "cmax", "cmin", "cmean" }, family);

/* ---- launching ------------------------------------------------------------------ */

/* A walk's instructions: the budget (MAIA_TVP_DEFAULT_BUDGET) bounds J and self.size(dim). */
static constexpr int64_t max_walk = (int64_t)1 << 16;
/* The chunked walk's partials: at most this many elements (P of self's type and M, int32). */
static constexpr int64_t max_partials = (int64_t)1 << 22;

/* What one scatter does: self (contiguous, updated) along d from index, src or value. */
struct Scatter {
	Red red = Red::Set;
	int64_t d = 0;
	at::Tensor index;		/* int64, self's rank, any strides (expanded ones too) */
	at::Tensor src;			/* undefined: the value form */
	uint64_t value = 0;		/* value_arg() */
	at::Scalar scalar;		/* the value itself (8-byte types: two words) */
	bool include_self = true;
	bool wrap = false;
	std::string narrow;		/* "i8", "u8", "i16": int32 self and src standing for that type */
};

/*
 * The element type of the reductions for t: the float ones, int32, int64
 * (two words, "i64": the chunked programs only); else nullptr.
 */
static const char *red_elem(at::ScalarType t, Red)
{
	if (t == at::kLong)
		return "i64";
	return t == at::kInt ? "i32" : tvp::elem(t);
}

/* 8-byte types, which plain scatters copy as two int32 words (word_view()) */
static bool two_words(at::ScalarType t)
{
	return t == at::kLong || t == at::kDouble;
}

/*
 * Whether s can run on self's device: the types, ranks <= 5 (4 for the
 * 8-byte types, which take a dimension for their words), int32 offsets,
 * CPU torch's shape rules (index within self on every dimension but d,
 * within src on all), walks within the budget, int64 reductions' partial
 * rows within max_partials.
 */
static bool scatter_ok(const at::Tensor &self, const Scatter &s)
{
	const at::Tensor &i = s.index;
	bool set = s.red == Red::Set, words = set && two_words(self.scalar_type());

	if (!i.defined() || !on_device(self) || !on_device(i, self) || i.scalar_type() != at::kLong || self.dim() < 1 ||
	    self.dim() > (words ? 4 : 5) || i.dim() != self.dim() || !int32_reach(self) || !int32_reach(i) ||
	    !(words || (set ? elem_exact(self.scalar_type()) : red_elem(self.scalar_type(), s.red))) ||
	    i.size(s.d) > max_walk || self.size(s.d) > max_walk)
		return false;
	if (s.src.defined() && (!on_device(s.src, self) || s.src.scalar_type() != self.scalar_type() ||
				s.src.dim() != self.dim() || !int32_reach(s.src)))
		return false;
	int64_t T = self.size(s.d);	/* the elements a partial row covers */
	for (int64_t k = 0; k < self.dim(); k++) {
		if ((k != s.d && i.size(k) > self.size(k)) || (s.src.defined() && i.size(k) > s.src.size(k)))
			return false;
		T *= k != s.d ? i.size(k) : 1;
	}
	/* int64 reductions always take the chunked programs: one partial row at least */
	return set || self.scalar_type() != at::kLong || T <= max_partials;
}

/*
 * How many chunks the walk along dim takes (1: the serial walk), n outer
 * positions, J steps, T = n x size(dim) elements to combine, counts: M
 * kept. The cheapest by a model of the simulated device: a vector
 * instruction (1024 lanes) costs about 2.5 units, a lane's access to a
 * page its instance has not cached 1 (the walks' accesses to self or P
 * are such; the serial walk's index and src reads too, the chunked walk's
 * are runs of C lanes), filling P 1 per 4096 elements. Depends on the
 * shapes only, so a result does too.
 */
static int64_t chunks_for(int64_t n, int64_t J, int64_t T, bool counts)
{
	auto blocks = [](int64_t lanes) { return (lanes + 1023) / 1024; };
	int64_t best = 1, cost = blocks(n) * J * 112 + n * J * 5;

	for (int64_t c = 2; c <= J / 8 && c * T <= max_partials; c *= 2) {
		int64_t steps = (J + c - 1) / c;
		int64_t k = blocks(n * c) * steps * 140 + n * J * (counts ? 4 : 2) + n * steps * 3 +
			    blocks(T) * c * 45 + c * T / 2048;

		if (k < cost) {
			best = c;
			cost = k;
		}
	}
	return best;
}

/* The packed strides of t over the outer shape with dim d last. */
static std::vector<int64_t> outer_strides(const at::Tensor &t, int64_t d)
{
	std::vector<int64_t> st;

	for (int64_t k = 0; k < t.dim(); k++)
		if (k != d)
			st.push_back(t.stride(k));
	st.push_back(t.stride(d));
	return st;
}

/*
 * Run s on acc (contiguous, on the device): 1 done, 0 the device failed
 * the kernel (logged), -1 a bad index (the flag read back).
 */
static int run_scatter(at::Tensor &acc, const Scatter &s, const char *op)
{
	std::vector<int64_t> shape;
	const at::Tensor &i = s.index;
	const int64_t J = i.size(s.d), size = acc.size(s.d);

	for (int64_t k = 0; k < acc.dim(); k++)
		if (k != s.d)
			shape.push_back(i.size(k));
	int64_t n = 1;
	for (int64_t v : shape)
		n *= v;
	if (n == 0 || J == 0)
		return 1;
	const std::string t = s.red == Red::Set ? elem_exact(acc.scalar_type()) : red_elem(acc.scalar_type(), s.red);
	const std::string red = red_names[(int)s.red];
	/* the programs that divide: for a narrow type's int32 lanes, wrapping the sum first */
	const std::string tn = s.red == Red::Mean && !s.narrow.empty() ? t + ":" + s.narrow : t;
	const bool counts = s.red == Red::Set || s.red == Red::Mean || !s.include_self;
	const int64_t C = chunks_for(n, J, n * size, counts);
	uint64_t src = s.src.defined() ? va_of(s.src) : t == "i64" ? (uint64_t)s.scalar.toLong() : s.value;
	std::vector<uint64_t> is = tvp_pack_strides5(outer_strides(i, s.d));
	std::vector<uint64_t> ss = tvp_pack_strides5(s.src.defined() ? outer_strides(s.src, s.d) :
						   std::vector<int64_t>(shape.size() + 1, 0));
	std::vector<uint64_t> as = tvp_pack_strides5(outer_strides(acc, s.d));
	std::vector<tvp::Launch> l;
	at::Tensor aux, P, M;

	if (C == 1 && t != "i64") {
		std::vector<int64_t> sh = shape;
		uint64_t mode = (s.wrap ? 1 : 0) | (s.include_self ? 2 : 0) | (s.src.defined() ? 0 : 4);

		sh.push_back(1);
		aux = at::zeros({ 1 + (s.red == Red::Mean ? acc.numel() : 0) }, acc.options().dtype(at::kInt));
		as[2] |= (uint64_t)J << 32;
		is[2] |= (uint64_t)size << 32;
		ss[2] |= mode << 32;
		l.push_back({ "s" + red + "." + tn, tvp::blocks(n),
			      std::vector<uint64_t>{ va_of(acc), va_of(i), src, va_of(aux), (uint64_t)n } +
				      tvp_pack_shape5(sh) + as + is + ss });
	} else {
		/* the chunked walk into partials, then their combine into acc: one job (no M without counts) */
		const int64_t L = (J + C - 1) / C, T = n * size;
		std::vector<int64_t> wsh = shape, csh = shape;
		uint64_t mode = (s.wrap ? 1 : 0) | (s.src.defined() ? 0 : 4) | (counts ? 8 : 0);
		static const double ident[] = { 0, 0, 1, -INFINITY, INFINITY, 0 };
		at::Scalar id = ident[(int)s.red];

		if (acc.scalar_type() == at::kInt || acc.scalar_type() == at::kLong) {
			bool i32 = acc.scalar_type() == at::kInt;

			id = s.red == Red::Max ? (i32 ? INT32_MIN : INT64_MIN) :
			     s.red == Red::Min ? (i32 ? INT32_MAX : INT64_MAX) : (int64_t)ident[(int)s.red];
		}

		wsh.push_back(C);
		csh.push_back(size);
		aux = at::zeros({ 1 }, acc.options().dtype(at::kInt));
		P = s.red == Red::Set ? at::empty({ C * T }, acc.options()) : at::full({ C * T }, id, acc.options());
		if (counts)
			M = at::zeros({ C * T }, acc.options().dtype(at::kInt));
		is[2] |= (uint64_t)J << 32;
		ss[2] |= (uint64_t)size << 32;
		l.push_back({ "w" + red + "." + t, tvp::blocks(n * C),
			      std::vector<uint64_t>{ va_of(P), va_of(i), src, va_of(aux), (uint64_t)(n * C) } +
				      tvp_pack_shape5(wsh) + is + ss +
				      std::vector<uint64_t>{ counts ? va_of(M) : 0, pack(L, (int64_t)mode), (uint64_t)T } });
		l.push_back({ "c" + red + "." + tn, tvp::blocks(T),
			      std::vector<uint64_t>{ va_of(acc), va_of(P), counts ? va_of(M) : 0, (uint64_t)T, (uint64_t)C } +
				      tvp_pack_shape5(csh) + as +
				      std::vector<uint64_t>{ s.include_self ? 1u : 0u, counts ? 1u : 0u } });
	}
	if (tvp::run(dev_of(acc), l, op) != l.size())
		return 0;
	int32_t bad = 0;
	copy_from_device(dev_of(acc), &bad, va_of(aux), sizeof(bad));
	return bad ? -1 : 1;
}

/*
 * s on an 8-byte self as a plain scatter of int32 words: self and src with
 * a last dimension of their two words, the index expanded over it, the
 * value as a src of its two words.
 */
static int run_words(at::Tensor &acc, const Scatter &s, const char *op)
{
	Scatter w = s;
	std::vector<int64_t> sizes = s.index.sizes().vec();

	sizes.push_back(2);
	at::Tensor a = acc.unsqueeze(-1).view(at::kInt);
	w.index = s.index.unsqueeze(-1).expand(sizes);
	if (s.src.defined()) {
		w.src = s.src.unsqueeze(-1).view(at::kInt);
	} else {
		at::Tensor v = at::scalar_tensor(s.scalar, at::TensorOptions().dtype(acc.scalar_type())).reshape({ 1 });

		w.src = v.view(at::kInt).to(acc.device()).expand(sizes);
	}
	return run_scatter(a, w, op);
}

/* The narrow integer types whose reductions run on int32 lanes (widen()). */
static const char *narrow_name(at::ScalarType t)
{
	switch (t) {
	case at::kChar: return "i8";
	case at::kByte: return "u8";
	case at::kShort: return "i16";
	default: return nullptr;
	}
}

/*
 * A reduction s of a narrow-typed self (int8, uint8, int16) as one of
 * int32 lanes: self and src widened on the device (sign- or
 * zero-extended, copy_convert), the value likewise. Exact, as the wrapping
 * sum and product keep their low bits and amax/amin their order; mean's
 * programs wrap the sum to the type before dividing (CPU torch sums in
 * it), and take at most 2^(bits - 1) - 2 updates per element (CPU torch
 * also counts in the type, which would wrap). false: not for the device.
 */
static bool widen(const at::Tensor &self, const Scatter &s, at::Tensor &acc, Scatter &w)
{
	const char *narrow = narrow_name(self.scalar_type());
	at::ScalarType t = self.scalar_type();

	if (!narrow || s.red == Red::Set || !on_device(self) || !s.index.defined() || s.index.dim() != self.dim() ||
	    (s.src.defined() && (!on_device(s.src, self) || s.src.scalar_type() != t)))
		return false;
	if (s.red == Red::Mean && s.index.size(s.d) > (t == at::kShort ? 32766 : t == at::kByte ? 254 : 126))
		return false;
	w = s;
	w.narrow = narrow;
	if (s.src.defined()) {
		w.src = s.src.to(at::kInt);
	} else {
		int32_t v = t == at::kShort ? s.scalar.to<int16_t>() : t == at::kByte ? s.scalar.to<uint8_t>() :
			    s.scalar.to<int8_t>();

		w.value = (uint64_t)(uint32_t)v;
	}
	acc = self.to(at::kInt).contiguous();
	return scatter_ok(acc, w);
}

/*
 * self with s applied, on the device, or ref() on CPU copies (counted as
 * op's fallback; ref raises CPU torch's error for bad operands).
 */
template <class F> static at::Tensor scatter_into_copy(const at::Tensor &self, const Scatter &s, const char *op,
						       F ref)
{
	bool failed = false;
	at::Tensor wide;
	Scatter w;

	if (widen(self, s, wide, w)) {
		int r = run_scatter(wide, w, op);

		if (r == 1) {
			count_device_op(op);
			return wide.to(self.scalar_type());
		}
		if (r < 0)
			cpu_error(op, ref);
		failed = true;
	} else if (scatter_ok(self, s)) {
		at::Tensor acc = self.clone(at::MemoryFormat::Contiguous);
		int r = s.red == Red::Set && two_words(acc.scalar_type()) ? run_words(acc, s, op) : run_scatter(acc, s, op);

		if (r == 1) {
			count_device_op(op);
			return acc;
		}
		if (r < 0)
			cpu_error(op, ref);
		failed = true;
	}
	return on_cpu(op, failed, ref).to(self.device());
}

/*
 * out (self of an in-place op, or out=) = r; CPU torch's error when out
 * has overlapping elements (index_fill_ on the CPU writes through them).
 */
static at::Tensor &into(at::Tensor &out, const at::Tensor &r, bool overlap_ok = false)
{
	if (!out.is_same(r)) {
		if (out.sizes() != r.sizes())
			out.resize_(r.sizes());
		if (!overlap_ok)
			at::assert_no_internal_overlap(out);
		out.copy_(r);
	}
	return out;
}

/* ---- scatter, scatter_reduce ------------------------------------------------------- */

static Scatter make(const at::Tensor &self, int64_t dim, const at::Tensor &index, Red red)
{
	Scatter s;

	s.red = red;
	s.d = self.dim() ? c10::maybe_wrap_dim(dim, self.dim()) : 0;
	s.index = index;
	return s;
}

/* reduce= of scatter (add, multiply) and of scatter_reduce; false: CPU torch's error for the name */
static bool red_of(c10::string_view name, bool two, Red &r)
{
	static const std::pair<const char *, Red> one[] = { { "add", Red::Add }, { "multiply", Red::Mul } };
	static const std::pair<const char *, Red> both[] = {
		{ "sum", Red::Add }, { "prod", Red::Mul }, { "mean", Red::Mean }, { "amax", Red::Max }, { "amin", Red::Min },
	};

	for (const auto &p : two ? c10::ArrayRef<std::pair<const char *, Red>>(both)
				 : c10::ArrayRef<std::pair<const char *, Red>>(one))
		if (name == p.first) {
			r = p.second;
			return true;
		}
	return false;
}

static at::Tensor scatter_src(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src)
{
	Scatter s = make(self, dim, index, Red::Set);

	s.src = src;
	return scatter_into_copy(self, s, "scatter", [&] { return at::scatter(cpu(self), dim, cpu(index), cpu(src)); });
}

static at::Tensor scatter_value(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Scalar &v)
{
	Scatter s = make(self, dim, index, Red::Set);

	s.scalar = v;
	if (!value_arg(v, self.scalar_type(), s.value))
		s.index = at::Tensor();	/* not for the device */
	return scatter_into_copy(self, s, "scatter", [&] { return at::scatter(cpu(self), dim, cpu(index), v); });
}

static at::Tensor scatter_reduce_src(const at::Tensor &self, int64_t dim, const at::Tensor &index,
				     const at::Tensor &src, c10::string_view reduce)
{
	Scatter s = make(self, dim, index, Red::Set);
	auto ref = [&] { return at::scatter(cpu(self), dim, cpu(index), cpu(src), reduce); };

	if (!red_of(reduce, false, s.red))
		return on_cpu("scatter.reduce", false, ref).to(self.device());
	s.src = src;
	return scatter_into_copy(self, s, "scatter", ref);
}

static at::Tensor scatter_reduce_value(const at::Tensor &self, int64_t dim, const at::Tensor &index,
				       const at::Scalar &v, c10::string_view reduce)
{
	Scatter s = make(self, dim, index, Red::Set);
	auto ref = [&] { return at::scatter(cpu(self), dim, cpu(index), v, reduce); };

	s.scalar = v;
	if (!red_of(reduce, false, s.red) || !value_arg(v, self.scalar_type(), s.value))
		return on_cpu("scatter.value_reduce", false, ref).to(self.device());
	return scatter_into_copy(self, s, "scatter", ref);
}

static at::Tensor scatter_reduce_two(const at::Tensor &self, int64_t dim, const at::Tensor &index,
				     const at::Tensor &src, c10::string_view reduce, bool include_self)
{
	Scatter s = make(self, dim, index, Red::Set);
	auto ref = [&] { return at::scatter_reduce(cpu(self), dim, cpu(index), cpu(src), reduce, include_self); };

	if (!red_of(reduce, true, s.red))
		return on_cpu("scatter_reduce.two", false, ref).to(self.device());
	s.src = src;
	s.include_self = include_self;
	return scatter_into_copy(self, s, "scatter_reduce", ref);
}

/* ---- index_copy, index_fill_ ------------------------------------------------------- */

/* index (rank <= 1) along d of a tensor of sizes, expanded over the other dimensions */
static at::Tensor expanded(const at::Tensor &index, int64_t d, at::IntArrayRef sizes)
{
	std::vector<int64_t> one(sizes.size(), 1);

	one[d] = index.numel();
	return index.reshape(one).expand(sizes);
}

static at::Tensor index_copy(const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &source)
{
	auto ref = [&] { return at::index_copy(cpu(self), dim, cpu(index), cpu(source)); };
	Scatter s = make(self, dim, index, Red::Set);
	bool shapes = self.dim() >= 1 && index.dim() <= 1 && source.dim() == self.dim();

	for (int64_t k = 0; shapes && k < self.dim(); k++)
		shapes = source.size(k) == (k == s.d ? index.numel() : self.size(k));
	if (!shapes)
		return on_cpu("index_copy", false, ref).to(self.device());
	s.index = expanded(index, s.d, source.sizes());
	s.src = source;
	return scatter_into_copy(self, s, "index_copy", ref);
}

static at::Tensor &index_copy_(at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &source)
{
	return into(self, maia_torch::ops::index_copy(self, dim, index, source));
}

static at::Tensor &index_copy_out(const at::Tensor &self, int64_t dim, const at::Tensor &index,
				  const at::Tensor &source, at::Tensor &out)
{
	return into(out, maia_torch::ops::index_copy(self, dim, index, source));
}

static at::Tensor &index_fill_scalar_(at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Scalar &v)
{
	auto ref = [&] { return cpu(self).index_fill_(dim, cpu(index), v); };
	Scatter s = make(self, dim, index, Red::Set);

	s.scalar = v;
	if (self.dim() < 1 || index.dim() > 1 || !value_arg(v, self.scalar_type(), s.value))
		return self.copy_(on_cpu("index_fill_", false, ref));
	std::vector<int64_t> sizes = self.sizes().vec();
	sizes[s.d] = index.numel();
	s.index = expanded(index, s.d, sizes);
	s.wrap = true;
	return into(self, scatter_into_copy(self, s, "index_fill_", ref), true);
}

static at::Tensor &index_fill_tensor_(at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &v)
{
	if (v.dim() == 0 && (v.is_cpu() || on_device(v, self)))
		return index_fill_scalar_(self, dim, index, v.item());
	return self.copy_(on_cpu("index_fill_", false, [&] { return cpu(self).index_fill_(dim, cpu(index), cpu(v)); }));
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("scatter.src", scatter_src);
	m.impl("scatter_.src", [](at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src)
	       -> at::Tensor & { return into(self, scatter_src(self, dim, index, src)); });
	m.impl("scatter.src_out", [](const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src,
				     at::Tensor &out) -> at::Tensor & { return into(out, scatter_src(self, dim, index, src)); });
	m.impl("scatter.value", scatter_value);
	m.impl("scatter_.value", [](at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Scalar &v)
	       -> at::Tensor & { return into(self, scatter_value(self, dim, index, v)); });
	m.impl("scatter.value_out", [](const at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Scalar &v,
				       at::Tensor &out) -> at::Tensor & { return into(out, scatter_value(self, dim, index, v)); });
	m.impl("scatter.reduce", scatter_reduce_src);
	m.impl("scatter_.reduce", [](at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src,
				     c10::string_view reduce) -> at::Tensor & {
		return into(self, scatter_reduce_src(self, dim, index, src, reduce));
	});
	m.impl("scatter.reduce_out", [](const at::Tensor &self, int64_t dim, const at::Tensor &index,
					const at::Tensor &src, c10::string_view reduce, at::Tensor &out) -> at::Tensor & {
		return into(out, scatter_reduce_src(self, dim, index, src, reduce));
	});
	m.impl("scatter.value_reduce", scatter_reduce_value);
	m.impl("scatter_.value_reduce", [](at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Scalar &v,
					   c10::string_view reduce) -> at::Tensor & {
		return into(self, scatter_reduce_value(self, dim, index, v, reduce));
	});
	m.impl("scatter.value_reduce_out", [](const at::Tensor &self, int64_t dim, const at::Tensor &index,
					      const at::Scalar &v, c10::string_view reduce, at::Tensor &out) -> at::Tensor & {
		return into(out, scatter_reduce_value(self, dim, index, v, reduce));
	});
	m.impl("scatter_reduce.two", scatter_reduce_two);
	m.impl("scatter_reduce_.two", [](at::Tensor &self, int64_t dim, const at::Tensor &index, const at::Tensor &src,
					 c10::string_view reduce, bool include_self) -> at::Tensor & {
		return into(self, scatter_reduce_two(self, dim, index, src, reduce, include_self));
	});
	m.impl("scatter_reduce.two_out", [](const at::Tensor &self, int64_t dim, const at::Tensor &index,
					    const at::Tensor &src, c10::string_view reduce, bool include_self,
					    at::Tensor &out) -> at::Tensor & {
		return into(out, scatter_reduce_two(self, dim, index, src, reduce, include_self));
	});
	m.impl("index_copy", index_copy);
	m.impl("index_copy_", index_copy_);
	m.impl("index_copy.out", index_copy_out);
	m.impl("index_fill_.int_Scalar", index_fill_scalar_);
	m.impl("index_fill_.int_Tensor", index_fill_tensor_);
}

} // namespace ops
} // namespace maia_torch
