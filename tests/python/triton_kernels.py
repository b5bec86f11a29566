# SPDX-License-Identifier: MIT
"""Triton's tutorial kernels (python/tutorials/ of Triton 3.x): 01 vector
add, 02 fused softmax, 03 matrix multiplication, 04 low-memory dropout, 05
layer norm (forward, and backward with its spin locks),
as the tutorials write them, for test_triton_compile.py (the host: compile
to TVP assembly) and test_triton_tutorials.py (the guest: run on Maia)."""
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, output_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    x = tl.load(x_ptr + offsets, mask=mask)
    y = tl.load(y_ptr + offsets, mask=mask)
    output = x + y
    tl.store(output_ptr + offsets, output, mask=mask)


@triton.jit
def softmax_kernel(output_ptr, input_ptr, input_row_stride, output_row_stride, n_rows, n_cols, BLOCK_SIZE: tl.constexpr,
                   num_stages: tl.constexpr):
    row_start = tl.program_id(0)
    row_step = tl.num_programs(0)
    for row_idx in tl.range(row_start, n_rows, row_step, num_stages=num_stages):
        row_start_ptr = input_ptr + row_idx * input_row_stride
        col_offsets = tl.arange(0, BLOCK_SIZE)
        input_ptrs = row_start_ptr + col_offsets
        mask = col_offsets < n_cols
        row = tl.load(input_ptrs, mask=mask, other=-float('inf'))
        row_minus_max = row - tl.max(row, axis=0)
        numerator = tl.exp(row_minus_max)
        denominator = tl.sum(numerator, axis=0)
        softmax_output = numerator / denominator
        output_row_start_ptr = output_ptr + row_idx * output_row_stride
        output_ptrs = output_row_start_ptr + col_offsets
        tl.store(output_ptrs, softmax_output, mask=mask)


@triton.jit
def _layer_norm_fwd_fused(X, Y, W, B, Mean, Rstd, stride, N, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0)
    Y += row * stride
    X += row * stride
    mean = 0
    _mean = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        a = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        _mean += a
    mean = tl.sum(_mean, axis=0) / N
    _var = tl.zeros([BLOCK_SIZE], dtype=tl.float32)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        x = tl.load(X + cols, mask=cols < N, other=0.).to(tl.float32)
        x = tl.where(cols < N, x - mean, 0.)
        _var += x * x
    var = tl.sum(_var, axis=0) / N
    rstd = 1 / tl.sqrt(var + eps)
    tl.store(Mean + row, mean)
    tl.store(Rstd + row, rstd)
    for off in range(0, N, BLOCK_SIZE):
        cols = off + tl.arange(0, BLOCK_SIZE)
        mask = cols < N
        w = tl.load(W + cols, mask=mask)
        b = tl.load(B + cols, mask=mask)
        x = tl.load(X + cols, mask=mask, other=0.).to(tl.float32)
        x_hat = (x - mean) * rstd
        y = x_hat * w + b
        tl.store(Y + cols, y, mask=mask)


@triton.jit
def _layer_norm_bwd_dx_fused(DX,  # pointer to the input gradient
                             DY,  # pointer to the output gradient
                             DW,  # pointer to the partial sum of weights gradient
                             DB,  # pointer to the partial sum of biases gradient
                             X,  # pointer to the input
                             W,  # pointer to the weights
                             Mean,  # pointer to the mean
                             Rstd,  # pointer to the 1/std
                             Lock,  # pointer to the lock
                             stride,  # how much to increase the pointer when moving by 1 row
                             N,  # number of columns in X
                             GROUP_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    # Map the program id to the elements of X, DX, and DY it should compute.
    row = tl.program_id(0)
    cols = tl.arange(0, BLOCK_SIZE_N)
    mask = cols < N
    X += row * stride
    DY += row * stride
    DX += row * stride
    # Offset locks and weights/biases gradient pointer for parallel reduction
    lock_id = row % GROUP_SIZE_M
    Lock += lock_id
    Count = Lock + GROUP_SIZE_M
    DW = DW + lock_id * N + cols
    DB = DB + lock_id * N + cols
    # Load data to SRAM
    x = tl.load(X + cols, mask=mask, other=0).to(tl.float32)
    dy = tl.load(DY + cols, mask=mask, other=0).to(tl.float32)
    w = tl.load(W + cols, mask=mask).to(tl.float32)
    mean = tl.load(Mean + row)
    rstd = tl.load(Rstd + row)
    # Compute dx
    xhat = (x - mean) * rstd
    wdy = w * dy
    xhat = tl.where(mask, xhat, 0.)
    wdy = tl.where(mask, wdy, 0.)
    c1 = tl.sum(xhat * wdy, axis=0) / N
    c2 = tl.sum(wdy, axis=0) / N
    dx = (wdy - (xhat * c1 + c2)) * rstd
    # Write dx
    tl.store(DX + cols, dx, mask=mask)
    # Accumulate partial sums for dw/db
    partial_dw = (dy * xhat).to(w.dtype)
    partial_db = (dy).to(w.dtype)
    while tl.atomic_cas(Lock, 0, 1) == 1:
        pass
    count = tl.load(Count)
    # First store doesn't accumulate
    if count == 0:
        tl.atomic_xchg(Count, 1)
    else:
        partial_dw += tl.load(DW, mask=mask)
        partial_db += tl.load(DB, mask=mask)
    tl.store(DW, partial_dw, mask=mask)
    tl.store(DB, partial_db, mask=mask)
    # need a barrier to ensure all threads finished before
    # releasing the lock
    tl.debug_barrier()

    # Release the lock
    tl.atomic_xchg(Lock, 0)


@triton.jit
def _layer_norm_bwd_dwdb(DW,  # pointer to the partial sum of weights gradient
                         DB,  # pointer to the partial sum of biases gradient
                         FINAL_DW,  # pointer to the weights gradient
                         FINAL_DB,  # pointer to the biases gradient
                         M,  # GROUP_SIZE_M
                         N,  # number of columns
                         BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr):
    # Map the program id to the elements of DW and DB it should compute.
    pid = tl.program_id(0)
    cols = pid * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    dw = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    db = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    # Iterate through the rows of DW and DB to sum the partial sums.
    for i in range(0, M, BLOCK_SIZE_M):
        rows = i + tl.arange(0, BLOCK_SIZE_M)
        mask = (rows[:, None] < M) & (cols[None, :] < N)
        offs = rows[:, None] * N + cols[None, :]
        dw += tl.load(DW + offs, mask=mask, other=0.)
        db += tl.load(DB + offs, mask=mask, other=0.)
    # Write the final sum to the output.
    sum_dw = tl.sum(dw, axis=0)
    sum_db = tl.sum(db, axis=0)
    tl.store(FINAL_DW + cols, sum_dw, mask=cols < N)
    tl.store(FINAL_DB + cols, sum_db, mask=cols < N)


@triton.jit
def leaky_relu(x):
    return tl.where(x >= 0, x, 0.01 * x)


@triton.jit
def matmul_kernel(a_ptr, b_ptr, c_ptr, M, N, K, stride_am, stride_ak, stride_bk, stride_bn, stride_cm, stride_cn,
                  BLOCK_SIZE_M: tl.constexpr, BLOCK_SIZE_N: tl.constexpr, BLOCK_SIZE_K: tl.constexpr,
                  GROUP_SIZE_M: tl.constexpr, ACTIVATION: tl.constexpr):
    pid = tl.program_id(axis=0)
    num_pid_m = tl.cdiv(M, BLOCK_SIZE_M)
    num_pid_n = tl.cdiv(N, BLOCK_SIZE_N)
    num_pid_in_group = GROUP_SIZE_M * num_pid_n
    group_id = pid // num_pid_in_group
    first_pid_m = group_id * GROUP_SIZE_M
    group_size_m = min(num_pid_m - first_pid_m, GROUP_SIZE_M)
    pid_m = first_pid_m + ((pid % num_pid_in_group) % group_size_m)
    pid_n = (pid % num_pid_in_group) // group_size_m
    tl.assume(pid_m >= 0)
    tl.assume(pid_n >= 0)
    tl.assume(stride_am > 0)
    tl.assume(stride_ak > 0)
    tl.assume(stride_bn > 0)
    tl.assume(stride_bk > 0)
    tl.assume(stride_cm > 0)
    tl.assume(stride_cn > 0)
    offs_am = (pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)) % M
    offs_bn = (pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)) % N
    offs_k = tl.arange(0, BLOCK_SIZE_K)
    a_ptrs = a_ptr + (offs_am[:, None] * stride_am + offs_k[None, :] * stride_ak)
    b_ptrs = b_ptr + (offs_k[:, None] * stride_bk + offs_bn[None, :] * stride_bn)
    accumulator = tl.zeros((BLOCK_SIZE_M, BLOCK_SIZE_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_SIZE_K)):
        a = tl.load(a_ptrs, mask=offs_k[None, :] < K - k * BLOCK_SIZE_K, other=0.0)
        b = tl.load(b_ptrs, mask=offs_k[:, None] < K - k * BLOCK_SIZE_K, other=0.0)
        accumulator = tl.dot(a, b, accumulator)
        a_ptrs += BLOCK_SIZE_K * stride_ak
        b_ptrs += BLOCK_SIZE_K * stride_bk
    if ACTIVATION == "leaky_relu":
        accumulator = leaky_relu(accumulator)
    c = accumulator.to(tl.float16)
    offs_cm = pid_m * BLOCK_SIZE_M + tl.arange(0, BLOCK_SIZE_M)
    offs_cn = pid_n * BLOCK_SIZE_N + tl.arange(0, BLOCK_SIZE_N)
    c_ptrs = c_ptr + stride_cm * offs_cm[:, None] + stride_cn * offs_cn[None, :]
    c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
    tl.store(c_ptrs, c, mask=c_mask)


# name -> (signature, constexprs) for triton.compile(ASTSource(...)).
SIGNATURES = {
    "add_kernel": ({"x_ptr": "*fp32", "y_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32",
                    "BLOCK_SIZE": "constexpr"}, {"BLOCK_SIZE": 256}),
    "softmax_kernel": ({"output_ptr": "*fp32", "input_ptr": "*fp32", "input_row_stride": "i32",
                        "output_row_stride": "i32", "n_rows": "i32", "n_cols": "i32", "BLOCK_SIZE": "constexpr",
                        "num_stages": "constexpr"}, {"BLOCK_SIZE": 128, "num_stages": 1}),
    "_layer_norm_fwd_fused": ({"X": "*fp32", "Y": "*fp32", "W": "*fp32", "B": "*fp32", "Mean": "*fp32",
                               "Rstd": "*fp32", "stride": "i32", "N": "i32", "eps": "fp32",
                               "BLOCK_SIZE": "constexpr"}, {"BLOCK_SIZE": 128}),
    # The tutorial's tiles (BLOCK_SIZE_M 32 x BLOCK_SIZE_N 128) are 4096 elements: one
    # TVP register holds 1024, so 8 x 128 here; GROUP_SIZE_M as the tutorial picks for N <= 1024.
    "_layer_norm_bwd_dx_fused": ({"DX": "*fp32", "DY": "*fp32", "DW": "*fp32", "DB": "*fp32", "X": "*fp32",
                                  "W": "*fp32", "Mean": "*fp32", "Rstd": "*fp32", "Lock": "*i32",
                                  "stride": "i32", "N": "i32", "GROUP_SIZE_M": "constexpr",
                                  "BLOCK_SIZE_N": "constexpr"}, {"GROUP_SIZE_M": 64, "BLOCK_SIZE_N": 128}),
    "_layer_norm_bwd_dwdb": ({"DW": "*fp32", "DB": "*fp32", "FINAL_DW": "*fp32", "FINAL_DB": "*fp32",
                              "M": "i32", "N": "i32", "BLOCK_SIZE_M": "constexpr", "BLOCK_SIZE_N": "constexpr"},
                             {"BLOCK_SIZE_M": 8, "BLOCK_SIZE_N": 128}),
    "matmul_kernel": ({"a_ptr": "*fp16", "b_ptr": "*fp16", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
                       "stride_am": "i32", "stride_ak": "i32", "stride_bk": "i32", "stride_bn": "i32",
                       "stride_cm": "i32", "stride_cn": "i32", "BLOCK_SIZE_M": "constexpr",
                       "BLOCK_SIZE_N": "constexpr", "BLOCK_SIZE_K": "constexpr", "GROUP_SIZE_M": "constexpr",
                       "ACTIVATION": "constexpr"},
                      {"BLOCK_SIZE_M": 32, "BLOCK_SIZE_N": 32, "BLOCK_SIZE_K": 32, "GROUP_SIZE_M": 8,
                       "ACTIVATION": "leaky_relu"}),
    "misc_kernel": ({"x_ptr": "*fp32", "y_ptr": "*fp32", "out_ptr": "*fp32", "idx_ptr": "*i32", "n": "i32",
                     "scale": "fp32", "BLOCK": "constexpr"}, {"BLOCK": 64}),
    "trans_reduce_kernel": ({"x_ptr": "*fp32", "t_ptr": "*fp32", "red_ptr": "*fp32", "M": "constexpr",
                             "N": "constexpr"}, {"M": 16, "N": 32}),
    "convert_kernel": ({"x_ptr": "*fp32", "h_ptr": "*fp16", "b_ptr": "*bf16", "f8_ptr": "*fp8e4nv",
                        "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 128}),
    "_seeded_dropout": ({"x_ptr": "*fp32", "output_ptr": "*fp32", "n_elements": "i32", "p": "fp32", "seed": "i32",
                         "BLOCK_SIZE": "constexpr"}, {"BLOCK_SIZE": 256}),
    "loops_kernel": ({"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 64}),
    "int_reduce_kernel": ({"x_ptr": "*i32", "out_ptr": "*i32", "M": "constexpr", "N": "constexpr"},
                          {"M": 4, "N": 8}),
    "argmax_kernel": ({"x_ptr": "*fp32", "out_ptr": "*i32", "M": "constexpr", "N": "constexpr"}, {"M": 16, "N": 32}),
    "atomics_kernel": ({"cnt_ptr": "*i32", "f_ptr": "*fp32", "out_ptr": "*i32", "n": "i32"}, {}),
    "tensor_atomic_kernel": ({"x_ptr": "*fp32", "key_ptr": "*i32", "acc_ptr": "*fp32", "hist_ptr": "*i32",
                              "old_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {"BLOCK": 64}),
}


# Beyond the tutorials: the other ops the backend lowers.
@triton.jit
def misc_kernel(x_ptr, y_ptr, out_ptr, idx_ptr, n, scale, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m, other=1.0)
    y = tl.load(y_ptr + offs, mask=m, other=0.0)
    z = tl.exp2(x) * tl.log(tl.abs(x) + 1.0) + tl.sqrt(tl.abs(y)) * scale
    z = tl.where(x > y, z, -z)
    z = tl.maximum(z, tl.minimum(x, y))
    i = (x * 10.0).to(tl.int32)
    j = (i % 7 + (i // 3)) & 0xff ^ (i << 1)
    z = z + j.to(tl.float32)
    if pid % 2 == 0:
        z = z * 2.0
    else:
        z = z - 1.0
    tl.store(out_ptr + offs, z, mask=m)
    tl.store(idx_ptr + offs, j, mask=m)


@triton.jit
def trans_reduce_kernel(x_ptr, t_ptr, red_ptr, M: tl.constexpr, N: tl.constexpr):
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(t_ptr + rn[:, None] * M + rm[None, :], tl.trans(x))
    tl.store(red_ptr + rn, tl.max(x, axis=0))
    tl.store(red_ptr + N + rm, tl.sum(x, axis=1))


@triton.jit
def convert_kernel(x_ptr, h_ptr, b_ptr, f8_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + offs, mask=m)
    tl.store(h_ptr + offs, x.to(tl.float16), mask=m)
    tl.store(b_ptr + offs, x.to(tl.bfloat16), mask=m)
    tl.store(f8_ptr + offs, x.to(tl.float8e4nv), mask=m)
    f8 = tl.load(f8_ptr + offs, mask=m).to(tl.float32)
    u = (x * 1000.0).to(tl.int32).to(tl.uint32)
    tl.store(y_ptr + offs, f8 + (u >> 28).to(tl.float32), mask=m)


# Tutorial 04, low-memory dropout: tl.rand is Philox (tt.mulhiui).
@triton.jit
def _seeded_dropout(x_ptr, output_ptr, n_elements, p, seed, BLOCK_SIZE: tl.constexpr):
    # compute memory offsets of elements handled by this instance
    pid = tl.program_id(axis=0)
    block_start = pid * BLOCK_SIZE
    offsets = block_start + tl.arange(0, BLOCK_SIZE)
    mask = offsets < n_elements
    # load data from x
    x = tl.load(x_ptr + offsets, mask=mask)
    # randomly prune it
    random = tl.rand(seed, offsets)
    x_keep = random > p
    # write-back
    output = tl.where(x_keep, x / (1 - p), 0.0)
    tl.store(output_ptr + offsets, output, mask=mask)


# The vector add tuned over two block sizes (triton.autotune, timed by the maia driver's benchmarker).
add_kernel_autotuned = triton.autotune(configs=[triton.Config({"BLOCK_SIZE": 128}), triton.Config({"BLOCK_SIZE": 512})],
                                       key=["n_elements"])(add_kernel)


@triton.jit
def grid3d_kernel(out_ptr):
    # out[z][y][x] = x + 100 y + 10000 z + 1000000 (number of programs along z)
    x, y, z = tl.program_id(0), tl.program_id(1), tl.program_id(2)
    nx, ny = tl.num_programs(0), tl.num_programs(1)
    v = x + 100 * y + 10000 * z + 1000000 * tl.num_programs(2)
    tl.store(out_ptr + (z * ny + y) * nx + x, v)


@triton.jit
def many_live(x_ptr, y_ptr, BLOCK: tl.constexpr):
    # 34 tensors loaded before any is used: more than the TVP's 32 vector registers (spilled).
    offs = tl.arange(0, BLOCK)
    a0 = tl.load(x_ptr + 0 * BLOCK + offs)
    a1 = tl.load(x_ptr + 1 * BLOCK + offs)
    a2 = tl.load(x_ptr + 2 * BLOCK + offs)
    a3 = tl.load(x_ptr + 3 * BLOCK + offs)
    a4 = tl.load(x_ptr + 4 * BLOCK + offs)
    a5 = tl.load(x_ptr + 5 * BLOCK + offs)
    a6 = tl.load(x_ptr + 6 * BLOCK + offs)
    a7 = tl.load(x_ptr + 7 * BLOCK + offs)
    a8 = tl.load(x_ptr + 8 * BLOCK + offs)
    a9 = tl.load(x_ptr + 9 * BLOCK + offs)
    a10 = tl.load(x_ptr + 10 * BLOCK + offs)
    a11 = tl.load(x_ptr + 11 * BLOCK + offs)
    a12 = tl.load(x_ptr + 12 * BLOCK + offs)
    a13 = tl.load(x_ptr + 13 * BLOCK + offs)
    a14 = tl.load(x_ptr + 14 * BLOCK + offs)
    a15 = tl.load(x_ptr + 15 * BLOCK + offs)
    a16 = tl.load(x_ptr + 16 * BLOCK + offs)
    a17 = tl.load(x_ptr + 17 * BLOCK + offs)
    a18 = tl.load(x_ptr + 18 * BLOCK + offs)
    a19 = tl.load(x_ptr + 19 * BLOCK + offs)
    a20 = tl.load(x_ptr + 20 * BLOCK + offs)
    a21 = tl.load(x_ptr + 21 * BLOCK + offs)
    a22 = tl.load(x_ptr + 22 * BLOCK + offs)
    a23 = tl.load(x_ptr + 23 * BLOCK + offs)
    a24 = tl.load(x_ptr + 24 * BLOCK + offs)
    a25 = tl.load(x_ptr + 25 * BLOCK + offs)
    a26 = tl.load(x_ptr + 26 * BLOCK + offs)
    a27 = tl.load(x_ptr + 27 * BLOCK + offs)
    a28 = tl.load(x_ptr + 28 * BLOCK + offs)
    a29 = tl.load(x_ptr + 29 * BLOCK + offs)
    a30 = tl.load(x_ptr + 30 * BLOCK + offs)
    a31 = tl.load(x_ptr + 31 * BLOCK + offs)
    a32 = tl.load(x_ptr + 32 * BLOCK + offs)
    a33 = tl.load(x_ptr + 33 * BLOCK + offs)
    acc = a33
    acc = acc * a32 + 1.0
    acc = acc * a31 + 1.0
    acc = acc * a30 + 1.0
    acc = acc * a29 + 1.0
    acc = acc * a28 + 1.0
    acc = acc * a27 + 1.0
    acc = acc * a26 + 1.0
    acc = acc * a25 + 1.0
    acc = acc * a24 + 1.0
    acc = acc * a23 + 1.0
    acc = acc * a22 + 1.0
    acc = acc * a21 + 1.0
    acc = acc * a20 + 1.0
    acc = acc * a19 + 1.0
    acc = acc * a18 + 1.0
    acc = acc * a17 + 1.0
    acc = acc * a16 + 1.0
    acc = acc * a15 + 1.0
    acc = acc * a14 + 1.0
    acc = acc * a13 + 1.0
    acc = acc * a12 + 1.0
    acc = acc * a11 + 1.0
    acc = acc * a10 + 1.0
    acc = acc * a9 + 1.0
    acc = acc * a8 + 1.0
    acc = acc * a7 + 1.0
    acc = acc * a6 + 1.0
    acc = acc * a5 + 1.0
    acc = acc * a4 + 1.0
    acc = acc * a3 + 1.0
    acc = acc * a2 + 1.0
    acc = acc * a1 + 1.0
    acc = acc * a0 + 1.0
    tl.store(y_ptr + offs, acc)


@triton.jit
def splat_pointer_kernel(x_ptr, out_ptr, BLOCK: tl.constexpr):
    # Every lane loads the same element: a pointer splat with no offsets added.
    v = tl.load(tl.broadcast_to(x_ptr, [BLOCK]))
    tl.store(out_ptr + tl.arange(0, BLOCK), v)


@triton.jit
def loops_kernel(x_ptr, out_ptr, n, BLOCK: tl.constexpr):
    # Loop-carried float and int scalars and a tensor, an if with a result inside the
    # loop, and a nested loop whose bound is the outer induction variable.
    acc = 0.0
    cnt = 0
    mx = tl.full([BLOCK], float("-inf"), tl.float32)
    for off in range(0, n, BLOCK):
        o = off + tl.arange(0, BLOCK)
        x = tl.load(x_ptr + o, mask=o < n, other=0.0)
        acc += tl.sum(x, axis=0)
        cnt += 1
        mx = tl.maximum(mx, tl.where(o < n, x, float("-inf")))
        if cnt % 2 == 0:
            acc = acc * 0.5
    tri = 0
    for i in range(0, cnt):
        for j in range(0, i + 1):
            tri += i * j + 1
    tl.store(out_ptr, acc)
    tl.store(out_ptr + 1, cnt.to(tl.float32))
    tl.store(out_ptr + 2, tri.to(tl.float32))
    tl.store(out_ptr + 3 + tl.arange(0, BLOCK), mx)


@triton.jit
def int_reduce_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    # Integer reductions (no VRED for them: through the scratch area) and a product.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(out_ptr + rn, tl.max(x, axis=0))
    tl.store(out_ptr + N + rm, tl.sum(x, axis=1))
    tl.store(out_ptr + N + M, tl.min(tl.sum(x, axis=0), axis=0))
    tl.store(out_ptr + N + M + 1, tl.reduce(x % 3 + 1, 1, _multiply).to(tl.int32).sum(0))


@triton.jit
def _multiply(a, b):
    return a * b


@triton.jit
def argmax_kernel(x_ptr, out_ptr, M: tl.constexpr, N: tl.constexpr):
    # tl.argmax / tl.argmin: reductions of two tensors (values, indices) by a region of
    # compares and selects.
    rm = tl.arange(0, M)
    rn = tl.arange(0, N)
    x = tl.load(x_ptr + rm[:, None] * N + rn[None, :])
    tl.store(out_ptr + rm, tl.argmax(x, axis=1))
    tl.store(out_ptr + M + rn, tl.argmin(x, axis=0))
    tl.store(out_ptr + M + N, tl.argmax(tl.max(x, axis=1), axis=0))


# Scalar atomics and while loops: every instance bumps a counter (its old
# value stored), takes the max and the OR of its id, adds 0.5 to a float,
# and counts the Collatz steps of pid + 1 in a while loop with an if inside.
@triton.jit
def atomics_kernel(cnt_ptr, f_ptr, out_ptr, n):
    pid = tl.program_id(0)
    old = tl.atomic_add(cnt_ptr, 1)
    tl.atomic_max(cnt_ptr + 1, pid)
    tl.atomic_or(cnt_ptr + 2, 1 << (pid % 31))
    tl.atomic_xchg(cnt_ptr + 3, 7)
    tl.atomic_add(f_ptr, 0.5)
    x = pid + 1
    steps = 0
    while x != 1:
        if x % 2 == 0:
            x = x // 2
        else:
            x = 3 * x + 1
        steps += 1
    tl.store(out_ptr + pid, steps)
    tl.store(out_ptr + n + pid, old)


# tl.atomic_add on blocks (VAMOADD): every instance adds its row of x into
# acc (f32) and 1 into the bins of its row's int32 keys (a histogram, lanes
# colliding), masked to n columns; the old values of acc's first add stored.
@triton.jit
def tensor_atomic_kernel(x_ptr, key_ptr, acc_ptr, hist_ptr, old_ptr, n, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    offs = tl.arange(0, BLOCK)
    m = offs < n
    x = tl.load(x_ptr + row * n + offs, mask=m)
    k = tl.load(key_ptr + row * n + offs, mask=m)
    old = tl.atomic_add(acc_ptr + offs, x, mask=m)
    tl.atomic_add(hist_ptr + k, 1, mask=m)
    tl.store(old_ptr + row * n + offs, old, mask=m)
