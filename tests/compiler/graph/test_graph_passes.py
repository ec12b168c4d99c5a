"""Graph passes: canonicalisation, partition, layout packing, fusion, memory planning."""
import numpy as np
import pytest

from vtalab.compiler.graph import GraphBuilder, GraphError, load_onnx, run, verify
from vtalab.compiler.graph.int8_ref import run_int8
from vtalab.compiler.graph.passes import PIPELINE, PassContext, canonicalize, compile_graph
from vtalab.compiler.graph.passes.dead_code import eliminate_dead_code
from vtalab.compiler.graph.passes.fold_constants import fold_constants
from vtalab.compiler.graph.passes.partition import partition_report
from vtalab.compiler.graph.passes.plan_memory import liveness
from vtalab.spec.config import preset

from .conftest import SIZE, rand

IMAGE = (1, 3, SIZE, SIZE)


def compiled(model, shape, config="default", **options):
    """Every pass's output graph, keyed by pass name."""
    stages = {}
    compile_graph(load_onnx(model), config, calibration=rand((4,) + shape[1:], 7)[:, None]
                  if shape[0] == 1 else None, on_pass=stages.__setitem__, **options)
    return stages


@pytest.fixture(scope="module")
def resnet_stages(resnet_model):
    return compiled(resnet_model, IMAGE)


def test_pipeline_is_one_ordered_list():
    names = [name for name, _ in PIPELINE]
    assert names.index("fold_batch_norm") < names.index("quantize") < names.index("partition") \
        < names.index("pack_layout") < names.index("fuse") < names.index("plan_memory")
    with pytest.raises(GraphError, match="stop_after must be one of"):
        compile_graph(GraphBuilder().build(), stop_after="tile")


def test_canonicalize_folds_batch_norm_and_keeps_values(resnet_model):
    graph = load_onnx(resnet_model)
    canon = canonicalize(graph)
    assert "batch_norm" not in canon.op_counts()
    assert canon.op_counts()["conv2d"] == 20
    x = rand(IMAGE, 3)
    a, b = run(graph, x)[graph.outputs[0]], run(canon, x)[canon.outputs[0]]
    assert float(np.abs(a - b).max()) < 1e-4


def test_constant_folding_size_guard_and_dead_code():
    b = GraphBuilder()
    x = b.add_input("x", (4, 256))
    big = b.op("add", b.add_const("c1", np.ones((4, 256), np.float32)),
               b.add_const("c2", np.ones((256,), np.float32)))
    b.op("relu", x)  # dead
    b.set_outputs([b.op("mul", x, big)])
    graph = b.build()
    small = PassContext(fold_limit_bytes=1024)
    assert fold_constants(graph, small).op_counts()["add"] == 1
    folded = eliminate_dead_code(fold_constants(graph, PassContext()))
    assert folded.op_counts() == {"mul": 1}
    assert len(folded.constants) == 1
    x0 = rand((4, 256))
    np.testing.assert_array_equal(run(folded, x0)[folded.outputs[0]], x0 * 2)


def test_int8_result_bit_exact_through_every_later_pass(resnet_stages, mobilenet_model):
    x = rand(IMAGE, 11)
    _check_bit_exact(resnet_stages, x)
    mobile = compiled(mobilenet_model, IMAGE, per_channel=True)
    assert mobile["fuse"].op_counts()["qconv2d"] == 6   # depthwise, fused on the CPU
    _check_bit_exact(mobile, x)


def _check_bit_exact(stages, x):
    reference = run_int8(stages["quantize"], x)
    for name in ("partition", "pack_layout", "fuse", "dead_code_final", "plan_memory"):
        graph = stages[name]
        out = run_int8(graph, x)[graph.outputs[0]]
        assert np.array_equal(out, reference[graph.outputs[0]]), name


def test_resnet_fuses_into_accelerator_operators(resnet_stages):
    final = resnet_stages["plan_memory"]
    counts = final.op_counts()
    assert counts["accel_conv2d"] == 20 and counts["accel_dense"] == 1
    residual = [n for n in final.nodes if n.op == "accel_conv2d" and len(n.inputs) == 4]
    assert len(residual) == 8  # one residual add per basic block
    assert all(n.attr("target") == "accel" for n in final.nodes if n.op.startswith("accel_"))
    conv = next(n for n in final.nodes if n.op == "accel_conv2d")
    assert conv.attr("lo") == 0 and conv.attr("out_dtype") == "int8"
    assert final.types[conv.inputs[1]].shape[-2:] == (16, 16)   # OIHW16o16i


def test_partition_report_explains_each_node(resnet_stages, mobilenet_model):
    report = partition_report(resnet_stages["partition"])
    # the stem as a 1x1 over its 7x7 patches: 3 x 7 x 7 channels (passes/stride_fold.py)
    assert "int8 conv2d 147->64 channels (padded 160->64)" in report
    assert "patches" in report
    assert "epilogue of" in report and "residual operand of" in report
    assert "max_pool" in report and "no accelerator template" in report
    mobile = compiled(mobilenet_model, IMAGE)["partition"]
    placements = {p.node: p for p in mobile.meta["partition"]}
    depthwise = [p for p in placements.values() if "grouped conv2d" in p.reason]
    assert len(depthwise) == 6 and all(p.target == "cpu" for p in depthwise)
    print(partition_report(mobile))


def test_two_configs_without_code_changes(resnet_model):
    x = rand(IMAGE, 5)
    outputs = []
    for name, block in [("default", 16), ("block8", 8), ("tiny", 8)]:
        final = compiled(resnet_model, IMAGE, config=name)["plan_memory"]
        assert final.meta["layout"]["block_in"] == block
        weights = [final.types[n.inputs[1]].shape for n in final.nodes if n.op == "accel_conv2d"]
        assert all(s[-2:] == (block, block) for s in weights)
        outputs.append(run_int8(final, x)[final.outputs[0]])
    assert all(np.array_equal(outputs[0], o) for o in outputs[1:])


def test_batch_block_packs_the_batch_axis(mlp_model):
    from vtalab.compiler.models import mlp
    model = mlp(batch=3)
    cfg = preset("default").replace(batch=2)
    calib = rand((2, 3, 64), 1)
    final = compile_graph(load_onnx(model), cfg, calibration=calib)
    dense = next(n for n in final.nodes if n.op == "accel_dense")
    assert final.types[dense.inputs[0]].shape == (2, 4, 2, 16)  # batch 3 padded to 4
    ref = compile_graph(load_onnx(model), "default", calibration=calib)
    x = rand((3, 64), 2)
    assert np.array_equal(run_int8(final, x)[final.outputs[0]], run_int8(ref, x)[ref.outputs[0]])


def test_float_path_keeps_everything_on_the_cpu(mobilenet_model):
    graph = load_onnx(mobilenet_model)
    final = compile_graph(graph, quantize=False)
    assert all(p.target == "cpu" for p in final.meta["partition"])
    x = rand(IMAGE, 4)
    got = run(final, x)[final.outputs[0]]
    assert float(np.abs(got - run(graph, x)[graph.outputs[0]]).max()) < 1e-4


def test_memory_plan_reuses_buffers_without_overlap(resnet_stages):
    final = resnet_stages["plan_memory"]
    plan = final.meta["memory_plan"]
    live = liveness(final)
    assert {b.value for b in plan.buffers} == set(live)
    for i, a in enumerate(plan.buffers):
        assert a.offset % 64 == 0 and a.nbytes == final.types[a.value].nbytes
        for b in plan.buffers[i + 1:]:
            if a.last < b.first or b.last < a.first:
                continue
            assert a.offset + a.nbytes <= b.offset or b.offset + b.nbytes <= a.offset
    assert plan.arena_bytes < plan.naive_bytes
    assert plan.constant_bytes == sum(c.nbytes for c in final.constants.values())
    assert "DRAM footprint" in plan.report()
    verify(final)


def test_cpu_elementwise_chains_fuse(resnet_model):
    graph = load_onnx(resnet_model)
    final = compile_graph(graph, quantize=False)
    fused = [n for n in final.nodes if n.op == "fused_elementwise"]
    assert len(fused) == 8  # add(residual) -> relu of every basic block
    assert [b.op for b in fused[0].attr("body")] == ["add", "relu"]
    x = rand(IMAGE, 6)
    got = run(final, x)[final.outputs[0]]
    assert float(np.abs(got - run(graph, x)[graph.outputs[0]]).max()) < 1e-4
