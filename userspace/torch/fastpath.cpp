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
 */
#include <ATen/ops/_native_multi_head_attention_native.h>
#include <ATen/ops/_transformer_encoder_layer_fwd_native.h>
#include <torch/library.h>

namespace maia_torch {

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m)
{
	m.impl("_transformer_encoder_layer_fwd", at::native::transformer_encoder_layer_forward);
	m.impl("_native_multi_head_attention", at::native::native_multi_head_attention_cpu);
}

} // namespace maia_torch
