// SPDX-License-Identifier: MIT
/*
 * sort (stable; ascending or descending; along any dim; values and int64
 * indices), so argsort, and topk (largest or smallest, sorted) as TVP
 * programs: a bitonic sort of each row along dim, or for topk a bitonic
 * top-k that sorts no whole row.
 *
 * The rows (self moved so dim is last, contiguous) are padded to P, the
 * next power of two of the row length L. "skey" makes each element a key
 * whose unsigned int32 order is torch's order: float bits with the sign
 * flipped (all bits when negative), -0.0 as 0.0 and every NaN one NaN
 * above +inf (torch sorts NaN last ascending, first descending), int32,
 * int16 and int8 with the sign bit flipped (uint8 and bool as 0 .. 255),
 * int64 as two words (the high one's sign bit flipped, compared first),
 * all bits flipped for descending; padding keys are all ones. Ties compare
 * by position, so the sort is stable and the padding ends every row;
 * 16-bit keys with P <= 65536 share one word with their position
 * ("skeyp"). Compare-exchange steps of partner distance below 1024 run
 * inside one 1024-lane block ("bsortl", the keys in registers, exchanged
 * through the key buffers), longer ones as a launch each over all pairs
 * ("bsortg"); rows of P <= 1024 share blocks. topk with a small k sorts
 * blocks of K and merges them pairwise ("bmerge"; sort_on_device()).
 * "sgath" writes the first k of each row: the value at the sorted position
 * and its index. One job; no host wait.
 *
 * A whole sort of int8, uint8 or bool rows of 256 or more is a counting
 * sort instead (radix_sort()); int16 sorts take the CPU fallback (its topk
 * stays here).
 */
#include <torch/library.h>

#include <ATen/WrapDimUtils.h>

#include "ops_mask.h"

namespace maia_torch {
namespace ops {

using tvp::Launch;

/* ---- the programs ------------------------------------------------------------ */

/* v28 = f = 1024 pid + lane, v29 = f < s<n>; s30 = 32, s20 = pid. */
static std::string lanes(int n)
{
	return "\tpid s20, 0\n\tmuli s21, s20, 1024\n\tli s30, 32\n\tviota v31, 0\n\tvsplat v30, s21\n"
	       "\tviadd v28, v31, v30\n\tvsplat v30, s" + std::to_string(n) + "\n\tvicmp v29, v28, v30, lt\n";
}

/*
 * skey: s1 = x (rows x L, contiguous), s2 = keys, s3 = positions (int32,
 * rows x P), s4 = rows P, s5 = P | L << 32, s6 = all ones to descend, else
 * 0; i64: s7 = the keys' low words (s2 the high ones). skeyp (packed: 16-bit
 * keys, P <= 65536): one word, the key in the high half and the position
 * in the low one, in s2; integers as value + 32768.
 */
static std::string skey(const std::string &t, bool packed)
{
	std::string s = lanes(4) + "\tvsplat v5, s5\n\tshr s22, s5, s30\n\tvsplat v6, s22\n"
			"\tvidiv v1, v28, v5\n\tvirem v2, v28, v5\t# row, position\n"
			"\tvicmp v3, v2, v6, lt\n\tvand v3, v3, v29\t# not padding\n"
			"\tvimul v4, v1, v6\n\tviadd v4, v4, v2\n\tvsplati v17, 0\n";

	if (t == "i64")
		return s + "\tviadd v7, v4, v4\n\tvld v9, s1, v7, i32, v3\n\tvsplati v8, 1\n\tviadd v7, v7, v8\n"
			   "\tvld v10, s1, v7, i32, v3\n\tvsplati v14, -2147483648\n\tvxor v10, v10, v14\n"
			   "\tvsplat v12, s6\n\tvxor v10, v10, v12\n\tvxor v9, v9, v12\n\tvsplati v12, -1\n"
			   "\tvsel v10, v10, v12, v3\n\tvsel v9, v9, v12, v3\n\tvst v10, s2, v28, i32, v29\n"
			   "\tvst v9, s7, v28, i32, v29\n\tvst v2, s3, v28, i32, v29\n\thalt\n";
	if (t == "i16")	/* the int32 word holding it (s1 aligned down, s8 = elements before x) */
		s += "\tvsplat v7, s8\n\tviadd v7, v4, v7\n\tvsplati v8, 1\n\tvshr v9, v7, v8\n\tvand v7, v7, v8\n"
		     "\tvsplati v8, 16\n\tvimul v7, v7, v8\n\tvisub v7, v8, v7\n\tvld v10, s1, v9, i32, v3\n"
		     "\tvshl v10, v10, v7\n\tvsra v10, v10, v8\t# sign-extended\n";
	else
		s += "\tvld v10, s1, v4, " + std::string(t == "u8" ? "i8" : t) + ", v3\n";
	if (t == "u8")	/* i8 loads sign-extend: the byte's bits as 0 .. 255 */
		s += "\tvsplati v14, 255\n\tvand v10, v10, v14\n";
	if (packed && t != "bf16")
		s += "\tvsplati v14, 32768\n\tviadd v10, v10, v14\n\tvsplati v14, 16\n\tvshl v10, v10, v14\n";
	else if (t == "i32" || t == "i16" || t == "i8" || t == "u8")
		s += "\tvsplati v14, -2147483648\n\tvxor v10, v10, v14\n";
	else
		s += "\tvfcmp v11, v10, v10, ne\n\tvsplati v12, 0x7fc00000\n\tvsel v10, v12, v10, v11\t# one NaN\n"
		     "\tvsplati v12, 0.0\n\tvfcmp v11, v10, v12, eq\n\tvsel v10, v17, v10, v11\t# -0.0 is 0.0\n"
		     "\tvicmp v11, v10, v17, lt\n\tvsplati v12, -1\n\tvxor v13, v10, v12\n"
		     "\tvsplati v14, -2147483648\n\tvxor v15, v10, v14\n\tvsel v10, v13, v15, v11\n";
	s += "\tvsplat v12, s6\n\tvxor v10, v10, v12\n\tvsplati v12, -1\n\tvsel v10, v10, v12, v3\n";
	if (packed)
		return s + "\tvsplati v12, -65536\n\tvand v10, v10, v12\n\tvor v10, v10, v2\n"
			   "\tvst v10, s2, v28, i32, v29\n\thalt\n";
	return s + "\tvst v10, s2, v28, i32, v29\n\tvst v2, s3, v28, i32, v29\n\thalt\n";
}

/*
 * v16 = (key, position) (v10, v11) < (v14, v15): keys unsigned, then
 * positions; words 3 (int64): the key's low words v24 and v25 between
 * them; 1 (packed): v10 < v14. Uses v18, v20-v22.
 */
static std::string less(int words)
{
	std::string then = "\tvicmp v20, v11, v15, lt\n";
	bool two = words == 3;

	if (words == 1)
		return "\tvicmp v16, v10, v14, ult\n";
	if (two)
		then = "\tvicmp v20, v24, v25, ult\n\tvicmp v21, v24, v25, eq\n\tvicmp v22, v11, v15, lt\n"
		       "\tvand v21, v21, v22\n\tvor v20, v20, v21\n";
	return "\tvicmp v16, v10, v14, ult\n\tvicmp v18, v10, v14, eq\n" + then +
	       "\tvand v18, v18, v20\n\tvor v16, v16, v18\n";
}

/*
 * bsortl: s1 = keys, s2 = positions, s3 = n, s4 / s5 = the first and last
 * stage (the bitonic sequence lengths k, powers of two), s6 = P; two: s7 =
 * the keys' low words. Each stage's steps of distance min(k / 2, 512) ..
 * 1, ascending where f & k & (P - 1) is 0. bmerge (topk): the same with
 * s4 = s5 = K, after a merge of the rows of 2P in s13 .. s15 (below) into
 * rows of P: each pair of blocks of K, one ascending, the other
 * descending, gives its K smallest, a bitonic block that the stage sorts.
 */
static std::string bsortl(int words, bool merge)
{
	bool two = words == 3, pos = words > 1;
	std::string ld = "\tvld v10, s1, v28, i32, v29\n" + std::string(pos ? "\tvld v11, s2, v28, i32, v29\n" : "") +
			 (two ? "\tvld v24, s7, v28, i32, v29\n" : "");
	std::string st2 = std::string(pos ? "\tvst v11, s2, v28, i32, v29\n" : "") +
			  (two ? "\tvst v24, s7, v28, i32, v29\n" : "");

	/*
	 * bmerge: lane f takes the smaller of a = 2f - (f & (K - 1)) and a + K
	 * of the rows of 2P in s13 / s14 / s15 (keys, positions, low words).
	 */
	if (merge)
		ld = "\taddi s16, s4, -1\n\tvsplat v1, s16\n\tvand v2, v28, v1\n\tviadd v3, v28, v28\n"
		     "\tvisub v3, v3, v2\t# a\n\tvsplat v4, s4\n\tviadd v5, v3, v4\t# a + K\n"
		     "\tvld v10, s13, v3, i32, v29\n\tvld v14, s13, v5, i32, v29\n" +
		     std::string(pos ? "\tvld v11, s14, v3, i32, v29\n\tvld v15, s14, v5, i32, v29\n" : "") +
		     (two ? "\tvld v24, s15, v3, i32, v29\n\tvld v25, s15, v5, i32, v29\n" : "") +
		     less(words) + "\tvsel v10, v10, v14, v16\n" + (pos ? "\tvsel v11, v11, v15, v16\n" : "") +
		     (two ? "\tvsel v24, v24, v25, v16\n" : "");
	/*
	 * The partner f ^ j is f + j for the lower one of a pair, else f - j:
	 * two unit-stride loads (whole runs, where a gather of f ^ j goes
	 * lane by lane) from this block's base in s23 / s24 / s25, one
	 * selected; the buffers have 512 words before and after (read, not
	 * used).
	 */
	auto partner = [](const char *base, const char *to, const char *tmp) {
		return std::string("\tadd s27, ") + base + ", s26\n\tsub s28, " + base + ", s26\n\tvld " + to +
		       ", s27, unit, i32, v29\n\tvld " + tmp + ", s28, unit, i32, v29\n\tvsel " + to + ", " + to +
		       ", " + tmp + ", v13\n";
	};
	return lanes(3) + ld +
	       "\tli s29, 2\n\tshl s26, s21, s29\n\tadd s23, s1, s26\n\tadd s24, s2, s26\n\tadd s25, s7, s26\n"
	       "\taddi s6, s6, -1\n\tadd s12, s4, s0\n\tli s8, 1\n\tli s9, 512\n\tvsplati v17, 0\n"
	       "stage:\n\tshr s10, s12, s8\n\tmin s10, s10, s9\n\tand s11, s12, s6\n\tvsplat v19, s11\n"
	       "\tvand v19, v28, v19\n\tvicmp v19, v19, v17, eq\t# ascending\n"
	       "step:\n\tvst v10, s1, v28, i32, v29\n" + st2 +
	       "\tvsplat v12, s10\n\tvand v13, v28, v12\n\tvicmp v13, v13, v17, eq\t# the lower one\n"
	       "\tshl s26, s10, s29\t# 4 j\n" + partner("s23", "v14", "v26") +
	       (pos ? partner("s24", "v15", "v27") : "") + (two ? partner("s25", "v25", "v26") : "") + less(words) +
	       "\tvicmp v18, v13, v19, eq\t# keeps the smaller\n\tvicmp v16, v16, v18, eq\t# keeps its own\n"
	       "\tvsel v10, v10, v14, v16\n" + (pos ? "\tvsel v11, v11, v15, v16\n" : "") +
	       (two ? "\tvsel v24, v24, v25, v16\n" : "") +
	       "\tshr s10, s10, s8\n\tbnez s10, step\n\tshl s12, s12, s8\n\tbge s5, s12, stage\n"
	       "\tvst v10, s1, v28, i32, v29\n" + st2 + "\thalt\n";
}

/*
 * bsortg: one step of distance j >= 1024 over n / 2 pairs: s1 = keys, s2 =
 * positions, s3 = the pairs, s4 = j, s5 = k & (P - 1), s6 = log2(j); two:
 * s7 = the keys' low words. Pair g is f = g with a 0 inserted at bit
 * log2(j), and f + j.
 */
static std::string bsortg(int words)
{
	bool two = words == 3, pos = words > 1;

	return lanes(3) + "\tvsplat v1, s6\n\tvshr v2, v28, v1\n\tvsplati v3, 1\n\tviadd v4, v1, v3\n"
			  "\tvshl v2, v2, v4\n\tvsplat v5, s4\n\tvisub v6, v5, v3\n\tvand v6, v28, v6\n"
			  "\tvor v2, v2, v6\t# f\n\tviadd v7, v2, v5\t# f + j\n"
			  "\tvld v10, s1, v2, i32, v29\n\tvld v14, s1, v7, i32, v29\n" +
	       (pos ? "\tvld v11, s2, v2, i32, v29\n\tvld v15, s2, v7, i32, v29\n" : "") +
	       (two ? "\tvld v24, s7, v2, i32, v29\n\tvld v25, s7, v7, i32, v29\n" : "") + less(words) +
	       "\tvsplat v19, s5\n\tvand v19, v2, v19\n\tvsplati v17, 0\n\tvicmp v19, v19, v17, eq\t# ascending\n"
	       "\tvicmp v18, v16, v19, ne\t# swap\n"
	       "\tvsel v20, v14, v10, v18\n\tvsel v21, v10, v14, v18\n"
	       "\tvst v20, s1, v2, i32, v29\n\tvst v21, s1, v7, i32, v29\n" +
	       (pos ? "\tvsel v22, v15, v11, v18\n\tvsel v23, v11, v15, v18\n"
		      "\tvst v22, s2, v2, i32, v29\n\tvst v23, s2, v7, i32, v29\n" : "") +
	       (two ? "\tvsel v26, v25, v24, v18\n\tvsel v27, v24, v25, v18\n"
		      "\tvst v26, s7, v2, i32, v29\n\tvst v27, s7, v7, i32, v29\n" : "") + "\thalt\n";
}

/*
 * sgath: s1 = x (rows x L), s2 = positions (rows x P, sorted), s3 = values
 * out, s4 = indices out (int64), both rows x k, s5 = rows k, s6 = P | L <<
 * 32, s7 = k. sgathp: s2 = the packed keys, positions in their low halves.
 */
static std::string sgath(const std::string &t, bool packed)
{
	return lanes(5) + "\tvsplat v5, s7\n\tvidiv v1, v28, v5\n\tvirem v2, v28, v5\t# row, rank\n"
			  "\tvsplat v6, s6\n\tvimul v3, v1, v6\n\tviadd v3, v3, v2\n\tvld v4, s2, v3, i32, v29\n" +
	       std::string(packed ? "\tvsplati v9, 65535\n\tvand v4, v4, v9\n" : "") +
	       "\tshr s22, s6, s30\n\tvsplat v6, s22\n\tvimul v3, v1, v6\n\tviadd v3, v3, v4\n" +
	       (t == "i64" ? "\tviadd v3, v3, v3\n\tvld v10, s1, v3, i32, v29\n\tvsplati v8, 1\n"
			     "\tviadd v3, v3, v8\n\tvld v11, s1, v3, i32, v29\n\tviadd v7, v28, v28\n"
			     "\tvst v10, s3, v7, i32, v29\n\tviadd v7, v7, v8\n\tvst v11, s3, v7, i32, v29\n"
			   : "\tvld v10, s1, v3, " + t + ", v29\n\tvst v10, s3, v28, " + t + ", v29\n") +
	       "\tviadd v7, v28, v28\n\tvst v4, s4, v7, i32, v29\n\tvsplati v8, 1\n\tviadd v7, v7, v8\n"
	       "\tvsplati v8, 0\n\tvst v8, s4, v7, i32, v29\n\thalt\n";
}

/*
 * sgath.i16 (no 16-bit loads or stores): a lane per int32 word of the
 * values out, its two elements 2f and 2f + 1 (the second past the end
 * when rows x k is odd: the buffer has one more). s1 = x aligned down to 4
 * bytes, s2 = positions, s3 = values out, s4 = indices out, s5 = the
 * words, s6 = P | L << 32, s7 = k, s8 = the elements before x in its
 * word, s9 = rows x k.
 */
static std::string sgath16(bool packed)
{
	std::string s = lanes(5) + "\tvsplat v5, s7\n\tvsplat v6, s6\n\tshr s22, s6, s30\n\tvsplat v12, s22\n"
				   "\tvsplat v13, s8\n\tvsplat v14, s9\n\tvsplati v15, 1\n\tvsplati v16, 16\n"
				   "\tvsplati v17, 65535\n\tvsplati v18, 0\n";

	for (int h = 0; h < 2; h++)
		s += std::string("\tviadd v1, v28, v28\n") + (h ? "\tviadd v1, v1, v15\n" : "") +
		     "\tvicmp v2, v1, v14, lt\n\tvand v2, v2, v29\n\tvidiv v3, v1, v5\n\tvirem v4, v1, v5\t# row, rank\n"
		     "\tvimul v7, v3, v6\n\tviadd v7, v7, v4\n\tvld v8, s2, v7, i32, v2\t# position\n" +
		     (packed ? "\tvsplati v19, 65535\n\tvand v8, v8, v19\n" : "") +
		     "\tvimul v7, v3, v12\n\tviadd v7, v7, v8\n\tviadd v7, v7, v13\n\tvshr v9, v7, v15\n"
		     "\tvand v7, v7, v15\n\tvimul v7, v7, v16\n\tvld v10, s1, v9, i32, v2\n\tvshr v10, v10, v7\n"
		     "\tvand v10, v10, v17\n" +
		     (h ? "\tvshl v10, v10, v16\n\tvor v20, v20, v10\n" : "\tvmov v20, v10\n") +
		     "\tviadd v9, v1, v1\n\tvst v8, s4, v9, i32, v2\n\tviadd v9, v9, v15\n\tvst v18, s4, v9, i32, v2\n";
	return s + "\tvst v20, s3, v28, i32, v29\n\thalt\n";
}

/*
 * The counting sort of 8-bit keys (radix_sort()): stable, by one byte of
 * int32 lanes (s8 its shift; a radix sort's pass). A row of L is cut into C
 * chunks of Lc; lane f = (row, c) walks its chunk in order, with its own
 * 256 counters, H[f][digit]. rhist and rplace run 16 lanes an instance
 * (SHAPE 1 x 16), so an instance's counters are 16 KiB and its loads stay
 * within the few pages a TVP instance keeps mapped (1024 lanes' would be 1
 * MiB of counters, a page walk per lane). Their shared set-up: s1 = the
 * values in (int32, rows x L), s2 = H (int32, rows x C x 256), s3 = rows x
 * C, s4 = C, s5 = L, s6 = Lc, s7 = the sign bit to flip (0x80, 0x8000 or
 * 0), s8 = the digit's shift, s9 = 255 to descend, else 0. v2 = row, v5 =
 * the position, v7 = row x L, v13 = H[f].
 */
static std::string rsetup()
{
	return "\tshape 1, 16\n\tpid s20, 0\n\tmuli s21, s20, 16\n\tviota v31, 0\n\tvsplat v30, s21\n"
	       "\tviadd v28, v31, v30\n\tvsplat v30, s3\n\tvicmp v29, v28, v30, lt\t# f, in range\n"
	       "\tvsplat v1, s4\n\tvidiv v2, v28, v1\n\tvirem v3, v28, v1\t# row, chunk\n"
	       "\tvsplat v4, s6\n\tvimul v5, v3, v4\t# its first position\n\tvsplat v6, s5\n"
	       "\tvimul v7, v2, v6\n\tvsplat v8, s7\n\tvsplat v9, s8\n\tvsplati v10, 255\n\tvsplat v11, s9\n"
	       "\tvsplati v12, 256\n\tvimul v13, v28, v12\n\tvsplati v14, 1\n\tvsplati v21, 0\n\tli s26, 0\n";
}

/* v22 = the digit of v17 (the key's byte, reversed to descend); v15 = in the row and a lane; v18 = its H */
static const char *const rdigit =
	"\tvicmp v15, v5, v6, lt\n\tvand v15, v15, v29\n\tviadd v16, v7, v5\n\tvld v17, s1, v16, i32, v15\n"
	"\tvxor v22, v17, v8\n\tvshr v22, v22, v9\n\tvand v22, v22, v10\n\tvxor v22, v22, v11\n"
	"\tviadd v18, v22, v13\n";

/* rhist: H[f][digit] = how many of chunk f have that digit (H zeroed) */
static std::string rhist()
{
	return rsetup() + "loop:\n\tbge s26, s6, done\n" + rdigit +
	       "\tvld v19, s2, v18, i32, v15\n\tviadd v19, v19, v14\n\tvst v19, s2, v18, i32, v15\n"
	       "\tviadd v5, v5, v14\n\taddi s26, s26, 1\n\tjmp loop\ndone:\n\thalt\n";
}

/*
 * rscan: a lane per (row, digit): H[row][c][digit] over the chunks made
 * exclusive sums, their total to T; s1 = H, s2 = T, s3 = rows x 256, s4 = C
 */
static std::string rscan()
{
	return lanes(3) + "\tvsplati v1, 8\n\tvshr v2, v28, v1\t# row\n\tvsplati v1, 255\n\tvand v5, v28, v1\n"
			  "\tvsplat v1, s4\n\tvimul v2, v2, v1\n\tvsplati v1, 256\n\tvimul v2, v2, v1\n"
			  "\tviadd v2, v2, v5\t# H[row][0][digit]\n\tvsplati v3, 0\n\tli s26, 0\n"
			  "loop:\n\tbge s26, s4, done\n\tvld v4, s1, v2, i32, v29\n\tvst v3, s1, v2, i32, v29\n"
			  "\tviadd v3, v3, v4\n\tviadd v2, v2, v1\n\taddi s26, s26, 1\n\tjmp loop\n"
			  "done:\n\tvst v3, s2, v28, i32, v29\n\thalt\n";
}

/* rbase: a lane per row: T over the digits made exclusive sums (where each digit starts); s1 = T, s2 = rows */
static std::string rbase()
{
	return lanes(2) + "\tvsplati v1, 256\n\tvimul v2, v28, v1\n\tvsplati v3, 0\n\tvsplati v14, 1\n\tli s26, 0\n"
			  "\tli s27, 256\nloop:\n\tbge s26, s27, done\n\tvld v4, s1, v2, i32, v29\n"
			  "\tvst v3, s1, v2, i32, v29\n\tviadd v3, v3, v4\n\tviadd v2, v2, v14\n\taddi s26, s26, 1\n"
			  "\tjmp loop\ndone:\n\thalt\n";
}

/*
 * rplace: each element of chunk f to T[row][digit] + H[f][digit] (then H +
 * 1), in chunk order, so equal digits keep their order (stable). s10 =
 * the indices in (int32; 0: the positions), s11 = T, s12 = the values out
 * (int32), s13 = the indices out, s14 = 1: int64 indices (else int32).
 */
static std::string rplace()
{
	return rsetup() + "loop:\n\tbge s26, s6, done\n" + rdigit +
	       "\tvld v19, s2, v18, i32, v15\n\tviadd v23, v19, v14\n\tvst v23, s2, v18, i32, v15\n"
	       "\tvimul v24, v2, v12\n\tviadd v24, v24, v22\n\tvld v25, s11, v24, i32, v15\n"
	       "\tviadd v19, v19, v25\n\tviadd v19, v19, v7\t# where it goes\n\tvst v17, s12, v19, i32, v15\n"
	       "\tvmov v26, v5\n\tbeqz s10, have\n\tvld v26, s10, v16, i32, v15\nhave:\n"
	       "\tbeqz s14, narrow\n\tviadd v27, v19, v19\n\tvst v26, s13, v27, i32, v15\n\tviadd v27, v27, v14\n"
	       "\tvst v21, s13, v27, i32, v15\n\tjmp next\nnarrow:\n\tvst v26, s13, v19, i32, v15\n"
	       "next:\n\tviadd v5, v5, v14\n\taddi s26, s26, 1\n\tjmp loop\ndone:\n\thalt\n";
}

static std::string family(const std::string &kind, const std::string &t)
{
	if (kind[0] == 'r')	/* the radix sort's: int32 lanes only */
		return t != "i32" ? "" : kind == "rhist" ? rhist() : kind == "rscan" ? rscan() :
					 kind == "rbase" ? rbase() : rplace();
	bool any = t == "f32" || t == "bf16" || t == "f16" || t == "i32" || t == "i64" || t == "i8" || t == "u8";
	bool packed = kind.back() == 'p', small = t == "bf16" || t == "i16" || t == "i8" || t == "u8";
	std::string k = packed ? kind.substr(0, kind.size() - 1) : kind;

	if (packed && !small)	/* 16-bit keys only */
		return "";
	if (k == "skey")
		return any || t == "i16" ? skey(t, packed) : "";
	if (k == "sgath" && t == "i16")
		return sgath16(packed);
	if (k == "sgath")
		return any ? sgath(t == "u8" ? "i8" : t, packed) : "";	/* a byte's bits either way */
	/* the sort steps: one packed word (p32), a key word and a position (i32), or three (i64) */
	int words = t == "p32" ? 1 : t == "i32" ? 2 : t == "i64" ? 3 : 0;
	if (!words)
		return "";
	if (kind == "bsortg")
		return bsortg(words);
	return bsortl(words, kind == "bmerge");
}

[[maybe_unused]] static const bool registered =
	tvp::add_family({ "skey", "skeyp", "bsortl", "bsortg", "bmerge", "sgath", "sgathp", "rhist", "rscan", "rbase",
			  "rplace" }, family);

/* ---- the sort ------------------------------------------------------------------ */

/* The key program's element type for a dtype ("u8": uint8 and bool), or nullptr. */
static const char *key_type(at::ScalarType s)
{
	switch (s) {
	case at::kFloat: return "f32";
	case at::kBFloat16: return "bf16";
	case at::kHalf: return "f16";
	case at::kInt: return "i32";
	case at::kLong: return "i64";
	case at::kShort: return "i16";
	case at::kChar: return "i8";
	case at::kByte: case at::kBool: return "u8";
	default: return nullptr;
	}
}

static bool sortable(const at::Tensor &self)
{
	return on_device(self) && self.dim() >= 1 && int32_reach(self) && key_type(self.scalar_type());
}

/*
 * The first k of self sorted along d (descending or not), on the device:
 * values and int64 indices of self's shape with k along d. false: not for
 * the device (types, padded size); failed: the device failed a kernel.
 *
 * k at most half the padded row P and K (k's power of two, at least 2)
 * at most 1024: a bitonic top-k (topk, no whole-row sort). Blocks of K
 * are sorted, ascending and descending in turn; then each bmerge halves
 * the rows, keeping the K smallest of each pair of blocks, sorted, until
 * a row is one block. (key, position) pairs are all different, so those
 * are exactly the first K of the stable sort.
 */
static bool sort_on_device(const at::Tensor &self, int64_t d, bool descending, int64_t k, at::Tensor &values,
			   at::Tensor &indices, bool &failed, const char *op)
{
	failed = false;
	if (!sortable(self))
		return false;
	int64_t L = self.size(d), rows = L ? self.numel() / L : 0, P = 1, K = 2;

	while (P < L)
		P *= 2;
	while (K < k)
		K *= 2;
	if (rows * P > tvp::max_elements())
		return false;
	bool partial = 2 * K <= P && K <= 1024;
	std::vector<int64_t> shape = self.sizes().vec();
	shape.erase(shape.begin() + d);
	shape.push_back(k);
	int64_t nk = rows * k;
	bool i16 = self.scalar_type() == at::kShort;
	/* int16: sgath.i16 stores whole int32 words, so one element more when rows x k is odd */
	at::Tensor v = i16 ? at::empty({ nk + 1 }, self.options()).narrow(0, 0, nk).view(shape) :
			     at::empty(shape, self.options());
	at::Tensor i = at::empty(shape, self.options().dtype(at::kLong));

	if (v.numel() > 0) {
		at::Tensor x = self.movedim(d, -1).contiguous();
		at::TensorOptions i32 = self.options().dtype(at::kInt);
		int64_t n = rows * P;
		bool two = self.scalar_type() == at::kLong;
		std::string t = key_type(self.scalar_type());
		/* 16-bit keys and positions: one word each (skeyp), half the steps' loads and stores */
		bool packed = (t == "bf16" || t == "i16" || t == "i8" || t == "u8") && P <= 65536;
		int words = packed ? 1 : two ? 3 : 2;
		std::string w = packed ? ".p32" : two ? ".i64" : ".i32", p = packed ? "p." : ".";
		/* keys, positions and (int64) the keys' low words; topk: a second set of half the size */
		at::Tensor buf[2][3];
		for (int b = 0; b < (partial ? 2 : 1); b++)
			for (int w3 = 0; w3 < words; w3++)
				buf[b][w3] = at::empty({ (b ? n / 2 : n) + 1024 }, i32);	/* bsortl reads 512 around */
		for (int b = 0; b < 2; b++)
			for (int w3 = words; w3 < 3; w3++)
				buf[b][w3] = buf[b][0];
		auto va3 = [&](int b, int w3) { return buf[b][w3].defined() ? va_of(buf[b][w3]) + 512 * 4 : 0; };
		/* int16: x's int32 words, and which half it starts at */
		uint64_t xva = va_of(x), xw = i16 ? xva & ~(uint64_t)3 : xva, xo = (xva - xw) / 2;
		std::vector<Launch> l = {
			{ "skey" + p + t, tvp::blocks(n),
			  { xw, va3(0, 0), va3(0, 1), (uint64_t)n, pack(P, L), descending ? 0xffffffffu : 0u, va3(0, 2),
			    xo } },
		};
		/* bsortl / bmerge over rows of p in set b, stages k0 .. k1 (bmerge: from set 1 - b) */
		auto local = [&](const char *kind, int b, int64_t rp, int64_t k0, int64_t k1) {
			l.push_back({ kind + w, tvp::blocks(rows * rp),
				      { va3(b, 0), va3(b, 1), (uint64_t)(rows * rp), (uint64_t)k0, (uint64_t)k1, (uint64_t)rp,
					va3(b, 2), 0, 0, 0, 0, 0, va3(1 - b, 0), va3(1 - b, 1), va3(1 - b, 2) } });
		};
		int out = 0;	/* the set sgath reads */
		int64_t rp = P;	/* its row length */

		if (partial) {
			local("bsortl", 0, P, 2, K);
			for (rp = P / 2; rp >= K; rp /= 2, out = 1 - out)
				local("bmerge", 1 - out, rp, K, K);
			rp = K;
		} else {
			if (P > 1)
				local("bsortl", 0, P, 2, std::min<int64_t>(P, 1024));
			for (int64_t kk = 2048; kk <= P; kk *= 2) {
				for (int64_t j = kk / 2; j >= 1024; j /= 2)
					l.push_back({ "bsortg" + w, tvp::blocks(n / 2),
						      { va3(0, 0), va3(0, 1), (uint64_t)(n / 2), (uint64_t)j,
							(uint64_t)(kk & (P - 1)), (uint64_t)__builtin_ctzll(j), va3(0, 2) } });
				local("bsortl", 0, P, kk, kk);
			}
		}
		if (i16)
			l.push_back({ "sgath" + p + "i16", tvp::blocks((nk + 1) / 2),
				      { xw, va3(out, 1), va_of(v), va_of(i), (uint64_t)((nk + 1) / 2), pack(rp, L),
					(uint64_t)k, xo, (uint64_t)nk } });
		else
			l.push_back({ "sgath" + p + t, tvp::blocks(nk),
				      { xva, va3(out, 1), va_of(v), va_of(i), (uint64_t)nk, pack(rp, L), (uint64_t)k } });
		if (tvp::run(dev_of(self), l, op) != l.size()) {
			failed = true;
			return false;
		}
	}
	values = v.movedim(-1, d).contiguous();
	indices = i.movedim(-1, d).contiguous();
	return true;
}

/* H's largest size (int32 elements: 16 MiB) */
static constexpr int64_t max_hist = (int64_t)1 << 22;

/*
 * The whole sort of an 8-bit type (int8, uint8, bool) along d as a
 * counting sort (rhist, rscan, rbase, rplace), on int32 lanes widened and
 * narrowed by the device's conversions. Rows of at least 256 (shorter
 * ones: the bitonic sort, cheaper than 256 counters a row); false: not for
 * it, or failed (the device failed a kernel). The programs take any byte
 * of the key (s8), but int16's two passes took 2.8 times the CPU
 * fallback's time in the guest (Documentation/benchmarks.rst), so int16
 * sorts take the fallback.
 */
static bool radix_sort(const at::Tensor &self, int64_t d, bool descending, at::Tensor &values, at::Tensor &indices,
		       bool &failed, const char *op)
{
	at::ScalarType st = self.scalar_type();
	bool byte = st == at::kChar || st == at::kByte || st == at::kBool;
	/* chunks of about 256: the instructions are the elements' either way, the counters fewer */
	int64_t L = self.size(d), rows = L ? self.numel() / L : 0, C = std::min<int64_t>(1024, (L + 255) / 256);

	failed = false;
	if (!byte || !sortable(self) || L < 256 || rows == 0 || 2 * self.numel() >= ((int64_t)1 << 31))
		return false;
	while (C > 1 && rows * 256 * C > max_hist)
		C /= 2;
	if (rows * 256 * C > max_hist)
		return false;
	int64_t Lc = (L + C - 1) / C, n = rows * L;
	uint32_t grid = (uint32_t)((rows * C + 15) / 16);	/* rhist and rplace: 16 lanes an instance */
	at::Tensor x = self.movedim(d, -1).contiguous().to(at::kInt);
	at::TensorOptions i32 = self.options().dtype(at::kInt);
	at::Tensor H = at::zeros({ rows * C * 256 }, i32), T = at::empty({ rows * 256 }, i32), v = at::empty({ n }, i32);
	at::Tensor i = at::empty(x.sizes(), self.options().dtype(at::kLong));
	std::vector<uint64_t> common = { va_of(x), va_of(H), (uint64_t)(rows * C), (uint64_t)C, (uint64_t)L,
					 (uint64_t)Lc, st == at::kChar ? 0x80u : 0u, 0, descending ? 255u : 0u };
	std::vector<Launch> l = {
		{ "rhist.i32", grid, common },
		{ "rscan.i32", tvp::blocks(rows * 256), { va_of(H), va_of(T), (uint64_t)(rows * 256), (uint64_t)C } },
		{ "rbase.i32", tvp::blocks(rows), { va_of(T), (uint64_t)rows } },
	};

	common.insert(common.end(), { 0, va_of(T), va_of(v), va_of(i), 1 });
	l.push_back({ "rplace.i32", grid, common });
	if (tvp::run(dev_of(self), l, op) != l.size()) {
		failed = true;
		return false;
	}
	values = v.view(x.sizes()).to(st).movedim(-1, d).contiguous();
	indices = i.movedim(-1, d).contiguous();
	return true;
}

static std::tuple<at::Tensor, at::Tensor> sort_stable(const at::Tensor &self, c10::optional<bool> stable, int64_t dim,
						      bool descending)
{
	at::Tensor v, i;
	bool failed = false;

	/* int16: the CPU is faster than either device sort (radix_sort()) */
	if (self.dim() >= 1 && self.scalar_type() != at::kShort) {
		int64_t d = c10::maybe_wrap_dim(dim, self.dim());

		if (radix_sort(self, d, descending, v, i, failed, "sort") ||
		    (!failed && sort_on_device(self, d, descending, self.size(d), v, i, failed, "sort"))) {
			count_device_op("sort");
			return { v, i };
		}
	}
	auto r = on_cpu("sort.stable", failed, [&] { return at::sort(cpu(self), stable, dim, descending); });
	return { std::get<0>(r).to(self.device()), std::get<1>(r).to(self.device()) };
}

static void outs(at::Tensor &values, at::Tensor &indices, const std::tuple<at::Tensor, at::Tensor> &r)
{
	for (auto p : { std::make_pair(&values, &std::get<0>(r)), std::make_pair(&indices, &std::get<1>(r)) }) {
		if (p.first->sizes() != p.second->sizes())
			p.first->resize_(p.second->sizes());
		p.first->copy_(*p.second);
	}
}

static std::tuple<at::Tensor &, at::Tensor &> sort_values_stable(const at::Tensor &self, c10::optional<bool> stable,
								  int64_t dim, bool descending, at::Tensor &values,
								  at::Tensor &indices)
{
	outs(values, indices, sort_stable(self, stable, dim, descending));
	return { values, indices };
}

static std::tuple<at::Tensor, at::Tensor> topk(const at::Tensor &self, c10::SymInt k_, int64_t dim, bool largest,
					       bool sorted)
{
	int64_t k = k_.expect_int();
	at::Tensor v, i;
	bool failed = false;

	if (self.dim() >= 1) {
		int64_t d = c10::maybe_wrap_dim(dim, self.dim());

		if (k >= 0 && k <= self.size(d) && sort_on_device(self, d, largest, k, v, i, failed, "topk")) {
			count_device_op("topk");
			return { v, i };
		}
	}
	auto r = on_cpu("topk", failed, [&] { return at::topk(cpu(self), k, dim, largest, sorted); });
	return { std::get<0>(r).to(self.device()), std::get<1>(r).to(self.device()) };
}

static std::tuple<at::Tensor &, at::Tensor &> topk_values(const at::Tensor &self, c10::SymInt k, int64_t dim,
							   bool largest, bool sorted, at::Tensor &values,
							   at::Tensor &indices)
{
	outs(values, indices, topk(self, k, dim, largest, sorted));
	return { values, indices };
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("sort.stable", sort_stable);
	m.impl("sort.values_stable", sort_values_stable);
	m.impl("topk", topk);
	m.impl("topk.values", topk_values);
}

} // namespace ops
} // namespace maia_torch
