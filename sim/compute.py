"""The compute module: GEMM and ALU micro-op loops over the accumulator."""
from __future__ import annotations

import numpy as np

from vtalab.spec import Config, Isa

from vtalab.spec.isa import AluInsn, AluOp, GemmInsn

from .alu import alu_apply, hazard_free_chunks, wrap
from .gemm import accumulate_products, structured_products
from .state import SramState


class ComputeUnit:
    """Executes GEMM and ALU instructions against an SramState."""

    def __init__(self, cfg: Config, sram: SramState):
        self.cfg = cfg
        self.isa = Isa(cfg)
        self.sram = sram
        self._float = {}

    def loaded(self, buffer: str, first: int, count: int) -> None:
        """Refresh the float copy of ``buffer`` rows a LOAD just wrote."""
        cached = self._float.get(buffer)
        if cached is not None:
            rows = slice(first, first + count)
            cached[rows] = self.sram[buffer][rows]

    def _as_float(self, buffer: str) -> np.ndarray:
        if buffer not in self._float:
            self._float[buffer] = self.sram[buffer].astype(np.float64)
        return self._float[buffer]

    def _uop_fields(self, insn, what: str):
        self.sram.check_range("uop", insn.uop_bgn, max(insn.uop_end - insn.uop_bgn, 0), what)
        return self.isa.decode_uops(self.sram.uop[insn.uop_bgn:insn.uop_end])

    def _loop(self, insn, what: str, base=None):
        """Every micro-op iteration's (dst, src, wgt) indices, in execution order."""
        dst, src, wgt = base if base is not None else self._uop_fields(insn, what)
        outer = np.arange(insn.iter_out, dtype=np.int64)[:, None, None]
        inner = np.arange(insn.iter_in, dtype=np.int64)[None, :, None]

        def expand(base, f_out, f_in):
            return (base[None, None, :] + outer * f_out + inner * f_in).reshape(-1)

        dst = expand(dst, insn.dst_factor_out, insn.dst_factor_in)
        src = expand(src, insn.src_factor_out, insn.src_factor_in)
        wgt = expand(wgt, getattr(insn, "wgt_factor_out", 0), getattr(insn, "wgt_factor_in", 0))
        return dst, src, wgt

    def _write(self, rows: np.ndarray, values: np.ndarray) -> None:
        """Write acc rows and mirror their low out_bits into the out buffer."""
        acc, out = self.sram.acc, self.sram.out
        acc[rows] = values.astype(acc.dtype)
        out[rows] = wrap(values.astype(np.int64), self.cfg.out_bits).astype(out.dtype)

    def _check_loop_bounds(self, insn, base, what: str) -> None:
        """Bounds of every index the loop visits, from the extremes (factors are >= 0)."""
        names = [("dst", "acc", insn.dst_factor_out, insn.dst_factor_in)]
        if isinstance(insn, GemmInsn) and not insn.reset:
            names += [("src", "inp", insn.src_factor_out, insn.src_factor_in),
                      ("wgt", "wgt", insn.wgt_factor_out, insn.wgt_factor_in)]
        for (name, buf, f_out, f_in), values in zip(names, base):
            if len(values):
                top = int(values.max()) + (insn.iter_out - 1) * f_out + (insn.iter_in - 1) * f_in
                self.sram.check_indices(buf, np.array([top]), f"{what} {name}")

    def gemm(self, insn: GemmInsn) -> int:
        """Run one GEMM instruction; return the number of micro-ops executed."""
        base = self._uop_fields(insn, "GEMM")
        count = len(base[0]) * insn.iter_out * insn.iter_in
        self._check_loop_bounds(insn, base, "GEMM")
        if count == 0:
            return 0
        if insn.reset:
            rows = np.unique(self._loop(insn, "GEMM", base)[0])
            self._write(rows, np.zeros((len(rows),) + self.sram.acc.shape[1:], np.int64))
            return count
        inp, wgt = self._as_float("inp"), self._as_float("wgt")
        found = structured_products(self.cfg, inp, wgt, base, insn)
        if found is None:
            found = accumulate_products(self.cfg, inp, wgt, *self._loop(insn, "GEMM", base))
        rows, sums = found
        total = self.sram.acc[rows].astype(np.int64) + _wrap_sums(sums, self.cfg.acc_bits)
        self._write(rows, wrap(total, self.cfg.acc_bits))
        return count

    def alu(self, insn: AluInsn) -> int:
        """Run one ALU instruction; return the number of micro-ops executed."""
        dst, src, _ = self._loop(insn, "ALU")
        self.sram.check_indices("acc", dst, "ALU dst")
        if not insn.use_imm:
            self.sram.check_indices("acc", src, "ALU src")
        acc = self.sram.acc
        for part in hazard_free_chunks(dst, None if insn.use_imm else src):
            rows = dst[part]
            a = acc[rows].astype(np.int64)
            other = None if insn.use_imm else acc[src[part]].astype(np.int64)
            if insn.alu_op == AluOp.SAT:      # the immediate and (optionally) src
                out = alu_apply(self.cfg, insn.alu_op, a, np.int64(insn.imm), other)
            else:
                b = np.int64(insn.imm) if insn.use_imm else other
                out = alu_apply(self.cfg, insn.alu_op, a, b)
            self._write(rows, out)
        return len(dst)


def _wrap_sums(sums: np.ndarray, bits: int) -> np.ndarray:
    if sums.dtype == np.float64:
        # exact integers below 2**53: reduce modulo 2**bits without leaving float exactness
        sums = np.fmod(sums, float(1 << bits)).astype(np.int64)
    return wrap(sums, bits)


