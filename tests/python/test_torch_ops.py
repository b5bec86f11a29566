# SPDX-License-Identifier: MIT
"""The ops real models need beside convolution (userspace/torch/ops_loss.cpp,
ops_index.cpp, ops_dropout.cpp) in the guest, in strict mode (no CPU
fallback allowed) unless a test says otherwise, against CPU torch:
cross-entropy (log_softmax's backward, nll_loss forward and backward with
weights, ignore_index and the three reductions), embedding forward and
backward, index_select, gather, scatter_add, masked_fill, max pooling's
backward, and dropout on the device's Threefry generator (the mask against
a Threefry reference written here and checked on Random123's known answers,
the keep rate, reproducibility from torch.manual_seed, the same mask in
backward). Odd sizes (row loops past 1024 with a masked tail),
non-contiguous operands, and out-of-range indices raising CPU torch's own
error.

Bounds: gathers, fills and the dropout mask are exact; sums (the loss,
scatter_add's and embedding backward's atomic adds in any order, log_softmax
backward's row sum) are within float32 rounding of a sum: 1e-5 of the
largest value against CPU float64."""
import time

import numpy as np
import torch
import torch.nn.functional as F

import maia.torch as mt
from tap import raises, run, test
from torch_checks import close, dev_count, exact, same_error

DEV = mt.device


@test
def cross_entropy():
    g = torch.Generator().manual_seed(1)
    for n, c in ((37, 11), (2100, 5), (3, 1030)):
        x = torch.randn(n, c, generator=g) * 3
        t = torch.randint(0, c, (n,), generator=g)
        t[::7] = -100                                   # ignore_index
        w = torch.rand(c, generator=g) + 0.5
        for weight in (None, w):
            for red in ("mean", "sum", "none"):
                for ls in ((False, True) if n == 37 else (False,)):
                    xs = x.t().contiguous().t() if ls else x        # column-major logits
                    xd = xs.to(DEV).requires_grad_()
                    xc = x.double().requires_grad_()
                    wd = None if weight is None else weight.to(DEV)
                    wc = None if weight is None else weight.double()
                    with mt.strict():
                        y = F.cross_entropy(xd, t.to(DEV), weight=wd, reduction=red)
                        gy = torch.linspace(-1, 1, y.numel()).reshape(y.shape)
                        y.backward(gy.to(DEV))
                    yc = F.cross_entropy(xc, t, weight=wc, reduction=red)
                    yc.backward(gy.double())
                    what = "cross_entropy %dx%d w=%s %s" % (n, c, weight is not None, red)
                    close(y, yc, 1e-5, what)
                    close(xd.grad, xc.grad, 1e-5, what + " grad")
    # x [C] with a 0-dim target; everything ignored gives NaN for mean, as on the CPU
    x = torch.randn(7)
    with mt.strict():
        close(F.nll_loss(x.to(DEV), torch.tensor(4).to(DEV)), F.nll_loss(x, torch.tensor(4)), 0, "1-d")
        y = F.nll_loss(torch.randn(3, 4).to(DEV), torch.full((3,), -100).to(DEV))
    assert y.cpu().isnan(), y
    # images [N, C, H, W] and sequences [N, C, L]: nll_loss2d, as nll_loss over the rows
    for shape in ((2, 5, 3, 7), (3, 4, 11)):
        x = torch.randn(shape, generator=g)
        t = torch.randint(0, shape[1], (shape[0],) + shape[2:], generator=g)
        t.view(-1)[::5] = -100
        w = torch.rand(shape[1], generator=g) + 0.5
        for weight in (None, w):
            for red in ("mean", "none"):
                xd = x.to(DEV).requires_grad_()
                xc = x.double().requires_grad_()
                with mt.strict():
                    y = F.cross_entropy(xd, t.to(DEV), reduction=red,
                                        weight=None if weight is None else weight.to(DEV))
                    gy = torch.randn(y.shape, generator=g)
                    y.backward(gy.to(DEV))
                yc = F.cross_entropy(xc, t, reduction=red, weight=None if weight is None else weight.double())
                yc.backward(gy.double())
                what = "cross_entropy %s w=%s %s" % (shape, weight is not None, red)
                close(y, yc, 1e-5, what)
                close(xd.grad, xc.grad, 1e-5, what + " grad")
    assert dev_count("nll_loss_forward") and dev_count("nll_loss_backward")
    assert dev_count("_log_softmax_backward_data")


@test
def log_softmax_backward_any_dim():
    x = torch.randn(5, 1500, 3)
    xd = x.to(DEV).requires_grad_()
    xc = x.double().requires_grad_()
    gy = torch.randn(x.shape)
    with mt.strict():
        F.log_softmax(xd, 2).backward(gy.to(DEV))
    F.log_softmax(xc, 2).backward(gy.double())
    close(xd.grad, xc.grad, 1e-5, "log_softmax backward")
    # the engine's forward is over the last dimension; the backward takes any
    for dim in (0, 1, 2):
        o = F.log_softmax(x, dim)
        with mt.strict():
            got = torch.ops.aten._log_softmax_backward_data(gy.to(DEV), o.to(DEV), dim, torch.float32)
        ref = torch.ops.aten._log_softmax_backward_data(gy.double(), o.double(), dim, torch.float64)
        close(got, ref, 1e-5, "_log_softmax_backward_data dim %d" % dim)


@test
def nll_loss_bad_targets():
    x = torch.randn(6, 5)
    for bad in (5, -3, 1 << 40):
        t = torch.tensor([0, 1, bad, 2, 3, 4])
        same_error(lambda: F.cross_entropy(x.to(DEV), t.to(DEV)).cpu(), lambda: F.cross_entropy(x, t))
        same_error(lambda: F.cross_entropy(x.t()[None].to(DEV), t[None].to(DEV)).cpu(),
                   lambda: F.cross_entropy(x.t()[None], t[None]))
    # the device is fine afterwards
    with mt.strict():
        close(F.cross_entropy(x.to(DEV), torch.arange(6).remainder(5).to(DEV)),
              F.cross_entropy(x.double(), torch.arange(6).remainder(5)), 1e-6, "after")


@test
def embedding():
    g = torch.Generator().manual_seed(2)
    for dtype, rel in ((torch.float32, 1e-5), (torch.bfloat16, 2.0 ** -7)):
        emb = torch.nn.Embedding(50, 13, padding_idx=3).to(dtype)
        idx = torch.randint(0, 50, (9, 7), generator=g)
        idx[0, :4] = torch.tensor([3, 3, 8, 8])               # padding and repeats
        for ix in (idx, idx.t(), idx.to(torch.int32)):
            d = torch.nn.Embedding(50, 13, padding_idx=3).to(dtype).to(DEV)
            d.load_state_dict(emb.state_dict())
            gy = torch.randn(*ix.shape, 13, generator=g).to(dtype)
            with mt.strict():
                y = d(ix.to(DEV))
                y.backward(gy.to(DEV))
            exact(y, emb(ix), "embedding %s" % dtype)
            ref = torch.ops.aten.embedding_dense_backward(gy.double(), ix, 50, 3, False)
            close(d.weight.grad, ref, rel, "embedding grad %s" % dtype)
            assert float(d.weight.grad[3].cpu().abs().max()) == 0
    w = torch.randn(10, 4)
    same_error(lambda: F.embedding(torch.tensor([[1, 10]]).to(DEV), w.to(DEV)),
               lambda: F.embedding(torch.tensor([[1, 10]]), w))
    same_error(lambda: F.embedding(torch.tensor([-1]).to(DEV), w.to(DEV)),
               lambda: F.embedding(torch.tensor([-1]), w))
    assert dev_count("embedding_dense_backward")


@test
def index_select():
    x = torch.randn(6, 1100, 5)
    xs = x.permute(2, 0, 1)                                   # non-contiguous [5, 6, 1100]
    g = torch.Generator().manual_seed(3)
    with mt.strict():
        for src in (x, xs):
            for dim in range(3):
                for itype in (torch.int64, torch.int32):
                    i = torch.randint(0, src.shape[dim], (9,), generator=g).to(itype)
                    exact(torch.index_select(src.to(DEV), dim, i.to(DEV)), torch.index_select(src, dim, i),
                          "index_select dim %d" % dim)
        b = torch.rand(40) > 0.5
        exact(b.to(DEV).index_select(0, torch.tensor([3, 1, 39]).to(DEV)), b.index_select(0, torch.tensor([3, 1, 39])),
              "bool")
        h = torch.randn(8, 3).to(torch.bfloat16)
        exact(h.to(DEV).index_select(0, torch.tensor([7, 0]).to(DEV)), h.index_select(0, torch.tensor([7, 0])),
              "bf16")
    same_error(lambda: x.to(DEV).index_select(1, torch.tensor([1100]).to(DEV)),
               lambda: x.index_select(1, torch.tensor([1100])))


@test
def gather_scatter_add():
    g = torch.Generator().manual_seed(4)
    x = torch.randn(5, 9, 3)
    for src in (x, x.transpose(0, 2).contiguous().transpose(0, 2)):
        for dim in range(3):
            shape = [4, 6, 2]
            i = torch.randint(0, x.shape[dim], shape, generator=g)
            xd = src.to(DEV).requires_grad_()
            xc = src.double().requires_grad_()
            gy = torch.randn(shape, generator=g)
            with mt.strict():
                y = torch.gather(xd, dim, i.to(DEV))
                y.backward(gy.to(DEV))                         # gather's backward: scatter_add_
            exact(y, torch.gather(src, dim, i), "gather dim %d" % dim)
            torch.gather(xc, dim, i).backward(gy.double())
            close(xd.grad, xc.grad, 1e-6, "gather grad dim %d" % dim)
    base = torch.randn(6, 8)
    s = torch.randn(5, 9)
    for dim in (0, 1):
        i = torch.randint(0, base.shape[dim], (4, 7), generator=g)    # repeats, smaller than src
        for dtype, rel in ((torch.float32, 1e-6), (torch.bfloat16, 2.0 ** -7)):
            b, sv = base.to(dtype), s.to(dtype)
            with mt.strict():
                got = b.to(DEV).scatter_add(dim, i.to(DEV), sv.to(DEV))
                inplace = b.to(DEV)
                inplace.scatter_add_(dim, i.t().contiguous().t().to(DEV), sv.to(DEV))
            ref = b.double().scatter_add(dim, i, sv.double())
            close(got, ref, rel, "scatter_add dim %d %s" % (dim, dtype))
            close(inplace, ref, rel, "scatter_add_ dim %d %s" % (dim, dtype))
    same_error(lambda: base.to(DEV).scatter_add(1, torch.tensor([[8]]).to(DEV), s.to(DEV)).cpu(),
               lambda: base.scatter_add(1, torch.tensor([[8]]), s))
    same_error(lambda: torch.gather(x.to(DEV), 2, torch.tensor([[[3]]]).to(DEV)).cpu(),
               lambda: torch.gather(x, 2, torch.tensor([[[3]]])))
    big = torch.zeros(6, 2, 2, dtype=torch.long)              # larger than x off the gathered dimension
    with mt.strict():                                         # CPU torch's error, not strict mode's
        same_error(lambda: torch.gather(x.to(DEV), 1, big.to(DEV)), lambda: torch.gather(x, 1, big))


@test
def masked_fill():
    x = torch.randn(3, 1500)
    m = torch.rand(3, 1500) > 0.6
    with mt.strict():
        for mask in (m, m[:1], m[:, :1], m.t().contiguous().t()):
            for v in (-float("inf"), 2.5):
                exact(x.to(DEV).masked_fill(mask.to(DEV), v), x.masked_fill(mask, v), "masked_fill")
            exact(x.to(DEV).masked_fill(mask.to(DEV), torch.tensor(-7.0)), x.masked_fill(mask, -7.0), "0-dim")
        xt = x.t().to(DEV)                                    # non-contiguous, in place
        xt.masked_fill_(m.t().to(DEV), 0.0)
        exact(xt, x.t().masked_fill(m.t(), 0.0), "in place, non-contiguous")
        for t in (torch.int32, torch.bool, torch.bfloat16):
            y = torch.arange(12).reshape(3, 4).to(t)
            mm = torch.tensor([True, False, True, False])
            exact(y.to(DEV).masked_fill(mm.to(DEV), 1), y.masked_fill(mm, 1), "masked_fill %s" % t)
    assert dev_count("masked_fill_")


@test
def max_pool():
    g = torch.Generator().manual_seed(5)
    x = torch.randn(2, 3, 9, 11, generator=g)
    x[0, 0, 0, :3] = float("nan")                           # NaN wins its windows
    x[0, 1, :4, :4] = -float("inf")                         # a window of -inf: its first element
    x[1, 2, 2, 2] = x[1, 2, 2, 3]                           # a tie: the first one
    cases = (((3, 2, 1), {}), ((2, 2, 0), {}), ((3, 1, 1), {}), ((3, 2, 1), {"ceil_mode": True}),
             ((2, 3, 1), {"dilation": 2}), (((3, 2), (1, 2), (1, 0)), {}))
    for args, kw in cases:
        for src in (x, x[1], x.to(memory_format=torch.channels_last)):
            xd = src.to(DEV).requires_grad_()
            with mt.strict():
                y, i = F.max_pool2d(xd, *args, return_indices=True, **kw)
            yc, ic = F.max_pool2d(src, *args, return_indices=True, **kw)
            what = "max_pool2d %s %s" % (args, kw)
            exact(y, yc, what)
            exact(i, ic, what + " indices")
            finite = src.isfinite().all()
            if not finite:
                continue
            xc = src.double().requires_grad_()
            gy = torch.randn(yc.shape, generator=g)
            with mt.strict():
                F.max_pool2d(xd, *args, **kw).backward(gy.to(DEV))
            F.max_pool2d(xc, *args, **kw).backward(gy.double())
            close(xd.grad, xc.grad, 1e-6, what + " backward")
    h = x.to(torch.bfloat16)
    with mt.strict():
        exact(F.max_pool2d(h.to(DEV), 3, 2, 1), F.max_pool2d(h, 3, 2, 1), "bf16")
    assert dev_count("max_pool2d_with_indices_backward")
    assert "aten::max_pool2d_with_indices" not in mt.fallback_stats()


# ---- dropout ----------------------------------------------------------------------

R = (13, 15, 26, 6, 17, 29, 16, 24)


def threefry(c0, c1, k0, k1):
    """Threefry-2x32-20 (Random123) of counters (c0, c1) under key (k0, k1), numpy uint32."""
    c0, c1 = np.asarray(c0, np.uint32), np.asarray(c1, np.uint32)
    ks = [np.uint32(k0), np.uint32(k1), np.uint32(0x1BD11BDA ^ k0 ^ k1)]
    with np.errstate(over="ignore"):
        x0, x1 = c0 + ks[0], c1 + ks[1]
        for r in range(20):
            x0 = x0 + x1
            x1 = (x1 << np.uint32(R[r % 8])) | (x1 >> np.uint32(32 - R[r % 8]))
            x1 = x1 ^ x0
            if r % 4 == 3:
                s = (r + 1) // 4
                x0 = x0 + ks[s % 3]
                x1 = x1 + ks[(s + 1) % 3] + np.uint32(s)
    return x0, x1


def ref_mask(n, seed, offset, p):
    x0, _ = threefry(np.arange(n, dtype=np.uint32), np.full(n, offset, np.uint32),
                     seed & 0xffffffff, seed >> 32)
    return torch.from_numpy(x0.astype(np.uint64) < min(int((1 - p) * 2.0 ** 32), 2 ** 32 - 1))


@test
def dropout_mask_is_threefry():
    # Random123's known answers for threefry2x32_20
    for ctr, key, out in (((0, 0), (0, 0), (0x6b200159, 0x99ba4efe)),
                          ((0xffffffff,) * 2, (0xffffffff,) * 2, (0x1cb996fc, 0xbb002be7)),
                          ((0x243f6a88, 0x85a308d3), (0x13198a2e, 0x03707344), (0xc4923a9c, 0x483df7a0))):
        got = threefry(ctr[0], ctr[1], *key)
        assert (int(got[0]), int(got[1])) == out, (ctr, key, got)
    seed = 0x123456789ab
    n = 3 * 1024 + 77
    x = torch.randn(n)
    torch.manual_seed(seed)
    with mt.strict():
        y0 = F.dropout(x.to(DEV), 0.3, training=True).cpu()
        y1 = F.dropout(x.to(DEV), 0.3, training=True).cpu()
    for off, y in ((0, y0), (1, y1)):
        keep = ref_mask(n, seed, off, 0.3)
        exact(y != 0, keep, "mask of call %d" % off)
        exact(y[keep], x[keep] * torch.tensor(1 / (1 - 0.3), dtype=torch.float32), "kept values")
    assert dev_count("native_dropout") == 2


@test
def dropout_statistics_and_reproducibility():
    n = 50000
    x = torch.ones(n).to(DEV)
    with mt.strict():
        for p in (0.1, 0.5, 0.9):
            torch.manual_seed(7)
            m = (F.dropout(x, p) != 0).cpu()
            kept = int(m.sum())
            sigma = (n * p * (1 - p)) ** 0.5
            assert abs(kept - n * (1 - p)) <= 5 * sigma, (p, kept)
            a, b = m[:-1].double(), m[1:].double()               # neighbours uncorrelated
            corr = float(((a - a.mean()) * (b - b.mean())).mean() / (a.std() * b.std()))
            assert abs(corr) < 5 / n ** 0.5, (p, corr)
        torch.manual_seed(11)
        a = F.dropout(x, 0.5).cpu()
        b = F.dropout(x, 0.5).cpu()
        torch.manual_seed(11)
        a2 = F.dropout(x, 0.5).cpu()
        state = torch.maia.get_rng_state()
        b2 = F.dropout(x, 0.5).cpu()
        torch.maia.set_rng_state(state)
        b3 = F.dropout(x, 0.5).cpu()
        # a smaller tensor (fewer instances) draws the same first elements: grid-independent
        torch.manual_seed(11)
        small = F.dropout(x[:1500], 0.5).cpu()
        # eval mode and p = 0 are the identity
        assert torch.equal(F.dropout(x, 0.5, training=False).cpu(), x.cpu())
        assert torch.equal(F.dropout(x, 0.0).cpu(), x.cpu())
    assert torch.equal(a, a2) and torch.equal(b, b2) and torch.equal(b, b3) and not torch.equal(a, b)
    assert torch.equal(small, a[:1500])


@test
def dropout_backward_uses_forward_mask():
    torch.manual_seed(3)
    for dtype in (torch.float32, torch.bfloat16):
        x = torch.randn(17, 301).to(dtype)
        xd = x.to(DEV).requires_grad_()
        gy = torch.randn(17, 301).to(dtype)
        with mt.strict():
            y = torch.nn.Dropout(0.4)(xd)
            y.backward(gy.to(DEV))
        keep = (y != 0).cpu()
        scale = torch.tensor(1 / (1 - 0.4), dtype=torch.float32)
        ref = (gy.float() * keep.float() * scale).to(dtype)
        exact(xd.grad, ref, "dropout grad %s" % dtype)
    assert dev_count("native_dropout_backward") == 2


@test
def small_language_model_step():
    """Embedding, dropout, linear, cross-entropy, AdamW: a training step with no fallback."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Embedding(100, 32), torch.nn.Dropout(0.1), torch.nn.Linear(32, 100))
    ref = torch.nn.Sequential(torch.nn.Embedding(100, 32), torch.nn.Dropout(0.0), torch.nn.Linear(32, 100))
    ref.load_state_dict(model.state_dict())
    model[1].p = 0.0                                          # the same step on both sides
    model.to(DEV)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, fused=True)
    opt_ref = torch.optim.AdamW(ref.parameters(), lr=1e-2)
    tok = torch.randint(0, 100, (4, 16))
    tgt = torch.randint(0, 100, (4, 16))
    before = mt.fallback_stats()
    with mt.strict():
        loss = F.cross_entropy(model(tok.to(DEV)).flatten(0, 1), tgt.to(DEV).flatten())
        loss.backward()
        opt.step()
    loss_ref = F.cross_entropy(ref(tok).flatten(0, 1), tgt.flatten())
    loss_ref.backward()
    opt_ref.step()
    close(loss, loss_ref, 1e-5, "loss")
    for (name, p), q in zip(model.named_parameters(), ref.parameters()):
        close(p, q, 1e-5, name)
    assert mt.fallback_stats() == before, mt.fallback_stats()


@test
def device_error_falls_back():
    """A kernel the device ends with an error (tvp_inject_fault): the op runs on the CPU once,
    counted under its name, the result still right; strict mode raises instead."""
    w = torch.randn(20, 3)
    i = torch.tensor([4, 19, 0])
    before = mt.fallback_stats().get("aten::index_select", 0)
    torch.ops.maia.tvp_inject_fault("igather64")
    exact(w.to(DEV).index_select(0, i.to(DEV)), w.index_select(0, i), "after a device error")
    assert mt.fallback_stats().get("aten::index_select", 0) == before + 1, mt.fallback_stats()
    torch.ops.maia.tvp_inject_fault("nll64")
    with mt.strict():
        raises(RuntimeError, lambda: F.nll_loss(w.to(DEV), torch.tensor([0, 1, 2] * 6 + [0, 1]).to(DEV)),
               match="its TVP kernel failed on the device")
        exact(w.to(DEV).index_select(0, i.to(DEV)), w.index_select(0, i), "the device fine afterwards")


@test
def summary():
    """Print where the ops ran and how long the file took (not a check)."""
    print("# device ops: %s" % ", ".join("%s x%d" % kv for kv in sorted(mt.device_stats().items())))
    print("# fallback ops: %s" % mt.fallback_stats())
    print("# test_torch_ops.py: %.1f s" % (time.monotonic() - START))


if __name__ == "__main__":
    START = time.monotonic()
    mt.reset_stats()
    run("torch ops")
