"""Illegal programs, one per rule, with the error every backend must raise and the index
of the instruction it must name. Programs are lists of 128-bit words (an unknown opcode
has no Instruction object), built around a legal prefix so that the index is not 0."""
from __future__ import annotations

from dataclasses import dataclass

from vtalab.spec import Isa
from vtalab.spec.errors import DeadlockError, InstructionError, MemoryAccessError, TokenError
from vtalab.spec.isa import (MAX_TOKENS, AluInsn, AluOp, FinishInsn, GemmInsn, Mem, MemInsn,
                             Opcode)


@dataclass(frozen=True)
class Case:
    name: str
    words: tuple
    error: type
    index: int


def patched(isa: Isa, insn, layout: str, **fields) -> int:
    """``insn``'s word with raw ``fields`` of ``layout`` (e.g. an unknown opcode) set."""
    word = isa.encode(insn)
    lay = getattr(isa, layout)
    for name, value in fields.items():
        fld = lay[name]
        word = word & ~(fld.mask << fld.lsb) | fld.insert(value)
    return word


def cases(cfg, data: int, dram_bytes: int) -> list[Case]:
    """``data``: the byte address of a few KiB of zeros in a DRAM of ``dram_bytes``."""
    isa = Isa(cfg)

    def at(buffer: str) -> int:
        return data // cfg.entry_bytes(buffer)

    load = MemInsn(mem=Mem.INP, dram_base=at("inp"), x_size=2, x_stride=2)
    uops = MemInsn(mem=Mem.UOP, dram_base=at("uop"), x_size=1)          # words of zero
    finish = FinishInsn()
    out = []

    def case(name, body, error, index):
        words = tuple(w if isinstance(w, int) else isa.encode(w) for w in body)
        out.append(Case(name, words, error, index))

    case("leftover token", [load.with_deps(push_next=True), GemmInsn(reset=True), finish],
         TokenError, 2)
    case("token left after a pop", [load.with_deps(push_next=True), load.with_deps(push_next=True),
                                    GemmInsn(reset=True, pop_prev=True), finish], TokenError, 3)
    for end in (cfg.uop_depth + 8, 2 * cfg.uop_depth - 1):
        case(f"uop_end {end} past the uop buffer",
             [load, GemmInsn(uop_bgn=cfg.uop_depth - 4, uop_end=end), finish],
             MemoryAccessError, 1)
    case("LOAD INP past the inp buffer",
         [load, MemInsn(mem=Mem.INP, sram_base=cfg.inp_depth - 2, dram_base=at("inp"),
                        x_size=4, x_stride=4), finish], MemoryAccessError, 1)
    case("padded LOAD ACC past the acc buffer",
         [load, MemInsn(mem=Mem.ACC, sram_base=cfg.acc_depth - 3, dram_base=at("acc"),
                        x_size=1, x_stride=1, y_pad_1=3), finish], MemoryAccessError, 1)
    case("LOAD UOP past the uop buffer",
         [load, MemInsn(mem=Mem.UOP, sram_base=cfg.uop_depth - 2, dram_base=at("uop"),
                        x_size=4), finish], MemoryAccessError, 1)
    case("STORE past the out buffer",
         [load, MemInsn(opcode=Opcode.STORE, mem=Mem.OUT, sram_base=cfg.out_depth,
                        dram_base=at("out"), x_size=1, x_stride=1), finish],
         MemoryAccessError, 1)
    case("GEMM dst index past the acc buffer",
         [load, uops, GemmInsn(uop_end=1, iter_out=cfg.acc_depth + 1, dst_factor_out=1), finish],
         MemoryAccessError, 2)
    case("GEMM wgt index wraps its field",
         [load, uops, GemmInsn(uop_end=1, iter_out=3, iter_in=2,
                               wgt_factor_out=cfg.wgt_depth - 1, wgt_factor_in=1), finish],
         MemoryAccessError, 2)
    case("ALU src index past the acc buffer",
         [load, uops, AluInsn(alu_op=AluOp.ADD, uop_end=1, iter_in=cfg.acc_depth + 2,
                              src_factor_in=1), finish], MemoryAccessError, 2)
    case("DRAM past the end",
         [load, MemInsn(mem=Mem.WGT, dram_base=dram_bytes // cfg.entry_bytes("wgt") + 5),
          finish], MemoryAccessError, 1)
    case("x_stride below x_size",
         [load, MemInsn(mem=Mem.INP, dram_base=at("inp"), y_size=2, x_size=3, x_stride=2),
          finish], MemoryAccessError, 1)
    case("instruction after FINISH", [load, finish, load], InstructionError, 2)
    case("two FINISH", [load, finish, finish], InstructionError, 2)
    case("no FINISH", [load, load], InstructionError, 1)
    for opcode in range(max(Opcode) + 1, 1 << isa.opcode_field.width):   # unused values
        case(f"opcode {opcode}", [load, patched(isa, finish, "mem", opcode=opcode), finish],
             InstructionError, 1)
    case("ALU opcode 7", [load, patched(isa, AluInsn(), "alu", alu_opcode=7), finish],
         InstructionError, 1)
    case("STORE from INP", [load, patched(isa, MemInsn(opcode=Opcode.STORE, mem=Mem.OUT),
                                          "mem", memory_type=Mem.INP), finish],
         InstructionError, 1)
    case("LOAD into OUT", [load, patched(isa, load, "mem", memory_type=Mem.OUT), finish],
         InstructionError, 1)
    case("memory type 6", [load, patched(isa, load, "mem", memory_type=6), finish],
         InstructionError, 1)
    case("LOAD INP with pop_prev", [load, load.with_deps(pop_prev=True), finish],
         InstructionError, 1)
    case("STORE with push_next",
         [load, MemInsn(opcode=Opcode.STORE, mem=Mem.OUT, x_size=0, push_next=True), finish],
         InstructionError, 1)
    case("deadlock: a pop nothing pushed", [load, GemmInsn(reset=True, pop_prev=True), finish],
         DeadlockError, 1)
    case("deadlock: the push comes later",
         [load, GemmInsn(reset=True, pop_prev=True), load.with_deps(push_next=True), finish],
         DeadlockError, 1)
    pushes = [load.with_deps(push_next=True)] * (MAX_TOKENS + 1)
    case("more than MAX_TOKENS tokens", [load] + pushes + [finish], TokenError, MAX_TOKENS + 1)
    return out
