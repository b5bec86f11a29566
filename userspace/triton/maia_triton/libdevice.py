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
    # In two factors: 2^n alone overflows binary32 from n = 128 on, while
    # x 2^n need not (frexp scales a subnormal x by 2^149).
    h = (n >> 1).to(tl.float32)
    return x * tl.exp2(h) * tl.exp2(n.to(tl.float32) - h)


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


@triton.jit
def atan(x):
    # Cephes' atanf: |x| reduced to [0, tan(pi/8)] by pi/2 + atan(-1/|x|)
    # above tan(3pi/8) and pi/4 + atan((|x| - 1) / (|x| + 1)) above tan(pi/8);
    # an odd polynomial there.
    a = tl.abs(x)
    big = a > 2.414213562373095
    mid = a > 0.4142135623730950
    t = tl.where(big, -1.0 / a, tl.where(mid, (a - 1.0) / (a + 1.0), a))
    z = t * t
    p = (((8.05374449538e-2 * z - 1.38776856032e-1) * z + 1.99777106478e-1) * z - 3.33329491539e-1) * z * t + t
    r = tl.where(big, 1.5707963267948966, tl.where(mid, 0.7853981633974483, 0.0)) + p
    return tl.where(x < 0.0, -r, tl.where(x == 0.0, x, r))


@triton.jit
def asin(x):
    # Cephes' asinf: an odd polynomial up to |x| = 1/2, above it
    # pi/2 - 2 asin(sqrt((1 - |x|) / 2)); NaN beyond 1 (the sqrt's).
    a = tl.abs(x)
    big = a > 0.5
    z = tl.where(big, 0.5 * (1.0 - a), a * a)
    s = tl.where(big, tl.sqrt(z), a)
    p = ((((4.2163199048e-2 * z + 2.4181311049e-2) * z + 4.5470025998e-2) * z + 7.4953002686e-2) * z
         + 1.6666752422e-1) * z * s + s
    r = tl.where(big, 1.5707963267948966 - 2.0 * p, p)
    return tl.where(x < 0.0, -r, tl.where(x == 0.0, x, r))


@triton.jit
def acos(x):
    # Cephes' acosf: 2 asin(sqrt((1 - x) / 2)) above 1/2, pi minus that of
    # -x below -1/2, pi/2 - asin(x) between.
    s = asin(tl.where(tl.abs(x) > 0.5, tl.sqrt(0.5 * (1.0 - tl.abs(x))), x))
    return tl.where(x > 0.5, 2.0 * s, tl.where(x < -0.5, 3.141592653589793 - 2.0 * s, 1.5707963267948966 - s))


@triton.jit
def atan2(y, x):
    # atan of min / max of |x|, |y| (in [0, 1]), then the octant; C's
    # signed zeros, infinities (inf / inf is 1) and NaN.
    ax = tl.abs(x)
    ay = tl.abs(y)
    mx = tl.maximum(ax, ay)
    mn = tl.minimum(ax, ay)
    q = tl.where(mx == 0.0, 0.0, tl.where(mn == float("inf"), 1.0, mn / tl.where(mx == 0.0, 1.0, mx)))
    r = atan(q)
    r = tl.where(ay > ax, 1.5707963267948966 - r, r)
    r = tl.where(signbit(x), 3.141592653589793 - r, r)
    r = tl.where((x != x) | (y != y), x + y, r)
    return tl.where(signbit(y), -r, r)


@triton.jit
def lgamma(x):
    # Below 1/2 the reflection log(pi / |sin(pi x)|) - lgamma(1 - x), sin's
    # argument from x - round(x) (exact). y in [0.5, 8): lgamma(y) =
    # lgamma(2 + t) + log((y - 1) ... (y - n)), t = y - n - 2 in [-0.5, 0.5)
    # (n = -1: minus log y), lgamma(2 + t) = t g(t), g a degree-8 fit (1e-9);
    # from 8 on, Stirling's series to 1/z^5.
    refl = x < 0.5
    y = tl.where(refl, 1.0 - x, x)
    n = tl.where(y < 8.0, tl.floor(y - 1.5), 0.0)
    prod = tl.where(n >= 1.0, y - 1.0, 1.0)
    for k in tl.static_range(2, 7):
        prod = tl.where(n >= k, prod * (y - k), prod)
    t = y - n - 2.0
    g = (((((((-0.0002538618510183068 * t + 0.0005703469211074789) * t - 0.0011858376955039352) * t
              + 0.0028788269100860396) * t - 0.007386177637688038) * t + 0.020581630642929866) * t
          - 0.06735228129862149) * t + 0.32246701788359444) * t + 0.42278433499911067
    iz = 1.0 / y
    iz2 = iz * iz
    st = (y - 0.5) * tl.log(y) - y + 0.9189385332046727 + iz * (
        0.08333333333333333 - iz2 * (0.002777777777777778 - iz2 * 0.0007936507936507937))
    lg = tl.where(y < 8.0, t * g + tl.where(n < 0.0, -tl.log(y), tl.log(prod)), st)
    s = tl.abs(tl.sin(3.141592653589793 * (x - tl.floor(x + 0.5))))
    r = tl.where(refl, tl.log(3.141592653589793 / s) - lg, lg)
    return tl.where(tl.abs(x) == float("inf"), float("inf"), r)


@triton.jit
def erfinv(x):
    # Giles, "Approximating the erfinv function" (GPU Computing Gems, 2011),
    # single precision: a polynomial in w = -log(1 - x^2) below 5, in
    # sqrt(w) above; +-inf at +-1, NaN beyond.
    w = -tl.log((1.0 - x) * (1.0 + x))
    a = w - 2.5
    p = (((((((2.81022636e-08 * a + 3.43273939e-07) * a - 3.5233877e-06) * a - 4.39150654e-06) * a
            + 0.00021858087) * a - 0.00125372503) * a - 0.00417768164) * a + 0.246640727) * a + 1.50140941
    b = tl.sqrt(w) - 3.0
    q = (((((((-0.000200214257 * b + 0.000100950558) * b + 0.00134934322) * b - 0.00367342844) * b
            + 0.00573950773) * b - 0.0076224613) * b + 0.00943887047) * b + 1.00167406) * b + 2.83297682
    r = tl.where(w < 5.0, p, q) * x
    return tl.where(tl.abs(x) == 1.0, x * float("inf"), r)


@triton.jit
def ilogb(x):
    # The exponent field (a subnormal scaled by 2^23 first); 0 and NaN give
    # INT_MIN, +-inf INT_MAX, as CUDA's and glibc's.
    a = tl.abs(x)
    sub = a < 1.1754943508222875e-38
    e = ((tl.where(sub, a * 8388608.0, a).to(tl.int32, bitcast=True) >> 23) & 0xff) - 127
    e = tl.where(sub, e - 23, e)
    e = tl.where(a == float("inf"), 2147483647, e)
    return tl.where((x == 0.0) | (x != x), -2147483648, e)


@triton.jit
def nextafter(x, y):
    # One step of the bit pattern (sign and magnitude): +1 away from zero,
    # -1 towards it; from 0 the smallest subnormal with y's sign.
    b = x.to(tl.int32, bitcast=True)
    r = tl.where((x < y) == (x > 0.0), b + 1, b - 1).to(tl.float32, bitcast=True)
    # (Its bits: Triton makes the literal 1.4e-45 an fp64.)
    tiny = tl.where(y > 0.0, b * 0 + 1, b * 0 - 0x7fffffff).to(tl.float32, bitcast=True)
    r = tl.where(x == 0.0, tiny, r)
    r = tl.where(x == y, y, r)
    return tl.where((x != x) | (y != y), x + y, r)


@triton.jit
def llrint(x):
    # Round half to even, to int64 (Inductor's RoundToInt of index
    # expressions; the lanes hold int32).
    return nearbyint(x).to(tl.int64)


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
