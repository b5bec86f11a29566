"""triton.language.extra.libdevice for the maia backend (Documentation/triton.rst).

Triton's libdevice names are stubs that each backend maps to its own module
(BaseBackend.get_module_map); Inductor's generated kernels call them for
most math (libdevice.exp, rsqrt, tanh, pow, isnan, ...). Here each is a
@triton.jit function over the operations the lowering knows (inlined into
the kernel), or, where the TVP has an instruction Triton's front end has no
operation for (tanh), an extern_elementwise call whose symbol the lowering
maps to that instruction. Values are fp32 (Inductor computes fp16 and bf16
in fp32). The names libdevice has and this module does not implement fail
at compile time with the kernel's line: "libdevice.atan is not supported by
the maia backend".
"""

import triton
import triton.language as tl
from triton.language import core
from triton.language.extra import libdevice as _stubs

from .lowering import EXTERN_FUNCS

# An extern_elementwise symbol the lowering turns into one TVP instruction; fp32 only.
_TANH = "__maia_tanhf"
assert EXTERN_FUNCS[_TANH] == "vtanh"


@core.extern
def tanh(arg0, _semantic=None):
    return core.extern_elementwise("", "", [arg0], {(core.dtype("fp32"), ): (_TANH, core.dtype("fp32"))},
                                   is_pure=True, _semantic=_semantic)


@triton.jit
def exp(x):
    return tl.exp(x)


@triton.jit
def exp2(x):
    return tl.exp2(x)


@triton.jit
def expm1(x):
    # exp(x) - 1 loses every digit near 0: there the series' first terms.
    small = tl.abs(x) < 1e-4
    return tl.where(small, x + 0.5 * x * x, tl.exp(x) - 1.0)


@triton.jit
def log(x):
    return tl.log(x)


@triton.jit
def log2(x):
    return tl.log2(x)


@triton.jit
def log10(x):
    return tl.log(x) * 0.4342944819032518


@triton.jit
def log1p(x):
    # log(u) * x / (u - 1) with u = 1 + x rounded: exact to the rounding of u.
    u = 1.0 + x
    d = u - 1.0
    return tl.where(d == 0.0, x, tl.log(u) * (x / tl.where(d == 0.0, 1.0, d)))


@triton.jit
def sqrt(x):
    return tl.sqrt(x)


@triton.jit
def rsqrt(x):
    return tl.rsqrt(x)


@triton.jit
def sin(x):
    return tl.sin(x)


@triton.jit
def cos(x):
    return tl.cos(x)


@triton.jit
def tan(x):
    return tl.sin(x) / tl.cos(x)


@triton.jit
def sinh(x):
    return 0.5 * (expm1(x) - expm1(-x))


@triton.jit
def cosh(x):
    return 0.5 * (tl.exp(x) + tl.exp(-x))


@triton.jit
def erf(x):
    return tl.erf(x)


@triton.jit
def erfc(x):
    return 1.0 - tl.erf(x)


@triton.jit
def abs(x):
    return tl.abs(x)


@triton.jit
def floor(x):
    return tl.floor(x)


@triton.jit
def ceil(x):
    return tl.ceil(x)


@triton.jit
def trunc(x):
    return tl.where(x < 0.0, tl.ceil(x), tl.floor(x))


@triton.jit
def nearbyint(x):
    # Round half to even, as rint in the default rounding mode.
    f = tl.floor(x)
    d = x - f
    odd = (f - 2.0 * tl.floor(f * 0.5)) != 0.0
    up = (d > 0.5) | ((d == 0.5) & odd)
    return tl.where(up, f + 1.0, f)


@triton.jit
def rint(x):
    return nearbyint(x)


@triton.jit
def round(x):
    # Half away from zero.
    return tl.where(x < 0.0, -tl.floor(0.5 - x), tl.floor(x + 0.5))


@triton.jit
def isnan(x):
    return x != x


@triton.jit
def isinf(x):
    return tl.abs(x) == float("inf")


@triton.jit
def isfinited(x):
    return tl.abs(x) < float("inf")


@triton.jit
def finitef(x):
    return tl.abs(x) < float("inf")


@triton.jit
def signbit(x):
    # -0.0 has its sign bit set: 1 / -0.0 is -inf.
    return (x < 0.0) | ((x == 0.0) & ((1.0 / x) < 0.0))


@triton.jit
def copysign(x, y):
    return tl.where(signbit(y), -tl.abs(x), tl.abs(x))


@triton.jit
def fmod(x, y):
    q = x / y
    return x - y * tl.where(q < 0.0, tl.ceil(q), tl.floor(q))


@triton.jit
def hypot(x, y):
    return tl.sqrt(x * x + y * y)


@triton.jit
def ldexp(x, n):
    return x * tl.exp2(n.to(tl.float32))


@triton.jit
def pow(x, y):
    # |x|^y, negated for a negative x and an odd integer y, NaN for a
    # negative x and a non-integer y; 0^y as C's pow.
    ax = tl.abs(x)
    r = tl.exp2(y * tl.log2(ax))
    yint = tl.floor(y) == y
    yodd = yint & ((y - 2.0 * tl.floor(y * 0.5)) != 0.0)
    r = tl.where((x < 0.0) & yodd, -r, r)
    r = tl.where((x < 0.0) & (yint == 0), float("nan"), r)
    r = tl.where(y == 0.0, 1.0, r)
    return tl.where(x == 1.0, 1.0, r)


@triton.jit
def asinh(x):
    ax = tl.abs(x)
    r = log1p(ax + ax * ax / (1.0 + tl.sqrt(1.0 + ax * ax)))
    return tl.where(x < 0.0, -r, r)


@triton.jit
def acosh(x):
    return tl.log(x + tl.sqrt(x * x - 1.0))


@triton.jit
def atanh(x):
    return 0.5 * log1p(2.0 * x / (1.0 - x))


@triton.jit
def fast_tanhf(x):
    return tanh(x)


def _unsupported(name):
    @core.extern
    def stub(*args, _semantic=None):
        raise ValueError("libdevice.%s is not supported by the maia backend" % name)
    stub.__name__ = name
    return stub


_DONE = set(globals())
for _name in dir(_stubs):
    if not _name.startswith("_") and _name not in _DONE and callable(getattr(_stubs, _name)):
        globals()[_name] = _unsupported(_name)
