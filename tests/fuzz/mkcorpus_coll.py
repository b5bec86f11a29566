#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus for fuzz_coll (input format in fuzz_coll.c): a valid
# command of each collective for rank 1 of 2 or 3, followed by the chunks its
# predecessor would send, polls and room changes, and a few hostile variants.
# Run from tests/fuzz: ./mkcorpus_coll.py
import os
import struct

OP_COLLECTIVE = 0x09
AR, AG, RS, BC, A2A = 1, 2, 3, 4, 5
FP32, BF16 = 0, 2
MEM = 0x10000
COLL = 6


def cmd(coll, dtype=FP32, redop=0, rank=1, nranks=2, count=64, chunk=64, root=0,
        send=MEM, recv=MEM + 0x10000, seq=1, report=0):
    # struct maia_cmd_collective (72 bytes)
    return struct.pack('<HHIBBBBBBHHHIIIIIQQQQ', OP_COLLECTIVE, 0, 72, coll, redop, dtype,
                       0, 1, 0, root, rank, nranks, 0xc0, seq, chunk, 50, 0, send, recv,
                       count, report)


def chunk(step, offset, data, seq=1, src=0):
    # struct maia_fabric_coll_msg (48 bytes) + data
    return struct.pack('<BBHIIIQI20x', COLL, 0, step, 0xc0, seq, len(data), offset,
                       src) + data


def rec_msg(m, port=1):
    return bytes([0 | (port << 2)]) + struct.pack('<H', len(m)) + m


def poll(ms=1):
    return bytes([1 | (ms << 2)])


def room(n):
    return bytes([2 | (n << 2)])


def again():
    return bytes([3])


def stream(step, total, size=64, src=0, seq=1):
    out = b''
    for off in range(0, total, size):
        out += rec_msg(chunk(step, off, bytes((off + i) & 0xff for i in range(min(size, total - off))),
                             seq=seq, src=src))
        out += poll(0)
    return out


seeds = {
    # all-reduce fp32, 2 ranks, 64 elements: rank 1 gets block 1 (32 fp32) at step 0, block 0 at step 1
    'ar2': cmd(AR) + room(8) + stream(0, 128) + stream(1, 128) + poll(1),
    'ar2_bf16': cmd(AR, BF16, redop=1) + room(8) + stream(0, 128) + stream(1, 64) + poll(1),
    'rs3': cmd(RS, nranks=3, count=16) + room(8) + stream(0, 64) + stream(1, 64) + poll(1),
    'ag2': cmd(AG) + room(8) + stream(0, 256) + poll(1),
    'bc3': cmd(BC, nranks=3, root=0) + room(8) + stream(0, 256) + poll(1),
    'a2a3': cmd(A2A, nranks=3, count=16) + room(8) + stream(0, 128) + stream(1, 64) + poll(1),
    'early_then_start': cmd(AG, seq=1) + room(8) + stream(0, 256, seq=2) + poll(1) + again() +
                        again() + poll(1),
    'stale': cmd(AR, seq=5) + stream(0, 128, seq=4) + room(8) + stream(0, 128, seq=5) + poll(60),
    'no_room': cmd(AR) + room(0) + stream(0, 128) + poll(60) + room(8) + poll(1),
    'bad_offsets': cmd(AR) + room(8) + rec_msg(chunk(0, 64, b'x' * 64)) +
                   rec_msg(chunk(7, 0, b'x' * 64)) + rec_msg(chunk(0, 0, b'x' * 3)) + poll(60),
    'bad_cmd': cmd(AR, nranks=0) + stream(0, 128),
    'timeout': cmd(AR) + room(8) + poll(63) + poll(63),
    'report': cmd(AR, report=MEM + 0x30000) + room(8) + stream(0, 128) + stream(1, 128),
}

os.makedirs('corpus_coll', exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join('corpus_coll', name), 'wb') as f:
        f.write(data)
