"""int8 elementwise ops on the accelerator's ALU, through the whole compiler: Max, Min, Sub,
Abs, Neg, LeakyRelu (slope 2**-2) and Mul between convolutions run as accel_alu steps,
bit-exact on the functional simulator against the int8 reference (every value, float
included) and on the RTL against the functional simulator; a scale by 1/2 that keeps the
int8 values is no step at all; a slope that is not a power of two becomes a lookup table."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
from onnx import helper  # noqa: E402

from vtalab.compiler.exec import compile_model  # noqa: E402
from vtalab.compiler.graph import run_int8  # noqa: E402

from ...rtl.backends import require_rtl  # noqa: E402
from .conftest import samples, values_differ  # noqa: E402
from .test_ops_int8 import _model, _rand  # noqa: E402

SHAPE = (1, 3, 8, 8)


def _conv(name, x, w):
    return helper.make_node("Conv", [x, w], [name], kernel_shape=[3, 3], pads=[1, 1, 1, 1])


def alu_model(slope=0.25):
    n = helper.make_node
    nodes = [_conv("c1", "x", "w1"), _conv("c2", "x", "w2"),
             n("Max", ["c1", "c2"], ["mx"]), _conv("c3", "mx", "w"),
             n("Min", ["c1", "c2"], ["mn"]), _conv("c4", "mn", "w"),
             n("Sub", ["c3", "c4"], ["sb"]), _conv("c5", "sb", "w"),
             n("Abs", ["c5"], ["ab"]), _conv("c6", "ab", "w"),
             n("Neg", ["c6"], ["ng"]), _conv("c7", "ng", "w"),
             n("LeakyRelu", ["c7"], ["lk"], alpha=slope), _conv("c8", "lk", "w"),
             n("Mul", ["c8", "c8"], ["sq"]), _conv("c9", "sq", "w"),
             n("Add", ["c9", "c2"], ["ad"]), n("Div", ["ad", "two"], ["mean"]),
             _conv("c10", "mean", "w"), n("GlobalAveragePool", ["c10"], ["gap"]),
             n("Flatten", ["gap"], ["y"])]
    inits = [("w1", _rand((8, 3, 3, 3), 1)), ("w2", _rand((8, 3, 3, 3), 2)),
             ("w", _rand((8, 8, 3, 3), 3, 0.2)), ("two", np.array(2, np.float32))]
    return _model(nodes, SHAPE, (1, 8), inits)


def _alu_steps(module):
    return {s.node.attr("function") if s.node is not None else s.name: s.target
            for s in module.steps if s.op in ("accel_alu", "alu")}


@pytest.mark.parametrize("config", ["default", "tiny"])
def test_elementwise_ops_run_on_the_alu_bit_exact(config):
    module = compile_model(alu_model(), config, calibration=samples(SHAPE, 6, 3))
    layers = module.accel_layers()
    assert "accel_alu" in {lay["op"] for lay in layers}
    functions = {lay.get("what", "").split(" on the ALU")[0]
                 for lay in layers if lay["op"] == "accel_alu"}
    assert {"max", "min", "sub", "abs", "neg", "leaky_relu", "mul"} <= functions
    for seed in (12, 13):
        x = samples(SHAPE, 1, seed)[0] * 2
        outputs, _ = module.run(x, keep=True)
        assert values_differ(outputs, run_int8(module.graph, x, keep_all=True)) == []


def test_a_slope_that_is_not_a_power_of_two_is_a_table_on_the_cpu():
    module = compile_model(alu_model(slope=0.1), "default", calibration=samples(SHAPE, 6, 3))
    luts = [s for s in module.steps if s.op == "lut"]
    assert [s.node.attr("function") for s in luts] == [("leaky_relu",)]
    assert luts[0].target == "cpu" and "no table lookup" in luts[0].reason


def test_alu_steps_on_the_rtl_equal_the_functional_simulator():
    require_rtl()
    # one program per layer: each ALU step's output is kept (a joined step's are internal)
    module = compile_model(alu_model(), "tiny", calibration=samples(SHAPE, 6, 3), join=0)
    x = samples(SHAPE, 1, 14)[0] * 2
    want, _ = module.run(x, keep=True)
    got, profile = module.run(x, backend="rtl", keep=True)
    alu = [s.name for s in module.steps if s.op == "accel_alu" and s.target == "accel"]
    assert len(alu) >= 7
    for name in alu:
        np.testing.assert_array_equal(got[module.graph.node(name).outputs[0]],
                                      want[module.graph.node(name).outputs[0]])
    assert all(r.cycles > 0 for r in profile.accel if r.name in alu)


def test_the_float_path_keeps_its_float_ops():
    module = compile_model(alu_model(), "default", quantize=False)
    assert {s.target for s in module.steps} == {"cpu"}
    assert not {"alu", "lut", "accel_alu"} & {s.op for s in module.steps}
