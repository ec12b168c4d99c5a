"""The accelerator's blocked ("packed") data layouts in DRAM, and back.

One transform covers every operand: the first two axes are split into blocks and the block
axes move to the end, zero-padding each of the two axes up to a multiple of its block:

    matrix       R C      -> R' C' {br}r {bc}c      (a buffer's entries: see BUFFER_BLOCKS)
    activations  N C H W  -> N' C' H W {batch}n {block_in}c     (NCHW{b}n{B}c)
    conv weights O I H W  -> O' I' H W {block_out}o {block_in}i (OIHW{B}o{B}i)

`pack_array` then `unpack_array` is the identity; padded entries are zero. `pack` / `unpack`
are the strict two-dimensional form for one SRAM buffer's entries of a `Config`: they refuse
a matrix that is not a whole number of entries instead of padding it.
"""
from __future__ import annotations

import numpy as np

from vtalab.spec import Config
from vtalab.spec.errors import ProgramError

#: the Config fields that give the (rows, columns) of one entry of each buffer
BUFFER_BLOCKS = {"inp": ("batch", "block_in"), "wgt": ("block_out", "block_in"),
                 "acc": ("batch", "block_out"), "out": ("batch", "block_out")}


def ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def round_up(count: int, block: int) -> int:
    """`count` padded up to a multiple of `block`."""
    return ceil_div(count, block) * block


def buffer_blocks(cfg: Config, buffer: str) -> tuple[int, int]:
    """(rows, columns) of one entry of SRAM buffer `buffer` under `cfg`."""
    if buffer not in BUFFER_BLOCKS:
        raise ProgramError(f"buffer must be one of {sorted(BUFFER_BLOCKS)}, not {buffer!r}")
    rows, cols = BUFFER_BLOCKS[buffer]
    return getattr(cfg, rows), getattr(cfg, cols)


def packed_shape(shape, blocks) -> tuple[int, ...]:
    """The packed shape of an array of `shape`: (A', B', rest..., block_a, block_b)."""
    shape, blocks = tuple(shape), tuple(blocks)
    if len(shape) < 2 or len(blocks) != 2 or min(blocks) < 1:
        raise ProgramError(f"packed array must have rank >= 2 and two positive blocks, "
                           f"not shape {shape} with blocks {blocks}")
    (a, b), rest = shape[:2], shape[2:]
    ba, bb = blocks
    return (ceil_div(a, ba), ceil_div(b, bb)) + rest + (ba, bb)


def pack_array(array: np.ndarray, blocks) -> np.ndarray:
    """Zero-pad axes 0 and 1 to their blocks and move the block axes last."""
    array = np.asarray(array)
    shape = packed_shape(array.shape, blocks)
    ba, bb = blocks
    widths = [(0, shape[0] * ba - array.shape[0]), (0, shape[1] * bb - array.shape[1])]
    padded = np.pad(array, widths + [(0, 0)] * (array.ndim - 2))
    rest = array.shape[2:]
    split = padded.reshape((shape[0], ba, shape[1], bb) + rest)
    order = (0, 2) + tuple(range(4, 4 + len(rest))) + (1, 3)
    return np.ascontiguousarray(split.transpose(order))


def unpack_array(array: np.ndarray, shape) -> np.ndarray:
    """Inverse of `pack_array`: back to `shape` (dropping the padding)."""
    shape = tuple(shape)
    k = array.ndim - 4
    if k < 0 or array.ndim != len(shape) + 2:
        raise ProgramError(f"packed array must have rank {len(shape) + 2}, not {array.ndim}")
    order = (0, array.ndim - 2, 1, array.ndim - 1) + tuple(range(2, 2 + k))
    a = array.shape[0] * array.shape[-2]
    b = array.shape[1] * array.shape[-1]
    full = array.transpose(order).reshape((a, b) + array.shape[2:2 + k])
    if a < shape[0] or b < shape[1]:
        raise ProgramError(f"packed array must hold at least {shape[:2]} rows and columns, "
                           f"not {(a, b)}")
    return np.ascontiguousarray(full[:shape[0], :shape[1]])


def pack(cfg: Config, buffer: str, matrix: np.ndarray) -> np.ndarray:
    """(R, C) matrix -> (R/br, C/bc, br, bc) entries of `buffer`; R and C must be whole
    multiples of the entry's rows and columns."""
    blocks = buffer_blocks(cfg, buffer)
    matrix = np.asarray(matrix)
    if matrix.ndim != 2:
        raise ProgramError(f"{buffer} matrix must have rank 2, not {matrix.ndim}")
    for name, size, block in zip(("rows", "columns"), matrix.shape, blocks):
        if size % block:
            raise ProgramError(f"{buffer} matrix {name} must be a multiple of {block}, "
                               f"not {size}")
    return pack_array(matrix, blocks)


def unpack(cfg: Config, buffer: str, blocked: np.ndarray) -> np.ndarray:
    """Inverse of `pack`: (R/br, C/bc, br, bc) entries of `buffer` -> (R, C)."""
    br, bc = buffer_blocks(cfg, buffer)
    if blocked.ndim != 4 or blocked.shape[2:] != (br, bc):
        raise ProgramError(f"{buffer} entries must have shape (rows, columns, {br}, {bc}), "
                           f"not {blocked.shape}")
    return unpack_array(blocked, (blocked.shape[0] * br, blocked.shape[1] * bc))


def padded_plain_shape(packed: np.ndarray) -> tuple[int, ...]:
    """The plain shape of a packed array with its padding kept (the inverse of
    `packed_shape` for whole blocks)."""
    a, b, *rest = packed.shape[:-2]
    ba, bb = packed.shape[-2:]
    return (a * ba, b * bb) + tuple(rest)


def on_plain_operands(x: np.ndarray, w: np.ndarray, compute) -> np.ndarray:
    """`compute(x, w)` of a GEMM-like kernel on packed operands: both unpacked (padding
    kept, so padded channels contribute zeros), computed in the plain layout, and the
    result packed in the accumulator layout (x's row block by w's row block)."""
    out = compute(unpack_array(x, padded_plain_shape(x)), unpack_array(w, padded_plain_shape(w)))
    return pack_array(out, (x.shape[-2], w.shape[-2]))
