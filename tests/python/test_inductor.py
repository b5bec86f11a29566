# SPDX-License-Identifier: MIT
"""torch.compile with its default backend, Inductor, on maia tensors (in the
guest): Inductor generates Triton kernels, the maia Triton backend compiles
them and launches each as a KERNEL command (Documentation/python.rst,
"torch.compile"). Results against eager torch on the CPU in float64; the
launches the backend counted against the launches in Inductor's generated
code. What falls back (scans) and what is refused (atan) is checked on the
host, test_inductor_compile.py."""
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
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.language.extra import libdevice  # noqa: E402

import maia.torch  # noqa: E402
import tap  # noqa: E402
from tap import raises, test  # noqa: E402

print("# import torch, maia.torch: %.1f s" % (time.perf_counter() - t0), flush=True)
t0 = time.perf_counter()
import torch._inductor.compile_fx  # noqa: E402,F401
from torch._inductor.utils import run_and_get_code  # noqa: E402

print("# import torch._dynamo, torch._inductor: %.1f s" % (time.perf_counter() - t0), flush=True)
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
    generated code, seconds); STATE["fn"] the compiled function."""
    torch._dynamo.reset()
    before = launches()
    t = time.perf_counter()
    STATE["fn"] = torch.compile(fn)
    out, codes = run_and_get_code(STATE["fn"], *args)
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


def block(x, y, w, b, z, idx):
    """The pointwise and reduction graphs of the brief in one graph (one
    compile): SiLU-and-add, softmax, layer norm, RMSNorm, GELU with libdevice
    math, a softmax and layer norm over rows of 3000 (looped reductions),
    argmax (int64 stores) and an embedding lookup (int64 index loads)."""
    silu = x * torch.sigmoid(x) + y
    sm = torch.softmax(x, -1)
    ln = F.layer_norm(x, (x.shape[-1], ), w, b, 1e-5)
    rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    g = F.gelu(y, approximate="tanh") + torch.expm1(x * 0.1) + torch.log1p(y.abs()) + torch.tanh(x)
    big_sm = torch.softmax(z, -1)
    big_ln = F.layer_norm(z, (z.shape[-1], ))
    return silu, sm, ln, rms, g, big_sm, big_ln, x.argmax(-1), F.embedding(idx, x) * 2.0


NAMES = ("silu_add", "softmax", "layer_norm", "rms_norm", "gelu_tanh_expm1_log1p", "softmax_3000",
         "layer_norm_3000", "argmax", "embedding")
INPUTS = [torch.randn(37, 300), torch.randn(37, 300), torch.rand(300) + 0.5, torch.randn(300),
          torch.randn(4, 3000) * 3, torch.tensor([36, 0, 5, 5, 17, 2, 30, 1, 8, 21])]
STATE = {}


@test
def pointwise_and_reductions_on_the_device():
    args = [t.to(DEV) for t in INPUTS]
    out, coded, ran, code, secs = compiled_run(block, *args)
    STATE["code"] = code
    print("# compile and first run: %.1f s; %d Triton kernels launched (%d in the generated code)" %
          (secs, ran, coded))
    ref = block(*[t.double() if t.is_floating_point() else t for t in INPUTS])
    for name, o, r in zip(NAMES, out, ref):
        assert o.device == DEV, (name, o.device)
        if r.dtype == torch.int64:
            assert o.dtype == torch.int64 and torch.equal(o.cpu(), r), (name, o.cpu(), r)
            print("# %s: equal" % name)
        else:
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
    """The compiled graph runs again without a CPU fallback (strict mode):
    the same launches, no compile."""
    fn = STATE["fn"]
    args = [t.to(DEV) for t in INPUTS]
    t = time.perf_counter()
    before = launches()
    with maia.torch.strict():
        out = fn(*args)
        torch.maia.synchronize()
    per_call = launches() - before
    print("# second call: %.2f s" % (time.perf_counter() - t))
    assert per_call == len(_LAUNCH.findall(STATE["code"])), per_call
    check_close("silu_add (again)", out[0], block(*[t.double() if t.is_floating_point() else t
                                                    for t in INPUTS])[0])


@test
def launches_batched_into_one_job():
    """A compiled call's launches go as one job (maia.inductor.batched_call;
    counted by the backend, not timed) with flush_launches off; with it at
    1, the first launch submits the part so far (the device is idle) and the
    rest goes in at most one job per launch more: the same outputs bit for
    bit as with a job per launch every way."""
    import maia.inductor
    fn = STATE["fn"]
    args = [t.to(DEV) for t in INPUTS]
    outs, jobs = [], []
    early0 = maia.inductor.flush_launches
    try:
        for on, early in ((False, 0), (True, 0), (True, 1)):
            maia.inductor.batch_launches, maia.inductor.flush_launches = on, early
            torch.maia.synchronize()
            before, ran = maia.torch.jobs_submitted(), launches()
            outs.append(fn(*args))
            torch.maia.synchronize()
            jobs.append(maia.torch.jobs_submitted() - before)
            ran = launches() - ran
    finally:
        maia.inductor.batch_launches, maia.inductor.flush_launches = True, early0
    print("# jobs of one call: %d with a job per launch, %d batched, %d batched with flush_launches 1 "
          "(%d launches)" % (jobs[0], jobs[1], jobs[2], ran))
    assert jobs[0] >= ran >= 2 and jobs[1] == 1 and 2 <= jobs[2] <= ran + 1, (jobs, ran)
    for out in outs[1:]:
        for name, a, b in zip(NAMES, outs[0], out):
            assert torch.equal(a.cpu(), b.cpu()), name


@triton.jit
def _axpb(x_ptr, y_ptr, a, b, n, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = o < n
    tl.store(y_ptr + o, tl.load(x_ptr + o, mask=m) * a + b, mask=m)


@test
def c_runner_launches_as_the_python_launcher():
    """A kernel's C runner (maia_triton.driver.MaiaLauncher.runner, which
    Inductor's launchers call) writes what the Python launcher writes: one
    KERNEL command, one job outside a batch (counted by the backend),
    nothing for an empty grid; a CPU tensor or one of another device gets
    the Python launcher's error. The compiled graph's launchers call C
    runners."""
    from torch._inductor.codecache import PyCodeCache
    from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    n, block = 300, 128
    x = torch.randn(n)
    xd = x.to(DEV)
    y_py, y_c = torch.zeros(n).to(DEV), torch.zeros(n).to(DEV)
    ck = _axpb[(3, )](xd, y_py, 2.5, -1.0, n, BLOCK=block)
    run = ck.run.runner(ck.function)
    assert getattr(run, "__name__", "") == "maia_triton_runner", run
    head = (3, 1, 1, 0, ck.function, None, None, None, None)
    torch.maia.synchronize()
    jobs, ran = maia.torch.jobs_submitted(), launches()
    run(*head, xd, y_c, 2.5, -1.0, n, block)
    torch.maia.synchronize()
    assert (maia.torch.jobs_submitted() - jobs, launches() - ran) == (1, 1)
    assert torch.equal(y_c.cpu(), y_py.cpu())
    check_close("axpb, C runner", y_c, x.double() * 2.5 - 1.0)
    jobs, ran = maia.torch.jobs_submitted(), launches()
    run(0, 1, 1, *head[3:], xd, y_c, 2.5, -1.0, n, block)
    assert (maia.torch.jobs_submitted() - jobs, launches() - ran) == (0, 0)
    raises(ValueError, run, *head, x, y_c, 2.5, -1.0, n, block, match="Triton kernels on Maia take maia tensors")
    if torch.maia.device_count() > 1:
        raises(ValueError, run, *head, torch.zeros(n).to("maia:1"), y_c, 2.5, -1.0, n, block,
               match="is on maia:1 but the kernel runs on maia:0")
    autotuners = [v for m in PyCodeCache.modules if hasattr(m, "call") for v in vars(m).values()
                  if isinstance(v, CachingAutotuner) and v.launchers]
    assert autotuners
    for k in autotuners:
        runner = k.launchers[0].__globals__["runner"]
        assert getattr(runner, "__name__", "") == "maia_triton_runner", (k.fn.__name__, runner)


@test
def gemm_out_into_inductor_buffers():
    """Inductor's extern matrix products (mm, addmm, bmm with out=, on
    transposed operands as its wrapper passes weights): one GEMM into the
    buffer, no copy (counted by the backend), values against CPU float64;
    an out= sharing storage with an operand still gets the product (made
    aside and copied in)."""
    torch.manual_seed(3)
    a, w, bias, c = torch.randn(32, 64), torch.randn(48, 64), torch.randn(48), torch.randn(32, 48)
    q, k = torch.randn(8, 16, 16), torch.randn(8, 16, 16)
    ad, wd, bd, cd, qd, kd = (t.to(DEV) for t in (a, w, bias, c, q, k))
    outs = [torch.empty(32, 48, device=DEV) for _ in range(3)] + [torch.empty(8, 16, 16, device=DEV)]
    torch.maia.synchronize()
    maia.torch.reset_stats()
    with maia.torch.strict():
        torch.mm(ad, wd.t(), out=outs[0])
        torch.addmm(bd, ad, wd.t(), out=outs[1])
        torch.addmm(cd, ad, wd.t(), beta=0.5, alpha=2.0, out=outs[2])
        torch.bmm(qd, kd.transpose(1, 2), out=outs[3])
        torch.maia.synchronize()
    ops = maia.torch.device_stats()
    print("# device ops: %s" % ops)
    assert ops == {"mm": 1, "addmm": 2, "bmm": 1}, ops
    a, w, bias, c, q, k = (t.double() for t in (a, w, bias, c, q, k))
    refs = [a @ w.t(), bias + a @ w.t(), 0.5 * c + 2.0 * (a @ w.t()), torch.bmm(q, k.transpose(1, 2))]
    for name, o, r in zip(("mm", "addmm bias", "addmm beta alpha", "bmm"), outs, refs):
        check_close(name + " out=", o, r)
    x = torch.randn(32, 32)
    xd = x.to(DEV)
    maia.torch.reset_stats()
    torch.mm(xd, xd, out=xd)
    torch.maia.synchronize()
    assert maia.torch.device_stats() == {"mm": 1, "copy_": 1}, maia.torch.device_stats()
    check_close("mm out= aliasing its operands", xd, x.double() @ x.double())


# The maia libdevice against torch: (name, Triton expression of x, torch's of
# x in float64); x in [-3, 3), shifted or scaled where the domain asks.
LIBDEVICE = [
    ("exp", "libdevice.exp(x)", torch.exp),
    ("expm1", "libdevice.expm1(x * 1e-3)", lambda x: torch.expm1(x * 1e-3)),
    ("log", "libdevice.log(x + 3.5)", lambda x: torch.log(x + 3.5)),
    ("log10", "libdevice.log10(x + 3.5)", lambda x: torch.log10(x + 3.5)),
    ("log1p", "libdevice.log1p(x * 1e-3)", lambda x: torch.log1p(x * 1e-3)),
    ("rsqrt", "libdevice.rsqrt(x + 3.5)", lambda x: torch.rsqrt(x + 3.5)),
    ("tanh", "libdevice.tanh(x)", torch.tanh),
    ("tan", "libdevice.tan(x * 0.5)", lambda x: torch.tan(x * 0.5)),
    ("sinh", "libdevice.sinh(x)", torch.sinh),
    ("cosh", "libdevice.cosh(x)", torch.cosh),
    ("erfc", "libdevice.erfc(x)", torch.erfc),
    ("trunc", "libdevice.trunc(x * 2.0)", lambda x: torch.trunc(x * 2.0)),
    ("nearbyint", "libdevice.nearbyint(x * 2.0)", lambda x: torch.round(x * 2.0)),
    ("round", "libdevice.round(x * 2.0)", lambda x: torch.sign(x) * torch.floor((x * 2.0).abs() + 0.5)),
    ("signbit", "libdevice.signbit(x).to(tl.float32)", lambda x: torch.signbit(x).double()),
    ("copysign", "libdevice.copysign(x + 0.5, x)", lambda x: torch.copysign(x + 0.5, x)),
    ("fmod", "libdevice.fmod(x * 3.0, 1.25)", lambda x: torch.fmod(x * 3.0, 1.25)),
    ("hypot", "libdevice.hypot(x, 2.0)", lambda x: torch.hypot(x, torch.full_like(x, 2.0))),
    ("pow", "libdevice.pow(x, 3.0)", lambda x: torch.pow(x, 3.0)),
    ("pow_frac", "libdevice.pow(x + 3.5, x)", lambda x: torch.pow(x + 3.5, x)),
    ("asinh", "libdevice.asinh(x)", torch.asinh),
    ("acosh", "libdevice.acosh(tl.abs(x) + 1.0)", lambda x: torch.acosh(x.abs() + 1.0)),
    ("atanh", "libdevice.atanh(x * 0.3)", lambda x: torch.atanh(x * 0.3)),
    ("isnan", "libdevice.isnan(tl.sqrt(x)).to(tl.float32)", lambda x: torch.isnan(torch.sqrt(x)).double()),
    # exp overflows float32 past 88.7: the reference in float32 too.
    ("isinf", "libdevice.isinf(tl.exp(x * 40.0)).to(tl.float32)",
     lambda x: torch.isinf(torch.exp(x.float() * 40.0)).double()),
]
EXACT = ("trunc", "nearbyint", "round", "signbit", "isnan", "isinf")


def libdevice_kernel():
    """One kernel storing each LIBDEVICE expression to its row of y (written
    to a file: @triton.jit reads a kernel's source from its file)."""
    import importlib.util
    lines = ["import triton", "import triton.language as tl", "from triton.language.extra import libdevice",
             "", "", "@triton.jit", "def libdevice_all(x_ptr, y_ptr, BLOCK: tl.constexpr):",
             "    o = tl.arange(0, BLOCK)", "    x = tl.load(x_ptr + o)"]
    lines += ["    tl.store(y_ptr + %d * BLOCK + o, %s)" % (i, e) for i, (_, e, _) in enumerate(LIBDEVICE)]
    path = os.path.join(tempfile.mkdtemp(prefix="maia-libdevice-"), "libdevice_all.py")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    spec = importlib.util.spec_from_file_location("libdevice_all", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.libdevice_all


@test
def libdevice_on_the_device():
    """maia_triton's libdevice, as Inductor's kernels call it, against
    torch in float64: within 4e-6 of max(1, |reference|) (1e-5 for erfc and
    pow with a fractional exponent, several rounded steps each); the
    integer-valued ones and the predicates exactly."""
    n = 256
    x = torch.linspace(-3, 3, n + 1)[:n]
    x[7] = -0.0
    y = torch.empty(len(LIBDEVICE), n).to(DEV)
    libdevice_kernel()[(1, )](x.to(DEV), y, BLOCK=n)
    y = y.cpu().double()
    worst = []
    for i, (name, _, ref) in enumerate(LIBDEVICE):
        r = ref(x.double())
        err = ((y[i] - r).abs() / r.abs().clamp(min=1.0)).max().item()
        bound = 0.0 if name in EXACT else 1e-5 if name in ("pow_frac", "erfc") else 4e-6
        worst.append("%s %.1e" % (name, err))
        assert err <= bound, (name, err, bound, y[i][:8], r[:8])
    print("# libdevice vs torch float64 (max error / max(1, |ref|)): " + ", ".join(worst))


def scans(a, z, c):
    return (torch.cumsum(a, -1) * a + 1.0, torch.cumprod(a, -1), torch.cummax(a, -1)[0], torch.cummax(a, -1)[1],
            torch.logcumsumexp(a, -1), torch.cumsum(z, -1), torch.cumsum(c, 0))


@test
def scans_on_the_device():
    """cumsum, cumprod, cummax (values and indices), logcumsumexp along
    rows of 100 (one persistent kernel), cumsum along rows of 3000 (a looped
    scan carrying its sum from block to block) and along dimension 0, all
    as Triton kernels (tt.scan), no aten call, against CPU float64."""
    gen = torch.Generator().manual_seed(3)
    inputs = [1 + 0.1 * torch.randn(8, 100, generator=gen), torch.randn(4, 3000, generator=gen),
              torch.randn(100, 8, generator=gen)]
    out, coded, ran, code, secs = compiled_run(scans, *[t.to(DEV) for t in inputs])
    print("# scans: compile and first run %.1f s, %d Triton kernels" % (secs, ran))
    assert ran == coded and coded >= 2, (ran, coded)
    calls = [ln for ln in code.splitlines() if not ln.strip().startswith("#")]
    assert not [ln for ln in calls if "aten.cum" in ln or "aten.logcumsumexp" in ln], code
    ref = scans(*[t.double() for t in inputs])
    for name, o, r in zip(("cumsum", "cumprod", "cummax", "cummax indices", "logcumsumexp", "cumsum_3000",
                           "cumsum_dim0"), out, ref):
        if r.dtype == torch.int64:
            assert torch.equal(o.cpu(), r), (name, o.cpu(), r)
            print("# %s: equal" % name)
        else:
            check_close(name, o, r)


@triton.jit
def _affine(a1, b1, a2, b2):
    # x -> a1 x + b1, then x -> a2 x + b2: associative, not commutative.
    return a1 * a2, b1 * a2 + b2


@triton.jit
def affine_scans(a_ptr, b_ptr, out_ptr, R: tl.constexpr):
    o = tl.arange(0, 4)[:, None] * R + tl.arange(0, R)[None, :]
    a = tl.load(a_ptr + o)
    b = tl.load(b_ptr + o)
    _, fwd = tl.associative_scan((a, b), 1, _affine)
    _, rev = tl.associative_scan((a, b), 1, _affine, reverse=True)
    tl.store(out_ptr + o, fwd)
    tl.store(out_ptr + 4 * R + o, rev)
    tl.store(out_ptr + 8 * R + o, tl.cumsum(b, 0, reverse=True))


def affine_scan_ref(a, b):
    """Triton's scan of (a, b) along rows with _affine: the running
    composition, each step combine(accumulated, next)."""
    out = torch.empty_like(b)
    acc_a, acc_b = a[:, 0].clone(), b[:, 0].clone()
    out[:, 0] = acc_b
    for i in range(1, a.shape[1]):
        acc_a, acc_b = acc_a * a[:, i], acc_b * a[:, i] + b[:, i]
        out[:, i] = acc_b
    return out


@test
def scans_reversed_and_not_commutative():
    """tl.associative_scan with a combine that is not commutative (affine
    maps composed), forward and reverse=True (Triton's: the scan of the
    flipped row, flipped back), and a reversed cumsum along axis 0, in one
    Triton kernel on the device, against the same scans in float64."""
    gen = torch.Generator().manual_seed(4)
    r = 64
    a = 0.9 + 0.2 * torch.rand(4, r, generator=gen)
    b = torch.randn(4, r, generator=gen)
    out = torch.empty(12 * r).to(DEV)
    affine_scans[(1, )](a.to(DEV), b.to(DEV), out, R=r)
    out = out.cpu().double().view(3, 4, r)
    A, B = a.double(), b.double()
    refs = (affine_scan_ref(A, B), affine_scan_ref(A.flip(1), B.flip(1)).flip(1), B.flip(0).cumsum(0).flip(0))
    for name, got, ref in zip(("forward", "reverse", "cumsum reversed along axis 0"), out, refs):
        check_close("affine scan " + name, got, ref)


# Inverse trigonometric functions, lgamma, erfinv and the bit-level ones,
# composed of TVP instructions in maia_triton/libdevice.py (Cephes' atanf,
# asinf, acosf; Giles' erfinv; lgamma by reflection, shifts, a fit on
# [1.5, 2.5] and Stirling's series). Bounds in ULP of the float32 reference
# value (torch in float64 rounded), measured with numpy float32 first
# (2.1 to 3.2); lgamma's absolute near its zeros at 1 and 2.
ULP_BOUNDS = {"atan": 4, "asin": 4, "acos": 4, "atan2": 4, "erfinv": 6}
LGAMMA_BOUND = 2e-6            # of max(1, |lgamma(x)|)


@triton.jit
def inverse_math(u_ptr, w_ptr, v_ptr, g_ptr, n_ptr, s_ptr, y_ptr, i_ptr, N, BLOCK: tl.constexpr):
    o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    u = tl.load(u_ptr + o)          # [-1, 1] and beyond
    w = tl.load(w_ptr + o)          # wide, +-0, +-inf, NaN
    v = tl.load(v_ptr + o)          # atan2's x, nextafter's y
    g = tl.load(g_ptr + o)          # lgamma's domain
    n = tl.load(n_ptr + o)          # ldexp's exponents
    sub = tl.load(s_ptr + o)        # subnormals
    tl.store(y_ptr + o, libdevice.atan(w))
    tl.store(y_ptr + N + o, libdevice.asin(u))
    tl.store(y_ptr + 2 * N + o, libdevice.acos(u))
    tl.store(y_ptr + 3 * N + o, libdevice.atan2(w, v))
    tl.store(y_ptr + 4 * N + o, libdevice.erfinv(u))
    tl.store(y_ptr + 5 * N + o, libdevice.lgamma(g))
    tl.store(y_ptr + 6 * N + o, libdevice.nextafter(w, v))
    tl.store(y_ptr + 7 * N + o, libdevice.ldexp(u, n))
    tl.store(y_ptr + 8 * N + o, libdevice.ldexp(sub, n * 0 + 149))
    tl.store(i_ptr + o, libdevice.ilogb(w))
    tl.store(i_ptr + N + o, libdevice.ilogb(sub))


def ulp_error(got, ref):
    """|got - ref| in ULP of ref rounded to float32 (0 where both are the
    same infinity or both NaN; infinite where only one is NaN)."""
    r32 = ref.float()
    ulp = (torch.nextafter(r32.abs(), torch.tensor(float("inf"))) - r32.abs()).double()
    err = (got - ref).abs() / ulp
    err[(got == ref) | (torch.isnan(got) & torch.isnan(ref))] = 0.0
    err[torch.isnan(got) != torch.isnan(ref)] = float("inf")
    return err


@test
def libdevice_inverse_trig_lgamma_erfinv():
    """atan, asin, acos, atan2, erfinv within their ULP bounds, lgamma
    within LGAMMA_BOUND, over 4096 points each (ranges, signed zeros,
    infinities, NaN, |x| > 1); nextafter, ldexp (to subnormals and back) and
    ilogb exact."""
    n, block = 4096, 1024
    gen = torch.Generator().manual_seed(1)
    u = torch.linspace(-1, 1, n)
    u[:8] = torch.tensor([0.0, -0.0, 1.0, -1.0, 1.5, float("nan"), 1 - 2 ** -24, -0.5])
    u[8:1008] = 1 - torch.rand(1000, generator=gen).pow(8)        # close to 1: erfinv's tail
    w = torch.randn(n, generator=gen) * torch.exp(torch.rand(n, generator=gen) * 40 - 20)
    w[:8] = torch.tensor([0.0, -0.0, float("inf"), -float("inf"), float("nan"), 1.0, -1.0, 1e-30])
    v = torch.roll(w, 5)
    v[8:16] = torch.tensor([0.0, -0.0, 0.0, -0.0, float("inf"), -float("inf"), -1.0, 2.0])
    g = torch.linspace(-20, 40, n)
    g[:10] = torch.tensor([0.0, -0.0, 1.0, 2.0, -1.0, float("inf"), -float("inf"), float("nan"), 1e-30, 3e37])
    k = torch.arange(n)
    e = (k % 200 - 100).to(torch.int32)
    sub = ((k % 1000) + 1).float() * 2.0 ** -149
    y = torch.empty(9 * n).to(DEV)
    ints = torch.empty(2 * n, dtype=torch.int32).to(DEV)
    inverse_math[(n // block, )](u.to(DEV), w.to(DEV), v.to(DEV), g.to(DEV), e.to(DEV), sub.to(DEV),
                                 y, ints, n, BLOCK=block)
    y = y.cpu().double().view(9, n)
    ints = ints.cpu().view(2, n)
    U, W, V, G = (t.double() for t in (u, w, v, g))
    worst = []
    for i, (name, ref) in enumerate((("atan", torch.atan(W)), ("asin", torch.asin(U)), ("acos", torch.acos(U)),
                                     ("atan2", torch.atan2(W, V)), ("erfinv", torch.erfinv(U)))):
        errs = ulp_error(y[i], ref)
        err, at = errs.max().item(), errs.argmax().item()
        worst.append("%s %.2f ULP" % (name, err))
        assert err <= ULP_BOUNDS[name], (name, err, "at input", at, y[i][at].item(), ref[at].item())
    ref = torch.lgamma(G).float().double()          # overflows as binary32 does (3e37)
    both = (y[5] == ref) | (torch.isnan(y[5]) & torch.isnan(ref))
    errs = torch.where(both, 0.0, (y[5] - ref).abs() / ref.abs().clamp(min=1.0))
    err, at = errs.max().item(), errs.argmax().item()
    worst.append("lgamma %.1e" % err)
    assert err <= LGAMMA_BOUND, (err, "at", g[at].item(), y[5][at].item(), ref[at].item())
    print("# libdevice vs torch float64: " + ", ".join(worst))
    nxt = torch.nextafter(w, v)
    assert torch.equal(y[6].float().isnan(), nxt.isnan()), "nextafter NaN"
    ok = ~nxt.isnan()
    assert torch.equal(y[6].float()[ok], nxt[ok]), "nextafter"
    assert torch.equal(torch.signbit(y[6].float()[ok]), torch.signbit(nxt[ok])), "nextafter's zeros"
    want = (U * 2.0 ** e.double()).float().double()
    assert torch.equal(y[7].isnan(), want.isnan()) and torch.equal(y[7][~want.isnan()], want[~want.isnan()]), "ldexp"
    assert torch.equal(y[8], (k % 1000 + 1).double()), "ldexp of subnormals"
    mant, ex = torch.frexp(w)
    fin = torch.isfinite(w) & (w != 0)
    want = torch.where(fin, ex - 1, torch.where(torch.isinf(w), 2 ** 31 - 1, -2 ** 31)).to(torch.int32)
    assert torch.equal(ints[0], want), "ilogb"
    assert torch.equal(ints[1], (torch.frexp(sub)[1] - 1).to(torch.int32)), "ilogb of subnormals"


if __name__ == "__main__":
    tap.run("inductor")
