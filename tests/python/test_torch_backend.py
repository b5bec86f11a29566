# SPDX-License-Identifier: MIT
"""The Maia PyTorch backend in the guest (run-guest --host-root): each
on-device op against CPU torch in float64 within the bounds stated below,
in strict mode (no CPU fallback allowed); .to() round trips; a model's
forward, backward and optimizer step; the fallback counted; BF16; MX
quantize/dequantize; bad inputs raising clear errors.

Bounds: the device computes in FP32 with FP32 accumulation and rounds once
on store (Documentation/tensor-engine.rst). GEMM-like results: |err| <=
K * 2^-23 * (|A| |B|) elementwise; elementwise and normalisation ops:
1e-5 relative to the largest value for FP32; BF16 outputs add one BF16
rounding (2^-8 relative)."""
import math

import torch

import maia
import maia.torch as mt
from tap import raises, run, test

DEV = mt.device
torch.manual_seed(0)


def close(got, ref, bound, what):
    got = got.detach().cpu().double()
    ref = ref.detach().cpu().double()
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    err = (got - ref).abs()
    ok = err <= bound
    assert bool(ok.all()), "%s: max |err| %.3g, worst err/bound %.3g" % (
        what, float(err.max()), float((err / bound).max()))


def gemm_bound(a, b):
    k = a.shape[-1]
    return k * 2.0 ** -23 * (a.double().abs() @ b.double().abs()) + 1e-30


def fallbacks(op):
    """Times aten::op (any overload: the fallback often runs the .out form) fell back."""
    return sum(n for name, n in mt.fallback_stats().items()
               if name == op or name.startswith(op + "."))


def rand(*shape, dtype=torch.float32):
    return torch.randn(*shape, dtype=torch.float32).to(dtype)


@test
def to_round_trips():
    for dtype in (torch.float32, torch.bfloat16, torch.float16, torch.int64, torch.int32,
                  torch.uint8, torch.bool, torch.float64):
        x = (torch.randn(5, 7) * 10).to(dtype)
        d = x.to(DEV)
        assert d.device == DEV and d.dtype == dtype
        assert torch.equal(d.cpu(), x), dtype
    x = torch.randn(6, 10)
    assert torch.equal(x.to(DEV).t().cpu(), x.t())                 # strided download
    assert torch.equal(x.to(DEV)[1::2, 3:].contiguous().cpu(), x[1::2, 3:])
    d = torch.zeros(10, 6, device=DEV)
    d.t().copy_(x)                                                  # strided upload
    assert torch.equal(d.cpu(), x.t())
    assert torch.equal(x.to(DEV).to(torch.bfloat16).cpu(), x.to(torch.bfloat16))
    assert torch.equal(x.to(DEV).to(torch.bfloat16).to(torch.float32).cpu(),
                       x.to(torch.bfloat16).float())
    big32 = (torch.arange(12, dtype=torch.int32) * 1000003 + 2**30).reshape(3, 4)
    assert torch.equal(big32.to(DEV).t().cpu(), big32.t())          # int32 past 2^24, bit exact
    assert torch.equal(big32.to(DEV).t().contiguous().cpu(), big32.t().contiguous())
    d32 = torch.zeros(4, 3, dtype=torch.int32, device=DEV)
    d32.t().copy_(big32)
    assert torch.equal(d32.cpu(), big32.t())
    big = torch.randn(3, 1 << 20)                                   # bigger than staging
    assert torch.equal(big.to(DEV).cpu(), big)
    assert torch.equal(torch.empty(0, 3, device=DEV).cpu(), torch.empty(0, 3))
    assert float(torch.tensor(2.5).to(DEV).item()) == 2.5


@test
def torch2_device_registration():
    """torch 2's PrivateUse1 plumbing: the backend is named "maia" (the
    string reaches this backend, not torch's own MAIA device type), torch.maia
    is its device module, the device guard and hooks answer for device 0,
    Allocator::clone and storage resize copy on the device."""
    assert DEV.type == "maia" and DEV.index == 0 and str(DEV) == "maia:0", DEV
    assert torch.device("maia:0") == DEV == torch.device("privateuseone", 0)
    assert torch.maia.is_available() and torch.maia.device_count() == maia.device_count() >= 1
    x = torch.arange(6, dtype=torch.float32)
    d = x.to("maia")
    assert d.device == DEV and d.device.type == "maia" and torch.equal(d.cpu(), x)
    with torch.device("maia"):                                      # a device context
        assert torch.empty(2).device == DEV
    assert torch.equal(d.clone().cpu(), x)
    s = d.untyped_storage()
    s.resize_(64)                                                   # PrivateUse1 hooks
    assert s.nbytes() == 64 and s.device == DEV
    assert torch.equal(d.cpu(), x)                                  # kept its bytes
    y = torch.randn(4, 4, requires_grad=True)                       # autograd engine on
    (y.to(DEV) * 2.0).sum().backward()                              # the device guard
    assert torch.equal(y.grad, torch.full((4, 4), 2.0))


def device_commands():
    """Commands each Maia device has run (sysfs telemetry, by PCI address)."""
    return [maia.telemetry_read(pci)["commands"] for _, pci in maia.device_list()]


@test
def two_devices():
    """maia:0 and maia:1 from one process (the suite's guest has 2 devices):
    tensors on each, ops on a tensor run on its own device (the devices'
    command counters say which), moves between devices, the current-device
    guard (torch.maia.device, set_device, a device context), a model on
    maia:1 against the CPU."""
    assert torch.maia.device_count() == 2, torch.maia.device_count()
    d0, d1 = torch.device("maia:0"), torch.device("maia:1")
    a, b = rand(33, 20), rand(20, 17)
    x0, x1 = a.to(d0), a.to(d1)
    assert x0.device == d0 and x1.device == d1
    before = device_commands()
    with mt.strict():
        y1 = x1 @ b.to(d1)
    after = device_commands()
    assert y1.device == d1
    assert after[1] > before[1] and after[0] == before[0], (before, after)
    close(y1, a.double() @ b.double(), gemm_bound(a, b), "mm on maia:1")
    # Moves: 1 -> 0 -> 1, and copy_ between devices.
    y0 = y1.to(d0)
    assert y0.device == d0 and torch.equal(y0.cpu(), y1.cpu())
    z = torch.empty(33, 17, device=d1)
    z.copy_(y0 * 2.0)
    assert z.device == d1 and torch.equal(z.cpu(), y1.cpu() * 2.0)
    # The current device: the default for "maia" without an index.
    assert torch.maia.current_device() == 0
    assert torch.empty(2, device="maia").device == d0
    with torch.maia.device(1):
        assert torch.maia.current_device() == 1
        assert torch.empty(2, device="maia").device == d1
        assert torch.zeros(3, device="maia").device == d1
    assert torch.maia.current_device() == 0
    torch.maia.set_device("maia:1")
    try:
        assert torch.ones(2, device="maia").device == d1
    finally:
        torch.maia.set_device(0)
    assert torch.randn(3, device="maia:1").device == d1           # a factory via the fallback
    torch.maia.synchronize()
    torch.maia.synchronize("maia:1")
    # A model on maia:1, its gradients there too.
    torch.manual_seed(5)
    m = torch.nn.Sequential(torch.nn.Linear(20, 16), torch.nn.GELU(), torch.nn.Linear(16, 4))
    ref = m(a)
    ref.sum().backward()
    gref = m[0].weight.grad.clone()
    m.zero_grad()
    m.to(d1)
    out = m(x1)
    out.sum().backward()
    assert out.device == d1 and m[0].weight.grad.device == d1
    close(out, ref, 1e-5, "model on maia:1")
    close(m[0].weight.grad, gref, 1e-4, "gradient on maia:1")
    raises(RuntimeError, torch.empty, 2, device="maia:7", match="maia:7")


@test
def asynchronous_ops_streams_events():
    """Ops enqueue on the device's stream and return: a chain of device ops
    makes the host wait for nothing (the backend's count of host waits does
    not move); reading a value waits. Events and synchronize as in
    torch.cuda; the values are the CPU's."""
    a, w = rand(64, 128), rand(128, 128)
    x, wd = a.to(DEV), w.to(DEV)
    torch.maia.synchronize()
    before = mt.ops.host_waits()
    with mt.strict():
        y = x
        for _ in range(5):
            y = torch.relu(y @ wd) * 0.05
    assert mt.ops.host_waits() == before, (before, mt.ops.host_waits())
    ev = torch.maia.Event()
    ev.record()
    ev.synchronize()
    assert ev.query()
    assert mt.ops.host_waits() > before
    ref = a.double()
    for _ in range(5):
        ref = torch.relu(ref @ w.double()) * 0.05
    close(y, ref, 1e-4 * float(ref.abs().max()) + 1e-30, "five enqueued GEMMs")
    s = torch.maia.current_stream()
    assert s.device == DEV
    z = x @ wd
    torch.maia.synchronize()
    assert s.query() and torch.maia.current_stream(1).device == torch.device("maia:1")
    before = mt.ops.host_waits()
    float(z[0, 0])                                                  # a read waits
    assert mt.ops.host_waits() > before


@test
def strict_gemms():
    with mt.strict():
        for (m, k, n) in ((17, 33, 9), (64, 128, 32)):
            a, b, c = rand(m, k), rand(k, n), rand(n)
            close(a.to(DEV) @ b.to(DEV), a.double() @ b.double(), gemm_bound(a, b), "mm")
            close(torch.addmm(c.to(DEV), a.to(DEV), b.to(DEV), beta=0.5, alpha=2.0),
                  0.5 * c.double() + 2.0 * (a.double() @ b.double()),
                  2 * gemm_bound(a, b) + 1e-6, "addmm")
            bt = rand(n, k)
            close(a.to(DEV) @ bt.to(DEV).t(), a.double() @ bt.double().t(),
                  gemm_bound(a, bt.t()), "mm, transposed B (strides)")
        a, b = rand(3, 16, 24), rand(3, 24, 8)
        close(torch.bmm(a.to(DEV), b.to(DEV)), torch.bmm(a.double(), b.double()),
              gemm_bound(a, b), "bmm")
        x, w, bias = rand(4, 5, 32), rand(16, 32), rand(16)
        close(torch.nn.functional.linear(x.to(DEV), w.to(DEV), bias.to(DEV)),
              torch.nn.functional.linear(x.double(), w.double(), bias.double()),
              gemm_bound(x, w.t()) + 1e-6, "linear (rank 3 input)")


@test
def strict_elementwise():
    x, y = rand(4, 8, 16), rand(8, 1)
    dx, dy = x.to(DEV), y.to(DEV)
    tol = 1e-6 * 8
    with mt.strict():
        close(dx + dy, x.double() + y.double(), tol, "add broadcast")
        close(dx - dy, x.double() - y.double(), tol, "sub")
        close(torch.add(dx, dy, alpha=3.0), x.double() + 3 * y.double(), tol * 4, "add alpha")
        close(dx * dy, x.double() * y.double(), tol, "mul")
        close(dx * 2.5 + 1.0, x.double() * 2.5 + 1.0, tol * 4, "scalar mul/add")
        close(dx / 4.0, x.double() / 4.0, tol, "scalar div")
        close(1.0 - dx, 1.0 - x.double(), tol * 4, "scalar minus tensor")
        close(2.0 + dx, 2.0 + x.double(), tol * 4, "scalar plus tensor")
        close(torch.relu(dx), torch.relu(x.double()), 0, "relu")
        close(torch.nn.functional.silu(dx), torch.nn.functional.silu(x.double()), 1e-5, "silu")
        close(torch.nn.functional.gelu(dx), torch.nn.functional.gelu(x.double()), 1e-5, "gelu")
        close(torch.nn.functional.gelu(dx, approximate="tanh"),
              torch.nn.functional.gelu(x.double(), approximate="tanh"), 1e-5, "gelu tanh")
        acc = dx.clone()
        acc.add_(dx, alpha=-0.5)
        close(acc, x.double() * 0.5, tol, "add_")


@test
def strict_softmax_norms_reductions():
    x = rand(6, 5, 64) * 3
    dx = x.to(DEV)
    with mt.strict():
        close(torch.softmax(dx, -1), torch.softmax(x.double(), -1), 1e-6, "softmax")
        close(torch.log_softmax(dx, -1), torch.log_softmax(x.double(), -1), 1e-5, "log_softmax")
        ln = torch.nn.LayerNorm(64)
        torch.nn.init.normal_(ln.weight)
        torch.nn.init.normal_(ln.bias)
        ref = torch.nn.functional.layer_norm(x.double(), (64,), ln.weight.double(),
                                             ln.bias.double())
        close(ln.to(DEV)(dx), ref, 1e-4, "layer_norm")
        # The saved statistics backward uses: per-row mean and 1/sqrt(var + eps).
        _, mean, rstd = torch.native_layer_norm(dx, (64,), None, None, 1e-5)
        x64 = x.double()
        close(mean, x64.mean(-1, keepdim=True), 1e-6, "layer_norm mean")
        close(rstd, 1 / torch.sqrt(x64.var(-1, correction=0, keepdim=True) + 1e-5),
              1e-5 * (1 / torch.sqrt(x64.var(-1, correction=0, keepdim=True) + 1e-5)),
              "layer_norm rstd")
        close(dx.sum(), x.double().sum(), 6 * 5 * 64 * 2.0 ** -23 * x.abs().sum(), "sum")
        close(dx.sum(1), x.double().sum(1), 1e-5, "sum dim")
        close(dx.mean((0, 2), keepdim=True), x.double().mean((0, 2), keepdim=True), 1e-6, "mean")
        g = rand(64)
        rms = x.double() / torch.sqrt((x.double() ** 2).mean(-1, keepdim=True) + 1e-6) * g.double()
        close(mt.rms_norm(dx, g.to(DEV), 1e-6), rms, 1e-4, "rms_norm")
        q, k, v = rand(2, 3, 10, 16), rand(2, 3, 12, 16), rand(2, 3, 12, 8)
        for causal in (False, True):
            s = q.double() @ k.double().transpose(-1, -2) / math.sqrt(16)
            if causal:
                mask = torch.ones(10, 12, dtype=torch.bool).tril(12 - 10)
                s = s.masked_fill(~mask, float("-inf"))
            ref = torch.softmax(s, -1) @ v.double()
            close(mt.scaled_dot_product_attention(q.to(DEV), k.to(DEV), v.to(DEV), causal),
                  ref, 1e-5, "attention causal=%s" % causal)


@test
def strict_composites_and_their_backward():
    x, w, t = rand(5, 3, 16), rand(5, 3, 16), rand(5, 3, 16)
    xr = x.double().requires_grad_()
    (torch.softmax(xr, -1) * w.double()).sum().backward()
    xd = x.to(DEV).requires_grad_()
    mt.reset_stats()
    with mt.strict():
        (torch.softmax(xd, -1) * w.to(DEV)).sum().backward()
    close(xd.grad, xr.grad, 1e-5, "softmax backward")
    for reduction in ("mean", "sum", "none"):
        xr = x.double().requires_grad_()
        lr = torch.nn.functional.mse_loss(xr, t.double(), reduction=reduction)
        lr.sum().backward()
        xd = x.to(DEV).requires_grad_()
        with mt.strict():
            ld = torch.nn.functional.mse_loss(xd, t.to(DEV), reduction=reduction)
            ld.sum().backward()
        close(ld, lr, 1e-5 * max(1.0, float(lr.detach().abs().max())), "mse_loss " + reduction)
        close(xd.grad, xr.grad, 1e-5, "mse_loss backward " + reduction)
    ln = torch.nn.LayerNorm(16)
    torch.nn.init.normal_(ln.weight)
    torch.nn.init.normal_(ln.bias)
    xr = x.double().requires_grad_()
    lnr = torch.nn.LayerNorm(16).double()
    lnr.load_state_dict(ln.state_dict())
    (lnr(xr) * w.double()).sum().backward()
    xd = x.to(DEV).requires_grad_()
    lnd = ln.to(DEV)
    with mt.strict():
        (lnd(xd) * w.to(DEV)).sum().backward()
    close(xd.grad, xr.grad, 1e-4, "layer_norm dx")
    close(lnd.weight.grad, lnr.weight.grad, 1e-4, "layer_norm dweight")
    close(lnd.bias.grad, lnr.bias.grad, 1e-5, "layer_norm dbias")
    a, b, c = rand(2, 3, 4), rand(2, 5, 4), torch.empty(0)
    with mt.strict():
        got = torch.cat([a.to(DEV), b.to(DEV), c.to(DEV)], 1)
        got_l = torch.cat([a.long().to(DEV), b.long().to(DEV)], -2)
    assert torch.equal(got.cpu(), torch.cat([a, b], 1))
    assert torch.equal(got_l.cpu(), torch.cat([a.long(), b.long()], 1))
    assert mt.fallback_stats() == {}, mt.fallback_stats()
    ran = mt.device_stats()
    for op in ("_softmax_backward_data", "mse_loss", "mse_loss_backward", "cat",
               "native_layer_norm_backward"):
        assert ran.get(op), (op, ran)


@test
def linear_forward_backward_strict():
    lin = torch.nn.Linear(32, 16)
    dlin = torch.nn.Linear(32, 16).to(DEV)
    dlin.load_state_dict(lin.state_dict())
    x = rand(8, 32)
    y = lin(x)
    y.sum().backward()
    mt.reset_stats()
    with mt.strict():
        dy = dlin(x.to(DEV))
        dy.sum().backward()
    close(dy, y, gemm_bound(x, lin.weight.t()) + 1e-6, "linear forward")
    close(dlin.weight.grad, lin.weight.grad, 1e-5, "weight grad")
    close(dlin.bias.grad, lin.bias.grad, 1e-5, "bias grad")
    assert mt.fallback_stats() == {}, mt.fallback_stats()
    ran = mt.device_stats()
    assert ran.get("addmm") and ran.get("mm"), ran


@test
def linear_without_autograd():
    """No gradient to record (no_grad, inference_mode, inputs that need none):
    nn.Linear is one GEMM with the bias as its epilogue (fastpath.cpp), counted
    as "linear"; with a gradient to record it is torch's composite (addmm)."""
    lin = torch.nn.Linear(64, 48)
    dlin = torch.nn.Linear(64, 48).to(DEV)
    dlin.load_state_dict(lin.state_dict())
    w, b = lin.weight.detach(), lin.bias.detach()
    # 2-D, rank 3, 4 and 5 (flattened), a transposed 2-D input (strides (1, 9))
    for x in (rand(4, 64), rand(3, 5, 64), rand(2, 3, 2, 64), rand(2, 1, 2, 3, 64), rand(64, 9).t()):
        ref = x.double() @ w.double().t() + b.double()
        bound = gemm_bound(x, w.t()) + 1e-6
        dx = x.to(DEV)
        for mode in (torch.no_grad, torch.inference_mode):
            mt.reset_stats()
            with mt.strict(), mode():
                got = dlin(dx)
            close(got, ref, bound, "linear %s under %s" % (tuple(x.shape), mode.__name__))
            assert mt.device_stats() == {"linear": 1}, mt.device_stats()
    f = torch.nn.functional.linear
    x = rand(6, 64)
    dx, dw = x.to(DEV), w.to(DEV)
    mt.reset_stats()
    with mt.strict(), torch.no_grad():
        close(f(dx, dw), x.double() @ w.double().t(), gemm_bound(x, w.t()), "linear, no bias")
    assert mt.device_stats() == {"linear": 1}, mt.device_stats()
    # a non-contiguous rank-3 input: the composite (its reshape copies on the device)
    x = rand(5, 64, 3).permute(0, 2, 1)
    dx, db = x.to(DEV), b.to(DEV)
    assert not dx.is_contiguous()
    mt.reset_stats()
    with mt.strict(), torch.no_grad():
        close(f(dx, dw, db), x.double() @ w.double().t() + b.double(),
              gemm_bound(x, w.t()) + 1e-6, "linear, permuted rank 3")
    assert "linear" not in mt.device_stats(), mt.device_stats()
    # per call one job and no host wait; synchronize waits once per job
    dx = rand(4, 64).to(DEV)
    torch.maia.synchronize()
    mt.reset_stats()
    jobs, waits = mt.jobs_submitted(), mt.host_waits()
    with torch.no_grad():
        for _ in range(10):
            dlin(dx)
        assert (mt.jobs_submitted() - jobs, mt.host_waits() - waits) == (10, 0)
        torch.maia.synchronize()
    assert mt.host_waits() - waits == 10
    assert mt.device_stats() == {"linear": 10}, mt.device_stats()
    # a forward-mode gradient, even without grad mode: torch's composite carries it
    import torch.autograd.forward_ad as fwad
    x, t = rand(4, 64), rand(4, 64)
    mt.reset_stats()
    with torch.no_grad(), fwad.dual_level():
        y = f(fwad.make_dual(x.to(DEV), t.to(DEV)), dw, db)
        primal, tangent = fwad.unpack_dual(y)
        assert tangent is not None
    assert "linear" not in mt.device_stats(), mt.device_stats()
    close(primal, x.double() @ w.double().t() + b.double(), gemm_bound(x, w.t()) + 1e-6,
          "linear with a tangent")
    close(tangent, t.double() @ w.double().t(), gemm_bound(t, w.t()), "linear's tangent")
    # a gradient to record: autograd's graph through addmm, as before
    dx = rand(4, 64).to(DEV)
    mt.reset_stats()
    y = dlin(dx)
    assert y.requires_grad and y.grad_fn is not None
    assert mt.device_stats() == {"addmm": 1}, mt.device_stats()


@test
def model_training_step_with_fallback():
    torch.manual_seed(1)
    cpu_model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                    torch.nn.LayerNorm(32), torch.nn.Linear(32, 4))
    dev_model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.ReLU(),
                                    torch.nn.LayerNorm(32), torch.nn.Linear(32, 4))
    dev_model.load_state_dict(cpu_model.state_dict())
    dev_model.to(DEV)
    x, t = rand(10, 16), rand(10, 4)
    opt_c = torch.optim.SGD(cpu_model.parameters(), lr=0.1)
    opt_d = torch.optim.SGD(dev_model.parameters(), lr=0.1)
    mt.reset_stats()
    for step in range(3):
        for model, opt, xx, tt in ((cpu_model, opt_c, x, t), (dev_model, opt_d, x.to(DEV), t.to(DEV))):
            opt.zero_grad()
            loss = torch.nn.functional.mse_loss(model(xx), tt)
            loss.backward()
            opt.step()
            if model is cpu_model:
                lc = loss.item()
            else:
                ld = loss.item()
        assert abs(lc - ld) <= 1e-4 * max(1.0, abs(lc)), (step, lc, ld)
    for (n, pc), pd in zip(cpu_model.named_parameters(), dev_model.parameters()):
        close(pd, pc, 1e-4, "parameter " + n + " after 3 steps")
    fb = mt.fallback_stats()
    # Backward of ReLU (a TVP kernel), LayerNorm and MSE run on the device.
    assert fallbacks("aten::threshold_backward") == 0, fb
    assert mt.device_stats().get("threshold_backward", 0) >= 3, mt.device_stats()
    assert fallbacks("aten::native_layer_norm_backward") == 0, fb
    assert fallbacks("aten::mse_loss") == 0, fb
    assert mt.device_stats().get("addmm", 0) >= 6


@test
def rms_norm_and_attention_autograd():
    x, g = rand(6, 32), rand(32)
    q, k, v = rand(1, 2, 6, 8), rand(1, 2, 7, 8), rand(1, 2, 7, 8)
    # Reference: the same functions in plain CPU float64 torch, its autograd.
    xr, gr = x.double().requires_grad_(), g.double().requires_grad_()
    (xr / torch.sqrt((xr * xr).mean(-1, keepdim=True) + 1e-6) * gr).sum().backward()
    xd, gd = x.to(DEV).requires_grad_(), g.to(DEV).requires_grad_()
    mt.rms_norm(xd, gd, 1e-6).sum().backward()
    close(xd.grad, xr.grad, 1e-4, "rms_norm dx")
    close(gd.grad, gr.grad, 1e-4, "rms_norm dweight")
    for causal in (False, True):
        qr, kr, vr = (t.double().requires_grad_() for t in (q, k, v))
        s = qr @ kr.transpose(-1, -2) / math.sqrt(8)
        if causal:
            s = s.masked_fill(~torch.ones(6, 7, dtype=torch.bool).tril(1), float("-inf"))
        w = torch.randn(1, 2, 6, 8, dtype=torch.float64)
        ((torch.softmax(s, -1) @ vr) * w).sum().backward()
        qd, kd, vd = (t.to(DEV).requires_grad_() for t in (q, k, v))
        (mt.scaled_dot_product_attention(qd, kd, vd, causal) * w.float().to(DEV)).sum().backward()
        for got, ref, name in ((qd, qr, "dq"), (kd, kr, "dk"), (vd, vr, "dv")):
            close(got.grad, ref.grad, 1e-4, "attention %s causal=%s" % (name, causal))


@test
def fallback_counted_and_strict_raises():
    x = rand(3, 4)
    mt.reset_stats()
    close(torch.sin(x.to(DEV)), torch.sin(x.double()), 1e-6, "sin through the fallback")
    assert fallbacks("aten::sin") == 1 and len(mt.fallback_stats()) == 1, mt.fallback_stats()
    with mt.strict():
        raises(RuntimeError, torch.sin, x.to(DEV), match="maia strict mode: aten::sin")
        raises(RuntimeError, torch.mm, x.double().to(DEV), x.double().t().to(DEV),
               match="aten::mm")                                   # float64: no kernel
    assert not mt.ops.is_strict()
    assert fallbacks("aten::mm") == 1, mt.fallback_stats()


@test
def bf16():
    a, b = rand(32, 64), rand(64, 16)
    ab, bb = a.bfloat16(), b.bfloat16()
    with mt.strict():
        got = ab.to(DEV) @ bb.to(DEV)
    assert got.dtype == torch.bfloat16
    ref = ab.double() @ bb.double()
    close(got, ref, gemm_bound(ab.float(), bb.float()) + 2.0 ** -8 * ref.abs(), "bf16 mm")
    lin = torch.nn.Linear(64, 16).bfloat16()
    dlin = torch.nn.Linear(64, 16).bfloat16().to(DEV)
    dlin.load_state_dict(lin.state_dict())
    with mt.strict():
        got = dlin(ab.to(DEV))
    ref = torch.nn.functional.linear(ab.double(), lin.weight.double(), lin.bias.double())
    close(got, ref, 2.0 ** -7 * ref.abs() + 1e-2, "bf16 linear")


# Per format: relative error bound (half an ulp, or the clamp at the
# element maximum, whichever is larger), element emax, and half the
# smallest element step (absolute, in units of 2^(E - emax) where
# E = floor(log2(block amax))): OCP MX v1.0, Documentation/hw/dtypes.rst.
MX_BOUNDS = {
    "mxfp8_e4m3": (2.0 ** -3, 8, 2.0 ** -10),
    "mxint8": (0.0, 0, 2.0 ** -6),
    "mxfp4_e2m1": (2.0 ** -2, 2, 2.0 ** -2),
}


@test
def mx_quantize_dequantize():
    x = rand(4, 64) * 5
    for fmt, (rel, emax, half_step) in MX_BOUNDS.items():
        with mt.strict():
            data, scales = mt.quantize_mx(x.to(DEV), fmt)
            back = mt.dequantize_mx(data, scales, fmt, x.shape)
        assert data.dtype == torch.uint8 and scales.numel() == x.numel() // 32, (fmt, scales.shape)
        blocks = x.double().view(-1, 32).abs().amax(1, keepdim=True)
        unit = torch.exp2(torch.floor(torch.log2(blocks)) - emax)
        bound = (x.double().abs().view(-1, 32) * rel + unit * half_step).view_as(x)
        close(back, x.double(), bound * 1.001, "MX " + fmt)


@test
def memory_caching():
    mt.empty_cache()
    before = mt.memory_stats()
    t = torch.empty(1 << 20, device=DEV)
    addr = t.data_ptr()
    del t
    t = torch.empty(1 << 20, device=DEV)
    after = mt.memory_stats()
    assert t.data_ptr() == addr and after["reuses"] > before["reuses"], (before, after)
    assert after["in_use_bytes"] >= 4 << 20
    big = torch.empty(16 << 20, device=DEV)                   # its own buffer object
    n = mt.memory_stats()["bo_count"]
    del big
    big = torch.empty(16 << 20, device=DEV)
    assert mt.memory_stats()["bo_count"] == n


@test
def memory_reuse_and_empty_cache():
    """Freed blocks go to the next tensors of their size (same addresses, no
    new buffer object); empty_cache() gives the cached buffer objects back to
    the driver: the device's HBM in use (telemetry, the driver's count) falls
    by at least the bytes the allocator says it released."""
    torch.maia.synchronize()
    mt.empty_cache()
    dev = maia.Device(0)
    try:
        def hbm_used():
            return dev.telemetry()["hbm_used_bytes"]
        before, used0 = mt.memory_stats(), hbm_used()
        ts = [torch.empty(1 << 18, device=DEV) for _ in range(72)]     # 72 x 1 MiB
        grown = mt.memory_stats()
        assert grown["bo_bytes"] - before["bo_bytes"] >= 32 << 20, (before, grown)
        addrs = sorted(t.data_ptr() for t in ts)
        del ts
        ts = [torch.empty(1 << 18, device=DEV) for _ in range(72)]
        assert sorted(t.data_ptr() for t in ts) == addrs
        assert mt.memory_stats()["bo_count"] == grown["bo_count"]
        del ts
        big = torch.empty(16 << 20, device=DEV)                         # 64 MiB, its own BO
        del big
        held, used1 = mt.memory_stats(), hbm_used()
        assert held["in_use_bytes"] == before["in_use_bytes"], (before, held)
        assert used1 - used0 >= held["bo_bytes"] - before["bo_bytes"], (used0, used1, held)
        torch.maia.empty_cache()                        # maia.torch.empty_cache()'s alias
        after, used2 = mt.memory_stats(), hbm_used()
        released = held["bo_bytes"] - after["bo_bytes"]
        assert released >= (64 << 20) + (32 << 20), (held, after)
        assert used1 - used2 >= released, (used1, used2, released)
        assert after["cached_bytes"] < held["cached_bytes"], (held, after)
        # what was kept still serves: a value through a fresh block
        x = rand(300, 7)
        assert torch.equal(x.to(DEV).cpu(), x)
    finally:
        dev.close()


@test
def bad_inputs():
    x = rand(4, 64).to(DEV)
    raises(RuntimeError, torch.empty, 1 << 40, device=DEV, match="maia")        # huge
    raises(RuntimeError, mt.rms_norm, torch.randn(3, 4), match="maia::rms_norm")  # CPU tensor
    raises(RuntimeError, mt.rms_norm, x.t(), match="contiguous")
    raises(RuntimeError, mt.rms_norm, x, torch.ones(3, device=DEV), match="weight")
    raises(RuntimeError, mt.quantize_mx, x, "fp7", match="unknown block format")
    raises(RuntimeError, mt.quantize_mx, x[:, :48].contiguous(), "mxfp8_e4m3", match="multiple")
    raises(RuntimeError, mt.quantize_mx, x.long(), "mxfp8_e4m3", match="float32")
    d, s = mt.quantize_mx(x, "mxfp8_e4m3")
    raises(RuntimeError, mt.dequantize_mx, d[:10], s, "mxfp8_e4m3", (4, 64), match="smaller")
    raises(RuntimeError, mt.dequantize_mx, d, s, "mxfp8_e4m3", (4, 64), torch.int32,
           match="dtype")
    raises(RuntimeError, mt.scaled_dot_product_attention, x, x, x, match="batch, heads")
    z = torch.zeros(3, dtype=torch.complex128, device=DEV)          # no 32-bit fill pattern
    z.fill_(1 + 2j)
    assert torch.equal(z.cpu(), torch.full((3,), 1 + 2j, dtype=torch.complex128))
    # Non-contiguous and rank > 4 operands still give the right answer.
    y = rand(2, 3, 4, 5, 6)
    close(y.to(DEV) * 2.0, y.double() * 2.0, 1e-6, "rank 5 through the fallback")
    a = rand(40, 30)
    close(a.to(DEV)[::2, ::3] @ a.to(DEV)[::2, ::3].t(),
          a.double()[::2, ::3] @ a.double()[::2, ::3].t(), 1e-4, "strided mm")
    # The device still works after every error above.
    close(x + x, x.cpu().double() * 2, 1e-6, "after errors")


@test
def example_transformer_training():
    """userspace/examples/maia-torch-train.py, in this process (one import torch)."""
    import importlib.util
    import io
    import os
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "userspace",
                        "examples", "maia-torch-train.py")
    spec = importlib.util.spec_from_file_location("maia_torch_train", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    out = io.StringIO()
    r = example.main(steps=3, out=out)
    for line in out.getvalue().splitlines():
        print("# " + line)
    for lc, ld in r["losses"]:
        assert abs(lc - ld) <= 1e-4 * max(1.0, abs(lc)), r["losses"]
    assert r["diff"] <= 1e-3 * max(1.0, r["scale"]), r
    for op in ("addmm", "bmm", "_softmax", "native_layer_norm", "gelu", "cat", "mse_loss",
               "_softmax_backward_data", "native_layer_norm_backward"):
        assert r["device_ops"].get(op), (op, r["device_ops"])


run("torch backend")
