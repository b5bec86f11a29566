# SPDX-License-Identifier: MIT
"""Triton kernels on Maia beside the PyTorch backend's own ops on the same
device (Documentation/benchmarks.rst, "Triton on the device"): the cost of a
launch, and the tutorials' kernels at sizes larger than the tests'. Run in a
guest (tests/python/run-in-guest.sh cannot run it: it is not a test):

    qemu/run-guest --host-root -- /bin/sh -c 'cd tests/python &&
        PYTHONPATH=../../build/userspace/python $(../../qemu/setup/python-env.sh --print-python) bench_triton.py'
"""
import statistics
import time

import torch
import triton

import maia.torch  # noqa: F401
import triton_kernels as K

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


def enqueued(fn, n=200):
    """Mean host time of n calls without waiting, in us (the device works meanwhile)."""
    fn()
    torch.maia.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        fn()
    t1 = time.perf_counter()
    torch.maia.synchronize()
    return (t1 - t0) / n * 1e6


def add(x, y, out):
    n = out.numel()
    K.add_kernel[(triton.cdiv(n, 256), )](x, y, out, n, BLOCK_SIZE=256)


def softmax(x, y):
    K.softmax_kernel[(min(64, x.shape[0]), )](y, x, x.stride(0), y.stride(0), x.shape[0], x.shape[1],
                                               BLOCK_SIZE=triton.next_power_of_2(x.shape[1]), num_stages=1)


def matmul(a, b, c):
    M, Kd = a.shape
    N = b.shape[1]
    K.matmul_kernel[(triton.cdiv(M, 32) * triton.cdiv(N, 32), )](
        a, b, c, M, N, Kd, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0), c.stride(1),
        BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="")


def main():
    x, y, out = (torch.rand(256, device=DEV) for _ in range(3))
    # x + y: the backend's add kernel (its add.out form would take the CPU fallback).
    print("launch, 256-element add: Triton %.0f us enqueued, %.2f ms with synchronize; "
          "x + y on maia %.0f us enqueued, %.2f ms" %
          (enqueued(lambda: add(x, y, out)), timed(lambda: add(x, y, out)),
           enqueued(lambda: x + y), timed(lambda: x + y)))

    n = 1 << 20
    x, y, out = (torch.rand(n, device=DEV) for _ in range(3))
    print("vector add of 2^20 (4096 programs): Triton %.1f ms, x + y on maia %.1f ms" %
          (timed(lambda: add(x, y, out)), timed(lambda: x + y)))

    x = torch.randn(512, 1024, device=DEV)
    y = torch.empty_like(x)
    xc = x.cpu()
    print("softmax 512 x 1024 (64 programs): Triton %.1f ms, torch.softmax on maia %.1f ms, on the guest's CPU %.1f ms" %
          (timed(lambda: softmax(x, y)), timed(lambda: torch.softmax(x, 1)), timed(lambda: torch.softmax(xc, 1))))

    a = torch.randn(256, 256, dtype=torch.float16, device=DEV)
    b = torch.randn(256, 256, dtype=torch.float16, device=DEV)
    c = torch.empty(256, 256, dtype=torch.float16, device=DEV)
    print("matmul 256^3 fp16 (64 programs of 32x32x32 blocks): Triton %.1f ms, torch.matmul on maia %.1f ms" %
          (timed(lambda: matmul(a, b, c)), timed(lambda: torch.matmul(a, b))))


if __name__ == "__main__":
    main()
