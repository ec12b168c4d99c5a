"""Scalar data types by name: int8/16/32/64, uint8/16/32, float16/32/64, bool."""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from ..errors import CompileError

_KINDS = {"int": (8, 16, 32, 64), "uint": (8, 16, 32, 64), "float": (16, 32, 64), "bool": (1,)}


@dataclass(frozen=True)
class DType:
    kind: str
    bits: int

    def __str__(self) -> str:
        return "bool" if self.kind == "bool" else f"{self.kind}{self.bits}"

    @property
    def is_int(self) -> bool:
        return self.kind in ("int", "uint")

    @property
    def is_float(self) -> bool:
        return self.kind == "float"

    @property
    def is_bool(self) -> bool:
        return self.kind == "bool"

    @property
    def min_value(self):
        if self.kind == "int":
            return -(1 << (self.bits - 1))
        return 0 if self.kind in ("uint", "bool") else float("-inf")

    @property
    def max_value(self):
        if self.kind == "int":
            return (1 << (self.bits - 1)) - 1
        if self.kind in ("uint", "bool"):
            return (1 << self.bits) - 1
        return float("inf")

    def wrap(self, value):
        """A Python value converted as a store of this dtype converts it (ints wrap)."""
        if self.is_float:
            return float(value)
        if self.is_bool:
            return bool(value)
        value = int(value) & ((1 << self.bits) - 1)
        if self.kind == "int" and value >> (self.bits - 1):
            value -= 1 << self.bits
        return value

    @property
    def numpy(self):
        import numpy as np
        return np.dtype(bool) if self.is_bool else np.dtype(str(self))


@lru_cache(maxsize=None)
def _parse(name: str) -> DType:
    if name == "bool":
        return DType("bool", 1)
    for kind in ("uint", "int", "float"):
        if name.startswith(kind) and name[len(kind):].isdigit():
            bits = int(name[len(kind):])
            if bits in _KINDS[kind]:
                return DType(kind, bits)
    raise CompileError(f"dtype must be one of int8/16/32/64, uint8/16/32/64, "
                       f"float16/32/64 or bool, not {name!r}")


def dtype_of(value) -> DType:
    """A DType from a DType, a name, or a numpy dtype."""
    if isinstance(value, DType):
        return value
    if not isinstance(value, str):
        value = str(getattr(value, "name", value))
    return _parse(value)
