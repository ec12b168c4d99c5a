"""Batched dense with computed operands: batch_dense and its fused forms accel_batch_dense
(packed, on the accelerator) and qbatch_dense (plain, CPU fallback).

    batch_dense(x [G, M, K], w [G, N, K]) -> y [G, M, N],  y[g] = x[g] @ w[g]^T

The quantiser (passes/quantize.py) makes it from a MatMul whose operands are both computed
(attention's Q x K^T and attn x V): both operands int8 activations, the second transposed
to [G, N, K] so that each batch index is a dense layer whose weights the accelerator loads
from DRAM like an activation. Packed (layout "packed"), every operand is a run of G packed
matrices (batch_layout.py): x (G, M', K', batch, block_in), w (G, N', K', block_out,
block_in), y (G, M', N', batch, block_out). The fused forms add the requantising epilogue
of accel_dense (internal.py `infer_accel`)."""
from __future__ import annotations

import numpy as np

from .. import kernels_cpu as N
from .. import kernels_int as I
from .. import lowerings
from .. import tune_tasks as T
from ..batch_layout import pack_batched, unpack_batched
from ..ir import TensorType
from ..opdef import Gemm, OpDef, register
from ..shapes import acc_dtype, fail, need, packed
from .internal import infer_accel, int8_accel


def infer_batch_dense(node, types):
    need(node, types, 2)
    x, w = types
    rank = 5 if packed(node) else 3
    if x.rank != rank or w.rank != rank or x.shape[0] != w.shape[0] or \
            x.shape[2] != w.shape[2] or (packed(node) and x.shape[4] != w.shape[4]):
        form = "G M' K' b k and G N' K' n k" if packed(node) else "[G, M, K] and [G, N, K]"
        raise fail(node, "operand shapes", form, [x.shape, w.shape])
    if x.dtype != w.dtype:
        raise fail(node, "operand dtypes", "equal", [x.dtype, w.dtype])
    shape = (x.shape[0], x.shape[1], w.shape[1], x.shape[3], w.shape[3]) if packed(node) \
        else (x.shape[0], x.shape[1], w.shape[1])
    return [TensorType(shape, acc_dtype(node, x.dtype))]


def macs_batch_dense(node, types, out):
    x = types[0].shape
    return out.size * (x[2] * x[4] if packed(node) else x[2])


def _on_plain(node, x, w, compute):
    """Run `compute` on plain [G, rows, K] operands (packed ones unpacked, padding kept)."""
    if not packed(node):
        return compute(x, w)
    full = lambda a: (a.shape[0], a.shape[1] * a.shape[3], a.shape[2] * a.shape[4])  # noqa
    out = compute(unpack_batched(x, full(x), 1), unpack_batched(w, full(w), 1))
    return pack_batched(out, (x.shape[3], w.shape[3]), 1)


def int8_batch_dense(node, x, w):
    """Exact: int8 products summed in float64 (integers below 2**53), wrapped to int32."""
    return _on_plain(node, x, w, lambda a, b: I.wrap32(
        np.matmul(a.astype(np.float64), b.astype(np.float64).transpose(0, 2, 1))))


def cpu_batch_dense(node, x, w):
    if x.dtype.kind not in "iu":
        return np.matmul(x, w.transpose(0, 2, 1))
    return _on_plain(node, x, w, lambda a, b: N.wrap32(
        np.einsum("gmk,gnk->gmn", a.astype(np.int64), b.astype(np.int64))))


def ref_batch_dense(node, x, w):
    if x.dtype.kind in "iu":
        return int8_batch_dense(node, x, w)
    return np.matmul(x, w.transpose(0, 2, 1)).astype(x.dtype)


def cpu_fused(node, x, w, bias=None, residual=None):
    return N.requant_epilogue(node, cpu_batch_dense(node, x, w), bias, residual)


register(
    OpDef("batch_dense", infer_batch_dense, reference=ref_batch_dense, cpu=cpu_batch_dense,
          int8=int8_batch_dense, quant="integer", macs=macs_batch_dense,
          gemm=Gemm("accel_batch_dense", "qbatch_dense", computed_weights=True, batched=True),
          doc="y[g] = x[g] @ w[g]^T over [G, M, K] x [G, N, K] (the quantised MatMul of two "
              "computed operands)"),
    *[OpDef(op, infer_accel, cpu=cpu_fused, int8=int8_accel, int8_always=True,
            quant="integer", macs=macs_batch_dense, base_op="batch_dense", tune=tune,
            lower=lowering,
            doc=f"batch_dense with accel_dense's requantising epilogue ({where})")
      for op, where, tune, lowering in (
          ("accel_batch_dense", "packed, on the accelerator", T.accel_batch_dense,
           lowerings.batch_dense),
          ("qbatch_dense", "plain, on the CPU", None, None))],
)
