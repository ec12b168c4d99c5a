"""2-D convolution on the CPU: NCHW (any stride, padding, dilation, groups incl. depthwise)
and packed NCHW{c}c with OIHW{i}i{o}o weights.

Schedules (both layouts): the padded input is materialised once (parallel), then every
output tile of ``oc_tile`` channels x ``lanes`` pixels accumulates in registers (a local
buffer that LLVM keeps in vector registers) over (ic, kh, kw), and is written out with an
optional bias / ReLU epilogue. NCHW vectorises along the output row (strided input rows
become one wide load + shuffle); NCHWc vectorises along the packed output channels.
The NCHW schedule's choices are knobs (``knobs.conv_nchw_knobs``): the channel tile, the
vector width, unrolling, the tile loop order and how many outer loops run in parallel.
"""
from __future__ import annotations

import numpy as np

from .. import te
from ..errors import ShapeError
from ..ir.dtype import dtype_of
from ..te.build import lower_schedule
from .common import (as_array, compiled, compiled_func, pair, padding4, pick_factor,
                     vector_lanes)
from .knobs import (CONV_ORDERS, check_choice, check_divides, check_positive, conv_nchw_knobs,
                    conv_row_multiple, knob_key, resolve)


def out_size(size: int, k: int, stride: int, dilation: int, before: int, after: int) -> int:
    n = (size + before + after - dilation * (k - 1) - 1) // stride + 1
    if n <= 0:
        raise ShapeError(f"convolution output size must be positive, not {n} (input {size}, "
                         f"kernel {k}, stride {stride}, dilation {dilation})")
    return n


def _acc_dtype(dtype) -> str:
    return "float32" if dtype_of(dtype).is_float else "int32"


def _mac(a, b, acc_dtype):
    return a.astype(acc_dtype) * b.astype(acc_dtype) if a.dtype != dtype_of(acc_dtype) else a * b


def pad_nchw(x, pads, value=0.0, name="pad"):
    """Compute: ``x`` (rank >= 2, H, W at axes 2, 3) padded on H and W with ``value``."""
    top, left, bottom, right = pads
    N, C, H, W = x.shape[:4]
    rest = x.shape[4:]
    shape = (N, C, H + top + bottom, W + left + right) + rest

    def body(n, c, h, w, *r):
        inside = (h >= top) & (h < H + top) & (w >= left) & (w < W + left)
        return te.select(inside, x[(n, c, h - top, w - left) + r], te.cast(x.dtype, value))
    return te.compute(shape, body, name=name)


def _epilogue(conv, bias, relu, oc_axis=1, oc_index=None):
    if bias is None and not relu:
        return conv

    def body(*i):
        v = conv[i]
        if bias is not None:
            v = v + bias[oc_index(i) if oc_index else i[oc_axis]]
        return te.max(v, te.cast(v.dtype, 0)) if relu else v
    return te.compute(conv.shape, body, name="conv_out")


def conv2d_nchw_compute(x, w, stride, pads, dilation, groups, bias=None, relu=False,
                        ow_multiple: int = 1):
    """(padded input, convolution, output) tensors of an NCHW convolution with OIHW weights.

    ``ow_multiple`` > 1 computes the convolution on a row rounded up to that multiple (the
    padded input gets extra zero columns) so full-width vector tiles need no masks; only
    the output stage stores a masked tail."""
    N, IC, H, W = x.shape
    OC, ICg, KH, KW = w.shape
    (sh, sw), (dh, dw) = stride, dilation
    if IC % groups or OC % groups or ICg != IC // groups:
        raise ShapeError(f"weight shape must be (OC, IC/groups={IC // groups}, KH, KW) with "
                         f"OC divisible by groups={groups}, not {w.shape}")
    OH = out_size(H, KH, sh, dh, pads[0], pads[2])
    OW = out_size(W, KW, sw, dw, pads[1], pads[3])
    OWc = -(-OW // ow_multiple) * ow_multiple
    if OWc != OW:
        pads = (pads[0], pads[1], pads[2], pads[3] + (OWc - OW) * sw)
    xp = pad_nchw(x, pads, name="xpad") if any(pads) else x
    acc = _acc_dtype(x.dtype)
    ic, kh, kw = te.reduce_axis(ICg, "ic"), te.reduce_axis(KH, "kh"), te.reduce_axis(KW, "kw")
    OCg = OC // groups

    def body(n, oc, oh, ow):
        chan = ic if groups == 1 else (oc // OCg) * ICg + ic
        a = xp[n, chan, oh * sh + kh * dh, ow * sw + kw * dw]
        return te.sum(_mac(a, w[oc, ic, kh, kw], acc), axis=[ic, kh, kw])
    conv = te.compute((N, OC, OH, OWc), body, name="conv")
    if OWc == OW:
        return xp, conv, _epilogue(conv, bias, relu)

    def crop(n, oc, oh, ow):
        v = conv[n, oc, oh, ow]
        if bias is not None:
            v = v + bias[oc]
        return te.max(v, te.cast(v.dtype, 0)) if relu else v
    return xp, conv, te.compute((N, OC, OH, OW), crop, name="conv_out")


def schedule_conv_nchw(s, xp, conv, out, target=None, knobs=None):
    """Register tiles of oc_tile channels x lanes output pixels (see module doc); ``knobs``
    (see ``knobs.conv_nchw_knobs``) default to the heuristic for the output's extents."""
    if xp.op is not out.op and hasattr(xp.op, "axes"):
        st = s[xp]
        n, c, h, w = st.leaf_iter_vars
        st.parallel(st.fuse(st.fuse(n, c), h))
    local = s.cache_write(conv, "local")
    if out is not conv:
        s[conv].compute_inline()
    st = s[out]
    n, oc, oh, ow = st.leaf_iter_vars
    ls = s[local]
    ln, loc, loh, low, ic, kh, kw = ls.leaf_iter_vars
    kn = resolve(conv_nchw_knobs(oc.extent, ow.extent, kw.extent, local.dtype, target),
                 knobs, "conv2d")
    oco, oci = st.split(oc, check_divides("conv2d oc_tile", kn["oc_tile"], oc.extent))
    owo, owi = st.split(ow, check_positive("conv2d lanes", kn["lanes"]))
    outer = (oco, oh) if check_choice("conv2d order", kn["order"], CONV_ORDERS) == "oc_oh" \
        else (oh, oco)
    st.reorder(n, *outer, owo, oci, owi)
    st.vectorize(owi)
    fused = st.fuse(n, outer[0])
    if check_choice("conv2d par_depth", kn["par_depth"], (2, 3)) == 3:
        fused = st.fuse(fused, outer[1])
    st.parallel(fused)
    ls.reorder(ln, loh, ic, kh, kw, loc, low)
    ls.compute_at(st, owo)
    ls.vectorize(low)
    if kn["unroll_oc"]:
        st.unroll(oci)
        ls.unroll(loc)
    if kn["unroll_kw"]:
        ls.unroll(kw)


def conv2d_nchw_knobs(x_shape, w_shape, dtype="float32", stride=1, padding=0, dilation=1,
                      target=None, knobs=None) -> dict:
    """The resolved knobs of an NCHW convolution (``knobs`` over the heuristic)."""
    stride, dilation, pads = pair(stride, "stride"), pair(dilation, "dilation"), padding4(padding)
    ow = out_size(x_shape[3], w_shape[3], stride[1], dilation[1], pads[1], pads[3])
    default = conv_nchw_knobs(w_shape[0], ow, w_shape[3], _acc_dtype(dtype), target)
    return resolve(default, knobs, "conv2d")


def conv2d_nchw_func(x_shape, w_shape, dtype="float32", stride=1, padding=0, dilation=1,
                     groups=1, bias=False, relu=False, target=None, knobs=None):
    """The lowered PrimFunc (x, w[, bias], out) of an NCHW convolution."""
    stride, dilation, pads = pair(stride, "stride"), pair(dilation, "dilation"), padding4(padding)
    kn = conv2d_nchw_knobs(x_shape, w_shape, dtype, stride, pads, dilation, target, knobs)
    ow = out_size(x_shape[3], w_shape[3], stride[1], dilation[1], pads[1], pads[3])
    x = te.placeholder(x_shape, dtype, "x")
    w = te.placeholder(w_shape, dtype, "w")
    b = te.placeholder((w_shape[0],), _acc_dtype(dtype), "bias") if bias else None
    xp, conv, out = conv2d_nchw_compute(x, w, stride, pads, dilation, groups, b, relu,
                                        conv_row_multiple(ow, kn["lanes"]))
    s = te.create_schedule(out)
    schedule_conv_nchw(s, xp, conv, out, target, kn)
    args = [x, w] + ([b] if bias else []) + [out]
    return lower_schedule(s, args, "conv2d_nchw")


def conv2d_nchw_kernel(x_shape, w_shape, dtype="float32", stride=1, padding=0, dilation=1,
                       groups=1, bias=False, relu=False, target=None, knobs=None):
    """Compiled kernel (x, w[, bias], out) of an NCHW convolution (``knobs``: see
    ``knobs.conv_nchw_knobs``; None is the heuristic)."""
    stride, dilation, pads = pair(stride, "stride"), pair(dilation, "dilation"), padding4(padding)
    kn = conv2d_nchw_knobs(x_shape, w_shape, dtype, stride, pads, dilation, target, knobs)
    key = ("conv2d_nchw", tuple(x_shape), tuple(w_shape), str(dtype), stride, pads, dilation,
           groups, bias, relu, knob_key(kn))
    return compiled_func(key, lambda: conv2d_nchw_func(
        x_shape, w_shape, dtype, stride, pads, dilation, groups, bias, relu, target, kn),
        target)


def conv2d(x, w, bias=None, stride=1, padding=0, dilation=1, groups=1, relu=False,
           target=None, knobs=None) -> np.ndarray:
    """NCHW convolution (float32, or int8 accumulating to int32) of ``x`` by OIHW ``w``."""
    x, w = as_array(x, name="x"), as_array(w, x.dtype, "w")
    if x.ndim != 4 or w.ndim != 4:
        raise ShapeError(f"conv2d x and w must be 4-D (NCHW, OIHW), not {x.shape} and {w.shape}")
    k = conv2d_nchw_kernel(x.shape, w.shape, x.dtype.name, stride, padding, dilation, groups,
                           bias is not None, relu, target, knobs)
    out = np.empty(k.plan.params[-1].shape, k.plan.params[-1].dtype.numpy)
    extra = [as_array(bias, out.dtype, "bias")] if bias is not None else []
    k(x, w, *extra, out)
    return out


# ---- packed NCHW{c}c -------------------------------------------------------------------

def conv2d_nchwc_compute(x, w, stride, pads, dilation, bias=None, relu=False):
    """x: [N, ICo, H, W, icb], w: [OCo, ICo, KH, KW, icb, ocb] -> [N, OCo, OH, OW, ocb]."""
    N, ICo, H, W, icb = x.shape
    OCo, ICo2, KH, KW, icb2, ocb = w.shape
    if (ICo2, icb2) != (ICo, icb):
        raise ShapeError(f"packed weight must have input blocks ({ICo}, {icb}), not "
                         f"({ICo2}, {icb2})")
    (sh, sw), (dh, dw) = stride, dilation
    OH = out_size(H, KH, sh, dh, pads[0], pads[2])
    OW = out_size(W, KW, sw, dw, pads[1], pads[3])
    xp = pad_nchw(x, pads, name="xpad") if any(pads) else x
    acc = _acc_dtype(x.dtype)
    ico, kh, kw = te.reduce_axis(ICo, "ico"), te.reduce_axis(KH, "kh"), te.reduce_axis(KW, "kw")
    ici = te.reduce_axis(icb, "ici")

    def body(n, oco, oh, ow, oci):
        a = xp[n, ico, oh * sh + kh * dh, ow * sw + kw * dw, ici]
        return te.sum(_mac(a, w[oco, ico, kh, kw, ici, oci], acc), axis=[ico, kh, kw, ici])
    conv = te.compute((N, OCo, OH, OW, ocb), body, name="conv")
    oc_index = (lambda i: i[1] * ocb + i[4]) if bias is not None else None
    return xp, conv, _epilogue(conv, bias, relu, oc_index=oc_index)


def schedule_conv_nchwc(s, xp, conv, out, target=None, ow_tile=None, unroll_ici=True):
    """Register tiles of ``ow_tile`` output pixels x one packed channel block."""
    if xp.op is not out.op and hasattr(xp.op, "axes"):
        st = s[xp]
        n, c, h, w, b = st.leaf_iter_vars
        st.parallel(st.fuse(st.fuse(n, c), h))
    local = s.cache_write(conv, "local")
    if out is not conv:
        s[conv].compute_inline()
    st = s[out]
    n, oco, oh, ow, oci = st.leaf_iter_vars
    ow_tile = ow_tile or pick_factor(ow.extent, 8)
    owo, owi = st.split(ow, ow_tile)
    st.reorder(n, oco, oh, owo, owi, oci)
    st.unroll(owi)
    st.vectorize(oci)
    st.parallel(st.fuse(st.fuse(n, oco), oh))
    ls = s[local]
    ln, lco, loh, low, loc, ico, kh, kw, ici = ls.leaf_iter_vars
    ls.reorder(ln, lco, loh, ico, kh, kw, ici, low, loc)
    ls.compute_at(st, owo)
    ls.unroll(low)
    ls.vectorize(loc)
    if unroll_ici and ici.extent <= 16:
        ls.unroll(ici)


def conv2d_nchwc_kernel(x_shape, w_shape, dtype="float32", stride=1, padding=0, dilation=1,
                        bias=False, relu=False, target=None):
    """Compiled kernel (x5, w6[, bias], out5) of a packed convolution (groups=1)."""
    stride, dilation, pads = pair(stride, "stride"), pair(dilation, "dilation"), padding4(padding)
    key = ("conv2d_nchwc", tuple(x_shape), tuple(w_shape), str(dtype), stride, pads, dilation,
           bias, relu)

    def make():
        x = te.placeholder(x_shape, dtype, "x")
        w = te.placeholder(w_shape, dtype, "w")
        oc = w_shape[0] * w_shape[5]
        b = te.placeholder((oc,), _acc_dtype(dtype), "bias") if bias else None
        xp, conv, out = conv2d_nchwc_compute(x, w, stride, pads, dilation, b, relu)
        s = te.create_schedule(out)
        schedule_conv_nchwc(s, xp, conv, out, target)
        return s, [x, w] + ([b] if bias else []) + [out], "conv2d_nchwc"
    return compiled(key, make, target)


def conv2d_nchwc(x, w, bias=None, stride=1, padding=0, dilation=1, relu=False,
                 target=None) -> np.ndarray:
    """Packed convolution: x [N, C/cb, H, W, cb], w [O/ob, C/cb, KH, KW, cb, ob]."""
    x, w = as_array(x, name="x"), as_array(w, x.dtype, "w")
    if x.ndim != 5 or w.ndim != 6:
        raise ShapeError(f"conv2d_nchwc x and w must be 5-D and 6-D, not {x.shape}, {w.shape}")
    k = conv2d_nchwc_kernel(x.shape, w.shape, x.dtype.name, stride, padding, dilation,
                            bias is not None, relu, target)
    out = np.empty(k.plan.params[-1].shape, k.plan.params[-1].dtype.numpy)
    extra = [as_array(bias, out.dtype, "bias")] if bias is not None else []
    k(x, w, *extra, out)
    return out


__all__ = ["conv2d", "conv2d_nchwc", "conv2d_nchw_kernel", "conv2d_nchwc_kernel",
           "conv2d_nchw_func", "conv2d_nchw_knobs",
           "conv2d_nchw_compute", "conv2d_nchwc_compute", "schedule_conv_nchw",
           "schedule_conv_nchwc", "pad_nchw", "out_size", "vector_lanes"]
