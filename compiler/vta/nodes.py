"""Accelerator statements that replace generic loop IR during lowering.

Indices are SRAM entry indices (relative to the buffer until ``allocate_sram`` adds bases,
absolute after) and DRAM entry indices relative to the DRAM buffer.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ..ir.printer import format_expr as fe
from ..ir.stmt import Buffer, Stmt


class VtaStmt(Stmt):
    """Base of accelerator statements; ``unit`` is the module that runs it."""

    def sram_refs(self) -> list[tuple[str, str]]:
        """(buffer field, index field) pairs naming SRAM accesses."""
        return []

    def map_sram(self, fn) -> "VtaStmt":
        """Rebuild with fn(buffer, index) -> (buffer, index) applied to each SRAM access."""
        changes = {}
        for bf, xf in self.sram_refs():
            buf = getattr(self, bf)
            if buf is None:
                continue
            nb, nx = fn(buf, getattr(self, xf))
            changes[bf], changes[xf] = nb, nx
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True, repr=False)
class Dma(VtaStmt):
    """2-D LOAD (DRAM -> inp/wgt/acc) or STORE (out -> DRAM) with optional zero padding."""
    direction: str
    sram: Buffer
    sram_index: Any
    dram: Buffer
    dram_index: Any
    y_size: int
    x_size: int
    x_stride: int
    y_var: Any = None
    x_var: Any = None
    pad_cond: Any = None

    def sram_refs(self):
        return [("sram", "sram_index")]

    @property
    def unit(self) -> str:
        if self.direction == "store":
            return "store"
        return "load" if self.sram.scope in ("inp", "wgt") else "compute"

    def format(self) -> str:
        pad = f" pad_if {fe(self.pad_cond)}" if self.pad_cond is not None else ""
        arrow = (f"{self.sram.name}[{fe(self.sram_index)}] <- {self.dram.name}[{fe(self.dram_index)}]"
                 if self.direction == "load" else
                 f"{self.dram.name}[{fe(self.dram_index)}] <- {self.sram.name}[{fe(self.sram_index)}]")
        return (f"dma_{self.direction} {arrow} y={self.y_size} x={self.x_size} "
                f"stride={self.x_stride}{pad}")


@dataclass(frozen=True, repr=False)
class Gemm(VtaStmt):
    acc: Buffer
    acc_index: Any
    inp: Any = None
    inp_index: Any = None
    wgt: Any = None
    wgt_index: Any = None
    reset: bool = False
    overwrite: bool = False         # acc := inp x wgt (GEMM_OVERWRITE), not acc +=

    unit = "compute"

    def sram_refs(self):
        return [("acc", "acc_index"), ("inp", "inp_index"), ("wgt", "wgt_index")]

    def format(self) -> str:
        if self.reset:
            return f"gemm_reset {self.acc.name}[{fe(self.acc_index)}]"
        return (f"gemm {self.acc.name}[{fe(self.acc_index)}] "
                f"{':=' if self.overwrite else '+='} {self.inp.name}"
                f"[{fe(self.inp_index)}] x {self.wgt.name}[{fe(self.wgt_index)}]")


@dataclass(frozen=True, repr=False)
class Alu(VtaStmt):
    """acc[dst] = acc[dst] op (imm | acc[src]); op in add, mul, min, max, shr, mov.

    ``sat`` (requantise) uses the immediate (shift and relu, see spec.isa.sat_imm) and,
    when ``src`` is set, adds acc[src] first."""
    op: str
    acc: Buffer
    dst_index: Any
    src: Any = None
    src_index: Any = None
    imm: Any = None

    unit = "compute"

    def sram_refs(self):
        return [("acc", "dst_index"), ("src", "src_index")]

    def format(self) -> str:
        rhs = f"{self.imm}" if self.imm is not None else ""
        if self.src is not None:
            rhs += (", " if rhs else "") + f"{self.src.name}[{fe(self.src_index)}]"
        return f"alu_{self.op} {self.acc.name}[{fe(self.dst_index)}] <- {rhs}"


@dataclass(frozen=True, repr=False)
class UopKernel(VtaStmt):
    """One GEMM/ALU instruction: micro-ops enumerated from inner loops, two folded loops.

    ``uops``: per micro-op (leaf number, dst, src, wgt) contributions of the enumerated
    loops; ``rests``: per leaf, the (dst, src, wgt) expressions of the outer loops;
    ``iters``: ((extent, dst, src, wgt factors) for iter_out, for iter_in).
    """
    kind: str
    template: Any          # the Gemm or Alu leaf (op, reset, imm) it came from
    uops: tuple
    rests: tuple
    iters: tuple
    body: Any = None       # the block it replaces, for printing

    unit = "compute"

    def format(self) -> str:
        (eo, *fo), (ei, *fi) = self.iters
        return (f"{self.kind}_kernel {self.template.format()} uops={len(self.uops)} "
                f"iter_out={eo}{tuple(fo)} iter_in={ei}{tuple(fi)}")
