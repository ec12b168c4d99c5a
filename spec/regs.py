"""The control/status register map, declared once.

The hardware's AXI4-Lite slave, the Verilator harness and the board driver all walk
``REGISTERS``; nobody writes an offset by hand. Registers are 32 bits wide; a 64-bit
counter is two consecutive registers (low word first).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from .errors import VtaError

REG_BYTES = 4


class Access(enum.Enum):
    RW = "rw"      # host writes, hardware reads
    RO = "ro"      # hardware writes, host reads
    W1S = "w1s"    # host writes 1 to trigger; reads back as 0


@dataclass(frozen=True)
class Register:
    name: str
    offset: int
    access: Access
    doc: str
    words: int = 1           # 2 for a 64-bit counter

    @property
    def bits(self) -> int:
        return 32 * self.words


# Module ids used in STATUS bits and the perf counters' names.
MODULES = ("fetch", "load", "compute", "store")
# Token queues, named source->destination as in DESIGN.md.
QUEUES = ("l2c", "c2l", "c2s", "s2c")

# STATUS register bits (read-only): done, busy, and for each module "waiting on a token".
STATUS_BITS = {
    "done": 0,
    "busy": 1,
    "load_wait_c2l": 2,
    "compute_wait_l2c": 3,
    "compute_wait_s2c": 4,
    "store_wait_c2s": 5,
    "error": 6,
}

_COUNTERS = [
    ("cycles", "clock cycles from START to done"),
    *[(f"{m}_busy", f"cycles the {m} module was executing an instruction") for m in MODULES],
    ("load_stall", "cycles the load module waited for a c2l token"),
    ("compute_stall", "cycles the compute module waited for an l2c or s2c token"),
    ("store_stall", "cycles the store module waited for a c2s token"),
    ("bytes_read", "bytes read from DRAM (instructions, uops, inp, wgt, acc)"),
    ("bytes_written", "bytes written to DRAM"),
    ("gemm_uops", "GEMM micro-ops executed"),
    ("alu_uops", "ALU micro-ops executed"),
    ("insns", "instructions retired"),
]


def _build() -> tuple[Register, ...]:
    regs = [
        Register("start", 0x00, Access.W1S, "write 1: fetch insn_count instructions from insn_addr"),
        Register("status", 0x04, Access.RO, "bit flags, see STATUS_BITS"),
        Register("insn_count", 0x08, Access.RW, "number of 128-bit instructions to run"),
        Register("insn_addr", 0x0C, Access.RW, "byte address of the first instruction (16-aligned)",
                 words=2),
        Register("config_id", 0x14, Access.RO, "32-bit Config fingerprint the hardware was built for"),
        Register("scratch", 0x18, Access.RW, "free register for bus tests"),
    ]
    offset = 0x20
    for name, doc in _COUNTERS:
        regs.append(Register(name, offset, Access.RO, doc, words=2))
        offset += 8
    return tuple(regs)


REGISTERS: tuple[Register, ...] = _build()
COUNTERS: tuple[str, ...] = tuple(name for name, _ in _COUNTERS)
_BY_NAME = {r.name: r for r in REGISTERS}
MAP_BYTES = max(r.offset + r.words * REG_BYTES for r in REGISTERS)
ADDR_BITS = (MAP_BYTES - 1).bit_length()


def register(name: str) -> Register:
    try:
        return _BY_NAME[name]
    except KeyError:
        raise VtaError(f"register must be one of {sorted(_BY_NAME)}, not {name!r}") from None


def offset(name: str) -> int:
    return register(name).offset


def describe() -> str:
    lines = [f"{'offset':>6}  {'name':<16} {'acc':<4} {'bits':>4}  description"]
    for reg in REGISTERS:
        lines.append(f"{reg.offset:#06x}  {reg.name:<16} {reg.access.value:<4} {reg.bits:>4}  "
                     f"{reg.doc}")
    return "\n".join(lines)
