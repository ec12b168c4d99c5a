"""Layout operators: identity, flatten, reshape, transpose, concat, slice, expand, tile
(Identity, Flatten, Reshape, Transpose, Concat, Slice, Split, Squeeze, Unsqueeze, Expand,
Tile, DepthToSpace, SpaceToDepth). Squeeze / Unsqueeze / DepthToSpace / SpaceToDepth become
reshapes and transposes; Split becomes one slice per output."""
from __future__ import annotations

import numpy as np

from .. import kernels_llvm as L
from ..ir import TensorType
from ..opdef import OpDef, onnx_op, register
from ..shapes import fail, need, same_type
from .common import static_axes


def flatten_shape(shape, axis: int) -> tuple[int, int]:
    outer = int(np.prod(shape[:axis], dtype=np.int64))
    inner = int(np.prod(shape[axis:], dtype=np.int64))
    return outer, inner


def infer_flatten(node, types):
    need(node, types, 1)
    return [TensorType(flatten_shape(types[0].shape, node.attr("axis", 1)), types[0].dtype)]


def ref_flatten(node, x):
    return x.reshape(flatten_shape(x.shape, node.attr("axis", 1)))


def infer_reshape(node, types):
    need(node, types, 1)
    shape = tuple(node.attr("shape"))
    if int(np.prod(shape, dtype=np.int64)) != types[0].size:
        raise fail(node, "target shape", f"of size {types[0].size}", shape)
    return [TensorType(shape, types[0].dtype)]


def infer_transpose(node, types):
    need(node, types, 1)
    perm = tuple(node.attr("perm"))
    if sorted(perm) != list(range(types[0].rank)):
        raise fail(node, "perm", f"a permutation of 0..{types[0].rank - 1}", perm)
    return [TensorType(tuple(types[0].shape[p] for p in perm), types[0].dtype)]


def infer_concat(node, types):
    axis = node.attr("axis")
    first = types[0]
    total = 0
    for t in types:
        if t.rank != first.rank or t.dtype != first.dtype or \
                t.shape[:axis] + t.shape[axis + 1:] != first.shape[:axis] + first.shape[axis + 1:]:
            raise fail(node, "input shapes", f"equal except on axis {axis}",
                       [t.shape for t in types])
        total += t.shape[axis]
    return [TensorType(first.shape[:axis] + (total,) + first.shape[axis + 1:], first.dtype)]


def _slices(node) -> tuple:
    return tuple(slice(*s) for s in node.attr("slices"))


def infer_slice(node, types):
    need(node, types, 1)
    x = types[0]
    if len(node.attr("slices")) != x.rank:
        raise fail(node, "slices", f"one (start, stop, step) per axis ({x.rank})",
                   len(node.attr("slices")))
    shape = tuple(len(range(*s.indices(d))) for s, d in zip(_slices(node), x.shape))
    return [TensorType(shape, x.dtype)]


def infer_expand(node, types):
    need(node, types, 1)
    try:
        shape = np.broadcast_shapes(types[0].shape, tuple(node.attr("shape")))
    except ValueError:
        raise fail(node, "shape", f"broadcast-compatible with {types[0].shape}",
                   node.attr("shape")) from None
    return [TensorType(tuple(shape), types[0].dtype)]


def infer_tile(node, types):
    need(node, types, 1)
    reps = tuple(node.attr("repeats"))
    if len(reps) != types[0].rank:
        raise fail(node, "repeats", f"{types[0].rank} numbers", reps)
    return [TensorType(tuple(d * r for d, r in zip(types[0].shape, reps)), types[0].dtype)]


def ref_expand(node, x):
    return np.array(np.broadcast_to(x, np.broadcast_shapes(x.shape, node.attr("shape"))))


def _same(n, x):
    return x


register(
    OpDef("identity", same_type, reference=_same, keeps_range=True, moves_data=True),
    OpDef("flatten", infer_flatten, reference=ref_flatten, int8=ref_flatten, quant="int8",
          keeps_range=True, moves_data=True, doc="[d0 * .. * d(axis-1), the rest] as 2-D"),
    OpDef("reshape", infer_reshape, reference=lambda n, x: x.reshape(n.attr("shape")),
          int8=lambda n, x: x.reshape(n.attr("shape")), quant="int8", keeps_range=True,
          moves_data=True),
    OpDef("transpose", infer_transpose,
          reference=lambda n, x: np.ascontiguousarray(x.transpose(n.attr("perm"))),
          int8=lambda n, x: np.ascontiguousarray(x.transpose(n.attr("perm"))),
          llvm=L.transpose, llvm_when=L.always, llvm_exact=True, quant="int8",
          keeps_range=True, moves_data=True),
    OpDef("concat", infer_concat,
          reference=lambda n, *xs: np.concatenate(xs, axis=n.attr("axis"))),
    OpDef("slice", infer_slice, reference=lambda n, x: np.ascontiguousarray(x[_slices(n)]),
          int8=lambda n, x: np.ascontiguousarray(x[_slices(n)]), quant="int8",
          keeps_range=True, moves_data=True,
          doc="x[start:stop:step, ...] with one python slice per axis"),
    OpDef("expand", infer_expand, reference=ref_expand, int8=ref_expand, quant="int8",
          keeps_range=True, moves_data=True, doc="broadcast to the shape (numpy rules)"),
    OpDef("tile", infer_tile, reference=lambda n, x: np.tile(x, n.attr("repeats")),
          int8=lambda n, x: np.tile(x, n.attr("repeats")), quant="int8", keeps_range=True,
          moves_data=True),
)


# ---- ONNX ----------------------------------------------------------------------------------
@onnx_op("Identity", versions=(13, 14, 16, 19, 21, 23, 24, 25))
def _identity(c):
    c.bind(0, c.input(0))


@onnx_op("Flatten", versions=(13, 21, 23, 24, 25))
def _flatten(c):
    rank = c.type(0).rank
    axis = c.attr("axis", 1)
    if not -rank <= axis <= rank:
        raise c.fail("axis", f"in {-rank}..{rank}", axis)
    c.emit("flatten", [c.input(0)], axis=axis + rank if axis < 0 else axis)


def reshape_to(c, value: str, shape) -> str:
    return c.emit("reshape", [value], shape=tuple(int(d) for d in shape))


@onnx_op("Reshape", versions=(13, 14, 19, 21, 23, 24, 25), static_inputs=(1,))
def _reshape(c):
    x = c.type(0)
    shape = c.ints(1, "shape")
    if not c.attr("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    if shape.count(-1) > 1:
        raise c.fail("shape", "at most one -1", shape)
    if shape.count(-1) == 1:
        known = int(np.prod([d for d in shape if d != -1]))
        shape[shape.index(-1)] = x.size // known if known else 0
    reshape_to(c, c.input(0), shape)


@onnx_op("Transpose", versions=(13, 21, 23, 24, 25))
def _transpose(c):
    rank = c.type(0).rank
    perm = tuple(c.attr("perm", range(rank - 1, -1, -1)))
    c.emit("transpose", [c.input(0)], perm=perm)


@onnx_op("Concat", versions=(13,))
def _concat(c):
    inputs = [v for v in c.inputs() if v]
    rank = c.b.types[inputs[0]].rank
    c.emit("concat", inputs, axis=c.axis(c.attr("axis"), rank))


@onnx_op("Squeeze", versions=(13, 21, 23, 24, 25), static_inputs=(1,))
def _squeeze(c):
    x = c.type(0)
    axes = static_axes(c, 1, "axes", x.rank)
    if axes is None:
        axes = tuple(i for i, d in enumerate(x.shape) if d == 1)
    bad = [a for a in axes if x.shape[a] != 1]
    if bad:
        raise c.fail("squeezed axes", "of size 1", f"axes {bad} of shape {x.shape}")
    reshape_to(c, c.input(0), [d for i, d in enumerate(x.shape) if i not in axes])


@onnx_op("Unsqueeze", versions=(13, 21, 23, 24, 25), static_inputs=(1,))
def _unsqueeze(c):
    x = c.type(0)
    rank = x.rank + len(c.ints(1, "axes"))
    axes = sorted(static_axes(c, 1, "axes", rank))
    shape = list(x.shape)
    for a in axes:
        shape.insert(a, 1)
    reshape_to(c, c.input(0), shape)


def _onnx_slice(dim: int, start: int, end: int, step: int) -> tuple:
    """ONNX's clamping of one axis' (start, end, step) as a python (start, stop, step)."""
    start = start + dim if start < 0 else start
    end = end + dim if end < 0 else end
    if step > 0:
        start, end = min(max(start, 0), dim), min(max(end, 0), dim)
    else:
        start, end = min(max(start, 0), dim - 1), min(max(end, -1), dim - 1)
    return (start, None if end < 0 else end, step)


@onnx_op("Slice", versions=(13,), static_inputs=(1, 2, 3, 4))
def _slice(c):
    x = c.type(0)
    starts, ends = c.ints(1, "starts"), c.ints(2, "ends")
    axes = tuple(c.axis(a, x.rank, "axes") for a in c.ints(3, "axes")) if c.has(3) \
        else tuple(range(len(starts)))
    steps = c.ints(4, "steps") or [1] * len(starts)
    if 0 in steps or not len(starts) == len(ends) == len(axes) == len(steps):
        raise c.fail("starts/ends/axes/steps", "of one length, steps non-zero",
                     (starts, ends, axes, steps))
    slices = [(0, d, 1) for d in x.shape]
    for start, end, axis, step in zip(starts, ends, axes, steps):
        slices[axis] = _onnx_slice(x.shape[axis], start, end, step)
    c.emit("slice", [c.input(0)], slices=tuple(slices))


@onnx_op("Split", versions=(13, 18), static_inputs=(1,))
def _split(c):
    x = c.type(0)
    axis = c.axis(c.attr("axis", 0), x.rank)
    parts = c.ints(1, "split") if c.has(1) else None
    count = c.n_outputs
    if parts is None:
        if c.version >= 18 and c.attr("num_outputs") is not None:
            count = c.attr("num_outputs")
        size = -(-x.shape[axis] // count)
        parts = [min(size, max(0, x.shape[axis] - k * size)) for k in range(count)]
    if sum(parts) != x.shape[axis] or len(parts) != c.n_outputs:
        raise c.fail("split", f"{c.n_outputs} sizes summing to {x.shape[axis]}", parts)
    start = 0
    for k, size in enumerate(parts):
        slices = [(0, d, 1) for d in x.shape]
        slices[axis] = (start, start + size, 1)
        c.emit("slice", [c.input(0)], out=k, slices=tuple(slices))
        start += size


@onnx_op("Expand", versions=(13,), static_inputs=(1,))
def _expand(c):
    c.emit("expand", [c.input(0)], shape=tuple(c.ints(1, "shape")))


@onnx_op("Tile", versions=(13,), static_inputs=(1,))
def _tile(c):
    c.emit("tile", [c.input(0)], repeats=tuple(c.ints(1, "repeats")))


def _blocks(c):
    x = c.type(0)
    bs = c.attr("blocksize")
    if x.rank != 4 or bs is None or bs < 1:
        raise c.fail("input / blocksize", "rank 4 (NCHW) with a positive blocksize",
                     (x.shape, bs))
    return x.shape, bs


@onnx_op("DepthToSpace", versions=(13, 28))
def _depth_to_space(c):
    (b, ch, h, w), bs = _blocks(c)
    if ch % (bs * bs):
        raise c.fail("channels", f"a multiple of blocksize^2 = {bs * bs}", ch)
    if c.attr("mode", "DCR") == "DCR":
        tmp, perm = (b, bs, bs, ch // bs ** 2, h, w), (0, 3, 4, 1, 5, 2)
    elif c.attr("mode") == "CRD":
        tmp, perm = (b, ch // bs ** 2, bs, bs, h, w), (0, 1, 4, 2, 5, 3)
    else:
        raise c.fail("mode", "'DCR' or 'CRD'", repr(c.attr("mode")))
    y = c.op("reshape", [c.input(0)], shape=tmp)
    y = c.op("transpose", [y], perm=perm)
    reshape_to(c, y, (b, ch // bs ** 2, h * bs, w * bs))


@onnx_op("SpaceToDepth", versions=(13, 28))
def _space_to_depth(c):
    (b, ch, h, w), bs = _blocks(c)
    if h % bs or w % bs:
        raise c.fail("height and width", f"multiples of blocksize {bs}", (h, w))
    mode = c.attr("mode", "DCR")   # an attribute from SpaceToDepth-28 on
    if mode not in ("DCR", "CRD"):
        raise c.fail("mode", "'DCR' or 'CRD'", repr(mode))
    y = c.op("reshape", [c.input(0)], shape=(b, ch, h // bs, bs, w // bs, bs))
    y = c.op("transpose", [y], perm=(0, 3, 5, 1, 2, 4) if mode == "DCR" else (0, 1, 3, 5, 2, 4))
    reshape_to(c, y, (b, ch * bs * bs, h // bs, w // bs))
