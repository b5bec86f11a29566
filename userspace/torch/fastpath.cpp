// SPDX-License-Identifier: MIT
/*
 * torch's inference fast path for transformers: nn.TransformerEncoderLayer
 * and nn.MultiheadAttention, in eval mode without autograd, call the fused
 * ops aten::_transformer_encoder_layer_fwd and _native_multi_head_attention
 * on "cpu", "cuda" and the PrivateUse1 backend alike. Through the boxed
 * fallback a whole encoder layer would run on the CPU; registered here for
 * maia as torch's own generic implementations (at::native, the ones CPU
 * uses), they run as their component aten ops: linear, layer norm, GELU,
 * softmax, bmm on the device; the few helpers with no Maia kernel
 * (_transform_bias_rescale_qkv, _masked_softmax, ...) take the counted
 * fallback.
 *
 * And nn.Linear without autograd (inference, no_grad, inference_mode):
 * aten::linear is a composite that makes W^T as a view (t, transpose,
 * as_strided: three dispatcher calls and a TensorImpl) and then calls
 * addmm. Registered here for AutogradPrivateUse1 and PrivateUse1, it is one
 * GEMM with the bias as its epilogue, W^T described by swapped strides.
 * When a gradient is to be recorded, or the tensors are not plain Maia
 * tensors (fake or functional tensors under torch.compile's tracing, a
 * Python dispatch mode), it runs torch's own composite, as before.
 */
#include <ATen/ops/_native_multi_head_attention_native.h>
#include <ATen/ops/_transformer_encoder_layer_fwd_native.h>
#include <ATen/ops/linear_native.h>
#include <c10/core/impl/LocalDispatchKeySet.h>
#include <torch/library.h>

#include "tensor_desc.h"

namespace maia_torch {

/* t is a Maia tensor with nothing above its backend but autograd and autocast. */
static bool plain(const at::Tensor &t)
{
	static const c10::DispatchKeySet above =
		c10::autograd_dispatch_keyset_with_ADInplaceOrView |
		c10::getAutocastRelatedKeySetFromBackend(c10::BackendComponent::PrivateUse1Bit);

	return t.defined() && (t.key_set() - above) == c10::DispatchKeySet(c10::DispatchKey::PrivateUse1);
}

/*
 * linear() runs per call of every nn.Linear, and under TCG each call into
 * c10 costs: its checks read each tensor's sizes, strides and keys once
 * (no t.size(d)/t.stride(d) per dimension, no second check in desc()).
 */

/* t is a float tensor of ref's dtype on ref's device, every size in 1..MAX_DIM, no negative stride. */
static bool usable(const at::Tensor &t, const at::Tensor &ref)
{
	if (t.scalar_type() != ref.scalar_type() || t.device() != ref.device() ||
	    t.dim() > (int64_t)MAIA_TENSOR_MAX_RANK)
		return false;
	c10::IntArrayRef sizes = t.sizes(), strides = t.strides();

	for (size_t d = 0; d < sizes.size(); d++)
		if (sizes[d] <= 0 || sizes[d] > (int64_t)MAIA_TENSOR_MAX_DIM || strides[d] < 0)
			return false;
	return true;
}

/* t's descriptor as the matrix (or vector) it is, t checked by usable(). */
static struct maia_tensor_desc raw_desc(const at::Tensor &t)
{
	struct maia_tensor_desc d = {};
	c10::IntArrayRef sizes = t.sizes(), strides = t.strides();

	d.addr = reinterpret_cast<uint64_t>(t.const_data_ptr());
	d.dtype = (uint8_t)maia_dtype(t.scalar_type());
	d.rank = (uint8_t)sizes.size();
	for (size_t i = 0; i < sizes.size(); i++) {
		d.shape[i] = (uint32_t)sizes[i];
		d.strides[i] = (uint64_t)strides[i];
	}
	return d;
}

/* A contiguous tensor as the matrix [rows, cols]. */
static struct maia_tensor_desc matrix(const at::Tensor &t, int64_t rows, int64_t cols)
{
	struct maia_tensor_desc d = {};

	d.addr = reinterpret_cast<uint64_t>(t.const_data_ptr());
	d.dtype = (uint8_t)maia_dtype(t.scalar_type());
	d.rank = 2;
	d.shape[0] = (uint32_t)rows;
	d.shape[1] = (uint32_t)cols;
	d.strides[0] = (uint64_t)cols;
	d.strides[1] = 1;
	return d;
}

/*
 * A gradient would be recorded through t: grad mode on and t requires one,
 * or t has a forward-mode gradient. Both live in t's autograd meta, which a
 * tensor that never had either lacks (the input of an inference call).
 */
static bool needs_autograd(const at::Tensor &t, bool grad_mode)
{
	if (!t.defined() || !t.unsafeGetTensorImpl()->autograd_meta())
		return false;
	return (grad_mode && t.requires_grad()) || t._fw_grad(0).defined();
}

/*
 * y = x W^T + b as one GEMM: x [..., K] (2-D with any strides, or
 * contiguous of any rank: [M, K] with M its leading sizes' product),
 * W [N, K], b [N] or none; all of one float dtype on one device.
 */
static bool linear_ok(const at::Tensor &x, const at::Tensor &w, const at::Tensor &b)
{
	/* Always included: BackendSelect, ADInplaceOrView; any other (a mode) takes the composite. */
	static const c10::DispatchKeySet usual({ c10::DispatchKey::BackendSelect,
						 c10::DispatchKey::ADInplaceOrView });
	bool grad_mode = at::GradMode::is_enabled();

	if (!plain(x) || !plain(w) || (b.defined() && !plain(b)) ||
	    !(c10::impl::tls_local_dispatch_key_set().included_ - usual).empty() ||
	    needs_autograd(x, grad_mode) || needs_autograd(w, grad_mode) || needs_autograd(b, grad_mode))
		return false;
	if (!engine_float(w.scalar_type()) || w.dim() != 2 || x.dim() < 2 || x.size(-1) != w.size(1) ||
	    !usable(w, w))
		return false;
	/* x of rank > 2 is described as the matrix [M, K]: any sizes, but contiguous. */
	if (x.dim() == 2 ? !usable(x, w) :
	    x.scalar_type() != w.scalar_type() || x.device() != w.device() || !x.is_contiguous())
		return false;
	if (x.numel() == 0 || x.numel() / x.size(-1) > (int64_t)MAIA_TENSOR_MAX_DIM)
		return false;
	return !b.defined() || (b.dim() == 1 && b.size(0) == w.size(0) && usable(b, w));
}

static at::Tensor linear(const at::Tensor &x, const at::Tensor &w, const c10::optional<at::Tensor> &bias)
{
	const at::Tensor b = bias.value_or(at::Tensor());

	if (!linear_ok(x, w, b))
		return at::native::linear(x, w, bias);
	int64_t k = x.size(-1), n = w.size(0), m = x.numel() / k;
	c10::SmallVector<int64_t, 4> shape(x.sizes().begin(), x.sizes().end());
	Job job(x);

	shape.back() = n;
	at::Tensor out = empty_on(job.dev(), shape, x.scalar_type());
	struct maia_tensor_desc da = x.dim() == 2 ? raw_desc(x) : matrix(x, m, k);
	struct maia_tensor_desc db = raw_desc(w), dc = matrix(out, m, n), dbias = {};
	struct maia_gemm_args g = {};

	/* op(B) = W^T: [K, N], W's strides swapped. */
	std::swap(db.shape[0], db.shape[1]);
	std::swap(db.strides[0], db.strides[1]);
	g.a = &da;
	g.b = &db;
	g.c = &dc;
	g.alpha = 1.0f;
	if (b.defined()) {
		dbias = raw_desc(b);
		g.bias = &dbias;
	}
	job.add(maia_cmd_gemm_ex(job.cmdbuf(), &g), "maia_cmd_gemm_ex");
	job.run();
	count_device_op("linear");
	return out;
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m)
{
	m.impl("linear", linear);
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("_transformer_encoder_layer_fwd", at::native::transformer_encoder_layer_forward);
	m.impl("_native_multi_head_attention", at::native::native_multi_head_attention_cpu);
	m.impl("linear", linear);
}

} // namespace maia_torch
