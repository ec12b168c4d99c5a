"""GEMM products built from LUTs and carry chains, for lanes beyond a part's DSP count.

Yosys maps every ``a * b`` of the open flow to a MULT18X18D, and nextpnr fails when there
are more of them than the part has. A product whose lane is past the platform's DSP budget
(``vtalab_gemm_dsp_products``, set by the FPGA build from ``Board.hard_dsp`` and the DSPs
the ALU and the store take) is written here as gated partial products and adders instead:
no ``$mul`` cell, nothing for Yosys' DSP mapper to take.

``b``, signed, is split into its low half (unsigned) and its high half (signed):
``a * b = a * lo(b) + (a * hi(b)) << h``. Each half is a sum of copies of ``a`` gated by
one bit of ``b``, the high half's top bit subtracted (two's complement weight), registered
in the product's stage (on ECP5 rows of carry cells with the ANDs in their LUTs, else a
balanced adder tree: hw/carry_rows.py); the caller's landing register (one stage later)
adds the halves. Exact: the true product fits the
result's ``len(a) + len(b)`` bits, and the halves' sum is taken modulo that.
"""
from __future__ import annotations

from amaranth.hdl import signed

from .carry_rows import gated_sum
from .registers import enabled_register


def gemm_dsp_products(platform, products: int) -> int:
    """How many of the GEMM's ``products`` (in (batch, out, in) order) use a multiplier
    (a DSP when synthesized); the rest are :func:`split_product`. ``None`` on the
    platform (the default): all."""
    budget = getattr(platform, "vtalab_gemm_dsp_products", None)
    return products if budget is None else max(0, min(products, budget))


def split_product(m, a, b, enable, name: str, operand_enable=None, platform=None):
    """``a * b`` (both signed) from LUTs: the two halves registered when ``enable`` (the
    product's stage), returned as the expression that adds them (for the next stage's
    register). With ``operand_enable`` the operands are registered a stage before. Each
    half is rows of carry cells on ECP5 open-flow platforms (hw/carry_rows.py)."""
    if not (a.shape().signed and b.shape().signed) or len(b) < 2:
        raise TypeError(f"split_product operands must be signed and b at least 2 bits, "
                        f"not {a.shape()} and {b.shape()}")
    if operand_enable is not None:
        a = enabled_register(m, a, operand_enable, f"{name}_a")
        b = enabled_register(m, b, operand_enable, f"{name}_b")
    low_bits = len(b) // 2
    width = len(a) + len(b)
    low = gated_sum(m, platform, a, [b[j] for j in range(low_bits)], False, f"{name}_lo")
    high = gated_sum(m, platform, a, [b[j] for j in range(low_bits, len(b))], True,
                     f"{name}_hi")
    low = enabled_register(m, low, enable, f"{name}_lo", signed(len(a) + low_bits))
    high = enabled_register(m, high, enable, f"{name}_hi",
                            signed(len(a) + len(b) - low_bits))
    return (low + (high << low_bits))[:width].as_signed()

