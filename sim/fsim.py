"""The bit-exact functional simulator: DRAM, SRAM buffers, three modules, four token queues.

Instructions run in program order, which is the one schedule every legal program allows
(spec/legality.py: each pop finds a token an earlier instruction pushed), so a legal
program's results are those of any order the tokens allow. A program that breaks a
program-order rule runs up to the instruction that breaks it, which then raises, as the
hardware's fetch unit stops there; an access outside an SRAM buffer or the DRAM raises at
its instruction. Every error names the instruction's index.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from vtalab.spec import Config, Isa
from vtalab.spec.errors import SimError
from vtalab.spec.isa import INSN_BYTES, AluInsn, FinishInsn, GemmInsn, Instruction, Mem, MemInsn
from vtalab.spec.legality import first_violation, insn_name, words_of
from vtalab.util import single_threaded_blas

from .compute import ComputeUnit
from .dram import tile_view
from .memops import LoadPlan, StorePlan, is_load
from .state import SramState

DEFAULT_DRAM_BYTES = 64 << 20
PROGRAM_CACHE_SIZE = 256       # decoded, checked programs kept per simulator
MEM_PLAN_CACHE_SIZE = 1 << 16


class FunctionalSimulator:
    """Runs programs on a flat DRAM (``self.dram``, uint8) and the SRAMs (``self.sram``).

    A program fetched from DRAM is decoded and checked once and cached under its bytes;
    LOAD/STORE plans are cached under their instruction, GEMM/ALU plans (in the compute
    unit) under their instruction and micro-op words. Runs of a cached program only move
    and compute data.
    """

    def __init__(self, cfg: Config, dram_bytes: int = DEFAULT_DRAM_BYTES):
        self.cfg = cfg
        self.isa = Isa(cfg)
        self.dram = np.zeros(dram_bytes, dtype=np.uint8)
        self.sram = SramState(cfg)
        self.compute = ComputeUnit(cfg, self.sram)
        self._programs = OrderedDict()      # instruction bytes -> _Prepared, LRU
        self._mem_plans = {}

    def fetch(self, insn_addr: int, insn_count: int) -> list[Instruction]:
        return self.isa.decode_program(self._fetch_bytes(insn_addr, insn_count))

    def _fetch_bytes(self, insn_addr: int, insn_count: int) -> bytes:
        if insn_addr % INSN_BYTES:
            raise SimError(f"insn_addr must be a multiple of {INSN_BYTES}, not {insn_addr}")
        raw = tile_view(self.dram, INSN_BYTES, insn_addr // INSN_BYTES, 1, insn_count,
                        insn_count, "instruction fetch")
        return raw.tobytes()

    def run(self, insn_addr: int, insn_count: int) -> dict:
        """Fetch ``insn_count`` instructions at byte address ``insn_addr`` and run them."""
        code = self._fetch_bytes(insn_addr, insn_count)
        prepared = self._programs.get(code)
        if prepared is None:
            prepared = _Prepared(self.cfg, words_of(code))
            if len(self._programs) >= PROGRAM_CACHE_SIZE:
                self._programs.popitem(last=False)
            self._programs[code] = prepared
        else:
            self._programs.move_to_end(code)
        counters = self._run_prepared(prepared)
        counters["bytes_insn"] = insn_count * INSN_BYTES
        return counters

    def run_program(self, insns: list[Instruction]) -> dict:
        """Run instructions given as objects; return the counters of this run."""
        return self._run_prepared(_Prepared(self.cfg, list(insns)))

    def _run_prepared(self, prepared: "_Prepared") -> dict:
        handlers = {MemInsn: self._memop, GemmInsn: self.compute.gemm,
                    AluInsn: self.compute.alu, FinishInsn: _nothing}
        with single_threaded_blas():
            for index, insn in enumerate(prepared.insns):
                try:
                    handlers[type(insn)](insn)
                except SimError as exc:        # the plans' range errors, with the index
                    raise type(exc)(f"instruction {index} ({insn_name(insn)}): {exc}") \
                        from None
        if prepared.violation is not None:
            error = prepared.violation.error
            raise type(error)(str(error))
        return dict(prepared.counters)

    def _memop(self, insn: MemInsn) -> None:
        plan = self._mem_plans.get(insn)
        if plan is None:
            kind = LoadPlan if is_load(insn) else StorePlan
            plan = kind(self.cfg, self.sram, self.dram, insn)
            if len(self._mem_plans) >= MEM_PLAN_CACHE_SIZE:
                self._mem_plans.clear()
            self._mem_plans[insn] = plan
        plan.run()
        if isinstance(plan, LoadPlan):
            self.compute.loaded(plan.buffer, plan.first, plan.entries)


def _nothing(insn) -> None:
    pass


class _Prepared:
    """A checked program: the instructions before its first program-order violation (all of
    them for a legal program), that violation, and the counters a run reports."""

    def __init__(self, cfg: Config, program: list):
        self.insns, self.violation = first_violation(cfg, program)
        self.counters = program_counters(cfg, self.insns)


def program_counters(cfg: Config, insns: list[Instruction]) -> dict:
    """The counters a run of ``insns`` reports (they follow from the instructions alone)."""
    counters = dict.fromkeys(COUNTER_KEYS, 0)
    for insn in insns:
        if isinstance(insn, MemInsn):
            if is_load(insn):
                counters["insn_load"] += 1
                y_size = 1 if insn.mem == Mem.UOP else insn.y_size
                counters[f"bytes_{insn.mem.buffer}"] += \
                    y_size * insn.x_size * cfg.entry_bytes(insn.mem.buffer)
            else:
                counters["insn_store"] += 1
                counters["bytes_out"] += insn.y_size * insn.x_size * cfg.entry_bytes("out")
        elif isinstance(insn, (GemmInsn, AluInsn)):
            uops = max(insn.uop_end - insn.uop_bgn, 0) * insn.iter_out * insn.iter_in
            if isinstance(insn, GemmInsn):
                counters["insn_gemm"] += 1
                counters["gemm_uops"] += uops
                if not insn.reset:
                    counters["macs"] += uops * cfg.macs_per_cycle
            else:
                counters["insn_alu"] += 1
                counters["alu_uops"] += uops
        else:
            counters["insn_finish"] += 1
    return counters


COUNTER_KEYS = ("insn_load", "insn_store", "insn_gemm", "insn_alu", "insn_finish",
                "bytes_uop", "bytes_inp", "bytes_wgt", "bytes_acc", "bytes_out",
                "gemm_uops", "alu_uops", "macs")


__all__ = ["FunctionalSimulator", "COUNTER_KEYS", "Mem"]
