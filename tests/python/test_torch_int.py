# SPDX-License-Identifier: MIT
"""Integer tensors on maia keep every bit: every op the backend registers
(and the common ones that take the CPU fallback) on int32 values past 2^24,
int64 past 2^53, int16, int8, uint8 and bool, against CPU torch, equal in
dtype, shape and every element. The tensor engine computes through float, so
an integer op on it would lose low bits, saturate where torch wraps or round
where torch truncates; what the device cannot do exactly must take the CPU
fallback (counted)."""
import time
import warnings

import torch

import maia.torch as mt
from tap import run, test

DEV = mt.device
G = torch.Generator().manual_seed(37)
I32 = (-2**31, 2**31)
I64 = (-2**62, 2**62)


def big(shape, dtype=torch.int32):
    """Values spread over the whole range of dtype (int32 mostly past 2^24)."""
    if dtype == torch.bool:
        return torch.randint(0, 2, shape, generator=G).bool()
    lo, hi = {torch.int32: I32, torch.int64: I64, torch.int16: (-2**15, 2**15),
              torch.int8: (-128, 128), torch.uint8: (0, 256)}[dtype]
    return torch.randint(lo, hi, shape, generator=G, dtype=torch.int64).to(dtype)


SKIPPED = []     # cases CPU torch refuses (bool arithmetic, integer sorts of bool, ...)


def dev(x):
    return x.to(DEV) if isinstance(x, torch.Tensor) else x


def compare(cases):
    """cases: (name, fn, args): fn on CPU args against fn on device copies; returns the mismatches."""
    bad = []
    for name, fn, args in cases:
        try:
            ref = fn(*args)
        except (RuntimeError, NotImplementedError):
            SKIPPED.append(name)
            continue        # CPU torch refuses it too
        try:
            got = fn(*[dev(a) for a in args])
        except Exception as e:  # noqa: BLE001 (any device error is a finding)
            bad.append("%s: raised %s" % (name, str(e).splitlines()[0][:120]))
            continue
        refs = ref if isinstance(ref, (tuple, list)) else (ref,)
        gots = got if isinstance(got, (tuple, list)) else (got,)
        for r, g in zip(refs, gots):
            g = g.cpu()
            if g.dtype != r.dtype or g.shape != r.shape:
                bad.append("%s: %s %s, CPU torch %s %s" % (name, g.dtype, tuple(g.shape), r.dtype, tuple(r.shape)))
                break
            same = (g == r) | (g.isnan() & r.isnan()) if g.is_floating_point() else g == r
            if not bool(same.all()):
                i = (~same).nonzero()[0].tolist()
                bad.append("%s: %d wrong, at %s %s (CPU torch %s)" % (name, int((~same).sum()), i,
                                                                     g[tuple(i)].item(), r[tuple(i)].item()))
                break
    return bad


def fallbacks(name):
    return mt.fallback_stats().get(name, 0)


def check(cases):
    bad = compare(cases)
    assert not bad, "\n  ".join(["%d of %d differ:" % (len(bad), len(cases))] + bad)


INTS = (torch.int32, torch.int64, torch.int16, torch.int8, torch.uint8)


@test
def layout():
    """Copies, views made contiguous, cat, stack, flips, clones: the bits move."""
    cases = []
    for t in INTS + (torch.bool,):
        x, y = big((37, 70), t), big((37, 5), t)
        s = str(t)[6:]
        cases += [
            ("%s round trip" % s, lambda a: a.clone(), (x,)),
            ("%s transpose contiguous" % s, lambda a: a.t().contiguous(), (x,)),
            ("%s permute" % s, lambda a: a.reshape(37, 7, 10).permute(2, 0, 1).contiguous(), (x,)),
            ("%s slice" % s, lambda a: a[3:30:2, 1::3].contiguous(), (x,)),
            ("%s cat" % s, lambda a, b: torch.cat([a, b, a[:, :3]], 1), (x, y)),
            ("%s cat dim0" % s, lambda a: torch.cat([a, a.flip(0)], 0), (x,)),
            ("%s stack" % s, lambda a: torch.stack([a, a.t().t()], 1), (x,)),
            ("%s flip" % s, lambda a: a.flip(1), (x,)),
            ("%s copy_ strided" % s, lambda a, b: a.t().clone().copy_(a.t()), (x, y)),
            ("%s expand" % s, lambda b: b[:, :1].expand(37, 9).contiguous(), (y,)),
            ("%s fill_" % s, lambda a: a.clone().fill_(a.flatten()[0].item()), (x,)),
        ]
    cases += [("int32 full", lambda a: torch.full((5, 3), 2**31 - 3, dtype=torch.int32, device=a.device), (big((1,)),)),
              ("int64 full", lambda a: torch.full((5, 3), 2**53 + 1, device=a.device), (big((1,)),))]
    check(cases)


@test
def conversions():
    """int <-> float and between integer widths as CPU torch converts (floats truncate toward zero,
    narrowing wraps)."""
    f = torch.tensor([0.5, -0.5, 1.5, -1.5, 2.7, -2.7, 100.99, -100.99, 16777217.0, 1e9, -1e9, 0.0, 127.9, -128.9])
    cases = []
    for src in INTS + (torch.bool,):
        x = big((23, 31), src)
        for dst in INTS + (torch.bool, torch.float32, torch.float16, torch.bfloat16):
            cases.append(("%s -> %s" % (src, dst), lambda a, d=dst: a.to(d), (x,)))
            cases.append(("%s -> %s strided" % (src, dst), lambda a, d=dst: a.t().to(d), (x,)))
    f16 = torch.cat([f[:8], f[11:]]).half()     # within float16's range
    for dst in (torch.int32, torch.int64, torch.int16):
        for x in (f, f16, f.bfloat16()):
            cases.append(("%s -> %s" % (x.dtype, dst), lambda a, d=dst: a.to(d), (x,)))
            cases.append(("%s -> %s strided" % (x.dtype, dst), lambda a, d=dst: a[::2].to(d), (x,)))
    small = torch.tensor([0.5, -0.5, 1.5, -1.5, 2.7, -2.7, 100.99, -100.99, 127.9, -127.9, 0.0, 3.0])
    for dst in (torch.int8, torch.bool):
        cases.append(("float32 -> %s" % dst, lambda a, d=dst: a.to(d), (small,)))
    cases.append(("float32 -> uint8", lambda a: a.to(torch.uint8), (small.abs(),)))
    cases.append(("int32 -> int8 copy_", lambda a: torch.zeros(23, 31, dtype=torch.int8, device=a.device).copy_(a),
                  (big((23, 31)),)))
    check(cases)
    # int8 -> int32 and int -> float stay on the device
    with mt.strict():
        x = big((9, 10), torch.int8).to(DEV)
        assert torch.equal(x.t().to(torch.int32).cpu(), x.cpu().t().int())
        y = big((9, 10)).to(DEV)
        assert torch.equal(y.t().float().cpu(), y.cpu().t().float())


def float_values(n):
    """NaN, +-inf, -0.0, the edges of int32, int16, int8 and uint8 and of CVTTSS2SI's range
    (+-2^31), fractions, and n random floats of magnitudes 2^-4 .. 2^40 (float32)."""
    edges = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 0.5, -0.5, 0.99, -0.99, 1.5, -1.5, 2.7, -2.7,
             127.5, 128.0, -128.5, -129.0, 255.9, 256.0, -255.5, 300.5, 32767.9, 32768.0, -32768.9, -32769.0,
             65535.0, 65536.0, 65541.0, 2.0**24 + 2, 2.0**31 - 128, 2.0**31, -2.0**31, -2.0**31 - 256, 3e9, -3e9,
             1e10, -1e10, 3.4e38, -3.4e38, 1e-40, 16777217.0, 100.99, -100.99]
    mag = torch.exp2(torch.rand(n, generator=G) * 44 - 4)
    sign = torch.randint(0, 2, (n,), generator=G) * 2 - 1
    return torch.cat([torch.tensor(edges), mag * sign])


NARROW = (torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool)


@test
def conversions_on_device():
    """float32/bfloat16/float16 -> int32/int16/int8/uint8/bool and int32, int16, int8, uint8, bool ->
    the other integer types but int64 (int64_conversions_on_device) on the device (TVP programs cvt*), each element as CPU torch gives it (truncating
    toward zero; NaN, +-inf and values outside [-2^31, 2^31) as INT32_MIN, narrowing its low bits):
    4099 and 1 elements, 1023 x 3 transposed, strided, into a transposed destination; strict mode
    and the device op count show none went by the host."""
    f = float_values(4099 - 43)
    cases = []
    for src in (f, f.bfloat16(), f.half(), big((4099,)), big((4099,), torch.int16), big((4099,), torch.int8),
                big((4099,), torch.uint8), big((4099,), torch.bool)):
        for dst in NARROW:
            if src.dtype == dst or (src.dtype, dst) == (torch.int8, torch.int32):     # the COPY's
                continue
            name = "%s -> %s" % (src.dtype, dst)
            cases += [(name, lambda a, d=dst: a.to(d), (src,)),
                      (name + " one", lambda a, d=dst: a[7:8].to(d), (src,)),
                      (name + " transposed", lambda a, d=dst: a[:3069].reshape(3, 1023).t().to(d), (src,)),
                      (name + " strided", lambda a, d=dst: a[1::3].to(d), (src,)),
                      (name + " into transposed", lambda a, d=dst: torch.zeros(64, 64, dtype=d, device=a.device).t()
                       .copy_(a[:4096].reshape(64, 64)), (src,))]
    before = mt.device_stats().get("copy_convert", 0)
    with mt.strict():
        check(cases)
    ran = mt.device_stats().get("copy_convert", 0) - before
    assert ran == len(cases), (ran, len(cases))


def wide_floats(n):
    """float32 values for int64: NaN, +-inf, -0.5, 1e19, the edges of CVTTSS2SI's 64-bit range (+-2^63 and
    the floats next to them), around 2^31, 2^32 and 2^53, and n random floats of magnitudes 2^-4 .. 2^66."""
    edges = [float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 0.5, -0.5, 0.99, -1.5, 2.7, -2.7, 1e19, -1e19,
             9.3e18, -9.3e18, 2.0**63, -2.0**63, 2.0**63 * (1 - 2.0**-24), -2.0**63 * (1 - 2.0**-24), 2.0**62 * 1.5,
             2.0**31, -2.0**31, 2.0**31 - 128, -2.0**31 - 256, 3e9, -3e9, 2.0**32, -2.0**32 - 512, 2.0**39, -2.0**40,
             16777217.0, 2.0**53 + 1, -2.0**53, 65504.0, 65520.0, 1e-40, 3.4e38, -3.4e38]
    mag = torch.exp2(torch.rand(n, generator=G) * 70 - 4)
    sign = torch.randint(0, 2, (n,), generator=G) * 2 - 1
    return torch.cat([torch.tensor(edges), mag * sign])


def wide_ints(n):
    """int64 values: 2^24 + 1, 2^53 + 1, -2^63, 2^63 - 1, around 2^31, 2^32 and 2^63, halfway cases of
    float32's rounding (25 significant bits, and one off), and n random ones of random bit lengths."""
    edges = [0, 1, -1, 255, 256, -129, 2**24 + 1, -(2**24 + 1), 2**24 + 3, 2**53 + 1, 3 * 2**53 + 1, -2**63,
             2**63 - 1, -2**63 + 1, 2**31, 2**31 - 1, -2**31, -2**31 - 1, 2**31 + 2**7, 2**32 - 1, 2**32,
             2**32 + 2**8 + 1, 2**63 - 2**39, 2**63 - 2**39 - 1, 2**63 - 2**39 + 1, 2**63 - 2**40 + 2**39,
             -(2**63 - 2**39), 2**40 + 2**16, 2**40 + 3 * 2**16, 2**40 + 2**16 + 1, 65519, 65520, -65520]
    r = torch.randint(-2**63, 2**63 - 1, (n,), generator=G, dtype=torch.int64)
    return torch.cat([torch.tensor(edges, dtype=torch.int64), r >> torch.randint(0, 64, (n,), generator=G)])


@test
def int64_conversions_on_device():
    """int64 <-> float32/bfloat16/float16/int32/int16/int8/uint8/bool, both ways, on the device (TVP programs
    cvti64.*, cvt*.i64), each element as CPU torch gives it: floats truncated toward zero, NaN, +-inf and values
    outside [-2^63, 2^63) as INT64_MIN; int64 rounded to nearest even into float32 (into bfloat16 and float16
    through float32, as CPU torch); narrowing keeps the low bits; bool is x != 0. 4099 and 1 elements,
    1023 x 3 transposed, strided, into a transposed destination; strict mode and the device op count show
    none went by the host, and the strided int64 copies ran as the COPY."""
    f, i = wide_floats(4099 - 38), wide_ints(4099 - 33)
    pairs = [(x, torch.int64) for x in (f, f.bfloat16(), f.half(), i.int(), i.short(), i.char(), i.byte(), i.bool())]
    pairs += [(i, d) for d in (torch.float32, torch.bfloat16, torch.float16) + NARROW]
    cases = []
    for src, dst in pairs:
        name = "%s -> %s" % (src.dtype, dst)
        cases += [(name, lambda a, d=dst: a.to(d), (src,)),
                  (name + " one", lambda a, d=dst: a[7:8].to(d), (src,)),
                  (name + " transposed", lambda a, d=dst: a[:3069].reshape(3, 1023).t().to(d), (src,)),
                  (name + " strided", lambda a, d=dst: a[1::3].to(d), (src,)),
                  (name + " into transposed", lambda a, d=dst: torch.zeros(64, 64, dtype=d, device=a.device).t()
                   .copy_(a[:4096].reshape(64, 64)), (src,))]
    stats = mt.device_stats()
    with mt.strict():
        check(cases)
    after = mt.device_stats()
    ran = after.get("copy_convert", 0) - stats.get("copy_convert", 0)
    assert ran == len(cases), (ran, len(cases))
    # each transposed or strided int64 source and each int64 destination written transposed: a COPY of words
    copies = sum(2 if s.dtype == torch.int64 else 1 if d == torch.int64 else 0 for s, d in pairs)
    assert after.get("copy_", 0) - stats.get("copy_", 0) >= copies, (after.get("copy_", 0), copies)


@test
def elementwise():
    """Arithmetic wraps as CPU torch's does; division and remainder by its rules; comparisons exact."""
    cases = []
    for t in INTS:
        x, y = big((29, 33), t), big((29, 33), t)
        nz = torch.where(y == 0, torch.ones_like(y), y)
        s = str(t)[6:]
        k = {torch.int32: 2**24 + 1, torch.int64: 2**53 + 1}.get(t, 3)
        cases += [
            ("%s add" % s, torch.add, (x, y)), ("%s sub" % s, torch.sub, (x, y)), ("%s mul" % s, torch.mul, (x, y)),
            ("%s add alpha" % s, lambda a, b: torch.add(a, b, alpha=3), (x, y)),
            ("%s add scalar" % s, lambda a: a + k, (x,)), ("%s rsub scalar" % s, lambda a: k - a, (x,)),
            ("%s mul scalar" % s, lambda a: a * 3, (x,)),
            ("%s add broadcast" % s, lambda a, b: a + b[:1], (x, y)),
            ("%s add_" % s, lambda a, b: a.clone().add_(b), (x, y)),
            ("%s add_ scalar" % s, lambda a: a.clone().add_(k), (x,)),
            ("%s mul_" % s, lambda a, b: a.clone().mul_(b), (x, y)),
            ("%s mul_ scalar" % s, lambda a: a.clone().mul_(5), (x,)),
            ("%s neg" % s, torch.neg, (x,)), ("%s abs" % s, torch.abs, (x,)),
            ("%s div" % s, torch.div, (x, nz)),
            ("%s div scalar" % s, lambda a: a / 7, (x,)),
            ("%s div floor" % s, lambda a, b: torch.div(a, b, rounding_mode="floor"), (x, nz)),
            ("%s div trunc" % s, lambda a, b: torch.div(a, b, rounding_mode="trunc"), (x, nz)),
            ("%s floor_divide" % s, torch.floor_divide, (x, nz)),
            ("%s remainder" % s, torch.remainder, (x, nz)), ("%s fmod" % s, torch.fmod, (x, nz)),
            ("%s remainder scalar" % s, lambda a: a % 7, (x,)),
            ("%s clamp" % s, lambda a: a.clamp(-k, k), (x,)),
            ("%s clamp_min" % s, lambda a: a.clamp(min=k), (x,)),
            ("%s relu" % s, torch.relu, (x,)),
            ("%s maximum" % s, torch.maximum, (x, y)), ("%s minimum" % s, torch.minimum, (x, y)),
            ("%s bitwise_and" % s, torch.bitwise_and, (x, y)), ("%s bitwise_xor" % s, torch.bitwise_xor, (x, y)),
            ("%s square" % s, torch.square, (x,)),
            ("%s mm" % s, lambda a, b: a[:, :29] @ b, (x, y)),
            ("%s bmm" % s, lambda a, b: torch.bmm(a[None, :, :29], b[None]), (x, y)),
            ("%s sign" % s, torch.sign, (x,)),
        ]
        for c in ("eq", "ne", "lt", "le", "gt", "ge"):
            op = getattr(torch, c)
            cases += [("%s %s" % (s, c), op, (x, y)),
                      ("%s %s near" % (s, c), op, (x, x + (torch.arange(x.numel()).reshape(x.shape) % 3 - 1).to(t))),
                      ("%s %s scalar" % (s, c), lambda a, o=op, v=x.flatten()[5].item(): o(a, v), (x,)),
                      ("%s %s scalar+1" % (s, c), lambda a, o=op, v=x.flatten()[5].item(): o(a, v + 1), (x,))]
        cases.append(("%s isnan" % s, torch.isnan, (x,)))
    b, c = big((19, 7), torch.bool), big((19, 7), torch.bool)
    cases += [("bool and", torch.logical_and, (b, c)), ("bool eq", torch.eq, (b, c)), ("bool add", torch.add, (b, c)),
              ("bool not", torch.logical_not, (b,)), ("bool mul", torch.mul, (b, c))]
    check(cases)


@test
def reductions():
    """sum wraps (int32 sums to int64 in torch), prod wraps, max/min/argmax exact, cumsum."""
    cases = []
    for t in INTS + (torch.bool,):
        x = big((13, 57), t)
        s = str(t)[6:]
        cases += [
            ("%s sum" % s, torch.sum, (x,)), ("%s sum dim" % s, lambda a: a.sum(1), (x,)),
            ("%s sum dim0 keepdim" % s, lambda a: a.sum(0, keepdim=True), (x,)),
            ("%s sum dtype" % s, lambda a: a.sum(1, dtype=a.dtype), (x,)),
            ("%s prod" % s, lambda a: a.prod(1), (x,)),
            ("%s max" % s, torch.max, (x,)), ("%s min" % s, torch.min, (x,)),
            ("%s max dim" % s, lambda a: a.max(1), (x,)), ("%s min dim" % s, lambda a: a.min(0), (x,)),
            ("%s amax" % s, lambda a: a.amax(1), (x,)), ("%s amin" % s, lambda a: a.amin(0), (x,)),
            ("%s argmax" % s, lambda a: a.argmax(1), (x,)), ("%s argmin" % s, lambda a: a.argmin(), (x,)),
            ("%s cumsum" % s, lambda a: a.cumsum(1), (x,)),
            ("%s any" % s, lambda a: a.any(1), (x,)), ("%s all" % s, lambda a: a.all(), (x,)),
            ("%s count_nonzero" % s, lambda a: a.count_nonzero(1), (x,)),
            ("%s unique" % s, lambda a: torch.unique(a), (x,)),
        ]
    # int32 values whose float sum is off: 2^24 + 1 many times
    cases.append(("int32 sum 2^24+1", lambda a: a.sum(1, dtype=torch.int32),
                  (torch.full((4, 1000), 2**24 + 1, dtype=torch.int32),)))
    check(cases)


@test
def index_and_mask():
    """where, masks, gathers and scatters, sorts: the values move bit for bit."""
    cases = []
    for t in INTS + (torch.bool,):
        x, y = big((21, 40), t), big((21, 40), t)
        m = big((21, 40), torch.bool)
        s = str(t)[6:]
        v = x.flatten()[3].item()
        i = torch.randint(0, 21, (15,), generator=G)
        j = torch.randint(0, 40, (21, 40), generator=G)
        cases += [
            ("%s where" % s, torch.where, (m, x, y)),
            ("%s where scalar" % s, lambda c, a, v=v: torch.where(c, a, v), (m, x)),
            ("%s masked_fill" % s, lambda a, c, v=v: a.masked_fill(c, v), (x, m)),
            ("%s masked_fill_" % s, lambda a, c, v=v: a.clone().masked_fill_(c, v), (x, m)),
            ("%s masked_fill tensor" % s, lambda a, c, b: a.masked_fill(c, b[0, 0]), (x, m, y)),
            ("%s masked_select" % s, torch.masked_select, (x, m)),
            ("%s masked_scatter" % s, lambda a, c, b: a.clone().masked_scatter_(c, b), (x, m, y)),
            ("%s nonzero" % s, torch.nonzero, (x,)),
            ("%s index_select" % s, lambda a, k: a.index_select(0, k), (x, i)),
            ("%s index_select dim1" % s, lambda a, k: a.index_select(1, k), (x, i)),
            ("%s index" % s, lambda a, k: a[k], (x, i)),
            ("%s index 2" % s, lambda a, k: a[k, k + 1], (x, i)),
            ("%s index bool" % s, lambda a, c: a[c], (x, m)),
            ("%s index_put_" % s, lambda a, k, b: a.clone().index_put_((k,), b[:15]), (x, i, y)),
            ("%s index_put_ acc" % s, lambda a, k, b: a.clone().index_put_((k,), b[:15], accumulate=True), (x, i, y)),
            ("%s gather" % s, lambda a, k: a.gather(1, k), (x, j)),
            ("%s scatter" % s, lambda a, k, b: a.scatter(1, k, b), (x, j, y)),
            ("%s scatter value" % s, lambda a, k, v=v: a.scatter(1, k, v), (x, j)),
            ("%s scatter_add" % s, lambda a, k, b: a.scatter_add(1, k, b), (x, j, y)),
            ("%s index_add" % s, lambda a, k, b: a.index_add(0, k, b[:15]), (x, i, y)),
            ("%s index_add alpha" % s, lambda a, k, b: a.index_add(0, k, b[:15], alpha=3), (x, i, y)),
            ("%s index_copy" % s, lambda a, b: a.index_copy(0, torch.arange(15, device=a.device), b[:15]), (x, y)),
            ("%s index_fill" % s, lambda a, k, v=v: a.index_fill(0, k, v), (x, i)),
            ("%s sort" % s, lambda a: torch.sort(a, dim=1, stable=True), (x,)),
            ("%s sort desc" % s, lambda a: torch.sort(a, dim=0, descending=True, stable=True), (x,)),
            ("%s topk" % s, lambda a: torch.topk(a, 5, 1).values, (x,)),
            ("%s embedding" % s, lambda k, a: torch.nn.functional.embedding(k, a), (i, x)),
            # transposed operands: the kernels' .contiguous() is the device's COPY
            ("%s gather transposed" % s, lambda a, k: a.t().gather(0, k.t()), (x, j)),
            ("%s masked_fill transposed" % s, lambda a, c, v=v: a.t().masked_fill(c.t(), v), (x, m)),
            ("%s index_select transposed" % s, lambda a, k: a.t().index_select(1, k), (x, i)),
            ("%s scatter transposed" % s, lambda a, k, b: a.t().scatter(0, k.t(), b.t()), (x, j, y)),
            ("%s sort transposed" % s, lambda a: torch.sort(a.t(), dim=1, stable=True), (x,)),
        ]
        for r in ("sum", "prod", "amax", "amin", "mean"):
            cases += [("%s scatter_reduce %s" % (s, r),
                       lambda a, k, b, r=r: a.scatter_reduce(1, k, b, r), (x, j, y)),
                      ("%s scatter_reduce %s no self" % (s, r),
                       lambda a, k, b, r=r: a.scatter_reduce(1, k, b, r, include_self=False), (x, j, y))]
        for r in ("add", "multiply"):
            cases.append(("%s scatter reduce=%s" % (s, r), lambda a, k, b, r=r: a.scatter(1, k, b, reduce=r), (x, j, y)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)    # scatter's reduce= is deprecated
        check(cases)


@test
def on_device():
    """The integer ops above that ran on the device (the rest took the fallback, exact)."""
    ran = mt.device_stats()
    print("# device ops: %s" % sorted(ran.items()))
    print("# fallbacks: %s" % sorted(mt.fallback_stats().items()))
    print("# %.1f s; CPU torch refused %d cases: %s" % (time.monotonic() - START, len(SKIPPED), SKIPPED))
    for op in ("copy_", "cat", "fill_", "index_select", "gather", "masked_fill_", "sort", "topk"):
        assert ran.get(op, 0) > 0, (op, ran)


if __name__ == "__main__":
    START = time.monotonic()
    mt.reset_stats()
    run("torch int")
