"""The op table: one definition per graph operator, in one registry.

An `OpDef` holds everything the compiler knows about one graph-IR operator:

    infer        (node, input types) -> [output TensorType]        shape/dtype inference
    reference    (node, *arrays) -> array      float reference (ONNX semantics, numpy)
    cpu          (node, *arrays) -> array      CPU fallback kernel (numpy); None: reference
    llvm         (node, *arrays, knobs=None)   LLVM CPU kernel (compiler/cpu), preferred
    llvm_when    (node, input types) -> bool   where the LLVM kernel applies
    llvm_exact   the LLVM kernel returns the float reference's values exactly (IEEE
                 elementwise arithmetic, comparisons, data movement, integers); the float
                 ops of an int8 graph use it, the others run their reference there
    int8         (node, *arrays) -> array      exact integer kernel of the int8 reference
    int8_always  the int8 reference uses `int8` whatever the operand dtype
    quant        the quantisation rule (QUANT_RULES)
    elementwise  fusable into a CPU elementwise chain (passes/fuse_elementwise)
    keeps_range  every output value is a value of the first input (data movement, max
                 selection; a pad's constant is taken to lie in the input's range):
                 max |y| <= max |x| and a non-negative input stays non-negative
                 (calibration range propagation, passes/strip_qdq)
    moves_data   every output element is an element of the first input (reshape,
                 transpose, slice, gather, ...): commutes with any elementwise function
    clip_bounds  (node) -> (lo, hi) the op clips to, None unbounded (ops of quant "clip")
    macs         (node, input types, output type) -> multiply-accumulates (GEMM-like ops)
    gemm         `Gemm`: an int8 GEMM the accelerator runs, and the ops it fuses into
                 with its epilogue (passes/partition, pack_layout, fuse)
    epilogue     the step of a GEMM's requantisation epilogue the op performs in the
                 accumulator (EPILOGUE_STEPS; passes/partition and fuse), "" for none
    qdq          "quantize" / "dequantize": a float <-> integer conversion (strip_qdq)
    accel_op     the op a node becomes when packed for the accelerator (pack_layout), if
                 another (alu -> accel_alu)
    base_op      the GEMM a fused op computes before its requantising epilogue (accel_conv2d
                 and qconv2d: conv2d); its inference gives the fused op's shape (infer_accel)
    lower        (graph, node, cfg) -> exec.lower.AccelPlan: the accelerator kernel of an op
                 the accelerator runs (graph/lowerings.py); a node placed on the accelerator
                 is lowered when its op has one (exec/module.py), else runs on the CPU
    folds        what a float op with constant weights [O, ...] (input 1) and bias (input 2)
                 absorbs along output axis 1 (FOLDS; passes/fold_batch_norm), "" nothing
    runs_body    the node runs the chain of nodes in its `body` attribute, each with its own
                 kernel (fused_elementwise: the CPU fallback and the int8 reference)
    stride_folds a 2-D convolution NCHW x OIHW (`strides`, `pads`, `dilations`, `groups`)
                 that, strided, can run stride 1 on its input folded space-to-depth
                 (passes/stride_fold.py, for model inputs narrower than the GEMM block)
    int8_op      the op an int8 group anchored at this op (quant "gemm") becomes, if another:
                 matmul -> batch_dense, whose weights are computed (passes/quantize_matmul)
    tune         (node, input types, graph, cfg) -> tune.Task or None: the tuning task of
                 the op's tunable kernel (compiler/tune/extract.py, cpu_tasks_of)

and an `OnnxOp` converts one ONNX op type (at the schema versions it was written for) into
graph-IR nodes. Both live in `REGISTRY`; each family file in `opdefs/` registers its
operators and their converters, so a new operator is one file:

    from ..opdef import OpDef, onnx_op, register
    from .shapes import same_type
    register(OpDef("softsign", same_type, reference=lambda n, x: x / (1 + np.abs(x)),
                   elementwise=True))

    @onnx_op("Softsign", versions=(1, 22))
    def _softsign(c):                       # c: onnx_node.NodeContext
        c.emit("softsign", [c.input(0)])
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable

from .errors import GraphError, UnsupportedOpError

QUANT_RULES = {
    "gemm": "the anchor of an int8 group: int8 x int8 -> int32 with a requantising epilogue",
    "int8": "runs on an int8 value unchanged; the output keeps the input's scale",
    "clip": "relu / clip: an int8 clip at the input's scale",
    "float": "runs in float between dequantize / quantize (ONNX semantics)",
    "alu": "an elementwise float island over int8 values that integer arithmetic computes "
           "exactly (aligning shifts, one add / max / min / mul, round half to even by "
           "shifts, clip): the accelerator's ALU runs it (opdefs/alu.py)",
    "lookup": "an elementwise float island over one int8 value, tabulated at compile time "
              "over the 256 int8 values by the island's own float reference (exact)",
    "integer": "an integer op of a quantised graph (made by the quantiser or fusion)",
}

#: the steps of an int8 GEMM's requantisation epilogue, in the order the accelerator's ALU
#: applies them in the accumulator (the attributes each step reads)
EPILOGUE_STEPS = {
    "add": "adds a constant (the bias) or another int32 value (a residual)",
    "shift": "arithmetic shift right by the `amount` attribute (scalar or per channel)",
    "clip": "clips to the `lo` / `hi` attributes",
    "cast": "narrows to the `dtype` attribute",
}
QDQ_KINDS = ("", "quantize", "dequantize")
#: what passes/fold_batch_norm folds into a float op (`OpDef.folds`)
FOLDS = {
    "bias": "an add of a per-channel constant joins the bias",
    "affine": "that, and a batch norm: its per-channel scale multiplies the weights' rows",
}


@dataclass(frozen=True)
class Gemm:
    """An int8 GEMM the accelerator's core runs (x int8 [N, C, ...], w constant int8
    [O, C, ...]): the fused ops it becomes with its requantisation epilogue, on the
    accelerator (packed layout) and on the CPU fallback (plain layout), and `refuse(node)`:
    why the accelerator cannot run this node (attributes), None when it can."""
    accel_op: str
    cpu_op: str
    refuse: Callable | None = None
    #: the weights may be a computed value (the accelerator loads them from DRAM like an
    #: activation, packed by a CPU step) instead of a constant packed at compile time
    computed_weights: bool = False
    #: operands [G, rows, K]: one matrix per leading index (batch_layout.py packing)
    batched: bool = False

    def refusal(self, node) -> str | None:
        return self.refuse(node) if self.refuse is not None else None


@dataclass(frozen=True)
class OpDef:
    name: str
    infer: Callable
    reference: Callable | None = None
    cpu: Callable | None = None
    llvm: Callable | None = None
    llvm_when: Callable | None = None
    llvm_exact: bool = False
    int8: Callable | None = None
    int8_always: bool = False
    quant: str = "float"
    elementwise: bool = False
    keeps_range: bool = False
    moves_data: bool = False
    clip_bounds: Callable | None = None
    macs: Callable | None = None
    gemm: Gemm | None = None
    epilogue: str = ""
    qdq: str = ""
    accel_op: str = ""
    int8_op: str = ""
    base_op: str = ""
    lower: Callable | None = None
    folds: str = ""
    runs_body: bool = False
    stride_folds: bool = False
    tune: Callable | None = None
    doc: str = ""

    def __post_init__(self):
        if self.quant not in QUANT_RULES:
            raise GraphError(f"quant rule of op {self.name!r} must be one of "
                             f"{sorted(QUANT_RULES)}, not {self.quant!r}")
        if (self.llvm is None) != (self.llvm_when is None):
            raise GraphError(f"llvm and llvm_when of op {self.name!r} must be given "
                             f"together, not one of them")
        if self.epilogue and self.epilogue not in EPILOGUE_STEPS:
            raise GraphError(f"epilogue step of op {self.name!r} must be one of "
                             f"{sorted(EPILOGUE_STEPS)}, not {self.epilogue!r}")
        if self.folds and self.folds not in FOLDS:
            raise GraphError(f"folds of op {self.name!r} must be one of {sorted(FOLDS)}, "
                             f"not {self.folds!r}")
        if self.qdq not in QDQ_KINDS:
            raise GraphError(f"qdq of op {self.name!r} must be one of {QDQ_KINDS}, "
                             f"not {self.qdq!r}")
        if (self.quant == "clip") != (self.clip_bounds is not None):
            raise GraphError(f"clip_bounds of op {self.name!r} must be given exactly for "
                             f"quant rule 'clip', not with quant {self.quant!r}")

    @property
    def cpu_kernel(self) -> Callable | None:
        """The numpy CPU kernel: the op's own, else its float reference."""
        return self.cpu or self.reference


@dataclass(frozen=True)
class OnnxOp:
    """The converter of one ONNX op type.

    `versions`: the operator's schema versions (`since_version`) the converter implements;
    a model whose opset resolves to another version is refused with the version named.
    `static_inputs`: input positions that must be constants (they determine shapes)."""

    op_type: str
    convert: Callable
    versions: tuple[int, ...]
    static_inputs: tuple[int, ...] = ()


@dataclass
class Registry:
    ops: dict[str, OpDef] = field(default_factory=dict)
    onnx: dict[str, OnnxOp] = field(default_factory=dict)

    def add(self, opdef: OpDef) -> OpDef:
        if opdef.name in self.ops:
            raise GraphError(f"op name must be registered once, not again {opdef.name!r}")
        self.ops[opdef.name] = opdef
        return opdef

    def add_onnx(self, op: OnnxOp) -> OnnxOp:
        if op.op_type in self.onnx:
            raise GraphError(f"ONNX converter must be registered once per op type, not "
                             f"again for {op.op_type!r}")
        self.onnx[op.op_type] = op
        return op


REGISTRY = Registry()
_LOADED = False
_COMPLETE = False             # every family file imported: later ops are checked at once


def _load() -> Registry:
    """Import every family file of `opdefs/` once (they register on import)."""
    global _LOADED, _COMPLETE
    if not _LOADED:
        _LOADED = True
        importlib.import_module(f"{__package__}.opdefs")
        check_base_ops(REGISTRY.ops)
        _COMPLETE = True
    return REGISTRY


def check_base_ops(ops: dict) -> None:
    """Every fused GEMM op (typed by ``infer_accel``) names the registered GEMM it computes
    (``base_op``): checked when the table is loaded (an op registered later, when it is
    registered), not when a node is first typed."""
    from .opdefs.internal import infer_accel
    for op in ops.values():
        if (op.infer is infer_accel or op.base_op) and op.base_op not in ops:
            raise GraphError(f"base_op of fused op {op.name!r} must name a registered op "
                             f"(its GEMM), not {op.base_op!r}")


def register(*opdefs: OpDef) -> None:
    if _COMPLETE:
        check_base_ops({**REGISTRY.ops, **{d.name: d for d in opdefs}})
    for opdef in opdefs:
        REGISTRY.add(opdef)


def is_addition(node) -> bool:
    """A plain elementwise addition: the ops whose epilogue step is "add" (what becomes a
    GEMM's bias or residual add; an op adding otherwise, e.g. saturating, has its own)."""
    return op_of(node).epilogue == "add"


def onnx_op(op_type: str, versions, static_inputs=()):
    """Decorator: register `fn(c: NodeContext)` as the converter of ONNX `op_type`."""
    def wrap(fn):
        REGISTRY.add_onnx(OnnxOp(op_type, fn, tuple(versions), tuple(static_inputs)))
        return fn
    return wrap


def opdef(name: str, node_name: str | None = None) -> OpDef:
    """The definition of graph op `name` (GraphError naming the node if unknown)."""
    ops = _load().ops
    try:
        return ops[name]
    except KeyError:
        where = f" of node {node_name!r}" if node_name else ""
        raise GraphError(f"op{where} must be one of the graph IR's ops, not {name!r}") \
            from None


def op_of(node) -> OpDef:
    """The definition of a graph node's op."""
    return opdef(node.op, node.name)


def known_ops() -> list[str]:
    return sorted(_load().ops)


def onnx_ops() -> list[str]:
    """The ONNX op types the importer converts."""
    return sorted(_load().onnx)


def onnx_converter(op_type: str, label: str) -> OnnxOp:
    table = _load().onnx
    try:
        return table[op_type]
    except KeyError:
        raise UnsupportedOpError(f"op type of node {label!r} must be one of the "
                                 f"{len(table)} ONNX ops vtalab converts "
                                 f"({', '.join(sorted(table))}), not {op_type!r}") from None
