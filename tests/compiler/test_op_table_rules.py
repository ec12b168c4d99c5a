"""What an operator is comes from the op table, never from its name. The rules that used to
test op-name strings read fields of the op's definition: what batch-norm / bias folding
folds into an op (`folds`), the GEMM of a fused op (`base_op`), its accelerator lowering
(`lower`, also which nodes the module lowers), the LLVM pooling kernels (one per op), the
quantiser's residual add (`epilogue`), and chains of nodes run as one (`runs_body`).

An AST check keeps op-name tests out of the files that held those rules; ops defined only
here, under names no name rule could guess, go through each of them (the `define`
fixture: tests/compiler/conftest.py)."""
import ast
from pathlib import Path

import numpy as np
import pytest

import vtalab.compiler
from vtalab.compiler.graph import GraphBuilder, canonicalize, run, run_int8
from vtalab.compiler.graph import kernels_int as I
from vtalab.compiler.graph import kernels_llvm as L
from vtalab.compiler.graph import lowerings
from vtalab.compiler.graph import tune_tasks as T
from vtalab.compiler.graph.int8_ref import run_node
from vtalab.compiler.graph.ir import Node, TensorType
from vtalab.compiler.graph.opdef import Gemm, OpDef
from vtalab.compiler.graph.opdefs.elementwise import broadcast_type
from vtalab.compiler.graph.opdefs.internal import infer_accel, infer_fused, int8_accel, \
    ref_fused
from vtalab.compiler.graph.opdefs.nn import infer_conv2d, infer_dense, macs_dense, \
    ref_conv, ref_dense
from vtalab.compiler.graph.opdefs.pool import infer_pool, ref_avg_pool, ref_max_pool
from vtalab.compiler.graph.passes import PassContext
from vtalab.compiler.graph.passes.fold_batch_norm import fold_batch_norm

COMPILER = Path(vtalab.compiler.__file__).parent
#: the files that held the rules, with the op names each may still test and why
CHECKED = {
    "graph/passes/fold_batch_norm.py": {"batch_norm", "reshape"},   # what it folds / crosses
    "graph/passes/quantize.py": {"pad"},                            # a pad's fill value
    "graph/opdefs/internal.py": set(),
    "graph/kernels_llvm.py": set(),
    "graph/kernels_int.py": set(),
    "graph/int8_ref.py": set(),
    "exec/lower.py": set(),
    "exec/module.py": set(),
    "exec/cpu_ops.py": set(),
}


def _is_op(expr) -> bool:
    return isinstance(expr, ast.Attribute) and expr.attr == "op" or \
        isinstance(expr, ast.Name) and expr.id == "op"


def _strings(expr) -> list[str]:
    items = expr.elts if isinstance(expr, (ast.Tuple, ast.List, ast.Set)) else [expr]
    return [e.value for e in items if isinstance(e, ast.Constant) and isinstance(e.value, str)]


def op_name_tests(source: str) -> set[str]:
    """The op names `source` compares an op to, and `.op...` for a look into an op's name
    (a method call such as startswith, or a slice)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare) and any(map(_is_op, [node.left, *node.comparators])):
            found.update(s for side in [node.left, *node.comparators] for s in _strings(side))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                _is_op(node.func.value):
            found.add(f".op.{node.func.attr}()")
        elif isinstance(node, ast.Subscript) and _is_op(node.value):
            found.add(".op[...]")
    return found


def test_the_check_sees_op_name_tests():
    source = ('if node.op in ("conv2d", "dense"): pass\n'
              'if n.op.startswith("accel_"): base = n.op[6:]\n'
              'if op == "max_pool" or d.op == other.op: pass\n')
    assert op_name_tests(source) == {"conv2d", "dense", ".op.startswith()", ".op[...]",
                                     "max_pool"}


@pytest.mark.parametrize("path", sorted(CHECKED))
def test_no_op_name_rules_where_the_op_table_answers(path):
    names = op_name_tests((COMPILER / path).read_text())
    assert names - CHECKED[path] == set(), f"{path} tests op names; read the op table"
    assert CHECKED[path] <= names, f"{path}: drop the allowance for {CHECKED[path] - names}"


def _gemm_ops(define):
    """A float GEMM op `affine_mm` whose fused int8 form on the accelerator is
    `mm_on_chip`, and `plus`, an addition: each only defined here."""
    define(OpDef("affine_mm", infer_dense, reference=ref_dense, int8=I.dense, quant="gemm",
                 macs=macs_dense, folds="bias", gemm=Gemm("mm_on_chip", "qdense")),
           OpDef("mm_on_chip", infer_accel, int8=int8_accel, int8_always=True,
                 quant="integer", macs=macs_dense, base_op="dense", lower=lowerings.dense,
                 tune=T.accel_dense),
           OpDef("plus", broadcast_type, reference=lambda n, a, b: a + b, int8=I.add,
                 elementwise=True, epilogue="add"))


def _residual_mlp():
    """x [16, 64] -> affine_mm -> plus(bias) -> relu = a -> affine_mm -> plus(a) -> relu."""
    rng = np.random.default_rng(5)
    b = GraphBuilder("mlp")
    x = b.add_input("x", (16, 64))
    w1 = b.add_const("w1", rng.normal(0, 0.15, (32, 64)).astype(np.float32))
    w2 = b.add_const("w2", rng.normal(0, 0.2, (32, 32)).astype(np.float32))
    bias = b.add_const("bias", rng.normal(0, 0.5, (32,)).astype(np.float32))
    h = b.op("plus", b.op("affine_mm", x, w1, name="mm1"), bias, name="bias_add")
    a = b.op("relu", h, name="act1")
    y = b.op("plus", b.op("affine_mm", a, w2, name="mm2"), a, name="residual")
    b.set_outputs([b.op("relu", y, name="act2")])
    return b.build()


def test_a_new_gemm_op_is_folded_quantised_fused_and_lowered(define):
    pytest.importorskip("onnx", reason="the executable module needs onnx")
    from vtalab.compiler.exec import compile_model
    _gemm_ops(define)
    graph = _residual_mlp()
    assert [n.op for n in canonicalize(graph).nodes] == \
        ["affine_mm", "relu", "affine_mm", "plus", "relu"]          # bias folded
    rng = np.random.default_rng(1)
    xs = [rng.normal(0, 1, (16, 64)).astype(np.float32) for _ in range(4)]
    module = compile_model(graph, "default", calibration=xs)
    accel = [s for s in module.steps if s.target == "accel"]
    assert [s.op for s in accel] == ["mm_on_chip", "mm_on_chip"]
    assert "residual" in accel[1].bindings                        # the residual add joined
    outputs, _ = module.run(xs[0])
    reference = run_int8(module.graph, xs[0])
    assert all(np.array_equal(outputs[v], reference[v]) for v in module.outputs)


@pytest.mark.parametrize("folds,ops", [("affine", ["conv_b"]),
                                       ("bias", ["conv_b", "mul", "add"])])
def test_what_folds_into_an_op_is_its_folds_field(define, folds, ops):
    define(OpDef("conv_b", infer_conv2d, reference=ref_conv, folds=folds))
    rng = np.random.default_rng(2)
    b = GraphBuilder("bn")
    x = b.add_input("x", (1, 4, 6, 6))
    w = b.add_const("w", rng.normal(0, 0.5, (8, 4, 3, 3)).astype(np.float32))
    params = [b.add_const(k, rng.uniform(0.5, 1.5, 8).astype(np.float32))
              for k in ("gamma", "beta", "mean", "var")]
    b.set_outputs([b.op("batch_norm", b.op("conv_b", x, w, name="conv"), *params,
                        name="bn")])
    graph = b.build()
    folded = fold_batch_norm(graph, PassContext())
    assert [n.op for n in folded.nodes] == ops
    feed = rng.normal(0, 1, (1, 4, 6, 6)).astype(np.float32)
    # float path: the folded weights round differently from conv then batch norm (a few
    # float32 ulps); the int8 path quantises the folded weights and is checked bit-exact
    np.testing.assert_allclose(run(folded, feed)[folded.outputs[0]],
                               run(graph, feed)[graph.outputs[0]], rtol=1e-5, atol=1e-5)


# max is exact; the average's float32 sum runs in the kernel's order, not numpy's pairwise
# one (a few ulps)
@pytest.mark.parametrize("kernel,reference,tol", [(L.max_pool, ref_max_pool, 0),
                                                  (L.avg_pool, ref_avg_pool, 1e-6)])
def test_a_pooling_op_runs_the_llvm_kernel_its_definition_names(define, kernel, reference, tol):
    pytest.importorskip("llvmlite", reason="the LLVM CPU kernels need llvmlite")
    from vtalab.compiler.exec.cpu_ops import cpu_kernel
    define(OpDef("window", infer_pool, reference=reference, llvm=kernel,
                 llvm_when=L.float_only))
    node = Node("pool", "window", ("x",), ("y",), {"kernel": (3, 3), "strides": (2, 2)})
    x = np.random.default_rng(3).normal(0, 1, (1, 2, 7, 7)).astype(np.float32)
    run_kernel = cpu_kernel(node, [TensorType(x.shape, "float32")])
    assert run_kernel.impl == "llvm"
    np.testing.assert_allclose(run_kernel(x), reference(node, x), rtol=tol, atol=tol)


def test_a_node_with_a_body_runs_it_on_the_cpu_and_in_the_int8_reference(define):
    from vtalab.compiler.exec.cpu_ops import cpu_kernel
    define(OpDef("chain", infer_fused, reference=ref_fused, quant="integer",
                 runs_body=True))
    body = (Node("s", "shr", ("$0",), ("%0",), {"amount": 2}),
            Node("c", "clip", ("%0",), ("%1",), {"lo": -3, "hi": 5}))
    node = Node("both", "chain", ("x",), ("y",), {"body": body})
    x = np.arange(-40, 40, 3, dtype=np.int32)
    want = np.clip(x >> 2, -3, 5)
    assert np.array_equal(run_node(node, x), want)
    assert np.array_equal(cpu_kernel(node, [TensorType(x.shape, "int32")])(x), want)
