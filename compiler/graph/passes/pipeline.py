"""The graph-level pipeline: ONE ordered list of passes, each `fn(graph, ctx) -> graph`.

    ONNX -> graph IR -> canonicalise -> int8 quantisation -> exact int8 islands (ALU ops,
         lookup tables) -> partition -> layout packing -> fusion -> static memory planning

The verifier runs after every pass (on by default)."""
from __future__ import annotations

from typing import Callable

from vtalab.spec.config import Config, load_config

from ..errors import GraphError
from ..ir import Graph
from ..verify import verify
from .dead_code import eliminate_dead_code
from .fold_batch_norm import fold_batch_norm
from .fold_constants import fold_constants
from .fuse import fuse
from .fuse_elementwise import fuse_elementwise
from .lower_qlinear import lower_qlinear
from .pack_layout import pack_layout
from .partition import partition
from .plan_memory import plan_memory
from .quantize import quantize
from .rewrite import PassContext
from .strip_qdq import strip_qdq
from .alu_islands import alu_islands
from .tabulate import tabulate
from .stride_fold import stride_fold

PIPELINE: tuple[tuple[str, Callable[[Graph, PassContext], Graph]], ...] = (
    # canonicalise
    ("lower_qlinear", lower_qlinear),        # QLinearConv/MatMul -> DQ, float op, Q
    ("fold_constants", fold_constants),      # also folds DequantizeLinear of int8 weights
    ("strip_qdq", strip_qdq),                # QDQ activation pairs -> ranges in meta
    ("fold_batch_norm", fold_batch_norm),    # BN and bias adds into conv/dense
    ("dead_code", eliminate_dead_code),
    # int8 and the accelerator
    ("stride_fold", stride_fold),            # narrow strided input convs -> stride 1
    ("quantize", quantize),                  # power-of-two int8, requant = add/shift/clip
    ("alu_islands", alu_islands),            # float islands the ALU computes exactly -> alu
    ("tabulate", tabulate),                  # other one-int8-value islands -> int8 tables
    ("partition", partition),                # accel vs cpu, with reasons
    ("pack_layout", pack_layout),            # NCHW{n}n{c}c regions, packed weights
    ("fuse", fuse),                          # GEMM + epilogue -> accel_conv2d/accel_dense
    ("fuse_elementwise", fuse_elementwise),  # CPU elementwise chains -> one node
    ("dead_code_final", eliminate_dead_code),
    ("plan_memory", plan_memory),            # liveness-based DRAM buffer reuse
)
PASS_NAMES = tuple(name for name, _ in PIPELINE)
CANONICAL = PASS_NAMES[:PASS_NAMES.index("stride_fold")]


def compile_graph(graph: Graph, config: Config | str | None = None, calibration=None,
                  per_channel: bool = False, quantize: bool = True,
                  stop_after: str | None = None, verify_each: bool = True,
                  dump_after: tuple[str, ...] = (), on_pass: Callable | None = None) -> Graph:
    """Run the pipeline (up to and including `stop_after`); returns the final graph.

    `on_pass(name, graph)` is called after every pass (for tests and debugging);
    `dump_after` prints the graph after the named passes."""
    if stop_after is not None and stop_after not in PASS_NAMES:
        raise GraphError(f"stop_after must be one of {list(PASS_NAMES)}, not {stop_after!r}")
    ctx = PassContext(config=load_config(config), calibration=calibration,
                      per_channel=per_channel, quantize=quantize)
    for name, run_pass in PIPELINE:
        graph = run_pass(graph, ctx)
        if verify_each:
            verify(graph)
        if name in dump_after:
            print(f"---- after {name}\n{graph.summary()}")
        if on_pass is not None:
            on_pass(name, graph)
        if name == stop_after:
            break
    return graph


def canonicalize(graph: Graph) -> Graph:
    """Only the canonicalising passes (folding, QDQ ranges, dead code): a float graph."""
    return compile_graph(graph, stop_after=CANONICAL[-1])
