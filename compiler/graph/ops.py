"""Operator catalogue of the graph IR: attribute checks and shape/dtype inference.

Each op is registered with a function `infer(node, input_types) -> [TensorType]`.
Layout conventions: activations NCHW (or packed N'C'HW{n}{c}, see `layout.py`), conv weights
OIHW, dense weights [out, in]. Integer conv/dense take int8 operands and produce int32.
"""
from __future__ import annotations

from typing import Callable

import numpy as np

from .errors import GraphError
from .ir import Node, TensorType

_INFER: dict[str, Callable] = {}


def register(*ops: str):
    def wrap(fn):
        for op in ops:
            _INFER[op] = fn
        return fn
    return wrap


def known_ops() -> list[str]:
    return sorted(_INFER)


def infer_types(node: Node, in_types: list[TensorType | None]) -> list[TensorType]:
    try:
        infer = _INFER[node.op]
    except KeyError:
        raise GraphError(f"op of node {node.name!r} must be one of the graph IR's ops, "
                         f"not {node.op!r}") from None
    return infer(node, in_types)


def _fail(node: Node, what: str, expected: str, actual) -> GraphError:
    return GraphError(f"{what} of {node.op} node {node.name!r} must be {expected}, not {actual}")


def _need(node: Node, types, count: int | tuple[int, int]):
    low, high = (count, count) if isinstance(count, int) else count
    if not low <= len(types) <= high:
        raise _fail(node, "input count", f"{low}..{high}", len(types))


def broadcast_shape(node: Node, *shapes) -> tuple[int, ...]:
    try:
        return tuple(np.broadcast_shapes(*shapes))
    except ValueError:
        raise _fail(node, "input shapes", "broadcast-compatible", list(shapes)) from None


def conv_out_size(size: int, kernel: int, stride: int, pad_lo: int, pad_hi: int,
                  dilation: int = 1, ceil_mode: bool = False) -> int:
    span = dilation * (kernel - 1) + 1
    total = size + pad_lo + pad_hi - span
    out = (-(-total // stride) if ceil_mode else total // stride) + 1
    if ceil_mode and (out - 1) * stride >= size + pad_lo:
        out -= 1
    return out


def acc_dtype(node: Node, dtype: str) -> str:
    if dtype == "float32":
        return "float32"
    if dtype == "int8":
        return "int32"
    raise _fail(node, "input dtype", "float32 or int8", dtype)


def packed(node: Node) -> bool:
    return node.attr("layout", "plain") == "packed"


@register("conv2d")
def _conv2d(node, types):
    _need(node, types, (2, 3))
    x, w = types[0], types[1]
    groups = node.attr("groups", 1)
    sh, sw = node.attr("strides", (1, 1))
    top, left, bottom, right = node.attr("pads", (0, 0, 0, 0))
    dh, dw = node.attr("dilations", (1, 1))
    if x.dtype != w.dtype:
        raise _fail(node, "weight dtype", f"the input dtype {x.dtype}", w.dtype)
    if packed(node):  # x: N'C'HW n c, w: O'I'HW o i
        if x.rank != 6 or w.rank != 6 or x.shape[1] != w.shape[1] or groups != 1:
            raise _fail(node, "packed operand shapes", "N'C'HWnc and O'C'HWoi",
                        [x.shape, w.shape])
        n, _, h, wd, bn, _ = x.shape
        o, _, kh, kw, bo, _ = w.shape
    else:
        if x.rank != 4 or w.rank != 4:
            raise _fail(node, "operand ranks", "4 (NCHW, OIHW)", [x.rank, w.rank])
        n, c, h, wd = x.shape
        o, cg, kh, kw = w.shape
        if c != cg * groups or o % groups:
            raise _fail(node, "channels", f"{cg} x groups {groups} in, a multiple of groups out",
                        f"{c} in, {o} out")
    ho = conv_out_size(h, kh, sh, top, bottom, dh)
    wo = conv_out_size(wd, kw, sw, left, right, dw)
    if ho <= 0 or wo <= 0:
        raise _fail(node, "output size", "positive", (ho, wo))
    shape = (n, o, ho, wo, bn, bo) if packed(node) else (n, o, ho, wo)
    return [TensorType(shape, acc_dtype(node, x.dtype))]


@register("dense")
def _dense(node, types):
    _need(node, types, (2, 3))
    x, w = types[0], types[1]
    if packed(node):  # x: N'K' n k, w: M'K' m k
        if x.rank != 4 or w.rank != 4 or x.shape[1] != w.shape[1]:
            raise _fail(node, "packed operand shapes", "N'K'nk and M'K'mk", [x.shape, w.shape])
        shape = (x.shape[0], w.shape[0], x.shape[2], w.shape[2])
    else:
        if x.rank != 2 or w.rank != 2 or x.shape[1] != w.shape[1]:
            raise _fail(node, "operand shapes", "[N, K] and [M, K]", [x.shape, w.shape])
        shape = (x.shape[0], w.shape[0])
    if x.dtype != w.dtype:
        raise _fail(node, "weight dtype", f"the input dtype {x.dtype}", w.dtype)
    return [TensorType(shape, acc_dtype(node, x.dtype))]


@register("matmul")
def _matmul(node, types):
    _need(node, types, 2)
    a, b = types
    if a.rank < 2 or b.rank < 2 or a.shape[-1] != b.shape[-2]:
        raise _fail(node, "operand shapes", "[..., M, K] and [..., K, N]", [a.shape, b.shape])
    batch = broadcast_shape(node, a.shape[:-2], b.shape[:-2])
    return [TensorType(batch + (a.shape[-2], b.shape[-1]), a.dtype)]


@register("add", "sub", "mul")
def _binary(node, types):
    _need(node, types, 2)
    if types[0].dtype != types[1].dtype:
        raise _fail(node, "operand dtypes", "equal", [types[0].dtype, types[1].dtype])
    return [TensorType(broadcast_shape(node, types[0].shape, types[1].shape), types[0].dtype)]


@register("relu", "clip", "softmax", "identity")
def _unary(node, types):
    _need(node, types, 1)
    return [types[0]]


@register("shr")
def _shr(node, types):
    _need(node, types, 1)
    if types[0].dtype != "int32":
        raise _fail(node, "input dtype", "int32", types[0].dtype)
    amount = np.asarray(node.attr("amount", 0))
    broadcast_shape(node, types[0].shape, amount.shape)
    return [types[0]]


@register("cast")
def _cast(node, types):
    _need(node, types, 1)
    return [TensorType(types[0].shape, node.attr("dtype"))]


@register("batch_norm")
def _batch_norm(node, types):
    _need(node, types, 5)
    c = types[0].shape[1]
    for t in types[1:]:
        if t.shape != (c,):
            raise _fail(node, "parameter shape", f"({c},)", t.shape)
    return [types[0]]


@register("max_pool", "avg_pool")
def _pool(node, types):
    _need(node, types, 1)
    x = types[0]
    if x.rank != 4:
        raise _fail(node, "input rank", "4 (NCHW)", x.rank)
    kh, kw = node.attr("kernel")
    sh, sw = node.attr("strides", (1, 1))
    top, left, bottom, right = node.attr("pads", (0, 0, 0, 0))
    dh, dw = node.attr("dilations", (1, 1))
    ceil = bool(node.attr("ceil_mode", 0))
    n, c, h, w = x.shape
    shape = (n, c, conv_out_size(h, kh, sh, top, bottom, dh, ceil),
             conv_out_size(w, kw, sw, left, right, dw, ceil))
    return [TensorType(shape, x.dtype)]


@register("global_avg_pool")
def _gap(node, types):
    _need(node, types, 1)
    x = types[0]
    if x.rank < 3:
        raise _fail(node, "input rank", "at least 3", x.rank)
    return [TensorType(x.shape[:2] + (1,) * (x.rank - 2), x.dtype)]


@register("flatten")
def _flatten(node, types):
    _need(node, types, 1)
    x = types[0]
    axis = node.attr("axis", 1)
    outer = int(np.prod(x.shape[:axis], dtype=np.int64))
    return [TensorType((outer, x.size // max(outer, 1) if outer else 0), x.dtype)]


@register("reshape")
def _reshape(node, types):
    _need(node, types, 1)
    shape = tuple(node.attr("shape"))
    if int(np.prod(shape, dtype=np.int64)) != types[0].size:
        raise _fail(node, "target shape", f"of size {types[0].size}", shape)
    return [TensorType(shape, types[0].dtype)]


@register("transpose")
def _transpose(node, types):
    _need(node, types, 1)
    perm = tuple(node.attr("perm"))
    if sorted(perm) != list(range(types[0].rank)):
        raise _fail(node, "perm", f"a permutation of 0..{types[0].rank - 1}", perm)
    return [TensorType(tuple(types[0].shape[p] for p in perm), types[0].dtype)]


@register("concat")
def _concat(node, types):
    axis = node.attr("axis")
    first = types[0]
    total = 0
    for t in types:
        if t.rank != first.rank or t.dtype != first.dtype or \
                t.shape[:axis] + t.shape[axis + 1:] != first.shape[:axis] + first.shape[axis + 1:]:
            raise _fail(node, "input shapes", f"equal except on axis {axis}",
                        [t.shape for t in types])
        total += t.shape[axis]
    return [TensorType(first.shape[:axis] + (total,) + first.shape[axis + 1:], first.dtype)]


@register("pad")
def _pad(node, types):
    _need(node, types, 1)
    x = types[0]
    pads = node.attr("pads")
    if len(pads) != 2 * x.rank:
        raise _fail(node, "pads", f"{2 * x.rank} numbers", len(pads))
    return [TensorType(tuple(d + pads[i] + pads[i + x.rank] for i, d in enumerate(x.shape)),
                       x.dtype)]


@register("quantize")
def _quantize(node, types):
    _need(node, types, 1)
    return [TensorType(types[0].shape, node.attr("dtype", "int8"))]


@register("dequantize")
def _dequantize(node, types):
    _need(node, types, 1)
    return [TensorType(types[0].shape, "float32")]


@register("qlinear_conv")
def _qlinear_conv(node, types):
    plain = Node(node.name, "conv2d", node.inputs, node.outputs,
                 {k: node.attrs[k] for k in ("strides", "pads", "dilations", "groups")})
    xf = TensorType(types[0].shape, "float32")
    wf = TensorType(types[1].shape, "float32")
    shape = _conv2d(plain, [xf, wf])[0].shape
    return [TensorType(shape, node.attr("y_dtype"))]


@register("qlinear_matmul")
def _qlinear_matmul(node, types):
    a = TensorType(types[0].shape, "float32")
    b = TensorType(types[1].shape, "float32")
    return [TensorType(_matmul(node, [a, b])[0].shape, node.attr("y_dtype"))]


@register("pack")
def _pack(node, types):
    from .layout import packed_shape
    _need(node, types, 1)
    return [TensorType(packed_shape(types[0].shape, node.attr("blocks")),
                       types[0].dtype)]


@register("unpack")
def _unpack(node, types):
    _need(node, types, 1)
    return [TensorType(tuple(node.attr("shape")), types[0].dtype)]


@register("accel_conv2d", "accel_dense", "qconv2d", "qdense")
def _accel(node, types):
    """Fused int8 operator (the contract the accelerator lowering implements).

    inputs: x int8, w int8 (packed for accel_*), [bias int32], [residual int8]
            ("" marks an absent bias when a residual follows)
    attrs:  conv2d's strides / pads (top, left, bottom, right) / dilations / groups,
            layout ("packed" for accel_*), residual_shr, shift, lo, hi, out_dtype, fused
            (names of the nodes it replaced)
    value:  acc  = x * w                      int32, wrapping
            acc += bias                       broadcast over the channel axis
            acc += shr(int32(residual), residual_shr)   (negative amount: shift left)
            acc  = shr(acc, shift)            arithmetic; scalar or per-channel array
            out  = out_dtype(clip(acc, lo, hi))
    Shift amounts seen in practice fit the ALU's signed 5-bit field (-16..15)."""
    base_op = node.op[len("accel_"):] if node.op.startswith("accel_") else node.op[1:]
    base = Node(node.name, base_op, node.inputs[:2], node.outputs,
                {k: v for k, v in node.attrs.items() if k in
                 ("strides", "pads", "dilations", "groups", "layout")})
    shape = infer_types(base, types[:2])[0].shape
    return [TensorType(shape, node.attr("out_dtype", "int8"))]


@register("fused_elementwise")
def _fused_elementwise(node, types):
    """A chain of elementwise nodes (`attrs["body"]`, inputs "$i" / earlier "%k")."""
    env = {f"${i}": t for i, t in enumerate(types)}
    for inner in node.attr("body"):
        for value, t in zip(inner.outputs, infer_types(inner, [env[v] for v in inner.inputs])):
            env[value] = t
    return [env[node.attr("body")[-1].outputs[0]]]
