"""vtalab.compiler.graph: typed graph IR, ONNX import, reference interpreters, graph passes.

    graph = load_onnx("model.onnx")            # verified, immutable Graph
    y = run(graph, x)                          # float reference (numpy)
    q = compile_graph(graph, config, calibration=samples)   # the pass pipeline
    y8 = run_int8(q, x)                        # independent int8 reference
"""
from .errors import GraphError, ModelError, QuantizeError, UnsupportedOpError
from .int8_ref import run_int8
from .interp import run
from .ir import Graph, GraphBuilder, Node, TensorType
from .onnx_import import load_onnx
from .passes import PIPELINE, PassContext, canonicalize, compile_graph
from .passes.partition import partition_report
from .verify import verify

__all__ = ["Graph", "GraphBuilder", "Node", "TensorType", "GraphError", "ModelError",
           "QuantizeError", "UnsupportedOpError", "load_onnx", "run", "run_int8", "verify",
           "PIPELINE", "PassContext", "canonicalize", "compile_graph", "partition_report"]
