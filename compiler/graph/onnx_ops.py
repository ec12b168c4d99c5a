"""One converter per ONNX op type: `convert(ctx, node, label)` adds IR nodes and binds the
ONNX outputs. Attributes the IR cannot honour raise `UnsupportedOpError` naming the node."""
from __future__ import annotations

import numpy as np

from .errors import ModelError, UnsupportedOpError

CONVERTERS = {}


def converter(*op_types):
    def wrap(fn):
        for op in op_types:
            CONVERTERS[op] = fn
        return fn
    return wrap


def attrs_of(node) -> dict:
    from onnx import helper
    out = {}
    for a in node.attribute:
        value = helper.get_attribute_value(a)
        out[a.name] = value.decode() if isinstance(value, bytes) else value
    return out


def _emit(ctx, node, label, op, inputs, **attrs) -> str:
    """Add one IR node whose output keeps the ONNX node's first output name."""
    out = node.output[0]
    name = out if out not in ctx.b.types else None
    ir = ctx.b.add_node(op, inputs, attrs, name=label,
                        outputs=[name] if name else None)[0]
    ctx.bind(out, ir)
    return ir


def _const_input(ctx, node, label, index, what) -> np.ndarray | None:
    if index >= len(node.input) or not node.input[index]:
        return None
    value = ctx.const(node.input[index])
    if value is None:
        raise UnsupportedOpError(f"{what} of {node.op_type} node {label!r} must be a constant, "
                                 f"not the computed value {node.input[index]!r}")
    return value


def _unsupported(node, label, what, expected, actual):
    return UnsupportedOpError(f"{what} of {node.op_type} node {label!r} must be {expected}, "
                              f"not {actual!r}")


def _spatial(node, label, attrs, x_shape, kernel):
    """(strides, pads (t, l, b, r), dilations) of a 2-D conv/pool, resolving auto_pad."""
    strides = tuple(attrs.get("strides", (1, 1)))
    dilations = tuple(attrs.get("dilations", (1, 1)))
    pads = tuple(attrs.get("pads", (0, 0, 0, 0)))
    auto = attrs.get("auto_pad", "NOTSET")
    if auto in ("SAME_UPPER", "SAME_LOWER"):
        pads = [0, 0, 0, 0]
        for i in range(2):
            out = -(-x_shape[2 + i] // strides[i])
            total = max(0, (out - 1) * strides[i] + dilations[i] * (kernel[i] - 1) + 1
                        - x_shape[2 + i])
            small, big = total // 2, total - total // 2
            pads[i], pads[i + 2] = (small, big) if auto == "SAME_UPPER" else (big, small)
    elif auto == "VALID":
        pads = (0, 0, 0, 0)
    elif auto != "NOTSET":
        raise _unsupported(node, label, "auto_pad", "NOTSET, VALID or SAME_*", auto)
    if len(strides) != 2 or len(pads) != 4 or len(dilations) != 2:
        raise _unsupported(node, label, "spatial rank", "2 (NCHW)", len(strides))
    return strides, (pads[0], pads[1], pads[2], pads[3]), dilations


@converter("Constant")
def _constant(ctx, node, label):
    from onnx import numpy_helper
    attrs = attrs_of(node)
    if "value" not in attrs:
        raise _unsupported(node, label, "attribute", "'value'", sorted(attrs))
    ctx.add_const(node.output[0], numpy_helper.to_array(node.attribute[0].t))


@converter("Identity", "Dropout")
def _identity(ctx, node, label):
    if len(node.output) > 1 and node.output[1]:
        raise _unsupported(node, label, "outputs", "one (inference)", len(node.output))
    ctx.bind(node.output[0], ctx.value(node.input[0]))


@converter("Conv")
def _conv(ctx, node, label):
    attrs = attrs_of(node)
    x, w = ctx.type(node.input[0]), ctx.type(node.input[1])
    if x.rank != 4:
        raise _unsupported(node, label, "input rank", "4 (NCHW)", x.rank)
    strides, pads, dilations = _spatial(node, label, attrs, x.shape, w.shape[2:])
    inputs = [ctx.value(v) for v in node.input]
    _emit(ctx, node, label, "conv2d", inputs, strides=strides, pads=pads,
          dilations=dilations, groups=attrs.get("group", 1))


@converter("Gemm")
def _gemm(ctx, node, label):
    attrs = attrs_of(node)
    alpha, beta = attrs.get("alpha", 1.0), attrs.get("beta", 1.0)
    a = ctx.value(node.input[0])
    if attrs.get("transA", 0):
        a = ctx.b.op("transpose", a, perm=(1, 0), name=f"{label}_ta")
    b_const = ctx.const(node.input[1])
    if b_const is not None:
        w = b_const if attrs.get("transB", 0) else b_const.T
        w = ctx.b.add_const(None, (w * np.float32(alpha)).astype(w.dtype), hint=f"{label}_w")
        alpha = 1.0
    else:
        w = ctx.value(node.input[1])
        if not attrs.get("transB", 0):
            w = ctx.b.op("transpose", w, perm=(1, 0), name=f"{label}_tb")
    c = node.input[2] if len(node.input) > 2 and node.input[2] else None
    c_const = ctx.const(c) if c else None
    n_out = ctx.b.types[w].shape[0]
    if c_const is not None and c_const.size == n_out and alpha == 1.0:
        bias = ctx.b.add_const(None, (c_const.reshape(-1) * np.float32(beta)).astype(
            c_const.dtype), hint=f"{label}_b")
        _emit(ctx, node, label, "dense", [a, w, bias])
        return
    out = ctx.b.op("dense", a, w, name=label)
    if alpha != 1.0:
        out = ctx.b.op("mul", out, ctx.b.add_const(None, np.float32(alpha)), name=f"{label}_a")
    if c:
        cv = ctx.value(c)
        if beta != 1.0:
            cv = ctx.b.op("mul", cv, ctx.b.add_const(None, np.float32(beta)), name=f"{label}_b")
        out = ctx.b.op("add", out, cv, name=f"{label}_c")
    ctx.bind(node.output[0], out)


@converter("MatMul")
def _matmul(ctx, node, label):
    b_const = ctx.const(node.input[1])
    a = ctx.value(node.input[0])
    if b_const is not None and b_const.ndim == 2 and ctx.b.types[a].rank == 2:
        w = ctx.b.add_const(None, np.ascontiguousarray(b_const.T), hint=f"{label}_w")
        _emit(ctx, node, label, "dense", [a, w])
    else:
        _emit(ctx, node, label, "matmul", [a, ctx.value(node.input[1])])


@converter("Add", "Sub", "Mul")
def _binary(ctx, node, label):
    _emit(ctx, node, label, node.op_type.lower(), [ctx.value(v) for v in node.input])


@converter("Relu")
def _relu(ctx, node, label):
    _emit(ctx, node, label, "relu", [ctx.value(node.input[0])])


@converter("Clip")
def _clip(ctx, node, label):
    lo = _const_input(ctx, node, label, 1, "min")
    hi = _const_input(ctx, node, label, 2, "max")
    _emit(ctx, node, label, "clip", [ctx.value(node.input[0])],
          lo=None if lo is None else float(lo), hi=None if hi is None else float(hi))


@converter("BatchNormalization")
def _batch_norm(ctx, node, label):
    attrs = attrs_of(node)
    if attrs.get("training_mode", 0) or any(node.output[1:]):
        raise _unsupported(node, label, "mode", "inference (one output)", "training")
    _emit(ctx, node, label, "batch_norm", [ctx.value(v) for v in node.input],
          epsilon=attrs.get("epsilon", 1e-5))


@converter("MaxPool", "AveragePool")
def _pool(ctx, node, label):
    attrs = attrs_of(node)
    if len(node.output) > 1 and node.output[1]:
        raise _unsupported(node, label, "outputs", "one (no Indices)", len(node.output))
    if attrs.get("storage_order", 0):
        raise _unsupported(node, label, "storage_order", 0, attrs["storage_order"])
    x = ctx.type(node.input[0])
    if x.rank != 4:
        raise _unsupported(node, label, "input rank", "4 (NCHW)", x.rank)
    kernel = tuple(attrs["kernel_shape"])
    strides, pads, dilations = _spatial(node, label, attrs, x.shape, kernel)
    extra = dict(ceil_mode=attrs.get("ceil_mode", 0))
    if node.op_type == "MaxPool":
        op, extra["dilations"] = "max_pool", dilations
    else:
        op, extra["count_include_pad"] = "avg_pool", attrs.get("count_include_pad", 0)
        if dilations != (1, 1):
            raise _unsupported(node, label, "dilations", "(1, 1)", dilations)
    _emit(ctx, node, label, op, [ctx.value(node.input[0])], kernel=kernel, strides=strides,
          pads=pads, **extra)


@converter("GlobalAveragePool")
def _gap(ctx, node, label):
    _emit(ctx, node, label, "global_avg_pool", [ctx.value(node.input[0])])


@converter("Flatten")
def _flatten(ctx, node, label):
    x = ctx.type(node.input[0])
    axis = attrs_of(node).get("axis", 1)
    _emit(ctx, node, label, "flatten", [ctx.value(node.input[0])], axis=axis % (x.rank + 1))


@converter("Reshape")
def _reshape(ctx, node, label):
    x = ctx.type(node.input[0])
    shape = [int(d) for d in _const_input(ctx, node, label, 1, "shape")]
    if not attrs_of(node).get("allowzero", 0):
        shape = [x.shape[i] if d == 0 else d for i, d in enumerate(shape)]
    if shape.count(-1) == 1:
        known = int(np.prod([d for d in shape if d != -1]))
        shape[shape.index(-1)] = x.size // known if known else 0
    _emit(ctx, node, label, "reshape", [ctx.value(node.input[0])], shape=tuple(shape))


@converter("Transpose")
def _transpose(ctx, node, label):
    rank = ctx.type(node.input[0]).rank
    perm = tuple(attrs_of(node).get("perm", range(rank - 1, -1, -1)))
    _emit(ctx, node, label, "transpose", [ctx.value(node.input[0])], perm=perm)


@converter("Concat")
def _concat(ctx, node, label):
    rank = ctx.type(node.input[0]).rank
    _emit(ctx, node, label, "concat", [ctx.value(v) for v in node.input],
          axis=attrs_of(node)["axis"] % rank)


@converter("Pad")
def _pad(ctx, node, label):
    attrs = attrs_of(node)
    if attrs.get("mode", "constant") != "constant":
        raise _unsupported(node, label, "mode", "'constant'", attrs["mode"])
    rank = ctx.type(node.input[0]).rank
    pads = [int(p) for p in _const_input(ctx, node, label, 1, "pads")]
    value = _const_input(ctx, node, label, 2, "constant_value")
    axes = _const_input(ctx, node, label, 3, "axes")
    if axes is not None:
        full = [0] * (2 * rank)
        for i, axis in enumerate(int(a) % rank for a in axes):
            full[axis], full[axis + rank] = pads[i], pads[i + len(axes)]
        pads = full
    if any(p < 0 for p in pads):
        raise _unsupported(node, label, "pads", "non-negative", pads)
    _emit(ctx, node, label, "pad", [ctx.value(node.input[0])], pads=tuple(pads),
          value=0.0 if value is None else float(value))


@converter("Softmax")
def _softmax(ctx, node, label):
    rank = ctx.type(node.input[0]).rank
    _emit(ctx, node, label, "softmax", [ctx.value(node.input[0])],
          axis=attrs_of(node).get("axis", -1) % rank)


def _qparams(ctx, node, label, scale_index, zp_index, what):
    scale = _const_input(ctx, node, label, scale_index, f"{what} scale")
    zp = _const_input(ctx, node, label, zp_index, f"{what} zero point")
    if zp is None:
        zp = np.zeros(scale.shape, np.uint8)
    return scale.astype(np.float32), zp


@converter("QuantizeLinear")
def _quantize(ctx, node, label):
    scale, zp = _qparams(ctx, node, label, 1, 2, "y")
    if str(zp.dtype) not in ("int8", "uint8"):
        raise _unsupported(node, label, "zero point dtype", "int8 or uint8", str(zp.dtype))
    rank = ctx.type(node.input[0]).rank
    _emit(ctx, node, label, "quantize", [ctx.value(node.input[0])], scale=scale,
          zero_point=zp, axis=attrs_of(node).get("axis", 1) % rank, dtype=str(zp.dtype))


@converter("DequantizeLinear")
def _dequantize(ctx, node, label):
    scale, zp = _qparams(ctx, node, label, 1, 2, "x")
    rank = ctx.type(node.input[0]).rank
    _emit(ctx, node, label, "dequantize", [ctx.value(node.input[0])], scale=scale,
          zero_point=zp, axis=attrs_of(node).get("axis", 1) % rank)


@converter("QLinearConv")
def _qlinear_conv(ctx, node, label):
    attrs = attrs_of(node)
    x, w = ctx.type(node.input[0]), ctx.type(node.input[3])
    strides, pads, dilations = _spatial(node, label, attrs, x.shape, w.shape[2:])
    xs, xz = _qparams(ctx, node, label, 1, 2, "x")
    ws, wz = _qparams(ctx, node, label, 4, 5, "w")
    ys, yz = _qparams(ctx, node, label, 6, 7, "y")
    inputs = [ctx.value(node.input[0]), ctx.value(node.input[3])]
    if len(node.input) > 8 and node.input[8]:
        inputs.append(ctx.value(node.input[8]))
    _emit(ctx, node, label, "qlinear_conv", inputs, strides=strides, pads=pads,
          dilations=dilations, groups=attrs.get("group", 1), x_scale=xs, x_zero_point=xz,
          w_scale=ws, w_zero_point=wz, y_scale=ys, y_zero_point=yz, y_dtype=str(yz.dtype))


@converter("QLinearMatMul")
def _qlinear_matmul(ctx, node, label):
    a_s, a_z = _qparams(ctx, node, label, 1, 2, "a")
    b_s, b_z = _qparams(ctx, node, label, 4, 5, "b")
    y_s, y_z = _qparams(ctx, node, label, 6, 7, "y")
    _emit(ctx, node, label, "qlinear_matmul", [ctx.value(node.input[0]),
                                               ctx.value(node.input[3])],
          a_scale=a_s, a_zero_point=a_z, b_scale=b_s, b_zero_point=b_z, y_scale=y_s,
          y_zero_point=y_z, y_dtype=str(y_z.dtype))


def check_supported(op_type: str) -> None:
    if op_type not in CONVERTERS:
        raise ModelError(f"op type must be one of {sorted(CONVERTERS)}, not {op_type!r}")
