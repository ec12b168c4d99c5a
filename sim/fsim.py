"""The bit-exact functional simulator: DRAM, SRAM buffers, three modules, four token queues.

Instructions are dispatched to the load, compute and store modules exactly as the fetch
unit does; each module runs its instructions in order, and a module's next instruction
runs only when the tokens it pops are available and the queues it pushes have room. Among
the modules that can run, the earliest instruction in program order goes first. A legal
program's results do not depend on that choice.
"""
from __future__ import annotations

import contextlib
from collections import Counter

import numpy as np

from vtalab.spec import Config, Isa
from vtalab.spec.errors import DeadlockError, SimError, TokenError
from vtalab.spec.isa import (INSN_BYTES, AluInsn, FinishInsn, GemmInsn, Instruction, Mem, MemInsn,
                             module_of)

from .compute import ComputeUnit
from .dram import tile_view
from .memops import execute_load, execute_store, is_load
from .queues import TokenQueues, token_actions
from .state import SramState

DEFAULT_DRAM_BYTES = 64 << 20


class FunctionalSimulator:
    """Runs programs on a flat DRAM (``self.dram``, uint8) and the SRAMs (``self.sram``)."""

    def __init__(self, cfg: Config, dram_bytes: int = DEFAULT_DRAM_BYTES):
        self.cfg = cfg
        self.isa = Isa(cfg)
        self.dram = np.zeros(dram_bytes, dtype=np.uint8)
        self.sram = SramState(cfg)
        self.compute = ComputeUnit(cfg, self.sram)

    def fetch(self, insn_addr: int, insn_count: int) -> list[Instruction]:
        if insn_addr % INSN_BYTES:
            raise SimError(f"insn_addr must be a multiple of {INSN_BYTES}, not {insn_addr}")
        raw = tile_view(self.dram, INSN_BYTES, insn_addr // INSN_BYTES, 1, insn_count,
                        insn_count, "instruction fetch")
        return self.isa.decode_program(raw.tobytes())

    def run(self, insn_addr: int, insn_count: int) -> dict:
        """Fetch ``insn_count`` instructions at byte address ``insn_addr`` and run them."""
        counters = self.run_program(self.fetch(insn_addr, insn_count))
        counters["bytes_insn"] = insn_count * INSN_BYTES
        return counters

    def run_program(self, insns: list[Instruction]) -> dict:
        """Run instructions given as objects; return the counters of this run."""
        _check_finish(insns)
        counters = Counter()
        with _single_threaded_blas():
            for _, insn in schedule(insns):
                self._execute(insn, counters)
        return {key: counters[key] for key in COUNTER_KEYS}

    def _execute(self, insn: Instruction, counters: Counter) -> None:
        if isinstance(insn, MemInsn):
            if is_load(insn):
                counters["insn_load"] += 1
                nbytes, entries = execute_load(self.cfg, self.sram, self.dram, insn)
                counters[f"bytes_{insn.mem.buffer}"] += nbytes
                self.compute.loaded(insn.mem.buffer, insn.sram_base, entries)
            else:
                counters["insn_store"] += 1
                counters["bytes_out"] += execute_store(self.cfg, self.sram, self.dram, insn)
        elif isinstance(insn, GemmInsn):
            counters["insn_gemm"] += 1
            uops = self.compute.gemm(insn)
            counters["gemm_uops"] += uops
            if not insn.reset:
                counters["macs"] += uops * self.cfg.macs_per_cycle
        elif isinstance(insn, AluInsn):
            counters["insn_alu"] += 1
            counters["alu_uops"] += self.compute.alu(insn)
        else:
            counters["insn_finish"] += 1


COUNTER_KEYS = ("insn_load", "insn_store", "insn_gemm", "insn_alu", "insn_finish",
                "bytes_uop", "bytes_inp", "bytes_wgt", "bytes_acc", "bytes_out",
                "gemm_uops", "alu_uops", "macs")


def _single_threaded_blas():
    """The simulator's matrix products are small: BLAS threads only add contention."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return contextlib.nullcontext()
    return threadpool_limits(1, user_api="blas")


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
