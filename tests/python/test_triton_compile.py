# SPDX-License-Identifier: MIT
"""The Triton backend on the host (no device needed): Triton finds it
through its entry point, compiles Triton's tutorial kernels to TVP assembly
that libmaia's assembler accepts, and refuses what it cannot compile with
the op and the kernel's source line (Documentation/triton.rst)."""
import inspect
import os
import sys
import tempfile
import time

# A cache of its own: the first compile of each kernel is a cold one.
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="maia-triton-cache-")

import triton  # noqa: E402
import triton.language as tl  # noqa: E402
from triton.backends.compiler import GPUTarget  # noqa: E402
from triton.compiler import ASTSource  # noqa: E402

import maia  # noqa: E402
import tap  # noqa: E402
import triton_kernels as K  # noqa: E402
from maia_triton.regalloc import LoweringError  # noqa: E402
from tap import raises, test  # noqa: E402

TARGET = GPUTarget("maia", "tvp1.9", 1)
HAVE_ASSEMBLER = hasattr(maia, "tvp_assemble")


def compile_kernel(fn, signature, constexprs=None):
    return triton.compile(ASTSource(fn, signature, constexprs), target=TARGET)


def line_of(fn, text):
    """file:line of the first source line of fn that contains text."""
    lines, first = inspect.getsourcelines(fn.fn)
    for i, line in enumerate(lines):
        if text in line:
            return "%s:%d:" % (inspect.getsourcefile(fn.fn), first + i)
    raise AssertionError("%r not in %s" % (text, fn.fn.__name__))


@test
def backend_found_through_entry_point():
    from triton.backends import backends
    assert "maia" in backends, sorted(backends)
    assert backends["maia"].compiler.__name__ == "MaiaBackend"


def check_tutorial(name, needed):
    sig, cx = K.SIGNATURES[name]
    t0 = time.perf_counter()
    k = compile_kernel(getattr(K, name), sig, cx)
    cold = time.perf_counter() - t0
    t0 = time.perf_counter()
    compile_kernel(getattr(K, name), sig, cx)
    cached = time.perf_counter() - t0
    print("# %s: compiled cold in %.0f ms, cached in %.1f ms, %d instructions" %
          (name, cold * 1e3, cached * 1e3, k.metadata.num_insns))
    asm = k.asm["tvpasm"]
    for mnem in needed:
        assert ("    %s " % mnem) in asm, "%s: no %s in\n%s" % (name, mnem, asm)
    assert k.metadata.num_args == sum(1 for t in sig.values() if t != "constexpr")
    # The assembler (libmaia's validator, the device's rules) accepts every word.
    assert len(k.asm["tvpbin"]) == 8 * k.metadata.num_insns


@test
def tutorial_01_vector_add():
    check_tutorial("add_kernel", ["pid", "viota", "vicmp", "vld", "vfadd", "vst"])


@test
def tutorial_02_fused_softmax():
    check_tutorial("softmax_kernel", ["nprog", "bge", "vredmax", "vexp", "vredsum", "vfdiv", "vsel"])


@test
def tutorial_05_layer_norm_forward():
    check_tutorial("_layer_norm_fwd_fused", ["vredsum", "vsqrt", "vcvt", "jmp"])


@test
def tutorial_03_matmul():
    check_tutorial("matmul_kernel", ["vdot", "vbrow", "vbcol", "virem", "vfcmp"])


@test
def tutorial_04_low_memory_dropout():
    check_tutorial("_seeded_dropout", ["vimul", "vshr", "vxor", "vcvt", "vsel"])


@test
def other_ops():
    check_tutorial("misc_kernel", ["vexp2", "vlog", "vsqrt", "vcvt", "virem", "vidiv", "vshl", "beqz", "vfmin"])
    check_tutorial("trans_reduce_kernel", ["vtrans", "vredmax", "vredsum"])
    check_tutorial("convert_kernel", ["vcvt", "vshr"])
    check_tutorial("loops_kernel", ["bge", "beqz", "vredsum", "vfmax"])
    check_tutorial("int_reduce_kernel", ["vimax", "viadd", "vimin", "vimul", "vtrans"])
    check_tutorial("argmax_kernel", ["vfcmp", "vsel", "vredmax"])
    asm = compile_kernel(K.convert_kernel, *K.SIGNATURES["convert_kernel"]).asm["tvpasm"]
    for form in ("fp16", "bf16", "fp8e4m3", "u2f", "f2i"):
        assert ", %s\n" % form in asm, form


class FakeTensor:
    """What the launcher reads of a maia tensor: its device and data_ptr()."""

    class device:
        type = "maia"

    def __init__(self, va):
        self.va = va

    def data_ptr(self):
        return self.va


@test
def launcher_packs_arguments():
    """Specialization as the JIT does it (ints equal to 1 become constexprs),
    then the words the launcher hands to torch.ops.maia.triton_launch."""
    import torch
    from triton.runtime import driver
    from maia_triton import driver as maia_driver

    class HostDriver(maia_driver.MaiaDriver):
        def get_current_device(self):
            return 0

    # No device on the host: a driver made active by hand (reset_active() would look for one).
    previous = driver._active
    driver.set_active(HostDriver())
    try:
        a = torch.zeros(64, 96, dtype=torch.float16)
        b = torch.zeros(96, 80, dtype=torch.float16)
        k = K.matmul_kernel.warmup(a, b, a, 64, 80, 96, 96, 1, 80, 1, 80, 1, BLOCK_SIZE_M=32, BLOCK_SIZE_N=32,
                                   BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="", grid=(1, ))
        assert k.metadata.num_args == 9, k.metadata.num_args    # the three strides of 1 are constants
        calls = []
        saved, maia_driver._launch = maia_driver._launch, lambda *a: calls.append(a)
        try:
            launcher = maia_driver.MaiaLauncher(k.src, k.metadata)
            fn = maia_driver.MaiaFunction(k.kernel, 0)
            args = [FakeTensor(0x1000), FakeTensor(0x2000), FakeTensor(0x3000), 64, 80, 96, 96, 1, 80, 1, 80, 1,
                    32, 32, 32, 8, ""]
            launcher(6, 1, 1, 0, fn, None, None, None, None, *args)
            raises(ValueError, launcher, 6, 1, 1, 0, fn, None, None, None, None, a, *args[1:],
                   match="maia tensors")
        finally:
            maia_driver._launch = saved
        binary, key, dev, grid, words, budget = calls[0]
        assert bytes(binary.numpy()) == k.kernel and key == k.metadata.hash and dev == 0
        assert grid == [6, 1, 1] and budget == 0
        assert words == [0x1000, 0x2000, 0x3000, 64, 80, 96, 96, 80, 80], words
    finally:
        driver._active = previous


@test
def jit_launches_load_once():
    """Three launches through the JIT: three device calls, one launcher and
    one binary made (CompiledKernel loads a kernel whose module is None again
    at every launch)."""
    import torch
    from triton.runtime import driver
    from maia_triton import driver as maia_driver

    class HostDriver(maia_driver.MaiaDriver):
        def get_current_device(self):
            return 0

    made, calls = [], []

    class CountingLauncher(maia_driver.MaiaLauncher):
        def __init__(self, *a):
            made.append(1)
            super().__init__(*a)

    def pack(ty, arg, name, device):        # CPU tensors stand in for maia ones here
        return arg.data_ptr() if ty.startswith("*") else saved_pack(ty, arg, name, device)

    previous = driver._active
    d = HostDriver()
    d.launcher_cls = CountingLauncher
    driver.set_active(d)
    saved_launch, saved_pack = maia_driver._launch, maia_driver._pack
    maia_driver._launch, maia_driver._pack = (lambda *a: calls.append(a)), pack
    try:
        x = torch.rand(300)
        for _ in range(3):
            K.add_kernel[(2, )](x, x, x, 300, BLOCK_SIZE=256)
    finally:
        maia_driver._launch, maia_driver._pack = saved_launch, saved_pack
        driver._active = previous
    assert len(calls) == 3 and len(made) == 1, (len(calls), len(made))
    assert calls[0][0] is calls[2][0]          # the same binary tensor
    assert calls[0][3] == [2, 1, 1] and calls[0][4] == [x.data_ptr()] * 3 + [300]


@triton.jit
def too_wide(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.load(x_ptr + offs) * 2.0)


@test
def tensor_over_1024_elements_names_the_line():
    e = raises(LoweringError, compile_kernel, too_wide, {"x_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 2048})
    assert "2048 elements" in str(e) and "1024 lanes" in str(e), e
    # The first op of that size is the constant 2.0 splat to 2048 lanes.
    assert str(e).startswith(line_of(too_wide, "* 2.0")), e


@triton.jit
def atomic(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.atomic_xchg(x_ptr + offs, 1.0)


@test
def unsupported_op_names_op_and_line():
    # Of the atomics on blocks only add has an instruction (VAMOADD).
    e = raises(LoweringError, compile_kernel, atomic, {"x_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 64})
    assert "tt.atomic_rmw exch on a tensor of pointers is not supported" in str(e), e
    assert str(e).startswith(line_of(atomic, "tl.atomic_xchg")), e


@triton.jit
def seventeen(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16):
    tl.store(a0, a1 + a2 + a3 + a4 + a5 + a6 + a7 + a8 + a9 + a10 + a11 + a12 + a13 + a14 + a15 + a16)


@test
def more_than_16_arguments():
    sig = {"a0": "*i32"}
    sig.update({"a%d" % i: "i32" for i in range(1, 17)})
    raises(LoweringError, compile_kernel, seventeen, sig, match="17 arguments; a KERNEL command carries at most 16")


@triton.jit
def _clamp_scalar(x):
    if x > 1.0:
        return 1.0
    return x


@triton.jit
def mapped(x_ptr, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    tl.store(x_ptr + offs, tl.map_elementwise(_clamp_scalar, tl.load(x_ptr + offs)))


@triton.jit
def while_loop(x_ptr, n):
    i = 0
    while i < n:
        i += 3
    tl.store(x_ptr, i)


@test
def unsupported_region_ops_name_op_and_line():
    e = raises(LoweringError, compile_kernel, mapped, {"x_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 16})
    assert str(e).startswith(line_of(mapped, "tl.map_elementwise")) and "is not supported" in str(e), e


@test
def while_loops():
    """scf.while: the before region, the exit branch, the after region and the
    jump back; carried values through it (the tests in the guest run them)."""
    asm = compile_kernel(while_loop, {"x_ptr": "*i32", "n": "i32"}).asm["tvpasm"]
    for part in (".Lwhile", "    beqz ", "    jmp .Lwhile", ".Lendwhile", "    sst "):
        assert part in asm, "%s not in\n%s" % (part, asm)
    check_tutorial("atomics_kernel", ["amoadd", "amocas", "amoxchg", "max", "or", "vfadd", "beqz", "jmp"])
    check_tutorial("tensor_atomic_kernel", ["vamoadd"])
    asm = compile_kernel(K.tensor_atomic_kernel, *K.SIGNATURES["tensor_atomic_kernel"]).asm["tvpasm"]
    assert asm.count("    vamoadd ") == 2 and ", f32, v" in asm and ", i32, v" in asm, asm


@test
def tutorial_05_layer_norm_backward():
    """The spin lock: `while tl.atomic_cas(Lock, 0, 1) == 1` is an AMOCAS in a
    while loop, the release an AMOXCHG; tl.debug_barrier is nothing (one instance
    is one thread)."""
    check_tutorial("_layer_norm_bwd_dx_fused", ["amocas", "amoxchg", "beqz", "vredsum", "vsel"])
    check_tutorial("_layer_norm_bwd_dwdb", ["vredsum", "vbrow", "vbcol", "bge"])
    asm = compile_kernel(K._layer_norm_bwd_dx_fused, *K.SIGNATURES["_layer_norm_bwd_dx_fused"]).asm["tvpasm"]
    # the lock is taken before the partial sums are read and released after they are stored
    take, release = asm.index("    amocas "), asm.rindex("    amoxchg ")
    assert take < asm.index("    sld ") and asm.rindex("    vst ") < release, asm


@test
def vector_pressure_spills():
    k = compile_kernel(K.many_live, {"x_ptr": "*fp32", "y_ptr": "*fp32", "BLOCK": "constexpr"}, {"BLOCK": 64})
    assert k.metadata.scratch > 0 and k.metadata.scratch % 4096 == 0, k.metadata.scratch
    asm = k.asm["tvpasm"]
    assert "vst v29, s30, unit, i32" in asm and "vld v29, s30, unit, i32" in asm, asm
    # The spill area's address is the argument after the kernel's own two.
    assert "add s31, s31, s3" in asm, asm


@triton.jit
def many_live_16_args(x_ptr, y_ptr, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, BLOCK: tl.constexpr):
    K.many_live(x_ptr, y_ptr, BLOCK)


@test
def no_spill_with_16_arguments():
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "BLOCK": "constexpr"}
    sig.update({"a%d" % i: "i32" for i in range(2, 16)})
    raises(LoweringError, compile_kernel, many_live_16_args, sig, {"BLOCK": 64},
           match="needs to spill vector registers, and its 16 arguments leave no argument register")


@triton.jit
def many_scalars(x_ptr, y_ptr):
    # 34 integers loaded before any is used: more than the TVP's 31 scalar registers.
    b0 = tl.load(x_ptr + 0)
    b1 = tl.load(x_ptr + 1)
    b2 = tl.load(x_ptr + 2)
    b3 = tl.load(x_ptr + 3)
    b4 = tl.load(x_ptr + 4)
    b5 = tl.load(x_ptr + 5)
    b6 = tl.load(x_ptr + 6)
    b7 = tl.load(x_ptr + 7)
    b8 = tl.load(x_ptr + 8)
    b9 = tl.load(x_ptr + 9)
    b10 = tl.load(x_ptr + 10)
    b11 = tl.load(x_ptr + 11)
    b12 = tl.load(x_ptr + 12)
    b13 = tl.load(x_ptr + 13)
    b14 = tl.load(x_ptr + 14)
    b15 = tl.load(x_ptr + 15)
    b16 = tl.load(x_ptr + 16)
    b17 = tl.load(x_ptr + 17)
    b18 = tl.load(x_ptr + 18)
    b19 = tl.load(x_ptr + 19)
    b20 = tl.load(x_ptr + 20)
    b21 = tl.load(x_ptr + 21)
    b22 = tl.load(x_ptr + 22)
    b23 = tl.load(x_ptr + 23)
    b24 = tl.load(x_ptr + 24)
    b25 = tl.load(x_ptr + 25)
    b26 = tl.load(x_ptr + 26)
    b27 = tl.load(x_ptr + 27)
    b28 = tl.load(x_ptr + 28)
    b29 = tl.load(x_ptr + 29)
    b30 = tl.load(x_ptr + 30)
    b31 = tl.load(x_ptr + 31)
    b32 = tl.load(x_ptr + 32)
    b33 = tl.load(x_ptr + 33)
    acc = b33
    acc = acc * b32 + 1
    acc = acc * b31 + 1
    acc = acc * b30 + 1
    acc = acc * b29 + 1
    acc = acc * b28 + 1
    acc = acc * b27 + 1
    acc = acc * b26 + 1
    acc = acc * b25 + 1
    acc = acc * b24 + 1
    acc = acc * b23 + 1
    acc = acc * b22 + 1
    acc = acc * b21 + 1
    acc = acc * b20 + 1
    acc = acc * b19 + 1
    acc = acc * b18 + 1
    acc = acc * b17 + 1
    acc = acc * b16 + 1
    acc = acc * b15 + 1
    acc = acc * b14 + 1
    acc = acc * b13 + 1
    acc = acc * b12 + 1
    acc = acc * b11 + 1
    acc = acc * b10 + 1
    acc = acc * b9 + 1
    acc = acc * b8 + 1
    acc = acc * b7 + 1
    acc = acc * b6 + 1
    acc = acc * b5 + 1
    acc = acc * b4 + 1
    acc = acc * b3 + 1
    acc = acc * b2 + 1
    acc = acc * b1 + 1
    acc = acc * b0 + 1
    tl.store(y_ptr, acc)


@test
def scalar_pressure_is_a_clear_error():
    e = raises(LoweringError, compile_kernel, many_scalars, {"x_ptr": "*i32", "y_ptr": "*i32"})
    assert "kernel too large: more than 31 scalar registers live at %s" % inspect.getsourcefile(many_scalars.fn) \
        in str(e), e


if __name__ == "__main__":
    if not HAVE_ASSEMBLER:
        # Until the maia module binds libmaia's assembler: the TVP assembly only.
        from maia_triton import compiler
        compiler.MaiaBackend.make_tvpbin = staticmethod(lambda src, metadata, options: b"\0" * 8 *
                                                       metadata["num_insns"])
        print("# maia.tvp_assemble missing: the binaries are not checked")
    tap.run("triton-compile")
