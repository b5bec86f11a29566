# SPDX-License-Identifier: MIT
"""Advanced indexing and boolean masks on the device
(userspace/torch/ops_advindex.cpp, ops_mask.cpp) in the guest, in strict
mode (no CPU fallback allowed), against CPU torch: x[i], x[i, j], x[i, j,
k], x[i, j, k, l] with None/slices around them (adjacent or separated,
broadcast together, int64 and int32 mixed, ranks 4 and 5), boolean masks
(x[mask], x[mask] = v, nonzero, torch.where(cond), argwhere,
masked_select, masked_scatter_; empty and all-true masks, 1.1M-element
masks, strided ones), x[i] = v and index_put_ with accumulate (repeated
indices adding up), index_add_ with alpha, the gradients of indexing
(index_put_ accumulate), of masked_select (masked_scatter_) and of
index_add; negative indices, odd sizes (past 1024 lanes), non-contiguous
operands, float32 and bfloat16, out-of-range indices raising CPU torch's
own error, a device error in the compaction falling back once (counted).

Bounds: gathers and stores are exact; accumulations (atomic float32 adds
in any order) are within 1e-5 of the largest value of a float64 reference
(bfloat16: 1e-2, one rounding of the float32 sum)."""
import time

import torch

import maia.torch as mt
from tap import raises, run, test
from torch_checks import close, dev_count, exact, same_error

DEV = mt.device
G = torch.Generator().manual_seed(7)


def ri(hi, shape):
    """Indices in [-hi, hi): negative ones too."""
    return torch.randint(-hi, hi, shape, generator=G)


@test
def index_get():
    x3 = torch.randn(5, 6, 7, generator=G)
    wide = torch.randn(3, 1031, generator=G)
    xt = torch.randn(9, 4, generator=G).t()                 # non-contiguous, 4 x 9
    cases = [
        (wide, lambda x, i, j: x[:, ri(1031, (1500,))]),     # past 1024 lanes, a masked tail
        (wide, lambda x, i, j: x[i]),
        (x3, lambda x, i, j: x[i, j]),                       # adjacent, broadcast (4, 1) x (3,)
        (x3, lambda x, i, j: x[:, i, j]),
        (x3, lambda x, i, j: x[i, :, j]),                    # not adjacent: B first
        (x3, lambda x, i, j: x[None, 2, i]),
        (x3, lambda x, i, j: x[..., i]),
        (x3.transpose(0, 2), lambda x, i, j: x[j, ::2, i]),  # strided self
        (xt, lambda x, i, j: x[:, i]),
        (x3.bfloat16(), lambda x, i, j: x[i, j]),
    ]
    i = ri(3, (4, 1))
    j = ri(5, (3,))
    before = dev_count("index")
    with mt.strict():
        for n, (x, f) in enumerate(cases):
            state = G.get_state()
            ref = f(x, i, j)
            G.set_state(state)
            exact(f(x.to(DEV), i.to(DEV), j.to(DEV)), ref, "case %d" % n)
        # CPU index tensors with a device self are moved to it, as torch does for CUDA
        exact(x3.to(DEV)[i, j], x3[i, j], "CPU indices")
        exact(x3.to(DEV)[torch.tensor([], dtype=torch.long).to(DEV)], x3[torch.tensor([], dtype=torch.long)],
              "no indices")
    assert dev_count("index") >= before + len(cases) + 1, mt.device_stats()


@test
def masks():
    x = torch.randn(6, 5, 3, generator=G)
    m = torch.rand(6, 5, generator=G) > 0.5
    m1 = torch.rand(5, generator=G) > 0.3
    with mt.strict():
        exact(x.to(DEV)[m.to(DEV)], x[m], "x[mask]")
        exact(x.to(DEV)[:, m1.to(DEV)], x[:, m1], "x[:, mask]")
        xd = x.to(DEV)
        v = torch.randn(int(m.sum()), 3, generator=G)
        xd[m.to(DEV)] = v.to(DEV)
        y = x.clone()
        y[m] = v
        exact(xd, y, "x[mask] = v")
    same_error(lambda: x.to(DEV)[torch.ones(5, 5, dtype=torch.bool).to(DEV)],
               lambda: x[torch.ones(5, 5, dtype=torch.bool)])


@test
def index_put():
    for dtype, rel in ((torch.float32, 1e-5), (torch.bfloat16, 1e-2)):
        x = torch.randn(7, 1030, generator=G).to(dtype)
        i = torch.tensor([0, -1, 3, 5, -7])
        j = ri(1030, (5, 1))
        perm = torch.randperm(1030, generator=G)[:1029]      # unique: the store is defined
        with mt.strict():
            xd = x.to(DEV)
            xd[i] = torch.full((1030,), 2.5, dtype=dtype).to(DEV)  # one row, broadcast
            y = x.clone()
            y[i] = 2.5
            exact(xd, y, "x[i] = row %s" % dtype)
            xd[:, perm] = x[:, :1029].to(DEV)
            y[:, perm] = x[:, :1029]
            exact(xd, y, "x[:, perm] = v %s" % dtype)
            xd[1, 3] = 4.0                                   # a 0-d CPU value
            y[1, 3] = 4.0
            exact(xd, y, "x[1, 3] = 4")
            # accumulate: repeated indices add up
            ia = torch.randint(-7, 7, (40, 1), generator=G)
            v = torch.randn(40, 5, generator=G).to(dtype)
            jt = ri(1030, (5,))
            got = x.to(DEV).index_put_((ia.to(DEV), jt.to(DEV)), v.to(DEV), accumulate=True)
            ref = x.double().index_put_((ia, jt), v.double(), accumulate=True)
            close(got, ref, rel, "index_put_ accumulate %s" % dtype)
            got = x.to(DEV).index_put((i.to(DEV), j.to(DEV)), torch.ones(5, 5, dtype=dtype).to(DEV), True)
            ref = x.double().index_put((i, j), torch.ones(5, 5).double(), True)
            close(got, ref, rel, "index_put accumulate broadcast %s" % dtype)
    # a non-contiguous self, updated in place through its strides
    xt = torch.randn(8, 6, generator=G).t()
    with mt.strict():
        xd = torch.randn(8, 6, generator=G).to(DEV).t()
        xd.copy_(xt.to(DEV))
        xd.index_put_((torch.tensor([1, 1, -1]).to(DEV),), torch.ones(8).to(DEV), accumulate=True)
        y = xt.clone().index_put_((torch.tensor([1, 1, -1]),), torch.ones(8), accumulate=True)
        close(xd, y, 1e-6, "transposed self")


@test
def index_add():
    for dtype, rel in ((torch.float32, 1e-5), (torch.bfloat16, 1e-2)):
        x = torch.randn(5, 1100, 3, generator=G).to(dtype)
        for dim, alpha in ((0, 1), (1, -0.5), (2, 3)):
            n = x.shape[dim] + 4
            idx = torch.randint(0, x.shape[dim], (n,), generator=G)
            shape = list(x.shape)
            shape[dim] = n
            src = torch.randn(shape, generator=G).to(dtype)
            with mt.strict():
                got = x.to(DEV).index_add_(dim, idx.to(DEV), src.to(DEV), alpha=alpha)
                ref = x.double().index_add_(dim, idx, src.double(), alpha=alpha)
                close(got, ref, rel, "index_add_ dim %d %s" % (dim, dtype))
                got = torch.index_add(x.to(DEV), dim, idx.to(DEV), src.to(DEV))
                close(got, x.double().index_add(dim, idx, src.double()), rel, "index_add %d" % dim)
    src = torch.randn(4, 3, generator=G).t()                  # non-contiguous source
    with mt.strict():
        got = torch.zeros(3, 6).to(DEV).index_add_(1, torch.tensor([5, 0, 5, 2]).to(DEV), src.to(DEV))
        close(got, torch.zeros(3, 6).index_add_(1, torch.tensor([5, 0, 5, 2]), src), 1e-6, "strided source")


@test
def gradients():
    x = torch.randn(6, 1030, generator=G)
    i = torch.tensor([[0, 5, 0], [-1, 2, 0]])                  # repeated: the gradient adds up
    j = ri(1030, (3,))
    g = torch.randn(2, 3, generator=G)
    with mt.strict():
        xd = x.to(DEV).requires_grad_()
        xd[i, j].backward(g.to(DEV))
    xc = x.double().requires_grad_()
    xc[i, j].backward(g.double())
    close(xd.grad, xc.grad, 1e-5, "d x[i, j]")
    s = torch.randn(4, 1030, generator=G)
    idx = torch.tensor([1, 1, 4, 0])
    with mt.strict():
        xd = x.to(DEV).requires_grad_()
        sd = s.to(DEV).requires_grad_()
        (xd.index_add(0, idx.to(DEV), sd, alpha=2.0) * x.to(DEV)).sum().backward()
    xc = x.double().requires_grad_()
    sc = s.double().requires_grad_()
    (xc.index_add(0, idx, sc, alpha=2.0) * x.double()).sum().backward()
    close(xd.grad, xc.grad, 1e-6, "index_add d self")
    close(sd.grad, sc.grad, 1e-6, "index_add d source")


@test
def bad_indices():
    """Out of range (and negative for index_add): CPU torch's own error, from the device's flag."""
    x = torch.randn(4, 5, generator=G)
    bad = torch.tensor([1, 4])
    neg = torch.tensor([0, -5])
    with mt.strict():
        same_error(lambda: x.to(DEV)[bad.to(DEV)], lambda: x[bad])
        same_error(lambda: x.to(DEV)[neg.to(DEV)], lambda: x[neg])
        same_error(lambda: x.to(DEV)[:, torch.tensor([5]).to(DEV)], lambda: x[:, torch.tensor([5])])
        same_error(lambda: x.to(DEV).index_put_((bad.to(DEV),), torch.ones(5).to(DEV), accumulate=True),
                   lambda: x.clone().index_put_((bad,), torch.ones(5), accumulate=True))
        same_error(lambda: x.to(DEV).index_add_(0, torch.tensor([-1]).to(DEV), torch.ones(1, 5).to(DEV)),
                   lambda: x.clone().index_add_(0, torch.tensor([-1]), torch.ones(1, 5)))
        def overlapping(y):
            y[torch.tensor([1, 2]).to(y.device)] = y[:2]      # values overlapping self

        same_error(lambda: overlapping(x.to(DEV)), lambda: overlapping(x.clone()))
        exact(x.to(DEV)[torch.tensor([3, -4]).to(DEV)], x[torch.tensor([3, -4])], "the device fine afterwards")


@test
def many_indices():
    """3 and 4 index tensors (int64 and int32 mixed), adjacent or separated by slices, ranks 4 and 5."""
    x4 = torch.randn(5, 6, 7, 8, generator=G)
    x5 = torch.randn(3, 4, 5, 6, 7, generator=G)
    xp = torch.randn(8, 7, 6, 5, generator=G).permute(3, 1, 0, 2)   # non-contiguous 5 x 7 x 8 x 6
    a = ri(5, (2, 1, 3))
    b = ri(6, (4, 1)).int()
    c = ri(7, (3,))
    d = ri(8, (1, 3))
    ix = dict(a=a, b=b, c=c, d=d, b4=b % 4, c5=c % 5, c6=c % 6, d7=d % 7, e=torch.tensor([0, -1]),
              tr=ri(6, (3, 4)).t())                                 # a transposed index tensor
    cases = [
        (x4, lambda x, t: x[t["a"], t["b"], t["c"]]),                # adjacent at the front: B then 8
        (x4, lambda x, t: x[:, t["b"], t["c"], t["d"]]),             # adjacent after a slice
        (x4, lambda x, t: x[t["a"], :, t["c"], t["d"]]),             # separated: B first
        (x4, lambda x, t: x[t["a"], t["b"], t["c"], t["d"]]),        # 4 of them
        (x4, lambda x, t: x[t["a"], 1:5, t["c"], ::3]),
        (x5, lambda x, t: x[:, t["b4"], t["c5"], :, t["d7"]]),
        (x4, lambda x, t: x[None, t["c5"], :, t["c"]]),              # None: self of rank 5
        (x5, lambda x, t: x[1, ..., t["c6"], t["d7"]]),
        (x5, lambda x, t: x[:, 1:3, t["e"]]),                        # a rank-5 result
        (xp, lambda x, t: x[t["a"], :, t["d"], t["b"]]),
        (x4.bfloat16(), lambda x, t: x[t["a"], t["b"], t["c"]]),
        (x4, lambda x, t: x[t["a"], t["tr"], t["c"][:1]]),
    ]
    before = dev_count("index")
    with mt.strict():
        for n, (x, f) in enumerate(cases):
            ref = f(x, ix)
            exact(f(x.to(DEV), {k: v.to(DEV) for k, v in ix.items()}), ref, "case %d" % n)
    assert dev_count("index") >= before + len(cases), mt.device_stats()
    # stores: unique positions (a permutation) and accumulated repeats
    perm = torch.randperm(5 * 6 * 7, generator=G)[:50]             # unique (i0, i1, i2): the store is defined
    i0, i1, i2 = perm // 42, perm // 7 % 6, perm % 7
    v = torch.randn(50, 8, generator=G)
    with mt.strict():
        xd = x4.to(DEV)
        xd[i0.to(DEV), i1.to(DEV), i2.int().to(DEV)] = v.to(DEV)
        y = x4.clone()
        y[i0, i1, i2] = v
        exact(xd, y, "x[i, j, k] = v")
        xd = xp.to(DEV)
        xd[:, c, d, b] = 1.5                                    # strided self, separated, broadcast value
        y = xp.clone()
        y[:, c, d, b] = 1.5
        exact(xd, y, "x[:, c, d, b] = 1.5 (permuted self)")
        ia, ib, ic = ri(5, (30,)), ri(6, (30,)), ri(7, (1,))
        w = torch.randn(30, 8, generator=G)
        got = x4.to(DEV).index_put_((ia.to(DEV), ib.to(DEV), ic.to(DEV)), w.to(DEV), accumulate=True)
        ref = x4.double().index_put_((ia, ib, ic), w.double(), accumulate=True)
        close(got, ref, 1e-5, "index_put_ accumulate, 3 indices")
    xg = x4.double().requires_grad_()
    xg[a, :, c, d].sum().backward()
    with mt.strict():
        xd = x4.to(DEV).requires_grad_()
        xd[a.to(DEV), :, c.to(DEV), d.to(DEV)].sum().backward()
    close(xd.grad, xg.grad, 1e-6, "d x[a, :, c, d]")
    same_error(lambda: x4.to(DEV)[a.to(DEV), b.to(DEV), torch.tensor([7]).to(DEV)],
               lambda: x4[a, b, torch.tensor([7])])
    same_error(lambda: x4.to(DEV)[a.to(DEV), b.to(DEV), c[:2].to(DEV)], lambda: x4[a, b, c[:2]])  # shapes


def ref_nonzero_cases():
    """Masks: odd shapes, past 1024 blocks (the scan's second chunk), empty, all set, strided, NaN and -0.0."""
    big = torch.zeros(1100 * 1024 + 5, dtype=torch.bool)              # 1101 blocks, sparse: cheap to check
    big[torch.randint(0, big.numel(), (3000,), generator=G)] = True
    big[-1] = True
    f = torch.tensor([[0.0, -0.0, float("nan")], [1.5, 0.0, float("-inf")]])
    return [
        ("odd", torch.rand(3, 1031, generator=G) > 0.5),
        ("big", big),
        ("none set", torch.zeros(7, 5, dtype=torch.bool)),
        ("all set", torch.ones(2, 3, 4, dtype=torch.bool)),
        ("rank 5", torch.rand(2, 3, 1, 4, 5, generator=G) > 0.5),
        ("transposed", (torch.rand(40, 30, generator=G) > 0.5).t()),
        ("float", f),
        ("int32", torch.randint(-2, 2, (9, 7), generator=G).int()),
        ("uint8", torch.randint(0, 3, (6, 6), generator=G).to(torch.uint8)),
        ("empty", torch.zeros(0, 4, dtype=torch.bool)),
    ]


@test
def nonzero_where():
    before = dev_count("nonzero")
    cases = ref_nonzero_cases()
    with mt.strict():
        for name, m in cases:
            exact(m.to(DEV).nonzero(), m.nonzero(), "nonzero %s" % name)
        m = cases[0][1]
        for got, ref in zip(torch.where(m.to(DEV)), torch.where(m)):
            exact(got, ref, "torch.where(cond)")
        exact(torch.argwhere(m.to(DEV)), torch.argwhere(m), "argwhere")
    assert dev_count("nonzero") >= before + len(cases), mt.device_stats()


@test
def masks_more():
    """x[mask] with a mask over some dimensions, beside an index; masked_select broadcast; masked_scatter_."""
    x = torch.randn(4, 5, 6, generator=G)
    m2 = torch.rand(4, 5, generator=G) > 0.4
    m1 = torch.rand(6, generator=G) > 0.5
    i = torch.tensor([0, -1, 2])
    xt = torch.randn(6, 5, 4, generator=G).permute(2, 1, 0)         # non-contiguous self
    with mt.strict():
        exact(x.to(DEV)[m2.to(DEV)], x[m2], "x[mask2]")
        exact(x.to(DEV)[m2], x[m2], "x[CPU mask]")                   # copied to the device, as for CUDA
        exact(x.to(DEV)[:, :, m1.to(DEV)], x[:, :, m1], "x[:, :, mask]")
        m3 = torch.tensor([True, False, True, False, False, True])  # 3 set: broadcast with i
        exact(x.to(DEV)[i.to(DEV), :, m3.to(DEV)], x[i, :, m3], "x[i, :, mask]")
        exact(xt.to(DEV)[m2.to(DEV)], xt[m2], "strided x[mask]")
        exact(x.to(DEV)[torch.zeros(4, 5, dtype=torch.bool).to(DEV)], x[torch.zeros(4, 5, dtype=torch.bool)],
              "empty mask")
        exact(x.to(DEV)[torch.ones(4, dtype=torch.bool).to(DEV)], x[torch.ones(4, dtype=torch.bool)], "all set")
        xd = xt.to(DEV)
        xd[m2.to(DEV)] = 2.0
        y = xt.clone()
        y[m2] = 2.0
        exact(xd, y, "strided x[mask] = 2")
        for name, s, m in (("same shape", x, x > 0.3), ("broadcast mask", x, m1),
                           ("broadcast self", x[:, :1], torch.rand(4, 5, 6, generator=G) > 0.5),
                           ("bfloat16", x.bfloat16(), m1), ("none", x, torch.zeros(6, dtype=torch.bool))):
            exact(torch.masked_select(s.to(DEV), m.to(DEV)), torch.masked_select(s, m), "masked_select %s" % name)
        src = torch.randn(200, generator=G)
        for name, m in (("same shape", x > 0.3), ("broadcast", m1), ("none", torch.zeros(4, 5, 6, dtype=torch.bool))):
            got = x.to(DEV).masked_scatter_(m.to(DEV), src.to(DEV))
            exact(got, x.clone().masked_scatter_(m, src), "masked_scatter_ %s" % name)
        exact(x.to(DEV).masked_scatter(m2[..., None].to(DEV), src.view(10, 20).t().to(DEV)),
              x.masked_scatter(m2[..., None], src.view(10, 20).t()), "masked_scatter, strided source")
    same_error(lambda: x.to(DEV).masked_scatter_(torch.ones(6, dtype=torch.bool).to(DEV), src[:5].to(DEV)),
               lambda: x.clone().masked_scatter_(torch.ones(6, dtype=torch.bool), src[:5]))
    # gradients: masked_select's is masked_scatter_, x[mask]'s is index_put_ accumulate
    g = torch.randn(int((x > 0.3).sum()), generator=G)
    xc = x.double().requires_grad_()
    torch.masked_select(xc, xc.detach() > 0.3).backward(g.double())
    xc2 = x.double().requires_grad_()
    (xc2[m2] * 3).sum().backward()
    with mt.strict():
        xd = x.to(DEV).requires_grad_()
        torch.masked_select(xd, xd.detach() > 0.3).backward(g.to(DEV))
        xd2 = x.to(DEV).requires_grad_()
        (xd2[m2.to(DEV)] * 3).sum().backward()
    close(xd.grad, xc.grad, 1e-6, "d masked_select")
    close(xd2.grad, xc2.grad, 1e-6, "d x[mask]")
    # a device error in the compaction: nonzero once on the CPU, counted; strict mode raises
    m = x > 0
    before = mt.fallback_stats().get("aten::nonzero", 0)
    torch.ops.maia.tvp_inject_fault("mskcnt")
    exact(m.to(DEV).nonzero(), m.nonzero(), "nonzero after a device error")
    assert mt.fallback_stats().get("aten::nonzero", 0) == before + 1, mt.fallback_stats()
    torch.ops.maia.tvp_inject_fault("mskidx")
    with mt.strict():
        raises(RuntimeError, lambda: m.to(DEV).nonzero(),
               match="its TVP kernel failed on the device")
        exact(x.to(DEV)[m.to(DEV)], x[m], "the device fine afterwards")


@test
def summary():
    """Print where the ops ran and how long the file took (not a check)."""
    print("# device ops: %s" % ", ".join("%s x%d" % kv for kv in sorted(mt.device_stats().items())
                                         if kv[0] in ("index", "index_put_", "index_add", "nonzero",
                                                                           "masked_select", "masked_scatter_")))
    print("# fallback ops: %s" % mt.fallback_stats())
    print("# test_torch_advindex.py: %.1f s" % (time.monotonic() - START))


if __name__ == "__main__":
    START = time.monotonic()
    mt.reset_stats()
    run("torch advindex")
