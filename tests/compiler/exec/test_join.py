"""Joined programs (compiler/exec/join.py): a run of consecutive accelerator layers as one
program per part, the same values as one program per layer, in fewer RTL cycles."""
import numpy as np
import pytest

from ...rtl.backends import require_rtl
from .conftest import samples

SIZE = 16


def _compile(join):
    from vtalab.compiler.exec import compile_model
    from vtalab.compiler.models import resnet18
    return compile_model(resnet18(SIZE, num_classes=10), "default",
                         calibration=samples((1, 3, SIZE, SIZE)), join=join)


@pytest.fixture(scope="module")
def modules():
    return {join: _compile(join) for join in (0, 1, 2)}


def _accel(module):
    return [s for s in module.steps if s.target == "accel"]


def test_each_run_of_accelerator_layers_becomes_join_programs(modules):
    per_layer = _accel(modules[0])
    assert all(s.op != "joined" for s in per_layer)
    one, two = _accel(modules[1]), _accel(modules[2])
    assert len(one) < len(two) < len(per_layer)
    layers = [m["name"] for s in one if s.op == "joined" for m in s.info["members"]]
    singles = [s.name for s in one if s.op != "joined"]
    assert sorted(layers + singles) == sorted(s.name for s in per_layer)
    for s in one + two:
        if s.op == "joined":
            assert s.info["macs"] == sum(m["macs"] for m in s.info["members"])


def test_a_value_only_read_inside_a_joined_step_is_internal(modules):
    module = modules[1]
    joined = [s for s in module.steps if s.op == "joined"]
    assert joined
    for step in joined:
        others = {v for s in module.steps if s is not step for v in s.inputs}
        internal = {name for kind, name in step.bindings.values() if kind == "internal"}
        assert internal and not internal & (others | set(module.outputs))
        assert not internal & (set(step.outputs) | set(step.inputs))


def test_joined_programs_compute_the_same_values_on_the_functional_simulator(modules):
    x = samples((1, 3, SIZE, SIZE), 1, seed=7)[0]
    want, _ = modules[0].run(x)
    for join in (1, 2):
        got, _ = modules[join].run(x)
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])


def test_joined_programs_are_bit_exact_and_faster_on_the_rtl(modules):
    """(Faster on the default preset; on `tiny`, where every layer waits on the bus, the
    joined ResNet costs 0.9% more: docs/tuning.md.)"""
    require_rtl()
    x = samples((1, 3, SIZE, SIZE), 1, seed=7)[0]
    want, _ = modules[0].run(x)
    cycles = {}
    for join in (0, 1):
        got, profile = modules[join].run(x, backend="rtl")
        for name in want:
            np.testing.assert_array_equal(got[name], want[name])
        cycles[join] = sum(r.cycles for r in profile.accel)
    assert cycles[1] < cycles[0]
    got, profile = modules[2].run(x, backend="rtl", jobs=2)      # parallel: checked per step
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


def test_a_joined_module_survives_a_file_round_trip(modules, tmp_path):
    from vtalab.compiler.exec import load_module, save_module
    module = modules[1]
    again = load_module(save_module(module, tmp_path / "joined.vtl"))
    assert [s.op for s in again.steps] == [s.op for s in module.steps]
    x = samples((1, 3, SIZE, SIZE), 1, seed=8)[0]
    want, _ = module.run(x)
    got, _ = again.run(x)
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])


@pytest.mark.parametrize("bad", [-1, 1.5, True])
def test_join_must_be_a_whole_number_of_programs(bad):
    from vtalab.compiler.errors import CompileError
    from vtalab.compiler.exec.join import join_steps
    with pytest.raises(CompileError, match=f"join must be a whole number of programs >= 0, "
                                           f"not {bad!r}"):
        join_steps([], None, bad)
