"""The graph IR: immutable, typed, static-shape dataflow graphs.

A `Graph` names every tensor ("value") by a string. Each value has one `TensorType`
(static shape + dtype) and is exactly one of: a graph input, a constant (a read-only numpy
array) or the output of one `Node`. Nodes are kept in a topological order. Passes never
mutate a graph; they build a new one (see `GraphBuilder`).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Iterable, Mapping

import numpy as np

from .errors import GraphError

DTYPES = ("float32", "int8", "uint8", "int32", "int64", "bool", "float16", "float64", "int16",
          "uint16", "uint32", "uint64")
#: low-precision types numpy knows through ml_dtypes (a dependency of onnx)
ML_DTYPES = ("bfloat16", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
             "float8_e8m0fnu", "float4_e2m1fn", "int4", "uint4", "int2", "uint2")
DTYPES = DTYPES + ML_DTYPES


def is_float(name: str) -> bool:
    """A floating-point graph-IR dtype (numpy's or a low-precision ml_dtypes float)."""
    return name.startswith(("float", "bfloat"))


def np_dtype(name: str) -> np.dtype:
    """The numpy dtype of a graph-IR dtype name (importing ml_dtypes for its types)."""
    if name in ML_DTYPES:
        import ml_dtypes  # noqa: F401  (registers its types with numpy)
    return np.dtype(name)


@dataclass(frozen=True)
class TensorType:
    """Static shape and element type of one value."""

    shape: tuple[int, ...]
    dtype: str

    def __post_init__(self):
        shape = tuple(self.shape)
        if not all(isinstance(d, (int, np.integer)) and d >= 0 for d in shape):
            raise GraphError(f"shape must be a tuple of non-negative ints, not {self.shape!r}")
        object.__setattr__(self, "shape", tuple(int(d) for d in shape))
        if self.dtype not in DTYPES:
            raise GraphError(f"dtype must be one of {DTYPES}, not {self.dtype!r}")

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))

    @property
    def nbytes(self) -> int:
        return self.size * np_dtype(self.dtype).itemsize

    def __str__(self) -> str:
        return f"{self.dtype}[{'x'.join(map(str, self.shape))}]"


def type_of_array(array: np.ndarray) -> TensorType:
    return TensorType(tuple(array.shape), str(array.dtype))


def frozen_array(array) -> np.ndarray:
    """A read-only copy of `array` (constants and array attributes are never mutated)."""
    out = np.array(array, copy=True)
    out.setflags(write=False)
    return out


def _freeze_attr(value):
    if isinstance(value, np.ndarray):
        return frozen_array(value)
    if isinstance(value, (list, tuple)):
        return tuple(_freeze_attr(v) for v in value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, np.floating):
        return float(value)
    return value


def freeze_attrs(attrs: Mapping | None) -> Mapping:
    return MappingProxyType({k: _freeze_attr(v) for k, v in (attrs or {}).items()})


@dataclass(frozen=True)
class Node:
    """One operator application: `outputs = op(inputs; attrs)`."""

    name: str
    op: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    attrs: Mapping = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        if not isinstance(self.attrs, MappingProxyType):
            object.__setattr__(self, "attrs", freeze_attrs(self.attrs))

    def attr(self, key: str, default=None):
        return self.attrs.get(key, default)

    def with_attrs(self, **changes) -> "Node":
        return replace(self, attrs=freeze_attrs({**self.attrs, **changes}))

    def __str__(self) -> str:
        shown = {k: v for k, v in self.attrs.items() if not isinstance(v, np.ndarray)}
        return f"{', '.join(self.outputs)} = {self.op}({', '.join(self.inputs)}) {shown}"


@dataclass(frozen=True, eq=False)
class Graph:
    """An immutable dataflow graph; `meta` carries pass results (reports, plans)."""

    name: str
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    nodes: tuple[Node, ...]
    types: Mapping[str, TensorType]
    constants: Mapping[str, np.ndarray]
    meta: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self):
        object.__setattr__(self, "inputs", tuple(self.inputs))
        object.__setattr__(self, "outputs", tuple(self.outputs))
        object.__setattr__(self, "nodes", tuple(self.nodes))
        object.__setattr__(self, "types", MappingProxyType(dict(self.types)))
        consts = {k: v if not v.flags.writeable else frozen_array(v)
                  for k, v in self.constants.items()}
        object.__setattr__(self, "constants", MappingProxyType(consts))
        meta = {k: MappingProxyType(dict(v)) if isinstance(v, (dict, MappingProxyType)) else v
                for k, v in self.meta.items()}
        object.__setattr__(self, "meta", MappingProxyType(meta))

    # ---- queries --------------------------------------------------------------------
    def type_of(self, value: str) -> TensorType:
        try:
            return self.types[value]
        except KeyError:
            raise GraphError(f"value must be defined in graph {self.name!r}, "
                             f"not unknown {value!r}") from None

    def is_constant(self, value: str) -> bool:
        return value in self.constants

    @functools.cached_property
    def producers(self) -> Mapping[str, Node]:
        return MappingProxyType({out: n for n in self.nodes for out in n.outputs})

    @functools.cached_property
    def _consumers(self) -> Mapping[str, tuple[Node, ...]]:
        table: dict[str, list[Node]] = {}
        for node in self.nodes:
            for value in dict.fromkeys(node.inputs):
                if value:
                    table.setdefault(value, []).append(node)
        return MappingProxyType({k: tuple(v) for k, v in table.items()})

    def producer(self, value: str) -> Node | None:
        return self.producers.get(value)

    def consumers(self, value: str) -> tuple[Node, ...]:
        return self._consumers.get(value, ())

    def node(self, name: str) -> Node:
        for n in self.nodes:
            if n.name == name:
                return n
        raise GraphError(f"node must be one of graph {self.name!r}'s nodes, not {name!r}")

    def op_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for n in self.nodes:
            counts[n.op] = counts.get(n.op, 0) + 1
        return counts

    # ---- derivation -----------------------------------------------------------------
    def replace(self, **changes) -> "Graph":
        return replace(self, **changes)

    def with_meta(self, **items) -> "Graph":
        return replace(self, meta={**self.meta, **items})

    def summary(self) -> str:
        lines = [f"graph {self.name}: {len(self.nodes)} nodes, {len(self.constants)} constants"]
        for v in self.inputs:
            lines.append(f"  input  {v}: {self.types[v]}")
        for n in self.nodes:
            types = ", ".join(str(self.types[o]) for o in n.outputs)
            lines.append(f"  {n.name:<24} {n}  -> {types}")
        for v in self.outputs:
            lines.append(f"  output {v}: {self.types[v]}")
        return "\n".join(lines)


class GraphBuilder:
    """Mutable helper that assembles a `Graph`, inferring each node's output types."""

    def __init__(self, name: str = "graph", meta: Mapping | None = None):
        self.name = name
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.nodes: list[Node] = []
        self.types: dict[str, TensorType] = {}
        self.constants: dict[str, np.ndarray] = {}
        self.meta: dict = dict(meta or {})
        self._names: set[str] = set()
        self._counter = 0

    # ---- names ----------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        while True:
            self._counter += 1
            name = f"{hint}_{self._counter}"
            if name not in self.types and name not in self._names:
                return name

    def _claim_value(self, value: str, ttype: TensorType) -> None:
        if not value or value in self.types:
            raise GraphError(f"value name must be new and non-empty, not {value!r}")
        self.types[value] = ttype

    # ---- construction ---------------------------------------------------------------
    def add_input(self, value: str, shape: Iterable[int], dtype: str = "float32") -> str:
        self._claim_value(value, TensorType(tuple(shape), dtype))
        self.inputs.append(value)
        return value

    def add_const(self, value: str | None, array, hint: str = "const") -> str:
        array = frozen_array(array)
        value = value or self.fresh(hint)
        self._claim_value(value, type_of_array(array))
        self.constants[value] = array
        return value

    def add_node(self, op: str, inputs: Iterable[str], attrs: Mapping | None = None,
                 name: str | None = None, outputs: Iterable[str] | None = None,
                 num_outputs: int = 1) -> tuple[str, ...]:
        from .ops import infer_types  # late: ops imports this module
        inputs = tuple(inputs)
        for value in inputs:
            if value and value not in self.types:
                raise GraphError(f"input of {op} must be a defined value, not {value!r}")
        name = name if name and name not in self._names else self.fresh(name or op)
        self._names.add(name)
        if outputs:
            outputs = tuple(outputs)
        elif num_outputs == 1:
            outputs = (name if name not in self.types else self.fresh(name),)
        else:
            outputs = tuple(self.fresh(f"{name}_out") for _ in range(num_outputs))
        node = Node(name, op, inputs, outputs, attrs or {})
        out_types = infer_types(node, [self.types[v] if v else None for v in inputs])
        for value, ttype in zip(outputs, out_types):
            self._claim_value(value, ttype)
        self.nodes.append(node)
        return outputs

    def op(self, op: str, *inputs: str, name: str | None = None, **attrs) -> str:
        """Single-output shorthand: `b.op("relu", x)`."""
        return self.add_node(op, inputs, attrs, name=name)[0]

    def set_outputs(self, outputs: Iterable[str]) -> None:
        self.outputs = list(outputs)

    def build(self) -> Graph:
        return Graph(self.name, tuple(self.inputs), tuple(self.outputs), tuple(self.nodes),
                     dict(self.types), dict(self.constants), dict(self.meta))
