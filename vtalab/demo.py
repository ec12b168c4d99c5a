"""``vtalab demo``: a blocked int8 matmul with requantisation, built with the runtime, run on
a device backend and checked bit for bit against numpy."""
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
    expected = matmul_reference(a, w, bias, shift)
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
