# SPDX-License-Identifier: MIT
"""torch.compile with Inductor on a transformer block on Maia beside eager
(Documentation/benchmarks.rst, "torch.compile with Inductor"): the compile
and first call, then per call (median of 5, each followed by a synchronize),
the device ops and fallbacks of one compiled call in strict mode, and the
output against CPU torch in float64; then one training step (forward, MSE
loss, backward: AOTAutograd's two graphs through Inductor) the same way,
its gradients against eager. Run in a guest (not a test; its compile takes
minutes under TCG):

    PY=$(qemu/setup/python-env.sh --print-python)   # on the host: the guest's $HOME differs
    qemu/run-guest --timeout 1200 --host-root -- /bin/sh -c \
        "cd tests/python && PYTHONPATH=../../build/userspace/python $PY bench_inductor.py"
"""
import statistics
import time

import torch

import maia.torch as mt
from models import Block

DEV = torch.device("maia", 0)


def timed(fn, reps=5):
    """Median wall time of fn() followed by a synchronize, in ms (after one warm-up call)."""
    fn()
    torch.maia.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.maia.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def main():
    torch.manual_seed(4)
    blk = Block().to(DEV).eval()
    x = torch.randn(2, 16, 64).to(DEV)
    with torch.no_grad():
        ref = Block().eval()
        ref.load_state_dict({k: v.cpu() for k, v in blk.state_dict().items()})
        cpu_out = ref.double()(x.cpu().double())
        compiled = torch.compile(blk)
        t0 = time.perf_counter()
        out = compiled(x)
        torch.maia.synchronize()
        print("transformer block 2x16x64, Inductor: compile and first call %.1f s" % (time.perf_counter() - t0))
        mt.reset_stats()
        with mt.strict():
            compiled(x)
            torch.maia.synchronize()
        print("one compiled call: device ops %s, fallbacks %s" % (mt.device_stats(), mt.fallback_stats()))
        scale = cpu_out.abs().max().item()
        print("max |compiled - CPU float64| / max |CPU|: %.2e" % ((out.cpu().double() - cpu_out).abs().max().item()
                                                                 / scale))
        print("per call: eager %.2f ms, Inductor %.2f ms" % (timed(lambda: blk(x)), timed(lambda: compiled(x))))
    train(blk, x)


def train(blk, x):
    """One training step of the block, eager and compiled."""
    blk.train()
    tgt = torch.randn(x.shape).to(DEV)

    def step(fn):
        for p in blk.parameters():
            p.grad = None
        torch.nn.functional.mse_loss(fn(x), tgt).backward()
        return [p.grad.clone() for p in blk.parameters()]

    eager = step(blk)
    torch._dynamo.reset()
    compiled = torch.compile(blk)
    t0 = time.perf_counter()
    got = step(compiled)
    torch.maia.synchronize()
    print("training step, Inductor: compile (forward and backward) and first step %.1f s"
          % (time.perf_counter() - t0))
    err = max(((a - b).abs().max() / b.abs().max()).item() for a, b in zip(got, eager))
    mt.reset_stats()
    with mt.strict():
        step(compiled)
        torch.maia.synchronize()
    print("one compiled training step: device ops %s, fallbacks %s" % (mt.device_stats(), mt.fallback_stats()))
    print("max |grad compiled - grad eager| / max |grad eager|: %.2e" % err)
    print("training step: eager %.2f ms, Inductor %.2f ms" % (timed(lambda: step(blk)), timed(lambda: step(compiled))))


if __name__ == "__main__":
    main()
