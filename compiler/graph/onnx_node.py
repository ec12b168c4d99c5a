"""What an ONNX converter sees: one node, its attributes and inputs, and ways to emit IR.

    @onnx_op("LeakyRelu", versions=(6, 16))
    def _leaky_relu(c):
        c.emit("leaky_relu", [c.input(0)], alpha=c.attr("alpha", 0.01))

A node whose inputs are all constants is evaluated at import (its float reference), so
shape-computing subgraphs (Shape -> Gather -> Concat -> Reshape, as exporters emit) fold
to constants and the converters downstream see constant shapes.
"""
from __future__ import annotations

import numpy as np

from .errors import UnsupportedOpError
from .ir import Node, TensorType
from .opdef import opdef

FOLD_LIMIT_BYTES = 64 << 20   # the same guard as the fold_constants pass


def attrs_of(node) -> dict:
    from onnx import helper
    out = {}
    for a in node.attribute:
        value = helper.get_attribute_value(a)
        out[a.name] = value.decode() if isinstance(value, bytes) else value
    return out


class NodeContext:
    """One ONNX node being converted (`ctx`: the import's ImportContext)."""

    def __init__(self, ctx, node, label: str, version: int):
        self.ctx, self.node, self.label, self.version = ctx, node, label, version
        self.b = ctx.b
        self.opset = ctx.opset
        self.op_type = node.op_type
        self.attrs = attrs_of(node)

    # ---- reading ----------------------------------------------------------------------
    def attr(self, key: str, default=None):
        return self.attrs.get(key, default)

    @property
    def n_inputs(self) -> int:
        return len(self.node.input)

    @property
    def n_outputs(self) -> int:
        return len(self.node.output)

    def has(self, index: int) -> bool:
        return index < len(self.node.input) and bool(self.node.input[index])

    def input(self, index: int) -> str:
        return self.ctx.value(self.node.input[index]) if self.has(index) else ""

    def inputs(self) -> list[str]:
        return [self.input(i) for i in range(self.n_inputs)]

    def type(self, index: int) -> TensorType:
        return self.b.types[self.input(index)]

    def const(self, index: int) -> np.ndarray | None:
        """The value of input `index` if it is a constant, else None."""
        return self.b.constants.get(self.input(index)) if self.has(index) else None

    def static(self, index: int, what: str) -> np.ndarray | None:
        """An input that must be a constant (None when absent)."""
        if not self.has(index):
            return None
        value = self.const(index)
        if value is None:
            raise self.fail(what, "a constant (static shapes)",
                            f"the computed value {self.node.input[index]}")
        return value

    def ints(self, index: int, what: str) -> list[int] | None:
        value = self.static(index, what)
        return None if value is None else [int(v) for v in np.asarray(value).reshape(-1)]

    def fail(self, what: str, expected: str, actual) -> UnsupportedOpError:
        return UnsupportedOpError(f"{what} of {self.op_type} node {self.label!r} (opset "
                                  f"{self.opset}) must be {expected}, not {actual}")

    def axis(self, axis: int, rank: int, what: str = "axis") -> int:
        if not -rank <= axis < max(rank, 1):
            raise self.fail(what, f"in {-rank}..{rank - 1}", axis)
        return axis % max(rank, 1)

    # ---- emitting ---------------------------------------------------------------------
    def op(self, op: str, inputs, hint: str | None = None, **attrs) -> str:
        """An intermediate IR node (folded when all its inputs are constants)."""
        return self._add(op, list(inputs), attrs, hint or f"{self.label}_{op}", None)

    def emit(self, op: str, inputs, out: int = 0, **attrs) -> str:
        """The IR node computing ONNX output `out`; its value keeps the ONNX name."""
        name = self.node.output[out]
        value = self._add(op, list(inputs), attrs, self.label, name)
        self.ctx.bind(name, value)
        return value

    def bind(self, out: int, value: str) -> None:
        if out < len(self.node.output) and self.node.output[out]:
            self.ctx.bind(self.node.output[out], value)

    def constant(self, array, out: int | None = None, hint: str = "const") -> str:
        """A new constant; bound to ONNX output `out` when given."""
        if out is None:
            return self.b.add_const(None, np.asarray(array), hint=f"{self.label}_{hint}")
        return self.ctx.add_const(self.node.output[out], np.asarray(array))

    def _add(self, op: str, inputs, attrs, name: str, out_name: str | None) -> str:
        values = [self.b.constants.get(v) if v else None for v in inputs]
        definition = opdef(op)
        if definition.reference is not None and \
                all(v is not None for v, i in zip(values, inputs) if i):
            node = Node(name, op, tuple(inputs), ("folded",), attrs)
            from .ops import infer_types
            want = infer_types(node, [self.b.types[v] if v else None for v in inputs])[0]
            if want.nbytes <= FOLD_LIMIT_BYTES:
                args = list(values)
                while args and args[-1] is None:
                    args.pop()
                result = np.asarray(definition.reference(node, *args))
                result = result.astype(want.dtype).reshape(want.shape)
                if out_name is not None:
                    return self.ctx.add_const(out_name, result)
                return self.b.add_const(None, result, hint=name)
        free = out_name if out_name and out_name not in self.b.types else None
        return self.b.add_node(op, inputs, attrs, name=name,
                               outputs=[free] if free else None)[0]
