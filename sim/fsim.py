"""The bit-exact functional simulator: DRAM, SRAM buffers, three modules, four token queues.

Instructions are dispatched to the load, compute and store modules exactly as the fetch
unit does; each module runs its instructions in order, and a module's next instruction
runs only when the tokens it pops are available and the queues it pushes have room. Among
the modules that can run, the earliest instruction in program order goes first. A legal
program's results do not depend on that choice.
"""
from __future__ import annotations

from collections import OrderedDict

import numpy as np

from vtalab.spec import Config, Isa
from vtalab.spec.errors import DeadlockError, SimError, TokenError
from vtalab.spec.isa import (INSN_BYTES, AluInsn, FinishInsn, GemmInsn, Instruction, Mem, MemInsn,
                             module_of)

from .blas import single_threaded_blas
from .compute import ComputeUnit
from .dram import tile_view
from .memops import LoadPlan, StorePlan, is_load
from .queues import TokenQueues, token_actions
from .state import SramState

DEFAULT_DRAM_BYTES = 64 << 20
PROGRAM_CACHE_SIZE = 256       # decoded, scheduled programs kept per simulator
MEM_PLAN_CACHE_SIZE = 1 << 16


class FunctionalSimulator:
    """Runs programs on a flat DRAM (``self.dram``, uint8) and the SRAMs (``self.sram``).

    A program fetched from DRAM is decoded and scheduled once and cached under its bytes;
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
            prepared = _Prepared(self.cfg, self.isa.decode_program(code))
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
            if prepared.order is None:      # runs up to the deadlock, then raises it
                for _, insn in schedule(prepared.insns):
                    handlers[type(insn)](insn)
            for insn in prepared.ordered:
                handlers[type(insn)](insn)
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
    """A checked, scheduled program and the counters every run of it reports."""

    def __init__(self, cfg: Config, insns: list[Instruction]):
        _check_finish(insns)
        self.insns = insns
        try:
            order = [index for index, _ in schedule(insns)]
        except SimError:
            order = None
        self.order = order
        self.ordered = [insns[k] for k in order] if order is not None else []
        self.counters = program_counters(cfg, insns)


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


def _check_finish(insns: list[Instruction]) -> None:
    finishes = [k for k, insn in enumerate(insns) if isinstance(insn, FinishInsn)]
    if finishes != [len(insns) - 1]:
        where = f"at {finishes}" if finishes else "none"
        raise SimError(f"program must end with exactly one FINISH, not {where} "
                       f"(of {len(insns)} instructions)")


def schedule(insns: list[Instruction]):
    """Yield (index, insn) in an order that respects every module's order and the tokens."""
    queues = TokenQueues()
    pending = {"load": [], "compute": [], "store": []}
    for index, insn in enumerate(insns):
        pending[module_of(insn)].append(index)
    heads = {module: 0 for module in pending}
    remaining = len(insns)
    while remaining:
        ready = None
        for module, order in pending.items():
            if heads[module] < len(order):
                index = order[heads[module]]
                pops, pushes = token_actions(module, insns[index], index)
                if queues.can_run(pops, pushes) and (ready is None or index < ready[0]):
                    ready = (index, module, pops, pushes)
        if ready is None:
            raise DeadlockError(_deadlock_message(insns, pending, heads, queues))
        index, module, pops, pushes = ready
        queues.pop(pops)
        yield index, insns[index]
        queues.push(pushes)
        heads[module] += 1
        remaining -= 1
    leftover = queues.nonempty()
    if leftover:
        raise TokenError("tokens must all be consumed by FINISH, not left in "
                         + ", ".join(f"{q} ({n})" for q, n in leftover.items()))


def _deadlock_message(insns, pending, heads, queues) -> str:
    isa_names = []
    for module, order in pending.items():
        if heads[module] < len(order):
            index = order[heads[module]]
            pops, pushes = token_actions(module, insns[index], index)
            isa_names.append(f"{module} module at instruction {index} "
                             f"({type(insns[index]).__name__}) waits: "
                             + queues.why_blocked(pops, pushes))
    return "deadlock: no module can proceed; " + "; ".join(isa_names)


__all__ = ["FunctionalSimulator", "schedule", "COUNTER_KEYS", "Mem"]
