# SPDX-License-Identifier: MIT
"""sort, argsort, topk (ops_sort.cpp) on the device in the guest, in strict
mode (no CPU fallback allowed), against CPU torch: every dim (negative
ones too), odd sizes (rows past 1024, which take the cross-block steps),
non-contiguous operands, empty ones, float32, bfloat16, float16, int32,
int64, NaN, -0.0 and ties, topk with too large a k raising CPU torch's own
error, gradients of sort and topk values against CPU autograd.

Bounds: exact (sorts are stable, indices equal CPU torch's stable sort)."""
import time

import torch

import maia.torch as mt
from tap import run, test
from torch_checks import close, dev_count, exact, same_error

DEV = mt.device
G = torch.Generator().manual_seed(31)


def rnd(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=G).to(dtype)


@test
def sorts():
    cases = [
        (rnd(5, 7, 9), (0, 1, 2, -1)),
        (rnd(3, 1500), (1,)),                                  # rows past 1024: the cross-block steps
        (rnd(2, 5000, dtype=torch.bfloat16), (-1,)),
        (rnd(3, 1100, dtype=torch.float16), (1,)),
        (rnd(2100, 3).round(), (0,)),                          # many ties
        (torch.randint(-4, 4, (6, 1030), dtype=torch.int32, generator=G), (1,)),
        (torch.cat([torch.randint(-2**40, 2**40, (2, 1200), generator=G),       # int64: two key words
                    torch.tensor([[2**63 - 1, -2**63, 2**32, 2**32 - 1, -1, 0] * 4] * 2)], 1), (1, 0)),
        (rnd(9, 6).t(), (0, 1)),                               # non-contiguous
        (rnd(1), (0,)),
        (rnd(4, 0, 3), (1, 2)),                                # empty
    ]
    special = torch.tensor([1.0, -0.0, 0.0, float("nan"), -float("inf"), float("inf"), 1.0, -float("nan"), -2.0,
                            0.0, 3.0, float("nan")])
    cases.append((special.reshape(2, 6).repeat(2, 1), (1,)))
    before = dev_count("sort"), dev_count("topk")
    with mt.strict():
        for n, (x, dims) in enumerate(cases):
            xd = x.to(DEV)
            for d in dims:
                for desc in (False, True):
                    what = "case %d dim %d descending %s" % (n, d, desc)
                    v, i = torch.sort(xd, dim=d, descending=desc, stable=True)
                    rv, ri = torch.sort(x, dim=d, descending=desc, stable=True)
                    exact(v, rv, what)
                    exact(i, ri, what + " indices")
                    exact(torch.argsort(xd, dim=d, descending=desc, stable=True),
                          torch.argsort(x, dim=d, descending=desc, stable=True), what + " argsort")
                    k = min(3, x.shape[d])
                    v, i = torch.topk(xd, k, dim=d, largest=desc)
                    rv, _ = torch.topk(x, k, dim=d, largest=desc)
                    exact(v, rv, what + " topk")
                    exact(x.gather(d, i.cpu()), rv, what + " topk indices")   # ties: any of them
        exact(xd.sort().values, x.sort().values, "sort() default")
        v, i = torch.topk(rnd(4, 9).to(DEV), 0)
        assert v.shape == (4, 0) and i.shape == (4, 0), (v.shape, i.shape)
    assert dev_count("sort") >= before[0] + 69 and dev_count("topk") >= before[1] + 35, mt.device_stats()


@test
def bad_k():
    """topk with k past the row: CPU torch's exception and first line."""
    x = rnd(4, 7)
    same_error(lambda: x.to(DEV).topk(8), lambda: x.topk(8))


@test
def gradients():
    x = rnd(5, 6)
    w = rnd(5, 6)

    def run_all(dev):
        xs = x.to(dev).detach().requires_grad_()
        ww = w.to(dev)
        v, _ = xs.sort(dim=1, descending=True)
        t, _ = xs.topk(2, dim=0)
        ((v * ww).sum() + (t * ww[:2]).sum()).backward()
        return xs.grad

    ref = run_all("cpu")
    with mt.strict():
        got = run_all(DEV)
    close(got, ref, 1e-6, "d self")


@test
def timing():
    """Print device and CPU times of a few larger calls in this guest (not a check)."""
    def best(f):
        ts = []
        for _ in range(2):
            t = time.perf_counter()
            f()
            torch.maia.synchronize()
            ts.append(time.perf_counter() - t)
        return min(ts) * 1e3

    x = rnd(64, 4096)
    xd = x.to(DEV)
    print("# sort 64 x 4096 float32 along 4096: device %.1f ms, CPU %.1f ms"
          % (best(lambda: torch.sort(xd, stable=True)), best(lambda: torch.sort(x, stable=True))))
    print("# topk 8 of 64 x 4096: device %.1f ms, CPU %.1f ms"
          % (best(lambda: torch.topk(xd, 8)), best(lambda: torch.topk(x, 8))))


@test
def summary():
    """Print where the ops ran and how long the file took (not a check)."""
    print("# device ops: %s" % ", ".join("%s x%d" % kv for kv in sorted(mt.device_stats().items())
                                         if kv[0] in ("sort", "topk")))
    print("# fallback ops: %s" % mt.fallback_stats())
    print("# test_torch_sort.py: %.1f s" % (time.monotonic() - START))


if __name__ == "__main__":
    START = time.monotonic()
    mt.reset_stats()
    run("torch sort")
