# SPDX-License-Identifier: MIT
"""The maia Python module against the real device (in the guest, under
run-guest --host-root): every call it wraps, zero-copy views, results of
device commands against numpy, and each error path raising maia.Error (or
the Python exception named) with libmaia's message."""
import errno

import numpy as np

import maia
from tap import raises, run, test

dev = maia.Device(0)


@test
def enumeration():
    assert maia.device_count() >= 1
    lst = maia.device_list()
    assert len(lst) == maia.device_count(), lst
    info = dev.info()
    assert info["node"].startswith("/dev/accel/accel"), info
    assert info["pci_address"] == lst[0][1], (info, lst)
    assert info["hbm_size"] > 0 and info["clusters"] > 0
    assert dev.query(maia.PARAM_HBM_SIZE) == info["hbm_size"]
    assert maia.dtype_name(maia.DTYPE_BF16) == "bf16"


@test
def ping():
    r = dev.ping(0x1234)
    assert r["echo"] == 0x1234 and r["round_trip_ns"] > 0, r


@test
def zero_copy_views():
    bo = dev.bo(8192, maia.BO_HOST)
    a = maia.view(bo, maia.DTYPE_INT32, (2048,))
    b = np.frombuffer(bo, dtype=np.uint8)
    a[:] = np.arange(2048, dtype=np.int32)
    # Same memory, no copy: a write through one view shows in the other.
    assert b[4] == 1 and b[8] == 2
    b[0] = 7
    assert a[0] == 7
    assert a.__array_interface__["data"][0] == np.frombuffer(bo, np.uint8).ctypes.data
    e = raises(BufferError, bo.close, match="buffer views")
    del a, b
    bo.close()
    assert bo.closed
    raises(maia.Error, lambda: bo.va, match="closed")
    raises(maia.Error, memoryview, bo, match="closed")


@test
def dma_fill_and_copy():
    n = 1 << 16
    src = dev.bo(n, maia.BO_HOST)
    hbm = dev.bo(n)
    dst = dev.bo(n, maia.BO_HOST)
    s = maia.view(src, maia.DTYPE_INT32, (n // 4,))
    s[:] = np.random.default_rng(1).integers(-2**31, 2**31 - 1, n // 4, dtype=np.int32)
    cb = dev.cmdbuf()
    cb.copy(hbm.va, src.va, n)
    cb.copy(dst.va, hbm.va, n)
    cb.fill(dst.va + n - 4096, 4096, 0xdeadbeef)
    st = dev.run(cb)
    assert st["status"] == maia.JOB_OK and st["name"], st
    d = maia.view(dst, maia.DTYPE_INT32, (n // 4,))
    assert np.array_equal(d[:-1024], s[:-1024])
    assert np.all(d[-1024:].view(np.uint32) == 0xdeadbeef)


def gemm_case(m, n, k, dtype):
    rng = np.random.default_rng(m * n + k)
    a = rng.standard_normal((m, k), dtype=np.float32)
    b = rng.standard_normal((k, n), dtype=np.float32)
    esz = 2 if dtype == maia.DTYPE_BF16 else 4
    ha = dev.bo(m * k * esz, maia.BO_HOST)
    hb = dev.bo(k * n * esz, maia.BO_HOST)
    hc = dev.bo(m * n * 4, maia.BO_HOST)
    if dtype == maia.DTYPE_BF16:
        maia.view(ha, dtype, (m, k))[:] = maia.to_bf16(a).reshape(m, k)
        maia.view(hb, dtype, (k, n))[:] = maia.to_bf16(b).reshape(k, n)
        a = maia.from_bf16(maia.to_bf16(a)).reshape(m, k)
        b = maia.from_bf16(maia.to_bf16(b)).reshape(k, n)
    else:
        maia.view(ha, dtype, (m, k))[:] = a
        maia.view(hb, dtype, (k, n))[:] = b
    cb = dev.cmdbuf()
    cb.gemm(maia.tensor(ha, dtype, (m, k)), maia.tensor(hb, dtype, (k, n)),
            maia.tensor(hc, maia.DTYPE_FP32, (m, n)))
    dev.run(cb)
    ref = a.astype(np.float64) @ b.astype(np.float64)
    got = maia.view(hc, maia.DTYPE_FP32, (m, n))
    # FP32 accumulation of exactly decoded inputs: k * 2^-24 relative to sum |a||b|.
    bound = k * 2.0**-23 * (np.abs(a).astype(np.float64) @ np.abs(b).astype(np.float64)) + 1e-30
    assert np.all(np.abs(got - ref) <= bound), float(np.max(np.abs(got - ref) / bound))


@test
def gemm_fp32():
    gemm_case(33, 17, 65, maia.DTYPE_FP32)


@test
def gemm_bf16():
    gemm_case(64, 48, 128, maia.DTYPE_BF16)


@test
def elementwise_softmax_norms():
    rows, d = 8, 64
    rng = np.random.default_rng(3)
    x = rng.standard_normal((rows, d), dtype=np.float32)
    y = rng.standard_normal((rows, d), dtype=np.float32)
    bo = dev.bo(rows * d * 4 * 8, maia.BO_HOST)
    off = [i * rows * d * 4 for i in range(8)]
    T = [maia.tensor(bo, maia.DTYPE_FP32, (rows, d), o) for o in off]
    V = [maia.view(bo, maia.DTYPE_FP32, (rows, d), o) for o in off]
    V[0][:] = x
    V[1][:] = y
    cb = dev.cmdbuf()
    cb.add(T[0], T[1], T[2])
    cb.mul(T[0], T[1], T[3])
    cb.activation(T[0], T[4], maia.ACT_RELU)
    cb.softmax(T[0], T[5])
    cb.layernorm(T[0], T[6], eps=1e-5)
    cb.rmsnorm(T[0], T[7], eps=1e-6)
    dev.run(cb)
    x64 = x.astype(np.float64)
    sm = np.exp(x64 - x64.max(1, keepdims=True))
    sm /= sm.sum(1, keepdims=True)
    ln = (x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5)
    rms = x64 / np.sqrt((x64 ** 2).mean(1, keepdims=True) + 1e-6)
    for got, ref, tol in ((V[2], x64 + y, 1e-6), (V[3], x64 * y, 1e-6),
                          (V[4], np.maximum(x64, 0), 0), (V[5], sm, 1e-6),
                          (V[6], ln, 1e-5), (V[7], rms, 1e-5)):
        err = np.max(np.abs(got - ref))
        assert err <= tol * max(1.0, np.max(np.abs(ref))), (err, tol)


@test
def telemetry():
    before = dev.telemetry()
    cb = dev.cmdbuf()
    cb.nop()
    dev.run(cb)
    after = dev.telemetry()
    assert "commands" in after and after["commands"] > before.get("commands", 0), (before, after)
    t = maia.telemetry_read(dev.info()["pci_address"])
    assert t["pci_address"] == dev.info()["pci_address"]
    raises(maia.Error, maia.telemetry_read, "0000:7f:1f.7", match="maia_telemetry_read")


@test
def submit_and_wait():
    cb = dev.cmdbuf()
    cb.nop()
    seq = dev.submit(cb)
    st = dev.wait(seq, 1e30)                      # clamped, not overflowed
    assert st["status"] == maia.JOB_OK, st
    assert dev.wait(seq, -1)["status"] == maia.JOB_OK   # done already: no wait needed


@test
def errors_device():
    e = raises(maia.Error, maia.Device, 99, match="maia_device_open")
    assert e.errno == errno.ENODEV and isinstance(e, OSError), e
    raises(maia.Error, maia.Device, pci="not-an-address", match="maia_device_open_pci")
    d = maia.Device(0)
    d.close()
    d.close()
    raises(maia.Error, d.info, match="closed")
    raises(TypeError, maia.Device, "zero")


@test
def errors_bo():
    raises(ValueError, dev.bo, 4096, 7, match="placement")
    raises(maia.Error, dev.bo, 1 << 62, match="maia_bo_create")
    bo = dev.bo(4096, maia.BO_HOST)
    raises(ValueError, maia.view, bo, maia.DTYPE_FP32, (2048,), match="do not fit")
    raises(ValueError, maia.view, bo, maia.DTYPE_FP32, (4,), 2, match="offset")
    raises(ValueError, maia.view, bo, maia.DTYPE_MXFP4_E2M1, (32,), match="no numpy")


@test
def errors_tensor_and_builders():
    raises(maia.Error, maia.Tensor, 0x1000, 99, (4,), match="dtype")
    raises(ValueError, maia.Tensor, 0x1000, maia.DTYPE_FP32, (1, 2, 3, 4, 5), match="dimensions")
    raises(ValueError, maia.Tensor, 0x1000, maia.DTYPE_FP32, (4, 4), (1,), match="strides")
    raises(ValueError, maia.Tensor, 0x1000, maia.DTYPE_FP32, (-1,), match="shape[0]")
    raises(maia.Error, maia.Tensor, 0x1000, maia.DTYPE_FP32, (0,), match="maia_tensor_init")
    cb = dev.cmdbuf()
    a = maia.Tensor(0x100000, maia.DTYPE_FP32, (4, 8))
    b = maia.Tensor(0x200000, maia.DTYPE_FP32, (4, 8))
    c = maia.Tensor(0x300000, maia.DTYPE_FP32, (4, 8))
    e = raises(maia.Error, cb.gemm, a, b, c, match="maia_cmd_gemm")
    assert e.errno == errno.EINVAL, e
    raises(TypeError, cb.gemm, a, b, "c", match="maia.Tensor")
    raises(maia.Error, cb.activation, a, c, 77, match="maia_cmd_activation")
    raises(ValueError, cb.transpose, a, c, (0,), match="perm")
    assert cb.size == 0
    small = dev.cmdbuf(64)
    raises(maia.Error, lambda: [small.nop() for _ in range(1000)])
    raises(maia.Error, dev.run, cb, match="maia_run")   # an empty command buffer
    cb.close()
    raises(maia.Error, cb.nop, match="closed")
    other = maia.Device(0)
    raises(maia.Error, other.run, small, match="another")
    raises(ValueError, maia.dtype_name, 99)
    raises(maia.Error, maia.dtype_bytes, maia.DTYPE_MXFP8_E4M3, 33, match="maia_dtype_bytes")


@test
def errors_failed_job():
    # Its own context: the fault marks it faulted, not the shared one.
    d = maia.Device(0)
    cb = d.cmdbuf()
    cb.copy(0x7ff000000000, 0x7ff100000000, 4096)
    e = raises(maia.Error, d.run, cb, match="maia_run")
    assert e.errno in (errno.EFAULT, errno.EIO), e
    assert d.context_status()["faulted"]


VECTOR_ADD = """
# out[i] = a[i] + b[i] for i < n: s1 = a, s2 = b, s3 = out, s4 = n
        pid s5, 0
        muli s6, s5, 1024
        muli s7, s6, 4
        add s1, s1, s7
        add s2, s2, s7
        add s3, s3, s7
        sub s8, s4, s6
        vsplat v10, s8
        viota v11, 0
        vicmp v12, v11, v10, lt
        vld v1, s1, unit, f32, v12
        vld v2, s2, unit, f32, v12
        vfadd v3, v1, v2
        vst v3, s3, unit, f32, v12
        halt
"""


@test
def tvp_assemble_disassemble():
    words = maia.tvp_assemble(VECTOR_ADD)
    assert isinstance(words, bytes) and len(words) == 15 * 8, len(words)
    # The first word as the header lays it out: op, rd, ra, rb, imm (little-endian).
    assert words[:8] == bytes([0x07, 5, 0, 0, 0, 0, 0, 0]), words[:8].hex()
    text = maia.tvp_disassemble(words)
    assert text.splitlines()[0] == "\tpid s5, 0", text
    assert maia.tvp_assemble(text) == words
    e = raises(maia.Error, maia.tvp_assemble, "nop\nvfadd v1, v2\n", match="line 2: vfadd takes 3")
    assert e.errno == errno.EINVAL, e
    raises(maia.Error, maia.tvp_assemble, "jmp nowhere", match="line 1: undefined label")
    raises(maia.Error, maia.tvp_disassemble, words + bytes([0xff] + [0] * 7),
           match="word 15: unknown opcode 0xff")
    raises(ValueError, maia.tvp_disassemble, words[:-1], match="instruction words")
    raises(TypeError, maia.tvp_assemble, words)


@test
def tvp_kernel_vector_add():
    n = 2500
    rng = np.random.default_rng(9)
    a, b, out = dev.bo(4 * n, maia.BO_HOST), dev.bo(4 * n, maia.BO_HOST), dev.bo(4 * n, maia.BO_HOST)
    va, vb, vo = (maia.view(x, maia.DTYPE_FP32, (n,)) for x in (a, b, out))
    va[:] = rng.standard_normal(n, dtype=np.float32)
    vb[:] = rng.standard_normal(n, dtype=np.float32)
    k = maia.Kernel(dev, maia.tvp_assemble(VECTOR_ADD))
    assert k.count == 15 and k.va != 0
    cb = dev.cmdbuf()
    cb.kernel(k, (3,), (a.va, b.va, out.va, n))
    st = dev.run(cb)
    assert st["status"] == maia.JOB_OK, st
    assert np.array_equal(vo, va + vb)     # one float rounding, as numpy's
    raises(ValueError, cb.kernel, k, (0, 1, 1, 1), match="grid")
    raises(maia.Error, cb.kernel, k, (0,), match="grid[0] is 0")
    raises(ValueError, cb.kernel, k, (1,), tuple(range(17)), match="at most 16")
    raises(maia.Error, maia.Kernel, dev, bytes([0xff] + [0] * 7), match="word 0: unknown opcode")
    k.close()
    raises(maia.Error, lambda: k.va, match="closed")


@test
def tvp_kernel_watchdog():
    d = maia.Device(0)
    k = maia.Kernel(d, maia.tvp_assemble("loop: jmp loop"))
    cb = d.cmdbuf()
    cb.kernel(k, (1,), budget=100)
    e = raises(maia.Error, d.run, cb, match="kernel-watchdog")
    assert e.errno == errno.EIO, e


run("maia module")
