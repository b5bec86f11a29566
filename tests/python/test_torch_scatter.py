# SPDX-License-Identifier: MIT
"""scatter, scatter_reduce, index_copy, index_fill_ (ops_scatter.cpp) on the
device in the guest, in strict mode (no CPU fallback allowed), against CPU
torch: every dim (negative ones too), odd sizes (past 1024 lanes),
non-contiguous operands, empty ones, float32, bfloat16, float16, int32
(the reductions too), int64/float64 (plain scatters), bool and uint8
where the op takes them, the reductions on int8, uint8 and int16,
repeated indices (up to ~700 to one element), walks long enough to be chunked (up to 16384 steps), out-of-range indices
raising CPU torch's own error with the operand unchanged (past the first
chunk too), gradients (index_copy, scatter, scatter_reduce) against CPU
autograd. The sorts are test_torch_sort.py's.

Bounds: plain scatter, index_copy, index_fill_, amax/amin and every int32
reduction are exact; sum, prod and mean on floats round to self's dtype
each step, in index order (serial walks, as CPU torch does) or in the
chunks' order (chunked ones): within 1e-5 (bfloat16 2e-2) of the largest
value of a float64 reference. Repeated indices in plain scatter and
index_copy: the last one along dim wins, checked against a reference
that applies one position along dim at a time or takes CPU torch's amax
of the positions (torch leaves it undefined)."""
import time
import warnings

import torch

import maia.torch as mt
from tap import raises, run, test
from torch_checks import close, dev_count, exact, same_error

DEV = mt.device
G = torch.Generator().manual_seed(31)


def rnd(*shape, dtype=torch.float32):
    return torch.randn(*shape, generator=G).to(dtype)


def last_wins_scatter(x, d, idx, src):
    """scatter with repeated indices, one position along d at a time: the last one stays."""
    ref = x.clone()
    for j in range(idx.shape[d]):
        ref.scatter_(d, idx.narrow(d, j, 1), src.narrow(d, j, 1))
    return ref


@test
def scatter_values():
    x = rnd(5, 7, 1030)
    before = dev_count("scatter")
    with mt.strict():
        for d in (0, 1, 2, -1, -3):
            shape = [4, 6, 1100 if d % 3 == 2 else 900]
            shape[d] = 3
            idx = torch.randint(0, x.shape[d], shape, generator=G)
            src = rnd(5, 7, 1100)
            got = x.to(DEV).scatter(d, idx.to(DEV), src.to(DEV))
            exact(got, last_wins_scatter(x, d, idx, src), "scatter dim %d" % d)
            got = x.to(DEV).scatter_(d, idx.to(DEV), -1.5)
            exact(got, x.clone().scatter_(d, idx, -1.5), "scatter_ value dim %d" % d)
        # non-contiguous self, index and src; int32 and bool; reduce= add / multiply
        xt, it, st = rnd(9, 6).t(), torch.randint(0, 6, (9, 4), generator=G).t(), rnd(10, 5).t()
        exact(xt.to(DEV).scatter(1, it.to(DEV), st.to(DEV)), last_wins_scatter(xt, 1, it, st), "transposed")
        xi = torch.randint(-9, 9, (3, 1200), dtype=torch.int32, generator=G)
        ii = torch.randint(0, 1200, (3, 700), generator=G)
        si = torch.randint(-9, 9, (3, 700), dtype=torch.int32, generator=G)
        exact(xi.to(DEV).scatter(1, ii.to(DEV), si.to(DEV)), last_wins_scatter(xi, 1, ii, si), "int32")
        xb = torch.zeros(4, 5, dtype=torch.bool)
        ib = torch.tensor([[0, 2], [4, 4], [1, 3], [0, 0]])
        exact(xb.to(DEV).scatter(1, ib.to(DEV), True), xb.scatter(1, ib, True), "bool value")
        xu = torch.randint(0, 256, (4, 5), dtype=torch.uint8, generator=G)
        exact(xu.to(DEV).scatter(1, ib.to(DEV), 200), xu.scatter(1, ib, 200), "uint8 value 200")
        exact(xu.to(DEV).scatter(1, ib.to(DEV), xu.to(DEV)), xu.scatter(1, ib, xu), "uint8 src")
        for reduce in ("add", "multiply"):
            idx = torch.randint(0, 7, (5, 20, 3), generator=G)
            src = rnd(5, 20, 3)
            with warnings.catch_warnings():   # torch: reduce= with a src tensor is deprecated
                warnings.simplefilter("ignore", UserWarning)
                got = x.to(DEV).scatter(1, idx.to(DEV), src.to(DEV), reduce=reduce)
                ref = x.double().scatter(1, idx, src.double(), reduce=reduce)
            close(got, ref, 1e-5, "reduce=" + reduce)
            got = x.to(DEV).scatter(1, idx.to(DEV), 1.25, reduce=reduce)
            close(got, x.double().scatter(1, idx, 1.25, reduce=reduce), 1e-5, "value reduce=" + reduce)
        # empty index: self unchanged
        e = torch.empty(5, 0, 3, dtype=torch.long)
        exact(x.to(DEV).scatter(1, e.to(DEV), rnd(5, 1, 3).to(DEV)), x, "empty index")
    assert dev_count("scatter") >= before + 20, mt.device_stats()


@test
def scatter_reduce_values():
    before = dev_count("scatter_reduce")
    for dtype, rel in ((torch.float32, 1e-5), (torch.bfloat16, 2e-2), (torch.float16, 4e-3)):
        x = rnd(6, 1030, dtype=dtype)
        for d in (0, -1):
            shape = [40, 1030] if d == 0 else [6, 2100]
            idx = torch.randint(0, x.shape[d], shape, generator=G)
            src = (rnd(*shape) * 0.5 + 1 if d == 0 else rnd(*shape)).to(dtype)   # prod: factors near 1
            with mt.strict():
                for red in ("sum", "prod", "mean", "amax", "amin"):
                    for inc in (True, False):
                        got = x.to(DEV).scatter_reduce(d, idx.to(DEV), src.to(DEV), red, include_self=inc)
                        ref = x.double().scatter_reduce(d, idx, src.double(), red, include_self=inc)
                        what = "%s include_self=%s dim %d %s" % (red, inc, d, dtype)
                        if red in ("amax", "amin"):
                            exact(got, x.scatter_reduce(d, idx, src, red, include_self=inc), what)
                        else:
                            close(got, ref, rel if red != "prod" else 4 * rel, what)
    x = rnd(4, 9)
    src = rnd(4, 12)
    src[1, 3] = float("nan")
    idx = torch.randint(0, 9, (4, 12), generator=G)
    with mt.strict():
        for red in ("amax", "amin"):      # a NaN wins, as on the CPU
            got = x.to(DEV).scatter_reduce_(1, idx.to(DEV), src.to(DEV), red)
            exact(got, x.clone().scatter_reduce_(1, idx, src, red), "NaN " + red)
    assert dev_count("scatter_reduce") >= before + 62, mt.device_stats()


@test
def index_copy_fill():
    x = rnd(6, 1030, 3)
    before = (dev_count("index_copy"), dev_count("index_fill_"))
    with mt.strict():
        for d in (0, 1, -1):
            n = x.shape[d]
            idx = torch.randperm(n, generator=G)[: max(1, n - 2)]
            shape = list(x.shape)
            shape[d] = idx.numel()
            src = rnd(*shape)
            exact(x.to(DEV).index_copy(d, idx.to(DEV), src.to(DEV)), x.index_copy(d, idx, src), "index_copy %d" % d)
            fi = torch.randint(-n, n, (5,), generator=G)           # negative ones count from the end
            exact(x.to(DEV).index_fill_(d, fi.to(DEV), 2.5), x.clone().index_fill_(d, fi, 2.5), "index_fill_ %d" % d)
        # repeated indices: the last one wins
        idx = torch.tensor([2, 0, 2, 5, 0])
        src = rnd(5, 1030, 3)
        ref = x.clone()
        for j, i in enumerate(idx.tolist()):
            ref[i] = src[j]
        xd = x.to(DEV)
        xd.index_copy_(0, idx.to(DEV), src.to(DEV))
        exact(xd, ref, "index_copy_ repeated")
        # non-contiguous self and source, a 0-d tensor value, int32 and bool
        xt, st = rnd(7, 5).t(), rnd(3, 5).t()
        i3 = torch.tensor([6, 1, 3])
        exact(xt.to(DEV).index_copy(1, i3.to(DEV), st.to(DEV)), xt.index_copy(1, i3, st), "transposed")
        exact(xt.to(DEV).index_fill(1, i3.to(DEV), torch.tensor(-4.0)), xt.index_fill(1, i3, -4.0), "0-d value")
        xi = torch.arange(12, dtype=torch.int32).reshape(3, 4)
        exact(xi.to(DEV).index_fill(1, torch.tensor([-1, 1]).to(DEV), 7), xi.index_fill(1, torch.tensor([-1, 1]), 7),
              "int32")
        xb = torch.zeros(3, 4, dtype=torch.bool)
        exact(xb.to(DEV).index_fill(0, torch.tensor([1]).to(DEV), True), xb.index_fill(0, torch.tensor([1]), True),
              "bool")
        e = torch.empty(0, dtype=torch.long)
        exact(x.to(DEV).index_copy(1, e.to(DEV), rnd(6, 0, 3).to(DEV)), x, "empty index_copy")
        exact(x.to(DEV).index_fill(1, e.to(DEV), 1.0), x, "empty index_fill")
    assert dev_count("index_copy") >= before[0] + 6 and dev_count("index_fill_") >= before[1] + 7, \
        mt.device_stats()


@test
def bad_indices():
    """Out of range: CPU torch's exception and first line, self unchanged; nothing crashes."""
    x = rnd(4, 7)
    bad = torch.tensor([[0, 7]] * 4)
    neg = torch.tensor([[0, -1]] * 4)
    for i in (bad, neg):
        same_error(lambda: x.to(DEV).scatter(1, i.to(DEV), rnd(4, 2).to(DEV)), lambda: x.scatter(1, i, rnd(4, 2)))
        same_error(lambda: x.to(DEV).scatter_reduce(1, i.to(DEV), rnd(4, 2).to(DEV), "amax"),
                   lambda: x.scatter_reduce(1, i, rnd(4, 2), "amax"))
    same_error(lambda: x.to(DEV).index_copy(1, torch.tensor([1, 9]).to(DEV), rnd(4, 2).to(DEV)),
               lambda: x.index_copy(1, torch.tensor([1, 9]), rnd(4, 2)))
    same_error(lambda: x.to(DEV).index_fill_(1, torch.tensor([-8]).to(DEV), 1.0),
               lambda: x.clone().index_fill_(1, torch.tensor([-8]), 1.0))
    same_error(lambda: x.to(DEV).scatter(1, bad.int().to(DEV), 1.0), lambda: x.scatter(1, bad.int(), 1.0))
    one = torch.tensor([[1, 0, 2]])
    x8 = torch.zeros(2, 3, dtype=torch.int8)
    same_error(lambda: x8.to(DEV).scatter(1, one.to(DEV), 300), lambda: x8.scatter(1, one, 300))   # overflow
    same_error(lambda: x8.to(DEV).index_fill(1, one[0].to(DEV), -129), lambda: x8.index_fill(1, one[0], -129))
    m8 = torch.tensor([[True, False, True]] * 2)
    same_error(lambda: x8.to(DEV).masked_fill(m8.to(DEV), 300), lambda: x8.masked_fill(m8, 300))
    with mt.strict():
        xu = torch.zeros(2, 3, dtype=torch.uint8)
        exact(xu.to(DEV).masked_fill(m8.to(DEV), 200), xu.masked_fill(m8, 200), "masked_fill uint8 200")
    same_error(lambda: torch.zeros(1, 3).to(DEV).expand(4, 3).scatter_(1, one.to(DEV), 1.0),   # overlapping self
               lambda: torch.zeros(1, 3).expand(4, 3).scatter_(1, one, 1.0))
    xd = x.to(DEV)
    raises(RuntimeError, lambda: xd.scatter_(1, bad.to(DEV), 9.0))
    exact(xd, x, "self unchanged after a bad index")
    exact(xd.scatter(1, torch.tensor([[1]] * 4).to(DEV), 9.0), x.scatter(1, torch.tensor([[1]] * 4), 9.0),
          "the device fine afterwards")


@test
def gradients():
    x = rnd(5, 6)
    w = rnd(5, 6)
    idx = torch.tensor([4, 0, 2])
    src = rnd(3, 6)
    sidx = torch.randint(0, 6, (5, 4), generator=G)
    ssrc = rnd(5, 4)

    def run_all(dev):
        xs = x.to(dev).detach().requires_grad_()
        ss = src.to(dev).detach().requires_grad_()
        ts = ssrc.to(dev).detach().requires_grad_()
        ww = w.to(dev)
        y = xs.index_copy(0, idx.to(dev), ss) * ww
        y = y + xs.scatter(1, sidx.to(dev), ts) * ww
        y.sum().backward()
        return xs.grad, ss.grad, ts.grad

    ref = run_all("cpu")
    with mt.strict():
        got = run_all(DEV)
    for g, r, what in zip(got, ref, ("self", "index_copy source", "scatter src")):
        close(g, r, 1e-6, "d " + what)


@test
def rank5():
    """ops_index.cpp's programs and the scatters on rank-5 tensors (iteration shapes of rank 5)."""
    x = rnd(2, 3, 4, 5, 6)
    i = torch.randint(0, 4, (2, 3, 7, 5, 6), generator=G)
    m = torch.rand(3, 1, 5, 1, generator=G) > 0.5
    sel = torch.tensor([3, 0, 3])
    src = rnd(2, 3, 7, 5, 6)
    before = dev_count("gather"), dev_count("scatter_add"), dev_count("index_select"), dev_count("masked_fill_")
    with mt.strict():
        xd = x.to(DEV)
        exact(xd.gather(2, i.to(DEV)), x.gather(2, i), "gather")
        exact(xd.index_select(-2, sel.to(DEV)), x.index_select(-2, sel), "index_select")
        exact(xd.masked_fill(m.to(DEV), -2.0), x.masked_fill(m, -2.0), "masked_fill")
        close(xd.scatter_add(2, i.to(DEV), src.to(DEV)), x.double().scatter_add(2, i, src.double()), 1e-5,
              "scatter_add")
        exact(xd.scatter(2, i.to(DEV), src.to(DEV)), last_wins_scatter(x, 2, i, src), "scatter")
    after = dev_count("gather"), dev_count("scatter_add"), dev_count("index_select"), dev_count("masked_fill_")
    assert all(a > b for a, b in zip(after, before)), mt.device_stats()


def last_writer(x, d, idx, src):
    """Plain scatter with repeated indices, the last one along d winning, from CPU torch's amax of positions."""
    pos = torch.arange(idx.shape[d]).reshape([-1 if k == d % x.dim() else 1 for k in range(x.dim())]).expand(idx.shape)
    last = torch.full(x.shape, -1).scatter_reduce(d, idx, pos.contiguous(), "amax")
    return torch.where(last >= 0, src.gather(d, last.clamp(min=0)), x)


@test
def long_walks():
    """Walks past a chunk (the chunked walk and its combine): 1-D, both dims of 2-D, transposed operands,
    many indices to one element, every reduction with and without self; float32, bfloat16, int32."""
    before = dev_count("scatter_reduce"), dev_count("scatter")
    cases = [(rnd(1024), 0, torch.randint(0, 1024, (16384,), generator=G)),
             (rnd(7), 0, torch.randint(0, 7, (5000,), generator=G)),              # ~700 to one
             (rnd(3, 300), 1, torch.randint(0, 300, (3, 4100), generator=G)),
             (rnd(300, 3).t(), 0, torch.randint(0, 3, (300, 2100), generator=G).t()),
             (rnd(40, 3), 0, torch.randint(0, 40, (3000, 3), generator=G).t().contiguous().t())]
    with mt.strict():
        for n, (x, d, idx) in enumerate(cases):
            src = rnd(*idx.shape)
            xd, idd, sd = x.to(DEV), idx.to(DEV), src.to(DEV)
            exact(xd.scatter(d, idd, sd), last_writer(x, d, idx, src), "case %d scatter" % n)
            exact(xd.scatter(d, idd, 2.5), x.scatter(d, idx, 2.5), "case %d scatter value" % n)
            xi = torch.randint(-50, 50, x.shape, dtype=torch.int32, generator=G)
            si = torch.randint(-50, 50, idx.shape, dtype=torch.int32, generator=G)
            sm = torch.randint(-1, 2, idx.shape, dtype=torch.int32, generator=G) | 1    # prod: +-1
            for red in ("sum", "prod", "mean", "amax", "amin"):
                for inc in (True, False):
                    what = "case %d %s include_self=%s" % (n, red, inc)
                    if red in ("amax", "amin"):
                        exact(xd.scatter_reduce(d, idd, sd, red, include_self=inc),
                              x.scatter_reduce(d, idx, src, red, include_self=inc), what)
                    else:
                        s = src if red != "prod" else src.sign() * (1 + src.abs() * 1e-3)
                        got = xd.scatter_reduce(d, idd, s.to(DEV), red, include_self=inc)
                        close(got, x.double().scatter_reduce(d, idx, s.double(), red, include_self=inc), 1e-5, what)
                    ss = sm if red == "prod" else si
                    exact(xi.to(DEV).scatter_reduce(d, idd, ss.to(DEV), red, include_self=inc),
                          xi.scatter_reduce(d, idx, ss, red, include_self=inc), what + " int32")
        xb, sb = rnd(1024, dtype=torch.bfloat16), rnd(16384, dtype=torch.bfloat16)
        j = cases[0][2]
        close(xb.to(DEV).scatter_reduce(0, j.to(DEV), sb.to(DEV), "sum"),
              xb.double().scatter_reduce(0, j, sb.double(), "sum"), 2e-2, "bfloat16 sum")
        exact(xb.to(DEV).scatter_reduce(0, j.to(DEV), sb.to(DEV), "amax"), xb.scatter_reduce(0, j, sb, "amax"),
              "bfloat16 amax")
        # index_copy and index_fill_ along a long dim, repeated indices: the last one wins
        x = rnd(3000, 2)
        idx = torch.randint(0, 3000, (5000,), generator=G)
        src = rnd(5000, 2)
        exact(x.to(DEV).index_copy(0, idx.to(DEV), src.to(DEV)), last_writer(x, 0, idx[:, None].expand(5000, 2), src),
              "index_copy 5000 into 3000")
        fi = torch.randint(-3000, 3000, (4000,), generator=G)
        exact(x.to(DEV).index_fill_(0, fi.to(DEV), -1.0), x.clone().index_fill_(0, fi, -1.0), "index_fill_ 4000")
    assert dev_count("scatter_reduce") >= before[0] + 102 and dev_count("scatter") >= before[1] + 10, \
        mt.device_stats()
    # bad indices past the first chunk: CPU torch's error, self unchanged
    x = rnd(1024)
    bad = cases[0][2].clone()
    bad[9000] = 1024
    xd = x.to(DEV)
    same_error(lambda: xd.scatter_reduce_(0, bad.to(DEV), rnd(16384).to(DEV), "amax"),
               lambda: x.clone().scatter_reduce_(0, bad, rnd(16384), "amax"))
    same_error(lambda: xd.scatter_(0, bad.to(DEV), rnd(16384).to(DEV)), lambda: x.clone().scatter_(0, bad, rnd(16384)))
    exact(xd, x, "self unchanged after a bad index past a chunk")


@test
def int_types():
    """scatter_reduce and reduce= on int32 and int64; plain scatters, index_copy and
    index_fill_ on int64 and float64 (as two int32 words); index_fill_ with a tensor value that is not 0-d:
    CPU torch's error."""
    x = torch.randint(-20, 20, (5, 9), dtype=torch.int32, generator=G)
    idx = torch.randint(0, 9, (5, 6), generator=G)
    src = torch.randint(-20, 20, (5, 6), dtype=torch.int32, generator=G)
    before = dev_count("scatter_reduce"), dev_count("scatter"), dev_count("index_copy"), dev_count("index_fill_")
    with mt.strict():
        for d in (0, 1):
            i = idx if d == 1 else idx.t()[:5] % 5
            s = src if d == 1 else src.t()[:5]
            for red in ("sum", "prod", "mean", "amax", "amin"):
                for inc in (True, False):
                    exact(x.to(DEV).scatter_reduce(d, i.to(DEV), s.to(DEV), red, include_self=inc),
                          x.scatter_reduce(d, i, s, red, include_self=inc), "int32 %s %s dim %d" % (red, inc, d))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for reduce in ("add", "multiply"):
                exact(x.to(DEV).scatter(1, idx.to(DEV), src.to(DEV), reduce=reduce),
                      x.scatter(1, idx, src, reduce=reduce), "int32 reduce=" + reduce)
                exact(x.to(DEV).scatter(1, idx.to(DEV), -3, reduce=reduce), x.scatter(1, idx, -3, reduce=reduce),
                      "int32 value reduce=" + reduce)
        # int64: values past 32 bits, wrapping sums and products, both dims, transposed, long walks
        xl = torch.randint(-2**62, 2**62, (5, 9), generator=G)
        for d in (0, 1):
            i = idx if d == 1 else idx.t()[:5] % 5
            for red in ("sum", "prod", "mean", "amax", "amin"):
                hi = 2**31 if red == "prod" else 2**62
                s = torch.randint(-hi, hi, i.shape, generator=G)
                for inc in (True, False):
                    exact(xl.t().contiguous().t().to(DEV).scatter_reduce(d, i.to(DEV), s.to(DEV), red, include_self=inc),
                          xl.scatter_reduce(d, i, s, red, include_self=inc), "int64 %s %s dim %d" % (red, inc, d))
        jl = torch.randint(0, 9, (5, 3000), generator=G)
        sl = torch.randint(-2**40, 2**40, (5, 3000), generator=G)
        sl[:, ::7] = torch.tensor([2**63 - 1, -2**63, -1, 2**32, 2**32 - 1])[:, None]
        for red in ("sum", "mean", "amax", "amin"):
            exact(xl.to(DEV).scatter_reduce(1, jl.to(DEV), sl.to(DEV), red, include_self=False),
                  xl.scatter_reduce(1, jl, sl, red, include_self=False), "int64 long %s" % red)
        sp = torch.randint(-1, 2, (5, 3000), generator=G) | 1
        sp[:, ::500] = 3
        exact(xl.to(DEV).scatter_reduce(1, jl.to(DEV), sp.to(DEV), "prod"), xl.scatter_reduce(1, jl, sp, "prod"),
              "int64 long prod")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            for reduce in ("add", "multiply"):
                exact(xl.to(DEV).scatter(1, idx.to(DEV), 2**40 + 3, reduce=reduce),
                      xl.scatter(1, idx, 2**40 + 3, reduce=reduce), "int64 value reduce=" + reduce)
        big = torch.tensor([2**40 + 3, -2**62, 2**63 - 1, -1, 0, 7])
        for xl in (torch.randint(-2**50, 2**50, (4, 6, 5), generator=G), rnd(4, 6, 5).double()):
            il = torch.randint(0, 6, (4, 9, 5), generator=G)
            sl = (big[torch.randint(0, 6, (4, 9, 5), generator=G)] if xl.dtype == torch.long else
                  rnd(4, 9, 5).double())
            exact(xl.to(DEV).scatter(1, il.to(DEV), sl.to(DEV)), last_writer(xl, 1, il, sl), "%s scatter" % xl.dtype)
            v = 2**40 + 3 if xl.dtype == torch.long else 1e300
            exact(xl.to(DEV).scatter(1, il.to(DEV), v), xl.scatter(1, il, v), "%s scatter value" % xl.dtype)
            ic = torch.tensor([5, 0, 2])
            exact(xl.to(DEV).index_copy(1, ic.to(DEV), sl[:, :3].to(DEV)), xl.index_copy(1, ic, sl[:, :3]),
                  "%s index_copy" % xl.dtype)
            exact(xl.to(DEV).index_fill_(2, torch.tensor([-1, 1]).to(DEV), v),
                  xl.clone().index_fill_(2, torch.tensor([-1, 1]), v), "%s index_fill_" % xl.dtype)
            exact(xl.to(DEV).transpose(0, 2).index_fill_(0, torch.tensor([3]).to(DEV), torch.tensor(-5)),
                  xl.transpose(0, 2).clone().index_fill_(0, torch.tensor([3]), -5), "%s transposed" % xl.dtype)
    after = dev_count("scatter_reduce"), dev_count("scatter"), dev_count("index_copy"), dev_count("index_fill_")
    assert after[0] >= before[0] + 45 and after[1] >= before[1] + 10 and after[2] >= before[2] + 2 and \
        after[3] >= before[3] + 4, mt.device_stats()
    xf = rnd(3, 4)
    for v in (torch.tensor([5.0]), torch.tensor([1.0, 2.0]), torch.tensor([[5.0]])):
        same_error(lambda: xf.to(DEV).index_fill_(1, torch.tensor([0, 1]).to(DEV), v.to(DEV)),
                   lambda: xf.clone().index_fill_(1, torch.tensor([0, 1]), v))


@test
def small_int_types():
    """scatter_reduce and reduce= on int8, uint8 and int16 (int32 lanes, ops_scatter.cpp's widen()): values over the
    whole range, sums and products wrapping, both dims, a transposed self, odd shapes, value forms at the types'
    ends, a walk long enough to be chunked, mean up to the most updates per element it takes on the device
    (CPU torch sums and counts in the type; past that limit: the fallback, exact)."""
    ranges = {torch.int8: (-128, 128), torch.uint8: (0, 256), torch.int16: (-2**15, 2**15)}
    before = dev_count("scatter_reduce"), dev_count("scatter")
    cases = 0
    with mt.strict():
        for t, (lo, hi) in ranges.items():
            x = torch.randint(lo, hi, (7, 11), generator=G).to(t)
            idx = torch.randint(0, 11, (7, 13), generator=G)
            src = torch.randint(lo, hi, (7, 13), generator=G).to(t)
            for d in (0, 1):
                i = idx if d == 1 else idx.t()[:7] % 7
                s = src if d == 1 else src.t()[:7]
                for red in ("sum", "prod", "mean", "amax", "amin"):
                    for inc in (True, False):
                        exact(x.t().contiguous().t().to(DEV).scatter_reduce(d, i.to(DEV), s.to(DEV), red,
                                                                            include_self=inc),
                              x.scatter_reduce(d, i, s, red, include_self=inc), "%s %s %s dim %d" % (t, red, inc, d))
                        cases += 1
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                for reduce in ("add", "multiply"):
                    exact(x.to(DEV).scatter(1, idx.to(DEV), src.to(DEV), reduce=reduce),
                          x.scatter(1, idx, src, reduce=reduce), "%s reduce=%s" % (t, reduce))
                    for v in (lo, hi - 1, 3):
                        exact(x.to(DEV).scatter(1, idx.to(DEV), v, reduce=reduce), x.scatter(1, idx, v, reduce=reduce),
                              "%s value %d reduce=%s" % (t, v, reduce))
            # a long walk (chunked), 1-D into 5 elements: ~600 updates each
            xl = torch.randint(lo, hi, (5,), generator=G).to(t)
            jl = torch.randint(0, 5, (3001,), generator=G)
            sl = torch.randint(lo, hi, (3001,), generator=G).to(t)
            for red in ("sum", "prod", "amax", "amin"):
                exact(xl.to(DEV).scatter_reduce(0, jl.to(DEV), sl.to(DEV), red), xl.scatter_reduce(0, jl, sl, red),
                      "%s long %s" % (t, red))
                cases += 1
            # mean: every update to one element, as many as it takes on the device
            most = {torch.int8: 126, torch.uint8: 254, torch.int16: 32766}[t]
            jm, sm = torch.zeros(most, dtype=torch.long), torch.randint(lo, hi, (most,), generator=G).to(t)
            for inc in (True, False):
                exact(xl.to(DEV).scatter_reduce(0, jm.to(DEV), sm.to(DEV), "mean", include_self=inc),
                      xl.scatter_reduce(0, jm, sm, "mean", include_self=inc), "%s mean of %d" % (t, most))
                cases += 1
    after = dev_count("scatter_reduce"), dev_count("scatter")
    assert after[0] >= before[0] + cases and after[1] >= before[1] + 24, (cases, mt.device_stats())
    # one update more: CPU torch's count wraps in int8, so the fallback (exact)
    xs, js = torch.tensor([5], dtype=torch.int8), torch.zeros(200, dtype=torch.long)
    ss = torch.full((200,), 3, dtype=torch.int8)
    fb = mt.fallback_stats().get("aten::scatter_reduce", 0)
    exact(xs.to(DEV).scatter_reduce(0, js.to(DEV), ss.to(DEV), "mean"), xs.scatter_reduce(0, js, ss, "mean"),
          "int8 mean of 200")
    assert mt.fallback_stats().get("aten::scatter_reduce", 0) == fb + 1, mt.fallback_stats()


@test
def reduce_gradients():
    """scatter_reduce's backward (sum, mean, amax, prod) over a long walk against CPU autograd."""
    x = rnd(64)
    idx = torch.randint(0, 64, (3000,), generator=G)
    src = rnd(3000)

    def run_all(dev):
        xs = x.to(dev).detach().requires_grad_()
        ss = src.to(dev).detach().requires_grad_()
        y = sum(xs.scatter_reduce(0, idx.to(dev), ss, red, include_self=inc).sum() * (k + 1)
                for k, (red, inc) in enumerate((("sum", True), ("mean", False), ("amax", True), ("amin", False))))
        y.backward()
        return xs.grad, ss.grad

    ref = run_all("cpu")
    got = run_all(DEV)
    for g, r, what in zip(got, ref, ("self", "src")):
        close(g, r, 1e-5, "scatter_reduce d " + what)


@test
def timing():
    """Print device and CPU times of a few larger calls in this guest (not a check): the median of five
    runs after one that assembles the programs."""
    def best(f):
        f()
        torch.maia.synchronize()
        ts = []
        for _ in range(5):
            t = time.perf_counter()
            f()
            torch.maia.synchronize()
            ts.append(time.perf_counter() - t)
        return sorted(ts)[2] * 1e3

    x = rnd(64, 4096)
    xd = x.to(DEV)
    i = torch.randint(0, 4096, (64, 4096), generator=G)
    idd = i.to(DEV)
    print("# scatter_reduce sum 64 x 4096 along 4096: device %.1f ms, CPU %.1f ms"
          % (best(lambda: xd.scatter_reduce(1, idd, xd, "sum")), best(lambda: x.scatter_reduce(1, i, x, "sum"))))
    v = rnd(16384)
    j = torch.randint(0, 1024, (16384,), generator=G)
    vd, jd, zd = v.to(DEV), j.to(DEV), torch.zeros(1024).to(DEV)
    print("# scatter_reduce amax of 16384 into 1024 (1-D, 16384 steps): device %.1f ms, CPU %.1f ms"
          % (best(lambda: zd.scatter_reduce(0, jd, vd, "amax")),
             best(lambda: torch.zeros(1024).scatter_reduce(0, j, v, "amax"))))


@test
def summary():
    """Print where the ops ran and how long the file took (not a check)."""
    print("# device ops: %s" % ", ".join("%s x%d" % kv for kv in sorted(mt.device_stats().items())
                                         if kv[0] in ("scatter", "scatter_reduce", "index_copy", "index_fill_",
                                                      "gather", "scatter_add", "index_select",
                                                      "masked_fill_")))
    print("# fallback ops: %s" % mt.fallback_stats())
    print("# test_torch_scatter.py: %.1f s" % (time.monotonic() - START))


if __name__ == "__main__":
    START = time.monotonic()
    mt.reset_stats()
    run("torch scatter")
