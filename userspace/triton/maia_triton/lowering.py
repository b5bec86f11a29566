"""TTIR -> Tile Vector Processor assembly (Documentation/triton.rst).

One program instance of a Triton kernel is one TVP program instance. Its
values live in registers:
- an integer or pointer scalar in a scalar register (64-bit, sign-extended);
- a float scalar in lane 0 of a vector register (shape 1 x 1);
- a tensor of at most 1024 elements in one vector register, row-major
  (a 1-D tensor of n elements has the shape 1 x n, a 2-D one M x N);
- a tensor of pointers as a scalar base register (a byte address) plus an
  int32 vector of offsets in elements of the pointee type.
The kernel's arguments arrive in s1..sN in the order of the TTIR signature.
"""

import copy
import re
import struct

from . import ttir
from .regalloc import MAX_ARGS, MAX_LANES, SCRATCH_BASE, SLOT_BYTES, LoweringError, Program, S0

# Printed in the assembly's first line (the cache key hashes the sources).
VERSION = "2"

# i64 tensors move as two i32 words (_words_of_i64); scalars of i64 have no load or store.
_MEM_DTYPE = {"f32": "f32", "f16": "f16", "bf16": "bf16", "i32": "i32", "i8": "i8", "i64": "i64",
              "f8E4M3FN": "fp8e4m3", "f8E5M2": "fp8e5m2"}
_ELEM_BYTES = {"f32": 4, "f16": 2, "bf16": 2, "i32": 4, "i8": 1, "i16": 2, "i64": 8, "f64": 8, "i1": 1,
               "f8E4M3FN": 1, "f8E5M2": 1}
_ICMP = {"eq": "eq", "ne": "ne", "slt": "lt", "sle": "le", "sgt": "gt", "sge": "ge",
         "ult": "ult", "ule": "ule", "ugt": "ugt", "uge": "uge"}
# Ordered predicates map onto VFCMP; unordered ones are the negation of the
# opposite ordered one (une is VFCMP's NE).
_FCMP = {"oeq": ("eq", False), "ogt": ("gt", False), "oge": ("ge", False), "olt": ("lt", False),
         "ole": ("le", False), "une": ("ne", False), "one": None, "ueq": None,
         "ult": ("ge", True), "ule": ("gt", True), "ugt": ("le", True), "uge": ("lt", True)}
_FBIN = {"arith.addf": "vfadd", "arith.subf": "vfsub", "arith.mulf": "vfmul", "arith.divf": "vfdiv",
         "tt.precise_divf": "vfdiv", "arith.maxnumf": "vfmax", "arith.maximumf": "vfmax",
         "arith.minnumf": "vfmin", "arith.minimumf": "vfmin"}
_IBIN_V = {"arith.addi": "viadd", "arith.subi": "visub", "arith.muli": "vimul", "arith.divsi": "vidiv",
           "arith.remsi": "virem", "arith.andi": "vand", "arith.ori": "vor", "arith.xori": "vxor",
           "arith.shli": "vshl", "arith.shrsi": "vsra", "arith.shrui": "vshr", "arith.maxsi": "vimax",
           "arith.minsi": "vimin"}
_IBIN_S = {"arith.addi": "add", "arith.subi": "sub", "arith.muli": "mul", "arith.divsi": "div",
           "arith.remsi": "rem", "arith.andi": "and", "arith.ori": "or", "arith.xori": "xor",
           "arith.shli": "shl", "arith.shrsi": "sra", "arith.shrui": "shr", "arith.maxsi": "max",
           "arith.minsi": "min"}
_FUNARY = {"math.exp": "vexp", "math.exp2": "vexp2", "math.log": "vlog", "math.log2": "vlog2",
           "math.sqrt": "vsqrt", "tt.precise_sqrt": "vsqrt", "math.rsqrt": "vrsqrt", "math.sin": "vsin",
           "math.cos": "vcos", "math.tanh": "vtanh", "math.erf": "verf", "math.absf": "vfabs",
           "arith.negf": "vfneg", "math.floor": "vfloor", "math.ceil": "vfceil"}
# tt.extern_elementwise symbols of the backend's libdevice (libdevice.py): one
# instruction each, for what Triton's front end has no operation for.
EXTERN_FUNCS = {"__maia_tanhf": "vtanh"}
_REDUCE = {"arith.addf": "vredsum", "arith.maxnumf": "vredmax", "arith.maximumf": "vredmax",
           "arith.minnumf": "vredmin", "arith.minimumf": "vredmin"}
# Ops that change nothing in the registers (integer widths are 64-bit in
# scalar registers and int32 in lanes; f16/bf16 values are held as binary32).
_ALIAS = {"arith.extui", "arith.trunci", "arith.index_cast", "arith.index_castui",
          "arith.extf", "tt.int_to_ptr", "tt.ptr_to_int"}
# A barrier orders a CTA's threads; one program instance is one TVP thread
# whose loads and stores already happen in program order.
_IGNORED = {"llvm.intr.assume", "tt.assert", "gpu.barrier", "ttg.barrier"}
# Ops without side effects: skipped when their results are unused.
_PURE_TT = {"tt.splat", "tt.broadcast", "tt.expand_dims", "tt.reshape", "tt.make_range", "tt.addptr",
            "tt.load", "tt.reduce", "tt.scan", "tt.dot", "tt.trans", "tt.get_program_id", "tt.get_num_programs",
            "tt.fp_to_fp", "tt.precise_sqrt", "tt.precise_divf", "tt.int_to_ptr", "tt.ptr_to_int"}


def _pure(name):
    return name.startswith("arith.") or name.startswith("math.") or name in _PURE_TT


class Val:
    """A TTIR value in registers. kind: "int" (reg: scalar register),
    "float" (reg: vector register, lane 0), "tensor" (reg: vector register,
    shape), "ptrs" (reg: scalar base, off: offsets vector or None = 0),
    "const" (a constant not yet in a register: value, type)."""

    def __init__(self, kind, type, reg=None, off=None, shape=(1, 1), value=None):
        self.kind = kind
        self.type = type
        self.reg = reg
        self.off = off
        self.shape = shape
        self.value = value


def lanes_shape(t, loc):
    """The (rows, cols) a tensor type occupies."""
    if not t.is_tensor or not t.shape:
        return (1, 1)
    if len(t.shape) > 2:
        raise LoweringError("%s: tensor %s has rank %d; the maia backend supports rank 1 and 2" %
                            (loc or "?", t.text, len(t.shape)))
    if t.numel > MAX_LANES:
        raise LoweringError("%s: tensor %s has %d elements, more than the %d lanes of a TVP vector register; "
                            "use a smaller BLOCK_SIZE" % (loc or "?", t.text, t.numel, MAX_LANES))
    return (1, t.shape[0]) if len(t.shape) == 1 else (t.shape[0], t.shape[1])


def _float_bits(text, elem):
    text = text.strip()
    if text.startswith("0x"):
        bits = int(text, 16)
        if elem == "f32":
            return bits
        if elem == "bf16":
            return bits << 16
        if elem == "f16":
            return struct.unpack("<I", struct.pack("<f", struct.unpack("<e", struct.pack("<H", bits))[0]))[0]
        raise LoweringError("float constant of type %s" % elem)
    return struct.unpack("<I", struct.pack("<f", float(text)))[0]


class KernelInfo:
    def __init__(self, name, num_args, num_insns, scratch):
        self.name = name
        self.num_args = num_args
        self.num_insns = num_insns
        # Bytes of spill area per program instance; its address is argument num_args + 1.
        self.scratch = scratch


class Lowering:
    def __init__(self, func):
        self.f = func
        self.p = Program()
        self.vals = {}
        self.loc = None
        self.shape = None        # the SHAPE in force at this point of the program, None: unknown

    # ---- emission helpers ----
    def err(self, msg, op=None):
        loc = (op.loc if op is not None else self.loc) or "an unknown line"
        raise LoweringError("%s: %s" % (loc, msg))

    def emit(self, mnem, *ops, comment=None):
        self.p.emit(mnem, ops, self.loc, comment)

    def vemit(self, shape, mnem, *ops):
        if self.shape != shape:
            self.p.emit("shape", [str(shape[0]), str(shape[1])], self.loc)
            self.shape = shape
        self.p.emit(mnem, ops, self.loc)

    def place(self, label):
        self.p.place(label)
        self.shape = None

    def newv(self, hint=""):
        r = self.p.new("v")
        r.hint = hint
        return r

    def news(self, hint=""):
        r = self.p.new("s")
        r.hint = hint
        return r

    # ---- values ----
    def val(self, name, op):
        v = self.vals.get(name)
        if v is None:
            self.err("value %s is not defined before its use (unsupported construct)" % name, op)
        return v

    def sreg(self, name, op):
        """The scalar register of an integer or pointer scalar."""
        v = self.val(name, op)
        if v.kind == "const":
            if v.value == 0:
                return S0
            r = self.news(name)
            self.load_int(r, v.value)
            return r
        if v.kind != "int":
            self.err("%s is not an integer scalar" % name, op)
        return v.reg

    def load_int(self, r, value):
        lo = value & 0xffffffff
        lo_signed = lo - (1 << 32) if lo & 0x80000000 else lo
        self.emit("li", r, str(lo_signed))
        if not -(1 << 31) <= value < (1 << 31):
            hi = (value >> 32) & 0xffffffff
            self.emit("lih", r, str(hi - (1 << 32) if hi & 0x80000000 else hi))

    def vreg(self, name, op, shape=None):
        """The vector register of a float scalar or a tensor (constants are
        materialized at each use, which keeps them out of the registers
        between uses)."""
        v = self.val(name, op)
        if v.kind == "const":
            shape = shape or lanes_shape(v.type, op.loc)
            r = self.newv(name)
            self.vemit(shape, "vsplati", r, self.const_bits(v))
            return r
        if v.kind == "int":
            self.err("%s is an integer scalar where a vector was expected" % name, op)
        if v.kind == "ptrs":
            self.err("%s is a tensor of pointers where data was expected" % name, op)
        return v.reg

    def const_bits(self, v):
        if v.type.is_float:
            return "0x%08x" % v.value
        return str(v.value)

    def define(self, op, val, i=0):
        self.vals[op.results[i]] = val

    # ---- the kernel ----
    def run(self):
        f = self.f
        if len(f.args) > MAX_ARGS:
            raise LoweringError("kernel %s has %d arguments; a KERNEL command carries at most %d" %
                                (f.name, len(f.args), MAX_ARGS))
        pinned = {}
        for i, (name, t) in enumerate(f.args):
            r = self.news(name)
            pinned[r] = i + 1
            if t.ptr or not t.is_float:
                self.vals[name] = Val("int", t, r)
            else:
                if t.elem != "f32":
                    raise LoweringError("kernel %s: argument %s of type %s (float arguments must be fp32)" %
                                        (f.name, name, t.text))
                v = self.newv(name)
                self.vemit((1, 1), "vsplat", v, r)
                self.vals[name] = Val("float", t, v)
        self.used = set()
        self.fixed_slots = 0      # scratch slots the program uses itself (reductions)
        self._uses(f.body)
        self.block(f.body)
        self.emit("halt")
        self.scratch = self.p.allocate(pinned, len(f.args) + 1, self.fixed_slots)
        return self.p

    def block(self, ops):
        for op in ops:
            self.loc = op.loc
            if op.results and _pure(op.name) and not any(r in self.used for r in op.results):
                continue        # dead (e.g. the compare of an assumption)
            self.lower(op)

    def _uses(self, ops):
        for op in ops:
            if op.name not in _IGNORED:
                self.used.update(op.operands)
                self.used.update(init for _, init in op.iter_args)
            for region in op.regions:
                self._uses(region)

    def lower(self, op):
        name = op.name
        if name in _IGNORED:
            return
        if name in ("tt.return", "scf.yield", "tt.reduce.return", "tt.scan.return", "scf.condition"):
            if name == "tt.return" and op.operands:
                self.err("tt.return with values", op)
            return
        if name in _ALIAS:
            return self.alias(op)
        m = getattr(self, "op_" + name.replace(".", "_"), None)
        if m is not None:
            return m(op)
        if name in _FBIN:
            return self.fbin(op, _FBIN[name])
        if name in _IBIN_V:
            return self.ibin(op)
        if name in _FUNARY:
            return self.funary(op, _FUNARY[name])
        self.err("%s is not supported by the maia backend" % name, op)

    # ---- constants and aliases ----
    def op_arith_constant(self, op):
        t = op.result_types[0]
        text = op.attrs.strip()
        if t.is_tensor:
            if not text.startswith("dense<") or text.startswith("dense<["):
                self.err("non-uniform tensor constants are not supported", op)
            text = text[len("dense<"):-1]
            lanes_shape(t, op.loc)
        if t.is_float:
            value = _float_bits(text, t.elem)
        elif text in ("true", "false"):
            value = 1 if text == "true" else 0
        else:
            try:
                value = int(text, 0)
            except ValueError:
                self.err("constant %s is not supported" % text, op)
            if t.is_tensor and not -(1 << 31) <= value < (1 << 32):
                self.err("tensor constant %d does not fit 32 bits" % value, op)
        self.define(op, Val("const", t, value=value))

    def op_arith_extsi(self, op):
        v = self.val(op.operands[0], op)
        t = op.result_types[0]
        if v.type.elem != "i1":
            return self.alias(op)
        # A true i1 sign-extends to -1: 0 - x.
        if v.kind == "const":
            return self.define(op, Val("const", t, value=-v.value))
        if v.kind == "int":
            r = self.news(op.results[0])
            self.emit("sub", r, S0, v.reg)
            return self.define(op, Val("int", t, r))
        zero, r = self.newv("0"), self.newv(op.results[0])
        self.vemit(v.shape, "vsplati", zero, "0")
        self.vemit(v.shape, "visub", r, zero, v.reg)
        self.define(op, Val("tensor", t, r, shape=v.shape))

    def alias(self, op):
        v = self.val(op.operands[0], op)
        t = op.result_types[0] if op.result_types else v.type
        self.define(op, Val(v.kind, t, v.reg, v.off, v.shape, v.value))

    # ---- program ids, ranges, splats, shapes ----
    def op_tt_get_program_id(self, op):
        axis = "xyz".index(op.attrs.strip()[0])
        r = self.news(op.results[0])
        self.emit("pid", r, str(axis))
        self.define(op, Val("int", op.result_types[0], r))

    def op_tt_get_num_programs(self, op):
        axis = "xyz".index(op.attrs.strip()[0])
        r = self.news(op.results[0])
        self.emit("nprog", r, str(axis))
        self.define(op, Val("int", op.result_types[0], r))

    def op_tt_make_range(self, op):
        t = op.result_types[0]
        shape = lanes_shape(t, op.loc)
        start = int(re.search(r"start = (-?\d+)", op.attrs).group(1))
        r = self.newv(op.results[0])
        self.vemit(shape, "viota", r, str(start))
        self.define(op, Val("tensor", t, r, shape=shape))

    def op_tt_splat(self, op):
        t = op.result_types[0]
        shape = lanes_shape(t, op.loc)
        v = self.val(op.operands[0], op)
        if v.kind == "const":
            return self.define(op, Val("const", t, value=v.value))
        if t.ptr:
            return self.define(op, Val("ptrs", t, self.sreg(op.operands[0], op), None, shape))
        r = self.newv(op.results[0])
        if v.kind == "int":
            self.vemit(shape, "vsplat", r, v.reg)
        else:
            self.vemit(shape, "vbcast", r, v.reg)
        self.define(op, Val("tensor", t, r, shape=shape))

    def _bcast(self, src_reg, src_t, dst_t, dst_shape, hint):
        sshape = lanes_shape(src_t, None)
        r = self.newv(hint)
        if sshape == (1, 1):
            self.vemit(dst_shape, "vbcast", r, src_reg)
        elif sshape[0] == 1 and len(src_t.shape) == 2 and src_t.shape[0] == 1:
            self.vemit(dst_shape, "vbrow", r, src_reg)
        elif sshape[1] == 1:
            self.vemit(dst_shape, "vbcol", r, src_reg)
        else:
            raise LoweringError("%s: cannot broadcast %s to %s" % (self.loc, src_t.text, dst_t.text))
        return r

    def op_tt_broadcast(self, op):
        t = op.result_types[0]
        shape = lanes_shape(t, op.loc)
        v = self.val(op.operands[0], op)
        if v.kind == "const":
            return self.define(op, Val("const", t, value=v.value))
        if v.kind == "ptrs":
            off = None if v.off is None else self._bcast(v.off, v.type, t, shape, op.results[0])
            return self.define(op, Val("ptrs", t, v.reg, off, shape))
        r = self._bcast(v.reg, v.type, t, shape, op.results[0])
        self.define(op, Val("tensor", t, r, shape=shape))

    def op_tt_expand_dims(self, op):
        self.reshape(op)

    def op_tt_reshape(self, op):
        self.reshape(op)

    def reshape(self, op):
        # Row-major lanes: adding a dimension of 1 or reshaping keeps the lane order.
        t = op.result_types[0]
        shape = lanes_shape(t, op.loc)
        v = self.val(op.operands[0], op)
        if v.kind == "const":
            return self.define(op, Val("const", t, value=v.value))
        self.define(op, Val(v.kind, t, v.reg, v.off, shape))

    def op_tt_bitcast(self, op):
        """No code where the registers already hold the bits: a pointer to
        elements of the same size (Triton stores an i1 tensor through an i8
        pointer; offsets count elements), a 32-bit integer tensor as f32 or
        back (lanes are 32 bits). Other bitcasts (f16 lanes hold binary32,
        a scalar int is in a scalar register) are refused."""
        t = op.result_types[0]
        src = ttir.Type(op.types.rsplit("->", 1)[0])
        v = self.val(op.operands[0], op)
        if t.ptr and src.ptr and _ELEM_BYTES.get(t.elem) == _ELEM_BYTES.get(src.elem) is not None:
            return self.define(op, Val(v.kind, t, v.reg, v.off, v.shape, v.value))
        if (t.is_tensor and v.kind == "tensor" and {t.elem, src.elem} <= {"f32", "i32"}):
            return self.define(op, Val("tensor", t, v.reg, shape=v.shape))
        self.err("tt.bitcast of %s to %s is not supported" % (src, t), op)

    def op_tt_trans(self, op):
        t = op.result_types[0]
        v = self.val(op.operands[0], op)
        if v.kind == "const":
            return self.define(op, Val("const", t, value=v.value))
        if v.kind != "tensor":
            self.err("tt.trans of %s values is not supported" % v.kind, op)
        r = self.newv(op.results[0])
        self.vemit(v.shape, "vtrans", r, v.reg)
        self.define(op, Val("tensor", t, r, shape=lanes_shape(t, op.loc)))

    # ---- pointers and memory ----
    def op_tt_addptr(self, op):
        t = op.result_types[0]
        size = _ELEM_BYTES.get(t.elem)
        if size is None:
            self.err("pointers to %s are not supported" % t.elem, op)
        p = self.val(op.operands[0], op)
        if not t.is_tensor:
            base = self.sreg(op.operands[0], op)
            o = self.val(op.operands[1], op)
            r = self.news(op.results[0])
            if o.kind == "const" and -(1 << 31) <= o.value * size < (1 << 31):
                self.emit("addi", r, base, str(o.value * size))
                return self.define(op, Val("int", t, r))
            off = self.sreg(op.operands[1], op)
            if off is S0:
                self.emit("add", r, base, S0)
            else:
                self.emit("muli", r, off, str(size))
                self.emit("add", r, base, r)
            return self.define(op, Val("int", t, r))
        shape = lanes_shape(t, op.loc)
        o = self.val(op.operands[1], op)
        if o.kind == "const" and o.value == 0:
            return self.define(op, Val("ptrs", t, p.reg, p.off, shape))
        oreg = self.vreg(op.operands[1], op, shape)
        if p.off is None:
            return self.define(op, Val("ptrs", t, p.reg, oreg, shape))
        r = self.newv(op.results[0])
        self.vemit(shape, "viadd", r, p.off, oreg)
        self.define(op, Val("ptrs", t, p.reg, r, shape))

    def _offsets(self, p, shape):
        """The offsets of a pointer tensor: none made yet (a splat pointer) means every
        lane at the base address, offset 0 (not MAIA_TVP_MEM_UNIT's lane i)."""
        if p.off is not None:
            return p.off
        r = self.newv("zero offsets")
        self.vemit(shape, "vsplati", r, "0")
        return r

    def _words_of_i64(self, off, shape):
        """Offsets in i32 words of the low and the high words of i64
        elements at offsets off (little-endian): 2 off and 2 off + 1."""
        lo, hi = self.newv("low words"), self.newv("high words")
        self.vemit(shape, "viadd", lo, off, off)
        self.vemit(shape, "vsplati", hi, "1")
        self.vemit(shape, "viadd", hi, lo, hi)
        return lo, hi

    def _sld_i64(self, addr, hint):
        """An i64 scalar at addr (Inductor's random seed, its offsets): SLD
        moves 32 bits, so the low word zero-extended OR the high word << 32."""
        r, hi, k, a = self.news(hint), self.news(hint), self.news("32"), self.news("addr + 4")
        self.emit("sld", r, addr, "i32")
        self.emit("addi", a, addr, "4")
        self.emit("sld", hi, a, "i32")
        self.emit("li", k, "32")
        self.emit("shl", r, r, k)
        self.emit("shr", r, r, k)
        self.emit("shl", hi, hi, k)
        self.emit("or", r, r, hi)
        return r

    def _mask(self, name, op, shape):
        v = self.val(name, op)
        if v.kind == "const":
            return None if v.value else "never"
        if v.kind == "int":
            r = self.newv(name)
            self.vemit(shape, "vsplat", r, v.reg)
            return r
        return v.reg

    def op_tt_load(self, op):
        t = op.result_types[0]
        p = self.val(op.operands[0], op)
        dtype = _MEM_DTYPE.get(t.elem)
        if dtype is None:
            self.err("loads of %s are not supported" % t.elem, op)
        if p.kind == "int":
            if len(op.operands) > 1:
                self.err("masked scalar loads are not supported", op)
            if t.elem == "i64":
                return self.define(op, Val("int", t, self._sld_i64(p.reg, op.results[0])))
            if t.is_float:
                r = self.newv(op.results[0])
                self.vemit((1, 1), "vld", r, p.reg, "unit", dtype)
                return self.define(op, Val("float", t, r))
            r = self.news(op.results[0])
            self.emit("sld", r, p.reg, dtype)
            return self.define(op, Val("int", t, r))
        shape = p.shape
        r = self.newv(op.results[0])
        mask = self._mask(op.operands[1], op, shape) if len(op.operands) > 1 else None
        off = self._offsets(p, shape)
        if t.elem == "i64":
            # Lanes are int32: the low words (an index, as Inductor loads them).
            off, dtype = self._words_of_i64(off, shape)[0], "i32"
        if mask == "never":
            self.vemit(shape, "vsplati", r, "0")
        elif mask is None:
            self.vemit(shape, "vld", r, p.reg, off, dtype)
        else:
            self.vemit(shape, "vld", r, p.reg, off, dtype, mask)
        if mask is not None and len(op.operands) > 2:
            other = self.val(op.operands[2], op)
            if not (other.kind == "const" and other.value == 0):
                oreg = self.vreg(op.operands[2], op, shape)
                if mask == "never":
                    self.vemit(shape, "vmov", r, oreg)
                else:
                    self.vemit(shape, "vsel", r, r, oreg, mask)
        self.define(op, Val("tensor", t, r, shape=shape))

    def op_tt_store(self, op):
        p = self.val(op.operands[0], op)
        elem = p.type.elem
        dtype = _MEM_DTYPE.get(elem)
        if dtype is None:
            self.err("stores of %s are not supported" % elem, op)
        if p.kind == "int":
            if elem == "i64":
                self.err("scalar stores of i64 are not supported (tensors of i64 are)", op)
            if len(op.operands) > 2:
                self.err("masked scalar stores are not supported", op)
            v = self.val(op.operands[1], op)
            if v.kind == "int" or (v.kind == "const" and not v.type.is_float):
                self.emit("sst", self.sreg(op.operands[1], op), p.reg, dtype)
            else:
                self.vemit((1, 1), "vst", self.vreg(op.operands[1], op, (1, 1)), p.reg, "unit", dtype)
            return
        shape = p.shape
        data = self.vreg(op.operands[1], op, shape)
        mask = self._mask(op.operands[2], op, shape) if len(op.operands) > 2 else None
        off = self._offsets(p, shape)
        if mask == "never":
            return
        if elem == "i64":
            # The int32 lanes sign-extended: the low words, then the high ones.
            lo, hi = self._words_of_i64(off, shape)
            sign = self.newv("31")
            self.vemit(shape, "vsplati", sign, "31")
            self.vemit(shape, "vsra", sign, data, sign)
            for word, o in ((data, lo), (sign, hi)):
                self.vemit(shape, "vst", word, p.reg, o, "i32", *([mask] if mask is not None else []))
            return
        if mask is None:
            self.vemit(shape, "vst", data, p.reg, off, dtype)
        else:
            self.vemit(shape, "vst", data, p.reg, off, dtype, mask)

    # ---- arithmetic ----
    def _shape_of(self, op):
        t = op.result_types[0]
        return lanes_shape(t, op.loc) if t.is_tensor else (1, 1)

    def fbin(self, op, mnem):
        shape = self._shape_of(op)
        a = self.vreg(op.operands[0], op, shape)
        b = self.vreg(op.operands[1], op, shape)
        r = self.newv(op.results[0])
        self.vemit(shape, mnem, r, a, b)
        t = op.result_types[0]
        self.define(op, Val("tensor" if t.is_tensor else "float", t, r, shape=shape))

    def ibin(self, op):
        t = op.result_types[0]
        if not t.is_tensor:
            imm = self._imm_form(op)
            if imm is not None:
                mnem, x, value = imm
                r = self.news(op.results[0])
                self.emit(mnem, r, self.sreg(x, op), str(value))
                return self.define(op, Val("int", t, r))
            a = self.sreg(op.operands[0], op)
            b = self.sreg(op.operands[1], op)
            r = self.news(op.results[0])
            if op.name == "arith.shrui" and t.elem == "i32":
                # An i32 is held sign-extended: zero-extend it before a logical shift.
                k = self.news("32")
                self.emit("li", k, "32")
                self.emit("shl", r, a, k)
                self.emit("shr", r, r, k)
                a = r
            self.emit(_IBIN_S[op.name], r, a, b)
            return self.define(op, Val("int", t, r))
        shape = lanes_shape(t, op.loc)
        a = self.vreg(op.operands[0], op, shape)
        b = self.vreg(op.operands[1], op, shape)
        r = self.newv(op.results[0])
        self.vemit(shape, _IBIN_V[op.name], r, a, b)
        self.define(op, Val("tensor", t, r, shape=shape))

    def _imm_form(self, op):
        """(ADDI or MULI, the register operand, the immediate) for a scalar
        add, subtract or multiply by a constant that fits 32 bits."""
        if op.name not in ("arith.addi", "arith.subi", "arith.muli"):
            return None
        a, b = (self.val(x, op) for x in op.operands)
        x, c = None, None
        if b.kind == "const":
            x, c = op.operands[0], b.value
        elif a.kind == "const" and op.name != "arith.subi":
            x, c = op.operands[1], a.value
        if x is None:
            return None
        if op.name == "arith.subi":
            c = -c
        if not -(1 << 31) <= c < (1 << 31):
            return None
        return ("muli" if op.name == "arith.muli" else "addi"), x, c

    def op_tt_mulhiui(self, op):
        """The high 32 bits of the unsigned 64-bit product (Philox in tl.rand)."""
        t = op.result_types[0]
        if t.elem != "i32":
            self.err("tt.mulhiui of %s is not supported" % t.elem, op)
        if not t.is_tensor:
            a = self.sreg(op.operands[0], op)
            b = self.sreg(op.operands[1], op)
            k = self.news("32")
            x = self.news(op.results[0])
            y = self.news(op.results[0])
            self.emit("li", k, "32")
            for reg, src in ((x, a), (y, b)):          # zero-extend
                self.emit("shl", reg, src, k)
                self.emit("shr", reg, reg, k)
            self.emit("mul", x, x, y)
            self.emit("shr", x, x, k)
            self.emit("shl", x, x, k)                 # back to a sign-extended i32
            self.emit("sra", x, x, k)
            return self.define(op, Val("int", t, x))
        # Lanes are 32 bits: the product from 16-bit halves, each partial
        # product exact in 32 bits, summed modulo 2^32 (the result fits).
        shape = lanes_shape(t, op.loc)
        a = self.vreg(op.operands[0], op, shape)
        b = self.vreg(op.operands[1], op, shape)
        sixteen, low = self.newv("16"), self.newv("0xffff")
        self.vemit(shape, "vsplati", sixteen, "16")
        self.vemit(shape, "vsplati", low, "0xffff")
        ah, al, bh, bl = (self.newv(op.results[0]) for _ in range(4))
        self.vemit(shape, "vshr", ah, a, sixteen)
        self.vemit(shape, "vand", al, a, low)
        self.vemit(shape, "vshr", bh, b, sixteen)
        self.vemit(shape, "vand", bl, b, low)
        hi, m1, m2, lo = (self.newv(op.results[0]) for _ in range(4))
        self.vemit(shape, "vimul", hi, ah, bh)
        self.vemit(shape, "vimul", m1, ah, bl)
        self.vemit(shape, "vimul", m2, al, bh)
        self.vemit(shape, "vimul", lo, al, bl)
        carry = self.newv(op.results[0])
        self.vemit(shape, "vshr", lo, lo, sixteen)            # (al bl) >> 16
        self.vemit(shape, "vand", carry, m1, low)
        self.vemit(shape, "viadd", lo, lo, carry)
        self.vemit(shape, "vand", carry, m2, low)
        self.vemit(shape, "viadd", lo, lo, carry)
        self.vemit(shape, "vshr", lo, lo, sixteen)            # the carry into bit 32
        self.vemit(shape, "vshr", m1, m1, sixteen)
        self.vemit(shape, "vshr", m2, m2, sixteen)
        self.vemit(shape, "viadd", hi, hi, m1)
        self.vemit(shape, "viadd", hi, hi, m2)
        self.vemit(shape, "viadd", hi, hi, lo)
        self.define(op, Val("tensor", t, hi, shape=shape))

    def funary(self, op, mnem):
        shape = self._shape_of(op)
        a = self.vreg(op.operands[0], op, shape)
        r = self.newv(op.results[0])
        self.vemit(shape, mnem, r, a)
        t = op.result_types[0]
        self.define(op, Val("tensor" if t.is_tensor else "float", t, r, shape=shape))

    def op_tt_extern_elementwise(self, op):
        sym = re.search(r'symbol = "([^"]*)"', op.attrs)
        mnem = EXTERN_FUNCS.get(sym.group(1)) if sym else None
        if mnem is None or len(op.operands) != 1:
            self.err("extern function %s is not supported by the maia backend (only the backend's libdevice)" %
                     (sym.group(1) if sym else "?"), op)
        self.funary(op, mnem)

    def op_math_fma(self, op):
        shape = self._shape_of(op)
        a, b, c = (self.vreg(x, op, shape) for x in op.operands)
        r = self.newv(op.results[0])
        self.vemit(shape, "vfma", r, a, b, c)
        t = op.result_types[0]
        self.define(op, Val("tensor" if t.is_tensor else "float", t, r, shape=shape))

    def op_arith_cmpi(self, op):
        pred = op.attrs.strip().split(",")[0].strip()
        cond = _ICMP.get(pred)
        if cond is None:
            self.err("arith.cmpi %s is not supported" % pred, op)
        t = op.result_types[0]
        if not t.is_tensor:
            a = self.sreg(op.operands[0], op)
            b = self.sreg(op.operands[1], op)
            r = self.news(op.results[0])
            self.emit("scmp", r, a, b, cond)
            return self.define(op, Val("int", t, r))
        shape = lanes_shape(t, op.loc)
        a = self.vreg(op.operands[0], op, shape)
        b = self.vreg(op.operands[1], op, shape)
        r = self.newv(op.results[0])
        self.vemit(shape, "vicmp", r, a, b, cond)
        self.define(op, Val("tensor", t, r, shape=shape))

    def op_arith_cmpf(self, op):
        pred = op.attrs.strip().split(",")[0].strip()
        m = _FCMP.get(pred)
        if m is None:
            self.err("arith.cmpf %s is not supported" % pred, op)
        cond, negate = m
        t = op.result_types[0]
        shape = self._shape_of(op)
        a = self.vreg(op.operands[0], op, shape)
        b = self.vreg(op.operands[1], op, shape)
        r = self.newv(op.results[0])
        self.vemit(shape, "vfcmp", r, a, b, cond)
        if negate:
            one = self.newv("1")
            self.vemit(shape, "vsplati", one, "1")
            self.vemit(shape, "vxor", r, r, one)
        if not t.is_tensor:
            s = self.news(op.results[0])
            self.emit("vext", s, r, "0")
            return self.define(op, Val("int", t, s))
        self.define(op, Val("tensor", t, r, shape=shape))

    def op_arith_select(self, op):
        t = op.result_types[0]
        c = self.val(op.operands[0], op)
        if not t.is_tensor and not t.is_float:
            cs = self.sreg(op.operands[0], op)
            a = self.sreg(op.operands[1], op)
            b = self.sreg(op.operands[2], op)
            r = self.news(op.results[0])
            # r = b + c * (a - b), c being 0 or 1
            self.emit("sub", r, a, b)
            self.emit("mul", r, r, cs)
            self.emit("add", r, r, b)
            return self.define(op, Val("int", t, r))
        shape = self._shape_of(op)
        if c.kind == "const":
            v = self.val(op.operands[1 if c.value else 2], op)
            return self.define(op, v)
        cv = self._mask(op.operands[0], op, shape)
        a = self.vreg(op.operands[1], op, shape)
        b = self.vreg(op.operands[2], op, shape)
        r = self.newv(op.results[0])
        self.vemit(shape, "vsel", r, a, b, cv)
        self.define(op, Val("tensor" if t.is_tensor else "float", t, r, shape=shape))

    def _cvt(self, op, how):
        t = op.result_types[0]
        src = self.val(op.operands[0], op)
        shape = self._shape_of(op)
        r = self.newv(op.results[0])
        if src.kind == "int":
            self.vemit(shape, "vsplat", r, src.reg)
            self.vemit(shape, "vcvt", r, r, how)
        else:
            self.vemit(shape, "vcvt", r, self.vreg(op.operands[0], op, shape), how)
        if not t.is_tensor and not t.is_float:
            s = self.news(op.results[0])
            self.emit("vext", s, r, "0")
            return self.define(op, Val("int", t, s))
        self.define(op, Val("tensor" if t.is_tensor else "float", t, r, shape=shape))

    def op_arith_sitofp(self, op):
        self._cvt(op, "i2f")

    def op_arith_uitofp(self, op):
        self._cvt(op, "u2f")

    def op_arith_fptosi(self, op):
        self._cvt(op, "f2i")

    def op_arith_truncf(self, op):
        elem = op.result_types[0].elem
        how = {"f16": "fp16", "bf16": "bf16", "f8E4M3FN": "fp8e4m3", "f8E5M2": "fp8e5m2"}.get(elem)
        if how is None:
            self.err("arith.truncf to %s is not supported" % elem, op)
        self._cvt(op, how)

    def op_tt_fp_to_fp(self, op):
        t = op.result_types[0]
        if t.elem == "f32":
            return self.alias(op)
        self.op_arith_truncf(op)

    # ---- reductions and matrix multiply ----
    def op_tt_reduce(self, op):
        body = [o for o in op.regions[0] if o.name != "tt.reduce.return"]
        v = self.val(op.operands[0], op)
        rank = len(v.type.shape)
        # A 1-D tensor is one row: reducing it is a reduction along lanes' axis 1.
        axis = 1 if rank == 1 else op.axis
        if len(op.operands) != 1 or len(body) != 1 or sorted(body[0].operands) != sorted(op.block_args):
            return self._tree_reduce_region(op, axis)
        combine = body[0].name
        if v.type.is_float and combine in _REDUCE:
            src = self.vreg(op.operands[0], op)
            r = self.newv(op.results[0])
            self.vemit(v.shape, _REDUCE[combine], r, src, str(axis))
            return self._reduced(op, r)
        mnem = _FBIN.get(combine) if v.type.is_float else _IBIN_V.get(combine)
        if mnem is None:
            return self._tree_reduce_region(op, axis)
        self._tree_reduce(op, mnem, v, axis)

    def _tree_reduce_region(self, op, axis):
        """Any combine region (argmax's compares and selects, several operands):
        the tree of _tree_reduce, each step running the region's ops on whole
        tensors (operand k in scratch slot k)."""
        n = len(op.operands)
        vals, xs, shape = self._region_rows(op, "tt.reduce", axis)
        rows, cols = shape
        if len(op.block_args) != 2 * n:
            self.err("tt.reduce: a combine region of %d arguments for %d operands" % (len(op.block_args), n), op)
        ret = [o for o in op.regions[0] if o.name == "tt.reduce.return"]
        if not ret or len(ret[0].operands) != n:
            self.err("tt.reduce: its region returns %s values for %d operands" %
                     (len(ret[0].operands) if ret else "no", n), op)
        region, addrs, col = self._region_setup(op, ret[0], shape)
        half = cols // 2
        while half >= 1:
            off, h, m = self.newv("offsets"), self.newv("%d" % half), self.newv("mask")
            self.vemit(shape, "viota", off, str(half))
            self.vemit(shape, "vsplati", h, str(half))
            self.vemit(shape, "vicmp", m, col, h, "lt")
            ys = self._region_shifted(op, xs, addrs, shape, off, m)
            self._region_run(op, region, vals, shape, xs, ys)
            xs = [self.vreg(x, ret[0], shape) for x in ret[0].operands]
            half //= 2
        for k, (x, a) in enumerate(zip(xs, addrs)):
            if rows > 1:
                offs, c, r = self.newv("row starts"), self.newv("%d" % cols), self.newv(op.results[k])
                self.vemit(shape, "vst", x, a, "unit", "i32")
                self.vemit((1, rows), "viota", offs, "0")
                self.vemit((1, rows), "vsplati", c, str(cols))
                self.vemit((1, rows), "vimul", offs, offs, c)
                self.vemit((1, rows), "vld", r, a, offs, "i32")
                x = r
            self._reduced(op, x, k)

    def op_tt_scan(self, op):
        """tl.associative_scan, tl.cumsum, tl.cumprod (Inductor's cumsum,
        cumprod, cummax with its indices) along a row or a column of a
        tensor in one register: Hillis and Steele's log2(n) steps. Step d
        (1, 2, 4, ...) stores each operand to its scratch slot, loads it back
        d lanes earlier in its row (masked where the row has no element d
        before), runs the combine region on whole tensors with the earlier
        elements as its left arguments, and keeps the old value where the
        load was masked. reverse=True: d lanes later, the later elements
        left (Triton's: the scan of the flipped row, flipped back). Along
        axis 0 transposed first and back after."""
        n = len(op.operands)
        axis = 1 if len(self.val(op.operands[0], op).type.shape) == 1 else op.axis
        vals, xs, shape = self._region_rows(op, "tt.scan", axis)
        rows, cols = shape
        ret = [o for o in op.regions[0] if o.name == "tt.scan.return"]
        if len(op.block_args) != 2 * n or not ret or len(ret[0].operands) != n:
            self.err("tt.scan: a combine region of %d arguments returning %s values for %d operands" %
                     (len(op.block_args), len(ret[0].operands) if ret else "no", n), op)
        region, addrs, col = self._region_setup(op, ret[0], shape)
        d = 1
        while d < cols:
            off, dv, m = self.newv("offsets"), self.newv("limit"), self.newv("has an element %d away" % d)
            if op.reverse:
                self.vemit(shape, "viota", off, str(d))
                self.vemit(shape, "vsplati", dv, str(cols - d))
                self.vemit(shape, "vicmp", m, col, dv, "lt")
            else:
                self.vemit(shape, "viota", off, str(-d))
                self.vemit(shape, "vsplati", dv, str(d))
                self.vemit(shape, "vicmp", m, col, dv, "ge")
            ys = self._region_shifted(op, xs, addrs, shape, off, m)
            self._region_run(op, region, vals, shape, ys, xs)
            new = []
            for x, r in zip(xs, ret[0].operands):
                nx = self.newv(op.results[0])
                self.vemit(shape, "vsel", nx, self.vreg(r, ret[0], shape), x, m)
                new.append(nx)
            xs = new
            d *= 2
        for k, x in enumerate(xs):
            if axis == 0:
                t = self.newv(op.results[k])
                self.vemit(shape, "vtrans", t, x)
                x = t
            self.define(op, Val("tensor", op.result_types[k], x, shape=lanes_shape(op.result_types[k], op.loc)), k)

    def _region_rows(self, op, what, axis):
        """A reduce's or scan's operands (their values and registers) as rows
        to combine along: transposed first when axis is 0. Returns the
        values, the registers and the (rows, cols) shape, cols a power of two."""
        vals = [self.val(x, op) for x in op.operands]
        xs = [self.vreg(x, op) for x in op.operands]
        rows, cols = vals[0].shape
        if axis == 0:
            t = [self.newv(op.results[0]) for _ in xs]
            for d, x in zip(t, xs):
                self.vemit((rows, cols), "vtrans", d, x)
            xs, rows, cols = t, cols, rows
        if cols & (cols - 1):
            self.err("%s over %d elements (a power of two is needed here)" % (what, cols), op)
        return vals, xs, (rows, cols)

    def _region_setup(self, op, ret, shape):
        """For a combine region run on whole tensors of shape: its ops (all
        but ret) with their scalar types made tensors, one scratch slot
        address per operand (operand k in slot k), and each lane's column."""
        rows, cols = shape
        n = len(op.operands)
        region = []
        for o in op.regions[0]:
            if o is ret:
                continue
            c = copy.copy(o)
            c.result_types = [self._whole(t, shape) for t in o.result_types]
            region.append(c)
        self.fixed_slots = max(self.fixed_slots, n)
        addrs = [SCRATCH_BASE]
        for k in range(1, n):
            a = self.news("slot %d" % k)
            self.emit("addi", a, SCRATCH_BASE, str(k * SLOT_BYTES))
            addrs.append(a)
        col, mask_k = self.newv("column"), self.newv("%d" % (cols - 1))
        self.vemit(shape, "viota", col, "0")
        self.vemit(shape, "vsplati", mask_k, str(cols - 1))
        self.vemit(shape, "vand", col, col, mask_k)
        return region, addrs, col

    def _region_shifted(self, op, xs, addrs, shape, off, m):
        """Each operand stored to its scratch slot and loaded back at the
        lane offsets off where the mask m is set: the other side of a step."""
        ys = []
        for x, a in zip(xs, addrs):
            y = self.newv(op.results[0])
            self.vemit(shape, "vst", x, a, "unit", "i32")
            self.vemit(shape, "vld", y, a, off, "i32", m)
            ys.append(y)
        return ys

    @staticmethod
    def _whole(t, shape):
        # A region's scalar type as a tensor of the combined shape.
        return ttir.Type("tensor<%dx%dx%s>" % (shape[0], shape[1], t.elem))

    def _region_run(self, op, region, vals, shape, lefts, rights):
        """Runs the combine region once on whole tensors: its first n
        arguments bound to lefts, the next n to rights."""
        n = len(lefts)
        for k in range(n):
            t = self._whole(vals[k].type, shape)
            self.vals[op.block_args[k]] = Val("tensor", t, lefts[k], shape=shape)
            self.vals[op.block_args[n + k]] = Val("tensor", t, rights[k], shape=shape)
        for c in region:
            self.loc = op.loc
            self.lower(c)

    def _reduced(self, op, r, i=0):
        t = op.result_types[i]
        if t.is_tensor:
            return self.define(op, Val("tensor", t, r, shape=lanes_shape(t, op.loc)), i)
        if t.is_float:
            return self.define(op, Val("float", t, r), i)
        s = self.news(op.results[i])
        self.emit("vext", s, r, "0")
        self.define(op, Val("int", t, s), i)

    def _tree_reduce(self, op, mnem, v, axis):
        """Reduction through the instance's scratch slot (no VRED for integers or
        other combine ops): log2(n) steps of store, load shifted by half, combine."""
        src = self.vreg(op.operands[0], op)
        rows, cols = v.shape
        if axis == 0:
            t = self.newv(op.results[0])
            self.vemit((rows, cols), "vtrans", t, src)
            src, rows, cols = t, cols, rows
        if cols & (cols - 1):
            self.err("tt.reduce over %d elements (a power of two is needed here)" % cols, op)
        shape = (rows, cols)
        self.fixed_slots = 1
        x = self.newv(op.results[0])
        self.vemit(shape, "vmov", x, src)
        col, k = self.newv("column"), self.newv("%d" % (cols - 1))
        self.vemit(shape, "viota", col, "0")
        self.vemit(shape, "vsplati", k, str(cols - 1))
        self.vemit(shape, "vand", col, col, k)
        half = cols // 2
        while half >= 1:
            off, h, m, y, nx = (self.newv(op.results[0]) for _ in range(5))
            self.vemit(shape, "vst", x, SCRATCH_BASE, "unit", "i32")
            self.vemit(shape, "viota", off, str(half))
            self.vemit(shape, "vsplati", h, str(half))
            self.vemit(shape, "vicmp", m, col, h, "lt")
            self.vemit(shape, "vld", y, SCRATCH_BASE, off, "i32", m)
            self.vemit(shape, mnem, nx, x, y)
            x = nx
            half //= 2
        if rows > 1:
            # Row r's result is in lane r * cols: gather them into lanes 0 .. rows - 1.
            offs, c, r = self.newv("row starts"), self.newv("%d" % cols), self.newv(op.results[0])
            self.vemit(shape, "vst", x, SCRATCH_BASE, "unit", "i32")
            self.vemit((1, rows), "viota", offs, "0")
            self.vemit((1, rows), "vsplati", c, str(cols))
            self.vemit((1, rows), "vimul", offs, offs, c)
            self.vemit((1, rows), "vld", r, SCRATCH_BASE, offs, "i32")
            x = r
        self._reduced(op, x)

    def op_tt_dot(self, op):
        t = op.result_types[0]
        shape = lanes_shape(t, op.loc)
        a = self.val(op.operands[0], op)
        k = a.type.shape[1]
        if not a.type.is_float:
            self.err("tt.dot of %s is not supported (floats only)" % a.type.elem, op)
        ra = self.vreg(op.operands[0], op)
        rb = self.vreg(op.operands[1], op)
        rc = self.vreg(op.operands[2], op, shape)
        r = self.newv(op.results[0])
        self.vemit(shape, "vmov", r, rc)
        self.vemit(shape, "vdot", r, ra, rb, str(k))
        self.define(op, Val("tensor", t, r, shape=shape))

    # ---- control flow ----
    def _fresh_like(self, t, hint):
        """Registers for a loop-carried or if-result value of type t."""
        if t.ptr and t.is_tensor:
            return Val("ptrs", t, self.news(hint), self.newv(hint), lanes_shape(t, self.loc))
        if t.ptr or not t.is_float and not t.is_tensor:
            return Val("int", t, self.news(hint))
        if t.is_tensor:
            return Val("tensor", t, self.newv(hint), shape=lanes_shape(t, self.loc))
        return Val("float", t, self.newv(hint))

    def _parallel_copy(self, dsts, names, op):
        """dsts (loop-carried or if-result registers) = the values named:
        component moves, identities dropped, a source that another move
        overwrites read through a temporary first."""
        moves = []      # (kind "s" | "v", shape, dst reg, src reg or None, constant Val or None)
        for d, n in zip(dsts, names):
            s = self.val(n, op)
            if s.kind == "const":
                moves.append((d, None, s))
            elif d.kind == "ptrs":
                moves.append((Val("int", d.type, d.reg), s.reg, None))
                moves.append((Val("tensor", d.type, d.off, shape=d.shape), s.off, "zero" if s.off is None else None))
            else:
                moves.append((d, s.reg, None))
        moves = [m for m in moves if m[1] is None or m[1] is not m[0].reg]
        written = {id(m[0].reg) for m in moves}
        staged = []
        for d, src, c in moves:
            if src is not None and id(src) in written:
                tmp = self.news(d.reg.hint) if d.kind == "int" else self.newv(d.reg.hint)
                self._move(d, tmp, src, None)
                src = tmp
            staged.append((d, src, c))
        for d, src, c in staged:
            self._move(d, d.reg, src, c)

    def _move(self, d, dst, src, c):
        if d.kind == "int":
            if c is not None:
                self.load_int(dst, c.value)
            else:
                self.emit("add", dst, src, S0)
        elif c is not None:
            self.vemit(d.shape, "vsplati", dst, "0" if c == "zero" else self.const_bits(c))
        else:
            self.vemit(d.shape, "vmov", dst, src)

    def op_scf_for(self, op):
        lb, ub, step = op.operands
        iv = self.news(op.iv)
        ivt = ttir.Type("i32")
        # ub and step are read at every iteration: registers, not constants.
        ubr = self.sreg(ub, op)
        str_ = self.sreg(step, op)
        self._parallel_copy([Val("int", ivt, iv)], [lb], op)
        carried = [self._fresh_like(t, arg) for (arg, _), t in zip(op.iter_args, op.result_types)]
        self._parallel_copy(carried, [init for _, init in op.iter_args], op)
        for (arg, _), d in zip(op.iter_args, carried):
            self.vals[arg] = d
        self.vals[op.iv] = Val("int", ivt, iv)
        head, end = self.p.label("for"), self.p.label("endfor")
        self.place(head)
        head_pos = len(self.p.items)
        self.emit("bge", iv, ubr, end)
        self.block(op.regions[0])
        self.loc = op.loc
        y = [o for o in op.regions[0] if o.name == "scf.yield"]
        if carried:
            self._parallel_copy(carried, y[-1].operands, y[-1])
        self.emit("add", iv, iv, str_)
        self.emit("jmp", head)
        self.p.loops.append((head_pos, len(self.p.items) - 1))
        self.place(end)
        for i, d in enumerate(carried):
            self.define(op, d, i)

    def op_scf_while(self, op):
        """before region (ends in scf.condition(c) fwd...), then, while c, the after
        region on the forwarded values, its yield feeding the before region again."""
        carried = [self._fresh_like(t, arg) for (arg, _), t in zip(op.iter_args, op.arg_types)]
        self._parallel_copy(carried, [init for _, init in op.iter_args], op)
        for (arg, _), d in zip(op.iter_args, carried):
            self.vals[arg] = d
        fwd = [self._fresh_like(t, "while%d" % i) for i, t in enumerate(op.result_types)]
        head, end = self.p.label("while"), self.p.label("endwhile")
        self.place(head)
        head_pos = len(self.p.items)
        before, after = op.regions
        self.block(before)
        self.loc = op.loc
        cond = [o for o in before if o.name == "scf.condition"]
        if not cond:
            self.err("scf.while without scf.condition", op)
        c = self.sreg(cond[-1].operands[0], cond[-1])
        if fwd:
            self._parallel_copy(fwd, cond[-1].operands[1:], cond[-1])
        self.emit("beqz", c, end)
        for a, d in zip(op.after_args, fwd):
            self.vals[a] = d
        self.block(after)
        self.loc = op.loc
        y = [o for o in after if o.name == "scf.yield"]
        if carried:
            self._parallel_copy(carried, y[-1].operands, y[-1])
        self.emit("jmp", head)
        self.p.loops.append((head_pos, len(self.p.items) - 1))
        self.place(end)
        for i, d in enumerate(fwd):
            self.define(op, d, i)

    # ---- atomics (int32 words: AMOADD, AMOXCHG, AMOCAS; sequentially consistent,
    # so every sem/scope Triton asks for holds) ----
    def _atomic_ptr(self, op, what):
        p = self.val(op.operands[0], op)
        if p.kind != "int":
            self.err("%s on a tensor of pointers is not supported (of block atomics only add, "
                     "f32 and i32)" % what, op)
        if p.type.elem not in ("i32", "f32"):
            self.err("%s on %s: the TVP's atomics work on 32-bit words" % (what, p.type.elem), op)
        return p

    def op_tt_atomic_cas(self, op):
        p = self._atomic_ptr(op, "tt.atomic_cas")
        if p.type.elem != "i32":
            self.err("tt.atomic_cas on f32 is not supported (int32 only)", op)
        r = self.news(op.results[0])
        self.emit("add", r, self.sreg(op.operands[1], op), S0)     # the expected value
        self.emit("amocas", r, p.reg, self.sreg(op.operands[2], op))
        self.define(op, Val("int", op.result_types[0], r))

    _RMW_S = {"and": "and", "or": "or", "xor": "xor", "max": "max", "min": "min"}

    def op_tt_atomic_rmw(self, op):
        kind = op.attrs.strip().split(",")[0].strip()
        p = self.val(op.operands[0], op)
        if p.kind == "ptrs" and kind in ("add", "fadd") and p.type.elem in ("i32", "f32"):
            return self._vamoadd(op, p)
        p = self._atomic_ptr(op, "tt.atomic_rmw %s" % kind)
        is_f = p.type.elem == "f32"
        if is_f and kind not in ("fadd", "exch"):
            self.err("tt.atomic_rmw %s on f32 is not supported" % kind, op)
        if not is_f and kind not in ("exch", "add") and kind not in self._RMW_S:
            self.err("tt.atomic_rmw %s is not supported" % kind, op)
        skip = None
        if len(op.operands) > 2:
            m = self.val(op.operands[2], op)
            if m.kind == "const" and not m.value:
                return self.define(op, Val("const", op.result_types[0], value=0))
            if m.kind != "const":
                skip = self.p.label("nomask")
                self.emit("beqz", self.sreg(op.operands[2], op), skip)
        if is_f:
            vv = self.vreg(op.operands[1], op, (1, 1))
            if kind == "exch":
                val = self.news("bits")
                self.vemit((1, 1), "vext", val, vv, "0")
        else:
            val = self.sreg(op.operands[1], op)
        old = self.news(op.results[0])
        if kind == "exch":
            self.emit("amoxchg", old, p.reg, val)
        elif kind == "add":
            self.emit("amoadd", old, p.reg, val)
        else:
            # a CAS loop: new = old op v, retried while another instance got in between
            new, seen = self.news("new"), self.news("seen")
            retry = self.p.label("rmw")
            self.emit("sld", old, p.reg, "i32")
            self.place(retry)
            pos = len(self.p.items)
            if is_f:
                t = self.newv("sum")
                self.vemit((1, 1), "vsplat", t, old)
                self.vemit((1, 1), "vfadd", t, t, vv)
                self.vemit((1, 1), "vext", new, t, "0")
            else:
                self.emit(self._RMW_S[kind], new, old, val)
            self.emit("add", seen, old, S0)
            self.emit("amocas", seen, p.reg, new)
            self.emit("scmp", new, seen, old, "ne")
            self.emit("add", old, seen, S0)
            self.emit("bnez", new, retry)
            self.p.loops.append((pos, len(self.p.items) - 1))
        if skip is not None:
            self.place(skip)
        if is_f:
            r = self.newv(op.results[0])
            self.vemit((1, 1), "vsplat", r, old)
            return self.define(op, Val("float", op.result_types[0], r))
        self.define(op, Val("int", op.result_types[0], old))

    def _vamoadd(self, op, p):
        """tl.atomic_add on a block: VAMOADD, one atomic add per active lane, the old
        values back in the register that held the addends."""
        shape = p.shape
        t = op.result_types[0]
        r = self.newv(op.results[0])
        mask = self._mask(op.operands[2], op, shape) if len(op.operands) > 2 else None
        if mask == "never":
            self.vemit(shape, "vsplati", r, "0")
            return self.define(op, Val("tensor", t, r, shape=shape))
        self.vemit(shape, "vmov", r, self.vreg(op.operands[1], op, shape))
        off = self._offsets(p, shape)
        dtype = _MEM_DTYPE[p.type.elem]
        if mask is None:
            self.vemit(shape, "vamoadd", r, p.reg, off, dtype)
        else:
            self.vemit(shape, "vamoadd", r, p.reg, off, dtype, mask)
        self.define(op, Val("tensor", t, r, shape=shape))

    def op_scf_if(self, op):
        c = self.sreg(op.operands[0], op)
        results = [self._fresh_like(t, op.results[i]) for i, t in enumerate(op.result_types)]
        els, end = self.p.label("else"), self.p.label("endif")
        self.emit("beqz", c, els)
        for region, last in ((op.regions[0], False), (op.regions[1], True)):
            self.block(region)
            self.loc = op.loc
            y = [o for o in region if o.name == "scf.yield"]
            if results:
                self._parallel_copy(results, y[-1].operands, y[-1])
            if not last:
                self.emit("jmp", end)
                self.place(els)
        self.place(end)
        for i, d in enumerate(results):
            self.define(op, d, i)


def lower_module(text, func_name=None):
    """TTIR text (with locations) -> (assembly text, KernelInfo)."""
    try:
        func = ttir.parse(text, func_name)
    except ttir.TTIRError as e:
        raise LoweringError(str(e)) from None
    low = Lowering(func)
    prog = low.run()
    header = "# %s: Triton kernel compiled by the maia backend (lowering %s)\n" % (func.name, VERSION)
    if low.scratch:
        header += "# scratch: %d bytes per program instance at the address in s%d\n" % (low.scratch,
                                                                                       len(func.args) + 1)
    return header + prog.text(), KernelInfo(func.name, len(func.args), prog.num_insns(), low.scratch)
