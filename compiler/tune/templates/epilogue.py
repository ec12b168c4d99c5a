"""Seeded operands and the numpy reference of a fused requantisation epilogue
(compiler/exec/templates.py `Epilogue`), on int64 values wrapped to the accumulator width
at every step as the accumulator does."""
from __future__ import annotations

import numpy as np

from vtalab.spec.isa import wrap_signed

VEC = "vec"


def wrap(values, bits: int) -> np.ndarray:
    return wrap_signed(np.asarray(values, np.int64), bits)


def _shift(v: np.ndarray, amount, bits: int) -> np.ndarray:
    """The ALU's SHR: right for a non-negative amount, left (wrapping) for a negative one."""
    amount = np.asarray(amount, np.int64)
    right = v >> np.maximum(amount, 0)
    left = wrap(v << np.maximum(-amount, 0), bits)
    return np.where(amount >= 0, right, left)


def epilogue_inputs(ep, out_shape: tuple, vec_shape: tuple, rng) -> dict:
    """Seeded operands the epilogue reads: bias, residual (+ its identity weight) and
    per-channel shift vectors (amounts 0..12, inside the ALU's field)."""
    ins = {}
    if ep.bias:
        ins["bias"] = rng.integers(-5000, 5000, vec_shape).astype(np.int32)
    if ep.residual and ep.residual_gemm:
        bo = out_shape[-1]
        ins["residual"] = rng.integers(-128, 128, out_shape).astype(np.int8)
        ins["residual_eye"] = (np.eye(bo, dtype=np.int8) << 2).reshape(1, 1, bo, bo)
    elif ep.residual:
        ins["residual"] = rng.integers(-40000, 40000, out_shape).astype(np.int32)
    for prefix, steps in (("rshift", ep.residual_shifts), ("shift", ep.shifts)):
        for k, step in enumerate(steps):
            if step == VEC:
                ins[f"{prefix}{k}"] = rng.integers(0, 13, vec_shape).astype(np.int32)
    return ins


def epilogue_reference(acc: np.ndarray, ins: dict, ep, expand, bits: int) -> np.ndarray:
    """int8 output of ``acc`` (``bits``-bit accumulator values in int64) through the
    epilogue; ``expand`` broadcasts a per-channel vector against ``acc``."""
    def amount(prefix, k, step):
        return expand(ins[f"{prefix}{k}"].astype(np.int64)) if step == VEC else step

    value = acc
    if ep.residual:
        if ep.residual_gemm:
            res = ins["residual"].astype(np.int64)
            eye = ins["residual_eye"][0, 0].astype(np.int64)
            aligned = wrap(np.einsum("...k,yk->...y", res, eye), bits)
        else:
            aligned = ins["residual"].astype(np.int64)
        for k, step in enumerate(ep.residual_shifts):
            aligned = _shift(aligned, amount("rshift", k, step), bits)
        value = wrap(value + aligned, bits)
    if ep.bias:
        value = wrap(value + expand(ins["bias"].astype(np.int64)), bits)
    for k, step in enumerate(ep.shifts):
        value = _shift(value, amount("shift", k, step), bits)
    if ep.hi is not None:
        value = np.minimum(value, ep.hi)
    if ep.lo is not None:
        value = np.maximum(value, ep.lo)
    return (value & 0xFF).astype(np.uint8).view(np.int8)
