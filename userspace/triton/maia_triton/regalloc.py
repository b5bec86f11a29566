"""TVP assembly over virtual registers, and the linear-scan allocator that
maps them onto v0..v31 and s1..s31 (s0 reads as 0). A value live across a
loop is kept live to the loop's back edge. There is no spilling: a kernel
that needs more registers than the TVP has fails with a message naming the
source line where the pressure peaks."""


class LoweringError(Exception):
    """A kernel the backend cannot compile, with its source line."""


NUM_VREGS = 32
NUM_SREGS = 32


class VReg:
    __slots__ = ("kind", "num", "phys", "start", "end", "hint")

    def __init__(self, kind, num, phys=None):
        self.kind = kind        # "v" or "s"
        self.num = num
        self.phys = phys        # set by the allocator (or fixed: arguments, s0)
        self.start = None
        self.end = None
        self.hint = ""

    def __str__(self):
        if self.phys is None:
            return "%%%s%d" % (self.kind, self.num)
        return "%s%d" % (self.kind, self.phys)


# s0 reads as 0: the register of the constant 0.
S0 = VReg("s", -1, 0)


class Insn:
    __slots__ = ("mnem", "ops", "loc", "comment")

    def __init__(self, mnem, ops, loc, comment=None):
        self.mnem = mnem
        self.ops = ops
        self.loc = loc
        self.comment = comment

    def regs(self):
        return [o for o in self.ops if isinstance(o, VReg)]

    def text(self):
        s = "    %s" % self.mnem
        if self.ops:
            s += " " + ", ".join(str(o) for o in self.ops)
        if self.comment:
            s += "  # " + self.comment
        return s


class Label:
    __slots__ = ("name", )

    def __init__(self, name):
        self.name = name

    def text(self):
        return "%s:" % self.name


class Program:
    def __init__(self):
        self.items = []
        self.loops = []          # (head item index, back-edge item index)
        self._next = {"v": 0, "s": 0}
        self._labels = 0

    def new(self, kind):
        self._next[kind] += 1
        return VReg(kind, self._next[kind])

    def label(self, hint):
        self._labels += 1
        return ".L%s%d" % (hint, self._labels)

    def emit(self, mnem, ops, loc, comment=None):
        self.items.append(Insn(mnem, list(ops), loc, comment))

    def place(self, name):
        self.items.append(Label(name))

    def num_insns(self):
        return sum(1 for i in self.items if isinstance(i, Insn))

    def allocate(self, pinned):
        """pinned: {VReg: physical number} (the kernel's arguments)."""
        regs = {}
        for pos, item in enumerate(self.items):
            if not isinstance(item, Insn):
                continue
            for r in item.regs():
                if r is S0:
                    continue
                if r.start is None:
                    r.start = pos
                    regs[id(r)] = r
                r.end = pos
        for r in pinned:
            if r.start is not None:
                r.start = -1
        # A value alive when a loop starts and used in it lives to the back edge.
        changed = True
        while changed:
            changed = False
            for head, back in self.loops:
                for r in regs.values():
                    if r.start < head <= r.end < back:
                        r.end = back
                        changed = True
        order = sorted(regs.values(), key=lambda r: (r.start, r.kind, r.num))
        free = {"v": list(range(NUM_VREGS)), "s": list(range(1, NUM_SREGS))}
        active = []
        for r in order:
            still = []
            for a in active:
                if a.end < r.start:
                    free[a.kind].append(a.phys)
                else:
                    still.append(a)
            active = still
            want = pinned.get(r)
            pool = free[r.kind]
            if want is not None:
                pool.remove(want)
                r.phys = want
            else:
                if not pool:
                    self._too_large(r, active)
                pool.sort()
                r.phys = pool.pop(0)
            active.append(r)

    def _too_large(self, r, active):
        item = self.items[r.start]
        live = [a for a in active if a.kind == r.kind]
        what = "vector" if r.kind == "v" else "scalar"
        total = NUM_VREGS if r.kind == "v" else NUM_SREGS - 1
        names = sorted({a.hint for a in live if a.hint})
        raise LoweringError("kernel too large: more than %d %s registers live at %s (values: %s); "
                            "use smaller blocks or fewer live tensors" %
                            (total, what, item.loc or "an unknown line", ", ".join(names[:12]) or "?"))

    def text(self):
        return "\n".join(i.text() for i in self.items) + "\n"
