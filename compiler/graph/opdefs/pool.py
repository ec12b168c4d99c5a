"""Pooling: max_pool, avg_pool (2-D), pool_nd (any spatial rank, dilated averages),
global_avg_pool (MaxPool, AveragePool, GlobalAveragePool, GlobalMaxPool)."""
from __future__ import annotations

from .. import kernels as K
from .. import kernels_cpu as N
from .. import kernels_int as I
from .. import kernels_llvm as L
from .. import tune_tasks as T
from ..ir import TensorType
from ..opdef import OpDef, onnx_op, register
from ..shapes import conv_out_size, fail, need
from .common import as_2d, one_d_attrs, pads_2d, spatial


def infer_pool(node, types):
    need(node, types, 1)
    x = types[0]
    if x.rank != 4:
        raise fail(node, "input rank", "4 (NCHW)", x.rank)
    kh, kw = node.attr("kernel")
    sh, sw = node.attr("strides", (1, 1))
    top, left, bottom, right = node.attr("pads", (0, 0, 0, 0))
    dh, dw = node.attr("dilations", (1, 1))
    ceil = bool(node.attr("ceil_mode", 0))
    n, c, h, w = x.shape
    shape = (n, c, conv_out_size(h, kh, sh, top, bottom, dh, ceil),
             conv_out_size(w, kw, sw, left, right, dw, ceil))
    return [TensorType(shape, x.dtype)]


def infer_pool_nd(node, types):
    need(node, types, 1)
    x = types[0]
    kernel, strides, pads = node.attr("kernel"), node.attr("strides"), node.attr("pads")
    rank = len(kernel)
    if x.rank != rank + 2:
        raise fail(node, "input rank", f"{rank + 2} (N, C and {rank} spatial axes)", x.rank)
    dilations = node.attr("dilations") or (1,) * rank
    out = tuple(conv_out_size(x.shape[2 + i], kernel[i], strides[i], pads[i], pads[rank + i],
                              dilations[i], bool(node.attr("ceil_mode", 0)))
                for i in range(rank))
    if min(out) <= 0:
        raise fail(node, "output size", "positive", out)
    return [TensorType(x.shape[:2] + out, x.dtype)]


def infer_global(node, types):
    need(node, types, 1)
    x = types[0]
    if x.rank < 3:
        raise fail(node, "input rank", "at least 3", x.rank)
    return [TensorType(x.shape[:2] + (1,) * (x.rank - 2), x.dtype)]


def _onnx_pads(node):
    top, left, bottom, right = node.attr("pads", (0, 0, 0, 0))
    return (top, left, bottom, right)


def ref_max_pool(node, x):
    return K.pool_nd(x, "max", node.attr("kernel"), node.attr("strides", (1, 1)),
                     _onnx_pads(node), node.attr("dilations", (1, 1)), node.attr("ceil_mode", 0))


def ref_avg_pool(node, x):
    return K.pool_nd(x, "avg", node.attr("kernel"), node.attr("strides", (1, 1)),
                     _onnx_pads(node), None, node.attr("ceil_mode", 0),
                     node.attr("count_include_pad", 0))


def ref_pool_nd(node, x):
    return K.pool_nd(x, node.attr("kind"), node.attr("kernel"), node.attr("strides"),
                     node.attr("pads"), node.attr("dilations"), node.attr("ceil_mode", 0),
                     node.attr("count_include_pad", 0))


register(
    OpDef("max_pool", infer_pool, reference=ref_max_pool, cpu=N.max_pool, llvm=L.max_pool,
          llvm_when=L.when_max_pool, llvm_exact=True, int8=I.max_pool, quant="int8",
          keeps_range=True, tune=T.max_pool,
          doc="2-D max pooling; pads (top, left, bottom, right); ceil_mode, dilations"),
    OpDef("avg_pool", infer_pool, reference=ref_avg_pool, cpu=N.avg_pool, llvm=L.avg_pool,
          llvm_when=L.when_avg_pool, tune=T.avg_pool,
          doc="2-D average pooling; count_include_pad, ceil_mode"),
    OpDef("pool_nd", infer_pool_nd, reference=ref_pool_nd,
          doc="max/avg pooling over any number of spatial axes (ONNX pads order), "
              "dilations for both kinds"),
    OpDef("global_avg_pool", infer_global, reference=lambda n, x: K.global_avg_pool(x),
          cpu=N.global_avg_pool, llvm=L.global_avg_pool, llvm_when=L.when_global_avg_pool,
          tune=T.global_avg_pool,
          doc="mean over the spatial axes, kept as size 1"),
)


def _pool(c, kind: str):
    if c.n_outputs > 1 and c.node.output[1]:
        raise c.fail("outputs", "one (no Indices)", c.n_outputs)
    if c.attr("storage_order", 0):
        raise c.fail("storage_order", "0", c.attr("storage_order"))
    x = c.type(0)
    kernel = tuple(c.attr("kernel_shape"))
    strides, pads, dilations = spatial(c, x.shape, kernel)
    ceil = c.attr("ceil_mode", 0)
    include = c.attr("count_include_pad", 0)
    if x.rank == 4 and (kind == "max" or dilations == (1, 1)):
        extra = dict(dilations=dilations) if kind == "max" else dict(count_include_pad=include)
        c.emit(f"{kind}_pool", [c.input(0)], kernel=kernel, strides=strides,
               pads=pads_2d(pads), ceil_mode=ceil, **extra)
    elif x.rank == 3 and (kind == "max" or dilations == (1,)):
        strides2, pads2, dilations2, kernel2 = one_d_attrs(strides, pads, dilations, kernel)
        extra = dict(dilations=dilations2) if kind == "max" else dict(count_include_pad=include)
        y = c.op(f"{kind}_pool", [as_2d(c, c.input(0), 3)], kernel=kernel2, strides=strides2,
                 pads=pads2, ceil_mode=ceil, **extra)
        shape = c.b.types[y].shape
        c.emit("reshape", [y], shape=shape[:2] + shape[3:])
    elif x.rank >= 3:
        c.emit("pool_nd", [c.input(0)], kind=kind, kernel=kernel, strides=strides, pads=pads,
               dilations=dilations, ceil_mode=ceil, count_include_pad=include)
    else:
        raise c.fail("input rank", "at least 3 (N, C, spatial...)", x.rank)


@onnx_op("MaxPool", versions=(12, 22))
def _max_pool(c):
    _pool(c, "max")


@onnx_op("AveragePool", versions=(11, 19, 22))
def _avg_pool(c):
    if c.version < 19 and c.attr("dilations") is not None:
        raise c.fail("dilations", "absent before AveragePool-19", c.attr("dilations"))
    _pool(c, "avg")


@onnx_op("GlobalAveragePool", versions=(1, 22))
def _gap(c):
    c.emit("global_avg_pool", [c.input(0)])


@onnx_op("GlobalMaxPool", versions=(1, 22))
def _gmp(c):
    rank = c.type(0).rank
    if rank < 3:
        raise c.fail("input rank", "at least 3", rank)
    c.emit("reduce", [c.input(0)], kind="max", axes=tuple(range(2, rank)), keepdims=1)
