"""Operators the compiler makes (never imported from ONNX): pack / unpack (blocked
layouts), the fused int8 GEMMs accel_conv2d / accel_dense / qconv2d / qdense,
fused_elementwise and lut (an int8 lookup table, passes/tabulate.py)."""
from __future__ import annotations

import numpy as np

from .. import kernels_cpu as N
from .. import kernels_int as I
from .. import kernels_llvm as L
from .. import lowerings
from .. import tune_tasks as T
from ..batch_layout import pack_batched, packed_batch_shape, unpack_batched
from ..ir import Node, TensorType
from ..opdef import OpDef, op_of, opdef, register
from ..shapes import fail, need
from .nn import macs_conv, macs_dense


def infer_pack(node, types):
    need(node, types, 1)
    return [TensorType(packed_batch_shape(types[0].shape, node.attr("blocks"),
                                          node.attr("batch", 0)), types[0].dtype)]


def infer_unpack(node, types):
    need(node, types, 1)
    return [TensorType(tuple(node.attr("shape")), types[0].dtype)]


def infer_accel(node, types):
    """Fused int8 operator (the contract the accelerator lowering implements).

    The GEMM is the op's `base_op` in the op table (conv2d, dense, batch_dense); its type
    inference gives the output's shape.

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
    from ..ops import infer_types
    base = Node(node.name, op_of(node).base_op, node.inputs[:2], node.outputs,
                {k: v for k, v in node.attrs.items() if k in
                 ("strides", "pads", "dilations", "groups", "layout")})
    shape = infer_types(base, types[:2])[0].shape
    return [TensorType(shape, node.attr("out_dtype", "int8"))]


def int8_accel(node, x, w, bias=None, residual=None):
    """Fused int8 op: its base op's int8 GEMM, + bias, + aligned residual, >> shift, clip,
    narrow."""
    gemm = opdef(op_of(node).base_op, node.name).int8
    return I.requant(node, gemm(node, x, w), bias, residual)


def infer_fused(node, types):
    """A chain of elementwise nodes (`attrs["body"]`, inputs "$i" / earlier "%k")."""
    from ..ops import infer_types
    env = {f"${i}": t for i, t in enumerate(types)}
    for inner in node.attr("body"):
        for value, t in zip(inner.outputs, infer_types(inner, [env[v] for v in inner.inputs])):
            env[value] = t
    return [env[node.attr("body")[-1].outputs[0]]]


def ref_fused(node, *args):
    from ..interp import reference_kernel, run_body
    return run_body(node, args, reference_kernel)


def infer_lut(node, types):
    need(node, types, 2)
    x, table = types
    if x.dtype != "int8" or table.dtype != "int8" or table.shape != (256,):
        raise fail(node, "operands", "int8 values and an int8[256] table",
                   [str(x), str(table)])
    return [x]


def lookup(node, x, table):
    """y = table[x + 128] (int8 -> int8)."""
    return np.take(table, x.astype(np.intp) + 128)


def _pack(n, x):
    return pack_batched(x, n.attr("blocks"), n.attr("batch", 0))


def _unpack(n, x):
    return unpack_batched(x, n.attr("shape"), n.attr("batch", 0))


register(
    OpDef("pack", infer_pack, reference=_pack, int8=_pack, quant="integer",
          doc="NCHW -> NCHW{n}n{c}c blocked layout (runtime/layout.py), zero padding; "
              "`batch` leading axes kept (batch_layout.py)"),
    OpDef("unpack", infer_unpack, reference=_unpack, int8=_unpack, quant="integer"),
    OpDef("fused_elementwise", infer_fused, reference=ref_fused, quant="integer",
          runs_body=True, doc="a chain of elementwise nodes run as one"),
    OpDef("lut", infer_lut, reference=lookup, int8=lookup, int8_always=True, quant="lookup",
          elementwise=True, doc="int8 -> int8 through a 256-entry table (y = table[x + 128])"),
    *[OpDef(op, infer_accel, cpu=cpu, int8=int8_accel, int8_always=True, quant="integer",
            macs=macs, base_op=base, tune=tune, doc=infer_accel.__doc__.splitlines()[0],
            **extra)
      for op, base, cpu, macs, tune, extra in (
          ("accel_conv2d", "conv2d", N.qconv2d, macs_conv, T.accel_conv2d,
           dict(lower=lowerings.conv2d)),
          ("accel_dense", "dense", N.qdense, macs_dense, T.accel_dense,
           dict(lower=lowerings.dense)),
          ("qconv2d", "conv2d", N.qconv2d, macs_conv, T.qconv2d,
           dict(llvm=L.qconv, llvm_when=L.when_qconv, llvm_exact=True)),
          ("qdense", "dense", N.qdense, macs_dense, None, {}))],
)
