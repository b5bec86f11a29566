# SPDX-License-Identifier: MIT
"""Training under torch.compile with Inductor on maia (in the guest):
AOTAutograd splits the step into a forward and a backward graph, Inductor
makes Triton kernels of both, the maia Triton backend compiles them to TVP
programs (Documentation/python.rst, "torch.compile"). The transformer block
(its MLP, attention, layer norms) with dropout after it and an MSE loss:
gradients against eager maia and CPU torch in float64 (given the compiled
step's dropout mask), then steps in strict mode (no CPU fallback) with
AdamW. One compile (about 20 kernels) keeps the suite's added time down;
bench_inductor.py trains a larger model (embedding, cross-entropy, an MLP
head). Runs after test_inductor.py in its process (run_group.py)."""
import os
import tempfile
import time

os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", tempfile.mkdtemp(prefix="maia-inductor-cache-"))
os.environ.setdefault("TRITON_CACHE_DIR", tempfile.mkdtemp(prefix="maia-triton-cache-"))
import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import maia.torch as mt  # noqa: E402
import tap  # noqa: E402
from models import Block  # noqa: E402
from tap import test  # noqa: E402

DEV = torch.device("maia", 0)
P = 0.25
# Each gradient relative to the largest magnitude of its float64 reference:
# float32 sums in another order (Inductor's fused reductions, the tensor
# engine's GEMMs) and the TVP's transcendentals within 1 ULP. Measured
# 4.1e-7 and below.
BOUND = 2e-5


class Net(nn.Module):
    """The transformer block, then dropout (the reference gets the
    compiled step's mask; the compiled step draws its own, Inductor's
    Philox in the kernel)."""

    def __init__(self):
        super().__init__()
        self.blk = Block()

    def forward(self, x, mask=None):
        h = self.blk(x)
        return F.dropout(h, P) if mask is None else h * mask / (1 - P)


def loss_of(model, x, tgt, mask=None):
    d = model(x, mask)
    return F.mse_loss(d, tgt), d


def grads(model, step, *args):
    for p in model.parameters():
        p.grad = None
    loss, d = step(*args)
    loss.backward()
    return loss.detach(), d.detach(), [p.grad for p in model.parameters()]


STATE = {}


@test
def training_step_compiled():
    """The compiled step's loss and every gradient within BOUND of eager
    maia and of CPU float64 run with the same dropout mask; the mask keeps
    1 - P of the elements; no CPU fallback."""
    torch.manual_seed(5)
    cpu = Net()
    x, tgt = torch.randn(2, 16, 64), torch.randn(2, 16, 64)
    model = Net().to(DEV)
    model.load_state_dict(cpu.state_dict())
    ref = Net().double()
    ref.load_state_dict(cpu.state_dict())
    torch._dynamo.reset()
    step = torch.compile(lambda i, t: loss_of(model, i, t))
    mt.reset_stats()
    launches0 = mt.device_stats().get("maia::triton_launch", 0)
    t0 = time.perf_counter()
    loss, d, g = grads(model, step, x.to(DEV), tgt.to(DEV))
    torch.maia.synchronize()
    print("# compile (forward and backward graphs) and first step: %.1f s, %d Triton launches, fallbacks %s"
          % (time.perf_counter() - t0, mt.device_stats().get("maia::triton_launch", 0) - launches0,
             mt.fallback_stats()))
    assert not mt.fallback_stats(), mt.fallback_stats()
    mask = (d.cpu() != 0).double()
    kept = mask.mean().item()
    print("# dropout keeps %.3f (1 - p = %.2f)" % (kept, 1 - P))
    assert abs(kept - (1 - P)) < 0.05, kept            # 2048 elements: sigma 0.0096
    le, de, ge = grads(model, lambda i, t: loss_of(model, i, t, mask.float().to(DEV)), x.to(DEV), tgt.to(DEV))
    lr, dr, gr = grads(ref, lambda i, t: loss_of(ref, i, t, mask), x.double(), tgt.double())
    worst = (0.0, "")
    for name, a, b, r in zip(["loss", "dropout output"] + [n for n, _ in model.named_parameters()],
                             [loss, d] + g, [le, de] + ge, [lr, dr] + gr):
        scale = r.abs().max().item()
        e_ref = (a.cpu().double() - r).abs().max().item() / scale
        e_eager = (a.cpu().double() - b.cpu().double()).abs().max().item() / scale
        worst = max(worst, (max(e_ref, e_eager), name))
        assert e_ref <= BOUND and e_eager <= BOUND, (name, e_ref, e_eager)
    print("# worst of loss and %d gradients: %.1e of the largest reference value (%s)" %
          (len(g), worst[0], worst[1]))
    STATE.update(model=model, step=step, x=x, tgt=tgt)


@test
def training_steps_strict():
    """Two more compiled steps with AdamW in strict mode: no op on the CPU,
    no recompile, the loss falls."""
    model, step = STATE["model"], STATE["step"]
    x, tgt = STATE["x"].to(DEV), STATE["tgt"].to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    losses = []
    mt.reset_stats()
    t0 = time.perf_counter()
    with mt.strict():
        for _ in range(3):
            opt.zero_grad()
            loss, _ = step(x, tgt)
            loss.backward()
            opt.step()
            losses.append(loss.item())
    print("# 3 steps in strict mode: %.2f s, losses %s; device ops %s" %
          (time.perf_counter() - t0, ", ".join("%.4f" % v for v in losses), mt.device_stats()))
    assert not mt.fallback_stats()
    assert losses[-1] < losses[0], losses
    # Inductor's extern GEMMs write into its buffers (out=): no copy in a step.
    mt.reset_stats()
    grads(model, step, x, tgt)
    torch.maia.synchronize()
    print("# one compiled step's device ops: %s" % mt.device_stats())
    assert "copy_" not in mt.device_stats(), mt.device_stats()
    eager = lambda: grads(model, lambda i, t: loss_of(model, i, t), x, tgt)  # noqa: E731
    compiled = lambda: grads(model, step, x, tgt)  # noqa: E731
    print("# one training step (forward, backward, synchronize; median of 5): eager %.1f ms, compiled %.1f ms"
          % (median_ms(eager), median_ms(compiled)))


def median_ms(fn):
    """Median wall time of fn() and a synchronize over 5 calls, after one."""
    fn()
    torch.maia.synchronize()
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        fn()
        torch.maia.synchronize()
        times.append(time.perf_counter() - t0)
    return sorted(times)[2] * 1e3


if __name__ == "__main__":
    tap.run("inductor-train")
