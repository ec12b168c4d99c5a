"""Small instruction-level programs for the tiny preset, with DRAM images, and their
expected results from the functional simulator."""
from __future__ import annotations

import dataclasses

import numpy as np

from vtalab.sim.fsim import FunctionalSimulator
from vtalab.spec import Isa
from vtalab.spec.isa import AluInsn, AluOp, FinishInsn, GemmInsn, Mem, MemInsn, Opcode

DRAM_BYTES = 1 << 16
REGION = {"insn": 0x0000, "uop": 0x1000, "inp": 0x2000, "wgt": 0x4000, "acc": 0x6000,
          "out": 0x8000}
LOAD_MODULE = (Mem.INP, Mem.WGT)


class Program:
    """A DRAM image plus an instruction list whose dependency tokens are set automatically:
    loads hand over to compute (l2c), compute hands over to store (c2s) and back (s2c)."""

    def __init__(self, cfg, seed: int = 0):
        self.cfg, self.isa = cfg, Isa(cfg)
        self.dram = np.zeros(DRAM_BYTES, dtype=np.uint8)
        self.insns: list = []
        self.rng = np.random.default_rng(seed)
        self.last = {"load": None, "compute": None, "store": None}
        self.loads_since_compute = False
        self.s2c_pending = False
        self.stored_since_compute = False

    # ---- data ------------------------------------------------------------------------------
    def base(self, buf: str, offset_entries: int = 0) -> int:
        return REGION[buf] // self.cfg.entry_bytes(buf) + offset_entries

    def put(self, buf: str, values: np.ndarray, offset_entries: int = 0) -> int:
        dtype = {"uop": np.uint32}.get(buf, {8: np.int8, 16: np.int16, 32: np.int32}.get(
            self.cfg.elem_bits(buf)))
        raw = np.ascontiguousarray(np.asarray(values).astype(dtype)).view(np.uint8).ravel()
        start = REGION[buf] + offset_entries * self.cfg.entry_bytes(buf)
        self.dram[start:start + raw.size] = raw
        return self.base(buf, offset_entries)

    def put_uops(self, uops, offset: int = 0) -> int:
        dst, src, wgt = (np.array(col) for col in zip(*uops))
        return self.put("uop", self.isa.encode_uops(dst, src, wgt), offset)

    def random(self, buf: str, count: int, low: int | None = None, high: int | None = None):
        bits = self.cfg.elem_bits(buf)
        low = -(1 << bits - 1) if low is None else low
        high = (1 << bits - 1) - 1 if high is None else high
        return self.rng.integers(low, high + 1, size=(count, *self.cfg.elem_shape(buf)))

    # ---- instructions ------------------------------------------------------------------
    def _append(self, module: str, insn):
        self.last[module] = len(self.insns)
        self.insns.append(insn)

    def _patch(self, module: str, **flags):
        index = self.last[module]
        self.insns[index] = dataclasses.replace(self.insns[index], **flags)

    def load(self, mem: Mem, **fields):
        insn = MemInsn(opcode=Opcode.LOAD, mem=mem, **fields)
        if mem in LOAD_MODULE:
            self._append("load", insn)
            self.loads_since_compute = True
        else:
            self.compute(insn)

    def compute(self, insn):
        flags = {}
        if self.loads_since_compute:
            self._patch("load", push_next=True)
            flags["pop_prev"] = True
            self.loads_since_compute = False
        if self.s2c_pending:
            flags["pop_next"] = True
            self.s2c_pending = False
        self.stored_since_compute = False
        self._append("compute", dataclasses.replace(insn, **flags))

    def store(self, **fields):
        insn = MemInsn(opcode=Opcode.STORE, mem=Mem.OUT, push_prev=True, **fields)
        if self.stored_since_compute:
            self._patch("store", push_prev=False)
        else:
            self._patch("compute", push_next=True)
            insn = dataclasses.replace(insn, pop_prev=True)
        self.stored_since_compute = True
        self.s2c_pending = True
        self._append("store", insn)

    def finish(self):
        self.compute(FinishInsn())

    def image(self) -> np.ndarray:
        """The DRAM image with the instructions at REGION['insn']."""
        code = np.frombuffer(self.isa.encode_program(self.insns), dtype=np.uint8)
        dram = self.dram.copy()
        dram[REGION["insn"]:REGION["insn"] + code.size] = code
        return dram

    def expected(self) -> np.ndarray:
        sim = FunctionalSimulator(self.cfg, dram_bytes=DRAM_BYTES)
        sim.dram[:] = self.image()
        sim.run(REGION["insn"], len(self.insns))
        return sim.dram.copy()


def loop(op, n, **fields):
    cls = GemmInsn if op == "gemm" else AluInsn
    return cls(uop_bgn=0, uop_end=n, **fields)


def save_load(cfg) -> Program:
    """LOAD ACC 2-D strided, copy to out with ALU ADD 0, STORE strided."""
    p = Program(cfg, seed=1)
    p.put("acc", p.random("acc", 24))
    p.put_uops([(k, k, 0) for k in range(12)])
    p.load(Mem.UOP, sram_base=0, dram_base=p.base("uop"), x_size=12)
    p.load(Mem.ACC, sram_base=0, dram_base=p.base("acc"), y_size=3, x_size=4, x_stride=6)
    p.compute(loop("alu", 12, alu_op=AluOp.ADD, use_imm=True, imm=0))
    p.store(sram_base=0, dram_base=p.base("out"), y_size=3, x_size=4, x_stride=5)
    p.finish()
    return p


def padded_load(cfg) -> Program:
    """Zero padding on every side of inp and acc loads, observed through GEMM and ALU."""
    p = Program(cfg, seed=2)
    p.put("inp", p.random("inp", 16))
    p.put("wgt", p.random("wgt", 2))
    p.put("acc", p.random("acc", 16, -1000, 1000))
    p.put_uops([(k, k, 1) for k in range(30)] + [(40, 40, 0), (40, 0, 0)])
    p.load(Mem.INP, sram_base=0, dram_base=p.base("inp"), y_size=2, x_size=3, x_stride=4,
           y_pad_0=1, y_pad_1=2, x_pad_0=1, x_pad_1=2)
    p.load(Mem.WGT, sram_base=0, dram_base=p.base("wgt"), y_size=1, x_size=2, x_stride=2)
    p.load(Mem.UOP, sram_base=0, dram_base=p.base("uop"), x_size=32)
    p.compute(GemmInsn(reset=True, uop_bgn=0, uop_end=30))
    p.compute(GemmInsn(uop_bgn=0, uop_end=30))
    p.store(sram_base=0, dram_base=p.base("out"), y_size=1, x_size=30, x_stride=30)
    p.load(Mem.ACC, sram_base=40, dram_base=p.base("acc"), y_size=3, x_size=2, x_stride=5,
           y_pad_0=2, y_pad_1=0, x_pad_0=0, x_pad_1=3)
    p.compute(AluInsn(alu_op=AluOp.ADD, use_imm=True, imm=1, uop_bgn=30, uop_end=31,
                      iter_out=25, dst_factor_out=1, src_factor_out=1))
    p.compute(AluInsn(alu_op=AluOp.ADD, use_imm=False, uop_bgn=31, uop_end=32, iter_out=25,
                      dst_factor_out=1, src_factor_out=1))
    p.store(sram_base=0, dram_base=p.base("out", 40), y_size=5, x_size=5, x_stride=5)
    p.finish()
    return p


def gemm_requant(cfg) -> Program:
    """Blocked GEMM with two loop levels, then bias-free requantisation: SHR, MIN, MAX."""
    p = Program(cfg, seed=3)
    p.put("inp", p.random("inp", 8))
    p.put("wgt", p.random("wgt", 4))
    p.put_uops([(k, k, 0) for k in range(4)])
    p.load(Mem.INP, sram_base=0, dram_base=p.base("inp"), y_size=1, x_size=8, x_stride=8)
    p.load(Mem.WGT, sram_base=0, dram_base=p.base("wgt"), y_size=2, x_size=2, x_stride=2)
    p.load(Mem.UOP, sram_base=0, dram_base=p.base("uop"), x_size=4)
    # acc[i*4 + j... ]: out rows 0..7 (i over 2 inp halves) x wgt j over 4, dst = u + 4*i + 8*j
    p.compute(GemmInsn(reset=True, uop_bgn=0, uop_end=4, iter_out=4, iter_in=2,
                       dst_factor_out=8, dst_factor_in=4))
    for rep in range(3):     # accumulate three times: large sums, wraps are not needed here
        p.compute(GemmInsn(uop_bgn=0, uop_end=4, iter_out=4, iter_in=2, dst_factor_out=8,
                           dst_factor_in=4, src_factor_in=4, wgt_factor_out=1))
    p.compute(loop("alu", 4, alu_op=AluOp.SHR, use_imm=True, imm=6, iter_out=8,
                   dst_factor_out=4, src_factor_out=4))
    p.compute(loop("alu", 4, alu_op=AluOp.MIN, use_imm=True, imm=127, iter_out=8,
                   dst_factor_out=4, src_factor_out=4))
    p.compute(loop("alu", 4, alu_op=AluOp.MAX, use_imm=True, imm=-128, iter_out=8,
                   dst_factor_out=4, src_factor_out=4))
    p.store(sram_base=0, dram_base=p.base("out"), y_size=4, x_size=8, x_stride=8)
    p.finish()
    return p


def gemm_wrap(cfg) -> Program:
    """Accumulate int8 extremes until the int32 accumulator wraps; store every byte lane."""
    p = Program(cfg, seed=4)
    p.put("inp", np.full((1, *cfg.elem_shape("inp")), -128))
    p.put("wgt", np.full((1, *cfg.elem_shape("wgt")), -128))
    p.put("acc", np.full((1, *cfg.elem_shape("acc")), 0x7FFF0000))
    p.put_uops([(0, 0, 0)])
    p.load(Mem.INP, sram_base=0, dram_base=p.base("inp"), y_size=1, x_size=1, x_stride=1)
    p.load(Mem.WGT, sram_base=0, dram_base=p.base("wgt"), y_size=1, x_size=1, x_stride=1)
    p.load(Mem.UOP, sram_base=0, dram_base=p.base("uop"), x_size=1)
    p.load(Mem.ACC, sram_base=0, dram_base=p.base("acc"), y_size=1, x_size=1, x_stride=1)
    p.compute(GemmInsn(uop_bgn=0, uop_end=1, iter_out=40))
    for byte in range(4):     # out = low 8 bits: store each byte of the wrapped sum
        if byte:
            p.compute(loop("alu", 1, alu_op=AluOp.SHR, use_imm=True, imm=8))
        p.store(sram_base=0, dram_base=p.base("out", byte), y_size=1, x_size=1, x_stride=1)
    p.finish()
    return p


ALU_OPS = (AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR, AluOp.MUL)


def alu_ops(cfg) -> Program:
    """Every opcode with an immediate and with a register operand (shift amounts -16..15),
    relu, and back-to-back micro-ops reading and writing the same rows."""
    p = Program(cfg, seed=5)
    rows = 8
    p.put("acc", p.random("acc", rows, -(1 << 20), 1 << 20))
    p.put("acc", p.rng.integers(-16, 16, size=(rows, *cfg.elem_shape("acc"))), rows)
    hazards = [(0, 0, 0), (0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0), (2, 1, 0), (2, 2, 0)]
    p.put_uops([(k, rows + k, 0) for k in range(rows)] + hazards)
    p.load(Mem.UOP, sram_base=0, dram_base=p.base("uop"), x_size=rows + len(hazards))
    p.load(Mem.ACC, sram_base=0, dram_base=p.base("acc"), y_size=1, x_size=2 * rows,
           x_stride=2 * rows)
    out = 0
    for op in ALU_OPS:
        for use_imm, imm in ((True, 5), (True, -3), (False, 0)):
            if op == AluOp.SHR and use_imm:
                imm = 20 if imm < 0 else 3      # 20 = -12 as a 5-bit amount: shift left
            p.compute(loop("alu", rows, alu_op=op, use_imm=use_imm, imm=imm))
            p.store(sram_base=0, dram_base=p.base("out", out), y_size=1, x_size=rows,
                    x_stride=rows)
            out += rows
            if op == AluOp.MUL:   # keep values from growing towards zero-information wraps
                p.compute(loop("alu", rows, alu_op=AluOp.SHR, use_imm=True, imm=4))
    p.compute(AluInsn(alu_op=AluOp.MAX, use_imm=True, imm=0, uop_bgn=0, uop_end=rows))
    for op, imm in ((AluOp.ADD, 0), (AluOp.ADD, 1), (AluOp.MUL, 3), (AluOp.SHR, 0)):
        p.compute(AluInsn(alu_op=op, use_imm=imm != 0 or op == AluOp.SHR, imm=imm,
                          uop_bgn=rows, uop_end=rows + len(hazards), iter_out=2))
    p.store(sram_base=0, dram_base=p.base("out", out), y_size=1, x_size=rows,
            x_stride=rows)
    p.finish()
    return p


def mixed_hazards(cfg) -> Program:
    """GEMM, ALU and GEMM back to back (no drain between the instructions) on the same
    accumulator rows at every distance 1..8, so forwarding and the ALU stall both fire."""
    p = Program(cfg, seed=7)
    rows = 8
    p.put("inp", p.random("inp", 4))
    p.put("wgt", p.random("wgt", 2))
    p.put("acc", p.random("acc", rows, -(1 << 12), 1 << 12))
    dsts = [0, 0, 1, 0, 2, 1, 0, 3, 4, 0, 5, 6, 7, 1, 0, 2, 3, 4, 5, 6, 7, 0]
    gemm = [(d, k % 4, k % 2) for k, d in enumerate(dsts)]
    alu = [(d, dsts[k - 1] if k else 7, 0) for k, d in enumerate(dsts)]
    p.put_uops(gemm + alu)
    p.load(Mem.INP, sram_base=0, dram_base=p.base("inp"), y_size=1, x_size=4, x_stride=4)
    p.load(Mem.WGT, sram_base=0, dram_base=p.base("wgt"), y_size=1, x_size=2, x_stride=2)
    p.load(Mem.UOP, sram_base=0, dram_base=p.base("uop"), x_size=len(gemm) + len(alu))
    p.load(Mem.ACC, sram_base=0, dram_base=p.base("acc"), y_size=1, x_size=rows,
           x_stride=rows)
    n = len(gemm)
    p.compute(GemmInsn(uop_bgn=0, uop_end=n, iter_out=2))
    p.compute(AluInsn(alu_op=AluOp.ADD, use_imm=False, uop_bgn=n, uop_end=2 * n))
    p.compute(GemmInsn(uop_bgn=0, uop_end=n))
    p.compute(AluInsn(alu_op=AluOp.SHR, use_imm=True, imm=3, uop_bgn=n, uop_end=2 * n))
    p.compute(GemmInsn(uop_bgn=0, uop_end=n))
    p.compute(AluInsn(alu_op=AluOp.ADD, use_imm=False, uop_bgn=n, uop_end=2 * n))
    p.store(sram_base=0, dram_base=p.base("out"), y_size=1, x_size=rows, x_stride=rows)
    p.finish()
    return p


PROGRAMS = {"save_load": save_load, "padded_load": padded_load, "gemm_requant": gemm_requant,
            "gemm_wrap": gemm_wrap, "alu_ops": alu_ops,
            "mixed_hazards": mixed_hazards}


def perf_program(cfg, op: str, uops: int, iters: int) -> Program:
    """One GEMM or ALU instruction of ``uops * iters`` micro-ops over ``uops`` rows, FINISH."""
    p = Program(cfg, seed=6)
    p.put_uops([(k, k, 0) for k in range(uops)])
    p.load(Mem.UOP, sram_base=0, dram_base=p.base("uop"), x_size=uops)
    if op == "gemm":
        p.compute(GemmInsn(uop_bgn=0, uop_end=uops, iter_out=iters))
    else:
        p.compute(AluInsn(alu_op=AluOp.ADD, use_imm=True, imm=1, uop_bgn=0, uop_end=uops,
                          iter_out=iters))
    p.finish()
    return p
