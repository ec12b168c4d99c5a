"""The register map: declared once, consistent, and documented."""
import pytest

from vtalab.spec import regs
from vtalab.spec.errors import VtaError


def test_registers_do_not_overlap_and_are_word_aligned():
    taken = set()
    for reg in regs.REGISTERS:
        assert reg.offset % regs.REG_BYTES == 0
        words = {reg.offset + 4 * k for k in range(reg.words)}
        assert not taken & words, reg.name
        taken |= words
    assert regs.MAP_BYTES <= 1 << regs.ADDR_BITS


def test_required_registers_exist():
    for name in ("start", "status", "insn_count", "insn_addr", "config_id", "cycles",
                 "gemm_uops", "alu_uops", "bytes_read", "bytes_written", "load_stall"):
        assert regs.register(name).name == name
    assert regs.offset("start") == 0
    assert all(regs.register(c).words == 2 for c in regs.COUNTERS)


def test_unknown_register_is_a_clear_error():
    with pytest.raises(VtaError, match="register must be one of"):
        regs.register("nope")


def test_describe_lists_every_register():
    text = regs.describe()
    assert all(reg.name in text for reg in regs.REGISTERS)
