"""``vtalab demo``: ResNet-18 built in code, compiled for the accelerator, run on a device
backend (the functional simulator by default) and checked against onnxruntime (cosine
similarity, top-1) and bit for bit against the int8 reference (`run_resnet_demo`).

``vtalab demo --matmul``: a blocked int8 matmul with requantisation, built with the
runtime, run on a device backend and checked bit for bit against numpy (`run_demo`)."""
from __future__ import annotations

import time

import numpy as np

from vtalab.runtime import ProgramBuilder, open_device
from vtalab.runtime.workloads import BlockedMatmul, matmul_reference
from vtalab.spec import load_config


def run_demo(config="default", backend: str = "fsim", size=(64, 256, 256), seed: int = 0,
             vthreads: int = 2, echo=print) -> int:
    cfg = load_config(config)
    m, k, n = size
    rng = np.random.default_rng(seed)
    a = rng.integers(-128, 128, (m, k), dtype=np.int8)
    w = rng.integers(-128, 128, (n, k), dtype=np.int8)
    bias = rng.integers(-(1 << 14), 1 << 14, n, dtype=np.int32)
    shift = 9
    echo(f"vtalab demo: C = clip((A @ W.T + bias) >> {shift}, -128, 127), A {m}x{k} int8, "
         f"W {n}x{k} int8")
    echo(f"config {cfg.name} ({cfg.batch}x{cfg.block_in}x{cfg.block_out}, "
         f"fingerprint {cfg.fingerprint()}), backend {backend}")
    with open_device(backend, cfg) as device:
        matmul = BlockedMatmul(cfg, m, k, n, shift=shift, vthreads=vthreads)
        bufs = matmul.place(device, a, w, bias)
        builder = ProgramBuilder(device)
        matmul.build(builder, bufs)
        program = builder.finish()
        start = time.perf_counter()
        counters = program.run(device)
        seconds = time.perf_counter() - start
        result = matmul.result(bufs)
    expected = matmul_reference(a, w, bias, shift, cfg.acc_bits)
    _report(echo, matmul, program, counters, seconds)
    mismatches = int(np.count_nonzero(result != expected))
    if mismatches:
        echo(f"MISMATCH: {mismatches} of {result.size} outputs differ from numpy")
        return 1
    echo(f"result matches numpy bit for bit ({result.size} int8 outputs)")
    return 0


def _report(echo, matmul, program, counters, seconds) -> None:
    t = matmul.tiles
    echo(f"tiles: {t.tm} x {t.tn} x {t.tk} entries, {matmul.vthreads} virtual thread(s); "
         f"{len(program)} instructions, {len(program.uop_words)} micro-ops in DRAM")
    kinds = ", ".join(f"{counters[f'insn_{kind}']} {kind}" for kind in
                      ("load", "gemm", "alu", "store", "finish"))
    echo(f"instructions run: {kinds}")
    echo("bytes moved:     " + ", ".join(
        f"{buf} {counters[f'bytes_{buf}']:,}" for buf in ("uop", "inp", "wgt", "acc", "out")))
    echo(f"micro-ops:       GEMM {counters['gemm_uops']:,} ({counters['macs']:,} MACs), "
         f"ALU {counters['alu_uops']:,}")
    extra = {k: v for k, v in counters.items() if k in ("cycles", "gemm_utilization")}
    if extra:
        echo("hardware:        " + ", ".join(f"{k} {v}" for k, v in extra.items()))
    echo(f"run time:        {seconds * 1e3:.1f} ms")


def _cosine(a, b) -> float:
    a, b = np.ravel(a).astype(np.float64), np.ravel(b).astype(np.float64)
    return float(a @ b / max(np.linalg.norm(a) * np.linalg.norm(b), 1e-30))


def _onnxruntime(model, x):
    import onnxruntime as ort
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, {session.get_inputs()[0].name: x})[0]


def run_resnet_demo(config="default", backend: str = "fsim", input_size: int = 64,
                    seed: int = 0, calibration_count: int = 4, echo=print) -> int:
    """Build ResNet-18 in code (seeded random weights), compile it for the accelerator, run
    it on `backend`, and check it against onnxruntime and the int8 reference."""
    from vtalab.compiler.exec import compile_model
    from vtalab.model_cli import progress_printer
    from vtalab.compiler.graph import run_int8
    from vtalab.compiler.models import random_samples, resnet18

    cfg = load_config(config)
    shape = (1, 3, input_size, input_size)
    echo(f"vtalab demo: ResNet-18 (seeded random weights, input {'x'.join(map(str, shape))}) "
         f"-> int8 on the accelerator, config {cfg.name} ({cfg.batch}x{cfg.block_in}x"
         f"{cfg.block_out}, fingerprint {cfg.fingerprint()}), backend {backend}")
    model = resnet18(input_size, seed=seed)
    module = compile_model(model, cfg, calibration=random_samples(shape, calibration_count,
                                                                   seed=seed + 1))
    echo(module.summary())
    echo(f"compiled in {module.stats['compile_seconds']:.2f} s (graph passes "
         f"{module.stats['graph_seconds']:.2f} s, accelerator lowering "
         f"{module.stats['lower_seconds']:.2f} s)")
    x = random_samples(shape, 1, seed=seed + 100)[0]
    outputs, profile = module.run(x, backend=backend, progress=progress_printer())
    y = outputs[module.outputs[0]]
    echo(profile.table(cpu_detail=False))
    want = _onnxruntime(model, x)
    reference = run_int8(module.graph, x)[module.outputs[0]]
    echo(f"vs onnxruntime (float32): cosine similarity {_cosine(y, want):.4f}, top-1 "
         f"{'agrees' if int(np.argmax(y)) == int(np.argmax(want)) else 'differs'} "
         f"(class {int(np.argmax(y))} vs {int(np.argmax(want))})")
    mismatches = int(np.count_nonzero(y != reference))
    if mismatches:
        echo(f"MISMATCH: {mismatches} of {y.size} outputs differ from the int8 reference")
        return 1
    echo(f"result matches the int8 reference bit for bit ({y.size} outputs)")
    return 0
