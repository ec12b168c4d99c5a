"""The passes and the tuner read the op table, not op-name strings: an operator defined in
one place (one `register(OpDef(...))`, here in the test) is picked up by partition, fuse,
pack_layout, strip_qdq, the quantiser's clip handling and the tuner's task extraction (the
`define` fixture: tests/compiler/conftest.py)."""
import numpy as np
import pytest

from vtalab.compiler.graph import GraphBuilder, verify
from vtalab.compiler.graph import kernels_int as I
from vtalab.compiler.graph import kernels_llvm as L
from vtalab.compiler.graph import tune_tasks as T
from vtalab.compiler.graph.errors import GraphError
from vtalab.compiler.graph.opdef import Gemm, OpDef, known_ops, opdef
from vtalab.compiler.graph.opdefs.nn import infer_dense
from vtalab.compiler.graph.passes import PassContext
from vtalab.compiler.graph.passes.fuse import fuse
from vtalab.compiler.graph.passes.pack_layout import pack_layout
from vtalab.compiler.graph.passes.partition import partition, partition_report
from vtalab.compiler.graph.passes.quantize import match_group
from vtalab.compiler.graph.passes.strip_qdq import strip_qdq
from vtalab.compiler.graph.shapes import same_type
from vtalab.spec import preset

CTX = PassContext(config=preset("default"))


def _int8_gemm_chain(op: str, shift_op: str = "shr", **gemm_attrs):
    """x int8 [16, 32] -> op(x, w) -> add(bias) -> shift -> clip -> cast int8."""
    rng = np.random.default_rng(0)
    b = GraphBuilder("chain")
    x = b.add_input("x", (16, 32), "int8")
    w = b.add_const("w", rng.integers(-8, 8, (16, 32)).astype(np.int8))
    bias = b.add_const("bias", rng.integers(-99, 99, (1, 16)).astype(np.int32))
    acc = b.op(op, x, w, name="gemm", **gemm_attrs)
    acc = b.op("add", acc, bias, name="bias_add")
    acc = b.op(shift_op, acc, name="shift", amount=3)
    acc = b.op("clip", acc, name="clip", lo=-128, hi=127)
    b.set_outputs([b.op("cast", acc, name="narrow", dtype="int8")])
    return b.build()


def test_a_new_epilogue_step_is_partitioned_and_fused(define):
    define(OpDef("ashr", same_type, int8=I.shr, int8_always=True, quant="integer",
                 epilogue="shift", doc="a second shift op, defined here only"))
    placed = partition(_int8_gemm_chain("dense", shift_op="ashr"), CTX)
    assert {n.name: n.attr("target") for n in placed.nodes} == dict.fromkeys(
        ("gemm", "bias_add", "shift", "clip", "narrow"), "accel")
    assert "epilogue of gemm: arithmetic shift" in partition_report(placed)
    fused = verify(fuse(pack_layout(placed, CTX), CTX))
    (gemm,) = [n for n in fused.nodes if n.op == "accel_dense"]
    assert gemm.attr("shift") == 3 and gemm.attr("out_dtype") == "int8"
    assert gemm.attr("fused") == ("gemm", "bias_add", "shift", "clip", "narrow")


def test_a_new_gemm_anchor_is_placed_packed_and_fused_as_its_table_says(define):
    define(OpDef("dense_b", infer_dense, int8=I.dense, quant="gemm",
                 gemm=Gemm("accel_dense", "qdense",
                           lambda n: "no accelerator today" if n.attr("today") else None)))
    placed = partition(_int8_gemm_chain("dense_b"), CTX)
    assert "int8 dense_b 32->16 channels" in partition_report(placed)
    packed = pack_layout(placed, CTX)
    anchor = next(n for n in packed.nodes if n.name == "gemm")
    assert anchor.attr("layout") == "packed"
    assert packed.types[anchor.inputs[1]].shape == (1, 2, 16, 16)   # w blocked 16o16i
    ops = [n.op for n in verify(fuse(packed, CTX)).nodes]
    assert "accel_dense" in ops and "dense_b" not in ops
    refused = partition(_int8_gemm_chain("dense_b", today=1), CTX)
    placement = refused.meta["partition"][0]
    assert (placement.node, placement.target, placement.reason) == \
        ("gemm", "cpu", "no accelerator today")
    on_cpu = [n.op for n in fuse(refused, CTX).nodes]
    assert on_cpu == ["qdense"]


def _qdq_graph(activation: str, zero_point: int):
    b = GraphBuilder("qdq")
    x = b.add_input("x", (1, 8))
    y = b.op(activation, x, name="act")
    y = b.op("mirror", y, name="moved")
    q = b.op("quant8", y, name="q", scale=np.float32(0.05), zero_point=np.int8(zero_point),
             dtype="int8")
    b.set_outputs([b.op("dequant8", q, name="dq", scale=np.float32(0.05),
                        zero_point=np.int8(zero_point))])
    return b.build()


def test_strip_qdq_reads_qdq_kinds_clip_bounds_and_kept_ranges(define):
    quantize, dequantize = opdef("quantize"), opdef("dequantize")
    define(OpDef("quant8", quantize.infer, reference=quantize.reference, qdq="quantize"),
           OpDef("dequant8", dequantize.infer, reference=dequantize.reference,
                 qdq="dequantize"),
           OpDef("floor0", same_type, reference=lambda n, x: np.maximum(x, 0), quant="clip",
                 clip_bounds=lambda n: (0.0, None)),
           OpDef("mirror", same_type, reference=lambda n, x: x[..., ::-1],
                 keeps_range=True))
    # a pair starting at 0 (zero point -128) after a non-negative value: dropped, no clip
    stripped = strip_qdq(_qdq_graph("floor0", -128), CTX)
    assert [n.op for n in stripped.nodes] == ["floor0", "mirror"]
    assert stripped.meta["activation_ranges"]["moved"] == pytest.approx(255 * 0.05)
    # after a value that may be negative the pair's saturation at 0 becomes a clip
    clipped = strip_qdq(_qdq_graph("neg", -128), CTX)
    assert [n.op for n in clipped.nodes] == ["neg", "mirror", "clip"]


def test_the_quantiser_takes_a_new_clip_op_into_the_gemm_group(define):
    define(OpDef("relu_cap", same_type, reference=lambda n, x: np.clip(x, 0, 4),
                 quant="clip", clip_bounds=lambda n: (0.0, 4.0)))
    b = GraphBuilder("group")
    x = b.add_input("x", (2, 8))
    w = b.add_const("w", np.ones((4, 8), np.float32))
    y = b.op("dense", x, w, name="fc")
    b.set_outputs([b.op("relu_cap", y, name="cap")])
    graph = b.build()
    group = match_group(graph, graph.nodes[0])
    assert [n.name for n in group.activations] == ["cap"]


def test_a_new_tunable_op_gets_its_tuning_task(define):
    pytest.importorskip("llvmlite", reason="tuning tasks are of LLVM kernels")
    from vtalab.compiler.graph.ir import TensorType
    from vtalab.compiler.tune.extract import tasks_of_graph
    from vtalab.compiler.tune.templates.cpu import cpu_tasks_of, softmax_task
    define(OpDef("softmax_b", same_type, reference=lambda n, x: x, llvm=L.softmax,
                 llvm_when=L.when_softmax, tune=T.softmax))
    b = GraphBuilder("tunable")
    x = b.add_input("x", (3, 4, 10))
    b.set_outputs([b.op("softmax_b", x, name="sm", axis=-1)])
    graph = b.build()
    node = graph.nodes[0]
    assert cpu_tasks_of(node, [TensorType((3, 4, 10), "float32")]) == softmax_task(12, 10)
    assert tasks_of_graph(graph, preset("default")) == [softmax_task(12, 10)]


def test_the_table_refuses_inconsistent_roles():
    with pytest.raises(GraphError, match="epilogue step of op 'bad' must be one of"):
        OpDef("bad", same_type, epilogue="round")
    with pytest.raises(GraphError, match="qdq of op 'bad' must be one of"):
        OpDef("bad", same_type, qdq="requantize")
    with pytest.raises(GraphError, match="clip_bounds of op 'bad' must be given exactly"):
        OpDef("bad", same_type, quant="clip")


def test_every_gemm_fuses_into_ops_of_the_table():
    for name in known_ops():
        gemm = opdef(name).gemm
        if gemm is not None:
            accel, cpu = opdef(gemm.accel_op), opdef(gemm.cpu_op)
            assert accel.tune is not None and accel.lower is not None, name
            assert cpu.quant == "integer", name
            assert accel.base_op == cpu.base_op == name


def test_a_fused_gemm_op_without_its_base_op_is_refused_when_the_table_loads():
    from vtalab.compiler.graph.opdef import check_base_ops
    from vtalab.compiler.graph.opdefs.internal import infer_accel
    ops = {"dense": opdef("dense")}
    for bad, shown in (("", "''"), ("densely", "'densely'")):
        ops["mm_fused"] = OpDef("mm_fused", infer_accel, base_op=bad, quant="integer")
        with pytest.raises(GraphError, match=f"base_op of fused op 'mm_fused' must name a "
                                             f"registered op \\(its GEMM\\), not {shown}"):
            check_base_ops(ops)
    ops["mm_fused"] = OpDef("mm_fused", infer_accel, base_op="dense", quant="integer")
    check_base_ops(ops)


def test_a_fused_gemm_op_registered_later_is_checked_as_it_is_registered(define):
    from vtalab.compiler.graph.opdefs.internal import infer_accel
    with pytest.raises(GraphError, match="base_op of fused op 'late_mm' must name"):
        define(OpDef("late_mm", infer_accel, quant="integer"))
    assert "late_mm" not in known_ops()
