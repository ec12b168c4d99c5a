"""Models quantised by onnxruntime.quantization (what users bring from other toolchains)."""
from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np


class _Reader:
    """onnxruntime CalibrationDataReader over a list of arrays."""

    def __init__(self, input_name: str, samples):
        self._items = iter([{input_name: s} for s in samples])

    def get_next(self):
        return next(self._items, None)

    def rewind(self):  # pragma: no cover - not needed by quantize_static's minmax path
        pass


def quantize_with_onnxruntime(model, samples, quant_format: str = "QDQ",
                              per_channel: bool = False, op_types=None):
    """Quantise an onnx.ModelProto with onnxruntime's quantize_static; returns a ModelProto.

    `samples`: calibration inputs, each shaped like the model's single input.
    `quant_format`: "QDQ" (QuantizeLinear/DequantizeLinear pairs) or "QOperator"
    (QLinearConv / QLinearMatMul)."""
    import onnx
    from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                          quantize_static)

    class Reader(_Reader, CalibrationDataReader):
        pass

    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "float.onnx", Path(tmp) / "int8.onnx"
        onnx.save(model, src)
        quantize_static(str(src), str(dst), Reader(model.graph.input[0].name, samples),
                        quant_format=getattr(QuantFormat, quant_format),
                        per_channel=per_channel, activation_type=QuantType.QInt8,
                        weight_type=QuantType.QInt8, op_types_to_quantize=op_types)
        return onnx.load(dst)


def random_samples(shape, count: int, seed: int = 1) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.normal(0, 1, shape).astype(np.float32) for _ in range(count)]
