"""Blocked ("packed") tensor layouts of the accelerator.

One transform covers activations and weights: the first two axes are split into blocks and
the block axes move to the end, zero-padding each axis up to a multiple of its block:

    activations  N C H W  -> N' C' H W {batch}n {block_in}c     (NCHW{b}n{B}c)
    conv weights O I H W  -> O' I' H W {block_out}o {block_in}i (OIHW{B}o{B}i)
    dense        N K      -> N' K' {batch}n {block_in}k ;  weights M K -> M' K' {bo}m {bi}k

`pack` then `unpack` is the identity; padded entries are zero.
"""
from __future__ import annotations

import numpy as np

from .errors import GraphError


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def packed_shape(shape, blocks) -> tuple[int, ...]:
    shape = tuple(shape)
    if len(shape) < 2 or len(blocks) != 2 or min(blocks) < 1:
        raise GraphError(f"packed tensor must have rank >= 2 and two positive blocks, "
                         f"not shape {shape} with blocks {tuple(blocks)}")
    (a, b), rest = shape[:2], shape[2:]
    ba, bb = blocks
    return (_ceil_div(a, ba), _ceil_div(b, bb)) + rest + (ba, bb)


def pack_array(array: np.ndarray, blocks) -> np.ndarray:
    """Zero-pad axes 0 and 1 to their blocks and move the block axes last."""
    shape = packed_shape(array.shape, blocks)
    ba, bb = blocks
    a_pad, b_pad = shape[0] * ba, shape[1] * bb
    widths = [(0, a_pad - array.shape[0]), (0, b_pad - array.shape[1])] + \
        [(0, 0)] * (array.ndim - 2)
    padded = np.pad(array, widths)
    rest = array.shape[2:]
    split = padded.reshape((shape[0], ba, shape[1], bb) + rest)
    k = len(rest)
    order = (0, 2) + tuple(range(4, 4 + k)) + (1, 3)
    return np.ascontiguousarray(split.transpose(order))


def unpack_array(array: np.ndarray, shape) -> np.ndarray:
    """Inverse of `pack_array`: back to `shape` (dropping the padding)."""
    shape = tuple(shape)
    k = array.ndim - 4
    if k < 0 or array.ndim != len(shape) + 2:
        raise GraphError(f"packed array must have rank {len(shape) + 2}, not {array.ndim}")
    order = (0, array.ndim - 2, 1, array.ndim - 1) + tuple(range(2, 2 + k))
    merged = array.transpose(order)
    a = array.shape[0] * array.shape[-2]
    b = array.shape[1] * array.shape[-1]
    full = merged.reshape((a, b) + array.shape[2:2 + k])
    return np.ascontiguousarray(full[:shape[0], :shape[1]])


def pad_channels(count: int, block: int) -> int:
    return _ceil_div(count, block) * block


def pack_channel_vector(vector: np.ndarray, rank: int, block: int) -> np.ndarray:
    """A per-channel array broadcastable over NCHW (shape [1, C, 1, 1] or [1, C]) packed to
    broadcast over the packed layout: [1, C', 1.., 1, block]."""
    vector = np.asarray(vector)
    if vector.ndim == 0:
        return vector
    plain = vector.reshape((1, -1) + (1,) * (rank - 2))
    if plain.shape[1] == 1:
        return plain.reshape((1, 1) + (1,) * (rank - 2) + (1, 1))
    return pack_array(plain, (1, block))
