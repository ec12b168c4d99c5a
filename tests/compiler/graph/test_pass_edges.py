"""Graph passes on the forms the model tests do not reach: QLinearMatMul lowered to a dense
layer or a matmul, a batch norm with no convolution before it, QLinearConv with a bias,
and a clip of an already-int8 value; each keeps the values of the graph it rewrites."""
import numpy as np

from vtalab.compiler.graph import GraphBuilder, compile_graph, run, run_int8
from vtalab.compiler.graph.passes import PassContext
from vtalab.compiler.graph.passes.fold_batch_norm import fold_batch_norm
from vtalab.compiler.graph.passes.lower_qlinear import lower_qlinear

CTX = PassContext()
QPARAMS = dict(a_scale=np.float32(0.05), a_zero_point=np.int8(3), b_scale=np.float32(0.02),
               b_zero_point=np.int8(-2), y_scale=np.float32(0.1), y_zero_point=np.int8(1),
               y_dtype="int8")


def _ops(graph) -> list[str]:
    return [n.op for n in graph.nodes]


def _qlinear_matmul(a_shape, b_shape, b_constant: bool):
    rng = np.random.default_rng(0)
    b = GraphBuilder("qmm")
    a = b.add_input("a", a_shape, "int8")
    w = b.add_const("w", rng.integers(-50, 50, b_shape).astype(np.int8)) if b_constant \
        else b.add_input("w", b_shape, "int8")
    b.set_outputs([b.op("qlinear_matmul", a, w, name="mm", **QPARAMS)])
    return b.build()


def _feeds(graph, seed=1):
    rng = np.random.default_rng(seed)
    return {v: rng.integers(-60, 60, graph.types[v].shape).astype(np.int8)
            for v in graph.inputs}


def _same_within_one_step(before, after, feeds):
    """The lowered float path rounds once more than the exact reference: at most one
    quantisation step apart, and equal almost everywhere."""
    want = run(before, feeds)[before.outputs[0]].astype(int)
    got = run(after, feeds)[after.outputs[0]].astype(int)
    assert np.abs(got - want).max() <= 1 and np.mean(got == want) > 0.9


def test_qlinear_matmul_with_constant_2d_weights_becomes_a_dense_layer():
    graph = _qlinear_matmul((4, 16), (16, 8), b_constant=True)
    lowered = lower_qlinear(graph, CTX)
    assert _ops(lowered) == ["dequantize", "dense", "quantize"]
    dense = lowered.nodes[1]
    assert lowered.types[dense.inputs[1]].shape == (8, 16)            # [out, in]
    _same_within_one_step(graph, lowered, _feeds(graph))


def test_qlinear_matmul_with_computed_or_batched_operands_becomes_a_matmul():
    for a_shape, b_shape, constant in (((4, 16), (16, 8), False), ((2, 4, 16), (16, 8), True)):
        graph = _qlinear_matmul(a_shape, b_shape, constant)
        lowered = lower_qlinear(graph, CTX)
        assert "matmul" in _ops(lowered) and "dense" not in _ops(lowered)
        _same_within_one_step(graph, lowered, _feeds(graph))


def test_qlinear_conv_bias_is_dequantized_at_input_times_weight_scale():
    rng = np.random.default_rng(2)
    b = GraphBuilder("qconv")
    x = b.add_input("x", (1, 4, 6, 6), "int8")
    w = b.add_const("w", rng.integers(-40, 40, (8, 4, 3, 3)).astype(np.int8))
    bias = b.add_const("bias", rng.integers(-500, 500, (8,)).astype(np.int32))
    b.set_outputs([b.op("qlinear_conv", x, w, bias, name="conv", strides=(1, 1),
                        pads=(1, 1, 1, 1), dilations=(1, 1), groups=1,
                        x_scale=np.float32(0.05), x_zero_point=np.int8(0),
                        w_scale=np.float32(0.01), w_zero_point=np.int8(0),
                        y_scale=np.float32(0.2), y_zero_point=np.int8(0), y_dtype="int8")])
    graph = b.build()
    lowered = lower_qlinear(graph, CTX)
    conv = next(n for n in lowered.nodes if n.op == "conv2d")
    # ONNX's bias scale is x_scale * w_scale, the product of the two float32 scales
    bias_scale = np.float32(0.05) * np.float32(0.01)
    np.testing.assert_array_equal(lowered.constants[conv.inputs[2]],
                                  graph.constants["bias"].astype(np.float32) * bias_scale)
    _same_within_one_step(graph, lowered, _feeds(graph))


def test_a_batch_norm_without_a_conv_before_it_becomes_mul_and_add():
    rng = np.random.default_rng(4)
    b = GraphBuilder("bn")
    x = b.add_input("x", (2, 3, 4, 4))
    params = [b.add_const(n, a.astype(np.float32)) for n, a in (
        ("gamma", rng.normal(1, 0.1, 3)), ("beta", rng.normal(0, 1, 3)),
        ("mean", rng.normal(0, 1, 3)), ("var", rng.uniform(0.5, 2, 3)))]
    b.set_outputs([b.op("batch_norm", x, *params, name="bn", epsilon=1e-5)])
    graph = b.build()
    folded = fold_batch_norm(graph, CTX)
    assert _ops(folded) == ["mul", "add"]
    feeds = {"x": rng.normal(0, 1, (2, 3, 4, 4)).astype(np.float32)}
    # float path: x * s + t rounds differently from (x - mean) / sqrt(var + eps) * g + b,
    # a few float32 ulps (the int8 path quantises the folded weights and is bit-exact)
    np.testing.assert_allclose(run(folded, feeds)["bn"], run(graph, feeds)["bn"],
                               rtol=1e-5, atol=1e-5)


def test_a_clip_of_an_int8_value_stays_int8_with_quantised_bounds():
    """conv -> max_pool -> clip(0, 1.5): the pool keeps the conv's int8 value, the clip
    clips it as int8 at the same exponent (no dequantize / quantize around it)."""
    rng = np.random.default_rng(5)
    b = GraphBuilder("pool_clip")
    x = b.add_input("x", (1, 4, 8, 8))
    w = b.add_const("w", rng.normal(0, 0.3, (8, 4, 3, 3)).astype(np.float32))
    y = b.op("conv2d", x, w, name="conv", pads=(1, 1, 1, 1))
    y = b.op("max_pool", y, name="pool", kernel=(2, 2), strides=(2, 2))
    b.set_outputs([b.op("clip", y, name="cap", lo=0.0, hi=1.5)])
    graph = b.build()
    samples = [rng.normal(0, 1, (1, 4, 8, 8)).astype(np.float32) for _ in range(4)]
    quantised = compile_graph(graph, "default", calibration=samples, stop_after="quantize")
    cap = next(n for n in quantised.nodes if n.name == "cap")
    assert quantised.types[cap.inputs[0]].dtype == "int8"
    e = quantised.meta["quant_exponents"][cap.outputs[0]]
    assert (cap.attr("lo"), cap.attr("hi")) == (0, int(np.floor(1.5 * 2.0 ** e)))
    out = run_int8(quantised, samples[0])[quantised.outputs[0]]
    float_out = run(graph, {"x": samples[0]})["cap"]
    assert out.min() >= 0 and out.max() <= 1.5
    assert np.abs(out - float_out).max() <= 2.0 ** -e * 2 + 0.1
