"""conv2d on packed layouts with a fused requantisation epilogue.

data (N/B, C/BI, H, W, B, BI) int8, kernel (CO/BO, C/BI, KH, KW, BO, BI) int8,
bias (CO/BO, B, BO) int32 -> out (N/B, CO/BO, OH, OW, B, BO) int8. Any stride, padding
and kernel size; channel counts must be multiples of the block. Zero padding is done by
the LOAD of the input tile.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from vtalab.spec import Config
from vtalab.spec.isa import wrap_signed

from .. import te
from ..errors import ShapeError
from ..vta.intrin import gemm_intrinsic
from .common import Requant, divides, divisors, epilogue, place_acc_stages


@dataclass(frozen=True)
class Conv2dShape:
    batch: int
    channels: int
    height: int
    width: int
    filters: int
    kernel: int
    stride: int = 1
    pad: int = 0

    @property
    def out_hw(self) -> tuple[int, int]:
        return ((self.height + 2 * self.pad - self.kernel) // self.stride + 1,
                (self.width + 2 * self.pad - self.kernel) // self.stride + 1)

    @property
    def macs(self) -> int:
        oh, ow = self.out_hw
        return self.batch * self.filters * oh * ow * self.channels * self.kernel ** 2


@dataclass(frozen=True)
class Conv2dKnobs:
    """Tile sizes (output rows/cols, filter and input-channel blocks), vthreads and axis."""
    tile_h: int = 1
    tile_w: int = 0            # 0: whole output width
    tile_co: int = 1
    tile_ci: int = 1
    vthreads: int = 1
    vthread_axis: str = "co"   # "co" or "h"


def conv2d_space(cfg: Config, shape: Conv2dShape) -> dict:
    oh, ow = shape.out_hw
    return {"tile_h": divisors(oh), "tile_w": divisors(ow),
            "tile_co": divisors(shape.filters // cfg.block_out),
            "tile_ci": divisors(shape.channels // cfg.block_in),
            "vthreads": [1, 2, 4], "vthread_axis": ["co", "h"]}


def _check(cfg: Config, sh: Conv2dShape):
    if sh.batch % cfg.batch or sh.channels % cfg.block_in or sh.filters % cfg.block_out:
        raise ShapeError(f"conv2d batch/channels/filters must be multiples of batch "
                         f"{cfg.batch}/block_in {cfg.block_in}/block_out {cfg.block_out}, not "
                         f"{sh.batch}/{sh.channels}/{sh.filters}")
    if sh.pad >= sh.kernel and sh.pad:
        raise ShapeError(f"conv2d pad must be less than the kernel size {sh.kernel} (a window "
                         f"must not be all padding), not {sh.pad}")
    if min(sh.out_hw) <= 0 or sh.stride <= 0 or sh.pad < 0:
        raise ShapeError(f"conv2d output must be non-empty, not {sh.out_hw} for {sh}")


def conv2d(cfg: Config, sh: Conv2dShape, rq: Requant = Requant(), knobs=Conv2dKnobs()):
    """(schedule, [data, kernel, bias?, out]) for a packed conv2d on the accelerator."""
    _check(cfg, sh)
    B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
    nb, cb, cob = sh.batch // B, sh.channels // BI, sh.filters // BO
    oh, ow = sh.out_hw
    H, W, K, S = sh.height, sh.width, sh.kernel, sh.stride
    data = te.placeholder((nb, cb, H, W, B, BI), "int8", "data")
    kernel = te.placeholder((cob, cb, K, K, BO, BI), "int8", "kernel")
    bias = te.placeholder((cob, B, BO), "int32", "bias")
    padded, row = input_stage(data, sh)
    ci, kh, kw, cii = (te.reduce_axis(cb, "ci"), te.reduce_axis(K, "kh"),
                       te.reduce_axis(K, "kw"), te.reduce_axis(BI, "cii"))
    shape = (nb, cob, oh, ow, B, BO)
    acc = te.compute(shape, lambda n, co, h, w, x, y: te.sum(
        padded[n, ci, row(h, kh), w * S + kw, x, cii].astype("int32")
        * kernel[co, ci, kh, kw, y, cii].astype("int32"), axis=[ci, kh, kw, cii]), "conv")
    stages, out = epilogue(acc, bias, rq, shape, lambda i: (i[1], i[4], i[5]))
    operands = [(bias, stages[0])] if rq.bias else []
    sch = schedule_conv2d(cfg, sh, data, padded, kernel, acc, stages, operands, out, knobs)
    return sch, [data, kernel] + ([bias] if rq.bias else []) + [out]


def input_stage(data, sh: Conv2dShape):
    """(the stage the inp buffer caches, its row index for output row h and kernel row kh).

    With padding: the zero-padded input (the LOAD pads on the fly). A 1x1 kernel with a
    stride reads only every stride-th input row: a stage of just those rows makes the LOAD
    skip the others (a row stride of stride * width), halving the bytes of a stride-2
    1x1 convolution. Otherwise the input itself.
    """
    nb, cb, H, W, B, BI = data.shape
    P, S, K = sh.pad, sh.stride, sh.kernel
    if P:
        return te.compute((nb, cb, H + 2 * P, W + 2 * P, B, BI), lambda n, c, h, w, x, y:
                          te.select((h >= P) & (h < H + P) & (w >= P) & (w < W + P),
                                    data[n, c, h - P, w - P, x, y], 0),
                          "data_pad"), lambda h, kh: h * S + kh
    if K == 1 and S > 1:
        oh = sh.out_hw[0]
        return te.compute((nb, cb, oh, W, B, BI), lambda n, c, h, w, x, y:
                          data[n, c, h * S, w, x, y], "data_rows"), lambda h, kh: h + kh
    return data, lambda h, kh: h * S + kh


def inp_rows(sh: Conv2dShape, tile_h: int) -> int:
    """Input rows one inp tile of ``tile_h`` output rows holds."""
    if sh.kernel == 1 and sh.stride > 1 and not sh.pad:
        return tile_h
    return (tile_h - 1) * sh.stride + sh.kernel


def schedule_conv2d(cfg, sh, data, padded, kernel, acc, stages, operands, out,
                    kn: Conv2dKnobs):
    """The accelerator schedule of a packed conv2d; ``operands`` as in place_acc_stages."""
    oh, ow = sh.out_hw
    tw = kn.tile_w or ow
    divides(kn.tile_h, "tile_h", oh, "output height")
    divides(tw, "tile_w", ow, "output width")
    divides(kn.tile_co, "tile_co", sh.filters // cfg.block_out, "filter blocks")
    divides(kn.tile_ci, "tile_ci", sh.channels // cfg.block_in, "channel blocks")
    s = te.create_schedule(out)
    if padded is data:
        inp = s.cache_read(data, "inp", [acc])
    else:
        inp = padded
        s[inp].set_scope("inp")
    wgt = s.cache_read(kernel, "wgt", [acc])
    n, co, h, w, x, y = s[out].op.axes
    coo, coi = s[out].split(co, kn.tile_co)
    ho, hi = s[out].split(h, kn.tile_h)
    wo, wi = s[out].split(w, tw)
    if kn.vthread_axis == "co":
        divides(kn.vthreads, "vthreads", sh.filters // cfg.block_out // kn.tile_co, "filter tiles")
        vt, coo = s[out].split(coo, nparts=kn.vthreads)
    else:
        divides(kn.vthreads, "vthreads", oh // kn.tile_h, "row tiles")
        vt, ho = s[out].split(ho, nparts=kn.vthreads)
    s[out].reorder(n, vt, coo, ho, wo, coi, hi, wi, x, y)
    s[out].vthread(vt)
    place_acc_stages(s, out, wo, acc, stages, operands, cfg, vectors_once=True)
    cn, cco, ch, cw, cx, cy = s[acc].op.axes
    ci, kh, kw, cii = s[acc].op.reduce_axes
    cio, cii2 = s[acc].split(ci, kn.tile_ci)
    s[acc].reorder(cio, cn, cco, cii2, kh, kw, ch, cw, cx, cy, cii)
    for buf in (inp, wgt):
        s[buf].compute_at(s[acc], cio)
        s[buf].pragma(s[buf].op.axes[0], "dma_copy")
    s[acc].tensorize(cx, gemm_intrinsic(cfg))
    s[out].pragma(coi, "dma_copy")
    return s


def conv2d_reference(data, kernel, bias, sh: Conv2dShape, rq: Requant,
                     acc_bits: int = 32) -> np.ndarray:
    """numpy int8 reference on the packed layouts (sums wrap to ``acc_bits``)."""
    P, S, K = sh.pad, sh.stride, sh.kernel
    oh, ow = sh.out_hw
    d = np.pad(data.astype(np.int64), ((0, 0), (0, 0), (P, P), (P, P), (0, 0), (0, 0)))
    acc = np.zeros((data.shape[0], kernel.shape[0], oh, ow, data.shape[4], kernel.shape[4]),
                   np.int64)
    for kh in range(K):
        for kw in range(K):
            win = d[:, :, kh:kh + S * oh:S, kw:kw + S * ow:S]
            acc += np.einsum("ncHWbi,ocpi->noHWbp",
                             win, kernel[:, :, kh, kw].astype(np.int64))
    acc = wrap_signed(acc, acc_bits).astype(np.int32)
    b = bias[None, :, None, None] if (bias is not None and rq.bias) else None
    return rq.numpy(acc, b)


def sram_use(cfg: Config, sh: Conv2dShape, kn: Conv2dKnobs) -> dict:
    """Entries each SRAM buffer needs for these knobs (virtual threads replicate tiles)."""
    oh, ow = sh.out_hw
    tw = kn.tile_w or ow
    rows, cols = inp_rows(sh, kn.tile_h), (tw - 1) * sh.stride + sh.kernel
    vt = kn.vthreads
    return {"inp": vt * kn.tile_ci * rows * cols,
            "wgt": vt * kn.tile_co * kn.tile_ci * sh.kernel ** 2,
            "acc": vt * kn.tile_co * (kn.tile_h * tw + 1)}


def default_conv2d_knobs(cfg: Config, sh: Conv2dShape, vthreads: int = 2) -> Conv2dKnobs:
    """Large tiles that fit the SRAMs: most output per load, then fewest reduction steps."""
    space = conv2d_space(cfg, sh)
    best, best_key = None, None
    for th in space["tile_h"]:
        for tco in space["tile_co"]:
            if (sh.filters // cfg.block_out // tco) % vthreads:
                continue
            for tci in space["tile_ci"]:
                kn = Conv2dKnobs(tile_h=th, tile_co=tco, tile_ci=tci, vthreads=vthreads)
                use = sram_use(cfg, sh, kn)
                if any(use[b] > cfg.depth(b) for b in use):
                    continue
                key = (th * tco * sh.out_hw[1], tci)
                if best_key is None or key > best_key:
                    best, best_key = kn, key
    if best is None:
        raise ShapeError(f"conv2d {sh} must fit the SRAMs with some tiling, not with "
                         f"{vthreads} virtual threads on {cfg.name}")
    return best
