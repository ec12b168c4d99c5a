"""ONNX -> graph IR import (opsets 13 to the newest the installed onnx defines, static
shapes).

`load_onnx(path_or_bytes_or_model)` checks the file, the opset and every input shape, then
converts node by node with the converter the op table registers for the node's op type
(opdef.py, opdefs/), at the node's schema version. Anything it cannot represent is a
`ModelError` naming the node / input, the opset and the reason; nothing is silently
misparsed.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping

import numpy as np

from .errors import ModelError, UnsupportedOpError
from .ir import Graph, GraphBuilder
from .verify import verify

MIN_OPSET = 13


def _onnx():
    try:
        import onnx
    except ModuleNotFoundError:  # pragma: no cover - depends on the environment
        raise ModelError("onnx must be installed to import models (pip install onnx), "
                         "not missing") from None
    return onnx


def read_model(source, label: str | None = None):
    """An onnx.ModelProto from a path, bytes or a ModelProto, with clear errors."""
    onnx = _onnx()
    if isinstance(source, onnx.ModelProto):
        return source
    if isinstance(source, (bytes, bytearray)):
        data, label = bytes(source), label or "<bytes>"
    else:
        path = Path(os.fspath(source))
        label = label or str(path)
        if not path.is_file():
            raise ModelError(f"ONNX model path must be an existing file, not {str(path)!r}")
        data = path.read_bytes()
    model = onnx.ModelProto()
    try:
        model.ParseFromString(data)
    except Exception as exc:  # protobuf DecodeError and friends
        raise ModelError(f"ONNX file {label} must be a valid ONNX protobuf, not corrupt "
                         f"or truncated data ({exc})") from None
    if not model.HasField("graph") or not model.graph.node:
        raise ModelError(f"ONNX file {label} must contain a graph with nodes, not "
                         f"{len(data)} bytes without one (corrupt or truncated?)")
    try:
        onnx.checker.check_model(model)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"ONNX file {label} must pass onnx.checker, not fail with: "
                         f"{first}") from None
    return model


def supported_opsets() -> range:
    """Opsets 13 up to the newest that the installed onnx defines."""
    return range(MIN_OPSET, _onnx().defs.onnx_opset_version() + 1)


def model_opset(model) -> int:
    version = None
    for entry in model.opset_import:
        if entry.domain in ("", "ai.onnx"):
            version = entry.version
    opsets = supported_opsets()
    if version not in opsets:
        raise ModelError(f"ONNX opset must be {opsets.start}..{opsets.stop - 1}, "
                         f"not {version}")
    return version


def schema_version(op_type: str, opset: int) -> int:
    """The `since_version` of `op_type`'s schema that a model of `opset` uses."""
    return _onnx().defs.get_schema(op_type, opset, "").since_version


#: ONNX data types (TensorProto numbers) as graph-IR dtype names
ONNX_DTYPES = {1: "float32", 2: "uint8", 3: "int8", 4: "uint16", 5: "int16", 6: "int32",
               7: "int64", 9: "bool", 10: "float16", 11: "float64", 12: "uint32", 13: "uint64",
               16: "bfloat16", 17: "float8_e4m3fn", 18: "float8_e4m3fnuz", 19: "float8_e5m2",
               20: "float8_e5m2fnuz", 21: "uint4", 22: "int4", 23: "float4_e2m1fn",
               24: "float8_e8m0fnu", 25: "uint2", 26: "int2"}


def onnx_dtype(elem_type: int, what: str, error=ModelError) -> str:
    try:
        return ONNX_DTYPES[elem_type]
    except KeyError:
        onnx = _onnx()
        name = onnx.TensorProto.DataType.Name(elem_type) if elem_type else "undefined"
        raise error(f"dtype of {what} must be one of {sorted(ONNX_DTYPES.values())}, "
                    f"not {name}") from None


def input_shape(value_info, override: Mapping | None) -> tuple[int, ...]:
    name = value_info.name
    if override and name in override:
        return tuple(int(d) for d in override[name])
    ttype = value_info.type.tensor_type
    if not ttype.HasField("shape"):
        raise ModelError(f"input {name!r} must have a static shape, not an unknown rank")
    dims = []
    for axis, dim in enumerate(ttype.shape.dim):
        if dim.HasField("dim_value") and dim.dim_value > 0:
            dims.append(dim.dim_value)
        else:
            shown = dim.dim_param or "unknown"
            raise ModelError(f"dimension {axis} of input {name!r} must be a static size, "
                             f"not dynamic {shown!r} (pass input_shapes={{{name!r}: (...)}})")
    return tuple(dims)


class ImportContext:
    """State of one import: the builder, ONNX-name -> IR-name map, constant values."""

    def __init__(self, builder: GraphBuilder, opset: int):
        self.b = builder
        self.opset = opset
        self.names: dict[str, str] = {}

    def value(self, onnx_name: str) -> str:
        if not onnx_name:
            return ""
        try:
            return self.names[onnx_name]
        except KeyError:
            raise ModelError(f"value {onnx_name!r} must be defined before use, "
                             f"not undefined (corrupt or unsorted graph)") from None

    def const(self, onnx_name: str) -> np.ndarray | None:
        """The numpy value of an input if it is a constant, else None."""
        name = self.names.get(onnx_name)
        return self.b.constants.get(name) if name else None

    def type(self, onnx_name: str):
        return self.b.types[self.value(onnx_name)]

    def bind(self, onnx_name: str, ir_name: str) -> None:
        self.names[onnx_name] = ir_name

    def add_const(self, onnx_name: str, array: np.ndarray) -> str:
        name = onnx_name if onnx_name and onnx_name not in self.b.types else None
        ir = self.b.add_const(name, array, hint="const")
        if onnx_name:
            self.bind(onnx_name, ir)
        return ir


def _tensor(array_proto, what: str) -> np.ndarray:
    from onnx import numpy_helper
    onnx_dtype(array_proto.data_type, what)
    return numpy_helper.to_array(array_proto)


def _convert(ctx: ImportContext, node, index: int) -> None:
    from .onnx_node import NodeContext
    from .opdef import onnx_converter
    label = node.name or f"{node.op_type}_{index}"
    if node.domain not in ("", "ai.onnx"):
        raise UnsupportedOpError(f"op of node {label!r} must be a default-domain ONNX "
                                 f"op, not {node.domain}.{node.op_type}")
    converter = onnx_converter(node.op_type, label)
    version = schema_version(node.op_type, ctx.opset)
    if version not in converter.versions:
        raise UnsupportedOpError(f"version of {node.op_type} node {label!r} (opset "
                                 f"{ctx.opset}) must be one of the schema versions vtalab "
                                 f"implements {list(converter.versions)}, not {version}")
    converter.convert(NodeContext(ctx, node, label, version))


def _bind_inputs(ctx: ImportContext, graph, input_shapes, constant_inputs) -> None:
    for vi in graph.input:
        if vi.name in ctx.names:
            continue  # an initializer listed as input (older exporters)
        dtype = onnx_dtype(vi.type.tensor_type.elem_type, f"input {vi.name!r}")
        if constant_inputs and vi.name in constant_inputs:
            ctx.add_const(vi.name, np.asarray(constant_inputs[vi.name]).astype(dtype))
            continue
        ctx.bind(vi.name, ctx.b.add_input(vi.name, input_shape(vi, input_shapes), dtype))


def load_onnx(source, input_shapes: Mapping | None = None, name: str | None = None,
              constant_inputs: Mapping | None = None) -> Graph:
    """Import an ONNX model into a verified graph IR.

    `input_shapes` fixes dynamic input dimensions; `constant_inputs` ({input name: array})
    specialises the model to fixed values of those inputs (e.g. a Reshape's shape fed as a
    graph input): they become constants, the graph no longer takes them."""
    model = read_model(source)
    opset = model_opset(model)
    for entry in model.opset_import:
        if entry.domain not in ("", "ai.onnx"):
            raise ModelError(f"opset domain must be the default ONNX domain, not "
                             f"{entry.domain!r}")
    g = model.graph
    builder = GraphBuilder(name or g.name or "model")
    ctx = ImportContext(builder, opset)
    for init in g.initializer:
        ctx.add_const(init.name, _tensor(init, f"initializer {init.name!r}"))
    _bind_inputs(ctx, g, input_shapes, constant_inputs)
    for index, node in enumerate(g.node):
        _convert(ctx, node, index)
    builder.set_outputs([ctx.value(o.name) for o in g.output])
    used = {v for n in builder.nodes for v in n.inputs} | set(builder.outputs)
    for value in [v for v in builder.constants if v not in used]:  # e.g. a Gemm's B^T
        del builder.constants[value], builder.types[value]
    graph = builder.build()
    verify(graph)
    return graph
