// SPDX-License-Identifier: MIT
/*
 * What the indexing ops (ops_index.cpp, ops_advindex.cpp, ops_mask.cpp,
 * ops_scatter.cpp) share: TVP assembly for a lane's coordinates in an
 * iteration shape of rank <= 5 and for a dot product of them with strides,
 * the packing of such shapes and strides and of a fill value into kernel
 * arguments, and a boolean mask's nonzero() on the device.
 */
#pragma once

#include <ATen/Dispatch.h>

#include "ops_common.h"

#include <vector>

namespace maia_torch {
namespace ops {

/*
 * Lanes f = 1024 pid + lane in v28, v31 = the lane, v29 = f < s<nreg>;
 * the coordinates c0..c4 of f in the shape (S1..S4 packed as
 * tvp_pack_shape5() does, in s<sh> and s<sh + 1>) into v0..v4. Uses v5-v9,
 * v30, s20-s22; s30 = 32, s21 = 1024 pid.
 */
inline std::string tvp_asm_coords5(int nreg, int sh)
{
	std::string n = "s" + std::to_string(nreg), a = "s" + std::to_string(sh), b = "s" + std::to_string(sh + 1);

	return "\tpid s20, 0\n\tmuli s21, s20, 1024\n\tli s30, 32\n"
	       "\tviota v31, 0\n\tvsplat v30, s21\n\tviadd v28, v31, v30\t# f\n"
	       "\tvsplat v30, " + n + "\n\tvicmp v29, v28, v30, lt\t# f < n\n"
	       "\tvsplat v5, " + a + "\n\tshr s22, " + a + ", s30\n\tvsplat v6, s22\n"
	       "\tvsplat v7, " + b + "\n\tshr s22, " + b + ", s30\n\tvsplat v8, s22\n"
	       "\tvirem v4, v28, v5\n\tvidiv v9, v28, v5\n\tvirem v3, v9, v6\n\tvidiv v9, v9, v6\n"
	       "\tvirem v2, v9, v7\n\tvidiv v9, v9, v7\n\tvirem v1, v9, v8\n\tvidiv v0, v9, v8\t# c0..c4\n";
}

/*
 * vout = c . strides, the strides packed as tvp_pack_strides5() does in
 * s<p> .. s<p + 2>; uses v9, v10, s22 and s30 = 32.
 */
inline std::string tvp_asm_dot5(int vout, int p)
{
	std::string o = "v" + std::to_string(vout), s[3];
	std::string r;

	for (int k = 0; k < 3; k++)
		s[k] = "s" + std::to_string(p + k);
	r = "\tvsplat v9, " + s[0] + "\n\tvimul " + o + ", v0, v9\n";
	for (int c = 1; c < 5; c++) {
		const std::string &reg = s[c / 2];

		if (c % 2)
			r += "\tshr s22, " + reg + ", s30\n\tvsplat v9, s22\n";
		else
			r += "\tvsplat v9, " + reg + "\n";
		r += "\tvimul v10, v" + std::to_string(c) + ", v9\n\tviadd " + o + ", " + o + ", v10\n";
	}
	return r;
}

/* a's arguments, then b's */
inline std::vector<uint64_t> operator+(std::vector<uint64_t> a, const std::vector<uint64_t> &b)
{
	a.insert(a.end(), b.begin(), b.end());
	return a;
}

/* sizes (rank <= 5, padded with 1s on the left) as two arguments: S4 | S3 << 32, S2 | S1 << 32. */
inline std::vector<uint64_t> tvp_pack_shape5(const std::vector<int64_t> &sizes)
{
	int64_t s[5] = { 1, 1, 1, 1, 1 };
	size_t pad = 5 - sizes.size();

	for (size_t k = 0; k < sizes.size(); k++)
		s[pad + k] = sizes[k];
	return { pack(s[4], s[3]), pack(s[2], s[1]) };
}

/* strides (rank <= 5, padded with 0s on the left) as three arguments: st0 | st1 << 32, st2 | st3 << 32, st4. */
inline std::vector<uint64_t> tvp_pack_strides5(const std::vector<int64_t> &strides)
{
	int64_t s[5] = {};
	size_t pad = 5 - strides.size();

	for (size_t k = 0; k < strides.size(); k++)
		s[pad + k] = strides[k];
	return { pack(s[0], s[1]), pack(s[2], s[3]), pack(s[4], 0) };
}

/*
 * A fill value as a kernel argument for element type t: binary32 bits for
 * floats, else the integer's low 32 bits (an int64 past int32 too: its
 * users take the value from elsewhere).
 */
inline uint64_t fill_bits(const at::Scalar &v, at::ScalarType t)
{
	if (at::isFloatingType(t))
		return tvp::f32_bits(v.toDouble());
	if (t == at::kBool)
		return v.toBool() ? 1 : 0;
	return (uint64_t)(uint32_t)v.toLong();
}

/*
 * A fill value's kernel argument for self's type t (fill_bits()), or
 * false when CPU torch refuses v for t (its overflow error then comes
 * from the CPU path). uint8 goes as the int8 of its bits: i8 stores
 * saturate.
 */
inline bool value_arg(const at::Scalar &v, at::ScalarType t, uint64_t &bits)
{
	if (v.isComplex())
		return false;
	try {
		AT_DISPATCH_ALL_TYPES_AND3(at::kHalf, at::kBFloat16, at::kBool, t, "fill", [&] { (void)v.to<scalar_t>(); });
	} catch (const c10::Error &) {
		return false;
	}
	bits = t == at::kByte ? (uint64_t)(uint32_t)(int32_t)(int8_t)v.to<uint8_t>() : fill_bits(v, t);
	return true;
}

/*
 * mask.nonzero() on mask's device (ops_mask.cpp): 1 and out = the [count,
 * mask.dim()] int64 coordinates; 0: not for the device (rank 0 or > 5, a
 * dtype the kernels do not read, too many elements); -1: the device failed
 * a kernel (logged). Reads the count back: one host wait.
 */
int nonzero_on_device(const at::Tensor &mask, at::Tensor &out, const char *op);

} // namespace ops
} // namespace maia_torch
