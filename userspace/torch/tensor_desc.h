// SPDX-License-Identifier: MIT
/*
 * Device tensors as libmaia tensor descriptors, and the checks that decide
 * whether an op can run on the device or must take the CPU fallback.
 */
#pragma once

#include <ATen/ATen.h>

#include "runtime.h"

namespace maia_torch {

inline bool on_device(const at::Tensor &t)
{
	return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1;
}

/* t is on the same Maia device as ref (a job runs on one device). */
inline bool on_device(const at::Tensor &t, const at::Tensor &ref)
{
	return on_device(t) && t.device() == ref.device();
}

/* The device data type of a torch dtype, or -1 when the engine has none. */
inline int maia_dtype(at::ScalarType t)
{
	switch (t) {
	case at::kFloat: return MAIA_DTYPE_FP32;
	case at::kHalf: return MAIA_DTYPE_FP16;
	case at::kBFloat16: return MAIA_DTYPE_BF16;
	case at::kInt: return MAIA_DTYPE_INT32;
	case at::kChar: return MAIA_DTYPE_INT8;
	default: return -1;
	}
}

/* The floating types the tensor engine computes on and stores. */
inline bool engine_float(at::ScalarType t)
{
	return t == at::kFloat || t == at::kHalf || t == at::kBFloat16;
}

/* A device descriptor can describe t: rank <= 4, a device dtype, no 0 size. */
inline bool describable(const at::Tensor &t)
{
	if (!on_device(t) || t.dim() > (int64_t)MAIA_TENSOR_MAX_RANK || maia_dtype(t.scalar_type()) < 0)
		return false;
	for (int64_t d = 0; d < t.dim(); d++)
		if (t.size(d) <= 0 || t.size(d) > (int64_t)MAIA_TENSOR_MAX_DIM || t.stride(d) < 0)
			return false;
	return true;
}

/* t's descriptor (rank 0 is a rank-1 tensor of one element). */
inline struct maia_tensor_desc desc(const at::Tensor &t)
{
	struct maia_tensor_desc d = {};

	TORCH_CHECK(describable(t), "maia: a ", t.scalar_type(), " tensor of shape ", t.sizes(),
		    " has no device descriptor (rank <= 4 of float32/float16/bfloat16/int32/int8)");
	d.addr = va_of(t);
	d.dtype = (uint8_t)maia_dtype(t.scalar_type());
	if (t.dim() == 0) {
		d.rank = 1;
		d.shape[0] = 1;
		d.strides[0] = 1;
		return d;
	}
	d.rank = (uint8_t)t.dim();
	for (int64_t i = 0; i < t.dim(); i++) {
		d.shape[i] = (uint32_t)t.size(i);
		d.strides[i] = (uint64_t)t.stride(i);
	}
	return d;
}

} // namespace maia_torch
