# SPDX-License-Identifier: MIT
"""torch.compile with its default backend, Inductor, on maia tensors (in the
guest): Inductor generates Triton kernels, the maia Triton backend compiles
them and launches each as a KERNEL command (Documentation/python.rst,
"torch.compile"). Results against eager torch on the CPU in float64; the
launches the backend counted against the launches in Inductor's generated
code."""
import os
import re
import tempfile
import time

# Fresh caches: every graph and kernel of this run is compiled cold.
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="maia-inductor-cache-")
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="maia-triton-cache-"))
t0 = time.perf_counter()
import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import maia.torch  # noqa: E402
import tap  # noqa: E402
from tap import raises, test  # noqa: E402

print("# import torch, maia.torch: %.1f s" % (time.perf_counter() - t0), flush=True)
DEV = torch.device("maia", 0)
torch.manual_seed(0)
# Relative to the largest magnitude of each reference output: the TVP's
# exp, log, rsqrt and tanh are within a few ULP of binary32, sums are
# reordered (blocks of up to 1024 lanes), and the CPU reference is float64.
BOUND = 2e-5
_LAUNCH = re.compile(r"^\s+triton_\w+\.run\(", re.M)


def launches():
    return maia.torch.device_stats().get("maia::triton_launch", 0)


def compiled_run(fn, *args):
    """fn under torch.compile (Inductor), run once: (outputs, the Triton
    launches in the generated code, the launches the backend counted, the
    generated code, seconds)."""
    from torch._inductor.utils import run_and_get_code
    torch._dynamo.reset()
    before = launches()
    t = time.perf_counter()
    out, codes = run_and_get_code(torch.compile(fn), *args)
    torch.maia.synchronize()
    secs = time.perf_counter() - t
    code = "\n".join(codes)
    return out, len(_LAUNCH.findall(code)), launches() - before, code, secs


def check_close(name, got, ref):
    got = got.cpu().double()
    scale = max(1.0, ref.abs().max().item())
    err = (got - ref).abs().max().item()
    print("# %s: max |compiled - CPU float64| = %.2e (bound %.0e x %.3g)" % (name, err, BOUND, scale))
    assert got.shape == ref.shape, (name, got.shape, ref.shape)
    assert err <= BOUND * scale, (name, err, scale)


def block(x, y, w, b, z):
    """The pointwise and reduction graphs of the brief in one graph (one
    compile): SiLU-and-add, softmax, layer norm, RMSNorm, GELU with libdevice
    math, and a softmax and layer norm over rows of 3000 (looped reductions)."""
    silu = x * torch.sigmoid(x) + y
    sm = torch.softmax(x, -1)
    ln = F.layer_norm(x, (x.shape[-1], ), w, b, 1e-5)
    rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    g = F.gelu(y, approximate="tanh") + torch.expm1(x * 0.1) + torch.log1p(y.abs()) + torch.tanh(x)
    big_sm = torch.softmax(z, -1)
    big_ln = F.layer_norm(z, (z.shape[-1], ))
    return silu, sm, ln, rms, g, big_sm, big_ln


NAMES = ("silu_add", "softmax", "layer_norm", "rms_norm", "gelu_tanh_expm1_log1p", "softmax_3000",
         "layer_norm_3000")
INPUTS = [torch.randn(37, 300), torch.randn(37, 300), torch.rand(300) + 0.5, torch.randn(300),
          torch.randn(4, 3000) * 3]
STATE = {}


@test
def pointwise_and_reductions_on_the_device():
    args = [t.to(DEV) for t in INPUTS]
    out, coded, ran, code, secs = compiled_run(block, *args)
    STATE["code"] = code
    print("# compile and first run: %.1f s; %d Triton kernels launched (%d in the generated code)" %
          (secs, ran, coded))
    ref = block(*[t.double() for t in INPUTS])
    for name, o, r in zip(NAMES, out, ref):
        assert o.device == DEV, (name, o.device)
        check_close(name, o, r)
    assert coded >= 2, code
    assert ran == coded, (ran, coded)


@test
def registered_with_inductor():
    from torch._dynamo.device_interface import get_interface_for_device
    from torch._inductor.codegen.common import get_scheduling_for_device
    import maia.inductor
    iface = get_interface_for_device("maia")
    assert iface.device_count() == torch.maia.device_count()
    assert iface.get_compute_capability() == "tvp1.9"
    assert get_scheduling_for_device("maia") is maia.inductor.Scheduling
    code = STATE.get("code", "")
    assert "get_raw_stream" in code and "device='maia'" in code, code[:2000]


@test
def compiled_again_strict_no_recompile():
    """The compiled graph runs again without a CPU fallback (strict mode),
    its kernels from the in-memory cache: launches only, no compile."""
    fn = torch.compile(block)
    args = [t.to(DEV) for t in INPUTS]
    fn(*args)                                   # compiles (Inductor's FX graph cache: warm)
    torch.maia.synchronize()
    before = launches()
    with maia.torch.strict():
        out = fn(*[a * 1.0 for a in args])
        torch.maia.synchronize()
    per_call = launches() - before
    assert per_call == len(_LAUNCH.findall(STATE["code"])), per_call
    check_close("silu_add (again)", out[0], block(*[t.double() for t in INPUTS])[0])


@test
def scan_falls_back_to_aten():
    """No scans in the maia lowering: Inductor calls aten.cumsum (the maia
    backend's op or its CPU fallback) and fuses the rest."""
    x, y = torch.randn(8, 100), torch.randn(8, 100)
    out, coded, ran, code, _ = compiled_run(lambda a, b: torch.cumsum(a, -1) * b + 1.0, x.to(DEV), y.to(DEV))
    assert "aten.cumsum" in code, code
    assert ran == coded >= 1, (ran, coded)
    check_close("cumsum", out, torch.cumsum(x.double(), -1) * y.double() + 1.0)


@test
def unsupported_math_is_a_clear_error():
    """atan has no TVP lowering: the kernel fails to compile with the name
    and the generated kernel's line."""
    x = torch.randn(64).to(DEV)
    e = raises(Exception, torch.compile(lambda a: torch.atan(a) + 1.0), x,
               match="libdevice.atan is not supported by the maia backend")
    print("# %s" % str(e).strip().splitlines()[0][:200])


if __name__ == "__main__":
    tap.run("inductor")
