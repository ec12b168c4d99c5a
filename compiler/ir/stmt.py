"""Immutable loop-IR statements and the typed, scoped Buffer they access.

Loop kinds: serial, unroll, vectorize, parallel, vthread, and thread bindings
("blockIdx.x", "threadIdx.x", ...). Buffer scopes: "global" (DRAM / host memory), "local"
(scratch), and the accelerator SRAMs "inp", "wgt", "acc".
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from ..errors import CompileError
from .dtype import DType, dtype_of
from .expr import Expr, Var

_uids = itertools.count()

LOOP_KINDS = ("serial", "unroll", "vectorize", "parallel", "vthread")
THREAD_TAGS = ("blockIdx.x", "blockIdx.y", "blockIdx.z",
               "threadIdx.x", "threadIdx.y", "threadIdx.z")
SCOPES = ("global", "local", "shared", "inp", "wgt", "acc")
SRAM_SCOPES = ("inp", "wgt", "acc")


@dataclass(frozen=True, eq=False)
class Buffer:
    """A typed n-d array in one memory scope; identity, not structure, makes it equal."""
    name: str
    shape: tuple
    dtype: DType
    scope: str = "global"
    uid: int = field(default_factory=lambda: next(_uids))

    def __post_init__(self):
        if self.scope not in SCOPES:
            raise CompileError(f"buffer scope must be one of {SCOPES}, not {self.scope!r}")
        object.__setattr__(self, "dtype", dtype_of(self.dtype))
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))

    def __eq__(self, other):
        return isinstance(other, Buffer) and other.uid == self.uid

    def __hash__(self):
        return hash(("Buffer", self.uid))

    def __repr__(self):
        return self.name

    @property
    def size(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def load(self, *indices) -> "Expr":
        from .expr import Load, as_expr
        return Load(self, tuple(as_expr(i) for i in indices))


class Stmt:
    """Base of every statement node."""

    def __repr__(self):
        from .printer import format_ir
        return format_ir(self)


@dataclass(frozen=True, repr=False)
class For(Stmt):
    var: Var
    extent: int
    body: Stmt
    kind: str = "serial"

    def __post_init__(self):
        if self.kind not in LOOP_KINDS and self.kind not in THREAD_TAGS:
            raise CompileError(f"loop kind must be one of {LOOP_KINDS + THREAD_TAGS}, "
                               f"not {self.kind!r}")


@dataclass(frozen=True, repr=False)
class Seq(Stmt):
    stmts: tuple


@dataclass(frozen=True, repr=False)
class Store(Stmt):
    buffer: Buffer
    indices: tuple
    value: Expr


@dataclass(frozen=True, repr=False)
class Allocate(Stmt):
    """``buffer`` exists inside ``body``; ``base`` is its SRAM entry offset once assigned."""
    buffer: Buffer
    body: Stmt
    base: Any = None


@dataclass(frozen=True, repr=False)
class Attr(Stmt):
    """Annotation of a subtree: pragmas ("pragma_dma_copy", "pragma_alu"), "tensorize"."""
    key: str
    value: Any
    body: Stmt


@dataclass(frozen=True, repr=False)
class IfThen(Stmt):
    cond: Expr
    then: Stmt
    orelse: Any = None


@dataclass(frozen=True, repr=False)
class Evaluate(Stmt):
    value: Expr


def seq(*stmts) -> Stmt:
    """A flattened Seq of the non-empty statements (the one statement if only one)."""
    out = []
    for s in stmts:
        if s is None:
            continue
        if isinstance(s, Seq):
            out.extend(s.stmts)
        else:
            out.append(s)
    return out[0] if len(out) == 1 else Seq(tuple(out))
