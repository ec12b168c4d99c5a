"""ONNX's backend node tests against vtalab's float path.

    cases = node_cases()                     # generated once per onnx version, then cached
    result = run_case(cases["test_relu"])    # Result(status="pass" | "fail" | ...)

The installed `onnx` ships the node tests' generators, not their data:
`onnx.backend.test.case.node.collect_testcases()` builds each case's model and inputs /
expected outputs. They are written once in ONNX's standard layout (`<test>/model.onnx`,
`test_data_set_0/input_*.pb`, `output_*.pb`) under `$VTALAB_CACHE/onnx-node/<onnx
version>/` (default `~/.cache/vtalab`), with a manifest, so later runs only read files.

A case runs the float path twice: the float reference interpreter on the imported graph,
and the CPU kernels (numpy, LLVM where an op has one) on the graph compiled with
`quantize=False`. vtalab compiles static shapes, so a model is specialised to its case:
dynamic input dimensions take the data's sizes (`load_onnx(input_shapes=...)`), and graph
inputs that feed a shape-determining input (the converters' `static_inputs`, e.g. a
Reshape's shape) are bound to the case's values (`load_onnx(constant_inputs=...)`).

Statuses: "pass"; "fail" (a wrong result, or an error while running); "unsupported" (the
importer refused the model with a clear VtaError naming op / attribute / dtype); "crash"
(any other exception: a bug).
"""
from __future__ import annotations

import fcntl
import json
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from vtalab.spec.errors import VtaError
from vtalab.util import cache_dir

STATUSES = ("pass", "fail", "unsupported", "crash")

#: the operators the compiler-breadth issue (vision and transformer models) asks for
ISSUE_OPS = tuple("""Resize LayerNormalization Gelu Erf Div Sqrt Exp Log Sigmoid Tanh HardSigmoid
    HardSwish LeakyRelu Max Min Sum ReduceMean ReduceMax Slice Split Squeeze Unsqueeze Pad Cast
    Equal Less Greater LessOrEqual GreaterOrEqual ConvTranspose MatMul Gemm Where Expand Gather
    Shape ConstantOfShape Pow Neg Abs Reciprocal Mean ReduceSum ReduceL2 ArgMax Tile
    DepthToSpace SpaceToDepth InstanceNormalization GroupNormalization Einsum QuantizeLinear
    DequantizeLinear Flatten Dropout AveragePool Constant""".split())


@dataclass(frozen=True)
class Case:
    name: str
    op: str                  # the ONNX op under test
    path: Path               # folder with model.onnx and test_data_set_*
    rtol: float
    atol: float
    skip: str = ""           # why its data could not be stored (sequences, optionals)

    def model(self):
        import onnx
        return onnx.load(str(self.path / "model.onnx"))

    def data_sets(self):
        """[(inputs, outputs)] as lists of arrays in model input / output order."""
        from onnx import TensorProto, numpy_helper
        sets = []
        for folder in sorted(self.path.glob("test_data_set_*")):
            pair = []
            for kind in ("input", "output"):
                arrays = []
                for k in range(len(list(folder.glob(f"{kind}_*.pb")))):
                    tensor = TensorProto()
                    tensor.ParseFromString((folder / f"{kind}_{k}.pb").read_bytes())
                    arrays.append(numpy_helper.to_array(tensor))
                pair.append(arrays)
            sets.append(tuple(pair))
        return sets


@dataclass
class Result:
    name: str
    op: str
    status: str
    detail: str = ""
    paths: dict = field(default_factory=dict)   # "reference" / "cpu" -> "ok" or a reason


def cache_root() -> Path:
    import onnx
    return cache_dir("onnx-node", onnx.__version__)


def _op_under_test(name: str, model) -> str:
    ops = [n.op_type for n in model.graph.node]
    return ops[0] if len(set(ops)) == 1 else ""


def _tensor_bytes(value) -> bytes:
    from onnx import TensorProto, numpy_helper
    if isinstance(value, TensorProto):
        return value.SerializeToString()
    if isinstance(value, np.generic):
        value = np.asarray(value)
    if not isinstance(value, np.ndarray):
        raise TypeError(f"a {type(value).__name__}, not a tensor")
    return numpy_helper.from_array(value).SerializeToString()


def _write_case(root: Path, case) -> dict:
    import onnx
    entry = {"name": case.name, "op": _op_under_test(case.name, case.model),
             "rtol": case.rtol, "atol": case.atol}
    folder = root / case.name
    folder.mkdir(parents=True, exist_ok=True)
    onnx.save(case.model, str(folder / "model.onnx"))
    try:
        for k, (inputs, outputs) in enumerate(case.data_sets or ()):
            data = folder / f"test_data_set_{k}"
            data.mkdir(exist_ok=True)
            for kind, values in (("input", inputs), ("output", outputs)):
                for i, value in enumerate(values):
                    (data / f"{kind}_{i}.pb").write_bytes(_tensor_bytes(value))
    except (TypeError, ValueError, NotImplementedError) as exc:
        entry["skip"] = f"its data are not all tensors ({exc})"
    return entry


def generate(root: Path | None = None) -> Path:
    """Write every node test case once (about 20 s); returns the manifest's path. The
    manifest is written last; until it exists, writers take a lock beside ``root`` (test
    workers of a fresh cache would otherwise write the same files at once and read each
    other's half-written models)."""
    root = root or cache_root()
    manifest = root / "manifest.json"
    if manifest.is_file():
        return manifest
    root.parent.mkdir(parents=True, exist_ok=True)
    with open(root.parent / f".{root.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not manifest.is_file():                  # not written by another meanwhile
            _write_cases(root, manifest)
    return manifest


def _write_cases(root: Path, manifest: Path) -> None:
    from onnx.backend.test.case.node import collect_testcases
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cases = collect_testcases()
    entries = []
    for case in cases:
        if case.kind == "node" and case.model is not None:
            entries.append(_write_case(root, case))
    singles = {e["name"]: e["op"] for e in entries}
    for e in entries:           # an expanded function test belongs to its operator's test
        if not e["op"] and "_expanded" in e["name"]:
            e["op"] = singles.get(re.sub(r"_expanded.*$", "", e["name"]), "")
    tmp = manifest.with_suffix(".tmp")
    tmp.write_text(json.dumps(entries, indent=0))
    tmp.replace(manifest)


def node_cases(root: Path | None = None) -> dict[str, Case]:
    root = root or cache_root()
    entries = json.loads(generate(root).read_text())
    return {e["name"]: Case(e["name"], e["op"] or "(several)", root / e["name"], e["rtol"],
                            e["atol"], e.get("skip", "")) for e in entries}


# ---- running one case ----------------------------------------------------------------------
def static_inputs(model) -> set[str]:
    """Graph inputs whose values determine a shape: those feeding, directly or through
    other nodes (which then fold to constants), an input position a converter needs as a
    constant."""
    from ..graph.opdef import REGISTRY, onnx_ops
    onnx_ops()
    graph_inputs = {i.name for i in model.graph.input} - \
        {i.name for i in model.graph.initializer}
    needed: set[str] = set()
    for node in model.graph.node:
        converter = REGISTRY.onnx.get(node.op_type)
        for index in converter.static_inputs if converter else ():
            if index < len(node.input) and node.input[index]:
                needed.add(node.input[index])
    for node in reversed(model.graph.node):
        if any(out in needed for out in node.output):
            needed.update(v for v in node.input if v)
    return needed & graph_inputs


def _compare(got: np.ndarray, want: np.ndarray, rtol: float, atol: float) -> str:
    if got.shape != want.shape:
        return f"shape {got.shape} != expected {want.shape}"
    if got.dtype != want.dtype:
        return f"dtype {got.dtype} != expected {want.dtype}"
    low_float = want.dtype.kind == "V" and want.dtype.name.startswith(("float", "bfloat"))
    if want.dtype.kind not in "fc" and not low_float:
        return "" if np.array_equal(got, want) else "values differ (exact dtype)"
    try:
        np.testing.assert_allclose(got.astype(np.float64), want.astype(np.float64),
                                   rtol=rtol, atol=atol, equal_nan=True)
    except AssertionError as exc:
        return "values differ: " + " ".join(str(exc).split())[:200]
    return ""


def _check(outputs: list, expected: list, rtol: float, atol: float) -> str:
    for k, (got, want) in enumerate(zip(outputs, expected)):
        problem = _compare(np.asarray(got), np.asarray(want), rtol, atol)
        if problem:
            return f"output {k}: {problem}"
    return ""


def _paths(graph, feeds, cpu_paths):
    from ..graph import compile_graph, run
    from .cpu_ops import llvm_available, run_cpu
    yield "reference", run(graph, feeds)
    final = compile_graph(graph, quantize=False)
    for prefer in cpu_paths:
        if prefer == "llvm" and not llvm_available():
            continue
        yield f"cpu/{prefer}", run_cpu(final, feeds, prefer=prefer)


def run_case(case: Case, cpu_paths=("numpy", "llvm")) -> Result:
    """Import, run on the float paths (the reference interpreter, then the graph compiled
    with quantize=False on the CPU kernels: numpy ones, and LLVM ones where an op has one)
    and compare; never raises (a crash is a status)."""
    from ..graph import load_onnx
    result = Result(case.name, case.op, "pass")
    if case.skip:
        return Result(case.name, case.op, "unsupported", f"tensors only: {case.skip}")
    try:
        model = case.model()
        sets = case.data_sets()
        inputs, expected = sets[0]
        names = [i.name for i in model.graph.input
                 if i.name not in {t.name for t in model.graph.initializer}]
        values = dict(zip(names, inputs))
        frozen = {n: values[n] for n in static_inputs(model) if n in values}
        shapes = {n: np.shape(v) for n, v in values.items()}   # dynamic dims: the data's
        graph = load_onnx(model, input_shapes=shapes, constant_inputs=frozen)
    except VtaError as exc:
        return Result(case.name, case.op, "unsupported", str(exc))
    except Exception as exc:  # noqa: BLE001 - a crash is a result here
        return Result(case.name, case.op, "crash", f"import: {type(exc).__name__}: {exc}")
    feeds = {n: v for n, v in values.items() if n in graph.inputs}
    try:
        with np.errstate(all="ignore"):
            for path, outputs in _paths(graph, feeds, cpu_paths):
                problem = _check([outputs[v] for v in graph.outputs], expected, case.rtol,
                                 case.atol)
                result.paths[path] = problem or "ok"
                if problem:
                    result.status, result.detail = "fail", f"{path}: {problem}"
                    return result
    except VtaError as exc:
        result.status, result.detail = "fail", f"run: {exc}"
    except Exception as exc:  # noqa: BLE001
        result.status, result.detail = "crash", f"run: {type(exc).__name__}: {exc}"
    return result
