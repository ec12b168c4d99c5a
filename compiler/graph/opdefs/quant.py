"""Quantisation operators: quantize, dequantize, qlinear_conv, qlinear_matmul, shr
(QuantizeLinear, DequantizeLinear, QLinearConv, QLinearMatMul).

In a power-of-two quantised graph (passes/quantize.py) `quantize` / `dequantize` have scale
2**-e and zero point 0; the int8 reference evaluates them exactly (kernels_int)."""
from __future__ import annotations

import numpy as np

from .. import kernels as K
from .. import kernels_cpu as N
from .. import kernels_int as I
from .. import kernels_llvm as L
from ..ir import Node, TensorType, np_dtype
from ..opdef import OpDef, onnx_op, register
from ..shapes import broadcast_shape, fail, need
from .cast import cast_array
from .common import dtype_of, spatial
from .nn import infer_conv2d, infer_matmul

QUANT_DTYPES = ("int8", "uint8", "int16", "uint16", "int32")
LOW_INTS = ("int4", "uint4", "int2", "uint2")
LOW_FLOATS = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
              "float4_e2m1fn")
ANY_DTYPES = QUANT_DTYPES + LOW_INTS + LOW_FLOATS


def infer_quantize(node, types):
    need(node, types, 1)
    if node.attr("dtype", "int8") not in ANY_DTYPES:
        raise fail(node, "dtype", f"one of {ANY_DTYPES}", node.attr("dtype"))
    return [TensorType(types[0].shape, node.attr("dtype", "int8"))]


def infer_dequantize(node, types):
    need(node, types, 1)
    return [TensorType(types[0].shape, node.attr("out_dtype", "float32"))]


def infer_qlinear_conv(node, types):
    plain = Node(node.name, "conv2d", node.inputs, node.outputs,
                 {k: node.attrs[k] for k in ("strides", "pads", "dilations", "groups")})
    xf = TensorType(types[0].shape, "float32")
    wf = TensorType(types[1].shape, "float32")
    shape = infer_conv2d(plain, [xf, wf])[0].shape
    return [TensorType(shape, node.attr("y_dtype"))]


def infer_qlinear_matmul(node, types):
    a = TensorType(types[0].shape, "float32")
    b = TensorType(types[1].shape, "float32")
    return [TensorType(infer_matmul(node, [a, b])[0].shape, node.attr("y_dtype"))]


def infer_shr(node, types):
    need(node, types, 1)
    if types[0].dtype != "int32":
        raise fail(node, "input dtype", "int32", types[0].dtype)
    amount = np.asarray(node.attr("amount", 0))
    broadcast_shape(node, types[0].shape, amount.shape)
    return [types[0]]


def _params(node, x):
    axis = node.attr("axis", 1)
    return (K.channel_shape(np.asarray(node.attr("scale"), np.float32), x.ndim, axis),
            K.channel_shape(np.asarray(node.attr("zero_point")), x.ndim, axis))


def ref_quantize(node, x):
    dtype = node.attr("dtype", "int8")
    if dtype in QUANT_DTYPES:
        return K.quantize_linear(x, node.attr("scale"), node.attr("zero_point"),
                                 node.attr("axis", 1), dtype)
    import ml_dtypes
    scale, zp = _params(node, x)
    scaled = x.astype(np.float32) / scale
    if dtype in LOW_FLOATS:   # float zero points are 0: a saturating cast
        return cast_array(scaled, dtype, bool(node.attr("saturate", 1)))
    info = ml_dtypes.iinfo(np_dtype(dtype))
    q = np.rint(scaled).astype(np.float64) + zp.astype(np.float64)
    return np.clip(q, info.min, info.max).astype(np.int64).astype(np_dtype(dtype))


def ref_dequantize(node, x):
    if x.dtype.name in QUANT_DTYPES:
        y = K.dequantize_linear(x, node.attr("scale"), node.attr("zero_point"),
                                node.attr("axis", 1))
    else:
        scale, zp = _params(node, x)
        wide = np.float32 if x.dtype.name in LOW_FLOATS else np.int32
        y = (x.astype(wide) - zp.astype(wide)).astype(np.float32) * scale
    return y.astype(node.attr("out_dtype", "float32"))


def cpu_quantize(node, x):
    return N.quantize(node, x) if node.attr("dtype", "int8") in QUANT_DTYPES else \
        ref_quantize(node, x)


def cpu_dequantize(node, x):
    return N.dequantize(node, x) if x.dtype.name in QUANT_DTYPES and \
        node.attr("out_dtype", "float32") == "float32" else ref_dequantize(node, x)


def ref_qlinear_conv(node, x, w, b=None):
    xs = x.astype(np.float64) - np.float64(node.attr("x_zero_point"))
    wz = K.channel_shape(np.asarray(node.attr("w_zero_point")), 4, 0)
    ws = w.astype(np.float64) - wz
    acc = K.conv2d(xs, ws, node.attr("strides"), node.attr("pads"), node.attr("dilations"),
                   node.attr("groups"))
    if b is not None:
        acc = acc + b.reshape(1, -1, 1, 1)
    mult = (np.float32(node.attr("x_scale")) * np.asarray(node.attr("w_scale"), np.float32)
            / np.float32(node.attr("y_scale")))
    return K.requantize_float(acc, K.channel_shape(mult, 4, 1), node.attr("y_zero_point"),
                              node.attr("y_dtype"))


def ref_qlinear_matmul(node, a, b):
    acc = (a.astype(np.float64) - np.float64(node.attr("a_zero_point"))) @ \
        (b.astype(np.float64) - np.asarray(node.attr("b_zero_point"), np.float64))
    mult = (np.float32(node.attr("a_scale")) * np.asarray(node.attr("b_scale"), np.float32)
            / np.float32(node.attr("y_scale")))
    return K.requantize_float(acc, mult, node.attr("y_zero_point"), node.attr("y_dtype"))


register(
    OpDef("quantize", infer_quantize, reference=ref_quantize, cpu=cpu_quantize,
          llvm=L.quantize, llvm_when=L.when_quantize, llvm_exact=True, int8=I.quantize,
          int8_always=True, elementwise=True, qdq="quantize",
          doc="saturate(round_half_even(x / scale) + zero_point)"),
    OpDef("dequantize", infer_dequantize, reference=ref_dequantize, cpu=cpu_dequantize,
          llvm=L.dequantize, llvm_when=L.when_dequantize, llvm_exact=True,
          int8=I.dequantize, int8_always=True, elementwise=True, qdq="dequantize",
          doc="(x - zero_point) * scale"),
    OpDef("qlinear_conv", infer_qlinear_conv, reference=ref_qlinear_conv,
          doc="onnxruntime's QLinearConv (lowered to dequantize, conv2d, quantize)"),
    OpDef("qlinear_matmul", infer_qlinear_matmul, reference=ref_qlinear_matmul,
          doc="onnxruntime's QLinearMatMul (lowered to dequantize, dense, quantize)"),
    OpDef("shr", infer_shr, cpu=lambda n, x: N.shift_right(x, n.attr("amount", 0)),
          int8=I.shr, int8_always=True, quant="integer", elementwise=True, epilogue="shift",
          doc="arithmetic shift right of int32 (negative amounts shift left)"),
)


# ---- ONNX ----------------------------------------------------------------------------------
def _qparams(c, scale_index, zp_index, what, zp_dtype="uint8"):
    scale = c.static(scale_index, f"{what} scale")
    zp = c.static(zp_index, f"{what} zero point")
    if zp is None:
        zp = np.zeros(scale.shape, zp_dtype)
    return scale.astype(np.float32), zp


def _axis(c, scale: np.ndarray, rank: int) -> int:
    """The quantisation axis (ignored, kept modulo the rank, for per-tensor parameters)."""
    axis = c.attr("axis", 1)
    return axis % max(rank, 1) if scale.size == 1 else c.axis(axis, rank)


def _blocked(c, param: np.ndarray, shape, axis: int) -> np.ndarray:
    """A blocked-quantisation parameter (opset 21+) repeated to the full input shape."""
    block = c.attr("block_size", 0)
    if not block or param.ndim <= 1:
        return param
    if param.ndim != len(shape):
        raise c.fail("block scale rank", f"{len(shape)}", param.ndim)
    full = np.repeat(param, block, axis=axis)
    return np.ascontiguousarray(full[tuple(slice(0, d) for d in shape)])


@onnx_op("QuantizeLinear", versions=(13, 19, 21, 23, 24, 25, 28), static_inputs=(1, 2))
def _quantize(c):
    x = c.type(0)
    if c.attr("precision", 0) not in (0, 1):
        raise c.fail("precision", "float32 (1) or the scale's type (0)", c.attr("precision"))
    out = c.attr("output_dtype", 0)
    zp_dtype = dtype_of(c, out, "output_dtype") if out else "uint8"
    scale, zp = _qparams(c, 1, 2, "y", zp_dtype)
    if str(zp.dtype) not in ANY_DTYPES:
        raise c.fail("zero point dtype", f"one of {ANY_DTYPES}", str(zp.dtype))
    if str(zp.dtype) in LOW_FLOATS and np.any(zp.astype(np.float32) != 0):
        raise c.fail("zero point", "0 for a float type", "non-zero")
    axis = _axis(c, scale, x.rank)
    saturate = {} if c.attr("saturate", 1) else {"saturate": 0}
    c.emit("quantize", [c.input(0)], scale=_blocked(c, scale, x.shape, axis),
           zero_point=_blocked(c, zp, x.shape, axis), axis=axis, dtype=str(zp.dtype),
           **saturate)


@onnx_op("DequantizeLinear", versions=(13, 19, 21, 23, 24, 25, 28), static_inputs=(1, 2))
def _dequantize(c):
    x = c.type(0)
    if x.dtype not in ANY_DTYPES:
        raise c.fail("input dtype", f"one of {ANY_DTYPES}", x.dtype)
    scale_dtype = str(c.static(1, "x scale").dtype)
    if c.attr("output_dtype", 0):
        scale_dtype = dtype_of(c, c.attr("output_dtype"), "output_dtype")
    scale, zp = _qparams(c, 1, 2, "x", x.dtype)
    axis = _axis(c, scale, x.rank)
    c.emit("dequantize", [c.input(0)], scale=_blocked(c, scale, x.shape, axis),
           zero_point=_blocked(c, zp, x.shape, axis), axis=axis,
           **({} if scale_dtype == "float32" else {"out_dtype": scale_dtype}))


@onnx_op("QLinearConv", versions=(10,), static_inputs=(1, 2, 4, 5, 6, 7))
def _qlinear_conv(c):
    x, w = c.type(0), c.type(3)
    if x.rank != 4:
        raise c.fail("input rank", "4 (NCHW)", x.rank)
    strides, pads, dilations = spatial(c, x.shape, w.shape[2:])
    xs, xz = _qparams(c, 1, 2, "x")
    ws, wz = _qparams(c, 4, 5, "w")
    ys, yz = _qparams(c, 6, 7, "y")
    inputs = [c.input(0), c.input(3)] + ([c.input(8)] if c.has(8) else [])
    c.emit("qlinear_conv", inputs, strides=strides, pads=pads, dilations=dilations,
           groups=c.attr("group", 1), x_scale=xs, x_zero_point=xz, w_scale=ws,
           w_zero_point=wz, y_scale=ys, y_zero_point=yz, y_dtype=str(yz.dtype))


@onnx_op("QLinearMatMul", versions=(10, 21), static_inputs=(1, 2, 4, 5, 6, 7))
def _qlinear_matmul(c):
    a_s, a_z = _qparams(c, 1, 2, "a")
    b_s, b_z = _qparams(c, 4, 5, "b")
    y_s, y_z = _qparams(c, 6, 7, "y")
    if c.type(0).rank < 2 or c.type(3).rank < 2:
        raise c.fail("operand ranks", "at least 2", (c.type(0).rank, c.type(3).rank))
    c.emit("qlinear_matmul", [c.input(0), c.input(3)], a_scale=a_s, a_zero_point=a_z,
           b_scale=b_s, b_zero_point=b_z, y_scale=y_s, y_zero_point=y_z,
           y_dtype=str(y_z.dtype))
