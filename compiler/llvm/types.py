"""LLVM types and constants for loop-IR dtypes (bool is i1 in registers, i8 in memory)."""
from __future__ import annotations

import llvmlite.ir as ir

from ..errors import CompileError
from ..ir.dtype import DType, dtype_of

I1, I8, I32, I64 = ir.IntType(1), ir.IntType(8), ir.IntType(32), ir.IntType(64)
PTR = ir.PointerType()
VOID = ir.VoidType()

_FLOATS = {16: ir.HalfType(), 32: ir.FloatType(), 64: ir.DoubleType()}


def scalar_type(dtype: DType) -> ir.Type:
    """The register type of ``dtype``."""
    dtype = dtype_of(dtype)
    if dtype.is_bool:
        return I1
    if dtype.is_int:
        return ir.IntType(dtype.bits)
    if dtype.is_float:
        return _FLOATS[dtype.bits]
    raise CompileError(f"dtype must be int, uint, float or bool, not {dtype}")


def memory_type(dtype: DType) -> ir.Type:
    """The in-memory element type of ``dtype`` (numpy stores bool as one byte)."""
    return I8 if dtype_of(dtype).is_bool else scalar_type(dtype)


def value_type(dtype: DType, lanes: int = 1) -> ir.Type:
    t = scalar_type(dtype)
    return t if lanes == 1 else ir.VectorType(t, lanes)


def constant(dtype: DType, value, lanes: int = 1) -> ir.Constant:
    """A scalar constant, or a splat vector of ``lanes`` copies."""
    dtype = dtype_of(dtype)
    t = scalar_type(dtype)
    if dtype.is_float:
        value = float(value)
    elif dtype.is_bool:
        value = int(bool(value))
    else:
        value = dtype.wrap(value)
    c = ir.Constant(t, value)
    return c if lanes == 1 else ir.Constant(ir.VectorType(t, lanes), [c] * lanes)


def lanes_of(value) -> int:
    t = value.type
    return t.count if isinstance(t, ir.VectorType) else 1


def element_size(dtype: DType) -> int:
    dtype = dtype_of(dtype)
    return 1 if dtype.is_bool else dtype.bits // 8
