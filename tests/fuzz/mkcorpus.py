#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus for fuzz_tensor: a few well-formed commands of each
# kind (input format in fuzz_tensor.c). Run from tests/fuzz: ./mkcorpus.py
import os
import struct

BASE = 0x10000
DT = dict(fp32=0, fp16=1, bf16=2, e4m3=3, int8=5, mxfp8=7, mxfp6_e3m2=9, mxfp6_e2m3=10, mxfp4=11,
          mxint8=12, mx9=13, mx6=14, mx4=15)
OPS = ['gemm', 'gemm_batched', 'add', 'mul', 'scale', 'act', 'softmax', 'layernorm',
       'rmsnorm', 'attention', 'quantize', 'dequantize', 'reduce', 'transpose', 'copy']


def desc(dtype, addr, shape, scale_addr=0, scale=0):
    rank = len(shape)
    strides, s = [], 1
    for d in reversed(shape):
        strides.insert(0, s)
        s *= d
    shape = list(shape) + [0] * (4 - rank)
    strides = strides + [0] * (4 - rank)
    return struct.pack('<QQ4Q4IBBHI', addr, scale_addr, *strides, *shape, DT[dtype], rank, 0, scale)


# Entries in fuzz_tensor.c's ops[] (OPS plus a reserved opcode): byte 0 / this, odd,
# means operands are read in place through map().
N_OPS = len(OPS) + 1


def seed(name, op, body, flags=0, mem=b''):
    rest = struct.pack('<H', flags) + body + mem
    for suffix, extra in (('', 0), ('_inplace', N_OPS)):
        with open(os.path.join('corpus', name + suffix), 'wb') as f:
            f.write(bytes([OPS.index(op) + extra]) + rest)


zero = bytes(72)
mem = bytes(range(256)) * 16
seed('gemm_fp32', 'gemm', desc('fp32', BASE, [8, 16]) + desc('fp32', BASE + 512, [16, 8]) +
     desc('fp32', BASE + 1024, [8, 8]) + zero + struct.pack('<IIII', 0, 0, 1, 0), mem=mem)
seed('gemm_mx_bias', 'gemm', desc('mxfp4', BASE, [4, 64], scale_addr=BASE + 4096) +
     desc('bf16', BASE + 256, [64, 32]) + desc('bf16', BASE + 8192, [4, 32]) +
     desc('fp32', BASE + 512, [32]) + struct.pack('<IIII', 0, 0, 2, 0), flags=4, mem=mem)
seed('softmax_causal', 'softmax', desc('bf16', BASE, [4, 8, 8]) + desc('fp32', BASE + 1024, [4, 8, 8]) +
     struct.pack('<Ii', 0, 1), flags=1, mem=mem)
seed('layernorm', 'layernorm', desc('fp32', BASE, [4, 32]) + desc('fp32', BASE + 512, [32]) +
     desc('fp32', BASE + 640, [32]) + desc('fp16', BASE + 1024, [4, 32]) + struct.pack('<II', 0, 0), mem=mem)
seed('attention', 'attention', desc('bf16', BASE, [1, 2, 5, 16]) + desc('bf16', BASE + 512, [1, 2, 7, 16]) +
     desc('bf16', BASE + 1024, [1, 2, 7, 16]) + desc('fp32', BASE + 2048, [1, 2, 5, 16]) +
     struct.pack('<II', 0, 0), flags=1, mem=mem)
seed('quantize_mx6', 'quantize', desc('fp32', BASE, [2, 32]) +
     desc('mx6', BASE + 1024, [2, 32], scale_addr=BASE + 2048) + struct.pack('<Q', 0), mem=mem)
seed('quantize_dynamic', 'quantize', desc('fp32', BASE, [2, 32]) + desc('int8', BASE + 1024, [2, 32]) +
     struct.pack('<Q', BASE + 4000), flags=1, mem=mem)
seed('reduce', 'reduce', desc('fp32', BASE, [3, 4, 5]) + desc('fp32', BASE + 1024, [1, 4, 1]) +
     struct.pack('<II', 1, 5), mem=mem)
seed('transpose', 'transpose', desc('fp32', BASE, [4, 6, 8]) + desc('bf16', BASE + 1024, [8, 4, 6]) +
     bytes([2, 0, 1, 0]) + bytes(4), mem=mem)
seed('add_bcast', 'add', desc('fp32', BASE, [4, 8]) + desc('fp32', BASE + 256, [1, 8]) +
     desc('fp32', BASE + 512, [4, 8]), mem=mem)

# The BF16 pair decoders of B (gemm_bf16.c, msmx_avx512.h): B of each MX format
# that has one, K odd (a lone last row) and even, under scales that include
# 0 (subnormal factors), 1, 254 and 0xff (NaN) among the bytes of mem, with A
# BF16 and A of the same format.
scales = bytes([0, 1, 2, 3, 7, 8, 127, 128, 200, 253, 254, 255]) * 8
for dt in ('mx9', 'mx6', 'mx4', 'mxfp6_e3m2', 'mxfp6_e2m3', 'mxint8'):
    for k in (5, 33):
        seed('gemm_%s_b_k%d' % (dt, k), 'gemm', desc('bf16', BASE, [3, k]) +
             desc(dt, BASE + 4096, [k, 64], scale_addr=BASE + 3072) +
             desc('fp32', BASE + 12288, [3, 64]) + zero + struct.pack('<IIII', 0, 0, 0, 0),
             mem=mem[:3072] + scales + mem[3072 + len(scales):])
    seed('gemm_%s_ab' % dt, 'gemm', desc(dt, BASE, [4, 32], scale_addr=BASE + 3072) +
         desc(dt, BASE + 4096, [32, 64], scale_addr=BASE + 3200) +
         desc('fp32', BASE + 12288, [4, 64]) + zero + struct.pack('<IIII', 0, 0, 0, 0),
         mem=mem[:3072] + scales + scales + mem[3072 + 2 * len(scales):])
