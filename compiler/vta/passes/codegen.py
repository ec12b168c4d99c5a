"""Codegen: unroll the remaining loops and emit instructions, micro-ops and their DRAM image.

Micro-op kernels are cached in the uop buffer by content: a kernel is loaded (LOAD UOP on
the compute module) only when it is not resident; when the buffer is full it is reused
from the start, which is safe because the compute module runs in order.
"""
from __future__ import annotations

import numpy as np

from vtalab.runtime.program import UOP_SYMBOL
from vtalab.spec import Config, Isa
from vtalab.spec.isa import AluInsn, AluOp, GemmInsn, Mem, MemInsn, Opcode

from ...errors import LoweringError
from ...ir.arith import compiled, compiled_vector, evaluate
from ...ir.stmt import Allocate, Attr, For, Seq
from ..nodes import Dma, UopKernel
from ..stream import Record, Stream

_MEM = {"inp": Mem.INP, "wgt": Mem.WGT, "acc": Mem.ACC}


def codegen(func, cfg: Config) -> Stream:
    em = _Emitter(cfg)
    em.emit(func.body, {})
    words = np.concatenate(em.uop_chunks) if em.uop_chunks else np.zeros(0, np.uint32)
    return Stream(em.records, words, func.params, func.outputs)


class _Emitter:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.isa = Isa(cfg)
        self.records: list[Record] = []
        self.uop_chunks: list = []
        self.uop_dram: dict = {}
        self.uop_size = 0
        self.resident: dict = {}
        self.uop_top = 0
        self.pad_cache: dict = {}
        self.pad_vars: dict = {}      # id(Dma) -> the loop Vars its pad condition reads

    def emit(self, node, env) -> None:
        if isinstance(node, For):
            for i in range(node.extent):
                env[node.var] = i
                self.emit(node.body, env)
            del env[node.var]
        elif isinstance(node, Seq):
            for s in node.stmts:
                self.emit(s, env)
        elif isinstance(node, (Allocate, Attr)):
            self.emit(node.body, env)
        elif isinstance(node, Dma):
            self._dma(node, env)
        elif isinstance(node, UopKernel):
            self._kernel(node, env)
        else:
            raise LoweringError(f"codegen statement must be a DMA or micro-op kernel, not "
                                f"{type(node).__name__}: {node!r}")

    # ---- DMA --------------------------------------------------------------------------
    def _dma(self, d: Dma, env) -> None:
        sram = evaluate(d.sram_index, env)
        dram = evaluate(d.dram_index, env)
        y0 = y1 = x0 = x1 = 0
        ys, xs = d.y_size, d.x_size
        if d.pad_cond is not None:
            y0, y1, x0, x1 = self._pads(d, env)
            ys, xs = d.y_size - y0 - y1, d.x_size - x0 - x1
            dram += y0 * d.x_stride + x0
        rows, cols = d.y_size, d.x_size
        if d.direction == "store":
            insn = MemInsn(opcode=Opcode.STORE, mem=Mem.OUT, sram_base=sram, dram_base=dram,
                           y_size=ys, x_size=xs, x_stride=d.x_stride)
            rec = Record(insn, "store", d.dram.name, reads=(("out", sram, sram + rows * cols - 1),))
        else:
            mem = _MEM[d.sram.scope]
            insn = MemInsn(opcode=Opcode.LOAD, mem=mem, sram_base=sram, dram_base=dram,
                           y_size=ys, x_size=xs, x_stride=d.x_stride, y_pad_0=y0, y_pad_1=y1,
                           x_pad_0=x0, x_pad_1=x1)
            rec = Record(insn, d.unit, d.dram.name,
                         writes=((d.sram.scope, sram, sram + rows * cols - 1),))
        self.records.append(rec)

    def _pads(self, d: Dma, env):
        outer_vars = self.pad_vars.get(id(d))
        if outer_vars is None:
            from ...ir.visit import free_vars
            outer_vars = sorted((v for v in free_vars(d.pad_cond) if v not in (d.y_var, d.x_var)),
                                key=lambda v: v.uid)
            self.pad_vars[id(d)] = outer_vars
        key = (id(d), tuple((v.uid, env[v]) for v in outer_vars))
        if key not in self.pad_cache:
            self.pad_cache[key] = _rectangle(_pad_mask(d, env), d)
        return self.pad_cache[key]

    # ---- micro-op kernels ---------------------------------------------------------------
    def _kernel(self, k: UopKernel, env) -> None:
        rest = [tuple(evaluate(e, env) if e is not None else 0 for e in r) for r in k.rests]
        table = np.array(k.uops, dtype=np.int64).reshape(-1, 4)
        base = np.array(rest, dtype=np.int64)[table[:, 0]]
        dst, src, wgt = (table[:, 1:] + base).T
        if k.kind == "alu" and k.template.src is None:
            src = np.zeros_like(dst)
        words = self.isa.encode_uops(dst, src, wgt)
        bgn = self._resident(words)
        (eo, do, so, wo), (ei, di, si, wi) = k.iters
        common = dict(uop_bgn=bgn, uop_end=bgn + len(words), iter_out=eo, iter_in=ei,
                      dst_factor_out=do, dst_factor_in=di, src_factor_out=so, src_factor_in=si)
        span = lambda a, fo, fi: (int(a.min()), int(a.max()) + (eo - 1) * fo + (ei - 1) * fi)  # noqa
        d_lo, d_hi = span(dst, do, di)
        writes = (("acc", d_lo, d_hi), ("out", d_lo, d_hi))
        uop_read = ("uop", bgn, bgn + len(words) - 1)
        if k.kind == "gemm":
            t = k.template
            insn = GemmInsn(reset=t.reset, overwrite=t.overwrite, wgt_factor_out=wo,
                            wgt_factor_in=wi, **common)
            reads = (uop_read,) if t.reset else (
                uop_read, ("inp",) + span(src, so, si), ("wgt",) + span(wgt, wo, wi))
        else:
            t = k.template
            imm = t.imm if t.imm is not None else 0
            insn = AluInsn(alu_op=AluOp[t.op.upper()], use_imm=t.src is None, imm=imm, **common)
            reads = (uop_read, ("acc", d_lo, d_hi)) + (
                (("acc",) + span(src, so, si),) if t.src is not None else ())
        self.records.append(Record(insn, "compute", None, reads, writes))

    def _resident(self, words: np.ndarray) -> int:
        key = words.tobytes()
        if key in self.resident:
            return self.resident[key]
        n = len(words)
        if self.uop_top + n > self.cfg.uop_depth:
            self.resident.clear()
            self.uop_top = 0
        bgn = self.uop_top
        self.uop_top += n
        self.resident[key] = bgn
        if key not in self.uop_dram:
            self.uop_dram[key] = self.uop_size
            self.uop_chunks.append(words)
            self.uop_size += n
        insn = MemInsn(opcode=Opcode.LOAD, mem=Mem.UOP, sram_base=bgn,
                       dram_base=self.uop_dram[key], y_size=1, x_size=n, x_stride=n)
        self.records.append(Record(insn, "compute", UOP_SYMBOL, writes=(("uop", bgn, bgn + n - 1),)))
        return bgn


def _pad_mask(d: Dma, env) -> np.ndarray:
    """Where the DMA's pad condition holds, over its (y, x) tile: one vectorised
    evaluation with index arrays for y and x, or one evaluation per point where the
    condition has nodes that do not vectorise (or raises)."""
    shape, local = (d.y_size, d.x_size), dict(env)
    cond = compiled_vector(d.pad_cond)
    if cond is not None:
        if d.y_var is not None:
            local[d.y_var] = np.arange(d.y_size)[:, None]
        if d.x_var is not None:
            local[d.x_var] = np.arange(d.x_size)[None, :]
        try:
            with np.errstate(all="raise"):
                value = cond(local)
            if value.dtype == bool:
                return np.broadcast_to(value, shape)
        except (ArithmeticError, ValueError):
            pass
    cond = compiled(d.pad_cond)
    mask = np.zeros(shape, dtype=bool)
    for y in range(d.y_size):
        if d.y_var is not None:
            local[d.y_var] = y
        for x in range(d.x_size):
            if d.x_var is not None:
                local[d.x_var] = x
            mask[y, x] = bool(cond(local))
    return mask


def _rectangle(mask: np.ndarray, d: Dma):
    rows, cols = np.flatnonzero(mask.any(axis=1)), np.flatnonzero(mask.any(axis=0))
    if len(rows) == 0:
        raise LoweringError(f"padded load into {d.sram.name} must read at least one element, "
                            f"not a tile that is all padding")
    ya, yb, xa, xb = rows[0], rows[-1] + 1, cols[0], cols[-1] + 1
    expect = np.zeros_like(mask)
    expect[ya:yb, xa:xb] = True
    if not np.array_equal(mask, expect):
        raise LoweringError(f"padding of {d.sram.name} must be a border around one rectangle")
    return int(ya), int(mask.shape[0] - yb), int(xa), int(mask.shape[1] - xb)
