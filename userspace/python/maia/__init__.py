# SPDX-License-Identifier: MIT
"""maia: Python bindings of libmaia (Documentation/python.rst).

The C extension (maia._maia) wraps libmaia one to one: Device, Bo (buffer
objects with the buffer protocol), Tensor (a device tensor descriptor),
CmdBuf (the command builders), Error. This file adds the numpy side: views
of a buffer object's memory as arrays, BF16 conversions, and descriptors of
a region of a buffer object.
"""
import numpy as np

from ._maia import *  # noqa: F401,F403  (the extension's names are the API)
from ._maia import (Error, Tensor, DTYPE_FP32, DTYPE_FP16, DTYPE_BF16, DTYPE_INT8,
                    DTYPE_INT32, DTYPE_FP8_E4M3, DTYPE_FP8_E5M2, dtype_bytes)

# How each plain device data type looks to numpy; BF16 and FP8 are raw bits.
NUMPY_DTYPES = {
    DTYPE_FP32: np.float32,
    DTYPE_FP16: np.float16,
    DTYPE_BF16: np.uint16,
    DTYPE_INT8: np.int8,
    DTYPE_INT32: np.int32,
    DTYPE_FP8_E4M3: np.uint8,
    DTYPE_FP8_E5M2: np.uint8,
}


def view(bo, dtype, shape, offset=0):
    """A numpy array over bo's memory (no copy): dtype is a maia.DTYPE_*
    of NUMPY_DTYPES, shape a tuple, offset in bytes. Writing to it writes the
    buffer object; the view keeps bo alive and bo.close() refuses meanwhile.
    Block (MX) formats have no numpy view: use numpy.frombuffer(bo, uint8)."""
    if dtype not in NUMPY_DTYPES:
        raise ValueError("maia.view: data type %r has no numpy equivalent" % (dtype,))
    np_dtype = np.dtype(NUMPY_DTYPES[dtype])
    count = int(np.prod(shape, dtype=np.int64)) if len(shape) else 1
    if offset < 0 or offset % np_dtype.itemsize:
        raise ValueError("maia.view: offset %d is not a non-negative multiple of %d"
                         % (offset, np_dtype.itemsize))
    if offset + count * np_dtype.itemsize > bo.size:
        raise ValueError("maia.view: %d bytes at offset %d do not fit in a %d-byte buffer object"
                         % (count * np_dtype.itemsize, offset, bo.size))
    return np.frombuffer(bo, dtype=np_dtype, count=count, offset=offset).reshape(shape)


def tensor(bo, dtype, shape, offset=0, strides=None):
    """A maia.Tensor for a region of bo (offset in bytes from its start)."""
    return Tensor(bo.va + offset, dtype, shape, strides)


def to_bf16(a):
    """float32 array -> BF16 bits (uint16), round to nearest even, NaN kept quiet."""
    u = np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)
    nan = (u & 0x7fffffff) > 0x7f800000
    r = ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


def from_bf16(h):
    """BF16 bits (uint16 array) -> float32 array."""
    return (np.asarray(h, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)


def nbytes(dtype, elems):
    """Bytes of a contiguous tensor of elems elements, block scales included."""
    data, scales = dtype_bytes(dtype, elems)
    return data + scales


__all__ = [n for n in dir() if not n.startswith("_")]
