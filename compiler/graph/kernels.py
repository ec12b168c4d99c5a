"""numpy kernels of the float reference interpreter (NCHW layouts, ONNX semantics)."""
from __future__ import annotations

import numpy as np
from numpy.lib.stride_tricks import sliding_window_view

from .ops import conv_out_size


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
    """A per-axis parameter reshaped to broadcast along `axis` of a rank-`rank` tensor."""
    param = np.asarray(param)
    if param.ndim == 0:
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
