"""A lowered function: parameters (global buffers) and a loop-IR body."""
from __future__ import annotations

from dataclasses import dataclass, replace

from .printer import format_ir
from .stmt import Buffer, Stmt


@dataclass(frozen=True)
class PrimFunc:
    name: str
    params: tuple          # Buffers, inputs then outputs
    body: Stmt
    outputs: tuple = ()    # the params written by the function

    def with_body(self, body: Stmt) -> "PrimFunc":
        return replace(self, body=body)

    def param(self, name: str) -> Buffer:
        for b in self.params:
            if b.name == name:
                return b
        raise KeyError(name)

    def __str__(self):
        head = ", ".join(f"{b.name}: {b.dtype}{list(b.shape)}" for b in self.params)
        return f"func {self.name}({head}):\n" + format_ir(self.body, 1)
