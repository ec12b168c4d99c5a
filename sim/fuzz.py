"""Random legal programs for differential testing (functional simulator vs RTL).

A program is a prologue plus ``rounds``; each round has load, compute and store work.
Legality comes from construction:

- SRAM is split into slots: round r's loads fill inp/wgt slot ``r % S`` and its compute
  reads only that slot; its GEMM/ALU write acc/out rows of out slot ``r % T`` only, which
  its stores read. LOAD ACC and ALU operands use any acc row (compute-only state).
- Tokens: load r pops c2l (from compute r-S) and pushes l2c; compute r pops l2c and s2c
  (from store r-T), pushes c2l (if load r+S exists) and c2s; store r pops c2s and pushes
  s2c (if compute r+T exists). So with S = T = 2 the modules overlap, double-buffered.
- The prologue loads every inp/wgt/acc row used and writes every out row (an ALU pass),
  so no result depends on SRAM state left by an earlier program.
- DRAM: loads read the input areas, stores write the output area, nothing overlaps.

Random fields: 2-D sizes, strides, pads (also on wgt/uop loads, which must ignore them),
loop extents and factors (0 factors make back-to-back micro-ops hit one acc row), uop
ranges anywhere in the uop buffer, every ALU op with immediate or register operand.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from vtalab.spec import Config, Isa
from vtalab.spec.isa import (AluInsn, AluOp, FinishInsn, GemmInsn, Instruction, Mem, MemInsn,
                             Opcode)

INP_ROWS, WGT_ROWS, ACC_ROWS = 16, 8, 16       # rows per slot
DRAM_ENTRIES = 96                              # entries in each input area and in the output


@dataclass
class Round:
    load: list = field(default_factory=list)
    compute: list = field(default_factory=list)
    store: list = field(default_factory=list)


@dataclass
class FuzzProgram:
    """A legal program before token assembly; ``data`` is its DRAM image from ``base``."""
    cfg: Config
    base: int                      # byte address of the image in DRAM
    data: np.ndarray               # uint8: input areas, uop area, output area
    in_slots: int                  # S
    out_slots: int                 # T
    prologue: Round
    rounds: list[Round]
    out_range: tuple = (0, 0)       # byte offsets of the output area in ``data``
    seed: int = 0

    def instructions(self) -> list[Instruction]:
        """Program order: prologue, then each round's load, compute, store; FINISH."""
        insns = list(self.prologue.load) + list(self.prologue.compute)
        count = len(self.rounds)
        for r, rnd in enumerate(self.rounds):
            insns += _flag(rnd.load, first={"pop_next": r >= self.in_slots},
                           last={"push_next": True})
            insns += _flag(rnd.compute, first={"pop_prev": True, "pop_next": r >= self.out_slots},
                           last={"push_prev": r + self.in_slots < count, "push_next": True})
            insns += _flag(rnd.store, first={"pop_prev": True},
                           last={"push_prev": r + self.out_slots < count})
        return insns + [FinishInsn()]

    def image(self) -> tuple[np.ndarray, int]:
        """(DRAM bytes from ``base``: data then instructions, instruction byte offset)."""
        stream = Isa(self.cfg).encode_program(self.instructions())
        offset = -(-self.data.size // 64) * 64
        out = np.zeros(offset + len(stream), dtype=np.uint8)
        out[:self.data.size] = self.data
        out[offset:] = np.frombuffer(stream, dtype=np.uint8)
        return out, offset

    def disasm(self) -> str:
        isa = Isa(self.cfg)
        return "\n".join(f"{k:4d}  {isa.disasm(i)}" for k, i in enumerate(self.instructions()))

    def replace(self, **changes) -> "FuzzProgram":
        return dataclasses.replace(self, **changes)


def _flag(insns: list, first: dict, last: dict) -> list:
    insns = list(insns)
    insns[0] = insns[0].with_deps(**{k: True for k, v in first.items() if v})
    insns[-1] = insns[-1].with_deps(**{k: True for k, v in last.items() if v})
    return insns


def noop(module: str) -> MemInsn:
    """A token carrier that moves nothing (as the runtime's builder emits)."""
    if module == "store":
        return MemInsn(opcode=Opcode.STORE, mem=Mem.OUT, y_size=0, x_size=0, x_stride=0)
    mem = Mem.INP if module == "load" else Mem.UOP
    return MemInsn(opcode=Opcode.LOAD, mem=mem, y_size=0, x_size=0, x_stride=0)


class _Areas:
    """DRAM layout of one program: entry offsets of each area from ``base``."""

    def __init__(self, cfg: Config, base: int, rng: np.random.Generator):
        self.cfg, self.base, self.rng = cfg, base, rng
        self.parts, self.offset, self.start = [], 0, {}
        for buf in ("inp", "wgt", "acc", "out"):
            self._add(buf, rng.integers(0, 256, DRAM_ENTRIES * cfg.entry_bytes(buf), np.uint8))
        self.out_range = (self.start["out"], self.start["out"] + self.parts[-1][1].size)
        self.uops: list[np.ndarray] = []

    def _add(self, name: str, raw: np.ndarray) -> None:
        self.offset = -(-self.offset // 64) * 64
        self.start[name] = self.offset
        self.parts.append((self.offset, raw))
        self.offset += raw.size

    def entry(self, buf: str, index: int) -> int:
        """dram_base of entry ``index`` of area ``buf``."""
        return (self.base + self.start[buf]) // self.cfg.entry_bytes(buf) + index

    def add_uops(self, words: np.ndarray) -> int:
        self._add(f"uop{len(self.uops)}", words.astype("<u4").view(np.uint8))
        self.uops.append(words)
        return (self.base + self.offset - words.size * 4) // 4

    def finish(self) -> np.ndarray:
        data = np.zeros(self.offset, dtype=np.uint8)
        for start, raw in self.parts:
            data[start:start + raw.size] = raw
        return data


class Generator:
    """Draws one FuzzProgram from a seed; ``max_rounds`` bounds its length."""

    def __init__(self, cfg: Config, base: int, seed: int, max_rounds: int = 4):
        self.cfg, self.base, self.seed = cfg, base, seed
        self.rng = np.random.default_rng(seed)
        self.isa = Isa(cfg)
        self.areas = _Areas(cfg, base, self.rng)
        self.in_slots = int(self.rng.integers(1, 3))
        self.out_slots = int(self.rng.integers(1, 3))
        self.rounds = int(self.rng.integers(1, max_rounds + 1))
        self.uop_next = int(self.rng.integers(0, cfg.uop_depth))

    def program(self) -> FuzzProgram:
        prologue = self._prologue()
        rounds = [self._round(r) for r in range(self.rounds)]
        return FuzzProgram(self.cfg, self.base, self.areas.finish(), self.in_slots,
                           self.out_slots, prologue, rounds, self.areas.out_range, self.seed)

    def _int(self, lo: int, hi: int) -> int:
        return int(self.rng.integers(lo, hi + 1))

    # ---- prologue: every SRAM row the program reads gets a defined value ---------------
    def _prologue(self) -> Round:
        S, T = self.in_slots, self.out_slots
        load = [self._mem(Opcode.LOAD, Mem.INP, 0, self.areas.entry("inp", 0), 1, S * INP_ROWS),
                self._mem(Opcode.LOAD, Mem.WGT, 0, self.areas.entry("wgt", 0), 1, S * WGT_ROWS)]
        compute = [self._mem(Opcode.LOAD, Mem.ACC, 0, self.areas.entry("acc", 0), 1,
                             T * ACC_ROWS)]
        compute += self._kernel(AluInsn(alu_op=AluOp.ADD, use_imm=True, imm=0,
                                        iter_out=T * ACC_ROWS, dst_factor_out=1),
                                [(0, 0, 0)])
        return Round(load, compute)

    def _mem(self, opcode, mem, sram, dram, y, x, stride=None, pads=(0, 0, 0, 0)) -> MemInsn:
        return MemInsn(opcode=opcode, mem=mem, sram_base=sram, dram_base=dram, y_size=y,
                       x_size=x, x_stride=x if stride is None else stride, y_pad_0=pads[0],
                       y_pad_1=pads[1], x_pad_0=pads[2], x_pad_1=pads[3])

    # ---- one round --------------------------------------------------------------------
    def _round(self, r: int) -> Round:
        si, so = r % self.in_slots, r % self.out_slots
        rnd = Round()
        for _ in range(self._int(1, 3)):
            rnd.load.append(self._tile_load(Mem.INP if self._int(0, 1) else Mem.WGT, si))
        for _ in range(self._int(1, 4)):
            kind = self.rng.choice(["gemm", "gemm", "alu", "alu", "acc"])
            if kind == "acc":
                rnd.compute.append(self._tile_load(Mem.ACC, 0))
            else:
                rnd.compute += self._loop_insn(kind, si, so)
        for _ in range(self._int(1, 3)):
            rnd.store.append(self._tile_store(so))
        return rnd

    def _pads(self, padded: bool) -> tuple:
        if self._int(0, 1):
            return (0, 0, 0, 0)
        return tuple(self._int(0, 2) for _ in range(4)) if padded else \
            tuple(self._int(0, 15) for _ in range(4))       # ignored fields: anything

    def _tile(self, rows_free: int, padded: bool):
        """(y, x, stride, pads, sram rows) of a tile whose SRAM rows fit ``rows_free``."""
        while True:
            y, x = self._int(1, 3), self._int(1, 4)
            pads = self._pads(padded)
            y0, y1, x0, x1 = pads if padded else (0, 0, 0, 0)
            rows = (y0 + y + y1) * (x0 + x + x1)
            if rows <= rows_free:
                return y, x, x + self._int(0, 3), pads, rows

    def _dram_start(self, y: int, x: int, stride: int) -> int:
        return self._int(0, DRAM_ENTRIES - ((y - 1) * stride + x))

    def _tile_load(self, mem: Mem, slot: int) -> MemInsn:
        span = {Mem.INP: INP_ROWS, Mem.WGT: WGT_ROWS, Mem.ACC: ACC_ROWS * self.out_slots}[mem]
        base = slot * span
        y, x, stride, pads, rows = self._tile(span, mem != Mem.WGT)
        dram = self.areas.entry(mem.buffer, self._dram_start(y, x, stride))
        return self._mem(Opcode.LOAD, mem, base + self._int(0, span - rows), dram, y, x, stride,
                         pads)

    def _tile_store(self, slot: int) -> MemInsn:
        y, x, stride, _, rows = self._tile(ACC_ROWS, False)
        sram = slot * ACC_ROWS + self._int(0, ACC_ROWS - rows)
        dram = self.areas.entry("out", self._dram_start(y, x, stride))
        return self._mem(Opcode.STORE, Mem.OUT, sram, dram, y, x, stride)

    # ---- GEMM / ALU with their micro-op kernel ----------------------------------------
    def _loop_insn(self, kind: str, si: int, so: int) -> list:
        it_out, it_in = self._int(1, 3), self._int(1, 3)
        factors = {n: (self._int(0, 3), self._int(0, 3)) for n in ("dst", "src", "wgt")}
        ranges = {"dst": (so * ACC_ROWS, ACC_ROWS)}
        if kind == "gemm":
            ranges["src"] = (si * INP_ROWS, INP_ROWS)
            ranges["wgt"] = (si * WGT_ROWS, WGT_ROWS)
        else:
            ranges["src"] = (0, ACC_ROWS * self.out_slots)
            ranges["wgt"] = (0, 1)
        starts = {}
        for name, (lo, size) in ranges.items():
            f_out, f_in = factors[name]
            if (it_out - 1) * f_out + (it_in - 1) * f_in >= size:
                factors[name] = (0, 0)
            span = (it_out - 1) * factors[name][0] + (it_in - 1) * factors[name][1]
            starts[name] = (lo, size - span)
        uops = [tuple(lo + self._int(0, room - 1) for lo, room in
                      (starts["dst"], starts["src"], starts["wgt"]))
                for _ in range(self._int(1, 3))]
        loop = dict(iter_out=it_out, iter_in=it_in,
                    dst_factor_out=factors["dst"][0], dst_factor_in=factors["dst"][1],
                    src_factor_out=factors["src"][0], src_factor_in=factors["src"][1])
        if kind == "gemm":
            flag = self._int(0, 4)          # 1 in 5 resets, 1 in 5 overwrites
            insn = GemmInsn(reset=flag == 0, overwrite=flag == 1,
                            wgt_factor_out=factors["wgt"][0], wgt_factor_in=factors["wgt"][1],
                            **loop)
        else:
            op = AluOp(self._int(0, len(AluOp) - 1))
            if op == AluOp.SHR:
                imm = self._int(-24, 40)
            elif op == AluOp.SAT:           # every shift amount, relu on and off
                imm = self._int(-64, 63)
            else:
                imm = self._int(-(1 << 15), (1 << 15) - 1)
            insn = AluInsn(alu_op=op, use_imm=bool(self._int(0, 1)), imm=imm, **loop)
        return self._kernel(insn, uops)

    def _kernel(self, insn, uops: list) -> list:
        """LOAD UOP of ``uops`` into the uop buffer (wrapping round), then ``insn`` on them."""
        n = len(uops)
        if self.uop_next + n > self.cfg.uop_depth:
            self.uop_next = 0
        dst, src, wgt = (np.array(v) for v in zip(*uops))
        dram = self.areas.add_uops(self.isa.encode_uops(dst, src, wgt))
        y, stride, pads = self._int(1, 2), n + self._int(0, 2), self._pads(False)
        load = self._mem(Opcode.LOAD, Mem.UOP, self.uop_next, dram, y, n, stride, pads)
        insn = dataclasses.replace(insn, uop_bgn=self.uop_next, uop_end=self.uop_next + n)
        self.uop_next += n
        return [load, insn]


def generate(cfg: Config, base: int, seed: int, max_rounds: int = 4) -> FuzzProgram:
    """One random legal program whose image starts at DRAM byte address ``base``."""
    if ACC_ROWS * 2 > cfg.acc_depth or INP_ROWS * 2 > cfg.inp_depth or \
            WGT_ROWS * 2 > cfg.wgt_depth:
        from vtalab.spec.errors import ConfigError
        raise ConfigError(f"config must have room for the fuzzer's slots, not inp/wgt/acc "
                          f"depths {cfg.inp_depth}/{cfg.wgt_depth}/{cfg.acc_depth}")
    return Generator(cfg, base, seed, max_rounds).program()
