# SPDX-License-Identifier: MIT
"""maia.torch: the Maia PyTorch backend (userspace/torch/, Documentation/python.rst).

Importing it loads the backend into torch (torch.ops.load_library) and names
torch's PrivateUse1 backend "maia": tensors then live on maia.torch.device
("maia:0"), model.to("maia") runs on the device, ops without a Maia kernel
through the CPU fallback, counted; strict() turns every fallback into an
error. torch.maia is the device module torch 2 asks a backend for
(is_available, device_count, ...).
"""
import contextlib
import os

import torch

import maia

_LIBRARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_maia_torch.so")
torch.ops.load_library(_LIBRARY)

BACKEND = "maia"


class _Device:
    """torch.maia.device(i): a context in which i is the current device."""

    def __init__(self, device):
        self.idx = _index(device)
        self.prev = -1

    def __enter__(self):
        self.prev = ops.current_device()
        if self.idx >= 0:
            ops.set_device(self.idx)
        return self

    def __exit__(self, *exc):
        ops.set_device(self.prev)
        return False


def _index(device):
    """The index of a device given as an int, "maia:i", torch.device or None (current)."""
    if device is None:
        return ops.current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    if device.type != BACKEND:
        raise ValueError("maia: %s is not a maia device" % (device,))
    return ops.current_device() if device.index is None else device.index


class _DeviceModule:
    """torch.maia: what torch 2 calls on a PrivateUse1 backend's module
    (lazy init, seeding, device counts, the current device, streams and
    events). Devices maia:0 .. device_count()-1; the current device is per
    thread (the c10 device guard's). Ops are asynchronous: each enqueues a
    job on its device's stream and returns; reading a value (.cpu(),
    .item(), print) or synchronize() waits. One in-order stream per device;
    torch.maia.Event is torch.Event on "maia" (record, query, synchronize,
    wait; with enable_timing=True, elapsed_time in milliseconds of the
    device's modeled clock, from a TIMESTAMP command each). Dropout draws from the device's own counter-based generator,
    seeded by torch.manual_seed; other random ops take the CPU fallback and
    the CPU generator."""

    device = _Device

    @staticmethod
    def is_available():
        return ops.device_count() > 0

    @staticmethod
    def device_count():
        return ops.device_count()

    @staticmethod
    def current_device():
        return ops.current_device()

    @staticmethod
    def set_device(device):
        ops.set_device(_index(device))

    @staticmethod
    def is_initialized():
        return True

    @staticmethod
    def _lazy_init():
        pass

    @staticmethod
    def _is_in_bad_fork():
        return False

    # The device generators (userspace/torch/ops_dropout.cpp): a seed and
    # an offset per device; torch.manual_seed(s) calls manual_seed_all(s).
    @staticmethod
    def manual_seed_all(seed):
        ops.manual_seed(_seed64(seed), -1)

    @staticmethod
    def manual_seed(seed):
        ops.manual_seed(_seed64(seed), ops.current_device())

    @staticmethod
    def initial_seed():
        return ops.rng_state(ops.current_device())[0] % (1 << 64)

    @staticmethod
    def get_rng_state(device=None):
        """The generator's state: seed and offset, 16 bytes (a uint8 tensor)."""
        return torch.tensor(ops.rng_state(_index(device)), dtype=torch.int64).view(torch.uint8)

    @staticmethod
    def set_rng_state(state, device=None):
        seed, offset = state.view(torch.int64).tolist()
        ops.set_rng_state(_index(device), seed, offset)

    @staticmethod
    def synchronize(device=None):
        """Wait for every op enqueued on the device (the current one by default)."""
        _synchronize(-1 if device is None else _index(device))

    @staticmethod
    def empty_cache():
        """Give the caching allocator's unused buffer objects back to the driver
        (every device's; maia.torch.memory_stats() says what it holds)."""
        empty_cache()

    @staticmethod
    def Event(enable_timing=False, blocking=False, interprocess=False):
        return torch.Event(device=BACKEND, enable_timing=enable_timing, blocking=blocking,
                           interprocess=interprocess)

    @staticmethod
    def current_stream(device=None):
        """The device's one stream (torch.Stream)."""
        return torch.Stream(device=torch.device(BACKEND, _index(device)))

    def __getattr__(self, name):
        # Inductor asks the PrivateUse1 module for its Scheduling when it
        # first compiles a graph: maia.inductor registers the device then
        # (torch._inductor is not imported before torch.compile needs it).
        if name in ("Scheduling", "PythonWrapperCodegen", "CppWrapperCodegen"):
            import maia.inductor
            return maia.inductor.register_for_inductor(name)
        raise AttributeError("torch.maia has no attribute %r" % name)


def _seed64(seed):
    """A seed as torch takes it (below 2^64, or negative) as a signed 64-bit int."""
    seed = int(seed) & ((1 << 64) - 1)
    return seed - (1 << 64) if seed >= 1 << 63 else seed


def _register():
    name = torch._C._get_privateuse1_backend_name()
    if name == BACKEND and hasattr(torch, BACKEND):
        return                                  # this module, loaded again
    if name != "privateuseone":
        raise RuntimeError("maia.torch: torch's PrivateUse1 backend is already named %r" % name)
    torch.utils.rename_privateuse1_backend(BACKEND)
    torch._register_device_module(BACKEND, _DeviceModule())
    # No generate_methods_for_privateuse1_backend(): torch has a MAIA device
    # type of its own (no kernels in a torch wheel; the name "maia" now means
    # this backend), whose Tensor.is_maia is already there and False for
    # these tensors, and Module.maia() needs Tensor.maia(). Use .to("maia")
    # and t.device.type == "maia".


ops = torch.ops.maia
# torch's own binding of the device guard's synchronizeDevice (device.cpp;
# -1: the current device): a third of a torch.ops call's cost (3.3 against
# 12.8 us in a guest), which every call-and-wait pays.
_synchronize = getattr(torch._C, "_accelerator_synchronizeDevice", None) or ops.synchronize
_register()

device = torch.device(BACKEND, 0)

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


@contextlib.contextmanager
def batched(device=None):
    """Within the block, the device's ops append to one command buffer that
    is submitted as one job when the block ends (or before a host read, a
    synchronize, an event, or at 128 KiB): fewer, larger jobs."""
    idx = _index(device)
    ops.batch_begin(idx)
    try:
        yield
    finally:
        ops.batch_end(idx)


def jobs_submitted():
    """Jobs the backend has submitted to the devices since the start."""
    return ops.jobs_submitted()


def host_waits():
    """Times the host has waited for a device job (reads, synchronize, a full ring)."""
    return ops.host_waits()


def compile_backend(gm, example_inputs):
    """A torch.compile backend: torch.compile(model, backend=maia.torch.compile_backend).

    Dynamo hands over the FX graph of the model's aten-level torch ops; it
    runs eagerly, op by op, on the maia devices of its inputs, inside
    batched(): every device op of the graph appends to one command buffer
    per device, submitted as one job when the graph returns. Ops without a
    Maia kernel take the CPU fallback as in eager mode (their operands are
    read, which submits the batch so far); the rest of the graph goes on
    batching after them. No code generation (Inductor's Triton path for
    maia is not done)."""
    devs = sorted({t.device.index for t in example_inputs
                   if isinstance(t, torch.Tensor) and t.device.type == BACKEND})

    def run(*args):
        with contextlib.ExitStack() as stack:
            for d in devs or [None]:
                stack.enter_context(batched(d))
            return gm(*args)
    return run


def memory_stats():
    """The caching sub-allocator's counters (bytes and counts)."""
    return dict(zip(MEMORY_STATS, ops.memory_stats()))


def empty_cache():
    ops.empty_cache()


class _RMSNorm(torch.autograd.Function):
    """Forward: one device RMSNORM command. Backward: the derivative in
    torch ops (on the device where it has them; rsqrt takes the fallback)."""

    @staticmethod
    def forward(ctx, x, weight, eps):
        ctx.save_for_backward(x, weight)
        ctx.eps = eps
        return ops.rms_norm(x, weight, eps)

    @staticmethod
    def backward(ctx, dy):
        x, weight = ctx.saved_tensors
        r = torch.rsqrt((x * x).mean(-1, keepdim=True) + ctx.eps)
        g = dy * weight if weight is not None else dy
        dx = r * (g - x * (r * r) * (x * g).mean(-1, keepdim=True))
        dw = None
        if weight is not None and ctx.needs_input_grad[1]:
            dw = (dy * x * r).reshape(-1, x.shape[-1]).sum(0)
        return dx, dw, None


def rms_norm(x, weight=None, eps=1e-6):
    """x / sqrt(mean(x^2, last dim) + eps) * weight on the device; differentiable."""
    if torch.is_grad_enabled() and (x.requires_grad or (weight is not None and weight.requires_grad)):
        return _RMSNorm.apply(x, weight, eps)
    return ops.rms_norm(x, weight, eps)


class _Attention(torch.autograd.Function):
    """Forward: one device ATTENTION command. Backward: recompute the
    attention weights with bmm/softmax (device ops) and apply the chain rule."""

    @staticmethod
    def forward(ctx, q, k, v, is_causal, scale):
        ctx.save_for_backward(q, k, v)
        ctx.is_causal, ctx.scale = is_causal, scale
        return ops.scaled_dot_product_attention(q, k, v, is_causal, scale)

    @staticmethod
    def backward(ctx, dout):
        q, k, v = ctx.saved_tensors
        scale = ctx.scale or q.shape[-1] ** -0.5
        s = (q @ k.transpose(-1, -2)) * scale
        if ctx.is_causal:
            lq, lk = q.shape[-2], k.shape[-2]
            mask = torch.ones(lq, lk, dtype=torch.bool).tril(lk - lq).to(q.device)
            s = s.masked_fill(~mask, float("-inf"))
        p = torch.softmax(s, -1)
        dv = p.transpose(-1, -2) @ dout
        dp = dout @ v.transpose(-1, -2)
        ds = p * (dp - (dp * p).sum(-1, keepdim=True)) * scale
        return ds @ k, ds.transpose(-1, -2) @ q, dv, None, None


def scaled_dot_product_attention(q, k, v, is_causal=False, scale=None):
    """softmax(scale q k^T [+ causal mask]) v for [batch, heads, length, dim]
    tensors, one device command forward; differentiable; scale defaults to
    1/sqrt(dim)."""
    scale = 0.0 if scale is None else scale
    if torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v)):
        return _Attention.apply(q, k, v, is_causal, scale)
    return ops.scaled_dot_product_attention(q, k, v, is_causal, scale)


def quantize_mx(x, fmt="mxfp8_e4m3"):
    """x (float, last dim a multiple of the block) -> (data, scales), uint8
    device tensors in the device's packed block format."""
    return ops.quantize_mx(x, fmt)


def dequantize_mx(data, scales, fmt, shape, dtype=torch.float32):
    """The inverse of quantize_mx: a dtype tensor of the given shape."""
    return ops.dequantize_mx(data, scales, fmt, list(shape), dtype)
