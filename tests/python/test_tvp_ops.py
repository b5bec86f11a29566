# SPDX-License-Identifier: MIT
"""The PyTorch backend's ops on TVP kernels (userspace/torch/tvp_ops.cpp) in
the guest, each against CPU torch, in strict mode (no CPU fallback
allowed): exp, log, sqrt, rsqrt, reciprocal, neg, abs, the comparisons, where,
clamp, the activations' backward, vector norms and clip_grad_norm_, fused
AdamW; sizes with a masked tail (not a multiple of 1024) and NaN, Inf, -0
among the inputs. Then the training example in strict mode with zero
fallbacks, and a device error forced by torch.ops.maia.tvp_inject_fault:
the op falls back to the CPU once, counted and logged, and strict mode
raises instead.

Bounds: the TVP's float ops are correctly rounded binary32, its
transcendentals within 1 ULP (Documentation/hw/tvp.rst); CPU torch's own
float32 results are within a few ULP of exact. So element-wise results
agree within 4 ULP (2^-21 relative) with special values exact; composite
formulas (the activations' backward, AdamW) within 1e-5 of the largest
value; bfloat16 results within one bfloat16 rounding (2^-7 relative)."""
import os
import tempfile

import torch

import maia.torch as mt
from tap import raises, run, test
from torch_checks import close

DEV = mt.device
torch.manual_seed(0)
N = 2500            # two full 1024-lane blocks and a masked tail of 452


def specials(n=N):
    """n float32 values: random over a wide range, with the special ones first."""
    x = torch.randn(n) * torch.exp(torch.randn(n) * 3)
    x[:8] = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-40,
                          -1e-40, 3.4e38])
    return x


def same(got, ref, rel, what):
    """Equal NaN positions, equal infinities, else |got - ref| <= rel |ref| (+ tiny)."""
    got = got.detach().cpu().double()
    ref = ref.detach().cpu().double()
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    nan = ref.isnan()
    assert torch.equal(got.isnan(), nan), "%s: NaN at %s" % (
        what, (got.isnan() != nan).nonzero()[:5].flatten().tolist())
    inf = ref.isinf()
    assert torch.equal(got[inf], ref[inf]), "%s: infinities differ" % what
    fin = ~nan & ~inf
    err = (got[fin] - ref[fin]).abs()
    bound = rel * ref[fin].abs() + 1e-44
    assert bool((err <= bound).all()), "%s: worst err/bound %.3g" % (
        what, float((err / bound).max()))


def fell_back():
    return sum(mt.fallback_stats().values())


@test
def unary_ops():
    x = specials()
    xp = x.abs()                # log, sqrt, rsqrt: also of positives only
    with mt.strict():
        for name in ("exp", "log", "sqrt", "rsqrt", "reciprocal", "neg", "abs"):
            f = getattr(torch, name)
            for inp in (x, xp):
                same(f(inp.to(DEV)), f(inp), 2.0 ** -21, name)
            d = xp.to(DEV)
            getattr(d, name + "_")()                        # in place
            same(d, f(xp), 2.0 ** -21, name + "_")
            out = torch.empty(0, device=DEV)
            f(xp.to(DEV), out=out)                           # out=
            same(out, f(xp), 2.0 ** -21, name + " out=")
        # strided input, bfloat16
        m = torch.randn(40, 70)
        same(torch.exp(m.to(DEV)[:, ::3]), torch.exp(m[:, ::3]), 2.0 ** -21, "exp strided")
        b = torch.randn(N).to(torch.bfloat16)
        same(torch.exp(b.to(DEV)), torch.exp(b), 2.0 ** -7, "exp bf16")
        assert torch.exp(b.to(DEV)).dtype == torch.bfloat16
        e = torch.empty(0, 3, device=DEV)
        assert torch.exp(e).shape == (0, 3)
        assert torch.equal(torch.isinf(x.to(DEV)).cpu(), torch.isinf(x))     # abs, eq
        assert torch.equal(torch.isnan(x.to(DEV)).cpu(), torch.isnan(x))     # ne
    assert mt.device_stats().get("exp"), mt.device_stats()


@test
def comparisons_and_where():
    a, b = specials(), specials()
    b[8:100] = a[8:100]                                     # some equal pairs
    ad, bd = a.to(DEV), b.to(DEV)
    with mt.strict():
        for name in ("eq", "ne", "lt", "le", "gt", "ge"):
            f = getattr(torch, name)
            got = f(ad, bd)
            assert got.dtype == torch.bool and torch.equal(got.cpu(), f(a, b)), name
            for s in (0.5, 0, -float("inf"), float("nan")):
                assert torch.equal(f(ad, s).cpu(), f(a, s)), (name, s)
            row = torch.randn(70)
            m = torch.randn(30, 70)
            assert torch.equal(f(m.to(DEV), row.to(DEV)).cpu(), f(m, row)), name + " broadcast"
        assert torch.equal((ad > 0).cpu(), a > 0)
        hb = torch.randn(N).to(torch.bfloat16)
        assert torch.equal((hb.to(DEV) > 0.3).cpu(), hb > 0.3), "bf16 vs a scalar"
        c = a > 0
        same(torch.where(c.to(DEV), ad, bd), torch.where(c, a, b), 0, "where")
        same(torch.where(c.to(DEV), ad, 0.0), torch.where(c, a, 0.0), 0, "where scalar")
        m = torch.randn(30, 70)
        cm = torch.randn(70) > 0
        same(torch.where(cm.to(DEV), m.to(DEV), -m.to(DEV)), torch.where(cm, m, -m), 0,
             "where broadcast")
        same(torch.clamp(ad, max=1.0), torch.clamp(a, max=1.0), 0, "clamp max")
        same(torch.clamp(ad, -2, 3), torch.clamp(a, -2, 3), 0, "clamp min max")
        same(torch.clamp(ad, min=0.5), torch.clamp(a, min=0.5), 0, "clamp min")


@test
def activation_backward():
    x = torch.randn(3, N) * 4
    x[0, :4] = torch.tensor([0.0, -0.0, 30.0, -30.0])
    g = torch.randn(3, N)
    with mt.strict():
        for name, f in (("relu", torch.relu),
                        ("gelu", torch.nn.functional.gelu),
                        ("gelu tanh", lambda t: torch.nn.functional.gelu(t, approximate="tanh")),
                        ("silu", torch.nn.functional.silu)):
            xc = x.clone().requires_grad_()
            f(xc).backward(g)
            xd = x.to(DEV).requires_grad_()
            f(xd).backward(g.to(DEV))
            close(xd.grad, xc.grad, 1e-5, name + " backward")
    ops = mt.device_stats()
    for op in ("threshold_backward", "gelu_backward", "gelu_tanh_backward", "silu_backward"):
        assert ops.get(op), (op, ops)


@test
def norms_and_clip():
    xs = [torch.randn(N), torch.randn(33, 65), torch.randn(1)]
    with mt.strict():
        for x in xs:
            same(torch.linalg.vector_norm(x.to(DEV)), torch.linalg.vector_norm(x), 1e-5, "norm")
        same(torch.linalg.vector_norm(xs[1].to(DEV), keepdim=True),
             torch.linalg.vector_norm(xs[1], keepdim=True), 1e-5, "norm keepdim")
        assert torch.isinf(torch.linalg.vector_norm(specials()[1:3].to(DEV))).item()
        m, row = torch.randn(30, 70), torch.randn(70)
        md = m.to(DEV)
        md.mul_(row.to(DEV))                                  # mul_ by a tensor: the engine's mul
        same(md, m * row, 0, "mul_ broadcast")
        md.mul_(torch.tensor(0.5).to(DEV))                    # by a device scalar: a TVP kernel
        same(md, m * row * 0.5, 0, "mul_ by a device scalar")
        for max_norm in (1.0, 1e3):
            grads_c = [x.clone() for x in xs]
            grads_d = [x.to(DEV) for x in xs]
            params_c = [torch.zeros_like(g, requires_grad=True) for g in grads_c]
            params_d = [torch.zeros_like(g, requires_grad=True) for g in grads_d]
            for p, g in zip(params_c + params_d, grads_c + grads_d):
                p.grad = g
            tc = torch.nn.utils.clip_grad_norm_(params_c, max_norm)
            td = torch.nn.utils.clip_grad_norm_(params_d, max_norm)
            same(td, tc, 1e-5, "total norm")
            for pc, pd in zip(params_c, params_d):
                same(pd.grad, pc.grad, 1e-5, "clipped grad")
    assert mt.device_stats().get("_foreach_norm"), mt.device_stats()


def adamw_run(steps=4, fused=True, **kw):
    torch.manual_seed(1)
    shapes = [(N,), (33, 65), (1,)]
    init = [torch.randn(s) for s in shapes]
    grads = [[torch.randn(s) for s in shapes] for _ in range(steps)]
    pc = [t.clone().requires_grad_() for t in init]
    pd = [t.to(DEV).requires_grad_() for t in init]
    oc = torch.optim.AdamW(pc, lr=0.01, **kw)
    od = torch.optim.AdamW(pd, lr=0.01, fused=fused, **kw)
    for step in grads:
        for p, g in zip(pc, step):
            p.grad = g.clone()
        for p, g in zip(pd, step):
            p.grad = g.to(DEV)
        oc.step()
        od.step()
    return pc, pd, oc, od


@test
def fused_adamw():
    for kw in ({}, {"weight_decay": 0.1, "amsgrad": True}, {"maximize": True, "betas": (0.8, 0.9)}):
        with mt.strict():
            pc, pd, oc, od = adamw_run(**kw)
        for a, b in zip(pc, pd):
            close(b, a, 1e-5, "AdamW %s" % kw)
        for a, b in zip(pc, pd):
            sa, sb = oc.state[a], od.state[b]
            close(sb["exp_avg"], sa["exp_avg"], 1e-5, "exp_avg")
            close(sb["exp_avg_sq"], sa["exp_avg_sq"], 1e-5, "exp_avg_sq")
            assert float(sb["step"]) == float(sa["step"]) == 4.0
    assert mt.device_stats().get("_fused_adamw_"), mt.device_stats()
    # torch's default AdamW (for maia its per-tensor loop): lerp_, addcmul_, sqrt, add_, addcdiv_
    for kw in ({}, {"maximize": True, "weight_decay": 0.1}):
        with mt.strict():
            pc, pd, _, _ = adamw_run(fused=False, **kw)
        for a, b in zip(pc, pd):
            close(b, a, 1e-5, "foreach AdamW %s" % kw)
    for op in ("lerp_.Scalar", "addcmul_", "addcdiv_", "sqrt", "add_"):
        assert mt.device_stats().get(op), (op, mt.device_stats())


@test
def example_training_strict():
    """The training example (AdamW, clip-norm) in strict mode: zero fallbacks."""
    import importlib.util
    import io
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "userspace",
                        "examples", "maia-torch-train.py")
    spec = importlib.util.spec_from_file_location("maia_torch_train", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = io.StringIO()
    r = example.main(steps=3, out=out, strict=True)
    for line in out.getvalue().splitlines():
        print("# " + line)
    assert r["fallback_ops"] == {}, r["fallback_ops"]
    for lc, ld in r["losses"]:
        assert abs(lc - ld) <= 1e-4 * max(1.0, abs(lc)), r["losses"]
    assert r["diff"] <= 1e-3 * max(1.0, r["scale"]), r
    for op in ("_fused_adamw_", "_foreach_add_", "_foreach_norm", "_foreach_mul_",
               "gelu_backward", "linalg_vector_norm", "clamp", "reciprocal"):
        assert r["device_ops"].get(op), (op, r["device_ops"])


def stderr_of(fn):
    """fn()'s result and what the process wrote on file descriptor 2 meanwhile."""
    with tempfile.TemporaryFile() as f:
        saved = os.dup(2)
        os.dup2(f.fileno(), 2)
        try:
            r = fn()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        f.seek(0)
        return r, f.read().decode()


@test
def device_error_falls_back_once():
    x = specials()
    xd = x.to(DEV)
    mt.reset_stats()
    torch.ops.maia.tvp_inject_fault("exp")
    y, err = stderr_of(lambda: torch.exp(xd))
    same(y, torch.exp(x), 2.0 ** -21, "exp after a device error")     # the CPU's
    assert mt.fallback_stats() == {"aten::exp": 1}, mt.fallback_stats()
    assert "aten::exp: TVP kernel exp.f32 failed on maia:0" in err and "kernel-watchdog" in err, err
    same(torch.exp(xd), torch.exp(x), 2.0 ** -21, "exp after the fallback")
    assert mt.fallback_stats() == {"aten::exp": 1} and mt.device_stats().get("exp") == 1
    # in place: the CPU's result lands in the tensor
    torch.ops.maia.tvp_inject_fault("sqrt")
    d = x.abs().to(DEV)
    stderr_of(d.sqrt_)
    same(d, x.abs().sqrt(), 2.0 ** -21, "sqrt_ after a device error")
    assert mt.fallback_stats() == {"aten::exp": 1, "aten::sqrt": 1}, mt.fallback_stats()
    # strict mode raises instead
    torch.ops.maia.tvp_inject_fault("exp")
    with mt.strict():
        raises(RuntimeError, torch.exp, xd, match="failed on the device")
        same(torch.exp(xd), torch.exp(x), 2.0 ** -21, "exp in strict mode after")
    # a fused AdamW step whose kernel fails: the CPU's step, the same result
    mt.reset_stats()
    torch.ops.maia.tvp_inject_fault("adamw")
    pc, pd, _, _ = stderr_of(adamw_run)[0]
    for a, b in zip(pc, pd):
        close(b, a, 1e-5, "AdamW with one failed step")
    assert mt.fallback_stats() == {"aten::_fused_adamw_": 1}, mt.fallback_stats()
    raises(RuntimeError, torch.ops.maia.tvp_inject_fault, "nope", match="no TVP kernel")
    assert fell_back() == 1


run("tvp ops")
