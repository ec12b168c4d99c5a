"""What the hardware found illegal in a run, as the exception the other backends raise.

The RTL harness and the board driver read the same registers after a run that set
STATUS.error (spec/regs.py): ERROR holds each unit's first ErrorCode, ``error_<unit>_insn``
the instruction it is about (the fetch unit's in program indices, each module's among its
own instructions, mapped back here through the fetch unit's routing). The harness also
reports a burst past DRAM, which the hardware cannot know about; it is pinned on the first
instruction the validator's DRAM check finds. Of all of these, the lowest instruction index
wins: that is the instruction the functional simulator and the validator name.
"""
from __future__ import annotations

from vtalab.spec import Config, Isa
from vtalab.spec.errors import MemoryAccessError, TokenError, VtaError
from vtalab.spec.isa import FLAG_QUEUES
from vtalab.spec.legality import deadlock_message, insn_name, route, words_of
from vtalab.spec.regs import ERROR_MEANING, ERROR_UNITS, ErrorCode, error_codes

from .validate import dram_violation


def hardware_error(cfg: Config, raw: bytes, found: dict,
                   dram_bytes: int | None = None) -> VtaError | None:
    """The exception for what a run found (``found``: RtlModel.errors()'s keys, which the
    board driver reads alike), or None for a clean run. ``raw``: the instruction bytes."""
    if not found:
        return None
    isa, words = Isa(cfg), words_of(raw)
    codes = error_codes(found.get("error", 0))
    candidates = []
    dispatched = len(words)
    for unit, code in codes.items():
        ordinal = found[f"error_{unit}_insn"]
        index = ordinal if unit == "fetch" else program_index(isa, words, unit, ordinal)
        if unit == "fetch":
            dispatched = ordinal
        candidates.append((index, _error(isa, words, unit, code, index, ordinal)))
    if "dram" in found:
        candidates.append(_dram_error(cfg, isa, words[:dispatched], found["dram"], dram_bytes))
    if not candidates:
        return TokenError("token queues must never overflow or underflow, but the hardware "
                          "flagged a queue error (STATUS.error)")
    candidates.sort(key=lambda c: (c[0] is None, c[0] or 0))
    return candidates[0][1]


def program_index(isa: Isa, words: list, module: str, ordinal: int) -> int | None:
    """The program index of ``module``'s instruction number ``ordinal`` (from 0)."""
    seen = 0
    for index, word in enumerate(words):
        if route(isa, word) == module:
            if seen == ordinal:
                return index
            seen += 1
    return None


def _error(isa: Isa, words: list, unit: str, code: ErrorCode, index, ordinal) -> VtaError:
    kind, rule = ERROR_MEANING[code]
    if index is None:
        return kind(f"the {unit} module's instruction {ordinal} (of those it was sent): "
                    f"{rule} (ERROR: {unit} {code.name})")
    name = _name(isa, words[index])
    if code == ErrorCode.TOKEN_EMPTY:
        insn, module = isa.decode(words[index]), route(isa, words[index])
        queues = [q for flag, q in FLAG_QUEUES[module].items()
                  if flag.startswith("pop") and getattr(insn, flag)]
        return kind(deadlock_message([(module, index, name, " or ".join(queues))],
                                     "the fetch unit found no earlier push"))
    return kind(f"instruction {index} ({name}): {rule} (ERROR: {unit} {code.name})")


def _dram_error(cfg: Config, isa: Isa, words: list, message: str, dram_bytes) -> tuple:
    for index, word in enumerate(words):
        try:
            insn = isa.decode(word)
        except VtaError:
            continue
        why = dram_violation(cfg, insn, dram_bytes) if hasattr(insn, "dram_base") else None
        if why:
            return index, MemoryAccessError(f"instruction {index} ({insn_name(insn)}): {why} "
                                            f"(the bus saw: {message})")
    return None, MemoryAccessError(f"DRAM accesses must lie inside DRAM, not {message}")


def _name(isa: Isa, word: int) -> str:
    try:
        return insn_name(isa.decode(word))
    except VtaError:
        return f"opcode {isa.opcode_field.extract(word)}"


__all__ = ["hardware_error", "program_index", "ERROR_UNITS"]
