// SPDX-License-Identifier: MIT
/*
 * torch.ops.maia: device ops as one device command each (RMS norm,
 * attention, MX quantize/dequantize; torch 2's aten::rms_norm and
 * aten::scaled_dot_product_attention are composites that decompose into
 * the ops of kernels.cpp and the fallback), and the backend's controls
 * (strict mode, op and memory statistics). maia/torch.py wraps them for
 * Python.
 */
#include <torch/library.h>

#include <cstring>

#include "tensor_desc.h"

namespace maia_torch {

static void require(bool ok, const char *op, const char *why)
{
	TORCH_CHECK(ok, "maia::", op, ": ", why);
}

static at::Tensor rms_norm(const at::Tensor &x, const c10::optional<at::Tensor> &weight_opt,
			   double eps)
{
	at::Tensor w = weight_opt.value_or(at::Tensor());

	require(on_device(x) && engine_float(x.scalar_type()),
		"rms_norm", "x must be a float32/float16/bfloat16 tensor on the Maia device");
	require(x.dim() >= 1 && x.is_contiguous(), "rms_norm", "x must be contiguous, rank >= 1");
	require(!w.defined() || (on_device(w, x) && w.dim() == 1 && w.size(0) == x.size(-1)),
		"rms_norm", "weight must be a 1-D device tensor of x's last dimension");
	int64_t d = x.size(-1), rows = x.numel() / std::max<int64_t>(d, 1);
	at::Tensor out = at::empty(x.sizes(), x.options());
	if (x.numel() == 0)
		return out;
	struct maia_tensor_desc dx = desc(x.view({ rows, d })), dout = desc(out.view({ rows, d })), dw;
	if (w.defined())
		dw = desc(w);
	Job job(x);

	job.add(maia_cmd_rmsnorm(job.cmdbuf(), &dx, w.defined() ? &dw : nullptr, &dout, (float)eps),
		"maia_cmd_rmsnorm");
	job.run();
	count_device_op("maia::rms_norm");
	return out;
}

static at::Tensor sdpa(const at::Tensor &q, const at::Tensor &k, const at::Tensor &v,
		       bool is_causal, double scale)
{
	require(on_device(q) && on_device(k, q) && on_device(v, q), "scaled_dot_product_attention",
		"q, k and v must be on the Maia device");
	require(q.dim() == 4 && k.dim() == 4 && v.dim() == 4, "scaled_dot_product_attention",
		"q, k, v must be [batch, heads, length, dim]");
	require(engine_float(q.scalar_type()) && k.scalar_type() == q.scalar_type() &&
			v.scalar_type() == q.scalar_type(),
		"scaled_dot_product_attention", "q, k, v must share one float dtype");
	at::Tensor out = at::empty({ q.size(0), q.size(1), q.size(2), v.size(3) }, q.options());
	struct maia_tensor_desc dq = desc(q), dk = desc(k), dv = desc(v), dout = desc(out);
	Job job(q);

	job.add(maia_cmd_attention(job.cmdbuf(), &dq, &dk, &dv, &dout, (float)scale,
				   is_causal ? MAIA_ATTN_F_CAUSAL : 0),
		"maia_cmd_attention");
	job.run();
	count_device_op("maia::scaled_dot_product_attention");
	return out;
}

/* MAIA_DTYPE_* of a block format's name ("mxfp8_e4m3", ..., "mx4"). */
static unsigned int block_format(c10::string_view name, const char *op)
{
	for (unsigned int t = MAIA_DTYPE_MXFP8_E4M3; t < MAIA_DTYPE_COUNT; t++) {
		const char *n = maia_dtype_name(t);

		if (n && name == n)
			return t;
	}
	TORCH_CHECK(false, "maia::", op, ": unknown block format '", std::string(name),
		    "' (mxfp8_e4m3, mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4_e2m1, mxint8, mx9, mx6, mx4)");
}

static struct maia_tensor_desc block_desc(uint64_t va, uint64_t scale_va, unsigned int fmt,
					  at::IntArrayRef shape, const char *op)
{
	struct maia_tensor_desc d;
	uint32_t dims[MAIA_TENSOR_MAX_RANK];

	require(shape.size() >= 1 && shape.size() <= MAIA_TENSOR_MAX_RANK, op, "rank must be 1..4");
	for (size_t i = 0; i < shape.size(); i++) {
		require(shape[i] > 0 && shape[i] <= (int64_t)MAIA_TENSOR_MAX_DIM, op, "bad dimension");
		dims[i] = (uint32_t)shape[i];
	}
	check(maia_tensor_init(&d, va, fmt, (unsigned int)shape.size(), dims), op);
	check(maia_tensor_set_scale_addr(&d, scale_va), op);
	return d;
}

static std::tuple<at::Tensor, at::Tensor> quantize_mx(const at::Tensor &x, c10::string_view format)
{
	unsigned int fmt = block_format(format, "quantize_mx");
	uint64_t data_bytes, scale_bytes;

	require(on_device(x) && engine_float(x.scalar_type()) && describable(x), "quantize_mx",
		"x must be a float32/float16/bfloat16 device tensor of rank 1..4");
	require(x.is_contiguous(), "quantize_mx", "x must be contiguous");
	check(maia_dtype_bytes(fmt, (uint64_t)x.numel(), &data_bytes, &scale_bytes), "quantize_mx");
	require(x.size(-1) % (int64_t)maia_dtype_block(fmt) == 0, "quantize_mx",
		"the last dimension must be a multiple of the block size");
	at::TensorOptions u8 = x.options().dtype(at::kByte);
	at::Tensor data = at::empty({ (int64_t)data_bytes }, u8);
	at::Tensor scales = at::empty({ (int64_t)scale_bytes }, u8);
	struct maia_tensor_desc dx = desc(x),
				dout = block_desc(va_of(data), va_of(scales), fmt, x.sizes(), "quantize_mx");
	Job job(x);

	job.add(maia_cmd_quantize(job.cmdbuf(), &dx, &dout, 0, 0), "maia_cmd_quantize");
	job.run();
	count_device_op("maia::quantize_mx");
	return std::make_tuple(data, scales);
}

static at::Tensor dequantize_mx(const at::Tensor &data, const at::Tensor &scales,
				c10::string_view format, at::IntArrayRef shape,
				c10::optional<at::ScalarType> dtype)
{
	unsigned int fmt = block_format(format, "dequantize_mx");
	at::ScalarType out_type = dtype.value_or(at::kFloat);
	uint64_t data_bytes, scale_bytes, elems = (uint64_t)c10::multiply_integers(shape);

	require(engine_float(out_type), "dequantize_mx", "dtype must be float32/float16/bfloat16");
	require(on_device(data) && on_device(scales, data) && data.scalar_type() == at::kByte &&
			scales.scalar_type() == at::kByte && data.is_contiguous() &&
			scales.is_contiguous(),
		"dequantize_mx", "data and scales must be contiguous uint8 device tensors");
	check(maia_dtype_bytes(fmt, elems, &data_bytes, &scale_bytes), "dequantize_mx");
	require((uint64_t)data.numel() >= data_bytes && (uint64_t)scales.numel() >= scale_bytes,
		"dequantize_mx", "data or scales are smaller than the shape needs");
	at::Tensor out = at::empty(shape, data.options().dtype(out_type));
	struct maia_tensor_desc dx = block_desc(va_of(data), va_of(scales), fmt, shape, "dequantize_mx"),
				dout = desc(out);
	Job job(data);

	job.add(maia_cmd_dequantize(job.cmdbuf(), &dx, &dout), "maia_cmd_dequantize");
	job.run();
	count_device_op("maia::dequantize_mx");
	return out;
}

static std::tuple<std::vector<std::string>, std::vector<int64_t>>
split(const std::map<std::string, int64_t> &m)
{
	std::vector<std::string> names;
	std::vector<int64_t> counts;

	for (const auto &e : m) {
		names.push_back(e.first);
		counts.push_back(e.second);
	}
	return std::make_tuple(names, counts);
}

static std::tuple<std::vector<std::string>, std::vector<int64_t>> fallback_stats()
{
	return split(fallback_counts());
}

static std::tuple<std::vector<std::string>, std::vector<int64_t>> device_stats()
{
	return split(device_op_counts());
}

static std::vector<int64_t> memory()
{
	MemoryStats s = memory_stats();

	return { s.in_use_bytes, s.cached_bytes, s.bo_bytes, s.bo_count, s.allocations, s.reuses };
}

TORCH_LIBRARY(maia, m)
{
	m.def("rms_norm(Tensor x, Tensor? weight=None, float eps=1e-6) -> Tensor");
	m.def("scaled_dot_product_attention(Tensor q, Tensor k, Tensor v, bool is_causal=False, "
	      "float scale=0.0) -> Tensor");
	m.def("quantize_mx(Tensor x, str format) -> (Tensor, Tensor)");
	m.def("dequantize_mx(Tensor data, Tensor scales, str format, int[] shape, "
	      "ScalarType? dtype=None) -> Tensor");
	m.def("fallback_stats", fallback_stats);
	m.def("device_stats", device_stats);
	m.def("reset_stats", [] { reset_counts(); });
	m.def("set_strict", [](bool on) { set_strict(on); });
	m.def("is_strict", [] { return strict(); });
	m.def("memory_stats", memory);
	m.def("empty_cache", [] { empty_cache(); });
	m.def("device_count", [] { return (int64_t)device_count(); });
	m.def("current_device", [] { return (int64_t)current_device(); });
	m.def("set_device", [](int64_t index) { set_current_device((int)index); });
	m.def("synchronize", [](int64_t index) { synchronize(index < 0 ? current_device() : (int)index); });
	m.def("host_waits", [] { return host_waits(); });
	m.def("jobs_submitted", [] { return jobs_submitted(); });
	m.def("batch_begin", [](int64_t index) { batch_begin((int)index); });
	m.def("batch_end", [](int64_t index) { batch_end((int)index); });
}

TORCH_LIBRARY_IMPL(maia, PrivateUse1, m)
{
	m.impl("rms_norm", rms_norm);
	m.impl("scaled_dot_product_attention", sdpa);
	m.impl("quantize_mx", quantize_mx);
	m.impl("dequantize_mx", dequantize_mx);
}

/* CPU operands reach the same kernels, which say they want device tensors. */
TORCH_LIBRARY_IMPL(maia, CPU, m)
{
	m.impl("rms_norm", rms_norm);
	m.impl("scaled_dot_product_attention", sdpa);
	m.impl("quantize_mx", quantize_mx);
	m.impl("dequantize_mx", dequantize_mx);
}

/* No derivative formulas: autograd passes through and records nothing. */
TORCH_LIBRARY_IMPL(maia, Autograd, m)
{
	m.impl("rms_norm", torch::CppFunction::makeFallthrough());
	m.impl("scaled_dot_product_attention", torch::CppFunction::makeFallthrough());
	m.impl("quantize_mx", torch::CppFunction::makeFallthrough());
	m.impl("dequantize_mx", torch::CppFunction::makeFallthrough());
}

} // namespace maia_torch
