"""Models users bring: torchvision's architectures (random weights, written with torch.nn
layer for layer: vtalab/compiler/models/torch_*.py) exported by torch.onnx at opset 17 and at
the newest opset its exporter takes, and two models quantised by onnxruntime's
quantize_static (QDQ). Per model: export and compile time, the float path against
onnxruntime, the int8 path (calibrated on 8 random inputs) on the functional simulator
against the int8 reference (bit_exact: every integer value end to end; floats_exact: every
float value between int8 steps too, where a last-bit difference would flip a later rounding;
steps_bit_exact: every integer result given that run's own inputs of its node) and its
cosine against onnxruntime, where the nodes ran and the share of MACs on the accelerator.
Prints a table, then JSON.

    python bench/models.py [--size 224] [--models resnet50 vit_4l ...] [--opsets 17 22]
                           [--no-qdq] [--json out.json]
"""
from __future__ import annotations

import argparse
import collections
import json
import sys
import time
import warnings

import numpy as np

CNNS = ("resnet50", "mobilenet_v2", "mobilenet_v3_small", "efficientnet_b0", "squeezenet1_1",
        "shufflenet_v2_x1_0", "densenet121", "vgg11")
MODELS = CNNS + ("vit_4l",)
QDQ = ("resnet50", "mobilenet_v2")


def build(name: str, size: int):
    from vtalab.compiler.models import torch_cnn, torch_vit
    if name == "vit_4l":
        return torch_vit.vit(4, image=size)
    return torch_cnn.build(name)


def cosine(a, b) -> float:
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def ort_run(model, x):
    import onnxruntime as ort
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def placement(module) -> dict:
    counts = collections.Counter(s.target for s in module.steps)
    return {"accel_steps": counts["accel"], "cpu_steps": counts["cpu"]}


def int8_row(graph, model, samples, x, config) -> dict:
    from vtalab.compiler.exec import compile_model
    from vtalab.compiler.graph import run_int8
    from vtalab.compiler.graph.int8_ref import int8_step_mismatches
    start = time.perf_counter()
    module = compile_model(graph, config, calibration=samples)
    compile_s = time.perf_counter() - start
    outputs, profile = module.run(x, keep=True)
    reference = run_int8(module.graph, x, keep_all=True)
    same = {v: np.array_equal(outputs[v], a) for v, a in reference.items() if v in outputs}
    exact = all(same[v] for v in same if reference[v].dtype.kind in "iu")
    floats_exact = all(same[v] for v in same if reference[v].dtype.kind == "f")
    totals = profile.totals()
    out = outputs[module.outputs[0]]
    steps = int8_step_mismatches(module.graph, outputs)
    return {"int8_compile_s": round(compile_s, 2), "bit_exact": bool(exact),
            "floats_exact": bool(floats_exact), "steps_bit_exact": not steps,
            "int8_cosine": round(cosine(out, ort_run(model, x)), 5),
            "accel_mac_share": round(totals["accel_macs"] / max(totals["macs"], 1), 4),
            "fsim_s": round(profile.seconds, 2), **placement(module)}


def float_row(graph, model, x, config) -> dict:
    from vtalab.compiler.exec import compile_model
    start = time.perf_counter()
    module = compile_model(graph, config, quantize=False)
    compile_s = time.perf_counter() - start
    got = module.run(x)[0][module.outputs[0]]
    want = ort_run(model, x)
    return {"float_compile_s": round(compile_s, 2),
            "float_rel_err": float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-12))}


def model_row(name, opset, size, config) -> dict:
    from vtalab.compiler.graph import load_onnx
    from vtalab.compiler.models import random_samples
    from vtalab.compiler.torch_import import export_onnx
    shape = (1, 3, size, size)
    x = random_samples(shape, 1, 99)[0]
    row = {"model": name, "opset": opset}
    try:
        start = time.perf_counter()
        model = export_onnx(build(name, size), (x,), opset)
        graph = load_onnx(model)
        row["import_s"] = round(time.perf_counter() - start, 2)
        row.update(float_row(graph, model, x, config))
        row.update(int8_row(graph, model, random_samples(shape, 8, 1), x, config))
    except Exception as exc:  # a model that does not make it: the row says why
        row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    return row


def qdq_row(name, size, config) -> dict:
    """A model quantised by onnxruntime (QDQ): vtalab runs it; both agree."""
    from vtalab.compiler.exec import compile_model
    from vtalab.compiler.models import quantize_with_onnxruntime, random_samples
    from vtalab.compiler.torch_import import export_onnx
    shape = (1, 3, size, size)
    x = random_samples(shape, 1, 98)[0]
    row = {"model": f"{name} (onnxruntime QDQ)", "opset": 17}
    try:
        float_model = export_onnx(build(name, size), (x,), 17)
        qdq = quantize_with_onnxruntime(float_model, random_samples(shape, 8, 2))
        start = time.perf_counter()
        module = compile_model(qdq, config)
        row["int8_compile_s"] = round(time.perf_counter() - start, 2)
        outputs, profile = module.run(x)
        row["qdq_cosine_vs_ort"] = round(cosine(outputs[module.outputs[0]], ort_run(qdq, x)), 5)
        totals = profile.totals()
        row["accel_mac_share"] = round(totals["accel_macs"] / max(totals["macs"], 1), 4)
        row.update(placement(module))
    except Exception as exc:
        row["error"] = f"{type(exc).__name__}: {str(exc)[:300]}"
    return row


def print_table(rows) -> None:
    cols = ("model", "opset", "import_s", "float_compile_s", "float_rel_err", "int8_compile_s",
            "bit_exact", "floats_exact", "steps_bit_exact", "int8_cosine", "qdq_cosine_vs_ort",
            "accel_mac_share", "accel_steps", "cpu_steps", "fsim_s")
    print("  ".join(f"{c:>14}" for c in cols))
    for r in rows:
        cells = []
        for c in cols:
            v = r.get(c, "")
            cells.append(f"{v:>14.2e}" if c == "float_rel_err" and v != "" else f"{str(v):>14}")
        print("  ".join(cells) + (f"   ERROR {r['error']}" if "error" in r else ""))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=224)
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=MODELS)
    parser.add_argument("--opsets", nargs="*", type=int, default=[17, 22])
    parser.add_argument("--config", default="default")
    parser.add_argument("--no-qdq", action="store_true")
    parser.add_argument("--json", help="write the JSON here (default: print it)")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    rows = []
    for name in args.models:
        for opset in args.opsets:
            rows.append(model_row(name, opset, args.size, args.config))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    if not args.no_qdq:
        for name in QDQ:
            rows.append(qdq_row(name, args.size, args.config))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print_table(rows)
    text = json.dumps({"size": args.size, "config": args.config, "rows": rows}, indent=1)
    if args.json:
        with open(args.json, "w") as f:
            f.write(text)
    else:
        print(text)
    return 1 if any("error" in r for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
