#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Writes the seed corpus for fuzz_fabric (input format in fuzz_fabric.c):
# well-formed frames of each type, raw and "fixed up", ticks and sends.
# Run from tests/fuzz: ./mkcorpus_fabric.py
import os
import struct
import zlib

ETH = bytes.fromhex('ffffffffffff' '020000111103') + b'\x88\xb5'
HELLO, DATA, ACK, KEEPALIVE, NAK = 1, 2, 3, 4, 5
VERSION = 6     # MAIA_FABRIC_VERSION
F_DUP, F_ACK_NOW = 1, 2


def hdr(typ, seq=0, ack=0, credit=8, plen=0, epoch=1, peer_epoch=0, version=VERSION,
        src_port=5, dst_port=3, serial=0x2222, crc=0, gap=0, flags=0):
    return struct.pack('<BBBBHHQIIIIIIII', version, typ, src_port, dst_port, flags, 0, serial,
                       epoch, peer_epoch, seq, ack, credit, plen, crc, gap)


def frame(typ, payload=b'', **kw):
    h = hdr(typ, plen=len(payload), **kw)
    crc = zlib.crc32(h + payload)
    return ETH + hdr(typ, plen=len(payload), crc=crc, **kw) + payload


def rec(op, body):
    return bytes([op]) + struct.pack('<H', len(body)) + body


seeds = {
    'raw_hello': rec(0, frame(HELLO, dst_port=0xff)),
    'raw_data': rec(0, frame(DATA, b'hello fabric', seq=0)),
    'raw_ack': rec(0, frame(ACK, ack=1)),
    'raw_keepalive': rec(0, frame(KEEPALIVE)),
    'raw_nak': rec(0, frame(NAK)),
    'fixed_data_session': b''.join(rec(1 | 8, hdr(DATA, seq=i) + bytes([i]) * 40) for i in range(4)),
    'fixed_ack_session': rec(1 | 8, hdr(ACK, ack=2, credit=100)),
    # DATA after a gap (held), then the gap filled (the held ones delivered).
    'fixed_data_gap': b''.join(rec(1 | 8, hdr(DATA, seq=i) + bytes([i]) * 40) for i in (2, 1, 3, 0)),
    # A sends four messages; B's NAK names the first two missing.
    'fixed_nak_session': b''.join(rec(3, bytes([i]) * 50) for i in range(4)) +
    rec(1 | 8, hdr(NAK, ack=0, credit=100, gap=2)) + rec(2, b'\x01'),
    'fixed_hello_new_epoch': rec(1, hdr(HELLO, epoch=0x7fffffff, dst_port=0xff)),
    'fixed_bad_version': rec(1 | 4, hdr(DATA, version=9)),
    'send_tick': rec(3, b'x' * 100) + rec(2, b'\x0b') + rec(3, b'') + rec(2, b'\xff'),
    'send_many': b''.join(rec(3, bytes([i]) * i) for i in range(20)) + rec(2, b'\x05'),
    'dead_peer': rec(2, b'\xff') * 5,
    'truncated': rec(0, frame(DATA, b'abc')[:30]),
    # Wire version 6's delayed acks: A's ack waits for a frame back or a tick.
    'raw_hello_v5': rec(0, frame(HELLO, dst_port=0xff, version=5)),
    'fixed_data_ack_now': b''.join(rec(1 | 8, hdr(DATA, seq=i, flags=F_ACK_NOW if i % 2 else 0) +
                                       bytes([i]) * 40) for i in range(5)) + rec(2, b'\x00'),
    'fixed_data_dup': b''.join(rec(1 | 8, hdr(DATA, seq=i, flags=F_DUP) + bytes([i]) * 40)
                               for i in (0, 1, 1, 0, 2)) + rec(2, b'\x00') + rec(2, b'\x01'),
    'fixed_data_then_send': rec(1 | 8, hdr(DATA, seq=0) + b'q' * 40) + rec(3, b'r' * 60) +
    rec(1 | 8, hdr(DATA, seq=1) + b's' * 40) + rec(2, b'\x00') + rec(2, b'\x02'),
    'send_large_ack_now': rec(3, b'L' * 5000) + rec(3, b'M' * 4097) + rec(2, b'\x00') +
    rec(2, b'\x0b'),
    # A refuses the second message (held), then takes it at a tick: acked then.
    'fixed_data_refused': rec(1 | 8, hdr(DATA, seq=0) + b'a' * 40) + rec(2 | 4, b'\x00') +
    rec(1 | 8, hdr(DATA, seq=1) + b'b' * 40) + rec(1 | 8, hdr(DATA, seq=2) + b'c' * 40) +
    rec(2 | 4, b'\x00') + rec(2 | 8, b'') + rec(2 | 8, b''),
    'fixed_data_window': b''.join(rec(1 | 8, hdr(DATA, seq=i, credit=64) + bytes([i]) * 8)
                                  for i in range(12)) + rec(2, b'\x00'),
}
os.makedirs('corpus_fabric', exist_ok=True)
for name, data in seeds.items():
    with open(os.path.join('corpus_fabric', name), 'wb') as f:
        f.write(data)
