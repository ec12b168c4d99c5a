"""Canonical hand-scheduled programs: the blocked int8 matrix multiply with requantisation.

C = clip((A @ W.T + bias) >> shift, -128, 127) with A (M, K) int8, W (N, K) int8, bias (N,)
int32. Output tiles are computed one after another; with ``vthreads=2`` the inp/wgt and
acc/out buffers hold two slots each and the dependency tokens let loads, GEMMs and stores of
neighbouring steps overlap (double buffering).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vtalab.spec import Config
from vtalab.spec.errors import ProgramError
from vtalab.spec.isa import AluOp, wrap_signed

from .builder import ProgramBuilder
from .layout import pack, unpack


@dataclass(frozen=True)
class MatmulTiles:
    """Tile sizes in entries: tm rows of batch, tn blocks of block_out, tk blocks of block_in."""
    tm: int
    tn: int
    tk: int


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def choose_tiles(cfg: Config, mb: int, kb: int, nb: int, vthreads: int = 1) -> MatmulTiles:
    """The tiles with the most MACs per step that fit ``vthreads`` slots of every buffer."""
    best = None
    for tk in _divisors(kb):
        for tn in _divisors(nb):
            if tn * tk * vthreads > cfg.wgt_depth:
                continue
            for tm in _divisors(mb):
                fits = (tm * tk * vthreads <= cfg.inp_depth
                        and tm * tn * vthreads + tn <= cfg.acc_depth)
                score = (tm * tn * tk, tm * tn)
                if fits and (best is None or score > best[0]):
                    best = (score, MatmulTiles(tm, tn, tk))
    if best is None:
        raise ProgramError(f"matmul of {mb}x{kb}x{nb} blocks must fit the buffers with "
                           f"{vthreads} slot(s), not even a 1x1x1 tile does")
    return best[1]


def matmul_reference(a: np.ndarray, w: np.ndarray, bias: np.ndarray, shift: int,
                     acc_bits: int = 32) -> np.ndarray:
    """What the accelerator computes, in plain numpy (wrap-around at ``acc_bits``,
    arithmetic shift)."""
    acc = (a.astype(np.int64) @ w.astype(np.int64).T + bias.astype(np.int64))
    acc = wrap_signed(acc, acc_bits) >> shift
    return np.clip(acc, -128, 127).astype(np.int8)


class BlockedMatmul:
    """Builds the program for one (M, K, N) problem on one device."""

    def __init__(self, cfg: Config, m: int, k: int, n: int, shift: int = 8,
                 vthreads: int = 1, tiles: MatmulTiles | None = None):
        if vthreads not in (1, 2):
            raise ProgramError(f"vthreads must be 1 or 2, not {vthreads!r}")
        self.cfg, self.shift, self.vthreads = cfg, shift, vthreads
        self.m, self.k, self.n = m, k, n
        self.mb, self.kb, self.nb = m // cfg.batch, k // cfg.block_in, n // cfg.block_out
        self.tiles = tiles or choose_tiles(cfg, self.mb, self.kb, self.nb, vthreads)
        t = self.tiles
        if self.mb % t.tm or self.nb % t.tn or self.kb % t.tk:
            raise ProgramError(f"tiles {t} must divide the problem of {self.mb}x{self.kb}x"
                               f"{self.nb} blocks")

    # ---- data ---------------------------------------------------------------------------
    def place(self, device, a, w, bias) -> dict:
        """Copy packed operands into device DRAM; returns the buffers."""
        cfg = self.cfg
        bias_rows = np.broadcast_to(bias.astype(np.int32), (cfg.batch, self.n))
        data = {"a": pack(cfg, "inp", a.astype(np.int8)),
                "w": pack(cfg, "wgt", w.astype(np.int8)),
                "bias": pack(cfg, "acc", np.ascontiguousarray(bias_rows))}
        bufs = {}
        for name, array in data.items():
            bufs[name] = device.alloc(array.nbytes)
            bufs[name].write(array)
        bufs["c"] = device.alloc(self.m * self.n * cfg.out_bits // 8)
        return bufs

    def result(self, bufs) -> np.ndarray:
        cfg = self.cfg
        shape = (self.mb, self.nb, cfg.batch, cfg.block_out)
        return unpack(cfg, "out", bufs["c"].read(np.int8, shape))

    # ---- program ------------------------------------------------------------------------
    def build(self, builder: ProgramBuilder, bufs) -> None:
        t, step, tile = self.tiles, 0, 0
        for mt in range(self.mb // t.tm):
            for nt in range(self.nb // t.tn):
                slot = tile % self.vthreads
                if tile >= self.vthreads:
                    builder.dep_pop("store", "compute")        # acc/out slot is free again
                self._reset(builder, slot)
                for kt in range(self.kb // t.tk):
                    self._load_step(builder, bufs, step, mt, nt, kt)
                    self._gemm_step(builder, step, slot)
                    step += 1
                self._requant(builder, bufs, slot, nt)
                self._store(builder, bufs, slot, mt, nt)
                tile += 1

    def _acc_base(self, slot: int) -> int:
        return slot * self.tiles.tm * self.tiles.tn

    def _reset(self, b: ProgramBuilder, slot: int) -> None:
        t = self.tiles
        b.uop_loop_begin(t.tm * t.tn, dst_factor=1)
        b.uop_push(self._acc_base(slot), 0, 0, reset=True)
        b.uop_loop_end()
        b.push_gemm()

    def _load_step(self, b: ProgramBuilder, bufs, step: int, mt: int, nt: int, kt: int) -> None:
        t, s = self.tiles, step % self.vthreads
        if step >= self.vthreads:
            b.dep_pop("compute", "load")                    # inp/wgt slot is free again
        b.load_2d("inp", s * t.tm * t.tk, bufs["a"], mt * t.tm * self.kb + kt * t.tk,
                  x_size=t.tk, y_size=t.tm, x_stride=self.kb)
        b.load_2d("wgt", s * t.tn * t.tk, bufs["w"], nt * t.tn * self.kb + kt * t.tk,
                  x_size=t.tk, y_size=t.tn, x_stride=self.kb)
        b.dep_push("load", "compute")

    def _gemm_step(self, b: ProgramBuilder, step: int, slot: int) -> None:
        t, s = self.tiles, step % self.vthreads
        b.dep_pop("load", "compute")
        b.uop_loop_begin(t.tm, dst_factor=t.tn, src_factor=t.tk)
        b.uop_loop_begin(t.tn, dst_factor=1, wgt_factor=t.tk)
        for k in range(t.tk):
            b.uop_push(self._acc_base(slot), s * t.tm * t.tk + k, s * t.tn * t.tk + k)
        b.uop_loop_end()
        b.uop_loop_end()
        b.push_gemm()
        b.dep_push("compute", "load")

    def _requant(self, b: ProgramBuilder, bufs, slot: int, nt: int) -> None:
        t, base = self.tiles, self._acc_base(slot)
        bias_row = self.vthreads * t.tm * t.tn
        b.load_2d("acc", bias_row, bufs["bias"], nt * t.tn, x_size=t.tn)
        b.uop_loop_begin(t.tm, dst_factor=t.tn)
        for n in range(t.tn):
            b.uop_push(base + n, bias_row + n, mode="alu", alu_op=AluOp.ADD)
        b.uop_loop_end()
        b.push_alu()
        for op, imm in ((AluOp.SHR, self.shift), (AluOp.MAX, -128), (AluOp.MIN, 127)):
            b.uop_loop_begin(t.tm * t.tn, dst_factor=1)
            b.uop_push(base, base, mode="alu", alu_op=op, use_imm=True, imm=imm)
            b.uop_loop_end()
            b.push_alu()

    def _store(self, b: ProgramBuilder, bufs, slot: int, mt: int, nt: int) -> None:
        t = self.tiles
        b.dep_push("compute", "store")
        b.dep_pop("compute", "store")
        b.store_2d(self._acc_base(slot), bufs["c"], mt * t.tm * self.nb + nt * t.tn,
                   x_size=t.tn, y_size=t.tm, x_stride=self.nb)
        b.dep_push("store", "compute")
