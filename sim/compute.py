"""The compute module: GEMM and ALU micro-op loops over the accumulator.

Everything an instruction's loop nest implies — index arrays, bounds checks, hazard-free
ALU chunks, the GEMM's BLAS mapping — depends only on the instruction and its micro-ops,
so it is planned once and cached under (instruction, micro-op words). A program run many
times then spends its time on the data: gathers, matrix products, accumulator updates.
"""
from __future__ import annotations

import numpy as np

from vtalab.spec import Config, Isa
from vtalab.spec.isa import AluInsn, AluOp, GemmInsn

from .alu import alu_apply, as_slice, hazard_free_chunks, narrow, wrap
from .gemm import GeneralPlan, exact_float, plan_structured
from .state import SramState

PLAN_CACHE_BYTES = 512 << 20     # index arrays kept across runs before the cache is reset


class ComputeUnit:
    """Executes GEMM and ALU instructions against an SramState.

    The GEMM operands are read from float copies of the inp and wgt buffers (created on
    first use, refreshed by ``loaded`` after each LOAD): code that writes those SRAM arrays
    directly after a GEMM must call ``loaded`` too.
    """

    def __init__(self, cfg: Config, sram: SramState):
        self.cfg = cfg
        self.isa = Isa(cfg)
        self.sram = sram
        self._inp_f = self._wgt_t = None
        self._float_dtype = exact_float(cfg, cfg.block_in) or np.dtype(np.float64)
        self._plans, self._plan_bytes = {}, 0

    # ---- float operand copies --------------------------------------------------------
    def loaded(self, buffer: str, first: int, count: int) -> None:
        """Refresh the float copy of ``buffer`` rows a LOAD just wrote."""
        rows = slice(first, first + count)
        if buffer == "inp" and self._inp_f is not None:
            self._inp_f[rows] = self.sram.inp[rows]
        elif buffer == "wgt" and self._wgt_t is not None:
            self._wgt_t[rows] = self.sram.wgt[rows].transpose(0, 2, 1)

    def _operands(self) -> tuple[np.ndarray, np.ndarray]:
        """(inp rows, transposed wgt rows) as floats, each with a zero row at the end."""
        if self._inp_f is None:
            inp, wgt = self.sram.inp, self.sram.wgt
            self._inp_f = np.zeros((len(inp) + 1,) + inp.shape[1:], self._float_dtype)
            self._inp_f[:-1] = inp
            self._wgt_t = np.zeros((len(wgt) + 1, wgt.shape[2], wgt.shape[1]),
                                   self._float_dtype)
            self._wgt_t[:-1] = wgt.transpose(0, 2, 1)
        return self._inp_f, self._wgt_t

    # ---- plans -----------------------------------------------------------------------
    def _plan(self, insn, what: str, build):
        self.sram.check_range("uop", insn.uop_bgn, max(insn.uop_end - insn.uop_bgn, 0), what)
        words = self.sram.uop[insn.uop_bgn:insn.uop_end]
        key = (insn, words.tobytes())
        plan = self._plans.get(key)
        if plan is None:
            plan = build(insn, self.isa.decode_uops(words))
            size = _nbytes(plan)
            if self._plan_bytes + size > PLAN_CACHE_BYTES:
                self._plans, self._plan_bytes = {}, 0
            self._plans[key] = plan
            self._plan_bytes += size
        return plan

    def _loop(self, insn, base):
        """Every micro-op iteration's (dst, src, wgt) indices, in execution order."""
        dst, src, wgt = base
        outer = np.arange(insn.iter_out, dtype=np.int64)[:, None, None]
        inner = np.arange(insn.iter_in, dtype=np.int64)[None, :, None]

        def expand(base, f_out, f_in):
            return (base[None, None, :] + outer * f_out + inner * f_in).reshape(-1)

        dst = expand(dst, insn.dst_factor_out, insn.dst_factor_in)
        src = expand(src, insn.src_factor_out, insn.src_factor_in)
        wgt = expand(wgt, getattr(insn, "wgt_factor_out", 0), getattr(insn, "wgt_factor_in", 0))
        return dst, src, wgt

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

    def _plan_gemm(self, insn: GemmInsn, base) -> "_GemmPlan":
        count = len(base[0]) * insn.iter_out * insn.iter_in
        if count == 0:                  # no micro-op: no index to check
            return _GemmPlan(0, None, None)
        self._check_loop_bounds(insn, base, "GEMM")
        if insn.reset:
            return _GemmPlan(count, as_slice(np.unique(self._loop(insn, base)[0])), None)
        cfg = self.cfg
        if insn.overwrite:          # each row keeps the products of its last micro-op only
            dst, src, wgt = self._loop(insn, base)
            _, first_from_end = np.unique(dst[::-1], return_index=True)
            last = len(dst) - 1 - first_from_end
            return _GemmPlan(count, None, GeneralPlan(cfg, dst[last], src[last], wgt[last]),
                             overwrite=True)
        products = plan_structured(cfg, base, insn, cfg.inp_depth, cfg.wgt_depth) \
            or GeneralPlan(cfg, *self._loop(insn, base))
        return _GemmPlan(count, None, products)

    def _plan_alu(self, insn: AluInsn, base) -> "_AluPlan":
        dst, src, _ = self._loop(insn, base)
        self.sram.check_indices("acc", dst, "ALU dst")
        if not insn.use_imm:
            self.sram.check_indices("acc", src, "ALU src")
        chunks = [(as_slice(dst[part]), None if insn.use_imm else as_slice(src[part]))
                  for part in hazard_free_chunks(dst, None if insn.use_imm else src)]
        return _AluPlan(len(dst), chunks)

    # ---- execution -------------------------------------------------------------------
    def _write(self, rows, values: np.ndarray) -> None:
        """Write acc rows (values already wrapped) and their low out_bits to the out buffer."""
        acc, out = self.sram.acc, self.sram.out
        acc[rows] = values
        out[rows] = narrow(values, self.cfg.out_bits, out.dtype)

    def gemm(self, insn: GemmInsn) -> int:
        """Run one GEMM instruction; return the number of micro-ops executed."""
        plan = self._plan(insn, "GEMM", self._plan_gemm)
        if plan.reset_rows is not None:
            self.sram.acc[plan.reset_rows] = 0
            self.sram.out[plan.reset_rows] = 0
        elif plan.products is not None:
            rows, sums = plan.products.products(*self._operands())
            acc, bits = self.sram.acc, self.cfg.acc_bits
            if plan.overwrite:
                total = narrow(sums, bits, acc.dtype)
            elif acc.dtype.itemsize * 8 == bits:   # the dtype's wrap-around is the acc's
                total = acc[rows] + sums.astype(acc.dtype, copy=False)
            else:
                total = wrap(acc[rows].astype(np.int64) + wrap(sums, bits), bits)
            self._write(rows, total)
        return plan.count

    def alu(self, insn: AluInsn) -> int:
        """Run one ALU instruction; return the number of micro-ops executed."""
        plan = self._plan(insn, "ALU", self._plan_alu)
        acc = self.sram.acc
        for rows, src in plan.chunks:
            a = acc[rows].astype(np.int64)
            other = None if src is None else acc[src].astype(np.int64)
            if insn.alu_op == AluOp.SAT:      # the immediate and (optionally) src
                out = alu_apply(self.cfg, insn.alu_op, a, np.int64(insn.imm), other)
            else:
                b = np.int64(insn.imm) if src is None else other
                out = alu_apply(self.cfg, insn.alu_op, a, b)
            self._write(rows, narrow(out, self.cfg.acc_bits, acc.dtype))
        return plan.count


class _GemmPlan:
    def __init__(self, count: int, reset_rows, products, overwrite: bool = False):
        self.count, self.reset_rows, self.products = count, reset_rows, products
        self.overwrite = overwrite


class _AluPlan:
    def __init__(self, count: int, chunks: list):
        self.count, self.chunks = count, chunks


def _nbytes(obj) -> int:
    """Bytes of the numpy arrays a plan holds (in attributes, lists and nested plans)."""
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(x) for x in obj)
    if hasattr(obj, "__dict__") and not isinstance(obj, Config):
        return sum(_nbytes(x) for x in vars(obj).values())
    return 0
