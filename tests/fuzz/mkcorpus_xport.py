#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus for fuzz_xport (input format in fuzz_xport.c): well-formed
# transport messages of each type, to each of its four windows, and a few malformed ones.
# Run from tests/fuzz: ./mkcorpus_xport.py
import os
import struct

IDENT, WRITE, WRITE_DONE, READ_REQ, READ_DATA, COLL = 1, 2, 3, 4, 5, 6
LAST, SEM = 1, 2


def msg(typ, flags=0, status=0, key=0, tag=1, offset=0, length=0, sem_index=0, sem_value=0,
        data=b''):
    return struct.pack('<BBHIQQIII12x', typ, flags, status, key, tag, offset, length,
                       sem_index, sem_value) + data


def rec(op, body):
    return bytes([op]) + struct.pack('<H', len(body)) + body


def fixed(typ, window, body):
    """A record the target makes a plausible message of type typ to window (0..3)."""
    return rec(1 | ((typ - 1) << 1) | (window << 4), body)


seeds = {
    'ident': rec(0, msg(IDENT, tag=0x1234, key=3)),
    'write_small': fixed(WRITE, 0, msg(WRITE, LAST, tag=7, offset=100, data=b'abcdefgh')),
    'write_sem': fixed(WRITE, 0, msg(WRITE, LAST | SEM, tag=8, sem_index=3, sem_value=2,
                                     data=b'x' * 64)),
    'write_ro': fixed(WRITE, 1, msg(WRITE, LAST, tag=9, data=b'y' * 16)),
    'write_unmapped': fixed(WRITE, 3, msg(WRITE, LAST, tag=10, offset=4096, data=b'z' * 32)),
    'write_stream': b''.join(fixed(WRITE, 0, msg(WRITE, LAST if i == 3 else 0, tag=11,
                                                 offset=i * 1024, data=bytes([i]) * 1024))
                             for i in range(4)),
    'read_req': fixed(READ_REQ, 0, msg(READ_REQ, LAST, tag=12, offset=8, length=4096)),
    'read_wo': fixed(READ_REQ, 2, msg(READ_REQ, LAST, tag=13, length=16)),
    'read_big': fixed(READ_REQ, 0, msg(READ_REQ, LAST, tag=14, length=0x100000)),
    'answers': rec(0, msg(WRITE_DONE, tag=1, status=1)) + rec(0, msg(READ_DATA, tag=2, length=4,
                                                                     data=b'abcd')),
    'coll': fixed(COLL, 0, msg(COLL, data=b'c' * 40)),
    'short': rec(0, b'\x02\x01\x00'),
    'bad_type': rec(0, msg(9)),
    'bad_len': rec(0, msg(WRITE, LAST, tag=3, length=100, data=b'short')),
}

os.makedirs('corpus_xport', exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join('corpus_xport', name), 'wb') as f:
        f.write(data)
