"""TVP assembly over virtual registers, and the linear-scan allocator that
maps them onto v0..v31 and s1..s31 (s0 reads as 0). A value live across a
loop is kept live to the loop's back edge. Vector values that do not fit go
to a scratch area in device memory (one slot of 4 KiB each per program
instance, whose address comes as an extra argument); scalar values that do
not fit fail the compile with a message naming the source line."""


class LoweringError(Exception):
    """A kernel the backend cannot compile, with its source line."""


NUM_VREGS = 32
NUM_SREGS = 32
MAX_LANES = 1024
MAX_ARGS = 16                  # s1 .. s16 (MAIA_TVP_MAX_ARGS)
SPILL_TEMPS = 3
SPILL_SLOT = MAX_LANES * 4     # bytes: a whole vector register
SLOT_BYTES = SPILL_SLOT


class _VectorPressure(Exception):
    pass


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
# The instance's frame in the scratch area (set by the prologue when there is one).
SCRATCH_BASE = VReg("s", -11, NUM_SREGS - 1)


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

    def allocate(self, pinned, scratch_arg, fixed_slots=0):
        """pinned: {VReg: physical number} (the kernel's arguments);
        scratch_arg: the argument register that carries the scratch area's
        address when the kernel needs one; fixed_slots: slots the program
        itself uses (at SCRATCH_BASE + 4 KiB i). Returns the scratch frame's
        size in bytes per program instance (0: no scratch area)."""
        regs = self._intervals(pinned)
        if fixed_slots and scratch_arg > MAX_ARGS:
            raise LoweringError("kernel too large: it needs a scratch area, and its %d arguments leave no "
                                "argument register for its address" % (scratch_arg - 1))
        spilled = []
        try:
            self._scan(regs, pinned, NUM_VREGS, spill=False, reserve=fixed_slots > 0)
        except _VectorPressure:
            for r in regs:
                if r not in pinned:
                    r.phys = None
            # Spill everywhere: a spilled value lives in the instance's slot of
            # the scratch area, loaded into a reserved register before each use
            # and stored after each definition. v29-v31 carry them (an
            # instruction reads at most 3 vectors), s30 the slot's address, s31
            # the instance's frame.
            if scratch_arg > MAX_ARGS:
                raise LoweringError("kernel too large: it needs to spill vector registers, and its %d arguments "
                                    "leave no argument register for the spill area" % (scratch_arg - 1))
            spilled = self._scan(regs, pinned, NUM_VREGS - SPILL_TEMPS, spill=True, reserve=True)
        if not fixed_slots and not spilled:
            return 0
        self._rewrite_spills(spilled, scratch_arg, fixed_slots)
        return (fixed_slots + len(spilled)) * SPILL_SLOT

    def _intervals(self, pinned):
        regs = {}
        for pos, item in enumerate(self.items):
            if not isinstance(item, Insn):
                continue
            for r in item.regs():
                if r.num < 0:       # a fixed register: s0, SCRATCH_BASE
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
        return list(regs.values())

    def _scan(self, regs, pinned, num_vregs, spill, reserve):
        """Linear scan; returns the spilled vector values (spill=True) or
        raises for a vector register too many (spill=False)."""
        order = sorted(regs, key=lambda r: (r.start, r.kind, r.num))
        # reserve: s30 and s31 kept for the scratch area's addresses.
        free = {"v": list(range(num_vregs)), "s": list(range(1, NUM_SREGS - (2 if reserve else 0)))}
        active = []
        spilled = []
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
            elif pool:
                pool.sort()
                r.phys = pool.pop(0)
            elif r.kind == "s":
                self._too_large(r, active)
            elif not spill:
                raise _VectorPressure()
            else:
                # The live value used furthest ahead goes to memory.
                victim = max([a for a in active if a.kind == "v"] + [r], key=lambda a: a.end)
                if victim is not r:
                    r.phys, victim.phys = victim.phys, None
                    active.remove(victim)
                    active.append(r)
                spilled.append(victim)
                continue
            active.append(r)
        return spilled

    def _rewrite_spills(self, spilled, scratch_arg, first_slot):
        slot = {id(r): first_slot + i for i, r in enumerate(spilled)}
        frame = (first_slot + len(spilled)) * SPILL_SLOT
        temps = [VReg("v", -2 - i, NUM_VREGS - SPILL_TEMPS + i) for i in range(SPILL_TEMPS)]
        addr, base = VReg("s", -10, NUM_SREGS - 2), SCRATCH_BASE
        t1, t2 = VReg("s", -12, NUM_SREGS - 4), VReg("s", -13, NUM_SREGS - 3)
        loc = self.items[0].loc if self.items else None
        # Prologue (nothing but the arguments is live yet): base = scratch +
        # frame * the instance's linear index x + nx (y + ny z).
        out = [Insn("pid", [base, "2"], loc), Insn("nprog", [t1, "1"], loc), Insn("mul", [base, base, t1], loc),
               Insn("pid", [t2, "1"], loc), Insn("add", [base, base, t2], loc), Insn("nprog", [t1, "0"], loc),
               Insn("mul", [base, base, t1], loc), Insn("pid", [t2, "0"], loc), Insn("add", [base, base, t2], loc),
               Insn("muli", [base, base, str(frame)], loc),
               Insn("add", [base, base, VReg("s", -14, scratch_arg)], loc)]
        shape = None
        full = ["1", str(MAX_LANES)]

        def slot_io(mnem, reg, r, loc):
            seq = [Insn("shape", full, loc), Insn("addi", [addr, base, str(slot[id(r)] * SPILL_SLOT)], loc),
                   Insn(mnem, [reg, addr, "unit", "i32"], loc)]
            if shape is not None:
                seq.append(Insn("shape", list(shape), loc))
            return seq

        for item in self.items:
            if isinstance(item, Label):
                shape = None
                out.append(item)
                continue
            if item.mnem == "shape":
                shape = item.ops
            hit = [o for o in item.ops if isinstance(o, VReg) and id(o) in slot]
            if not hit:
                out.append(item)
                continue
            # Operand 0 is written (VDOT also reads it), except VST's data.
            writes = item.mnem != "vst"
            reads0 = not writes or item.mnem == "vdot"
            given = {}
            ops = list(item.ops)
            # Sources first, each spilled value once into its own temporary (at most 3).
            for i, o in enumerate(ops):
                if isinstance(o, VReg) and id(o) in slot and (i > 0 or reads0) and id(o) not in given:
                    given[id(o)] = temps[len(given)]
                    out.extend(slot_io("vld", given[id(o)], o, item.loc))
            after = []
            dest = ops[0] if ops else None
            if writes and isinstance(dest, VReg) and id(dest) in slot:
                # Sources are read before the result is written: any temporary will do.
                reg = given.get(id(dest), temps[0])
                given[id(dest)] = reg
                after = slot_io("vst", reg, dest, item.loc)
            ops = [given.get(id(o), o) if isinstance(o, VReg) else o for o in ops]
            out.append(Insn(item.mnem, ops, item.loc, item.comment))
            out.extend(after)
        # Loops' positions are not needed any more: the allocation is done.
        self.items = out

    def _too_large(self, r, active):
        item = self.items[r.start]
        live = [a for a in active if a.kind == r.kind]
        what = "vector" if r.kind == "v" else "scalar"
        total = NUM_VREGS if r.kind == "v" else NUM_SREGS - 1
        names = sorted({a.hint for a in live if a.hint})
        raise LoweringError("kernel too large: more than %d %s registers live at %s (values: %s); "
                            "use fewer values live at once" %
                            (total, what, item.loc or "an unknown line", ", ".join(names[:12]) or "?"))

    def text(self):
        return "\n".join(i.text() for i in self.items) + "\n"
