"""Disassembled instruction streams of canonical workloads, kept under snapshots/.

Set VTALAB_UPDATE_SNAPSHOTS=1 to rewrite them after an intended codegen change.
"""
import os
from pathlib import Path

import pytest

from vtalab.spec import preset
from vtalab.compiler.topi import (Conv2dKnobs, Conv2dShape, DenseKnobs, ElementwiseKnobs,
                                  Requant, conv2d, dense, elementwise)
from vtalab.compiler.vta import build

SNAPSHOTS = Path(__file__).parent / "snapshots"

WORKLOADS = {
    "vector_add_default": lambda: ("default", elementwise(
        preset("default"), 4, "add", False, Requant(shift=1, bias=False),
        ElementwiseKnobs(tile=2))),
    "matmul_1x256x256_default": lambda: ("default", dense(
        preset("default"), 1, 256, 256, Requant(shift=8, bias=False),
        DenseKnobs(tile_n=4, tile_k=16, vthreads=2))),
    "dense_requant_tiny": lambda: ("tiny", dense(
        preset("tiny"), 2, 32, 32, Requant(shift=6, lo=-64, hi=64),
        DenseKnobs(tile_m=1, tile_n=2, tile_k=2, vthreads=2))),
    "conv3x3_pad1_vt2_tiny": lambda: ("tiny", conv2d(
        preset("tiny"), Conv2dShape(1, 16, 6, 6, 16, 3, 1, 1), Requant(shift=6),
        Conv2dKnobs(tile_h=3, tile_co=1, tile_ci=2, vthreads=2))),
}


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_snapshot(name):
    cfg_name, (sch, args) = WORKLOADS[name]()
    text = "\n".join(build(sch, preset(cfg_name), args).disasm()) + "\n"
    path = SNAPSHOTS / f"{name}.txt"
    if os.environ.get("VTALAB_UPDATE_SNAPSHOTS"):
        path.parent.mkdir(exist_ok=True)
        path.write_text(text)
    assert path.exists(), (f"snapshot {path} must exist, not be missing: write it with "
                           f"VTALAB_UPDATE_SNAPSHOTS=1 and review it")
    assert text == path.read_text(), f"codegen changed {name}; diff against {path}"
