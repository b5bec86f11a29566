"""A reader of TTIR in MLIR's printed form (what ir.module.str() gives after
the TTIR passes): operations with their results, operands, attributes text,
types, regions and source locations. It knows the printed syntax of the ops
the lowering supports; any other op is kept by name so that the lowering can
refuse it with its source line."""

import re


class TTIRError(Exception):
    pass


class Type:
    """An MLIR type: a scalar (i1, i32, i64, f16, bf16, f32, ...), a
    pointer (!tt.ptr<elem>) or a ranked tensor of either."""

    def __init__(self, text):
        self.text = text = text.strip()
        self.shape = None
        self.ptr = False
        m = re.fullmatch(r"tensor<(.*)>", text)
        if m:
            body = m.group(1)
            dims = []
            while True:
                d = re.match(r"(\d+)x", body)
                if not d:
                    break
                dims.append(int(d.group(1)))
                body = body[d.end():]
            self.shape = tuple(dims)
            text = body
        m = re.fullmatch(r"!tt\.ptr<([^,>]+)(?:,\s*\d+)?>", text)
        if m:
            self.ptr = True
            text = m.group(1)
        self.elem = text

    @property
    def is_tensor(self):
        return self.shape is not None

    @property
    def is_float(self):
        return not self.ptr and (self.elem.startswith("f") or self.elem == "bf16")

    @property
    def numel(self):
        n = 1
        for d in self.shape or ():
            n *= d
        return n

    def __repr__(self):
        return self.text


class Op:
    def __init__(self, name, results, operands, attrs, types, loc, line):
        self.name = name
        self.results = results      # value names ("%x", "%y#1" for a multi-result op)
        self.operands = operands    # value names
        self.attrs = attrs          # the text between the operands and the types
        self.types = types          # the printed types after " : "
        self.result_types = []
        self.regions = []
        self.loc = loc
        self.line = line            # the printed line, for messages
        self.iter_args = []         # scf.for, scf.while: (block argument, init value)
        self.block_args = []        # tt.reduce: the combine region's arguments


_LOC_TAIL = re.compile(r"\s+loc\((#loc\d*|unknown|\"[^\"]*\"(?:\(#loc\d*\))?|callsite\([^)]*\))\)\s*$")
_VALUE = re.compile(r"%[A-Za-z0-9_.$-]+(?:#\d+)?")


def _split_top(text, sep=","):
    """Split at sep outside <>, (), [], {}."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == sep and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur)
    return [s.strip() for s in out]


class Locations:
    """#locN definitions, resolved to "file:line" strings (an inlined
    function's location says where the kernel called it)."""

    def __init__(self, lines):
        self.defs = {}
        for line in lines:
            m = re.match(r"(#loc\d*) = loc\((.*)\)\s*$", line)
            if m:
                self.defs[m.group(1)] = m.group(2)

    def frames(self, ref, depth=0):
        """The "file:line" frames of a location, the kernel's first."""
        if ref is None or depth > 50:
            return []
        text = self.defs.get(ref, ref) if ref.startswith("#loc") else ref
        m = re.fullmatch(r"\"([^\"]*)\":(\d+):(\d+)", text)
        if m:
            return ["%s:%s" % (m.group(1), m.group(2))]
        m = re.fullmatch(r"\"[^\"]*\"\((#loc\d*)\)", text)
        if m:
            return self.frames(m.group(1), depth + 1)
        m = re.fullmatch(r"callsite\((#loc\d*) at (#loc\d*)\)", text)
        if m:
            return self.frames(m.group(2), depth + 1) + self.frames(m.group(1), depth + 1)
        if text.startswith("#loc"):
            return self.frames(text, depth + 1)
        return []

    def resolve(self, ref):
        """The kernel's source line, and the lines of the user's @triton.jit
        functions inlined into it (Triton's own library frames left out)."""
        frames = self.frames(ref)
        if not frames:
            return None
        inner = [f for f in frames[1:] if "/triton/language/" not in f and f != frames[0]]
        return frames[0] + "".join(" (inlined from %s)" % f for f in inner)


class Function:
    def __init__(self, name, args, body, locs):
        self.name = name
        self.args = args      # [(name, Type)]
        self.body = body      # [Op]
        self.locs = locs


def _result_types(op):
    """The result types from the printed type text of one op."""
    t = op.types
    if op.name == "arith.constant" and t is None and op.attrs.strip() in ("true", "false"):
        return [Type("i1")]
    if not op.results or t is None:
        return []
    n = len(op.results)
    if op.name in ("tt.load",):
        pt = Type(_split_top(t)[0])
        return [Type("tensor<%s%s>" % ("".join("%dx" % d for d in pt.shape), pt.elem)) if pt.is_tensor
                else Type(pt.elem)]
    if op.name in ("tt.addptr",):
        return [Type(_split_top(t)[0])]
    if op.name in ("arith.cmpi", "arith.cmpf"):
        ot = Type(t)
        if ot.is_tensor:
            return [Type("tensor<%si1>" % "".join("%dx" % d for d in ot.shape))]
        return [Type("i1")]
    if "->" in t:
        rhs = t.rsplit("->", 1)[1].strip()
        if rhs.startswith("(") and rhs.endswith(")"):
            rhs = rhs[1:-1]
        return [Type(x) for x in _split_top(rhs)][:n]
    if " to " in t:
        return [Type(t.rsplit(" to ", 1)[1])]
    parts = _split_top(t)
    return [Type(parts[-1])] * n if n == 1 else [Type(p) for p in parts[-n:]]


class Parser:
    def __init__(self, text):
        self.lines = text.splitlines()
        self.locs = Locations(self.lines)
        self.pos = 0

    def parse(self, func_name=None):
        while self.pos < len(self.lines):
            line = self.lines[self.pos]
            m = re.match(r"\s*tt\.func (?:public |private )?@([\w$.]+)\((.*)\)(?: attributes \{.*\})? \{\s*$", line)
            self.pos += 1
            if not m or (func_name and m.group(1) != func_name):
                continue
            args = []
            for a in _split_top(m.group(2)):
                am = re.match(r"(%[\w.$-]+): (.*?)(?: \{[^}]*\})?(?: loc\(.*\))?$", a)
                if not am:
                    raise TTIRError("cannot read the kernel argument %r" % a)
                args.append((am.group(1), Type(am.group(2))))
            body = self.block()
            return Function(m.group(1), args, body, self.locs)
        raise TTIRError("no tt.func %s in the TTIR" % (func_name or ""))

    def block(self):
        """Ops up to the closing brace of the current region."""
        ops = []
        while self.pos < len(self.lines):
            raw = self.lines[self.pos]
            s = raw.strip()
            if s.startswith("}"):
                return ops
            self.pos += 1
            if not s or s.startswith("^bb"):
                continue
            ops.append(self.op(s))
        raise TTIRError("unterminated region in the TTIR")

    def op(self, s):
        line = s
        loc = None
        m = _LOC_TAIL.search(s)
        if m:
            loc = self.locs.resolve(m.group(1))
            s = s[:m.start()]
        results = []
        m = re.match(r"((?:%[\w.$-]+(?::\d+)?)(?:, %[\w.$-]+(?::\d+)?)*) = ", s)
        if m:
            for r in m.group(1).split(", "):
                if ":" in r:
                    name, count = r.split(":")
                    results += ["%s#%d" % (name, i) for i in range(int(count))]
                else:
                    results.append(r)
            s = s[m.end():]
        name_m = re.match(r"\"?([\w.]+)\"?", s)
        name = name_m.group(1)
        rest = s[name_m.end():]
        if name in ("tt.reduce", "tt.scan"):
            return self.reduce_op(results, rest, loc, line, name)
        if rest.endswith("{"):
            return self.region_op(name, results, rest, loc, line)
        types = None
        head = rest
        # " : " at the top level starts the types.
        idx = self._top_colon(rest)
        if idx is not None:
            head, types = rest[:idx], rest[idx + 3:]
        operands = _VALUE.findall(head)
        attrs = _VALUE.sub("", head)
        op = Op(name, results, operands, attrs, types, loc, line)
        op.result_types = _result_types(op)
        return op

    @staticmethod
    def _top_colon(text):
        depth = 0
        for i, ch in enumerate(text):
            if ch in "<([{":
                depth += 1
            elif ch in ">)]}":
                depth -= 1
            elif depth == 0 and text.startswith(" : ", i):
                return i
        return None

    def region_op(self, name, results, rest, loc, line):
        rest = rest[:-1].strip()
        if name == "scf.for":
            m = re.match(r"(%[\w.$-]+) = (%[\w.$#-]+) to (%[\w.$#-]+) step (%[\w.$#-]+)\s*"
                         r"(?:iter_args\((.*?)\) -> \((.*?)\))?\s*: (\w+)$", rest.strip())
            if not m:
                raise TTIRError("cannot read scf.for: %s" % line)
            op = Op(name, results, [m.group(2), m.group(3), m.group(4)], "", None, loc, line)
            op.iv = m.group(1)
            if m.group(5):
                for pair in _split_top(m.group(5)):
                    a, b = pair.split(" = ")
                    op.iter_args.append((a.strip(), b.strip()))
                op.result_types = [Type(x) for x in _split_top(m.group(6))]
            op.regions.append(self.block())
            self._close()
            return op
        if name == "scf.while":
            return self.while_op(results, rest, loc, line)
        if name == "scf.if":
            m = re.match(r"(%[\w.$#-]+)(?: -> \((.*)\))?$", rest.strip())
            if not m:
                raise TTIRError("cannot read scf.if: %s" % line)
            op = Op(name, results, [m.group(1)], "", None, loc, line)
            if m.group(2):
                op.result_types = [Type(x) for x in _split_top(m.group(2))]
            op.regions.append(self.block())
            closing = self.lines[self.pos].strip()
            self.pos += 1
            if closing.startswith("} else {"):
                op.regions.append(self.block())
                self._close()
            else:
                op.regions.append([])
                self._fix_loc(op, closing)
            return op
        # Any other op with a region: skip it, keep its name and location
        # (printed after the region) for the error.
        depth = 1
        s = ""
        while self.pos < len(self.lines) and depth:
            s = self.lines[self.pos].strip()
            depth += s.count("{") - s.count("}")
            self.pos += 1
        m = _LOC_TAIL.search(s)
        if m and loc is None:
            loc = self.locs.resolve(m.group(1))
        return Op(name, results, [], "", None, loc, line)

    def while_op(self, results, rest, loc, line):
        """scf.while (%a = %init, ...) : (types) -> (types) { before } do { ^bb0(args): after }:
        iter_args pairs the before region's arguments with their initial values,
        after_args names the after region's arguments, result_types the types
        scf.condition forwards (the after region's arguments and the results)."""
        m = re.match(r"(?:\((.*)\) )?: \((.*?)\) -> \(?(.*?)\)?$", rest.strip())
        if not m:
            raise TTIRError("cannot read scf.while: %s" % line)
        op = Op("scf.while", results, [], "", None, loc, line)
        if m.group(1):
            for pair in _split_top(m.group(1)):
                a, b = pair.split(" = ")
                op.iter_args.append((a.strip(), b.strip()))
        op.arg_types = [Type(x) for x in _split_top(m.group(2))]
        op.result_types = [Type(x) for x in _split_top(m.group(3))]
        op.regions.append(self.block())
        closing = self._close()
        if not closing.startswith("} do {"):
            raise TTIRError("scf.while without its do region: %s" % line)
        op.after_args = []
        if self.pos < len(self.lines) and self.lines[self.pos].strip().startswith("^bb"):
            op.after_args = re.findall(r"(%[\w.$-]+): ", self.lines[self.pos])
            self.pos += 1
        op.regions.append(self.block())
        self._fix_loc(op, self._close())
        return op

    def _close(self):
        closing = self.lines[self.pos].strip()
        self.pos += 1
        return closing

    def _fix_loc(self, op, closing):
        m = _LOC_TAIL.search(closing)
        if m and op.loc is None:
            op.loc = self.locs.resolve(m.group(1))

    def reduce_op(self, results, rest, loc, line, name="tt.reduce"):
        # "tt.reduce"(%x) <{axis = 0 : i32}> ({ ^bb0(%a: f32 ..., %b: f32 ...): ... });
        # "tt.scan"(%x) <{axis = 1 : i32, reverse = false}> ({ ... }) the same.
        operands = _VALUE.findall(rest.split("<{")[0])
        axis = re.search(r"axis = (\d+)", rest)
        reverse = re.search(r"reverse = true", rest) is not None
        bb = self.lines[self.pos].strip()
        self.pos += 1
        block_args = re.findall(r"(%[\w.$-]+): ", bb)
        region = self.block()
        closing = self._close()
        op = Op(name, results, operands, "axis = %s" % (axis.group(1) if axis else "?"), None, loc, line)
        op.axis = int(axis.group(1)) if axis else None
        op.reverse = reverse
        op.block_args = block_args
        op.regions.append(region)
        m = _LOC_TAIL.search(closing)
        if m:
            op.loc = self.locs.resolve(m.group(1)) or op.loc
            closing = closing[:m.start()]
        tm = re.search(r"\) : \((.*)\) -> (.*)$", closing)
        if tm:
            op.types = closing
            op.operand_types = [Type(x) for x in _split_top(tm.group(1))]
            rt = tm.group(2).strip()
            if rt.startswith("("):
                rt = rt[1:-1]
            op.result_types = [Type(x) for x in _split_top(rt)]
        return op


def parse(text, func_name=None):
    return Parser(text).parse(func_name)
