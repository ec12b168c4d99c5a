"""GEMM operators: conv2d, dense, matmul, conv_transpose, batch_norm (Conv, Gemm, MatMul,
ConvTranspose, BatchNormalization)."""
from __future__ import annotations

import numpy as np

from .. import kernels as K
from .. import kernels_cpu as N
from .. import kernels_int as I
from .. import kernels_llvm as L
from .. import tune_tasks as T
from ..ir import TensorType
from ..opdef import Gemm, OpDef, onnx_op, register
from ..shapes import acc_dtype, broadcast_shape, conv_out_size, fail, need, packed
from .common import as_2d, one_d_attrs, pads_2d, spatial


# ---- inference -----------------------------------------------------------------------------
def infer_conv2d(node, types):
    need(node, types, (2, 3))
    x, w = types[0], types[1]
    groups = node.attr("groups", 1)
    sh, sw = node.attr("strides", (1, 1))
    top, left, bottom, right = node.attr("pads", (0, 0, 0, 0))
    dh, dw = node.attr("dilations", (1, 1))
    if x.dtype != w.dtype:
        raise fail(node, "weight dtype", f"the input dtype {x.dtype}", w.dtype)
    if packed(node):  # x: N'C'HW n c, w: O'I'HW o i
        if x.rank != 6 or w.rank != 6 or x.shape[1] != w.shape[1] or groups != 1:
            raise fail(node, "packed operand shapes", "N'C'HWnc and O'C'HWoi",
                       [x.shape, w.shape])
        n, _, h, wd, bn, _ = x.shape
        o, _, kh, kw, bo, _ = w.shape
    else:
        if x.rank != 4 or w.rank != 4:
            raise fail(node, "operand ranks", "4 (NCHW, OIHW)", [x.rank, w.rank])
        n, c, h, wd = x.shape
        o, cg, kh, kw = w.shape
        if c != cg * groups or o % groups:
            raise fail(node, "channels", f"{cg} x groups {groups} in, a multiple of groups out",
                       f"{c} in, {o} out")
    ho = conv_out_size(h, kh, sh, top, bottom, dh)
    wo = conv_out_size(wd, kw, sw, left, right, dw)
    if ho <= 0 or wo <= 0:
        raise fail(node, "output size", "positive", (ho, wo))
    shape = (n, o, ho, wo, bn, bo) if packed(node) else (n, o, ho, wo)
    return [TensorType(shape, acc_dtype(node, x.dtype))]


def infer_dense(node, types):
    need(node, types, (2, 3))
    x, w = types[0], types[1]
    if packed(node):  # x: N'K' n k, w: M'K' m k
        if x.rank != 4 or w.rank != 4 or x.shape[1] != w.shape[1]:
            raise fail(node, "packed operand shapes", "N'K'nk and M'K'mk", [x.shape, w.shape])
        shape = (x.shape[0], w.shape[0], x.shape[2], w.shape[2])
    else:
        if x.rank != 2 or w.rank != 2 or x.shape[1] != w.shape[1]:
            raise fail(node, "operand shapes", "[N, K] and [M, K]", [x.shape, w.shape])
        shape = (x.shape[0], w.shape[0])
    if x.dtype != w.dtype:
        raise fail(node, "weight dtype", f"the input dtype {x.dtype}", w.dtype)
    return [TensorType(shape, acc_dtype(node, x.dtype))]


def infer_matmul(node, types):
    need(node, types, 2)
    a, b = types
    if a.rank < 2 or b.rank < 2 or a.shape[-1] != b.shape[-2]:
        raise fail(node, "operand shapes", "[..., M, K] and [..., K, N]", [a.shape, b.shape])
    if a.dtype != b.dtype:
        raise fail(node, "operand dtypes", "equal", [a.dtype, b.dtype])
    batch = broadcast_shape(node, a.shape[:-2], b.shape[:-2])
    return [TensorType(batch + (a.shape[-2], b.shape[-1]), a.dtype)]


def infer_batch_norm(node, types):
    need(node, types, 5)
    c = types[0].shape[1]
    for t in types[1:]:
        if t.shape != (c,):
            raise fail(node, "parameter shape", f"({c},)", t.shape)
    return [types[0]]


def infer_conv_transpose(node, types):
    need(node, types, (2, 3))
    x, w = types[0], types[1]
    rank = x.rank - 2
    groups = node.attr("groups", 1)
    if rank < 1 or w.rank != x.rank or x.shape[1] != w.shape[0] or x.shape[1] % groups:
        raise fail(node, "operand shapes", "N C spatial... and C M/groups kernel...",
                   [x.shape, w.shape])
    pads, out_pad = node.attr("pads"), node.attr("output_padding", (0,) * rank)
    strides, dilations = node.attr("strides"), node.attr("dilations")
    spatial_out = tuple(
        strides[i] * (x.shape[2 + i] - 1) + out_pad[i] + (w.shape[2 + i] - 1) * dilations[i]
        + 1 - pads[i] - pads[rank + i] for i in range(rank))
    if min(spatial_out) <= 0:
        raise fail(node, "output size", "positive", spatial_out)
    return [TensorType((x.shape[0], w.shape[1] * groups) + spatial_out, x.dtype)]


# ---- multiply-accumulates -----------------------------------------------------------------
def macs_conv(node, types, out):
    w = types[1].shape
    return out.size * int(np.prod(w[1:4])) * (w[-1] if packed(node) else 1)


def macs_dense(node, types, out):
    x = types[0].shape
    return out.size * (x[1] * x[3] if packed(node) else x[-1])


def macs_matmul(node, types, out):
    return out.size * types[0].shape[-1]


def macs_conv_transpose(node, types, out):
    w = types[1].shape
    return types[0].size * int(np.prod(w[1:]))


def conv_accel_refusal(node) -> str | None:
    """Why the accelerator's GEMM core cannot run this int8 conv2d, None if it can."""
    groups = node.attr("groups", 1)
    if groups != 1:
        return (f"grouped conv2d (groups={groups}) is not a dense GEMM; the accelerator "
                f"runs groups=1 only")
    if tuple(node.attr("dilations", (1, 1))) != (1, 1):
        return f"dilated conv2d {node.attr('dilations')}: no accelerator template"
    return None


# ---- float references ----------------------------------------------------------------------
def ref_conv(node, x, w, b=None):
    out = K.conv2d(x, w, node.attr("strides", (1, 1)), node.attr("pads", (0, 0, 0, 0)),
                   node.attr("dilations", (1, 1)), node.attr("groups", 1))
    if b is not None:
        out = out + b.reshape(1, -1, 1, 1)
    return out.astype(x.dtype)


def ref_dense(node, x, w, b=None):
    out = K.dense(x, w)
    return (out if b is None else out + b).astype(x.dtype)


def ref_batch_norm(node, x, s, b, m, v):
    return K.batch_norm(x, s, b, m, v, node.attr("epsilon", 1e-5)).astype(x.dtype)


def ref_conv_transpose(node, x, w, b=None):
    out = K.conv_transpose(x, w, node.attr("strides"), node.attr("pads"),
                           node.attr("dilations"), node.attr("groups", 1),
                           node.attr("output_padding"))
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * (x.ndim - 2))
    return out.astype(x.dtype)


register(
    OpDef("conv2d", infer_conv2d, reference=ref_conv, cpu=N.conv2d, llvm=L.conv,
          llvm_when=L.when_conv, int8=I.conv2d, quant="gemm", macs=macs_conv,
          gemm=Gemm("accel_conv2d", "qconv2d", conv_accel_refusal), folds="affine",
          stride_folds=True, tune=T.conv2d,
          doc="2-D convolution NCHW x OIHW (+ bias), groups and dilations"),
    OpDef("dense", infer_dense, reference=ref_dense, cpu=N.dense, llvm=L.dense,
          llvm_when=L.float_only, int8=I.dense, quant="gemm", macs=macs_dense,
          gemm=Gemm("accel_dense", "qdense"), folds="bias", tune=T.dense,
          doc="x [N, K] @ w[M, K]^T (+ bias)"),
    OpDef("matmul", infer_matmul,
          reference=lambda n, a, b: np.matmul(a, b).astype(a.dtype, copy=False),
          cpu=lambda n, a, b: N.matmul(a, b).astype(a.dtype, copy=False), macs=macs_matmul,
          quant="gemm", int8_op="batch_dense",
          doc="batched matmul [..., M, K] @ [..., K, N] with numpy broadcasting; with two "
              "computed operands of the same batch axes its int8 form is batch_dense"),
    OpDef("batch_norm", infer_batch_norm, reference=ref_batch_norm, cpu=N.batch_norm,
          llvm=L.batch_norm, llvm_when=L.when_batch_norm,
          doc="inference batch norm over axis 1 (folded into a conv where possible)"),
    OpDef("conv_transpose", infer_conv_transpose, reference=ref_conv_transpose,
          macs=macs_conv_transpose,
          doc="N-D transposed convolution (x: N C ..., w: C M/groups ...)"),
)


# ---- ONNX ----------------------------------------------------------------------------------
@onnx_op("Conv", versions=(11, 22))
def _conv(c):
    x, w = c.type(0), c.type(1)
    if x.rank not in (3, 4):
        raise c.fail("input rank", "3 or 4 (NCW, NCHW)", x.rank)
    strides, pads, dilations = spatial(c, x.shape, w.shape[2:])
    groups = c.attr("group", 1)
    bias = [c.input(2)] if c.has(2) else []
    if x.rank == 4:
        c.emit("conv2d", [c.input(0), c.input(1)] + bias, strides=strides,
               pads=pads_2d(pads), dilations=dilations, groups=groups)
        return
    strides, pads, dilations, _ = one_d_attrs(strides, pads, dilations, w.shape[2:])
    y = c.op("conv2d", [as_2d(c, c.input(0), 3), as_2d(c, c.input(1), 3)] + bias,
             strides=strides, pads=pads, dilations=dilations, groups=groups)
    shape = c.b.types[y].shape
    c.emit("reshape", [y], shape=shape[:2] + shape[3:])


@onnx_op("ConvTranspose", versions=(11, 22))
def _conv_transpose(c):
    x, w = c.type(0), c.type(1)
    rank = x.rank - 2
    kernel = tuple(c.attr("kernel_shape", w.shape[2:]))
    strides = tuple(c.attr("strides", (1,) * rank))
    dilations = tuple(c.attr("dilations", (1,) * rank))
    out_pad = tuple(c.attr("output_padding", (0,) * rank))
    pads = list(c.attr("pads", (0,) * (2 * rank)))
    auto = c.attr("auto_pad", "NOTSET")
    target = c.attr("output_shape")
    if auto in ("SAME_UPPER", "SAME_LOWER") and target is None:
        target = [x.shape[2 + i] * strides[i] for i in range(rank)]
    elif auto == "VALID":
        pads = [0] * (2 * rank)
    elif auto not in ("NOTSET", "SAME_UPPER", "SAME_LOWER"):
        raise c.fail("auto_pad", "NOTSET, VALID, SAME_UPPER or SAME_LOWER", repr(auto))
    if target is not None:
        target = list(target)[-rank:]
        for i in range(rank):
            total = strides[i] * (x.shape[2 + i] - 1) + out_pad[i] + \
                (kernel[i] - 1) * dilations[i] + 1 - target[i]
            half = int(total / 2)   # C division: toward zero
            pads[i], pads[rank + i] = (total - half, half) if auto == "SAME_LOWER" else \
                (half, total - half)
    c.emit("conv_transpose", c.inputs()[:3], strides=strides, pads=tuple(pads),
           dilations=dilations, groups=c.attr("group", 1), output_padding=out_pad)


@onnx_op("Gemm", versions=(13,))
def _gemm(c):
    alpha, beta = c.attr("alpha", 1.0), c.attr("beta", 1.0)
    a = c.input(0)
    if c.attr("transA", 0):
        a = c.op("transpose", [a], hint=f"{c.label}_ta", perm=(1, 0))
    b_const = c.const(1)
    if b_const is not None:
        w = b_const if c.attr("transB", 0) else b_const.T
        w = c.constant((w * np.float32(alpha)).astype(w.dtype), hint="w")
        alpha = 1.0
    else:
        w = c.input(1)
        if not c.attr("transB", 0):
            w = c.op("transpose", [w], hint=f"{c.label}_tb", perm=(1, 0))
    c_const = c.const(2)
    n_out = c.b.types[w].shape[0]
    if c_const is not None and c_const.size == n_out and c_const.shape[-1:] == (n_out,) \
            and alpha == 1.0:
        bias = c.constant((c_const.reshape(-1) * np.float32(beta)).astype(c_const.dtype),
                          hint="b")
        c.emit("dense", [a, w, bias])
        return
    out = c.op("dense", [a, w], hint=c.label)
    if alpha != 1.0:
        out = c.op("mul", [out, c.constant(np.float32(alpha), hint="alpha")],
                   hint=f"{c.label}_a")
    if c.has(2):
        cv = c.input(2)
        if beta != 1.0:
            cv = c.op("mul", [cv, c.constant(np.float32(beta), hint="beta")],
                      hint=f"{c.label}_b")
        out = c.op("add", [out, cv], hint=f"{c.label}_c")
    c.bind(0, out)


def _matmul_2d(c, a: str, w_const: np.ndarray) -> str:
    """a [..., K] @ constant [K, N] as a dense over the flattened leading axes."""
    shape = c.b.types[a].shape
    w = c.constant(np.ascontiguousarray(w_const.T), hint="w")
    if len(shape) == 2:
        return c.emit("dense", [a, w])
    flat = c.op("reshape", [a], shape=(int(np.prod(shape[:-1])), shape[-1]))
    y = c.op("dense", [flat, w], hint=c.label)
    return c.emit("reshape", [y], shape=shape[:-1] + (w_const.shape[1],))


@onnx_op("MatMul", versions=(13,))
def _matmul(c):
    a, b = c.input(0), c.input(1)
    ta, tb = c.type(0), c.type(1)
    b_const = c.const(1)
    if b_const is not None and b_const.ndim == 2 and ta.rank >= 2 and \
            ta.dtype == "float32" and c.const(0) is None:
        _matmul_2d(c, a, b_const)
        return
    if ta.rank >= 2 and tb.rank >= 2:
        c.emit("matmul", [a, b])
        return
    if ta.rank == 1:
        a = c.op("reshape", [a], shape=(1, ta.shape[0]))
    if tb.rank == 1:
        b = c.op("reshape", [b], shape=(tb.shape[0], 1))
    y = c.op("matmul", [a, b], hint=c.label)
    shape = c.b.types[y].shape
    keep = shape[:-2] + (() if ta.rank == 1 else shape[-2:-1]) + \
        (() if tb.rank == 1 else shape[-1:])
    c.emit("reshape", [y], shape=keep)


@onnx_op("BatchNormalization", versions=(9, 14, 15))
def _batch_norm(c):
    if c.attr("training_mode", 0) or any(c.node.output[1:]):
        raise c.fail("mode", "inference (one output)", "training")
    c.emit("batch_norm", c.inputs()[:5], epsilon=c.attr("epsilon", 1e-5))
