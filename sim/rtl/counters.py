"""Counters of an RTL run: the hardware's performance registers plus the functional
counters the functional simulator reports (same keys), derived from the program itself.

Where both exist (``gemm_uops``, ``alu_uops``) the hardware's value is reported; the
differential tests check that the two agree.
"""
from __future__ import annotations

from collections import Counter

from vtalab.spec import Config
from vtalab.spec.isa import AluInsn, GemmInsn, Instruction, Mem, MemInsn, Opcode

FUNCTIONAL_KEYS = ("insn_load", "insn_store", "insn_gemm", "insn_alu", "insn_finish",
                   "bytes_uop", "bytes_inp", "bytes_wgt", "bytes_acc", "bytes_out",
                   "gemm_uops", "alu_uops", "macs")


def loop_uops(insn) -> int:
    return max(insn.uop_end - insn.uop_bgn, 0) * insn.iter_out * insn.iter_in


def functional_counters(cfg: Config, insns: list[Instruction]) -> dict:
    """What the functional simulator counts for ``insns`` (a legal, finished program)."""
    counts = Counter()
    for insn in insns:
        if isinstance(insn, MemInsn):
            kind = "load" if insn.opcode == Opcode.LOAD else "store"
            counts[f"insn_{kind}"] += 1
            rows = 1 if insn.mem == Mem.UOP else insn.y_size
            counts[f"bytes_{insn.mem.buffer}"] += rows * insn.x_size * cfg.entry_bytes(
                insn.mem.buffer)
        elif isinstance(insn, GemmInsn):
            counts["insn_gemm"] += 1
            counts["gemm_uops"] += loop_uops(insn)
            if not insn.reset:
                counts["macs"] += loop_uops(insn) * cfg.macs_per_cycle
        elif isinstance(insn, AluInsn):
            counts["insn_alu"] += 1
            counts["alu_uops"] += loop_uops(insn)
        else:
            counts["insn_finish"] += 1
    return {key: counts[key] for key in FUNCTIONAL_KEYS}


def merged(cfg: Config, insns: list[Instruction], hardware: dict) -> dict:
    """Functional counters, then the hardware's (they win), then derived ratios."""
    result = functional_counters(cfg, insns)
    result["bytes_insn"] = len(insns) * 16
    result.update(hardware)
    cycles = max(hardware.get("cycles", 0), 1)
    result["gemm_utilization"] = round(hardware.get("gemm_uops", 0) / cycles, 4)
    for module in ("load", "compute", "store"):
        result[f"{module}_utilization"] = round(hardware.get(f"{module}_busy", 0) / cycles, 4)
    return result
