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
def topk_partial():
    """topk without a whole-row sort (k's power of two at most half the padded row): values and indices
    equal to the first k of CPU torch's stable sort (ties by position), both ways, every dim."""
    special = torch.tensor([1.0, -0.0, 0.0, float("nan"), -float("inf"), float("inf"), 1.0, -float("nan"), -2.0,
                            0.0, 3.0, float("nan")] * 100)
    cases = [
        (rnd(3, 1000), (1, 0), (1, 2, 5, 8, 100, 256, 500, 512)),
        ((rnd(700, 4) * 2).round(), (0, -1), (1, 3, 64, 300)),   # many ties
        (rnd(2, 5000, dtype=torch.bfloat16), (1,), (16, 1024)),   # K = 1024, more than one merge
        (rnd(9, 40, 3).transpose(0, 1), (0, 1, 2), (1, 3, 7)),    # non-contiguous
        (rnd(20000), (0,), (16,)),                                # 1-D, 1024-lane blocks merged across
        (special.reshape(3, 400), (1,), (1, 7, 100)),
        (torch.cat([torch.randint(-2**40, 2**40, (2, 300), generator=G),
                    torch.tensor([[2**63 - 1, -2**63, 2**32, 2**32 - 1, -1, 0] * 4] * 2)], 1), (1,), (1, 9, 64)),
        (torch.randint(-50, 50, (5, 333), dtype=torch.int32, generator=G), (1,), (4, 100)),
    ]
    before = dev_count("topk")
    calls = 0
    with mt.strict():
        for n, (x, dims, ks) in enumerate(cases):
            xd = x.to(DEV)
            for d in dims:
                for k in ks:
                    if k > x.shape[d]:
                        continue
                    for largest in (False, True):
                        what = "case %d dim %d k %d largest %s" % (n, d, k, largest)
                        v, i = torch.topk(xd, k, dim=d, largest=largest)
                        rv, ri = torch.sort(x, dim=d, descending=largest, stable=True)
                        exact(v, rv.narrow(d, 0, k), what)
                        exact(i, ri.narrow(d, 0, k), what + " indices")
                        exact(v, torch.topk(x, k, dim=d, largest=largest).values, what + " CPU topk")
                        calls += 1
        x = rnd(4, 100)
        v, i = torch.topk(x.to(DEV), 0)
        assert v.shape == (4, 0) and i.shape == (4, 0), (v.shape, i.shape)
        v, i = torch.topk(x.to(DEV), 100, largest=False)    # k = n: the whole sort
        rv, ri = torch.sort(x, stable=True)
        exact(v, rv, "k = n")
        exact(i, ri, "k = n indices")
    assert dev_count("topk") >= before + calls + 2, (calls, mt.device_stats())


@test
def small_types():
    """int8, uint8, bool and int16: sort and topk on the device, against CPU torch's stable sort; one word
    of key and position each for rows up to 65536 (bfloat16 too), two past that. int16 sorts take the CPU
    fallback (counted; faster than the device's, Documentation/benchmarks.rst), its topk the device."""
    cases = [
        torch.randint(-128, 128, (5, 1300), dtype=torch.int8, generator=G),
        torch.randint(0, 256, (5, 1300), generator=G).to(torch.uint8),
        torch.randint(0, 2, (7, 300), generator=G).bool(),
        torch.randint(-2**15, 2**15, (3, 1100), generator=G).to(torch.int16),
        torch.tensor([[-128, 127, 0, -1, 1, 127, -128] * 3]).to(torch.int8),
        torch.tensor([[0, 255, 128, 127, 1, 255, 0] * 3]).to(torch.uint8),
        torch.tensor([[-2**15, 2**15 - 1, 0, -1, 1, 2**15 - 1, -2**15] * 3]).to(torch.int16),
    ]
    before = dev_count("sort"), dev_count("topk"), mt.fallback_stats().get("aten::sort.stable", 0)
    with mt.strict():
        for n, x in enumerate(cases):
            for xx in (x, x.t()):                                 # every dim, a non-contiguous one too
                xd = xx.to(DEV)
                for d in (0, 1):
                    for desc in (False, True):
                        what = "case %d %s dim %d descending %s" % (n, x.dtype, d, desc)
                        with mt.strict(x.dtype != torch.int16):
                            v, i = torch.sort(xd, dim=d, descending=desc, stable=True)
                        rv, ri = torch.sort(xx, dim=d, descending=desc, stable=True)
                        exact(v, rv, what)
                        exact(i, ri, what + " indices")
                        k = min(5, xx.shape[d])
                        v, i = torch.topk(xd, k, dim=d, largest=desc)
                        exact(v, rv.narrow(d, 0, k), what + " topk")
                        exact(i, ri.narrow(d, 0, k), what + " topk indices")
        y = torch.randint(-2**15, 2**15, (1301,), generator=G).to(torch.int16)
        for x, xd in ((torch.randint(-128, 128, (70000,), dtype=torch.int8, generator=G), None),  # not packed
                      (y[1:], y.to(DEV)[1:])):            # int16 from the middle of its first word
            xd = x.to(DEV) if xd is None else xd
            for desc in (False, True):
                with mt.strict(x.dtype != torch.int16):
                    v, i = torch.sort(xd, descending=desc, stable=True)
                rv, ri = torch.sort(x, descending=desc, stable=True)
                what = "%s of %d descending %s" % (x.dtype, x.numel(), desc)
                exact(v, rv, what)
                exact(i, ri, what + " indices")
                v, i = torch.topk(xd, 1000, largest=desc)
                exact(v, rv[:1000], what + " topk 1000")
                exact(i, ri[:1000], what + " topk 1000 indices")
    assert dev_count("sort") >= before[0] + 42 and dev_count("topk") >= before[1] + 60, mt.device_stats()
    assert mt.fallback_stats().get("aten::sort.stable", 0) == before[2] + 18, mt.fallback_stats()


@test
def radix():
    """The counting sort of int8, uint8 and bool rows of 256 and more (ops_sort.cpp's radix_sort()): rows of 256,
    257 and 4099, one row of 40000 (chunks past one 16-lane instance), every dim, transposed, both orders, all ties
    (a constant row), against CPU torch's stable sort, values and indices."""
    cases = []
    for t, lo, hi in ((torch.int8, -128, 128), (torch.uint8, 0, 256), (torch.bool, 0, 2)):
        for shape in ((3, 256), (257, 5), (2, 4099), (40000,)):
            cases.append(torch.randint(lo, hi, shape, generator=G).to(t))
        cases.append(torch.full((2, 300), hi - 1).to(t))
    before = dev_count("sort"), dev_count("copy_convert")
    with mt.strict():
        for x in cases:
            for xx in (x, x.t()) if x.dim() == 2 else (x,):
                xd = xx.to(DEV)
                for d in range(xx.dim()):
                    for desc in (False, True):
                        what = "%s %s dim %d descending %s" % (x.dtype, tuple(xx.shape), d, desc)
                        v, i = torch.sort(xd, dim=d, descending=desc, stable=True)
                        rv, ri = torch.sort(xx, dim=d, descending=desc, stable=True)
                        exact(v, rv, what)
                        exact(i, ri, what + " indices")
    # every row of 256 or more took the radix sort: its values narrowed back by a device conversion
    assert dev_count("sort") - before[0] >= 42 and dev_count("copy_convert") - before[1] >= 30, mt.device_stats()


@test
def bad_k():
    """topk with k past the row: CPU torch's exception and first line."""
    x = rnd(4, 7)
    same_error(lambda: x.to(DEV).topk(8), lambda: x.topk(8))


@test
def gradients():
    x = rnd(5, 6)
    w = rnd(5, 6)
    y = rnd(2, 3000)
    wy = rnd(2, 3000)

    def run_all(dev):
        xs = x.to(dev).detach().requires_grad_()
        ww = w.to(dev)
        v, _ = xs.sort(dim=1, descending=True)
        t, _ = xs.topk(2, dim=0)
        u, _ = xs.reshape(-1).topk(7, largest=False)
        ((v * ww).sum() + (t * ww[:2]).sum() + (u * ww.reshape(-1)[:7]).sum()).backward()
        ys = y.to(dev).detach().requires_grad_()
        z, _ = ys.topk(9, dim=1)
        (z * wy[:, :9].to(dev)).sum().backward()
        return xs.grad, ys.grad

    ref = run_all("cpu")
    with mt.strict():
        got = run_all(DEV)
    close(got[0], ref[0], 1e-6, "d self")
    close(got[1], ref[1], 1e-6, "d self of topk 9 of 2 x 3000")


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
