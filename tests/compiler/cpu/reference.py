"""numpy and onnxruntime references for the CPU operator tests."""
import numpy as np
import pytest


def conv2d_ref(x, w, stride, pads, dilation, groups, bias=None):
    N, C, H, W = x.shape
    OC, ICg, KH, KW = w.shape
    (sh, sw), (dh, dw), (t, l, b, r) = stride, dilation, pads
    wide = np.float64 if x.dtype.kind == "f" else np.int64
    xp = np.pad(x.astype(wide), ((0, 0), (0, 0), (t, b), (l, r)))
    OH = (H + t + b - dh * (KH - 1) - 1) // sh + 1
    OW = (W + l + r - dw * (KW - 1) - 1) // sw + 1
    out = np.zeros((N, OC, OH, OW), wide)
    OCg = OC // groups
    for g in range(groups):
        xs = xp[:, g * ICg:(g + 1) * ICg]
        for kh in range(KH):
            for kw in range(KW):
                patch = xs[:, :, kh * dh:kh * dh + sh * (OH - 1) + 1:sh,
                           kw * dw:kw * dw + sw * (OW - 1) + 1:sw]
                out[:, g * OCg:(g + 1) * OCg] += np.einsum(
                    "nchw,oc->nohw", patch, w[g * OCg:(g + 1) * OCg, :, kh, kw].astype(wide))
    if bias is not None:
        out += bias[None, :, None, None]
    return out


def maxpool_ref(x, k, s, pads):
    (KH, KW), (sh, sw), (t, l, b, r) = k, s, pads
    low = -np.inf if x.dtype.kind == "f" else np.iinfo(x.dtype).min
    xp = np.pad(x, ((0, 0), (0, 0), (t, b), (l, r)), constant_values=low)
    win = np.lib.stride_tricks.sliding_window_view(xp, (KH, KW), axis=(2, 3))
    return win[:, :, ::sh, ::sw].max((4, 5))


def ort_op(op, inputs: dict, initializers: dict | None = None, out_type=None, **attrs):
    """Run one ONNX node on onnxruntime (skips when onnx/onnxruntime are missing)."""
    onnx = pytest.importorskip("onnx", reason="onnx is not installed")
    ort = pytest.importorskip("onnxruntime", reason="onnxruntime is not installed")
    from onnx import TensorProto, helper, numpy_helper
    inits = initializers or {}
    node = helper.make_node(op, list(inputs) + list(inits), ["y"], **attrs)
    elem = {np.dtype("float32"): TensorProto.FLOAT, np.dtype("int8"): TensorProto.INT8,
            np.dtype("int32"): TensorProto.INT32}
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(k, elem[v.dtype], v.shape) for k, v in inputs.items()],
        [helper.make_tensor_value_info("y", out_type or TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    sess = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return sess.run(None, inputs)[0]
