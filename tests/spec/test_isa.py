"""ISA: VTA-identical encoding at the default preset, round trips, range errors."""
import pytest
from hypothesis import given, settings, strategies as st

from vtalab.spec import Isa, IsaError, preset
from vtalab.spec.isa import AluInsn, AluOp, FinishInsn, GemmInsn, Mem, MemInsn, Opcode, Uop

PRESETS = ["default", "tiny", "block8", "wide"]


def vta_word(fields):
    """Assemble a word from (value, lsb) pairs taken from VTA's hw_spec.h."""
    return sum(value << lsb for value, lsb in fields)


def test_load_matches_vta_hw_spec():
    isa = Isa(preset("default"))
    insn = MemInsn(opcode=Opcode.LOAD, mem=Mem.INP, pop_next=True, push_next=True,
                   sram_base=5, dram_base=0xDEADBEEF, y_size=2, x_size=3, x_stride=4,
                   y_pad_0=1, y_pad_1=2, x_pad_0=3, x_pad_1=4)
    expected = vta_word([(0, 0), (1, 4), (1, 6), (2, 7), (5, 10), (0xDEADBEEF, 26),
                         (2, 64), (3, 80), (4, 96), (1, 112), (2, 116), (3, 120), (4, 124)])
    assert isa.encode(insn) == expected == 0x4321_0004_0003_0002_037AB6FB_BC001550


def test_gemm_matches_vta_hw_spec():
    isa = Isa(preset("default"))
    insn = GemmInsn(pop_prev=True, push_prev=True, reset=True, uop_bgn=7, uop_end=8191,
                    iter_out=3, iter_in=16383, dst_factor_out=2047, dst_factor_in=1,
                    src_factor_out=2, src_factor_in=3, wgt_factor_out=1023, wgt_factor_in=5)
    expected = vta_word([(2, 0), (1, 3), (1, 5), (1, 7), (7, 8), (8191, 21), (3, 35),
                         (16383, 49), (2047, 64), (1, 75), (2, 86), (3, 97), (1023, 108),
                         (5, 118)])
    assert isa.encode(insn) == expected


def test_alu_matches_vta_hw_spec():
    isa = Isa(preset("default"))
    insn = AluInsn(push_next=True, uop_bgn=1, uop_end=2, iter_out=4, iter_in=5,
                   dst_factor_out=6, dst_factor_in=7, src_factor_out=8, src_factor_in=9,
                   alu_op=AluOp.SHR, use_imm=True, imm=-2)
    expected = vta_word([(4, 0), (1, 6), (1, 8), (2, 21), (4, 35), (5, 49), (6, 64), (7, 75),
                         (8, 86), (9, 97), (3, 108), (1, 111), (0xFFFE, 112)])
    assert isa.encode(insn) == expected


def test_uop_matches_vta_hw_spec():
    isa = Isa(preset("default"))
    assert isa.encode_uop(Uop(dst=3, src=5, wgt=7)) == 3 | 5 << 11 | 7 << 22


def test_finish_is_opcode_three():
    isa = Isa(preset("default"))
    assert isa.encode(FinishInsn(pop_next=True)) == 3 | 1 << 4


def _loop_fields(isa, layout):
    names = ["uop_bgn", "uop_end", "iter_out", "iter_in", "dst_factor_out", "dst_factor_in",
             "src_factor_out", "src_factor_in"]
    return {n: st.integers(0, layout[n].max_value) for n in names}


def _deps():
    return {n: st.booleans() for n in ("pop_prev", "pop_next", "push_prev", "push_next")}


def insn_strategy(isa):
    mem = isa.mem
    mem_fields = {n: st.integers(0, mem[n].max_value) for n in
                  ("sram_base", "dram_base", "y_size", "x_size", "x_stride",
                   "y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1")}
    return st.one_of(
        st.builds(MemInsn, opcode=st.sampled_from([Opcode.LOAD, Opcode.STORE]),
                  mem=st.sampled_from(list(Mem)), **mem_fields, **_deps()),
        st.builds(GemmInsn, reset=st.booleans(), **_loop_fields(isa, isa.gemm),
                  wgt_factor_out=st.integers(0, isa.gemm["wgt_factor_out"].max_value),
                  wgt_factor_in=st.integers(0, isa.gemm["wgt_factor_in"].max_value), **_deps()),
        st.builds(AluInsn, reset=st.booleans(), **_loop_fields(isa, isa.alu),
                  alu_op=st.sampled_from(list(AluOp)), use_imm=st.booleans(),
                  imm=st.integers(-(1 << 15), (1 << 15) - 1), **_deps()),
        st.builds(FinishInsn, **_deps()),
    )


@pytest.mark.parametrize("name", PRESETS)
def test_round_trip_every_kind(name):
    isa = Isa(preset(name))

    @settings(max_examples=300, deadline=None)
    @given(insn_strategy(isa))
    def check(insn):
        word = isa.encode(insn)
        assert 0 <= word < 1 << 128
        assert isa.decode(word) == insn
        assert isa.decode_program(isa.encode_program([insn])) == [insn]

    check()


@pytest.mark.parametrize("name", PRESETS)
def test_uop_round_trip(name):
    isa = Isa(preset(name))
    lay = isa.uop

    @settings(max_examples=200, deadline=None)
    @given(st.integers(0, lay["dst"].max_value), st.integers(0, lay["src"].max_value),
           st.integers(0, lay["wgt"].max_value))
    def check(dst, src, wgt):
        word = isa.encode_uop(Uop(dst, src, wgt))
        assert isa.decode_uop(word) == Uop(dst, src, wgt)
        words = isa.encode_uops([dst], [src], [wgt])
        assert int(words[0]) == word
        assert [int(v[0]) for v in isa.decode_uops(words)] == [dst, src, wgt]

    check()


def test_out_of_range_names_field_width_and_parameter():
    isa = Isa(preset("default"))
    with pytest.raises(IsaError, match=r"uop_bgn must fit in 13 bits \(uop_depth 8192"):
        isa.encode(GemmInsn(uop_bgn=8192))
    with pytest.raises(IsaError, match=r"imm must fit in 16 signed bits"):
        isa.encode(AluInsn(imm=40000))
    with pytest.raises(IsaError, match=r"dst must fit in 11 bits \(acc_depth 2048"):
        isa.encode_uops([2048], [0], [0])
    with pytest.raises(IsaError, match="x_pad_1"):
        isa.encode(MemInsn(x_pad_1=16))


def test_decode_rejects_bad_words():
    isa = Isa(preset("default"))
    with pytest.raises(IsaError, match="opcode must be one of"):
        isa.decode(7)
    with pytest.raises(IsaError, match="multiple of 16"):
        isa.decode_program(b"\0" * 17)


def test_decode_ignores_unused_bits():
    # VTA's own streams sometimes carry garbage in bit 63 of GEMM words.
    isa = Isa(preset("default"))
    word = isa.encode(GemmInsn(uop_end=4))
    assert isa.decode(word | 1 << 63) == GemmInsn(uop_end=4)


def test_disasm_prints_every_field_in_decimal():
    isa = Isa(preset("default"))
    line = isa.disasm(MemInsn(mem=Mem.ACC, dram_base=1234, y_pad_1=3))
    assert line.startswith("LOAD   ACC")
    for text in ("dram_base=1234", "y_pad_1=3", "pop_prev=0", "x_stride=1"):
        assert text in line


def test_sat_immediate_packs_shift_and_relu():
    from vtalab.spec.isa import sat_fields, sat_imm
    cfg = preset("default")
    assert sat_imm(cfg, 7) == 7 and sat_imm(cfg, 7, relu=True) == 7 | 32
    assert sat_imm(cfg, -3) == 29                   # read back as -3, like SHR's amount
    for shift in range(-16, 16):
        for relu in (False, True):
            assert sat_fields(cfg, sat_imm(cfg, shift, relu)) == (shift, relu)
    with pytest.raises(IsaError, match="SAT shift must be in -16..15"):
        sat_imm(cfg, 16)


def test_new_alu_opcodes_round_trip_and_disassemble():
    isa = Isa(preset("default"))
    assert (AluOp.MOV, AluOp.SAT) == (5, 6)         # MOV: the number Intel's VTA model uses
    insn = AluInsn(alu_op=AluOp.SAT, use_imm=True, imm=32 | 9, uop_end=2)
    assert isa.decode(isa.encode(insn)) == insn
    assert "sat=shr9+relu" in isa.disasm(insn) and isa.disasm(insn).startswith("ALU    SAT")
    with pytest.raises(IsaError, match="alu_opcode must be one of"):
        isa.decode(isa.encode(insn) | (7 << isa.alu["alu_opcode"].lsb))
