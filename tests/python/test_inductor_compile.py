# SPDX-License-Identifier: MIT
"""Inductor's Triton code generation for maia on the host (no device):
the backend's libdevice compiles, unsupported math is refused with the
kernel's line, maia.inductor picks one config per kernel that fits a vector
register, and Inductor's kernels for the brief's graphs (scans, the inverse
trigonometric functions, dropout's random numbers among them), generated
from fake maia tensors, compile to TVP programs (Documentation/python.rst,
"torch.compile"; on the device: test_inductor.py)."""
import logging
import os
import re
import tempfile
import types

os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="maia-triton-cache-")
os.environ["TORCHINDUCTOR_CACHE_DIR"] = tempfile.mkdtemp(prefix="maia-inductor-cache-")

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402
from triton.language.extra import libdevice  # noqa: E402

import maia  # noqa: E402
import maia.torch  # noqa: E402
import maia.inductor  # noqa: E402
import tap  # noqa: E402
from maia_triton.regalloc import LoweringError  # noqa: E402
from tap import raises, test  # noqa: E402

TARGET = GPUTarget("maia", "tvp1.9", 1)


def compile_kernel(fn, signature, constexprs=None):
    return triton.compile(ASTSource(fn, signature, constexprs), target=TARGET)


@triton.jit
def all_math(x_ptr, y_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + o)
    r = libdevice.exp(x) + libdevice.exp2(x) + libdevice.expm1(x) + libdevice.log(x) + libdevice.log2(x)
    r += libdevice.log10(x) + libdevice.log1p(x) + libdevice.sqrt(x) + libdevice.rsqrt(x) + libdevice.sin(x)
    r += libdevice.cos(x) + libdevice.tan(x) + libdevice.tanh(x) + libdevice.sinh(x) + libdevice.cosh(x)
    r += libdevice.erf(x) + libdevice.erfc(x) + libdevice.abs(x) + libdevice.floor(x) + libdevice.ceil(x)
    r += libdevice.trunc(x) + libdevice.nearbyint(x) + libdevice.rint(x) + libdevice.round(x)
    r += libdevice.copysign(x, r) + libdevice.fmod(x, r) + libdevice.hypot(x, r) + libdevice.pow(x, r)
    r += libdevice.asinh(x) + libdevice.acosh(x) + libdevice.atanh(x) + libdevice.fast_tanhf(x)
    r += libdevice.ldexp(x, o)
    r = tl.where(libdevice.isnan(r) | libdevice.isinf(r) | libdevice.signbit(r), 0.0, r)
    tl.store(y_ptr + o, r)


@triton.jit
def uses_cbrt(x_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    tl.store(x_ptr + o, libdevice.cbrt(tl.load(x_ptr + o)))


@triton.jit
def other_extern(x_ptr, BLOCK: tl.constexpr):
    o = tl.arange(0, BLOCK)
    x = tl.load(x_ptr + o)
    tl.store(x_ptr + o, tl.extra.cuda.libdevice.sinh(x))


@test
def libdevice_compiles():
    k = compile_kernel(all_math, {"x_ptr": "*fp32", "y_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 256})
    asm = k.asm["tvpasm"]
    print("# all of the maia libdevice in one kernel: %d instructions" % k.metadata.num_insns)
    for insn in ("vtanh", "vexp", "vlog", "vrsqrt", "verf", "vfloor", "vfceil", "vsin", "vcos"):
        assert re.search(r"^\s*%s\b" % insn, asm, re.M), insn


@test
def unsupported_libdevice_names_its_line():
    e = raises(Exception, compile_kernel, uses_cbrt, {"x_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 64},
               match="libdevice.cbrt is not supported by the maia backend")
    assert "libdevice.cbrt(tl.load" in str(e), str(e)


@test
def other_extern_functions_refused():
    raises(LoweringError, compile_kernel, other_extern, {"x_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 64},
           match="extern function __nv_sinhf is not supported by the maia backend")


def fake_autotuner(configs, kind="POINTWISE", size_hints=None):
    from torch._inductor.runtime.hints import HeuristicType
    return types.SimpleNamespace(configs=[triton.Config(dict(c)) for c in configs], size_hints=size_hints,
                                 heuristic_type=HeuristicType[kind], inductor_meta={"kernel_name": "triton_k"},
                                 fn=types.SimpleNamespace(__name__="triton_k"))


@test
def one_config_that_fits():
    a = fake_autotuner([{"XBLOCK": 2048}, {"XBLOCK": 512}, {"XBLOCK": 1024}])
    maia.inductor._pick_config(a)
    assert [c.kwargs for c in a.configs] == [{"XBLOCK": 1024}], a.configs
    # A looped reduction: the x block shrinks first, then the loop's step.
    a = fake_autotuner([{"XBLOCK": 4, "R0_BLOCK": 2048}], "REDUCTION")
    maia.inductor._pick_config(a)
    assert [c.kwargs for c in a.configs] == [{"XBLOCK": 1, "R0_BLOCK": 1024}], a.configs[0].kwargs
    # A persistent reduction's row (R0_BLOCK, fixed in its body: the size
    # hint) is whole; its x block shrinks to fill the register rather than to 1.
    a = fake_autotuner([{"XBLOCK": 1}, {"XBLOCK": 8}, {"XBLOCK": 32}], "PERSISTENT_REDUCTION",
                       {"x": 32, "r0_": 64})
    maia.inductor._pick_config(a)
    assert [c.kwargs for c in a.configs] == [{"XBLOCK": 16}], a.configs[0].kwargs
    raises(RuntimeError, maia.inductor._pick_config,
           fake_autotuner([{"XBLOCK": 1}], "PERSISTENT_REDUCTION", {"x": 4, "r0_": 2048}),
           match="triton_k (persistent_reduction): its block (XBLOCK=1, a row of 2048) has more than the 1024")
    # Other kernels (templates, user kernels) keep their blocks.
    a = fake_autotuner([{"XBLOCK": 2048}], "USER_AUTOTUNE")
    raises(RuntimeError, maia.inductor._pick_config, a, match="cannot be made smaller")


def block(x, y, w, b, z, idx):
    silu = x * torch.sigmoid(x) + y
    sm = torch.softmax(x, -1)
    ln = F.layer_norm(x, (x.shape[-1], ), w, b, 1e-5)
    rms = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w
    g = F.gelu(y, approximate="tanh") + torch.expm1(x * 0.1) + torch.log1p(y.abs()) + torch.tanh(x)
    return (silu, sm, ln, rms, g, torch.softmax(z, -1), F.layer_norm(z, (z.shape[-1], )), x.argmax(-1),
            F.embedding(idx, x) * 2.0)


def inductor_compile(fn, *shapes):
    """Inductor on fake maia tensors of these shapes, float32 or (shape,
    dtype) (no device: Triton's
    maia driver is made active for the compile): ({kernel name: its
    CachingAutotuner, compiled}, the wrapper's code)."""
    from maia_triton import driver
    from torch._inductor import async_compile
    from torch._inductor.compile_fx import compile_fx
    from torch._inductor.utils import run_and_get_code
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode

    driver.MaiaDriver.is_active = staticmethod(lambda: True)
    mode = FakeTensorMode()
    args = [FakeTensor(mode, torch.empty(*s, device="meta") if isinstance(s[0], int) else
                       torch.empty(*s[0], dtype=s[1], device="meta"), torch.device("maia", 0)) for s in shapes]
    kernels = {}
    triton_orig = async_compile.AsyncCompile.triton

    def keep(self, name, source, *a, **kw):
        # The generated module's kernels as it loads (compiled in this process).
        kernels[name] = triton_orig(self, name, source, *a, **kw)
        return kernels[name]

    async_compile.AsyncCompile.triton = keep
    try:
        _, codes = run_and_get_code(compile_fx, torch.fx.symbolic_trace(fn), args)
    finally:
        async_compile.AsyncCompile.triton = triton_orig
    return kernels, "\n".join(codes)


@test
def inductor_kernels_for_maia_compile():
    """Every kernel of the brief's graphs compiles with one config of at
    most 1024 elements."""
    kernels, code = inductor_compile(block, (37, 300), (37, 300), (300, ), (300, ), (4, 3000),
                                     ((10, ), torch.int64))
    assert len(kernels) >= 2, sorted(kernels)
    assert "from maia.inductor import get_raw_stream" in code, code
    # A call's device work goes as one job (maia.inductor.batched_call).
    assert "\ncall = maia_batched_call(call, [0])\n" in code, code
    for name, k in sorted(kernels.items()):
        (res, ) = k.compile_results
        elems = 1
        for key, v in res.config.kwargs.items():
            elems *= v if key.endswith("BLOCK") else 1
        print("# %s: %s, %d instructions" % (name, res.config.kwargs, res.kernel.metadata.num_insns))
        assert elems <= 1024, (name, res.config.kwargs)
        assert res.kernel.asm["tvpbin"], name


@test
def scans_in_triton():
    """cumsum, cumprod, cummax and logcumsumexp become tl.associative_scan
    in Inductor's kernels (tt.scan: Hillis and Steele's steps through the
    scratch slots), a persistent one along rows of 100, a looped one along
    rows of 3000 (its carry between blocks), one along dimension 0; no
    aten call (values on the device: test_inductor.py)."""
    def f(a, z, c):
        return (torch.cumsum(a, -1) * a + 1.0, torch.cumprod(a, -1), torch.cummax(a, -1)[0],
                torch.cummax(a, -1)[1], torch.logcumsumexp(a, -1), torch.cumsum(z, -1), torch.cumsum(c, 0))
    kernels, code = inductor_compile(f, (8, 100), (4, 3000), (100, 8))
    calls = [ln for ln in code.splitlines() if not ln.strip().startswith("#")]
    assert not [ln for ln in calls if "aten.cum" in ln or "aten.logcumsumexp" in ln], code
    src = "".join(k.fn.src for k in kernels.values())
    assert src.count("tl.associative_scan(") >= 4, src
    for name, k in sorted(kernels.items()):
        print("# %s: %s, %d instructions, %d bytes of scratch" % (
            name, k.compile_results[0].config.kwargs, k.compile_results[0].kernel.metadata.num_insns,
            k.compile_results[0].kernel.metadata.scratch))
        assert k.compile_results[0].kernel.asm["tvpbin"], name


@test
def inverse_math_through_inductor():
    """Every libdevice function Inductor's Triton code calls is in the maia
    libdevice: atan, asin, acos, atan2, lgamma, erfinv, nextafter and frexp
    (ilogb, ldexp) in one graph compile (values on the device:
    test_inductor.py)."""
    def f(a, b):
        m, e = torch.frexp(a)
        return (torch.atan(a) + torch.asin(b) + torch.acos(b) + torch.atan2(a, b) + torch.lgamma(a)
                + torch.erfinv(b) + torch.nextafter(a, b) + m * e)
    kernels, code = inductor_compile(f, (64, ), (64, ))
    src = "".join(k.fn.src for k in kernels.values())
    for name in ("atan", "asin", "acos", "atan2", "lgamma", "erfinv", "nextafter", "frexp"):
        assert name + "(" in src, (name, src)


@test
def dropout_seeds_and_masks():
    """Inductor's dropout: the seed comes from maia.inductor.random_seeds
    (the CPU generator, uploaded; not aten.randint's CPU fallback), the
    kernel loads it as an i64 scalar and stores its bool mask through an
    i8 pointer (tt.bitcast)."""
    def f(a):
        o = torch.ops.aten.native_dropout(a, 0.5, True)
        return o[0], o[1]
    kernels, code = inductor_compile(f, (300, ))
    assert "maia_random_seeds(" in code and "aten.randint" not in code, code
    src = "".join(k.fn.src for k in kernels.values())
    assert "tl.rand(" in src, src
    for k in kernels.values():
        assert k.compile_results[0].kernel.asm["tvpbin"]


@test
def wrapper_allocates_in_c_without_input_asserts():
    """A maia graph's wrapper allocates its buffers with
    maia._maia_launch.empty_strided (not torch.empty_strided's argument
    parser) and leaves its inputs' sizes and strides to Dynamo's guards;
    maia.inductor.input_asserts brings Inductor's asserts back. The C
    allocation refuses anything but (sizes, strides, dtype)."""
    from maia import _maia_launch

    def f(a, b):
        return torch.softmax(a @ b, -1) + 1.0
    _, code = inductor_compile(f, (8, 16), (16, 8))
    assert "from maia._maia_launch import empty_strided as empty_strided_maia" in code, code
    assert "empty_strided_maia((8, 8), (8, 1), torch.float32)" in code, code
    assert " = empty_strided(" not in code, code
    assert "assert_size_stride(arg" not in code, code
    maia.inductor.input_asserts = True
    try:
        with torch._inductor.config.patch(fx_graph_cache=False):
            _, code = inductor_compile(f, (8, 16), (16, 8))
    finally:
        maia.inductor.input_asserts = False
    assert "assert_size_stride(arg0_1, (8, 16), (16, 1), 'input')" in code, code
    assert "assert_size_stride(arg1_1, (16, 8), (8, 1), 'input')" in code, code
    for args in (((2, ), (1, 1), torch.float32), ((2, ), (1, ), "float32"), ([2], [1], torch.float32),
                 ((2.0, ), (1, ), torch.float32), ((2, ), (1, ))):
        raises(TypeError, _maia_launch.empty_strided, *args, match="two tuples of ints of one length")
    raises(TypeError, _maia_launch.empty_strided, (1 << 70, ), (1, ), torch.float32)


@test
def launchers_without_empty_hooks():
    """Inductor's launcher for a maia kernel is made with no launch hooks
    while Triton's HookChains are empty (no launch_metadata per launch),
    with the chain once a hook is in it; the knobs are left as found."""
    from triton import knobs
    kernels, _ = inductor_compile(lambda x: torch.relu(x) + 1.0, (64, ))
    (res, ) = next(iter(kernels.values())).compile_results
    rt = knobs.runtime
    enter, leave = rt.launch_enter_hook, rt.launch_exit_hook
    launcher = res.make_launcher()
    assert launcher.__globals__["launch_enter_hook"] is None, launcher.__globals__["launch_enter_hook"]
    assert launcher.__globals__["launch_exit_hook"] is None
    assert rt.launch_enter_hook is enter and rt.launch_exit_hook is leave

    def hook(metadata):
        pass

    enter.add(hook)
    try:
        launcher = res.make_launcher()
    finally:
        enter.remove(hook)
    assert launcher.__globals__["launch_enter_hook"] is enter, launcher.__globals__["launch_enter_hook"]
    assert rt.launch_enter_hook is enter and rt.launch_exit_hook is leave


@test
def launchers_call_the_c_runner():
    """Inductor's launcher for a maia kernel calls the kernel's C runner
    (maia._maia_launch) while no hook is in Triton's chains and
    maia.inductor.fast_launch is on; the Python launcher with a hook or with
    fast_launch off."""
    from maia_triton.driver import MaiaLauncher
    from triton import knobs
    kernels, _ = inductor_compile(lambda x: torch.relu(x) * 3.0, (64, ))
    (res, ) = next(iter(kernels.values())).compile_results
    runner = res.make_launcher().__globals__["runner"]
    assert getattr(runner, "__name__", "") == "maia_triton_runner", runner
    maia.inductor.fast_launch = False
    try:
        assert isinstance(res.make_launcher().__globals__["runner"], MaiaLauncher)
    finally:
        maia.inductor.fast_launch = True

    def hook(metadata):
        pass

    knobs.runtime.launch_enter_hook.add(hook)
    try:
        assert isinstance(res.make_launcher().__globals__["runner"], MaiaLauncher)
    finally:
        knobs.runtime.launch_enter_hook.remove(hook)


@test
def c_runner_hands_the_rest_to_python():
    """The C runner launches only what it takes as is (maia tensors of its
    device, fp32, 64-bit integers, no hook); everything else goes to the
    Python launcher it was made from, with the same arguments (here a spy;
    the launches themselves: test_inductor.py on the device)."""
    from maia import _maia_launch
    calls = []

    def spy(*args):
        calls.append(args)
        return "python"

    run = _maia_launch.runner(spy, "key", bytes(16), 0, 0, "pfi-")
    head = (1, 1, 1, 0, None, None, None, None, None)
    cases = [head + (torch.zeros(2), 1.0, 3, 64),                 # a CPU tensor
             head + (None, 1.0, 3, 64),                           # None
             head + (_DevTensor(0x1000, 0), 1.0, 3, 64),          # not a torch tensor
             head + (torch.zeros(2), 1.0, 1 << 64, 64),           # past 64 bits
             head + (torch.zeros(2), 1e300, 3, 64),               # out of fp32's range
             head[:7] + (print, None, torch.zeros(2), 1.0, 3, 64),  # an enter hook
             head + (torch.zeros(2), 1.0, 3),                     # an argument short
             (-1, 1, 1, 0, None, None, None, None, None, torch.zeros(2), 1.0, 3, 64)]
    for args in cases:
        assert run(*args) == "python", args
        assert calls[-1] == args, (calls[-1], args)
    assert len(calls) == len(cases)
    raises(ValueError, _maia_launch.runner, spy, "key", b"", 0, 0, "pq", match="kind 'q'")


class _DevTensor:
    """A maia tensor as the launcher sees it: data pointer and device."""

    def __init__(self, va, index):
        self.va, self.device = va, torch.device("maia", index)

    def data_ptr(self):
        return self.va

    def get_device(self):
        return self.device.index


@test
def launcher_packer_matches_generic_path():
    """The packer made once per kernel (maia_triton.driver._packer) gives
    the words of the generic path (_pack per argument) for pointers on the
    kernel's device, None, integers of both signs and past 2^63, fp32; a
    pointer on another device or on the CPU gets the generic path's
    error."""
    from maia_triton import driver as d
    types = ["*fp32", "i32", "fp32", "*i64", "i64", "constexpr", "*fp32"]
    names = ["x", "n", "s", "y", "m", "BLOCK", "z"]
    keep = [0, 1, 2, 3, 4, 6]
    pack = d._packer(types, names, keep)
    for n, m in ((7, -1), (-(1 << 63), (1 << 63) + 5), ((1 << 64) - 1, 0)):
        for z in (_DevTensor(0x3000, 1), None):
            args = [_DevTensor(0x1000, 1), n, -2.5, _DevTensor(0x2000, 1), m, 64, z]
            want = d._words(types, names, keep, args, 1)
            assert pack(args, 1) == want, (pack(args, 1), want)
    assert want == [0x1000, -1, 0xc0200000, 0x2000, 0, 0], want
    args = [_DevTensor(0x1000, 1), 1, 1.0, _DevTensor(0x2000, 0), 1, 64, None]
    raises(ValueError, pack, args, 1, match="is on maia:0 but the kernel runs on maia:1")
    args[3] = torch.zeros(4)
    raises(ValueError, pack, args, 1, match="Triton kernels on Maia take maia tensors")
    raises(TypeError, d._packer(["fp64"], ["s"], [0]), [1.0], 0, match="fp32 only")


if __name__ == "__main__":
    tap.run("inductor-compile")
