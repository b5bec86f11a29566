# SPDX-License-Identifier: MIT
"""torch.compile with Inductor on a transformer block on Maia beside eager
(Documentation/benchmarks.rst, "torch.compile with Inductor"): the compile
and first call, then per call (median of 5, each followed by a synchronize),
the device ops and fallbacks of one compiled call in strict mode, and the
output against CPU torch in float64; then one training step (forward, MSE
loss, backward: AOTAutograd's two graphs through Inductor) the same way,
its gradients against eager. Compiled calls and steps are timed with a
graph's launches as one job (maia.inductor.batch_launches, the default)
and with a job per launch, in alternating rounds (medians of the rounds'
medians), with the jobs each submitted. Run in a guest (not a test; its
compile takes minutes under TCG):

    PY=$(qemu/setup/python-env.sh --print-python)   # on the host: the guest's $HOME differs
    qemu/run-guest --timeout 1200 --host-root -- /bin/sh -c \
        "cd tests/python && PYTHONPATH=../../build/userspace/python $PY bench_inductor.py"
"""
import statistics
import time

import torch

import maia.inductor as mi
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


def jobs_of(fn):
    """Jobs one call of fn submits (synchronized before and after)."""
    torch.maia.synchronize()
    before = mt.jobs_submitted()
    fn()
    torch.maia.synchronize()
    return mt.jobs_submitted() - before


def eager_vs_compiled(what, eager, compiled, rounds=5):
    """eager, compiled with a job per launch, compiled batched: rounds of
    timed() each in turn; the median of each's round medians and its jobs."""
    runs = (("eager", eager, None), ("Inductor, a job per launch", compiled, False),
            ("Inductor, a job per graph", compiled, True))
    times = {name: [] for name, _, _ in runs}
    jobs = {}
    try:
        for _ in range(rounds):
            for name, fn, batch in runs:
                if batch is not None:
                    mi.batch_launches = batch
                times[name].append(timed(fn))
                jobs[name] = jobs_of(fn)
    finally:
        mi.batch_launches = True
    print("%s (medians of %d rounds of 5): %s" % (what, rounds, ", ".join(
        "%s %.2f ms (%d jobs)" % (name, statistics.median(times[name]), jobs[name]) for name, _, _ in runs)))


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
        eager_vs_compiled("per call", lambda: blk(x), lambda: compiled(x))
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
    eager_vs_compiled("training step", lambda: step(blk), lambda: step(compiled))


if __name__ == "__main__":
    main()
