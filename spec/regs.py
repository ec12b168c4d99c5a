"""The control/status register map, declared once.

The hardware's AXI4-Lite slave, the Verilator harness and the board driver all walk
``REGISTERS``; nobody writes an offset by hand. Registers are 32 bits wide; a 64-bit
counter is two consecutive registers (low word first).
"""
from __future__ import annotations

import enum
from dataclasses import dataclass

from .errors import (DeadlockError, InstructionError, MemoryAccessError, TokenError, VtaError)

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
    "error": 6,                 # ERROR holds a code, or a token queue over/underflowed
}

#: units whose first illegal condition ERROR keeps, one byte each from bit 0
ERROR_UNITS = ("fetch", "load", "compute", "store")
ERROR_CODE_BITS = 8


class ErrorCode(enum.IntEnum):
    """What a unit found illegal (ERROR, one byte per unit). The fetch unit checks each
    instruction in program order as it dispatches it (its codes come first below, in the
    order it tests them) and, at the first failure, drops that instruction and every later
    one; the load, compute and store units flag what they find while running. The run then
    ends as soon as the instructions before the failing one are done."""
    NONE = 0
    AFTER_FINISH = 1    # an instruction after FINISH
    OPCODE = 2          # opcode 5..7
    MEMORY_TYPE = 3     # LOAD of OUT or an unknown buffer, STORE of anything but OUT
    ALU_OPCODE = 4      # ALU opcode 7
    TOKEN_FLAG = 5      # a dependency flag the instruction's module does not have
    STRIDE = 6          # 2-D LOAD/STORE with x_stride < x_size
    UOP_RANGE = 7       # GEMM/ALU micro-op range past the uop buffer
    TOKEN_EMPTY = 8     # a pop of a queue no earlier instruction pushed a token into
    TOKEN_FULL = 9      # more than MAX_TOKENS tokens in a queue in program order
    TOKEN_LEFT = 10     # tokens left in a queue at FINISH
    NO_FINISH = 11      # the last instruction is not FINISH
    SRAM_RANGE = 12     # LOAD/STORE entries past the SRAM buffer (load/compute/store)
    INDEX_RANGE = 13    # a GEMM/ALU micro-op index past its buffer (compute)


#: the exception each code raises, and what must hold instead
ERROR_MEANING = {
    ErrorCode.AFTER_FINISH: (InstructionError, "nothing must follow FINISH"),
    ErrorCode.OPCODE: (InstructionError, "opcode must be LOAD, STORE, GEMM, FINISH or ALU"),
    ErrorCode.MEMORY_TYPE: (InstructionError, "a LOAD must fill UOP, WGT, INP or ACC and a "
                                              "STORE must read OUT"),
    ErrorCode.ALU_OPCODE: (InstructionError, "alu_opcode must be one of 0..6"),
    ErrorCode.TOKEN_FLAG: (InstructionError, "dependency flags must be ones its module has"),
    ErrorCode.STRIDE: (MemoryAccessError, "x_stride must be at least x_size when y_size > 1"),
    ErrorCode.UOP_RANGE: (MemoryAccessError, "uop_end must be at most uop_depth"),
    ErrorCode.TOKEN_EMPTY: (DeadlockError, "each pop must find a token an earlier "
                                           "instruction pushed"),
    ErrorCode.TOKEN_FULL: (TokenError, "a queue must hold at most MAX_TOKENS tokens"),
    ErrorCode.TOKEN_LEFT: (TokenError, "tokens must all be consumed by FINISH"),
    ErrorCode.NO_FINISH: (InstructionError, "the last instruction must be FINISH"),
    ErrorCode.SRAM_RANGE: (MemoryAccessError, "SRAM entries must lie inside the buffer"),
    ErrorCode.INDEX_RANGE: (MemoryAccessError, "micro-op indices must lie inside their "
                                               "buffers"),
}


def error_codes(value: int) -> dict[str, ErrorCode]:
    """The ERROR register's value as {unit: code} for the units that flagged something."""
    codes = {}
    for k, unit in enumerate(ERROR_UNITS):
        raw = value >> (k * ERROR_CODE_BITS) & ((1 << ERROR_CODE_BITS) - 1)
        if raw:
            try:
                codes[unit] = ErrorCode(raw)
            except ValueError:
                raise VtaError(f"ERROR code of the {unit} unit must be one of "
                               f"{[c.value for c in ErrorCode]}, not {raw}") from None
    return codes

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
        Register("error", 0x1C, Access.RO, "first illegal condition of each unit: one "
                 "ErrorCode byte per unit of ERROR_UNITS, fetch in bits 0-7; cleared by START"),
    ]
    offset = 0x20
    for name, doc in _COUNTERS:
        regs.append(Register(name, offset, Access.RO, doc, words=2))
        offset += 8
    for unit in ERROR_UNITS:
        where = "its index in the program" if unit == "fetch" else \
            f"its index among the {unit} module's instructions"
        regs.append(Register(f"error_{unit}_insn", offset, Access.RO,
                             f"the instruction the {unit} unit's ERROR code is about: {where}"))
        offset += 4
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
