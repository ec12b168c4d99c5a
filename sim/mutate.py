"""Illegal programs for fuzzing: random mutations of the legal programs of sim/fuzz.py.

A mutant is the legal program's instruction words and DRAM image with one or two changes
that a careless compiler or user could make: a dependency flag toggled; an opcode, memory
type or ALU opcode changed (to an unknown one, too); an SRAM base or a size pushed past a
buffer; a DRAM base past the DRAM; a micro-op range or a loop factor pushed past a buffer; a
micro-op word changed; an instruction dropped, duplicated or swapped with its neighbour; a
FINISH dropped, added or followed.

The changes keep every verdict a property of the program (what the backends must agree on):
no STORE is moved or grown over data the program reads (a STORE only moves past the DRAM or
within the out buffer's side), DRAM addresses stay below 4 GiB (the bus is 32 bits wide)
and loops stay short. Whether a mutant still reads micro-ops no LOAD of it wrote (which
would make its verdict depend on the last run) is for the caller to check.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vtalab.spec import Isa
from vtalab.spec.isa import INSN_BYTES, LOOP_OPCODES, Mem, Opcode

from .fuzz import FuzzProgram

DEP_FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")
ADDR_SPACE = 1 << 32
MAX_ITER = 48                  # loop extents a mutation may set
MAX_X, MAX_Y = 300, 6          # LOAD sizes a mutation may set
MAX_WORK = 1 << 15             # micro-ops or entries of any one instruction of a mutant


@dataclass
class Mutant:
    program: FuzzProgram
    words: list
    data: np.ndarray
    what: list = field(default_factory=list)

    def image(self) -> tuple[np.ndarray, int]:
        """(DRAM bytes from the program's base: data then instructions, their offset)."""
        offset = -(-self.data.size // 64) * 64
        out = np.zeros(offset + len(self.words) * INSN_BYTES, dtype=np.uint8)
        out[:self.data.size] = self.data
        stream = b"".join(w.to_bytes(INSN_BYTES, "little") for w in self.words)
        out[offset:] = np.frombuffer(stream, dtype=np.uint8)
        return out, offset

    def disasm(self) -> str:
        isa = Isa(self.program.cfg)
        lines = []
        for k, word in enumerate(self.words):
            try:
                text = isa.disasm(word)
            except Exception:                       # an unknown opcode or field
                text = f"raw {word:#034x} (opcode {isa.opcode_field.extract(word)})"
            lines.append(f"{k:4d}  {text}")
        return "\n".join(lines)


class Mutator:
    """Draws mutants of one legal program; ``dram_bytes``: the devices' DRAM size."""

    def __init__(self, program: FuzzProgram, seed: int, dram_bytes: int):
        self.program, self.cfg, self.isa = program, program.cfg, Isa(program.cfg)
        self.rng = np.random.default_rng(seed)
        self.dram_bytes = dram_bytes
        self.base_words = [self.isa.encode(i) for i in program.instructions()]

    def mutant(self) -> Mutant:
        """A mutant whose every instruction is short work (a changed opcode can make a
        LOAD's fields a loop of millions of micro-ops: such draws are redrawn)."""
        while True:
            m = Mutant(self.program, list(self.base_words), self.program.data.copy())
            for _ in range(1 if self.rng.random() < 0.8 else 2):
                kind = self.rng.choice(KINDS)
                getattr(self, f"_{kind}")(m)
            if all(self._work(w) <= MAX_WORK for w in m.words):
                return m

    def _work(self, word: int) -> int:
        """Micro-ops or SRAM entries an instruction word would take, as decoded."""
        f = self._fields(word)
        if f["is_loop"]:
            g = self.isa.gemm.decode(word)
            return max(g["uop_end"] - g["uop_bgn"], 0) * g["iter_out"] * g["iter_in"]
        if f["is_mem"]:
            rows = f["y_pad_0"] + f["y_size"] + f["y_pad_1"]
            return rows * (f["x_pad_0"] + f["x_size"] + f["x_pad_1"])
        return 0

    # ---- helpers ---------------------------------------------------------------------
    def _int(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))

    def _pick(self, m: Mutant, want=None) -> int | None:
        """A random instruction index (of those ``want(fields)`` accepts)."""
        ks = [k for k, w in enumerate(m.words) if want is None or want(self._fields(w))]
        return int(self.rng.choice(ks)) if ks else None

    def _fields(self, word: int) -> dict:
        f = self.isa.mem.decode(word)
        f["is_mem"] = f["opcode"] in (Opcode.LOAD, Opcode.STORE)
        f["is_loop"] = f["opcode"] in LOOP_OPCODES
        return f

    def _set(self, m: Mutant, k: int, layout: str, what: str, **values) -> None:
        lay = getattr(self.isa, layout)
        word = m.words[k]
        for name, value in values.items():
            fld = lay[name]
            word = word & ~(fld.mask << fld.lsb) | fld.insert(value)
        m.words[k] = word
        m.what.append(f"{what} at {k}: " + ", ".join(f"{n}={v}" for n, v in values.items()))

    # ---- mutations -------------------------------------------------------------------
    def _flag(self, m):
        k = self._pick(m)
        flag = str(self.rng.choice(DEP_FLAGS))
        old = self.isa.mem[flag].extract(m.words[k])
        self._set(m, k, "mem", "flag", **{flag: 1 - old})

    def _opcode(self, m):
        k = self._pick(m)
        self._set(m, k, "mem", "opcode", opcode=self._int(0, 7))

    def _memory_type(self, m):
        k = self._pick(m, lambda f: f["is_mem"])
        if k is not None:
            self._set(m, k, "mem", "memory type", memory_type=self._int(0, 7))

    def _alu_opcode(self, m):
        k = self._pick(m, lambda f: f["opcode"] == Opcode.ALU)
        if k is not None:
            self._set(m, k, "alu", "alu opcode", alu_opcode=self._int(0, 7))

    def _sram(self, m):
        k = self._pick(m, lambda f: f["is_mem"] and f["memory_type"] in tuple(Mem))
        if k is None:
            return
        depth = self.cfg.depth(Mem(self._fields(m.words[k])["memory_type"]).buffer)
        base = depth - self._int(0, 6) if self.rng.random() < 0.7 else self._int(0, 65535)
        self._set(m, k, "mem", "sram_base", sram_base=base)

    def _size(self, m):
        k = self._pick(m, lambda f: f["opcode"] == Opcode.LOAD)
        if k is None:
            return
        choice = self._int(0, 3)
        if choice == 0:
            self._set(m, k, "mem", "size", x_size=self._int(1, MAX_X))
        elif choice == 1:
            self._set(m, k, "mem", "size", y_size=self._int(2, MAX_Y))
        elif choice == 2:
            self._set(m, k, "mem", "stride", y_size=self._int(2, MAX_Y), x_stride=0)
        else:
            pad = {n: self._int(0, 15) for n in ("y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")}
            self._set(m, k, "mem", "pads", **pad)

    def _dram(self, m):
        k = self._pick(m, lambda f: f["is_mem"] and f["memory_type"] in tuple(Mem))
        if k is None:
            return
        entry = self.cfg.entry_bytes(Mem(self._fields(m.words[k])["memory_type"]).buffer)
        first = self.dram_bytes // entry
        top = max(first, (ADDR_SPACE - (1 << 24)) // entry - 1)
        base = first + self._int(-2, 4) if self.rng.random() < 0.7 else self._int(first, top)
        self._set(m, k, "mem", "dram_base", dram_base=max(base, 0))

    def _uop_range(self, m):
        k = self._pick(m, lambda f: f["is_loop"])
        if k is None:
            return
        depth = self.cfg.uop_depth
        gemm = self.isa.gemm
        bgn = gemm["uop_bgn"].extract(m.words[k])
        end = self._int(depth + 1, 2 * depth - 1) if self.rng.random() < 0.7 else \
            self._int(0, bgn)
        self._set(m, k, "gemm", "uop range", uop_end=end)

    def _factor(self, m):
        k = self._pick(m, lambda f: f["is_loop"])
        if k is None:
            return
        name = str(self.rng.choice(["dst", "src", "wgt"])) + "_factor_" + \
            str(self.rng.choice(["out", "in"]))
        if name.startswith("wgt") and self._fields(m.words[k])["opcode"] == Opcode.ALU:
            name = "dst" + name[3:]
        layout = "gemm" if name.startswith("wgt") else "alu"
        fld = getattr(self.isa, layout)[name]
        loop = "iter_out" if name.endswith("out") else "iter_in"
        self._set(m, k, layout, "factor", **{name: self._int(1, fld.max_value),
                                             loop: self._int(1, MAX_ITER)})

    def _uop_word(self, m):
        areas = _uop_areas(self.program)
        if not areas:
            return
        at = int(self.rng.choice(areas))
        name = str(self.rng.choice(["dst", "src", "wgt"]))
        word = int(m.data[at:at + 4].view("<u4")[0])
        fld = self.isa.uop[name]
        word = word & ~(fld.mask << fld.lsb) | fld.insert(self._int(0, fld.max_value))
        m.data[at:at + 4] = np.array([word], "<u4").view(np.uint8)
        m.what.append(f"uop word at image offset {at}: {name} changed")

    def _drop(self, m):
        k = self._pick(m)
        del m.words[k]
        m.what.append(f"dropped instruction {k}")

    def _duplicate(self, m):
        k = self._pick(m)
        m.words.insert(k, m.words[k])
        m.what.append(f"duplicated instruction {k}")

    def _swap(self, m):
        if len(m.words) > 2:
            k = self._int(0, len(m.words) - 2)
            m.words[k], m.words[k + 1] = m.words[k + 1], m.words[k]
            m.what.append(f"swapped instructions {k} and {k + 1}")

    def _finish(self, m):
        word = self.isa.finish.encode({"opcode": Opcode.FINISH})
        choice = self._int(0, 2)
        if choice == 0:
            del m.words[-1]
            m.what.append("dropped the FINISH")
        elif choice == 1:
            k = self._int(0, len(m.words) - 1)
            m.words.insert(k, word)
            m.what.append(f"FINISH inserted at {k}")
        else:
            m.words.append(m.words[self._int(0, len(m.words) - 1)])
            m.what.append("an instruction after FINISH")


KINDS = ("flag", "flag", "opcode", "memory_type", "alu_opcode", "sram", "size", "dram",
         "uop_range", "factor", "uop_word", "drop", "duplicate", "swap", "finish")


def _uop_areas(program: FuzzProgram) -> list[int]:
    """Image offsets of the micro-op words the program's uop LOADs read."""
    out = []
    for insn in program.instructions():
        if getattr(insn, "mem", None) == Mem.UOP and insn.opcode == Opcode.LOAD:
            start = insn.dram_base * 4 - program.base
            out += [start + 4 * n for n in range(insn.x_size)
                    if 0 <= start + 4 * n <= program.data.size - 4]
    return out


def mutate(program: FuzzProgram, seed: int, dram_bytes: int) -> Mutant:
    """One mutant of ``program`` (the same for the same seed)."""
    return Mutator(program, seed, dram_bytes).mutant()
