"""Fixtures of the executable-module tests: small models built in code, cached per session."""
import numpy as np
import pytest

pytest.importorskip("onnx", reason="onnx is needed to build the test models")

from ..conftest import SIZE  # noqa: F401  (re-exported for the test modules)


def samples(shape, count=4, seed=1):
    rng = np.random.default_rng(seed)
    return [rng.normal(0, 1, shape).astype(np.float32) for _ in range(count)]


def values_differ(outputs: dict, reference: dict) -> list[str]:
    """Names of values (integer and float) that differ between a module run and the int8
    reference: the float ops between int8 steps must compute the same values too, or a
    last-bit difference may flip a later rounding."""
    return [v for v, a in reference.items() if v in outputs
            and not np.array_equal(outputs[v], a)]


@pytest.fixture(scope="session")
def resnet_module(resnet_model):
    from vtalab.compiler.exec import compile_model
    return compile_model(resnet_model, "default", calibration=samples((1, 3, SIZE, SIZE)))
