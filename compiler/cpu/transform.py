"""Data movement on the CPU: transpose, reshape, concat, pad, NCHW{c}c layout pack/unpack.

Each is a compute whose output's last axis is vectorised and whose outer axes run on the
thread pool (``schedule_elementwise``); the reads may be strided (gathers) but never
leave their buffer.
"""
from __future__ import annotations

import numpy as np

from .. import te
from ..errors import ShapeError
from .common import as_array, compiled, schedule_elementwise


def _run_unary(key, x, make_out, target):
    """Compile ``make_out(placeholder)`` for x's shape/dtype once, run it on ``x``."""
    x = as_array(x, name="x")

    def make():
        xt = te.placeholder(x.shape, x.dtype.name, "x")
        out = make_out(xt)
        s = te.create_schedule(out)
        schedule_elementwise(s, out, target)
        return s, [xt, out], key[0]
    k = compiled(key + (x.shape, x.dtype.name), make, target)
    out = np.empty(k.plan.params[-1].shape, k.plan.params[-1].dtype.numpy)
    k(x, out)
    return out


def transpose(x, axes, target=None) -> np.ndarray:
    x = as_array(x, name="x")
    axes = tuple(int(a) % x.ndim for a in axes)
    if sorted(axes) != list(range(x.ndim)):
        raise ShapeError(f"transpose axes must be a permutation of 0..{x.ndim - 1}, not {axes}")

    def make_out(xt):
        shape = tuple(xt.shape[a] for a in axes)

        def body(*o):
            idx = [None] * len(axes)
            for d, a in enumerate(axes):
                idx[a] = o[d]
            return xt[tuple(idx)]
        return te.compute(shape, body, name="transpose")
    return _run_unary(("transpose", axes), x, make_out, target)


def reshape(x, shape, target=None) -> np.ndarray:
    """A copy of ``x`` with a new shape (-1 allowed once)."""
    x = as_array(x, name="x")
    shape = (int(shape),) if isinstance(shape, int) else tuple(int(s) for s in shape)
    try:
        shape = np.empty(x.shape, np.bool_).reshape(shape).shape
    except ValueError:
        raise ShapeError(f"reshape of {x.shape} must keep {x.size} elements, not "
                         f"{shape}") from None
    flat = _run_unary(("copy",), x.reshape(-1), lambda xt: te.compute(
        xt.shape, lambda i: xt[i], name="copy"), target)
    return flat.reshape(shape)


def pad(x, pads, value=0.0, target=None) -> np.ndarray:
    """Constant padding; ``pads`` = ((before, after), ...) per axis."""
    x = as_array(x, name="x")
    pads = tuple((int(a), int(b)) for a, b in pads)
    if len(pads) != x.ndim or any(a < 0 or b < 0 for a, b in pads):
        raise ShapeError(f"pads must be {x.ndim} non-negative (before, after) pairs, not {pads}")

    def make_out(xt):
        shape = tuple(n + a + b for n, (a, b) in zip(xt.shape, pads))

        def body(*o):
            inside = None
            for i, n, (a, _) in zip(o, xt.shape, pads):
                c = (i >= a) & (i < a + n)
                inside = c if inside is None else inside & c
            src = xt[tuple(i - a for i, (a, _) in zip(o, pads))]
            return te.select(inside, src, te.cast(xt.dtype, value))
        return te.compute(shape, body, name="pad")
    return _run_unary(("pad", pads, float(value)), x, make_out, target)


def concat(arrays, axis=0, target=None) -> np.ndarray:
    arrays = [as_array(a, name="input") for a in arrays]
    first = arrays[0]
    axis = axis % first.ndim
    for a in arrays[1:]:
        if a.dtype != first.dtype or a.shape[:axis] + a.shape[axis + 1:] != \
                first.shape[:axis] + first.shape[axis + 1:]:
            raise ShapeError(f"concat inputs must match {first.dtype}{list(first.shape)} "
                             f"off axis {axis}, not {a.dtype}{list(a.shape)}")
    shapes = tuple(a.shape for a in arrays)
    key = ("concat", shapes, first.dtype.name, axis)

    def make():
        ins = [te.placeholder(s, first.dtype.name, f"x{k}") for k, s in enumerate(shapes)]
        total = sum(s[axis] for s in shapes)
        out_shape = first.shape[:axis] + (total,) + first.shape[axis + 1:]

        def body(*o):
            offsets = np.cumsum([0] + [s[axis] for s in shapes])
            value = None
            for k in reversed(range(len(ins))):
                idx = o[:axis] + (o[axis] - int(offsets[k]),) + o[axis + 1:]
                v = ins[k][idx]
                value = v if value is None else te.select(o[axis] < int(offsets[k + 1]), v, value)
            return value
        out = te.compute(out_shape, body, name="concat")
        s = te.create_schedule(out)
        schedule_elementwise(s, out, target)
        return s, ins + [out], "concat"
    k = compiled(key, make, target)
    out = np.empty(k.plan.params[-1].shape, first.dtype)
    k(*arrays, out)
    return out


def pack_nchwc(x, block: int, target=None) -> np.ndarray:
    """[N, C, H, W] -> [N, C/block, H, W, block]."""
    x = as_array(x, name="x")
    N, C, H, W = x.shape
    if C % block:
        raise ShapeError(f"channels must be a multiple of the block {block}, not {C}")
    return _run_unary(("pack_nchwc", block), x, lambda xt: te.compute(
        (N, C // block, H, W, block), lambda n, c, h, w, b: xt[n, c * block + b, h, w],
        name="pack"), target)


def unpack_nchwc(x, target=None) -> np.ndarray:
    """[N, C/b, H, W, b] -> [N, C, H, W]."""
    x = as_array(x, name="x")
    N, CO, H, W, b = x.shape
    return _run_unary(("unpack_nchwc",), x, lambda xt: te.compute(
        (N, CO * b, H, W), lambda n, c, h, w: xt[n, c // b, h, w, c % b], name="unpack"), target)


def pack_conv_weight(w, in_block: int, out_block: int, target=None) -> np.ndarray:
    """OIHW -> [O/ob, I/ib, KH, KW, ib, ob] for ``conv2d_nchwc``."""
    w = as_array(w, name="w")
    O, I, KH, KW = w.shape
    if O % out_block or I % in_block:
        raise ShapeError(f"weight channels ({O}, {I}) must be multiples of the blocks "
                         f"({out_block}, {in_block})")
    return _run_unary(("pack_conv_weight", in_block, out_block), w, lambda wt: te.compute(
        (O // out_block, I // in_block, KH, KW, in_block, out_block),
        lambda o, i, kh, kw, ib, ob: wt[o * out_block + ob, i * in_block + ib, kh, kw],
        name="wpack"), target)
