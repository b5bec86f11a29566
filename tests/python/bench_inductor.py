# SPDX-License-Identifier: MIT
"""make bench, in the guest under run-guest --host-root (tests/run-bench's
torch boot): torch.compile with Inductor on a transformer block on Maia
beside eager (Documentation/benchmarks.rst, "torch.compile with
Inductor"). The block of test_torch_models.py (2x16x64, 4 heads, GELU
MLP): its forward in eval mode under torch.no_grad(), then one training
step (forward, MSE loss, backward: AOTAutograd's two graphs through
Inductor; the 12 gradients cloned), each compiled once. Per figure, eager,
the compiled call with a job per launch and with a graph's launches batched
(maia.inductor.batch_launches, the default: a few jobs per call with
maia.inductor.flush_launches) in alternating rounds,
each the median of REPS calls followed by torch.maia.synchronize(); a
figure is the median of its rounds' medians, the ratio (compiled / eager)
the median of the per-round ratios (the machine's load drifts between
rounds). Also: the compile and first call, the device jobs, Triton
launches and CPU fallbacks of one compiled call (strict mode), the output
against CPU torch in float64 and the compiled gradients against eager.
JSON lines as bench-util.h on stdout, the rest on stderr. By hand:

    PY=$(qemu/setup/python-env.sh --print-python)   # on the host: the guest's $HOME differs
    qemu/run-guest --timeout 1200 --host-root --memory 3G -- /bin/sh -c \\
        "cd tests/python && PYTHONPATH=../../build/userspace/python $PY bench_inductor.py"

Environment: INDUCTOR_ROUNDS (default 5), INDUCTOR_REPS (default 5).
"""
import json
import os
import statistics
import sys
import time

START = time.perf_counter()
import torch  # noqa: E402

import maia.inductor as mi  # noqa: E402
import maia.torch as mt  # noqa: E402
from models import Block  # noqa: E402

DEV = torch.device("maia", 0)
ROUNDS = int(os.environ.get("INDUCTOR_ROUNDS", "5"))
REPS = int(os.environ.get("INDUCTOR_REPS", "5"))
NAME = "inductor_block_2x16x64"
# Relative errors that fail the run: measured 1e-7 to 4e-7 (float32 sums
# in another order, the TVP's transcendentals within 1 ULP).
BOUND = 1e-4


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def emit(name, value, **extra):
    line = {"name": name, "value": round(value, 3), "unit": "ms", "higher_is_better": False}
    line.update(extra)
    print(json.dumps(line), flush=True)


def timed(fn):
    """Median wall time of fn() followed by a synchronize, in ms (after one warm-up call)."""
    fn()
    torch.maia.synchronize()
    times = []
    for _ in range(REPS):
        t0 = time.perf_counter()
        fn()
        torch.maia.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def counts(fn):
    """Jobs, Triton launches and CPU fallbacks of one call of fn in strict mode."""
    torch.maia.synchronize()
    mt.reset_stats()
    before = mt.jobs_submitted()
    with mt.strict():
        fn()
        torch.maia.synchronize()
    return (mt.jobs_submitted() - before, mt.device_stats().get("maia::triton_launch", 0),
            sum(mt.fallback_stats().values()))


def eager_vs_compiled(what, eager, compiled, **extra):
    """eager, compiled with a job per launch, compiled batched: ROUNDS
    rounds of timed() each in turn; their JSON lines."""
    runs = (("eager", eager, None), ("per_launch", compiled, False), ("compiled", compiled, True))
    times = {name: [] for name, _, _ in runs}
    try:
        for _ in range(ROUNDS):
            for name, fn, batch in runs:
                if batch is not None:
                    mi.batch_launches = batch
                times[name].append(timed(fn))
        mi.batch_launches = False
        jobs_launch = counts(compiled)[0]
    finally:
        mi.batch_launches = True
    jobs_eager = counts(eager)[0]
    jobs, launches, falls = counts(compiled)
    med = {name: statistics.median(t) for name, t in times.items()}
    ratio = statistics.median(c / e for c, e in zip(times["compiled"], times["eager"]))
    ratio_launch = statistics.median(c / e for c, e in zip(times["per_launch"], times["eager"]))
    name = "%s_%s" % (NAME, what)
    emit(name + "_eager", med["eager"], device_jobs=jobs_eager)
    emit(name + "_compiled", med["compiled"], baseline=name + "_eager", baseline_value=round(med["eager"], 3),
         ratio=round(ratio, 4), device_jobs=jobs, triton_launches=launches, fallback_ops=falls,
         job_per_launch_ms=round(med["per_launch"], 3), job_per_launch_ratio=round(ratio_launch, 4),
         job_per_launch_jobs=jobs_launch, **extra)
    log("%s (medians of %d rounds of %d): eager %.2f ms (%d jobs), Inductor %.2f ms (%d jobs, %d launches), "
        "%.3f of eager; a job per launch %.2f ms (%d jobs), %.3f of eager" % (
            what, ROUNDS, REPS, med["eager"], jobs_eager, med["compiled"], jobs, launches, ratio,
            med["per_launch"], jobs_launch, ratio_launch))


def forward(blk, x):
    """The block's forward in eval mode, eager and compiled."""
    blk.eval()
    with torch.no_grad():
        ref = Block().eval()
        ref.load_state_dict({k: v.cpu() for k, v in blk.state_dict().items()})
        cpu_out = ref.double()(x.cpu().double())
        compiled = torch.compile(blk)
        t0 = time.perf_counter()
        out = compiled(x)
        torch.maia.synchronize()
        log("forward, Inductor: compile and first call %.1f s" % (time.perf_counter() - t0))
        err = ((out.cpu().double() - cpu_out).abs().max() / cpu_out.abs().max()).item()
        eager_vs_compiled("forward", lambda: blk(x), lambda: compiled(x), rel_err=float("%.3g" % err))
    return err


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
    log("training step, Inductor: compile (forward and backward) and first step %.1f s"
        % (time.perf_counter() - t0))
    err = max(((a - b).abs().max() / b.abs().max()).item() for a, b in zip(got, eager))
    eager_vs_compiled("train_step", lambda: step(blk), lambda: step(compiled),
                      grad_rel_err_vs_eager=float("%.3g" % err))
    return err


def main():
    torch.manual_seed(4)
    blk = Block().to(DEV)
    x = torch.randn(2, 16, 64).to(DEV)
    errs = [forward(blk, x), train(blk, x)]
    log("bench_inductor: %.0f s in all (import torch included)" % (time.perf_counter() - START))
    if max(errs) > BOUND:
        log("bench_inductor: relative errors %s, above %g" % (errs, BOUND))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
