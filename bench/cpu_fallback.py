"""CPU fallback kernels (loop IR -> LLVM) next to numpy and onnxruntime, 1 and 2 threads.

Rows: ResNet-18's conv1 (1x3x224x224, 64 filters 7x7/2 pad 3) and a 3x3 56x56x64 conv,
dense 512->1000, max-pool 3x3/2, global average pool, softmax. numpy computes conv by
im2col + one BLAS matmul. Constant weights are packed once, outside the timing, as
onnxruntime does at session creation. Prints a table, then JSON; ``call us`` is what a
Python call adds to the compiled kernel (argument checks and ctypes), measured apart.

    python bench/cpu_fallback.py [--json out.json] [--quick]
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np

from vtalab.util import blas_threads


def best_ms(fns, budget_s: float, rounds: int = 7) -> list[float]:
    """Best batch-mean milliseconds of each function, measured in interleaved rounds so
    that every contestant sees the same background load (this machine is shared)."""
    reps = []
    for fn in fns:
        fn()
        fn()
        t0 = time.perf_counter()
        fn()
        one = max(time.perf_counter() - t0, 1e-6)
        reps.append(max(1, int(budget_s / rounds / one)))
    best = [float("inf")] * len(fns)
    for _ in range(rounds):
        for k, (fn, n) in enumerate(zip(fns, reps)):
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best[k] = min(best[k], (time.perf_counter() - t0) / n)
    return [b * 1e3 for b in best]


def call_overhead_us(kernel, kargs, budget: float):
    """Microseconds a Python call adds to the compiled entry point (argument checks, ctypes
    conversion), both on one thread: ``kernel(*arrays)`` minus a direct ctypes call. Only
    for kernels under 0.1 ms (None above: the difference drowns in the kernel's noise)."""
    ptrs = kernel._pointers(kargs)
    call, raw = best_ms([lambda: kernel(*kargs, threads=1),
                         lambda: kernel._main(*ptrs, 0, 0)], budget / 2)
    return max(0.0, (call - raw) * 1e3) if raw < 0.1 else None


# ---- numpy baselines ---------------------------------------------------------------------

def np_conv(x, w, stride, pad):
    N, C, H, W = x.shape
    OC, _, KH, KW = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    OH, OW = (H + 2 * pad - KH) // stride + 1, (W + 2 * pad - KW) // stride + 1
    s = xp.strides
    cols = np.lib.stride_tricks.as_strided(
        xp, (N, C, KH, KW, OH, OW), (s[0], s[1], s[2], s[3], s[2] * stride, s[3] * stride))
    cols = cols.reshape(N, C * KH * KW, OH * OW)
    return (w.reshape(OC, -1) @ cols).reshape(N, OC, OH, OW)


def np_maxpool(x, k=3, stride=2, pad=1):
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)), constant_values=-np.inf)
    OH = (x.shape[2] + 2 * pad - k) // stride + 1
    OW = (x.shape[3] + 2 * pad - k) // stride + 1
    out = xp[:, :, 0:stride * OH:stride, 0:stride * OW:stride].copy()
    for i in range(k):
        for j in range(k):
            np.maximum(out, xp[:, :, i:i + stride * OH:stride, j:j + stride * OW:stride], out=out)
    return out


def np_softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    e /= e.sum(-1, keepdims=True)
    return e


# ---- onnxruntime -------------------------------------------------------------------------

def ort_session(op, x, inits, threads, **attrs):
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper
    node = helper.make_node(op, ["x"] + list(inits), ["y"], **attrs)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    feed = {"x": x}
    return lambda: sess.run(None, feed)[0]


# ---- rows --------------------------------------------------------------------------------

def rows(rng):
    from vtalab.compiler import cpu
    f = lambda *s: rng.standard_normal(s).astype("float32")  # noqa: E731
    for name, xs, ws, s, p in (("conv2d 1x3x224x224 64x7x7/2", (1, 3, 224, 224), (64, 3, 7, 7), 2, 3),
                               ("conv2d 1x64x56x56 64x3x3/1", (1, 64, 56, 56), (64, 64, 3, 3), 1, 1)):
        x, w = f(*xs), f(*ws)
        k = cpu.conv2d_nchw_kernel(xs, ws, "float32", s, p)
        out = np.empty(k.plan.params[-1].shape, "float32")
        yield (name, "conv", k, (x, w, out), out, lambda x=x, w=w, s=s, p=p: np_conv(x, w, s, p),
               ("Conv", x, {"w": w}, dict(strides=[s, s], pads=[p] * 4)))
    x, w = f(1, 512), f(1000, 512)
    nb = cpu.dense_block(1000)
    k = cpu.dense_kernel(1, 512, 1000, nb)
    wp = cpu.pack_dense_weight(w, nb)
    out = np.empty((1, 1000 // nb, nb), "float32")
    yield ("dense 1x512 -> 1000", "dense", k, (x, wp, out), out.reshape(1, 1000),
           lambda: x @ w.T, ("Gemm", x, {"w": w}, dict(transB=1)))
    x = f(1, 64, 112, 112)
    k = cpu.pool2d_kernel("max", x.shape, "float32", (3, 3), (2, 2), (1, 1, 1, 1), (1, 1), True, None)
    out = np.empty((1, 64, 56, 56), "float32")
    yield ("max-pool 3x3/2 1x64x112x112", "pool", k, (x, out), out, lambda: np_maxpool(x),
           ("MaxPool", x, {}, dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)))
    for shape in ((1, 512, 7, 7), (8, 256, 28, 28)):
        x = f(*shape)
        k = cpu.global_pool_kernel("avg", shape, "float32")
        out = np.empty(shape[:2], "float32")
        yield (f"global avg pool {'x'.join(map(str, shape))}", "pool", k,
               (x.reshape(shape[0], shape[1], -1), out), out.reshape(*shape[:2], 1, 1),
               lambda x=x: x.mean((2, 3), keepdims=True), ("GlobalAveragePool", x, {}, {}))
    for shape in ((1, 1000), (64, 1000)):
        x = f(*shape) * 4
        k = cpu.softmax_kernel(*shape)
        out = np.empty(shape, "float32")
        yield (f"softmax {shape[0]}x{shape[1]}", "softmax", k, (x, out), out,
               lambda x=x: np_softmax(x), ("Softmax", x, {}, dict(axis=-1)))


def _us(value) -> str:
    return f"{value:7.2f}" if value is not None else f"{'-':>7s}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", help="also write the JSON result here")
    ap.add_argument("--quick", action="store_true", help="shorter timing (noisier)")
    args = ap.parse_args(argv)
    budget = 0.15 if args.quick else 0.5
    results = []
    for name, kind, kernel, kargs, out, np_fn, ort_spec in rows(np.random.default_rng(0)):
        kernel(*kargs)
        want = np_fn()
        ok = bool(np.allclose(out, want, rtol=1e-3, atol=1e-3))
        op, x, inits, attrs = ort_spec
        overhead = call_overhead_us(kernel, kargs, budget)
        for threads in (1, 2):
            ort_fn = ort_session(op, x, inits, threads, **attrs)
            with blas_threads(threads):
                ours, base, onnx = best_ms([lambda: kernel(*kargs, threads=threads), np_fn,
                                            ort_fn], budget)
            results.append(dict(row=name, kind=kind, threads=threads, ok=ok, vtalab_ms=ours,
                                numpy_ms=base, ort_ms=onnx, vs_numpy=base / ours,
                                vs_ort=onnx / ours, call_overhead_us=overhead))
            print(f"  {name} x{threads}: {ours:.3f} ms", file=sys.stderr)
    head = (f"{'row':32s} {'thr':>3s} {'ok':>4s} {'vtalab ms':>10s} {'numpy ms':>9s} "
            f"{'ort ms':>8s} {'x numpy':>8s} {'x ort':>6s} {'call us':>7s}")
    print(head)
    print("-" * len(head))
    for r in results:
        print(f"{r['row']:32s} {r['threads']:>3d} {str(r['ok']):>4s} {r['vtalab_ms']:10.3f} "
              f"{r['numpy_ms']:9.3f} {r['ort_ms']:8.3f} {r['vs_numpy']:8.2f} {r['vs_ort']:6.2f} "
              f"{_us(r['call_overhead_us'])}")
    print(json.dumps(results, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0 if all(r["ok"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
