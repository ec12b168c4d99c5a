"""int8 elementwise operators the accelerator's ALU computes exactly: alu (plain layout,
any target) and accel_alu (packed, on the accelerator). passes/alu_islands.py makes them
from float islands (dequantize -> add / sub / max / min / mul / neg / abs / leaky_relu
[-> scale by 2**j] [-> relu / clip] -> quantize) whose result they equal bit for bit.

    inputs: int8 sources (1 or 2), all of one shape
    attrs:  loads    ((source, scale), ...)   tiles loaded into the accumulator:
                                              source * scale, scale = +-2**k (alignment)
            combine  "add" | "max" | "min" | "mul" | ""   folds the tiles left to right
            shift    round half to even of n / 2**shift (a negative shift: n * 2**-shift)
            lo, hi   clip, then narrow to int8
            function the ONNX-level operation, for reports
    value:  n = combine(source_i * scale_i);  y = int8(clip(round_shift(n, shift), lo, hi))

Why this is the float island's value: the sources' float values are exact (int8 * 2**-e),
the island's op on them is exact in float32 (n * 2**-E with |n| < 2**24: the aligned sum of
two int8 values whose exponents differ by at most 15 bits, a product of two, a max, a
negation, a power-of-two slope), and quantize rounds n * 2**(eo - E) half to even, which is
round_shift(n, E - eo); rint commutes with clip (both monotone), so a float clip at lo / hi
is an integer clip at rint(lo * 2**eo) / rint(hi * 2**eo)."""
from __future__ import annotations

import numpy as np

from .. import lowerings
from ..ir import TensorType
from ..opdef import OpDef, register
from ..shapes import fail

COMBINE = {"add": np.add, "max": np.maximum, "min": np.minimum, "mul": np.multiply}


def round_shift(n: np.ndarray, shift: int) -> np.ndarray:
    """n / 2**shift rounded half to even (n * 2**-shift for shift <= 0), int64."""
    n = np.asarray(n, np.int64)
    if shift <= 0:
        return n << -shift
    odd = (n >> shift) & 1
    return (n + (1 << (shift - 1)) - 1 + odd) >> shift


def alu_value(node, *sources) -> np.ndarray:
    """The exact integer value of an alu / accel_alu node."""
    tiles = [sources[i].astype(np.int64) * int(scale) for i, scale in node.attr("loads")]
    combine = node.attr("combine", "")
    n = tiles[0]
    for tile in tiles[1:]:
        n = COMBINE[combine](n, tile)
    y = round_shift(n, node.attr("shift", 0))
    return np.clip(y, node.attr("lo", -128), node.attr("hi", 127)).astype(np.int8)


def infer_alu(node, types):
    loads, combine = node.attr("loads", ()), node.attr("combine", "")
    shapes = {t.shape for t in types}
    if not types or len(shapes) != 1 or any(t.dtype != "int8" for t in types):
        raise fail(node, "sources", "int8 tensors of one shape", [str(t) for t in types])
    if not loads or any(not 0 <= i < len(types) for i, _ in loads):
        raise fail(node, "loads", f"(source, scale) pairs over {len(types)} sources", loads)
    if (len(loads) > 1) != bool(combine) or (combine and combine not in COMBINE):
        raise fail(node, "combine", f"one of {sorted(COMBINE)} for two loads, '' for one",
                   repr(combine))
    return [TensorType(types[0].shape, "int8")]


register(
    OpDef("alu", infer_alu, reference=alu_value, int8=alu_value, int8_always=True,
          quant="alu", elementwise=True, accel_op="accel_alu", doc=__doc__.splitlines()[0]),
    OpDef("accel_alu", infer_alu, reference=alu_value, int8=alu_value, int8_always=True,
          quant="alu", lower=lowerings.alu,
          doc="alu on the accelerator, on packed operands (elementwise: the layout does not "
              "change the value)"),
)
