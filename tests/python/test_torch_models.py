# SPDX-License-Identifier: MIT
"""The ops CNNs and vision transformers need, on the Maia device, against
CPU torch (float64) as the reference: convolution 1-D/2-D forward and
backward (stride, padding, dilation, groups, depthwise, bias, odd shapes,
non-contiguous inputs), batch norm (train and eval, running statistics,
gradients), max/avg/adaptive pooling, the CPU fallback of what has no
kernel (3-D and transposed convolution, the "overrideable" ops), then a
ResNet-18-style CNN and a small ViT forward, and one CNN training step with
AdamW, each against CPU torch within the bound stated there.

Bounds. A result that is a sum of L products computed in FP32 (the tensor
engine accumulates in FP32 and rounds once on store; CPU torch in float64
here) is within L * 2^-23 * A + tiny, where A is the same computation on
absolute values (absref below); L is the longest reduction that produced
the value."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F

import maia.torch as mt
from models import Block, ResNet18, ViT
from tap import raises, run, test

DEV = mt.device
U = 2.0 ** -23
torch.manual_seed(0)


def close(got, ref, bound, what):
    got = got.detach().cpu().double()
    ref = ref.detach().cpu().double()
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    err = (got - ref).abs()
    ok = err <= bound
    assert bool(ok.all()), "%s: max |err| %.3g, worst err/bound %.3g" % (
        what, float(err.max()), float((err / bound).max()))


def fallbacks(op):
    """Times op (any overload: the fallback often runs the .out form) fell back."""
    return sum(n for name, n in mt.fallback_stats().items()
               if name == op or name.startswith(op + "."))


def dev_leaf(t):
    return t.detach().to(DEV).requires_grad_()


def cpu_leaf(t):
    return t.detach().double().requires_grad_()


def conv_case(dim, n, c, size, o, k, stride, padding, dilation, groups, bias, noncontig):
    """conv1d/conv2d on the device in strict mode: output and the gradients
    of x, w, b against float64 CPU autograd; bounds from absref."""
    conv = F.conv2d if dim == 2 else F.conv1d
    if noncontig:                       # x with its last two dimensions swapped in memory
        x = torch.randn(n, c, *reversed(size)).transpose(-1, -2) if dim == 2 else \
            torch.randn(n, size[0], c).transpose(1, 2)
        assert not x.is_contiguous()
    else:
        x = torch.randn(n, c, *size)
    ks = (k,) * dim if isinstance(k, int) else k
    w = torch.randn(o, c // groups, *ks)
    b = torch.randn(o) if bias else None
    args = dict(stride=stride, padding=padding, dilation=dilation, groups=groups)
    xr, wr = cpu_leaf(x), cpu_leaf(w)
    br = cpu_leaf(b) if bias else None
    yr = conv(xr, wr, br, **args)
    gy = torch.randn(yr.shape)
    (yr * gy.double()).sum().backward()
    # absref: the same sums over absolute values (bias and all).
    xa, wa = cpu_leaf(x.abs()), cpu_leaf(w.abs())
    ba = cpu_leaf(b.abs()) if bias else None
    ya = conv(xa, wa, ba, **args)
    (ya * gy.double().abs()).sum().backward()
    kk = math.prod(ks)
    l_fwd = c // groups * kk + 1
    l_dw = yr.numel() // o
    l_dx = (o // groups) * kk
    xd = x.to(DEV)
    if noncontig:
        xd = xd.transpose(-1, -2).contiguous().transpose(-1, -2) if dim == 2 else xd
    xd = xd.detach().requires_grad_()
    wd = dev_leaf(w)
    bd = dev_leaf(b) if bias else None
    mt.reset_stats()
    with mt.strict():
        yd = conv(xd, wd, bd, **args)
        (yd * gy.to(DEV)).sum().backward()
    what = "conv%dd %s" % (dim, (n, c, size, o, k, args, bias, noncontig))
    close(yd, yr, l_fwd * U * ya + 1e-30, what + " forward")
    close(xd.grad, xr.grad, 2 * l_dx * U * xa.grad + 1e-30, what + " grad x")
    close(wd.grad, wr.grad, 2 * l_dw * U * wa.grad + 1e-30, what + " grad w")
    if bias:
        close(bd.grad, br.grad, 2 * l_dw * U * ba.grad + 1e-30, what + " grad b")
    ops = mt.device_stats()
    assert ops.get("convolution") and ops.get("convolution_backward"), ops


@test
def strict_conv2d():
    # n, c, (h, w), o, k, stride, padding, dilation, groups, bias, non-contiguous x
    for case in ((2, 3, (9, 7), 5, 3, 1, 1, 1, 1, True, False),
                 (1, 4, (10, 11), 6, (3, 2), (2, 1), (0, 1), (1, 2), 2, False, False),
                 (2, 6, (8, 8), 6, 3, 1, 1, 1, 6, True, False),          # depthwise
                 (3, 5, (7, 5), 4, 1, 1, 0, 1, 1, True, True),           # 1x1, strided x
                 (1, 3, (15, 13), 8, 7, 2, 3, 1, 1, False, True),        # stem-like 7x7/2
                 (2, 8, (6, 6), 4, 3, 2, 1, 1, 4, True, False)):
        conv_case(2, *case)


@test
def strict_conv1d():
    for case in ((2, 4, (13,), 6, 3, 2, 1, 2, 2, True, False),
                 (1, 3, (17,), 5, 5, 1, 2, 1, 1, False, True),
                 (2, 4, (9,), 4, 3, 1, 1, 1, 4, True, False)):           # depthwise
        conv_case(1, *case)


@test
def conv_fallbacks_and_strict():
    """What the device has no kernel for runs on the CPU (counted), among
    them the "overrideable" ops that have no CPU kernel of their own; strict
    mode raises."""
    x, w = torch.randn(1, 2, 5, 6, 4), torch.randn(3, 2, 3, 3, 3)
    mt.reset_stats()
    y = F.conv3d(x.to(DEV), w.to(DEV), padding=1)
    close(y, F.conv3d(x.double(), w.double(), padding=1), 1e-4, "conv3d fallback")
    assert mt.fallback_stats().get("aten::convolution_overrideable") == 1, mt.fallback_stats()
    x2, wt = torch.randn(2, 4, 5, 5), torch.randn(4, 3, 3, 3)
    xd = dev_leaf(x2)
    yt = F.conv_transpose2d(xd, wt.to(DEV), stride=2, padding=1)
    yt.sum().backward()
    xr = cpu_leaf(x2)
    F.conv_transpose2d(xr, wt.double(), stride=2, padding=1).sum().backward()
    close(yt, F.conv_transpose2d(x2.double(), wt.double(), stride=2, padding=1), 1e-4,
          "conv_transpose2d fallback")
    close(xd.grad, xr.grad, 1e-4, "conv_transpose2d backward fallback")
    assert mt.fallback_stats().get("aten::convolution_backward_overrideable"), mt.fallback_stats()
    with mt.strict():
        raises(RuntimeError, F.conv3d, x.to(DEV), w.to(DEV), match="convolution_overrideable")


def bn_case(shape, affine):
    c = shape[1]
    x = torch.randn(*shape) * 3 + 1
    bn_cpu = (nn.BatchNorm1d if len(shape) < 4 else nn.BatchNorm2d)(c, affine=affine).double()
    if affine:
        nn.init.normal_(bn_cpu.weight)
        nn.init.normal_(bn_cpu.bias)
    bn_dev = (nn.BatchNorm1d if len(shape) < 4 else nn.BatchNorm2d)(c, affine=affine)
    bn_dev.load_state_dict({k: v.float() for k, v in bn_cpu.state_dict().items()})
    bn_dev.to(DEV)
    xr = cpu_leaf(x)
    yr = bn_cpu(xr)
    gy = torch.randn(shape)
    (yr * gy.double()).sum().backward()
    xd = dev_leaf(x)
    mt.reset_stats()
    # Only the int64 step counter (num_batches_tracked += 1) runs on the CPU.
    yd = bn_dev(xd)
    assert set(mt.fallback_stats()) == {"aten::add_.Tensor"}, mt.fallback_stats()
    with mt.strict():
        (yd * gy.to(DEV)).sum().backward()
    what = "batch_norm %s affine=%s" % (shape, affine)
    scale = 1.0 + (float(bn_cpu.weight.detach().abs().max()) if affine else 0.0)
    close(yd, yr, 2e-5 * scale * (1 + yr.detach().abs()), what + " train")
    close(bn_dev.running_mean, bn_cpu.running_mean, 1e-5, what + " running_mean")
    close(bn_dev.running_var, bn_cpu.running_var, 1e-5 * bn_cpu.running_var, what + " running_var")
    m = x.numel() // c
    close(xd.grad, xr.grad, 4 * m * U * scale * (gy.abs().max() + 1) * 3, what + " grad x")
    if affine:
        close(bn_dev.weight.grad, bn_cpu.weight.grad, 4 * m * U * (gy.abs() * 4).sum(),
              what + " grad weight")
        close(bn_dev.bias.grad, bn_cpu.bias.grad, m * U * gy.abs().sum(), what + " grad bias")
    bn_cpu.eval()
    bn_dev.eval()
    with mt.strict(), torch.no_grad():
        close(bn_dev(x.to(DEV)), bn_cpu(x.double()), 2e-5 * scale * (1 + x.abs().double()),
              what + " eval")
    assert mt.device_stats().get("native_batch_norm_backward"), mt.device_stats()


@test
def strict_batch_norm():
    bn_case((4, 3, 5, 7), True)
    bn_case((2, 5, 3, 3), False)
    bn_case((6, 4, 9), True)            # BatchNorm1d over (N, C, L)
    bn_case((16, 8), True)              # BatchNorm1d over (N, C)
    # A non-contiguous input (channels-last memory).
    x = torch.randn(2, 3, 4, 5)
    xd = x.to(DEV).permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)
    assert not xd.is_contiguous()
    with mt.strict():
        y = F.batch_norm(xd, None, None, training=True)
    close(y, F.batch_norm(x.double(), None, None, training=True), 1e-4, "batch_norm strided x")


def pool_case(fn, x, kw, atol_rel=1e-6):
    xr = cpu_leaf(x)
    yr = fn(xr, **kw)
    gy = torch.randn(yr.shape)
    (yr * gy.double()).sum().backward()
    xd = dev_leaf(x)
    yd = fn(xd, **kw)
    (yd * gy.to(DEV)).sum().backward()
    what = "%s %s %s" % (fn.__name__, tuple(x.shape), kw)
    close(yd, yr, atol_rel * (1 + yr.detach().abs()) * 64, what)
    close(xd.grad, xr.grad, 1e-5 * (1 + xr.grad.abs()), what + " grad")


@test
def pooling():
    x = torch.randn(2, 3, 9, 11)
    with mt.strict():
        pool_case(F.avg_pool2d, x, dict(kernel_size=3, stride=2, padding=1))
        pool_case(F.avg_pool2d, x, dict(kernel_size=(2, 3)))
        pool_case(F.adaptive_avg_pool2d, torch.randn(2, 4, 6, 8), dict(output_size=(3, 2)))
        pool_case(F.adaptive_avg_pool2d, x, dict(output_size=1))
        pool_case(F.avg_pool2d, torch.randn(3, 7, 7), dict(kernel_size=3, stride=1))  # unbatched
        with torch.no_grad():         # inference: max pooling on the device
            for kw in (dict(kernel_size=3, stride=2, padding=1), dict(kernel_size=2),
                       dict(kernel_size=3, stride=1, dilation=2)):
                close(F.max_pool2d(x.to(DEV), **kw), F.max_pool2d(x, **kw), 0, "max_pool2d %s" % kw)
    # With autograd, max pooling takes max_pool2d_with_indices (int64 indices): a TVP program.
    with mt.strict():
        pool_case(F.max_pool2d, x, dict(kernel_size=3, stride=2, padding=1))
    mt.reset_stats()
    # adaptive sizes that do not divide: the CPU fallback.
    pool_case(F.adaptive_avg_pool2d, x, dict(output_size=(4, 4)))
    assert fallbacks("aten::_adaptive_avg_pool2d"), mt.fallback_stats()


# ---- models ----------------------------------------------------------------------

def forward_against_cpu(model, x, bound_rel):
    """model(x) on the device and in float64 on the CPU: max |err| <=
    bound_rel * max |ref|. Returns (max |err| / max |ref|, device ops,
    fallback ops)."""
    ref_model = model.double()
    with torch.no_grad():
        ref = ref_model(x.double())
    model.float().to(DEV)
    mt.reset_stats()
    with torch.no_grad():
        got = model(x.to(DEV)).cpu().double()
    err = float((got - ref).abs().max()) / float(ref.abs().max())
    assert err <= bound_rel, "relative max error %.3g > %.3g" % (err, bound_rel)
    return err, mt.device_stats(), mt.fallback_stats()


@test
def resnet18_style_forward():
    """Bound: 1e-4 of the largest logit, eval mode (batch norm with running
    statistics, set to random values first)."""
    torch.manual_seed(1)
    model = ResNet18(width=16, classes=10)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.running_mean.normal_(0, 0.1)
            m.running_var.uniform_(0.5, 1.5)
            nn.init.uniform_(m.weight, 0.5, 1.5)
            nn.init.normal_(m.bias, 0, 0.1)
    model.eval()
    err, ops, falls = forward_against_cpu(model, torch.randn(2, 3, 64, 64), 1e-4)
    print("# resnet18-style eval forward: rel err %.3g, device ops %d, fallback ops %d %s"
          % (err, sum(ops.values()), sum(falls.values()), falls))
    assert ops.get("convolution") == 20 and ops.get("max_pool2d") == 1, ops
    assert not falls, falls
    # Train mode (batch statistics) as well.
    model.train()
    err, ops, falls = forward_against_cpu(model, torch.randn(2, 3, 64, 64), 1e-3)
    print("# resnet18-style train forward: rel err %.3g, fallbacks %s" % (err, falls))


@test
def vit_forward():
    """Bound: 1e-4 of the largest logit."""
    torch.manual_seed(2)
    model = ViT().eval()
    err, ops, falls = forward_against_cpu(model, torch.randn(2, 3, 32, 32), 1e-4)
    print("# vit forward: rel err %.3g, device ops %d, fallback ops %d %s"
          % (err, sum(ops.values()), sum(falls.values()), falls))
    assert ops.get("convolution") == 1 and ops.get("_addmm_activation") == 2, ops
    # torch's inference fast path (_transformer_encoder_layer_fwd) runs as its
    # parts on the device; only the q/k/v split and rescale takes the CPU.
    assert set(falls) <= {"aten::_transform_bias_rescale_qkv"}, falls


class SmallCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(16), nn.ReLU(),
            nn.Conv2d(16, 16, 3, padding=1, groups=16), nn.ReLU(),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 5))

    def forward(self, x):
        return self.body(x)


@test
def cnn_training_step_adamw():
    """One step of cross-entropy + AdamW (lr 1e-2, weight decay 0.01) from
    the same weights on the device and on the CPU (float32): every weight
    within 1e-3 * lr of the CPU's, except where the CPU gradient is below
    1e-4 of the largest gradient of the model (the bias of a convolution
    followed by batch norm has a gradient of rounding noise): there Adam's
    first step, lr * g / |g|, is the sign of a gradient that rounding can
    flip, and the bound is 2 lr."""
    torch.manual_seed(3)
    cpu_model = SmallCNN()
    dev_model = SmallCNN()
    dev_model.load_state_dict(cpu_model.state_dict())
    dev_model.to(DEV)
    lr = 1e-2
    x, target = torch.randn(4, 3, 16, 16), torch.tensor([0, 3, 1, 4])
    for model, dev in ((cpu_model, "cpu"), (dev_model, DEV)):
        opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
        loss = F.cross_entropy(model(x.to(dev)), target.to(dev))
        opt.zero_grad()
        loss.backward()
        model.grads = [p.grad.detach().cpu().clone() for p in model.parameters()]
        opt.step()
    worst = 0.0
    gmax = max(float(g.abs().max()) for g in cpu_model.grads)
    for (name, pc), pd, g in zip(cpu_model.named_parameters(), dev_model.parameters(),
                                 cpu_model.grads):
        err = (pd.detach().cpu() - pc.detach()).abs()
        small = g.abs() < 1e-4 * gmax
        bound = torch.where(small, torch.full_like(err, 2 * lr), torch.full_like(err, 1e-3 * lr))
        assert bool((err <= bound).all()), "%s: max |err| %.3g" % (name, float(err.max()))
        worst = max(worst, float(err[~small].max()) if (~small).any() else 0.0)
    for name, bc in cpu_model.named_buffers():
        bd = dict(dev_model.named_buffers())[name]
        if bc.dtype.is_floating_point:
            close(bd, bc, 1e-5 * (1 + bc.abs()), name)
    print("# cnn adamw step: max |w_dev - w_cpu| %.3g (lr %g)" % (worst, lr))


@test
def compile_transformer_block():
    """torch.compile(backend=maia.torch.compile_backend) of a transformer
    block equals eager on the device within 1e-6 of the largest output (the
    same device ops in the same order: batching changes how they are
    submitted, not what they compute), and submits fewer jobs (printed)."""
    torch.manual_seed(4)
    blk = Block().to(DEV).eval()
    x = torch.randn(2, 16, 64).to(DEV)
    with torch.no_grad():
        ref = Block().eval()
        ref.load_state_dict({k: v.cpu() for k, v in blk.state_dict().items()})
        cpu_out = ref.double()(x.cpu().double())
        torch.maia.synchronize()
        j0 = mt.jobs_submitted()
        eager = blk(x)
        torch.maia.synchronize()
        eager_jobs = mt.jobs_submitted() - j0
        compiled = torch.compile(blk, backend=mt.compile_backend)
        compiled(x)                                     # traces
        torch.maia.synchronize()
        j0 = mt.jobs_submitted()
        mt.reset_stats()
        out = compiled(x)
        torch.maia.synchronize()
        compiled_jobs = mt.jobs_submitted() - j0
    print("# transformer block: eager %d device jobs, compiled %d; device ops %d, fallbacks %s"
          % (eager_jobs, compiled_jobs, sum(mt.device_stats().values()), mt.fallback_stats()))
    scale = float(eager.abs().max().cpu())
    close(out, eager.cpu(), 1e-6 * scale, "compiled vs eager")
    close(out, cpu_out, 1e-4 * scale, "compiled vs CPU float64")
    assert compiled_jobs < eager_jobs, (compiled_jobs, eager_jobs)


run("torch models")
