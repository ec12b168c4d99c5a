"""A small helper that writes ONNX graphs with seeded random weights (no downloads)."""
from __future__ import annotations

import numpy as np

OPSET = 17


def _onnx():
    import onnx
    return onnx


class OnnxNet:
    """Append layers to an ONNX graph; each method returns the name of its output."""

    def __init__(self, name: str, seed: int = 0):
        self.name = name
        self.rng = np.random.default_rng(seed)
        self.nodes = []
        self.initializers = []
        self.inputs = []
        self.outputs = []
        self._count = 0

    # ---- plumbing -------------------------------------------------------------------
    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def const(self, hint: str, array) -> str:
        from onnx import numpy_helper
        name = self.fresh(hint)
        self.initializers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def node(self, op_type: str, inputs, hint: str | None = None, **attrs) -> str:
        helper = _onnx().helper
        out = self.fresh(hint or op_type.lower())
        self.nodes.append(helper.make_node(op_type, list(inputs), [out], name=out, **attrs))
        return out

    def input(self, name: str, shape, elem_type=None) -> str:
        onnx = _onnx()
        elem_type = elem_type or onnx.TensorProto.FLOAT
        self.inputs.append(onnx.helper.make_tensor_value_info(name, elem_type, list(shape)))
        return name

    def output(self, value: str, shape) -> None:
        onnx = _onnx()
        self.outputs.append(onnx.helper.make_tensor_value_info(
            value, onnx.TensorProto.FLOAT, list(shape)))

    def model(self, opset: int = OPSET):
        onnx = _onnx()
        graph = onnx.helper.make_graph(self.nodes, self.name, self.inputs, self.outputs,
                                       self.initializers)
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)],
                                       producer_name="vtalab.models")
        model.ir_version = 8
        onnx.checker.check_model(model)
        return model

    # ---- layers ---------------------------------------------------------------------
    def conv(self, x: str, cin: int, cout: int, kernel: int, stride: int = 1,
             pad: int | None = None, groups: int = 1, bias: bool = False) -> str:
        pad = kernel // 2 if pad is None else pad
        fan_in = cin // groups * kernel * kernel
        w = self.rng.normal(0, np.sqrt(2.0 / fan_in), (cout, cin // groups, kernel, kernel))
        inputs = [x, self.const("w", w.astype(np.float32))]
        if bias:
            inputs.append(self.const("b", self.rng.normal(0, 0.1, cout).astype(np.float32)))
        return self.node("Conv", inputs, "conv", kernel_shape=[kernel, kernel],
                         strides=[stride, stride], pads=[pad] * 4, group=groups)

    def batch_norm(self, x: str, channels: int, gamma: float = 1.0) -> str:
        rng = self.rng
        params = [gamma * rng.uniform(0.8, 1.2, channels), rng.normal(0, 0.1, channels),
                  rng.normal(0, 0.1, channels), rng.uniform(0.8, 1.2, channels)]
        names = [self.const(h, p.astype(np.float32))
                 for h, p in zip(("gamma", "beta", "mean", "var"), params)]
        return self.node("BatchNormalization", [x] + names, "bn", epsilon=1e-5)

    def relu(self, x: str) -> str:
        return self.node("Relu", [x], "relu")

    def relu6(self, x: str) -> str:
        lo = self.const("lo", np.array(0.0, np.float32))
        hi = self.const("hi", np.array(6.0, np.float32))
        return self.node("Clip", [x, lo, hi], "relu6")

    def add(self, a: str, b: str) -> str:
        return self.node("Add", [a, b], "add")

    def max_pool(self, x: str, kernel: int, stride: int, pad: int) -> str:
        return self.node("MaxPool", [x], "maxpool", kernel_shape=[kernel, kernel],
                         strides=[stride, stride], pads=[pad] * 4)

    def global_avg_pool(self, x: str) -> str:
        return self.node("GlobalAveragePool", [x], "gap")

    def flatten(self, x: str) -> str:
        return self.node("Flatten", [x], "flatten", axis=1)

    def gemm(self, x: str, fin: int, fout: int) -> str:
        w = self.rng.normal(0, np.sqrt(1.0 / fin), (fout, fin)).astype(np.float32)
        b = self.rng.normal(0, 0.1, fout).astype(np.float32)
        return self.node("Gemm", [x, self.const("fc_w", w), self.const("fc_b", b)], "fc",
                         transB=1)

    def matmul_add(self, x: str, fin: int, fout: int) -> str:
        w = self.rng.normal(0, np.sqrt(2.0 / fin), (fin, fout)).astype(np.float32)
        b = self.rng.normal(0, 0.1, fout).astype(np.float32)
        y = self.node("MatMul", [x, self.const("mm_w", w)], "matmul")
        return self.node("Add", [y, self.const("mm_b", b)], "bias")

    def softmax(self, x: str) -> str:
        return self.node("Softmax", [x], "softmax", axis=-1)
