"""numpy kernels of the float reference interpreter (NCHW layouts, ONNX semantics)."""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .shapes import conv_out_size


def pad_spatial(x: np.ndarray, pads, value=0) -> np.ndarray:
    top, left, bottom, right = pads
    if not any(pads):
        return x
    return np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)), constant_values=value)


def windows(x: np.ndarray, kernel, strides, dilations, out_hw) -> np.ndarray:
    """[N, C, Ho, Wo, kh, kw] view of an already padded NCHW tensor."""
    (kh, kw), (sh, sw), (dh, dw), (ho, wo) = kernel, strides, dilations, out_hw
    span_h, span_w = dh * (kh - 1) + 1, dw * (kw - 1) + 1
    view = sliding_window_view(x, (span_h, span_w), axis=(2, 3))
    return view[:, :, :(ho - 1) * sh + 1:sh, :(wo - 1) * sw + 1:sw, ::dh, ::dw]


def conv2d(x: np.ndarray, w: np.ndarray, strides=(1, 1), pads=(0, 0, 0, 0),
           dilations=(1, 1), groups: int = 1) -> np.ndarray:
    """Grouped 2-D convolution, computed in x's dtype (float32 or an exact float64)."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    ho = conv_out_size(h, kh, strides[0], pads[0], pads[2], dilations[0])
    wo = conv_out_size(wd, kw, strides[1], pads[1], pads[3], dilations[1])
    cols = windows(pad_spatial(x, pads), (kh, kw), strides, dilations, (ho, wo))
    if groups == 1:
        out = np.tensordot(cols, w, axes=([1, 4, 5], [1, 2, 3]))  # N Ho Wo O
        return np.ascontiguousarray(out.transpose(0, 3, 1, 2))
    cols = cols.reshape(n, groups, cg, ho, wo, kh, kw)
    wg = w.reshape(groups, o // groups, cg, kh, kw)
    if cg == 1 and o == groups:  # depthwise: one multiply-sum per channel
        out = np.einsum("nghwij,gij->nghw", cols[:, :, 0], wg[:, 0, 0])
        return np.ascontiguousarray(out)
    out = np.einsum("ngchwij,gocij->ngohw", cols, wg, optimize=True)
    return np.ascontiguousarray(out.reshape(n, o, ho, wo))


def max_pool(x, kernel, strides, pads, dilations=(1, 1), ceil_mode=0) -> np.ndarray:
    n, c, h, w = x.shape
    ho = conv_out_size(h, kernel[0], strides[0], pads[0], pads[2], dilations[0], ceil_mode)
    wo = conv_out_size(w, kernel[1], strides[1], pads[1], pads[3], dilations[1], ceil_mode)
    extra_h = max(0, (ho - 1) * strides[0] + dilations[0] * (kernel[0] - 1) + 1 - h - pads[0])
    extra_w = max(0, (wo - 1) * strides[1] + dilations[1] * (kernel[1] - 1) + 1 - w - pads[1])
    low = np.finfo(x.dtype).min if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = pad_spatial(x, (pads[0], pads[1], extra_h, extra_w), low)
    return windows(xp, kernel, strides, dilations, (ho, wo)).max(axis=(4, 5))


def avg_pool(x, kernel, strides, pads, count_include_pad=0, ceil_mode=0) -> np.ndarray:
    n, c, h, w = x.shape
    ho = conv_out_size(h, kernel[0], strides[0], pads[0], pads[2], 1, ceil_mode)
    wo = conv_out_size(w, kernel[1], strides[1], pads[1], pads[3], 1, ceil_mode)
    extra_h = max(0, (ho - 1) * strides[0] + kernel[0] - h - pads[0])
    extra_w = max(0, (wo - 1) * strides[1] + kernel[1] - w - pads[1])
    full = (pads[0], pads[1], extra_h, extra_w)
    sums = windows(pad_spatial(x, full), kernel, strides, (1, 1), (ho, wo)).sum(axis=(4, 5))
    if count_include_pad:  # padding counts, the ceil_mode overhang does not
        ones = pad_spatial(np.ones((1, 1, h + pads[0] + pads[2], w + pads[1] + pads[3]),
                                   x.dtype), (0, 0, max(0, extra_h - pads[2]), max(0, extra_w - pads[3])))
    else:
        ones = pad_spatial(np.ones((1, 1, h, w), x.dtype), full)
    counts = windows(ones, kernel, strides, (1, 1), (ho, wo)).sum(axis=(4, 5))
    return (sums / counts).astype(x.dtype)


def global_avg_pool(x: np.ndarray) -> np.ndarray:
    axes = tuple(range(2, x.ndim))
    return x.mean(axis=axes, keepdims=True, dtype=np.float32).astype(x.dtype)


def batch_norm(x, scale, bias, mean, var, epsilon) -> np.ndarray:
    shape = (1, -1) + (1,) * (x.ndim - 2)
    inv = (scale / np.sqrt(var + np.float32(epsilon))).astype(np.float32)
    shift = (bias - mean * inv).astype(np.float32)  # onnxruntime's order of operations
    return x * inv.reshape(shape) + shift.reshape(shape)


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    shifted = x - x.max(axis=axis, keepdims=True)
    e = np.exp(shifted)
    return e / e.sum(axis=axis, keepdims=True)


def dense(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return x @ w.T


def channel_shape(param: np.ndarray, rank: int, axis: int) -> np.ndarray:
    """A per-axis parameter reshaped to broadcast along `axis` of a rank-`rank` tensor (a
    full-rank one, as blocked quantisation makes, is kept as it is)."""
    param = np.asarray(param)
    if param.ndim == 0 or param.ndim == rank:
        return param
    shape = [1] * rank
    shape[axis] = -1
    return param.reshape(shape)


def quantize_linear(x, scale, zero_point, axis, dtype) -> np.ndarray:
    """ONNX QuantizeLinear: saturate(round_half_even(x / scale) + zero_point)."""
    info = np.iinfo(dtype)
    s = channel_shape(np.asarray(scale, np.float32), x.ndim, axis)
    zp = channel_shape(np.asarray(zero_point), x.ndim, axis).astype(np.int32)
    q = np.rint(x.astype(np.float32) / s).astype(np.float64) + zp
    return np.clip(q, info.min, info.max).astype(dtype)


def dequantize_linear(x, scale, zero_point, axis) -> np.ndarray:
    s = channel_shape(np.asarray(scale, np.float32), x.ndim, axis)
    zp = channel_shape(np.asarray(zero_point), x.ndim, axis).astype(np.int32)
    return ((x.astype(np.int32) - zp).astype(np.float32) * s).astype(np.float32)


def requantize_float(acc: np.ndarray, multiplier: np.ndarray, zero_point, dtype) -> np.ndarray:
    """onnxruntime's QLinear requantisation: round_half_even(acc * multiplier) + zp."""
    info = np.iinfo(dtype)
    scaled = acc.astype(np.float32) * multiplier.astype(np.float32)
    q = np.rint(scaled).astype(np.float64) + np.asarray(zero_point).astype(np.float64)
    return np.clip(q, info.min, info.max).astype(dtype)


def pool_nd(x, kind: str, kernel, strides, pads, dilations=None, ceil_mode=0,
            count_include_pad=0) -> np.ndarray:
    """N-D max ("max") or average ("avg") pooling over the axes after N, C (ONNX semantics:
    `pads` = begins + ends; with ceil_mode the last window may overhang the end padding,
    and the overhang never counts for the average)."""
    rank = len(kernel)
    dilations = tuple(dilations or (1,) * rank)
    size = x.shape[2:]
    out = [conv_out_size(size[i], kernel[i], strides[i], pads[i], pads[rank + i],
                         dilations[i], bool(ceil_mode)) for i in range(rank)]
    span = [dilations[i] * (kernel[i] - 1) + 1 for i in range(rank)]
    end = [max(0, (out[i] - 1) * strides[i] + span[i] - size[i] - pads[i]) for i in range(rank)]
    axes = tuple(range(2, 2 + rank))
    picks = tuple(slice(None, (out[i] - 1) * strides[i] + 1, strides[i]) for i in range(rank)) \
        + tuple(slice(None, None, d) for d in dilations)

    def view(a, fill):
        padded = np.pad(a, [(0, 0)] * (a.ndim - rank) + [(pads[i], end[i]) for i in range(rank)],
                        constant_values=fill)
        return sliding_window_view(padded, span, axis=axes)[(slice(None), slice(None)) + picks]

    window_axes = tuple(range(2 + rank, 2 + 2 * rank))
    if kind == "max":
        low = np.finfo(x.dtype).min if x.dtype.kind == "f" else np.iinfo(x.dtype).min
        return view(x, low).max(axis=window_axes)
    sums = view(x, 0).sum(axis=window_axes)
    ones = np.ones((1, 1) + size, x.dtype)
    if count_include_pad:  # padding counts, the ceil_mode overhang does not
        region = np.pad(ones, [(0, 0), (0, 0)] + [(pads[i], pads[rank + i]) for i in range(rank)],
                        constant_values=1)
        region = region[(slice(None), slice(None)) +
                        tuple(slice(None, pads[i] + size[i] + end[i]) for i in range(rank))]
        extra = [max(0, end[i] - pads[rank + i]) for i in range(rank)]
        region = np.pad(region, [(0, 0), (0, 0)] + [(0, e) for e in extra])
        counts = sliding_window_view(region, span, axis=axes)[
            (slice(None), slice(None)) + picks].sum(axis=window_axes)
    else:
        counts = view(ones, 0).sum(axis=window_axes)
    return (sums / counts).astype(x.dtype)


def conv_transpose(x, w, strides, pads, dilations, groups=1, output_padding=None):
    """N-D transposed convolution: x [N, C, ...], w [C, M/groups, ...] -> [N, M, ...]."""
    rank = x.ndim - 2
    n, c = x.shape[:2]
    mg = w.shape[1]
    kernel = w.shape[2:]
    output_padding = tuple(output_padding or (0,) * rank)
    full = [strides[i] * (x.shape[2 + i] - 1) + dilations[i] * (kernel[i] - 1) + 1 +
            output_padding[i] for i in range(rank)]
    out = np.zeros((n, mg * groups) + tuple(full), np.result_type(x, w))
    cg = c // groups
    for g in range(groups):
        xs = x[:, g * cg:(g + 1) * cg]
        ws = w[g * cg:(g + 1) * cg]
        cols = np.tensordot(xs, ws, axes=([1], [0]))    # N, *in, M/g, *kernel
        cols = np.moveaxis(cols, 1 + rank, 1)           # N, M/g, *in, *kernel
        for tap in np.ndindex(*kernel):
            where = tuple(slice(tap[i] * dilations[i],
                                tap[i] * dilations[i] + strides[i] * (x.shape[2 + i] - 1) + 1,
                                strides[i]) for i in range(rank))
            out[(slice(None), slice(g * mg, (g + 1) * mg)) + where] += \
                cols[(Ellipsis,) + tap]
    grow = [(max(0, -pads[i]), max(0, -pads[rank + i])) for i in range(rank)]
    out = np.pad(out, [(0, 0), (0, 0)] + grow)   # negative pads extend the output
    crop = tuple(slice(max(0, pads[i]), full[i] + grow[i][0] - pads[rank + i])
                 for i in range(rank))
    return np.ascontiguousarray(out[(slice(None), slice(None)) + crop])
