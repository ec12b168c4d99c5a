"""Differential testing: random legal programs on a reference and a device under test
(the functional simulator and the RTL), all DRAM compared bit for bit; a mismatch is
shrunk to a minimal program whose disassembly is printed.

Devices are anything with the runtime's Device API (alloc/copy_in/copy_out/run); this
module does not import the runtime.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from vtalab.spec.errors import DeviceError, VtaError
from vtalab.spec.isa import AluInsn, GemmInsn, Mem, MemInsn, Opcode

from .fuzz import FuzzProgram, generate, noop

IMAGE_BYTES = 256 << 10
CHECKED_COUNTERS = ("gemm_uops", "alu_uops")


@dataclass
class Outcome:
    dram: np.ndarray | None
    counters: dict
    error: str | None


@dataclass
class Mismatch:
    program: FuzzProgram
    reason: str

    def report(self) -> str:
        p = self.program
        return (f"seed {p.seed}: {self.reason}\nminimal program ({len(p.instructions())} "
                f"instructions, S={p.in_slots} T={p.out_slots}, image at {p.base:#x}):\n"
                f"{p.disasm()}")


class Differential:
    """Holds one reference and one device under test, each with an image buffer."""

    def __init__(self, ref, dut, timings=None):
        self.ref, self.dut = ref, dut
        self.ref_buf, self.dut_buf = ref.alloc(IMAGE_BYTES), dut.alloc(IMAGE_BYTES)
        if self.ref_buf.addr != self.dut_buf.addr:
            raise DeviceError(f"image buffers must lie at one address on both devices, not "
                              f"{self.ref_buf.addr:#x} and {self.dut_buf.addr:#x}")
        self.base = self.ref_buf.addr
        self.timings = timings or [{}]
        self.runs = 0

    def close(self) -> None:
        self.ref_buf.free()
        self.dut_buf.free()

    def _run(self, device, buf, program: FuzzProgram, timing: dict) -> Outcome:
        image, offset = program.image()
        if image.size > IMAGE_BYTES:
            raise DeviceError(f"fuzz image must fit {IMAGE_BYTES} bytes, not {image.size}")
        device.copy_in(buf, image)
        if timing and hasattr(device, "set_timing"):
            device.set_timing(**timing)
        try:
            counters = device.run(self.base + offset, len(program.instructions()))
        except VtaError as exc:
            return Outcome(None, {}, f"{type(exc).__name__}: {exc}")
        return Outcome(device.copy_out(buf, np.uint8, image.size), counters, None)

    def check(self, program: FuzzProgram, timing: dict | None = None) -> str | None:
        """None if both devices agree on ``program``, else why not."""
        timing = timing if timing is not None else self.timings[program.seed % len(self.timings)]
        self.runs += 1
        want = self._run(self.ref, self.ref_buf, program, {})
        got = self._run(self.dut, self.dut_buf, program, timing)
        if want.error:
            return f"reference failed (generator bug?): {want.error}"
        if got.error:
            return f"device failed where the reference ran: {got.error}"
        diff = np.flatnonzero(want.dram != got.dram)
        if diff.size:
            return _describe(program, diff, want.dram, got.dram, timing)
        for key in CHECKED_COUNTERS:
            if key in got.counters and got.counters[key] != want.counters.get(key):
                return f"counter {key} must be {want.counters.get(key)}, not {got.counters[key]}"
        return None

    def fuzz(self, count: int, seed: int = 0, max_rounds: int = 4, shrink: bool = True,
             progress=None) -> list[Mismatch]:
        """Run ``count`` programs with seeds ``seed``..; returns the (shrunk) mismatches."""
        found = []
        for k in range(count):
            program = generate(self.ref.cfg, self.base, seed + k, max_rounds)
            reason = self.check(program)
            if reason is not None:
                timing = self.timings[program.seed % len(self.timings)]
                found.append(self.shrink(program, timing) if shrink else
                             Mismatch(program, reason))
            if progress:
                progress(k + 1, count, len(found))
        return found

    def shrink(self, program: FuzzProgram, timing: dict, budget: int = 600) -> Mismatch:
        reason = self.check(program, timing)
        spent = 0
        improved = True
        while improved and spent < budget:
            improved = False
            for candidate in _candidates(program):
                spent += 1
                why = self.check(candidate, timing)
                if why is not None:
                    program, reason, improved = candidate, why, True
                    break
                if spent >= budget:
                    break
        return Mismatch(program, reason or "mismatch did not reproduce")


def _describe(program, diff, want, got, timing) -> str:
    first = int(diff[0])
    _, offset = program.image()
    lo, hi = program.out_range
    area = "instructions" if first >= offset else "output area" if lo <= first < hi else \
        "input areas"
    return (f"{diff.size} DRAM bytes differ (timing {timing or 'default'}), first at image "
            f"offset {first:#x} ({area}): reference {want[first]:#04x}, device {got[first]:#04x}")


# ---- shrinking ------------------------------------------------------------------------

def _candidates(p: FuzzProgram):
    """Smaller programs that stay legal, most aggressive first."""
    serial = p.in_slots == 1 and p.out_slots == 1
    if not serial:
        yield p.replace(in_slots=1, out_slots=1)      # serialised: every round legal alone
    for r in range(len(p.rounds)) if serial else [len(p.rounds) - 1]:
        if len(p.rounds) > 1:
            yield p.replace(rounds=p.rounds[:r] + p.rounds[r + 1:])
    for r, rnd in enumerate(p.rounds):
        for module in ("load", "compute", "store"):
            for smaller in _drops(getattr(rnd, module), module):
                yield _with(p, r, module, smaller)
    for r, rnd in enumerate(p.rounds):
        for module in ("load", "compute", "store"):
            insns = getattr(rnd, module)
            for k, insn in enumerate(insns):
                for simple in _simplified(insn):
                    yield _with(p, r, module, insns[:k] + [simple] + insns[k + 1:])


def _with(p: FuzzProgram, r: int, module: str, insns: list) -> FuzzProgram:
    rounds = list(p.rounds)
    rounds[r] = dataclasses.replace(rounds[r], **{module: insns or [noop(module)]})
    return p.replace(rounds=rounds)


def _drops(insns: list, module: str):
    """Lists with one instruction (or one uop load + its GEMM/ALU) removed."""
    k = 0
    while k < len(insns):
        pair = _is_uop_load(insns[k]) and k + 1 < len(insns) and \
            isinstance(insns[k + 1], (GemmInsn, AluInsn))
        width = 2 if pair else 1
        if not (isinstance(insns[k], MemInsn) and insns[k].x_size == 0):   # not a noop
            yield insns[:k] + insns[k + width:]
        k += width


def _is_uop_load(insn) -> bool:
    return isinstance(insn, MemInsn) and insn.opcode == Opcode.LOAD and insn.mem == Mem.UOP


def _simplified(insn):
    if isinstance(insn, (GemmInsn, AluInsn)):
        if insn.iter_out > 1:
            yield dataclasses.replace(insn, iter_out=1)
        if insn.iter_in > 1:
            yield dataclasses.replace(insn, iter_in=1)
        if insn.uop_end - insn.uop_bgn > 1:
            yield dataclasses.replace(insn, uop_end=insn.uop_bgn + 1)
    elif isinstance(insn, MemInsn) and insn.x_size and not _is_uop_load(insn):
        if any((insn.y_pad_0, insn.y_pad_1, insn.x_pad_0, insn.x_pad_1)):
            yield dataclasses.replace(insn, y_pad_0=0, y_pad_1=0, x_pad_0=0, x_pad_1=0)
        if insn.y_size > 1:
            yield dataclasses.replace(insn, y_size=1)
        if insn.x_size > 1:
            yield dataclasses.replace(insn, x_size=1, x_stride=max(insn.x_stride, 1))
