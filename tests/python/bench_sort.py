# SPDX-License-Identifier: MIT
"""sort and topk on Maia beside CPU torch in the same guest
(Documentation/benchmarks.rst, "Scatters and sorts on the device"): each
figure the median of 5 calls, each followed by torch.maia.synchronize(),
after one warm-up call (the programs' first launch waits for its result);
then the device's modeled time of one more call (torch.maia.Event timing);
for int8 and int16 also the CPU fallback's path (down, CPU torch's sort, up).
Run in a guest (not a test):

    PY=$(qemu/setup/python-env.sh --print-python)   # on the host: the guest's $HOME differs
    qemu/run-guest --timeout 1200 --host-root -- /bin/sh -c \
        "cd tests/python && PYTHONPATH=../../build/userspace/python $PY bench_sort.py"
"""
import statistics
import time

import torch

import maia.torch as mt

DEV = torch.device("maia", 0)
G = torch.Generator().manual_seed(31)


def median_ms(f, reps=5):
    f()
    torch.maia.synchronize()
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        f()
        torch.maia.synchronize()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts) * 1e3


def modeled_ms(f):
    """The device's modeled time of one call (torch.maia.Event timing: the chip model's clock, the same
    on an idle and a loaded host)."""
    start, end = torch.maia.Event(enable_timing=True), torch.maia.Event(enable_timing=True)
    start.record()
    f()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def main():
    x2 = torch.randn(64, 4096, generator=G)
    x1 = torch.randn(65536, generator=G)
    cases = [
        ("sort [64, 4096] float32 along 4096", x2, lambda x: torch.sort(x, stable=True)),
        ("topk 8 of [64, 4096]", x2, lambda x: torch.topk(x, 8)),
        ("topk 256 of [64, 4096]", x2, lambda x: torch.topk(x, 256)),
        ("topk 16 of [65536]", x1, lambda x: torch.topk(x, 16)),
        ("sort [64, 4096] int8 along 4096", x2.mul(40).clamp(-128, 127).to(torch.int8),
         lambda x: torch.sort(x, stable=True)),
        ("sort [64, 4096] int16 along 4096", x2.mul(9000).clamp(-2**15, 2**15 - 1).to(torch.int16),
         lambda x: torch.sort(x, stable=True)),
    ]
    mt.reset_stats()
    for what, x, f in cases:
        xd = x.to(DEV)
        dev = median_ms(lambda: f(xd))
        cpu = median_ms(lambda: f(x))
        model = modeled_ms(lambda: f(xd))
        print("%-40s device %8.1f ms   CPU %8.1f ms   modeled %8.3f ms" % (what, dev, cpu, model), flush=True)
        if x.dtype in (torch.int8, torch.int16):
            # what the CPU fallback does: the tensor down, CPU torch's sort, values and indices up
            fb = median_ms(lambda: tuple(t.to(DEV) for t in f(xd.cpu())))
            print("%-40s fallback's path %8.1f ms" % (what, fb), flush=True)
    print("device ops: %s" % mt.device_stats())
    print("fallback ops: %s" % mt.fallback_stats())


if __name__ == "__main__":
    main()
