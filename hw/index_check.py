"""The exec pipe's micro-op index check: an index past its buffer is an error, not a wrap.

A micro-op's indices are its uop fields plus the loop offsets, added in stage 1c at the
fields' widths. An index is past its buffer when the loop offset had already wrapped
(hw/uop_loop.py's ``<name>_past``), when the add carries out, or when it lands above the
buffer's depth in a field wider than the buffer (src: the wider of inp and acc). Which
indices count follows the functional simulator: GEMM dst (acc), and src (inp) and wgt
unless it resets; ALU dst (acc) and src (acc) unless it uses the immediate.

The flags travel with the micro-op through stages 1..1r (held with the front), the carries
are registered in 1c beside the indices, and the error in 1d, with the 4-bit ``tag`` the
compute module gave the micro-op's instruction (hw/error_latch.py's ``lag``).
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal

from vtalab.spec import Config

from .error_latch import LAG_BITS

NAMES = ("dst", "src", "wgt")


def index_check(m: Module, cfg: Config, moving, pasts: list, tag, uop, offs1r: list,
                valid1c, op1c, idx1c) -> tuple[Signal, Signal]:
    """(error, tag) of the micro-op in stage 1d; ``pasts`` and ``tag`` enter with stage 1,
    ``uop`` / ``offs1r`` are the stage-1r word view and offsets, the rest stage 1c's."""
    carried = Cat(*pasts, tag)
    stages = [Signal(len(carried), name=f"idx_flags{s}", reset_less=True)
              for s in ("1", "1a", "1r", "1c")]
    over = {n: Signal(name=f"{n}_over1c", reset_less=True) for n in NAMES}
    error, tag1d = Signal(name="index_error1d"), Signal(LAG_BITS, name="index_tag1d")
    with m.If(moving):
        m.d.sync += stages[0].eq(carried)
        m.d.sync += [later.eq(earlier) for earlier, later in zip(stages, stages[1:])]
        for k, (name, off) in enumerate(zip(NAMES, offs1r)):
            wide = getattr(uop, name) + off                # one bit wider: the carry
            m.d.sync += over[name].eq(stages[2][k] | wide[-1])
        m.d.sync += [error.eq(valid1c & _past(cfg, op1c, idx1c, over)),
                     tag1d.eq(stages[3][len(NAMES):])]
    return error, tag1d


def _past(cfg: Config, op, idx, over):
    dst, src, wgt = idx
    dst_past = over["dst"] | _above(dst, cfg.addr_bits("acc"))
    src_inp = over["src"] | _above(src, cfg.addr_bits("inp"))
    src_acc = over["src"] | _above(src, cfg.addr_bits("acc"))
    wgt_past = over["wgt"] | _above(wgt, cfg.addr_bits("wgt"))
    gemm = dst_past | (~op.reset & (src_inp | wgt_past))
    alu = dst_past | (~op.use_imm & src_acc)
    return (op.is_alu & alu) | (~op.is_alu & gemm)


def _above(index, bits: int):
    """Whether ``index`` is at least 2**bits (the depth of a buffer of ``bits`` address
    bits), for an index field that may be wider."""
    return index[bits:].any() if len(index) > bits else 0
