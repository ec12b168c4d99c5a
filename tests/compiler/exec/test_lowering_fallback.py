"""What the accelerator's lowering (exec/lower.py) refuses falls back to the CPU with the
reason in the module's step, and the model stays bit-exact against the int8 reference."""
import numpy as np
import pytest

from vtalab.compiler.exec import compile_model
from vtalab.compiler.exec.lower import Unsupported, conv_shape, epilogue_of
from vtalab.compiler.graph import GraphBuilder, compile_graph, run_int8
from vtalab.compiler.graph.ir import Node
from vtalab.spec import preset
from vtalab.spec.isa import imm_range

from .conftest import values_differ, samples

CFG = preset("default")


def conv_model(kernel=(3, 1), strides=(1, 1), pads=(1, 0, 1, 0)):
    """x [1, 16, 8, 8] -> conv2d (16 filters, `kernel`) -> relu."""
    rng = np.random.default_rng(3)
    b = GraphBuilder("conv")
    x = b.add_input("x", (1, 16, 8, 8))
    w = b.add_const("w", rng.normal(0, 0.2, (16, 16) + kernel).astype(np.float32))
    y = b.op("conv2d", x, w, name="conv", strides=strides, pads=pads)
    b.set_outputs([b.op("relu", y, name="act")])
    return b.build()


@pytest.mark.parametrize("kernel,strides,pads,why", [
    ((3, 1), (1, 1), (1, 0, 1, 0), "kernel must be square, not 3x1"),
    ((3, 3), (1, 2), (1, 1, 1, 1), "strides must be equal, not (1, 2)"),
    ((3, 3), (1, 1), (1, 0, 1, 0), "pads must be equal and below the kernel size"),
])
def test_a_conv_the_templates_cannot_run_falls_back_bit_exact(kernel, strides, pads, why):
    graph = conv_model(kernel, strides, pads)
    module = compile_model(graph, CFG, calibration=samples((1, 16, 8, 8)))
    (step,) = [s for s in module.steps if s.op == "accel_conv2d"]
    assert step.target == "cpu"
    assert step.reason.startswith("accelerator lowering: accel_conv2d") and why in step.reason
    x = samples((1, 16, 8, 8), 1, seed=9)[0]
    outputs, _ = module.run(x, keep=True)
    assert values_differ(outputs, run_int8(module.graph, x, keep_all=True)) == []


def test_a_square_conv_of_the_same_model_runs_on_the_accelerator():
    module = compile_model(conv_model((3, 3), (1, 1), (1, 1, 1, 1)), CFG,
                           calibration=samples((1, 16, 8, 8)))
    (step,) = [s for s in module.steps if s.op == "accel_conv2d"]
    assert step.target == "accel"


def test_conv_shape_reads_the_packed_operands():
    final = compile_graph(conv_model((3, 3), (2, 2), (1, 1, 1, 1)), CFG,
                          calibration=samples((1, 16, 8, 8)))
    node = next(n for n in final.nodes if n.op == "accel_conv2d")
    sh = conv_shape(final, node, CFG)
    assert (sh.channels, sh.filters, sh.height, sh.width) == (16, 16, 8, 8)
    assert (sh.kernel, sh.stride, sh.pad) == (3, 2, 1)


def _fused(**attrs) -> Node:
    return Node("fc", "accel_dense", ("x", "w"), ("y",), attrs)


def test_the_epilogue_refuses_a_wide_output_and_an_unencodable_clip():
    with pytest.raises(Unsupported, match="out_dtype of fc must be int8 on the accelerator, "
                                          "not int32"):
        epilogue_of(None, _fused(out_dtype="int32"), 1, CFG)
    lo, hi = imm_range()
    with pytest.raises(Unsupported, match=f"hi of fc must be in {lo}..{hi} \\(the ALU's "
                                          f"signed immediate\\), not {hi + 1}"):
        epilogue_of(None, _fused(hi=hi + 1), 1, CFG)
    ep, consts = epilogue_of(None, _fused(shift=20, lo=-128, hi=(1 << 31) - 1), 1, CFG)
    assert sum(ep.shifts) == 20 and ep.lo == -128 and ep.hi is None and consts == {}
