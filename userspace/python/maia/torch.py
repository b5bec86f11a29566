# SPDX-License-Identifier: MIT
"""maia.torch: the Maia PyTorch backend (userspace/torch/, Documentation/python.rst).

Importing it loads the backend into torch (torch.ops.load_library). Tensors
then live on maia.torch.device ("privateuseone:0", torch 1.13 has no way to
rename the backend): model.to(maia.torch.device) runs on the device, ops
without a Maia kernel through the CPU fallback, counted; strict() turns
every fallback into an error.
"""
import contextlib
import os

import torch

_LIBRARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_maia_torch.so")
torch.ops.load_library(_LIBRARY)

device = torch.device("privateuseone", 0)
ops = torch.ops.maia

MEMORY_STATS = ("in_use_bytes", "cached_bytes", "bo_bytes", "bo_count", "allocations", "reuses")


def fallback_stats():
    """{aten op: times it ran on the CPU fallback} since the last reset."""
    names, counts = ops.fallback_stats()
    return dict(zip(names, counts))


def device_stats():
    """{op: times it ran on the device} since the last reset."""
    names, counts = ops.device_stats()
    return dict(zip(names, counts))


def reset_stats():
    ops.reset_stats()


@contextlib.contextmanager
def strict(on=True):
    """Within the block, an op without a Maia kernel raises RuntimeError
    ("maia strict mode: aten::exp has no Maia kernel ...") instead of
    running on the CPU."""
    before = ops.is_strict()
    ops.set_strict(on)
    try:
        yield
    finally:
        ops.set_strict(before)


def memory_stats():
    """The caching sub-allocator's counters (bytes and counts)."""
    return dict(zip(MEMORY_STATS, ops.memory_stats()))


def empty_cache():
    ops.empty_cache()


def rms_norm(x, weight=None, eps=1e-6):
    """x / sqrt(mean(x^2, last dim) + eps) * weight, on the device (no autograd)."""
    return ops.rms_norm(x, weight, eps)


def scaled_dot_product_attention(q, k, v, is_causal=False, scale=None):
    """softmax(scale q k^T [+ causal mask]) v for [batch, heads, length, dim]
    tensors, one device command (no autograd); scale defaults to 1/sqrt(dim)."""
    return ops.scaled_dot_product_attention(q, k, v, is_causal, 0.0 if scale is None else scale)


def quantize_mx(x, fmt="mxfp8_e4m3"):
    """x (float, last dim a multiple of the block) -> (data, scales), uint8
    device tensors in the device's packed block format."""
    return ops.quantize_mx(x, fmt)


def dequantize_mx(data, scales, fmt, shape, dtype=torch.float32):
    """The inverse of quantize_mx: a dtype tensor of the given shape."""
    return ops.dequantize_mx(data, scales, fmt, list(shape), dtype)
