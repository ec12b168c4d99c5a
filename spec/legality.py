"""The program-order rules of a legal instruction stream, as the fetch unit checks them.

A program is legal when every instruction decodes, carries only its module's dependency
flags, has its 2-D stride and micro-op range inside their limits, and the program, run in
program order, pops every token after an earlier instruction pushed it, never has more
than MAX_TOKENS tokens in a queue and leaves none at its one FINISH, the last instruction.
(It must also keep every SRAM and DRAM access inside its buffer, and its results must not
depend on anything but token order: the functional simulator, the runtime's validator and
the hardware check the ranges while running.)

The hardware's fetch unit applies these rules in this order to each instruction as it
dispatches it (hw/fetch_check.py); the functional simulator and the runtime's validator
call ``first_violation``, so all three name the same instruction with the same error.
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from .errors import VtaError
from .isa import (FLAG_QUEUES, MAX_TOKENS, QUEUES, AluInsn, AluOp, FinishInsn, GemmInsn, Isa,
                  Mem, MemInsn, Opcode, module_of)
from .regs import ERROR_MEANING, ErrorCode

if TYPE_CHECKING:
    from .config import Config
    from .isa import Instruction

LOAD_MEMS = (Mem.UOP, Mem.WGT, Mem.INP, Mem.ACC)
DEP_FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")


@dataclass(frozen=True)
class Violation:
    """The first rule a program breaks: the instruction's index, the hardware's code for
    it and the exception that says what must hold instead."""
    index: int
    code: ErrorCode
    error: VtaError


def route(isa: Isa, word: int) -> str:
    """The module the fetch unit sends an instruction word to (by opcode and memory type)."""
    fields = isa.mem
    opcode = fields["opcode"].extract(word)
    if opcode == Opcode.STORE:
        return "store"
    if opcode == Opcode.LOAD and fields["memory_type"].extract(word) in (Mem.INP, Mem.WGT):
        return "load"
    return "compute"


def insn_name(insn: "Instruction") -> str:
    """A short name: LOAD INP, STORE OUT, GEMM, ALU ADD, FINISH."""
    if isinstance(insn, MemInsn):
        op = Opcode(insn.opcode).name if insn.opcode in tuple(Opcode) else insn.opcode
        mem = Mem(insn.mem).name if insn.mem in tuple(Mem) else insn.mem
        return f"{op} {mem}"
    if isinstance(insn, AluInsn):
        return f"ALU {AluOp(insn.alu_op).name}"
    if isinstance(insn, GemmInsn):
        return "GEMM_OVERWRITE" if insn.overwrite else "GEMM"
    return "FINISH"


def token_actions(module: str, insn: "Instruction") -> tuple[list[str], list[str]]:
    """(queues popped before, queues pushed after) for a legal ``insn`` on ``module``."""
    mapping = FLAG_QUEUES[module]
    pops = [mapping[f] for f in ("pop_prev", "pop_next") if getattr(insn, f)]
    pushes = [mapping[f] for f in ("push_prev", "push_next") if getattr(insn, f)]
    return pops, pushes


class ProgramOrder:
    """Walks a stream in program order; ``check`` returns the first Violation or None and
    keeps the decoded instructions before it in ``insns``."""

    def __init__(self, cfg: "Config"):
        self.cfg, self.isa = cfg, Isa(cfg)
        self.insns: list = []
        self.tokens = dict.fromkeys(QUEUES, 0)
        self.finish_at: int | None = None

    def check(self, program: "Sequence[int] | Sequence[Instruction]") -> Violation | None:
        """``program``: instruction words, or Instruction objects (as ``run_program``)."""
        last = len(program) - 1
        for index, item in enumerate(program):
            found = self._step(index, item, index == last)
            if found is not None:
                code, message = found
                kind = ERROR_MEANING[code][0]
                return Violation(index, code, kind(message))
        return None

    def _step(self, index: int, item, last: bool):
        at = f"instruction {index}"
        if self.finish_at is not None:
            return ErrorCode.AFTER_FINISH, (
                f"{at}: the program must end with exactly one FINISH, so nothing must "
                f"follow the FINISH at instruction {self.finish_at}")
        if isinstance(item, int):
            bad = self._encoding(at, item)
            if bad is not None:
                return bad
            insn, module = self.isa.decode(item), route(self.isa, item)
        else:
            insn, module = item, module_of(item)
            bad = self._object(f"{at} ({insn_name(insn)})", insn)
            if bad is not None:
                return bad
        at = f"{at} ({insn_name(insn)})"
        for check in (self._flags, self._limits):
            bad = check(at, module, insn)
            if bad is not None:
                return bad
        bad = self._tokens(at, index, module, insn)
        if bad is not None:
            return bad
        if last and not isinstance(insn, FinishInsn):
            return ErrorCode.NO_FINISH, (
                f"{at}: the program must end with exactly one FINISH, so its last "
                f"instruction must be FINISH, not {insn_name(insn)}")
        if isinstance(insn, FinishInsn):
            self.finish_at = index
        self.insns.append(insn)
        return None

    def _encoding(self, at: str, word: int):
        isa = self.isa
        opcode = isa.opcode_field.extract(word)
        if opcode not in tuple(Opcode):
            return ErrorCode.OPCODE, (f"{at}: opcode must be one of 0..{max(Opcode)} "
                                      f"({', '.join(o.name for o in Opcode)}), not {opcode}")
        if opcode in (Opcode.LOAD, Opcode.STORE):
            mem = isa.mem["memory_type"].extract(word)
            allowed = LOAD_MEMS if opcode == Opcode.LOAD else (Mem.OUT,)
            if mem not in allowed:
                names = ", ".join(f"{m.name} ({m.value})" for m in allowed)
                return ErrorCode.MEMORY_TYPE, (f"{at}: {Opcode(opcode).name} memory_type "
                                               f"must be {names}, not {mem}")
        if opcode == Opcode.ALU:
            op = isa.alu["alu_opcode"].extract(word)
            if op not in tuple(AluOp):
                return ErrorCode.ALU_OPCODE, (f"{at}: alu_opcode must be one of 0..6 "
                                              f"({', '.join(a.name for a in AluOp)}), not {op}")
        return None

    @staticmethod
    def _object(at: str, insn):
        """The encoding rules an Instruction object can break (its type fixes the rest)."""
        if isinstance(insn, MemInsn):
            if insn.opcode not in (Opcode.LOAD, Opcode.STORE):
                return ErrorCode.OPCODE, f"{at}: a MemInsn's opcode must be LOAD or STORE, " \
                                         f"not {insn.opcode!r}"
            allowed = LOAD_MEMS if insn.opcode == Opcode.LOAD else (Mem.OUT,)
            if insn.mem not in allowed:
                names = ", ".join(f"{m.name} ({m.value})" for m in allowed)
                return ErrorCode.MEMORY_TYPE, (f"{at}: {Opcode(insn.opcode).name} memory_type "
                                               f"must be {names}, not {Mem(insn.mem).name}")
        elif not isinstance(insn, (GemmInsn, AluInsn, FinishInsn)):
            return ErrorCode.OPCODE, (f"{at}: an instruction must be a MemInsn, GemmInsn, "
                                      f"AluInsn or FinishInsn, not {type(insn).__name__}")
        return None

    @staticmethod
    def _flags(at: str, module: str, insn):
        for flag in DEP_FLAGS:
            if getattr(insn, flag) and flag not in FLAG_QUEUES[module]:
                return ErrorCode.TOKEN_FLAG, (f"{at} on the {module} module must not set "
                                              f"{flag}: the {module} module has no such "
                                              f"neighbour")
        return None

    def _limits(self, at: str, module: str, insn):
        if isinstance(insn, MemInsn) and insn.mem != Mem.UOP and insn.y_size > 1 \
                and insn.x_stride < insn.x_size:
            return ErrorCode.STRIDE, (f"{at}: x_stride must be at least x_size "
                                      f"({insn.x_size}) when y_size > 1, not {insn.x_stride}")
        if isinstance(insn, (GemmInsn, AluInsn)) and insn.uop_end > self.cfg.uop_depth:
            return ErrorCode.UOP_RANGE, (f"{at}: uop_end must be at most uop_depth "
                                         f"{self.cfg.uop_depth}, not {insn.uop_end}")
        return None

    def _tokens(self, at: str, index: int, module: str, insn):
        pops, pushes = token_actions(module, insn)
        tokens = self.tokens
        for q in pops:
            if tokens[q] == 0:
                return ErrorCode.TOKEN_EMPTY, deadlock_message(
                    [(module, index, insn_name(insn), q)],
                    "no earlier instruction pushed a token into it")
        for q in pops:
            tokens[q] -= 1
        for q in pushes:
            tokens[q] += 1
            if tokens[q] > MAX_TOKENS:
                return ErrorCode.TOKEN_FULL, (f"{at}: queue {q} must hold at most MAX_TOKENS "
                                              f"{MAX_TOKENS} tokens in program order, not "
                                              f"{tokens[q]}")
        left = {q: n for q, n in tokens.items() if n}
        if isinstance(insn, FinishInsn) and left:
            return ErrorCode.TOKEN_LEFT, (f"{at}: tokens must all be consumed by FINISH, not "
                                          f"left in " + ", ".join(f"{q} ({n})"
                                                                  for q, n in left.items()))
        return None


def deadlock_message(waits: list, why: str = "") -> str:
    """The one form of a deadlock on every backend: (module, index, name, queue) per waiting
    instruction, lowest index first."""
    parts = [f"{module} module at instruction {index} ({name}) waits: pop from empty queue {q}"
             for module, index, name, q in sorted(waits, key=lambda w: w[1])]
    return "deadlock: no module can proceed; " + "; ".join(parts) + (f" ({why})" if why else "")


#: programs given as words whose walk is remembered (the validator and the functional
#: simulator both walk every program they run; a model's programs are run again and again)
WALK_CACHE_SIZE = 256
_WALKS: OrderedDict = OrderedDict()


def first_violation(cfg: "Config", program) -> tuple[list, Violation | None]:
    """(the decoded instructions the fetch unit dispatches, the first Violation or None) of
    ``program``: instruction words or Instruction objects."""
    program = list(program)
    key = None
    if all(isinstance(word, int) for word in program):
        key = (cfg.fingerprint(), tuple(program))
        if key in _WALKS:
            _WALKS.move_to_end(key)
            insns, found = _WALKS[key]
            return list(insns), found
    walk = ProgramOrder(cfg)
    found = walk.check(program)
    if key is not None:
        _WALKS[key] = (tuple(walk.insns), found)
        if len(_WALKS) > WALK_CACHE_SIZE:
            _WALKS.popitem(last=False)
    return walk.insns, found


def words_of(data: bytes) -> list[int]:
    """128-bit little-endian instruction words of an instruction stream."""
    from .isa import INSN_BYTES
    return [int.from_bytes(data[k:k + INSN_BYTES], "little")
            for k in range(0, len(data) - len(data) % INSN_BYTES, INSN_BYTES)]
