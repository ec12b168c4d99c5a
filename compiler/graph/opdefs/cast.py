"""Type conversion: cast (Cast, CastLike), including the low-precision float 8 / 6 / 4 and
int 4 / 2 types (ml_dtypes) with ONNX's saturation and float8e8m0 rounding rules.

In a quantised graph `cast` narrows int32 to int8 keeping the low bits (the int8 kernel);
everywhere else it follows ONNX (the reference)."""
from __future__ import annotations

import numpy as np

from .. import kernels_int as I
from ..ir import TensorType, np_dtype
from ..opdef import OpDef, onnx_op, register
from ..shapes import need
from .common import dtype_of

FLOAT8 = ("float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz")
E8M0 = "float8_e8m0fnu"
ML_FLOATS = FLOAT8 + (E8M0, "bfloat16", "float4_e2m1fn")


def infer_cast(node, types):
    need(node, types, 1)
    return [TensorType(types[0].shape, node.attr("dtype"))]


def _to_e8m0(x: np.ndarray, saturate: bool, mode: str) -> np.ndarray:
    """float8e8m0 (powers of two 2**-127 .. 2**127, NaN = 0xFF) with `mode` up / down /
    nearest (ties up)."""
    xf = x.astype(np.float64)
    mant, exp = np.frexp(np.abs(xf))            # |x| = mant * 2**exp, mant in [0.5, 1)
    exact = mant == 0.5
    lower = exp - 1                              # 2**lower <= |x| < 2**(lower + 1)
    if mode == "up":
        e = np.where(exact, lower, lower + 1)
    elif mode == "down":
        e = lower
    else:
        e = np.where(mant >= 0.75, lower + 1, lower)
    bits = e.astype(np.int64) + 127
    bad = ~np.isfinite(xf) | (xf <= 0)
    if saturate:
        bits = np.clip(bits, 0, 254)
        bits = np.where(np.isposinf(xf), 254, np.where(xf == 0, 0, bits))
        bad = np.isnan(xf)
    else:
        bad |= (bits < 0) | (bits > 254)
    bits = np.where(bad, 255, np.clip(bits, 0, 255)).astype(np.uint8)
    return bits.view(np_dtype(E8M0))


LOW_INTS = ("int4", "uint4", "int2", "uint2")


def cast_array(x: np.ndarray, dtype: str, saturate: bool = True,
               round_mode: str = "up") -> np.ndarray:
    """ONNX Cast of `x` to the graph-IR dtype `dtype`."""
    target = np_dtype(dtype)
    if x.dtype == target:
        return x.copy()
    if dtype == E8M0:
        return _to_e8m0(x, saturate, round_mode)
    if dtype in FLOAT8 and saturate:
        import ml_dtypes
        top = float(ml_dtypes.finfo(target).max)
        x = np.clip(x.astype(np.float32), -top, top)
    if x.dtype.name in LOW_INTS + ML_FLOATS or dtype in LOW_INTS:
        x = x.astype(np.int64 if x.dtype.name in LOW_INTS else np.float32)
    return x.astype(target)


def ref_cast(node, x):
    return cast_array(x, node.attr("dtype"), bool(node.attr("saturate", 1)),
                      node.attr("round_mode", "up"))


register(
    OpDef("cast", infer_cast, reference=ref_cast, int8=I.cast, quant="integer",
          elementwise=True, epilogue="cast", doc="x.astype(dtype): integers narrow to their low bits (no "
                                "saturation); float 8 types saturate unless saturate=0"),
)


def _cast_to(c, dtype: str) -> None:
    attrs = {}
    if c.version >= 19 and not c.attr("saturate", 1):
        attrs["saturate"] = 0
    if c.attr("round_mode", "up") != "up":
        if c.attr("round_mode") not in ("down", "nearest"):
            raise c.fail("round_mode", "'up', 'down' or 'nearest'", repr(c.attr("round_mode")))
        attrs["round_mode"] = c.attr("round_mode")
    c.emit("cast", [c.input(0)], dtype=dtype, **attrs)


@onnx_op("Cast", versions=(13, 19, 21, 23, 24, 25, 28))
def _cast(c):
    _cast_to(c, dtype_of(c, c.attr("to"), "to"))


@onnx_op("CastLike", versions=(15, 19, 21, 23, 24, 25))
def _cast_like(c):
    _cast_to(c, c.type(1).dtype)
