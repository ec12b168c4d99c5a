"""VTA's conformance vectors (outputs of VTA's own HLS hardware model) on one flat DRAM.

A case directory holds insn.bin, dram.bin, optionally uop.bin, meta.json, out.bin and
acc_sram.bin (format in the vectors' README). VTA addresses each memory type from its own
base pointer; here every LOAD/STORE's dram_base is relocated onto a single DRAM image
that holds each region (aligned), then the instruction stream.
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from vtalab.spec import Config, Isa
from vtalab.spec.isa import INSN_BYTES, Instruction, Mem, MemInsn


@dataclass
class ConformanceCase:
    name: str
    insns: list[Instruction]
    dram: np.ndarray          # uint8 image: the regions, then the instruction stream
    insn_addr: int
    out_offset: int
    expected_out: bytes
    expected_acc: np.ndarray  # (rows, block_out) int32


def find_cases(root: Path) -> list[Path]:
    return sorted(p.parent for p in Path(root).glob("*/*/meta.json"))


def _align(value: int, to: int) -> int:
    return -(-value // to) * to


def load_case(path: Path, cfg: Config) -> ConformanceCase:
    path = Path(path)
    meta = json.loads((path / "meta.json").read_text())
    isa = Isa(cfg)
    regions = _regions(path, meta)
    image, bases = bytearray(), {}
    for mem, data in regions:
        bases[mem] = _align(len(image), 256)
        image += bytes(bases[mem] - len(image)) + data
    insns = [_relocate(cfg, insn, bases) for insn in
             isa.decode_program((path / "insn.bin").read_bytes())]
    insn_addr = _align(len(image), 64)
    image += bytes(insn_addr - len(image)) + isa.encode_program(insns)
    acc = np.frombuffer((path / "acc_sram.bin").read_bytes(), dtype="<i4")
    out_shift = meta["out_region"]["offset_bytes"] - meta["out_base_bytes"]
    return ConformanceCase(
        name=f"{path.parent.name}/{path.name}", insns=insns,
        dram=np.frombuffer(bytes(image), dtype=np.uint8).copy(), insn_addr=insn_addr,
        out_offset=bases[Mem.OUT] + out_shift,
        expected_out=(path / "out.bin").read_bytes(),
        expected_acc=acc.reshape(-1, cfg.batch * cfg.block_out))


def _regions(path: Path, meta: dict) -> list[tuple[Mem, bytes]]:
    """Each memory type's bytes: from its base in dram.bin up to the next base (or uop.bin).

    Not every base in the vectors is a multiple of its element size, so each region is
    copied to an aligned place instead of being addressed where it lies.
    """
    dram = (path / "dram.bin").read_bytes()
    uop_file = path / "uop.bin"
    separate_uops = meta.get("has_uop_file") and uop_file.exists()
    in_dram = [m for m in Mem if not (m == Mem.UOP and separate_uops)]
    starts = sorted((meta[f"{m.buffer}_base_bytes"], m) for m in in_dram)
    regions = []
    for k, (start, mem) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(dram)
        regions.append((mem, dram[start:end]))
    if separate_uops:
        regions.append((Mem.UOP, uop_file.read_bytes()))
    return regions


def _relocate(cfg: Config, insn: Instruction, bases: dict) -> Instruction:
    if not isinstance(insn, MemInsn):
        return insn
    entry = cfg.entry_bytes(insn.mem.buffer)
    return dataclasses.replace(insn, dram_base=insn.dram_base + bases[insn.mem] // entry)
