// SPDX-License-Identifier: MIT
/*
 * What the ops_*.cpp files (loss, indexing, dropout on TVP programs) share:
 * the CPU path of an op (counted, strict mode raising), CPU torch's own
 * error for bad indices found on the device, and the packing of two 32-bit
 * kernel arguments into one s register.
 */
#pragma once

#include <ATen/ATen.h>

#include <cstdint>
#include <string>

#include "tensor_desc.h"
#include "tvp_kernels.h"

namespace maia_torch {
namespace ops {

inline at::Tensor cpu(const at::Tensor &t)
{
	return t.defined() ? t.to(at::kCPU) : t;
}

inline c10::optional<at::Tensor> cpu(const c10::optional<at::Tensor> &t)
{
	if (!t || !t->defined())
		return c10::nullopt;
	return t->to(at::kCPU);
}

/*
 * Account for running op on the CPU: no kernel takes these operands, or
 * (failed) its kernel failed on the device (logged by tvp::run). Raises in
 * strict mode.
 */
inline void to_cpu(const char *op, bool failed)
{
	std::string name = std::string("aten::") + op;

	TORCH_CHECK(!failed || !strict(), "maia strict mode: ", name,
		    ": its TVP kernel failed on the device and the op would run on the CPU");
	count_fallback(name);
}

/*
 * Raise the error CPU torch gives for these operands (bad indices the
 * device found, bad shapes): f runs the op on CPU copies and is expected
 * to throw; not a fallback, so not counted.
 */
template <class F> [[noreturn]] void cpu_error(const char *op, F f)
{
	f();
	TORCH_CHECK(false, "maia: aten::", op, ": the device found a bad index that CPU torch accepts");
}

/*
 * The op's CPU implementation on CPU copies (f), counted as a fallback
 * (failed: after a device error). f runs first, so operands CPU torch
 * refuses raise its own error, in strict mode too.
 */
template <class F> auto on_cpu(const char *op, bool failed, F f) -> decltype(f())
{
	auto r = f();

	to_cpu(op, failed);
	return r;
}

/* lo in the low 32 bits, hi in the high ones (a kernel unpacks them; VSPLAT takes the low half). */
inline uint64_t pack(int64_t lo, int64_t hi)
{
	return (uint64_t)(uint32_t)lo | ((uint64_t)(uint32_t)hi << 32);
}

inline int dev_of(const at::Tensor &t)
{
	return device_index(t.device());
}

/* The largest element offset t reaches from its first element, plus one (0: empty). */
inline int64_t extent(const at::Tensor &t)
{
	int64_t e = 1;

	if (t.numel() == 0)
		return 0;
	for (int64_t d = 0; d < t.dim(); d++)
		e += (t.size(d) - 1) * t.stride(d);
	return e;
}

/* Offsets of t's elements fit a kernel's int32 lane offsets; no negative strides. */
inline bool int32_reach(const at::Tensor &t)
{
	for (int64_t d = 0; d < t.dim(); d++)
		if (t.stride(d) < 0)
			return false;
	return extent(t) < ((int64_t)1 << 31) && t.numel() <= tvp::max_elements();
}

/* The TVP element type of t's dtype for loads and stores that keep the value (gathers), or nullptr. */
inline const char *elem_exact(at::ScalarType s)
{
	switch (s) {
	case at::kFloat: return "f32";
	case at::kBFloat16: return "bf16";
	case at::kHalf: return "f16";
	case at::kInt: return "i32";
	case at::kChar: case at::kByte: case at::kBool: return "i8";	/* a byte's bits either way */
	default: return nullptr;
	}
}

} // namespace ops
} // namespace maia_torch

