"""CUDA fallback check: compile matmul and conv2d from the loop IR to PTX (LLVM NVPTX),
assemble with ptxas when present, run through the CUDA driver API, compare with numpy and
time. Prints a table and JSON. One command on a GPU machine:

    python bench/cuda_check.py            # --repeat 50, --json out.json
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def conv_ref(x, w, stride, pad):
    N, C, H, W = x.shape
    OC, _, KH, KW = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    OH, OW = (H + 2 * pad - KH) // stride + 1, (W + 2 * pad - KW) // stride + 1
    cols = np.lib.stride_tricks.sliding_window_view(xp, (KH, KW), axis=(2, 3))
    cols = cols[:, :, ::stride, ::stride][:, :, :OH, :OW]
    return np.einsum("nchwij,ocij->nohw", cols, w, optimize=True)


def cases():
    rng = np.random.default_rng(0)
    f = lambda *s: rng.standard_normal(s).astype("float32")  # noqa: E731
    yield ("matmul 1024x1024x1024", "matmul", dict(M=1024, K=1024, N=1024),
           (f(1024, 1024), f(1024, 1024)), lambda a, b: a @ b, 2 * 1024 ** 3)
    yield ("matmul 1x512 @ 512x1000", "matmul", dict(M=1, K=512, N=1000),
           (f(1, 512), f(512, 1000)), lambda a, b: a @ b, 2 * 512 * 1000)
    for name, xs, ws, s, p in (("conv2d resnet18 conv1 7x7/2", (1, 3, 224, 224), (64, 3, 7, 7), 2, 3),
                               ("conv2d 3x3 56x56x64", (1, 64, 56, 56), (64, 64, 3, 3), 1, 1)):
        oh = (xs[2] + 2 * p - ws[2]) // s + 1
        macs = ws[0] * ws[1] * ws[2] * ws[3] * oh * oh
        yield (name, "conv2d", dict(x_shape=xs, w_shape=ws, stride=s, padding=p),
               (f(*xs), f(*ws)), lambda x, w, s=s, p=p: conv_ref(x, w, s, p), 2 * macs)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=50)
    ap.add_argument("--json", help="also write the JSON result here")
    args = ap.parse_args(argv)
    from vtalab.compiler.llvm.cuda import CudaRunner, cuda_available, device_info
    from vtalab.compiler.llvm.cuda_ops import conv2d_cuda_func, matmul_cuda_func
    from vtalab.compiler.llvm.nvptx import assemble, build_cuda, find_ptxas
    from vtalab.compiler.target import CUDA_SMS, CudaTarget
    if not cuda_available():
        print("no CUDA driver/GPU on this machine: nothing to run", file=sys.stderr)
        return 2
    dev = device_info()
    sm = dev["sm"] if dev["sm"] in CUDA_SMS else 90
    ptxas = find_ptxas()
    rows = []
    for name, kind, params, inputs, ref, flops in cases():
        t0 = time.perf_counter()
        func = (matmul_cuda_func(params["M"], params["K"], params["N"]) if kind == "matmul"
                else conv2d_cuda_func(**params))
        mod = build_cuda(func, CudaTarget(sm))
        cubin = assemble(mod.ptx, mod.arch) if ptxas else None
        compile_s = time.perf_counter() - t0
        runner = CudaRunner(mod, cubin)
        out = np.zeros(mod.params[-1].shape, "float32")
        runner(*inputs, out)
        want = ref(*inputs)
        err = float(np.abs(out - want).max() / (np.abs(want).max() + 1e-30))
        ms = runner.time(*inputs, out, repeat=args.repeat)
        t0 = time.perf_counter()
        ref(*inputs)
        numpy_ms = (time.perf_counter() - t0) * 1e3
        rows.append(dict(case=name, ok=err < 1e-4, rel_err=err, gpu_ms=ms,
                         gflops=flops / ms / 1e6, numpy_ms=numpy_ms, compile_s=compile_s,
                         cubin=bool(cubin), kernels=len(mod.kernels)))
    print(f"device: {dev['name']} (sm_{dev['sm']}), PTX for sm_{sm}, ptxas: {ptxas or 'absent'}")
    head = f"{'case':32s} {'ok':>4s} {'rel err':>9s} {'GPU ms':>9s} {'GFLOP/s':>9s} {'numpy ms':>9s}"
    print(head)
    print("-" * len(head))
    for r in rows:
        print(f"{r['case']:32s} {str(r['ok']):>4s} {r['rel_err']:9.1e} {r['gpu_ms']:9.3f} "
              f"{r['gflops']:9.1f} {r['numpy_ms']:9.2f}")
    result = {"device": dev, "sm": sm, "ptxas": ptxas, "rows": rows}
    print(json.dumps(result, indent=1))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
