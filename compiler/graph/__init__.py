"""vtalab.compiler.graph: the graph level of the compiler.

    graph = load_onnx("model.onnx")                    # verified, immutable, typed Graph
    y = run(graph, x)                                  # float reference (numpy, ONNX semantics)
    final = compile_graph(graph, "default", calibration=samples)   # the pass pipeline
    y8 = run_int8(final, x)                            # independent int8 reference
    print(partition_report(final), final.meta["memory_plan"].report())

Pipeline (passes/pipeline.py, one ordered list; verifier after every pass):
lower_qlinear, fold_constants, strip_qdq, fold_batch_norm, dead_code (canonicalise) ->
quantize (power-of-two int8; requantisation = bias add, arithmetic shift, clip) ->
partition (accel / cpu with reasons) -> pack_layout (NCHW{n}n{c}c, OIHW{o}o{i}i, channel
padding, blocks from the Config) -> fuse (accel_conv2d / accel_dense; CPU qconv2d / qdense)
-> fuse_elementwise (CPU chains) -> dead_code_final -> plan_memory (DRAM buffer reuse).
The op table (opdef.py; one file per op family in opdefs/) defines every operator once:
ONNX converter (per schema version), type inference, float reference, CPU kernels (LLVM,
numpy), int8 kernel and quantisation rule. The fused operators' integer semantics are
documented in opdefs/internal.py (`infer_accel`).
"""
from .errors import GraphError, ModelError, QuantizeError, UnsupportedOpError
from .int8_ref import run_int8
from .interp import run
from .ir import Graph, GraphBuilder, Node, TensorType
from .onnx_import import load_onnx
from .opdef import OpDef, known_ops, onnx_ops, opdef
from .passes import PIPELINE, PassContext, canonicalize, compile_graph
from .passes.partition import partition_report
from .verify import verify

__all__ = ["Graph", "GraphBuilder", "Node", "TensorType", "GraphError", "ModelError",
           "QuantizeError", "UnsupportedOpError", "load_onnx", "run", "run_int8", "verify",
           "PIPELINE", "PassContext", "canonicalize", "compile_graph", "partition_report",
           "OpDef", "known_ops", "onnx_ops", "opdef"]
