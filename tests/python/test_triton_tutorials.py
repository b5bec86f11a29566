# SPDX-License-Identifier: MIT
"""Triton's tutorials on Maia (in the guest): the kernels of
triton_kernels.py launched as the tutorials launch them, with only the
device changed to maia, against torch on the CPU (Documentation/triton.rst)."""
import os
import tempfile
import time

# A fresh cache: the first compile of each kernel in this run is a cold one.
os.environ["TRITON_CACHE_DIR"] = tempfile.mkdtemp(prefix="maia-triton-cache-")
t0 = time.perf_counter()
import torch  # noqa: E402
import triton  # noqa: E402

import maia.torch  # noqa: E402,F401
import tap  # noqa: E402
import triton_kernels as K  # noqa: E402
from tap import raises, test  # noqa: E402

print("# import torch, triton, maia.torch: %.1f s" % (time.perf_counter() - t0), flush=True)
DEV = torch.device("maia", 0)
torch.manual_seed(0)


def add(x, y):
    output = torch.empty_like(x)
    n_elements = output.numel()
    grid = lambda meta: (triton.cdiv(n_elements, meta['BLOCK_SIZE']), )  # noqa: E731
    K.add_kernel[grid](x, y, output, n_elements, BLOCK_SIZE=256)
    return output


def softmax(x, programs):
    n_rows, n_cols = x.shape
    BLOCK_SIZE = triton.next_power_of_2(n_cols)
    y = torch.empty_like(x)
    # The tutorial runs min(n_rows, SMs * occupancy) programs, each striding over rows.
    K.softmax_kernel[(programs, 1, 1)](y, x, x.stride(0), y.stride(0), n_rows, n_cols, BLOCK_SIZE=BLOCK_SIZE,
                                       num_stages=1)
    return y


def layer_norm(x, weight, bias, eps, block):
    M, N = x.shape
    y = torch.empty_like(x)
    mean = torch.empty((M, ), dtype=torch.float32, device=x.device)
    rstd = torch.empty((M, ), dtype=torch.float32, device=x.device)
    K._layer_norm_fwd_fused[(M, )](x, y, weight, bias, mean, rstd, x.stride(0), N, eps, BLOCK_SIZE=block)
    return y, mean, rstd


def matmul(a, b, activation=""):
    M, Kd = a.shape
    Kd, N = b.shape
    c = torch.empty((M, N), device=a.device, dtype=torch.float16)
    grid = lambda META: (triton.cdiv(M, META['BLOCK_SIZE_M']) * triton.cdiv(N, META['BLOCK_SIZE_N']), )  # noqa: E731
    K.matmul_kernel[grid](a, b, c, M, N, Kd, a.stride(0), a.stride(1), b.stride(0), b.stride(1), c.stride(0),
                          c.stride(1), BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, GROUP_SIZE_M=8,
                          ACTIVATION=activation)
    return c


@test
def maia_driver_is_active():
    from triton.runtime import driver
    assert type(driver.active).__name__ == "MaiaDriver", driver.active
    assert driver.active.get_current_target().backend == "maia"


@test
def compile_times():
    """Cold (the first one with Triton's own set-up), then from Triton's on-disk cache."""
    x = torch.empty(16, device=DEV)
    a = torch.empty(64, 64, dtype=torch.float16, device=DEV)
    mm = dict(BLOCK_SIZE_M=32, BLOCK_SIZE_N=32, BLOCK_SIZE_K=32, GROUP_SIZE_M=8, ACTIVATION="", grid=(1, ))
    t = [time.perf_counter()]
    K.add_kernel.warmup(x, x, x, 16, BLOCK_SIZE=256, grid=(1, ))
    t.append(time.perf_counter())
    K.matmul_kernel.warmup(a, a, a, 64, 64, 64, 64, 1, 64, 1, 64, 1, **mm)
    t.append(time.perf_counter())
    K.matmul_kernel.device_caches.clear()      # forget the compiled kernel in memory
    K.matmul_kernel.warmup(a, a, a, 64, 64, 64, 64, 1, 64, 1, 64, 1, **mm)
    t.append(time.perf_counter())
    print("# compile: vector add %.2f s (first, with Triton's set-up), matmul %.2f s cold, %.3f s cached" %
          (t[1] - t[0], t[2] - t[1], t[3] - t[2]))


@test
def tutorial_01_vector_add():
    x, y = torch.rand(98432), torch.rand(98432)
    out = add(x.to(DEV), y.to(DEV))
    t0 = time.perf_counter()
    add(x.to(DEV), y.to(DEV))
    torch.maia.synchronize()
    print("# vector add of 98432 (385 programs): %.3f s with the copies" % (time.perf_counter() - t0))
    assert torch.equal(out.cpu(), x + y)
    # A length that is not a multiple of the block: the masked tail.
    x, y = torch.rand(1000), torch.rand(1000)
    assert torch.equal(add(x.to(DEV), y.to(DEV)).cpu(), x + y)


@test
def tutorial_02_fused_softmax():
    x = torch.randn(37, 100)
    y = softmax(x.to(DEV), programs=8).cpu()
    torch.testing.assert_close(y, torch.softmax(x, dim=1), rtol=1e-6, atol=1e-6)


@test
def tutorial_05_layer_norm_forward():
    M, N = 12, 300
    x = -2.3 + 0.5 * torch.randn(M, N)
    w, b = torch.rand(N), torch.rand(N)
    y, mean, rstd = layer_norm(x.to(DEV), w.to(DEV), b.to(DEV), 1e-5, block=128)
    ref = torch.nn.functional.layer_norm(x, (N, ), w, b, 1e-5)
    torch.testing.assert_close(y.cpu(), ref, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(mean.cpu(), x.mean(1), rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(rstd.cpu(), 1 / torch.sqrt(x.var(1, unbiased=False) + 1e-5), rtol=1e-5, atol=1e-5)


def philox_rand(seed, offsets):
    """tl.rand(seed, offsets) in numpy: Philox-4x32-10 (triton/language/random.py)."""
    import numpy as np
    M = np.uint64(0xffffffff)
    A, B = np.uint64(0xD2511F53), np.uint64(0xCD9E8D57)
    c0 = offsets.astype(np.uint64) & M
    c1 = np.zeros_like(c0)
    c2 = np.zeros_like(c0)
    c3 = np.zeros_like(c0)
    k0, k1 = np.uint64(seed & 0xffffffff), np.uint64((seed >> 32) & 0xffffffff)
    for _ in range(10):
        _c0, _c2 = c0, c2
        c0 = ((B * _c2) >> np.uint64(32)) ^ c1 ^ k0
        c2 = ((A * _c0) >> np.uint64(32)) ^ c3 ^ k1
        c1 = (B * _c2) & M
        c3 = (A * _c0) & M
        k0 = (k0 + np.uint64(0x9E3779B9)) & M
        k1 = (k1 + np.uint64(0xBB67AE85)) & M
    x = c0.astype(np.uint32).view(np.int32)
    x = np.where(x < 0, ~x, x)
    return torch.from_numpy(x.astype(np.float32) * np.float32(4.6566127342e-10))


@test
def tutorial_04_low_memory_dropout():
    n, p, seed = 1000, 0.5, 512
    x = torch.randn(n)
    out = torch.empty(n, device=DEV)
    grid = lambda meta: (triton.cdiv(n, meta['BLOCK_SIZE']), )  # noqa: E731
    K._seeded_dropout[grid](x.to(DEV), out, n, p, seed, BLOCK_SIZE=256)
    keep = philox_rand(seed, torch.arange(n).numpy()) > p
    ref = torch.where(keep, x / (torch.tensor(1.0) - torch.tensor(p)), 0.0)
    assert torch.equal(out.cpu(), ref)
    assert 400 < int(keep.sum()) < 600, int(keep.sum())


@test
def tutorial_03_matmul():
    a = torch.randn(64, 96, dtype=torch.float16)
    b = torch.randn(96, 80, dtype=torch.float16)
    ref = a.float() @ b.float()
    c = matmul(a.to(DEV), b.to(DEV)).cpu()
    torch.testing.assert_close(c, ref.half(), rtol=1e-2, atol=1e-2)
    c = matmul(a.to(DEV), b.to(DEV), activation="leaky_relu").cpu()
    torch.testing.assert_close(c, torch.nn.functional.leaky_relu(ref, 0.01).half(), rtol=1e-2, atol=1e-2)


@test
def other_ops():
    n = 300
    x, y = 2 * torch.randn(n), torch.randn(n)
    out = torch.empty(n, device=DEV)
    idx = torch.empty(n, dtype=torch.int32, device=DEV)
    K.misc_kernel[(triton.cdiv(n, 64), )](x.to(DEV), y.to(DEV), out, idx, n, 0.75, BLOCK=64)
    z = torch.exp2(x) * torch.log(x.abs() + 1.0) + torch.sqrt(y.abs()) * 0.75
    z = torch.where(x > y, z, -z)
    z = torch.maximum(z, torch.minimum(x, y))
    i = (x * 10.0).to(torch.int32)
    j = (torch.fmod(i, 7) + torch.div(i, 3, rounding_mode="trunc")) & 0xff ^ (i << 1)
    z = z + j.float()
    even = (torch.arange(n) // 64) % 2 == 0
    z = torch.where(even, z * 2.0, z - 1.0)
    assert torch.equal(idx.cpu(), j)
    torch.testing.assert_close(out.cpu(), z, rtol=1e-5, atol=1e-5)

    x = torch.randn(16, 32)
    t = torch.empty(32, 16, device=DEV)
    red = torch.empty(48, device=DEV)
    K.trans_reduce_kernel[(1, )](x.to(DEV), t, red, M=16, N=32)
    assert torch.equal(t.cpu(), x.t())
    assert torch.equal(red.cpu()[:32], x.max(0).values)
    torch.testing.assert_close(red.cpu()[32:], x.sum(1), rtol=1e-6, atol=1e-5)


@test
def conversions():
    n = 200
    x = 4 * torch.randn(n)
    h = torch.empty(n, dtype=torch.float16, device=DEV)
    bf = torch.empty(n, dtype=torch.bfloat16, device=DEV)
    f8 = torch.empty(n, dtype=torch.float8_e4m3fn, device=DEV)
    y = torch.empty(n, device=DEV)
    K.convert_kernel[(triton.cdiv(n, 128), )](x.to(DEV), h, bf, f8, y, n, BLOCK=128)
    assert torch.equal(h.cpu(), x.half())
    assert torch.equal(bf.cpu(), x.bfloat16())
    ref8 = x.to(torch.float8_e4m3fn)
    assert torch.equal(f8.cpu().view(torch.uint8), ref8.view(torch.uint8))
    u = ((x * 1000.0).to(torch.int32).to(torch.int64) & 0xffffffff) >> 28
    assert torch.equal(y.cpu(), ref8.float() + u.float())


@test
def integer_reductions():
    M, N = 4, 8
    x = torch.randint(-1000, 1000, (M, N), dtype=torch.int32)
    out = torch.empty(N + M + 2, dtype=torch.int32, device=DEV)
    K.int_reduce_kernel[(2, )](x.to(DEV), out, M=M, N=N)
    got = out.cpu()
    assert torch.equal(got[:N], x.max(0).values)
    assert torch.equal(got[N:N + M], x.sum(1, dtype=torch.int32))
    assert got[N + M].item() == int(x.sum(0).min())
    assert got[N + M + 1].item() == int(torch.prod(torch.fmod(x, 3) + 1, 1).sum())  # % truncates, as fmod


@test
def argmax_argmin():
    M, N = 16, 32
    x = torch.randn(M, N)
    out = torch.empty(M + N + 1, dtype=torch.int32, device=DEV)
    K.argmax_kernel[(1, )](x.to(DEV), out, M=M, N=N)
    got = out.cpu()
    assert torch.equal(got[:M], x.argmax(1).int()), (got[:M], x.argmax(1))
    assert torch.equal(got[M:M + N], x.argmin(0).int())
    assert got[M + N].item() == int(x.max(1).values.argmax())


@test
def loops():
    n, B = 300, 64
    x = torch.randn(n)
    out = torch.empty(3 + B, device=DEV)
    K.loops_kernel[(1, )](x.to(DEV), out, n, BLOCK=B)
    acc, cnt = torch.tensor(0.0), 0
    mx = torch.full((B, ), float("-inf"))
    for off in range(0, n, B):
        blk = torch.zeros(B)
        blk[:min(B, n - off)] = x[off:off + B]
        acc = acc + blk.sum()
        cnt += 1
        valid = torch.arange(B) + off < n
        mx = torch.maximum(mx, torch.where(valid, blk, float("-inf")))
        if cnt % 2 == 0:
            acc = acc * 0.5
    tri = sum(i * j + 1 for i in range(cnt) for j in range(i + 1))
    got = out.cpu()
    torch.testing.assert_close(got[0], acc, rtol=1e-5, atol=1e-5)
    assert got[1].item() == cnt and got[2].item() == tri, (got[1], got[2])
    assert torch.equal(got[3:], mx)


@test
def splat_pointer_loads_one_element():
    x = torch.rand(16)
    out = torch.empty(16, device=DEV)
    K.splat_pointer_kernel[(1, )](x.to(DEV), out, BLOCK=16)
    assert torch.equal(out.cpu(), x[0].expand(16))


@test
def grid_3d():
    out = torch.empty(4, 3, 5, dtype=torch.int32, device=DEV)
    K.grid3d_kernel[(5, 3, 4)](out)
    z, y, x = torch.meshgrid(torch.arange(4), torch.arange(3), torch.arange(5), indexing="ij")
    assert torch.equal(out.cpu(), (x + 100 * y + 10000 * z + 4000000).int())


@test
def spilled_registers():
    """34 tensors live at once: 7 of them in the scratch area, each program instance its own."""
    B = 64
    x = torch.rand(34 * B) + 0.5
    y = torch.empty(B, device=DEV)
    K.many_live[(3, )](x.to(DEV), y, BLOCK=B)
    a = x.view(34, B)
    acc = a[33].clone()
    for i in range(32, -1, -1):
        acc = acc * a[i] + 1.0
    assert torch.equal(y.cpu(), acc)


@test
def batched_and_strict_with_backend_ops():
    """Launches are device ops like the backend's: in strict mode (no CPU fallback), counted,
    and inside maia.torch.batched() in the same job as the ops around them."""
    import maia.torch as mt
    x, y = torch.rand(1000), torch.rand(1000)
    xd, yd = x.to(DEV), y.to(DEV)
    torch.maia.synchronize()
    mt.reset_stats()
    before = mt.jobs_submitted()
    with mt.strict(), mt.batched():
        z = add(xd, yd)
        v = add(z * 2.0, xd)
    assert mt.jobs_submitted() - before == 1, mt.jobs_submitted() - before
    assert torch.equal(v.cpu(), (x + y) * 2.0 + x)
    assert mt.device_stats().get("maia::triton_launch") == 2, mt.device_stats()


@test
def autotune():
    n = 5000
    x, y = torch.rand(n), torch.rand(n)
    out = torch.empty(n, device=DEV)
    grid = lambda meta: (triton.cdiv(n, meta['BLOCK_SIZE']), )  # noqa: E731
    K.add_kernel_autotuned[grid](x.to(DEV), y.to(DEV), out, n)
    print("# autotune chose %s" % K.add_kernel_autotuned.best_config)
    assert torch.equal(out.cpu(), x + y)


@test
def cpu_tensor_or_other_device_is_refused():
    x = torch.rand(16)
    raises(ValueError, add, x, x, match="maia tensors")
    # The python suite's guest has two devices: a tensor of maia:1 in a launch on maia:0.
    if torch.maia.device_count() > 1:
        y = x.to("maia:1")
        raises(ValueError, add, y, y, match="is on maia:1 but the kernel runs on maia:0")
        with torch.maia.device(1):
            assert torch.equal(add(y, y).cpu(), x + x)


def layer_norm_backward(x, w, dy, mean, rstd, group_size_m):
    """LayerNorm.backward of tutorial 05: dx and per-group partial dw, db under
    spin locks, then the partial sums reduced. The tutorial's dwdb tile (32 x
    128) is 4096 elements, the TVP's registers hold 1024: 8 x 128 here. The
    budget bounds a waiter's spin; the largest one keeps a loaded host from
    turning a descheduled holder into a watchdog failure."""
    M, N = x.shape
    locks = torch.zeros(2 * group_size_m, dtype=torch.int32, device=w.device)
    _dw = torch.zeros((group_size_m, N), dtype=x.dtype, device=w.device)
    _db = torch.zeros((group_size_m, N), dtype=x.dtype, device=w.device)
    dw = torch.empty((N, ), dtype=w.dtype, device=w.device)
    db = torch.empty((N, ), dtype=w.dtype, device=w.device)
    dx = torch.empty_like(dy)
    K._layer_norm_bwd_dx_fused[(M, )](dx, dy, _dw, _db, x, w, mean, rstd, locks, x.stride(0), N,
                                      BLOCK_SIZE_N=triton.next_power_of_2(N), GROUP_SIZE_M=group_size_m,
                                      budget=0xffffffff)
    grid = lambda meta: (triton.cdiv(N, meta['BLOCK_SIZE_N']), )  # noqa: E731
    K._layer_norm_bwd_dwdb[grid](_dw, _db, dw, db, min(group_size_m, M), N, BLOCK_SIZE_M=8, BLOCK_SIZE_N=128)
    return dx, dw, db, locks


@test
def tutorial_05_layer_norm_backward():
    """Against torch's autograd of layer_norm on the CPU: with the tutorial's
    GROUP_SIZE_M for N <= 1024 (256: no two of the 200 rows share a lock) and
    with 4 groups (50 rows contending for each lock)."""
    M, N, eps = 200, 300, 1e-5
    x = -2.3 + 0.5 * torch.randn(M, N)
    w, b = torch.rand(N), torch.rand(N)
    dy = 0.1 * torch.randn(M, N)
    xr, wr, br = (t.clone().requires_grad_(True) for t in (x, w, b))
    torch.nn.functional.layer_norm(xr, (N, ), wr, br, eps).backward(dy)
    _, mean, rstd = layer_norm(x.to(DEV), w.to(DEV), b.to(DEV), eps, block=128)
    for group in (256, 4):
        t0 = time.perf_counter()
        dx, dw, db, locks = layer_norm_backward(x.to(DEV), w.to(DEV), dy.to(DEV), mean, rstd, group)
        dx, dw, db, locks = dx.cpu(), dw.cpu(), db.cpu(), locks.cpu()
        print("# layer norm backward %dx%d, GROUP_SIZE_M %d: %.3f s with the copies" %
              (M, N, group, time.perf_counter() - t0))
        torch.testing.assert_close(dx, xr.grad, rtol=1e-4, atol=1e-5)
        torch.testing.assert_close(dw, wr.grad, rtol=1e-4, atol=1e-4)
        torch.testing.assert_close(db, br.grad, rtol=1e-4, atol=1e-4)
        # every lock free again, every group's count set
        assert not locks[:group].any() and locks[group:].eq(1).sum() == min(group, M), locks


@test
def atomics_and_while_loops():
    """64 instances: a counter (the old values each seen once), max, or,
    xchg, a float add, and a while loop with an if (Collatz steps)."""
    n = 64
    cnt = torch.zeros(4, dtype=torch.int32, device=DEV)
    f = torch.zeros(1, device=DEV)
    out = torch.full((2 * n, ), -1, dtype=torch.int32, device=DEV)
    K.atomics_kernel[(n, )](cnt, f, out, n)
    cnt, f, out = cnt.cpu().tolist(), f.cpu().item(), out.cpu().tolist()

    def collatz(x):
        steps = 0
        while x != 1:
            x = x // 2 if x % 2 == 0 else 3 * x + 1
            steps += 1
        return steps

    ored = 0
    for p in range(n):
        ored |= 1 << (p % 31)
    assert cnt == [n, n - 1, ored - (1 << 32) if ored >= 1 << 31 else ored, 7], cnt
    assert f == 0.5 * n, f
    assert out[:n] == [collatz(p + 1) for p in range(n)], out[:n]
    assert sorted(out[n:]) == list(range(n)), out[n:]


@test
def atomic_add_on_blocks():
    """tl.atomic_add on blocks (VAMOADD) from 40 instances at once: each row of
    x added into acc, each row's keys counted into 16 bins (lanes of one add
    colliding), masked to 50 of 64 columns. x is positive eighths: every order
    gives the exact sum, and each column's old values, sorted, are the running
    sums of the rows in the order their adds landed."""
    rows, n = 40, 50
    x = torch.randint(1, 64, (rows, n)).float() / 8
    keys = torch.randint(0, 16, (rows, n), dtype=torch.int32)
    acc = torch.zeros(64, device=DEV)
    hist = torch.zeros(16, dtype=torch.int32, device=DEV)
    old = torch.zeros(rows, n, device=DEV)
    K.tensor_atomic_kernel[(rows, )](x.to(DEV), keys.to(DEV), acc, hist, old, n, BLOCK=64)
    acc, hist, old = acc.cpu(), hist.cpu(), old.cpu()
    assert torch.equal(acc[:n], x.sum(0)) and not acc[n:].any(), acc
    assert torch.equal(hist, torch.bincount(keys.flatten().long(), minlength=16).int()), hist
    for c in range(n):
        order = torch.argsort(old[:, c])
        running = torch.cat([torch.zeros(1), torch.cumsum(x[order, c], 0)[:-1]])
        assert torch.equal(old[order, c], running), (c, old[order, c], running)


@test
def budget_stops_a_kernel():
    """The budget option (instructions per program instance): the device ends the
    command with KERNEL_WATCHDOG, which raises at the next wait. Last: the job fails."""
    x = torch.rand(1000, device=DEV)
    out = torch.empty_like(x)
    K.add_kernel[(4, )](x, x, out, 1000, BLOCK_SIZE=256, budget=3)
    e = raises(RuntimeError, torch.maia.synchronize, match="failed")
    print("# %s" % str(e).splitlines()[0])


if __name__ == "__main__":
    tap.run("triton")
