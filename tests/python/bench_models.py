# SPDX-License-Identifier: MIT
"""make bench, in the guest under run-guest --host-root: model forwards on
the Maia device beside CPU torch on the guest's (emulated) CPU, random
weights (tests/python/models.py): a ResNet-18 (torchvision's layout and
widths, 11.7 M parameters, 1000 classes) and a small ViT (4x4 patches, dim
64, 2 layers, 10 classes), in eval mode at batch 1 and 8 on IMAGE x IMAGE
images (default 32: the guest's emulated CPU runs CPU torch at tens of
MFLOP/s, and a 224 x 224 ResNet-18 forward would take minutes there); then
a transformer block eager against torch.compile(backend=maia.torch.
compile_backend). Device times are a forward plus torch.maia.synchronize(),
the median of RUNS; CPU torch the median of CPU_RUNS. Each line carries the
forward's device-op and fallback-op counts (and, for the block, the device
jobs). JSON lines as bench-util.h; "rel_err" is max |device - CPU| / max
|CPU|."""
import json
import os
import statistics
import sys
import time

import torch

import maia.torch as mt
from models import Block, ResNet18, ViT

# NNPACK cannot run on the guest's emulated CPU and says so on every CPU
# convolution (38 lines of stderr per run): CPU torch takes its other paths.
torch.backends.nnpack.set_flags(False)

IMAGE = int(os.environ.get("MODEL_IMAGE", "32"))
RUNS = int(os.environ.get("MODEL_RUNS", "5"))
CPU_RUNS = int(os.environ.get("MODEL_CPU_RUNS", "2"))
BATCHES = [int(b) for b in os.environ.get("MODEL_BATCHES", "1 8").split()]


def median_ms(fn, runs):
    samples = []
    for _ in range(runs):
        t0 = time.perf_counter_ns()
        fn()
        samples.append((time.perf_counter_ns() - t0) / 1e6)
    return statistics.median(samples)


def emit(name, value, **extra):
    line = {"name": name, "value": round(value, 3), "unit": "ms", "higher_is_better": False}
    line.update(extra)
    print(json.dumps(line), flush=True)


def bench_model(label, make, shape):
    torch.manual_seed(0)
    cpu_model = make().eval()
    dev_model = make().eval()
    dev_model.load_state_dict(cpu_model.state_dict())
    dev_model.to(mt.device)
    x = torch.randn(*shape)
    dx = x.to(mt.device)
    with torch.no_grad():
        def dev_forward():
            out = dev_model(dx)
            torch.maia.synchronize()
            return out
        got = dev_forward().cpu()                       # warm: allocator, caches
        mt.reset_stats()
        j0 = mt.jobs_submitted()
        dev_forward()
        jobs = mt.jobs_submitted() - j0
        dev_ops = sum(mt.device_stats().values())
        falls = mt.fallback_stats()
        t_dev = median_ms(dev_forward, RUNS)
        ref = cpu_model(x)
        t_cpu = median_ms(lambda: cpu_model(x), CPU_RUNS)
    err = float((got - ref).abs().max() / ref.abs().max())
    name = "%s_b%d_%dx%d" % (label, shape[0], shape[2], shape[3])
    emit(name + "_cpu_torch_guest", t_cpu)
    emit(name + "_maia_torch", t_dev, baseline=name + "_cpu_torch_guest",
         baseline_value=round(t_cpu, 3), ratio=round(t_dev / t_cpu, 4), device_ops=dev_ops,
         fallback_ops=sum(falls.values()), fallbacks=falls, device_jobs=jobs,
         rel_err=float("%.3g" % err))
    return 0 if err <= 1e-4 else 1


def bench_compile():
    torch.manual_seed(0)
    blk = Block().to(mt.device).eval()
    x = torch.randn(8, 64, 64).to(mt.device)
    with torch.no_grad():
        compiled = torch.compile(blk, backend=mt.compile_backend)
        compiled(x)                                     # traces
        rows = []
        for label, fn in (("eager", blk), ("compiled", compiled)):
            fn(x)
            torch.maia.synchronize()
            mt.reset_stats()
            j0 = mt.jobs_submitted()
            out = fn(x)
            torch.maia.synchronize()
            jobs = mt.jobs_submitted() - j0
            ops = sum(mt.device_stats().values())
            falls = sum(mt.fallback_stats().values())

            def run():
                fn(x)
                torch.maia.synchronize()
            rows.append((label, median_ms(run, RUNS), jobs, ops, falls, out.cpu()))
    (_, t_e, j_e, o_e, f_e, y_e), (_, t_c, j_c, o_c, f_c, y_c) = rows
    emit("transformer_block_b8_64x64_eager", t_e, device_jobs=j_e, device_ops=o_e, fallback_ops=f_e)
    emit("transformer_block_b8_64x64_compiled", t_c, baseline="transformer_block_b8_64x64_eager",
         baseline_value=round(t_e, 3), ratio=round(t_c / t_e, 4), device_jobs=j_c,
         device_ops=o_c, fallback_ops=f_c,
         max_diff_vs_eager=float("%.3g" % float((y_c - y_e).abs().max())))
    return 0


status = 0
for b in BATCHES:
    status |= bench_model("resnet18", lambda: ResNet18(), (b, 3, IMAGE, IMAGE))
    status |= bench_model("vit_small", lambda: ViT(image=IMAGE), (b, 3, IMAGE, IMAGE))
status |= bench_compile()
sys.exit(status)
