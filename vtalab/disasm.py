"""Disassembly of raw instruction streams (files or hex words) into readable lines."""
from __future__ import annotations

from pathlib import Path

from vtalab.spec import Isa, load_config
from vtalab.spec.errors import IsaError
from vtalab.spec.isa import INSN_BYTES


def read_stream(sources: list[str]) -> bytes:
    """Bytes of a single binary file, or of hex words given on the command line."""
    if len(sources) == 1 and Path(sources[0]).is_file():
        return Path(sources[0]).read_bytes()
    data = b""
    for text in sources:
        digits = text.lower().removeprefix("0x").replace("_", "")
        try:
            word = int(digits, 16)
        except ValueError:
            raise IsaError(f"instruction must be an existing file or a hex word, "
                           f"not {text!r}") from None
        if word >> (8 * INSN_BYTES):
            raise IsaError(f"hex instruction must fit in {8 * INSN_BYTES} bits, not {text}")
        data += word.to_bytes(INSN_BYTES, "little")
    return data


def disassemble(sources: list[str], config: str = "default") -> str:
    isa = Isa(load_config(config))
    insns = isa.decode_program(read_stream(sources))
    return "\n".join(f"{k:5d}  {isa.disasm(insn)}" for k, insn in enumerate(insns))
