"""Fixtures of the graph-level tests: models built in code, cached per session."""
import numpy as np
import pytest

pytest.importorskip("onnx", reason="onnx is needed to build and import the test models")

from ..conftest import SIZE  # noqa: F401  (re-exported for the test modules)


def rand(shape, seed=0):
    return np.random.default_rng(seed).normal(0, 1, shape).astype(np.float32)


def cosine(a, b) -> float:
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def ort_run(model, x, optimize=False):
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is the float reference")
    options = ort.SessionOptions()
    if not optimize:
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options,
                                   providers=["CPUExecutionProvider"])
    feeds = x if isinstance(x, dict) else {session.get_inputs()[0].name: x}
    return session.run(None, feeds)[0]


