"""Tunable LLVM CPU kernels (compiler/tune/templates/cpu.py): every point is right, the
default point is the untuned heuristic, spaces and features are deterministic, knobs change
the code, graph nodes map to tasks and tuned knobs reach the node's kernel."""
import importlib.util
import warnings

import numpy as np
import pytest

pytest.importorskip("llvmlite", reason="llvmlite is not installed (pip install vtalab[llvm])")

from vtalab.compiler import cpu  # noqa: E402
from vtalab.compiler.errors import CompileError, ScheduleError  # noqa: E402
from vtalab.compiler.graph.ir import Node, TensorType  # noqa: E402
from vtalab.compiler.llvm.cache import func_fingerprint  # noqa: E402
from vtalab.compiler.target import Target  # noqa: E402
from vtalab.compiler.tune.log import TuningLog, make_record  # noqa: E402
from vtalab.compiler.tune.templates.cpu import (conv2d_task, cpu_tasks_of, dense_task,  # noqa: E402
                                                pool_task, softmax_task)

TASKS = {
    "conv_f32": lambda: conv2d_task((1, 8, 10, 12), (8, 4, 3, 3), "float32", 1, 1, 1, 2,
                                    bias=True, relu=True),
    "conv_i8": lambda: conv2d_task((1, 4, 7, 9), (6, 4, 3, 3), "int8", 2, (1, 0, 1, 1)),
    "dense_f32": lambda: dense_task(3, 40, 24, bias=True, relu=True),
    "dense_i8": lambda: dense_task(2, 32, 16, "int8", bias=True),
    "maxpool_sep": lambda: pool_task("max", (1, 3, 9, 11), "float32", 3, 2, 1),
    "maxpool_i8": lambda: pool_task("max", (1, 2, 8, 8), "int8", 2, 2),
    "maxpool_dil": lambda: pool_task("max", (1, 2, 9, 10), "float32", 2, 1, 0, 2),
    "avgpool": lambda: pool_task("avg", (1, 3, 8, 8), "float32", 3, 1, 1),
    "global_avg": lambda: pool_task("global_avg", (2, 3, 5, 5)),
    "softmax": lambda: softmax_task(5, 37),
}


@pytest.fixture(autouse=True, scope="module")
def _private_cache(tmp_path_factory):
    """Compiled objects go to a fresh folder, so tests never depend on an old cache."""
    mp = pytest.MonkeyPatch()
    mp.setenv("VTALAB_CACHE", str(tmp_path_factory.mktemp("vtalab-cache")))
    yield
    mp.undo()


def _points(task, n=12):
    space = task.impl.space(task)
    pts = space.points()
    return pts if len(pts) <= n else space.sample(np.random.default_rng(0), n)


def _check(got, want):
    assert got.shape == want.shape and got.dtype == want.dtype
    if want.dtype.kind == "f":
        np.testing.assert_allclose(got, want, rtol=1e-5)
    else:
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_every_point_matches_the_reference(name):
    task = TASKS[name]()
    tpl = task.impl
    inputs = tpl.inputs(task, seed=1)
    want = tpl.reference(task, inputs)
    for point in _points(task, 20 if name == "conv_f32" else 12):
        _check(tpl.build(task, point)(inputs), want)


def _untuned(name, task, inputs):
    """(PrimFunc, output) of the public kernel with knobs=None."""
    a = task.args
    if name.startswith("conv"):
        k = cpu.conv2d_nchw_kernel(a["x"], a["w"], a["dtype"], a["stride"], a["pads"],
                                   a["dilation"], a["groups"], a["bias"], a["relu"])
        out = cpu.conv2d(inputs["x"], inputs["w"], inputs.get("bias"), a["stride"], a["pads"],
                         a["dilation"], a["groups"], a["relu"])
    elif name.startswith("dense"):
        k = cpu.dense_kernel(a["M"], a["K"], a["N"], cpu.dense_block(a["N"]), a["dtype"],
                             a["bias"], a["relu"])
        out = cpu.dense(inputs["x"], inputs["w"], inputs.get("bias"), a["relu"])
    elif name == "global_avg":
        k = cpu.global_pool_kernel("avg", tuple(a["x"]), a["dtype"])
        out = cpu.global_avg_pool(inputs["x"])
    elif name == "softmax":
        k = cpu.softmax_kernel(a["rows"], a["cols"])
        out = cpu.softmax(inputs["x"])
    else:
        args = (tuple(a["kernel"]), tuple(a["stride"]), tuple(a["pads"]), tuple(a["dilation"]))
        k = cpu.pool2d_kernel(a["kind"], tuple(a["x"]), a["dtype"], *args,
                              a["kind"] == "max" or a["count_include_pad"], None)
        fn = cpu.max_pool2d if a["kind"] == "max" else cpu.avg_pool2d
        out = fn(inputs["x"], a["kernel"], a["stride"], a["pads"], *(
            [a["dilation"]] if a["kind"] == "max" else [a["count_include_pad"]]))
    return k.func, out


@pytest.mark.parametrize("name", sorted(TASKS))
def test_default_point_is_the_heuristic(name):
    task = TASKS[name]()
    tpl = task.impl
    default = tpl.default(task)
    space = tpl.space(task)
    assert space.valid(default) and default in space.points()
    inputs = tpl.inputs(task, seed=2)
    func, untuned = _untuned(name, task, inputs)
    assert func_fingerprint(func) == func_fingerprint(tpl.func(task, default))
    np.testing.assert_array_equal(tpl.build(task, default)(inputs), untuned)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_spaces_and_tasks_are_deterministic(name):
    a, b = TASKS[name](), TASKS[name]()
    assert a.key == b.key and a.target == Target.host(None).fingerprint()
    assert a.impl.space(a).points() == b.impl.space(b).points()
    assert a.impl.default(a) == b.impl.default(b)
    inputs_a, inputs_b = a.impl.inputs(a, seed=3), b.impl.inputs(b, seed=3)
    assert all(np.array_equal(inputs_a[k], inputs_b[k]) for k in inputs_a)


def test_conv_knobs_change_the_generated_code():
    from vtalab.compiler.llvm import llvm_ir
    task = TASKS["conv_f32"]()
    tpl = task.impl
    base = tpl.default(task)
    other = dict(base, oc_tile=2, order="oh_oc", par_depth=2, unroll_kw=False)
    assert tpl.space(task).valid(other)
    fa, fb = tpl.func(task, base), tpl.func(task, other)
    assert func_fingerprint(fa) != func_fingerprint(fb)
    assert llvm_ir(fa) != llvm_ir(fb)


def test_bad_knobs_are_rejected():
    x, w = np.zeros((1, 8, 6, 6), "float32"), np.zeros((8, 8, 3, 3), "float32")
    with pytest.raises(ScheduleError, match="oc_tile must be a positive divisor of 8, not 3"):
        cpu.conv2d(x, w, knobs={"oc_tile": 3})
    with pytest.raises(ScheduleError, match="conv2d knobs must be among"):
        cpu.conv2d(x, w, knobs={"tile": 4})
    with pytest.raises(ScheduleError, match="softmax lanes must be a positive int"):
        cpu.softmax(np.zeros((2, 8), "float32"), knobs={"lanes": 0})
    with pytest.raises(ScheduleError, match="dense lanes must be a positive divisor of 8"):
        cpu.dense(np.zeros((1, 4), "float32"), np.zeros((8, 4), "float32"),
                  knobs={"block": 8, "lanes": 3})
    with pytest.raises(CompileError, match="pool kind must be one of"):
        pool_task("min", (1, 1, 4, 4))


def test_features_are_deterministic():
    if importlib.util.find_spec("vtalab.compiler.tune.features") is None:
        pytest.skip("compiler/tune/features.py is not there yet")
    for name in ("conv_f32", "dense_f32", "maxpool_sep", "avgpool", "global_avg", "softmax"):
        task = TASKS[name]()
        point = task.impl.default(task)
        first = task.impl.features(task, point)
        assert first == task.impl.features(TASKS[name](), point)
        assert first and all(isinstance(v, float) for v in first.values())
    task = TASKS["conv_f32"]()
    other = dict(task.impl.default(task), oc_tile=1, lanes=4)
    assert task.impl.features(task, other) != task.impl.features(task, task.impl.default(task))


def _node(op, n_in=2, **attrs):
    return Node("n", op, tuple(f"i{k}" for k in range(n_in)), ("y",), attrs)


def test_graph_nodes_map_to_tasks():
    f32 = lambda *s: TensorType(s, "float32")  # noqa: E731
    conv = _node("conv2d", 3, strides=(2, 2), pads=(1, 1, 1, 1))
    got = cpu_tasks_of(conv, [f32(1, 4, 9, 9), f32(8, 4, 3, 3), f32(8)])
    assert got == conv2d_task((1, 4, 9, 9), (8, 4, 3, 3), "float32", 2, 1, bias=True)
    qconv = _node("qconv2d", 3)
    got = cpu_tasks_of(qconv, [TensorType((1, 4, 5, 5), "int8"),
                               TensorType((8, 4, 1, 1), "int8"), TensorType((8,), "int32")])
    assert got == conv2d_task((1, 4, 5, 5), (8, 4, 1, 1), "int8")
    assert cpu_tasks_of(_node("dense", 2), [f32(2, 16), f32(10, 16), None]) == dense_task(2, 16, 10)
    pool = _node("max_pool", 1, kernel=(3, 3), strides=(2, 2), pads=(1, 1, 1, 1))
    assert cpu_tasks_of(pool, [f32(1, 4, 8, 8)]) == pool_task("max", (1, 4, 8, 8), "float32",
                                                              3, 2, 1)
    assert cpu_tasks_of(_node("global_avg_pool", 1), [f32(1, 4, 3, 3)]) == \
        pool_task("global_avg", (1, 4, 3, 3))
    assert cpu_tasks_of(_node("softmax", 1, axis=-1), [f32(2, 3, 10)]) == softmax_task(6, 10)
    assert cpu_tasks_of(_node("softmax", 1, axis=1), [f32(2, 3, 10)]) is None
    assert cpu_tasks_of(_node("relu", 1), [f32(2, 3)]) is None
    assert cpu_tasks_of(_node("max_pool", 1, kernel=(2, 2), ceil_mode=1), [f32(1, 1, 5, 5)]) \
        is None


def test_tuned_knobs_reach_the_node_kernel(tmp_path):
    from vtalab.compiler.exec.cpu_ops import cpu_kernel
    from vtalab.compiler.tune.apply import ApplyBest
    node = _node("conv2d", 2, pads=(1, 1, 1, 1))
    types = [TensorType((1, 8, 10, 12), "float32"), TensorType((8, 8, 3, 3), "float32")]
    task = cpu_tasks_of(node, types)
    tuned = dict(task.impl.default(task), oc_tile=4, lanes=8, order="oh_oc")
    log = TuningLog(tmp_path / "tune.jsonl")
    log.append(make_record(task, tuned, "cpu", 1e-6, None))
    log.append(make_record(task, task.impl.default(task), "cpu", 2e-6, None))
    inputs = task.impl.inputs(task, seed=4)
    with ApplyBest(tmp_path / "tune.jsonl") as best:
        kernel = cpu_kernel(node, types)
    assert kernel.impl == "llvm" and kernel.fn.keywords == {"knobs": tuned}
    assert list(best.used) == [task.key]
    _check(kernel(inputs["x"], inputs["w"]), task.impl.reference(task, inputs))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not hasattr(cpu_kernel(node, types).fn, "keywords")      # no context: heuristic
