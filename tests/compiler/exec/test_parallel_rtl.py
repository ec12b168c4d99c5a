"""A whole model on the RTL in parallel: every accelerator step on its own simulator
process, fed its bit-exact inputs and checked against the functional simulator."""
import re

import numpy as np
import pytest

from vtalab.spec.errors import DeviceError

from ...rtl.backends import require_rtl
from .conftest import samples

SIZE = 16


@pytest.fixture(scope="module")
def tiny_module():
    from vtalab.compiler.exec import compile_model
    from vtalab.compiler.models import resnet18
    return compile_model(resnet18(SIZE, num_classes=10), "tiny",
                         calibration=samples((1, 3, SIZE, SIZE)))


def test_parallel_rtl_matches_fsim_and_the_single_process_run(tiny_module):
    require_rtl()
    x = samples((1, 3, SIZE, SIZE), 1, seed=5)[0]
    want, _ = tiny_module.run(x)
    got, profile = tiny_module.run(x, backend="rtl", jobs=2)
    one, single = tiny_module.run(x, backend="rtl")
    for name in want:
        np.testing.assert_array_equal(got[name], want[name])
        np.testing.assert_array_equal(one[name], want[name])
    accel = profile.accel
    assert accel and len(accel) == len(single.accel)
    assert all(r.cycles and r.cycles > 0 for r in accel)
    assert {r.name for r in accel} == {r.name for r in single.accel}
    assert [r.name for r in profile.records] == [s.name for s in tiny_module.steps]


def test_jobs_need_the_rtl_backend(tiny_module):
    x = samples((1, 3, SIZE, SIZE), 1)[0]
    with pytest.raises(DeviceError, match="jobs must be 1 unless backend is rtl"):
        tiny_module.run(x, backend="fsim", jobs=2)


def test_an_error_of_the_functional_simulator_run_reaches_the_caller(tiny_module):
    """The fsim runs in a thread while the workers start: its error is the one raised."""
    require_rtl()
    bad = np.zeros((1, 3, SIZE + 1, SIZE), np.float32)
    with pytest.raises(Exception) as single:
        tiny_module.run(bad)
    with pytest.raises(type(single.value), match=re.escape(str(single.value))):
        tiny_module.run(bad, backend="rtl", jobs=2)
