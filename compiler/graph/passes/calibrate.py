"""Calibration: run the float graph on sample inputs and record each value's max |x|."""
from __future__ import annotations

from typing import Mapping

import numpy as np

from vtalab.util import single_threaded_blas

from ..errors import QuantizeError
from ..interp import run
from ..ir import Graph


def _describe(array) -> str:
    array = np.asarray(array)
    return f"{array.dtype}[{'x'.join(map(str, array.shape))}]"


def calibration_feeds(graph: Graph, samples) -> list[dict[str, np.ndarray]]:
    """Normalise a calibration set to a list of feed dicts, checking every shape.

    Accepted: one array shaped like the (single) input; a stacked array [S, *input_shape];
    a list of such arrays; or a list of {input name: array} dicts."""
    if samples is None:
        raise QuantizeError("calibration set must be given (or the model must carry QDQ "
                            "scales), not None")
    single = graph.inputs[0] if len(graph.inputs) == 1 else None
    if isinstance(samples, np.ndarray) and single:
        want = graph.types[single].shape
        if samples.shape == want:
            samples = [samples]
        elif samples.ndim == len(want) + 1 and samples.shape[1:] == want:
            samples = list(samples)
        else:
            raise QuantizeError(f"calibration set for input {single!r} must be shaped "
                                f"{want} or [samples, *{want}], not {samples.shape}")
    if isinstance(samples, Mapping):
        samples = [samples]
    feeds = []
    for index, sample in enumerate(samples):
        if not isinstance(sample, Mapping):
            if single is None:
                raise QuantizeError(f"calibration sample {index} must be a dict naming "
                                    f"inputs {list(graph.inputs)}, not an array")
            sample = {single: sample}
        feed = {}
        for name in graph.inputs:
            want = graph.types[name]
            array = sample.get(name)
            if array is None:
                raise QuantizeError(f"calibration sample {index} must include input "
                                    f"{name!r}, not only {sorted(sample)}")
            array = np.asarray(array)
            if array.shape != want.shape or (array.dtype.kind != "f" and want.dtype == "float32"):
                raise QuantizeError(f"calibration sample {index} for input {name!r} must be "
                                    f"{want}, not {_describe(array)}")
            feed[name] = array.astype(want.dtype)
        feeds.append(feed)
    if not feeds:
        raise QuantizeError("calibration set must hold at least one sample, not 0")
    return feeds


class ValueStats:
    """Calibration statistics of one value: max |x| and a fixed-size sample of |x|."""

    def __init__(self, keep: int):
        self.max_abs = 0.0
        self.keep = keep
        self.parts: list[np.ndarray] = []

    def add(self, array: np.ndarray, rng: np.random.Generator) -> None:
        flat = np.abs(array.reshape(-1))
        self.max_abs = max(self.max_abs, float(flat.max()))
        if flat.size > self.keep:
            flat = flat[rng.integers(0, flat.size, self.keep)]
        self.parts.append(flat.astype(np.float32))

    def exponent(self) -> int:
        """The exponent with the least squared int8 rounding + clipping error on the sample:
        the one that just fits max |x|, or one or two finer ones that clip a rare tail."""
        if not self.parts:
            return exponent_for(self.max_abs)
        return best_exponent(np.concatenate(self.parts), self.max_abs)


def best_exponent(sample_abs: np.ndarray, max_abs: float, tries: int = 3) -> int:
    """Of the exponent that just fits max_abs and the next finer ones (which clip a rare
    tail), the one with the least squared rounding + clipping error on `sample_abs`."""
    base = exponent_for(max_abs)
    if max_abs <= 0:
        return base
    sample = np.asarray(sample_abs, np.float64)
    errors = []
    for e in range(base, base + tries):
        q = np.clip(np.rint(sample * 2.0 ** e), 0, 127) * 2.0 ** -e
        errors.append(float(np.mean((q - sample) ** 2)))
    return base + int(np.argmin(errors))


def calibrate(graph: Graph, samples, keep: int = 4096, seed: int = 0) -> dict[str, ValueStats]:
    """{value: ValueStats} for every float value of `graph` over the calibration set."""
    stats: dict[str, ValueStats] = {}
    rng = np.random.default_rng(seed)
    for feed in calibration_feeds(graph, samples):
        with single_threaded_blas():
            env = run(graph, feed, keep_all=True)
        for value, array in env.items():
            if value in graph.constants or array.dtype != np.float32 or not array.size:
                continue
            stats.setdefault(value, ValueStats(keep)).add(array, rng)
    return stats


def exponent_for(max_abs: float, qmax: int = 127) -> int:
    """The power-of-two exponent e (scale 2**-e) that fits max_abs into [-qmax, qmax]."""
    if not np.isfinite(max_abs):
        raise QuantizeError(f"calibrated range must be finite, not {max_abs}")
    if max_abs <= 0:
        return 0
    return int(np.floor(np.log2(qmax / max_abs)))
