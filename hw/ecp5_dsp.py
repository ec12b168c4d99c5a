"""Registered products in ECP5 MULT18X18D blocks, and the generic equivalent.

Yosys maps ``a * b`` to a MULT18X18D without its internal registers (it has no ECP5 DSP
register packing), so a product register stays in the fabric, a route away from the DSP.
On an ECP5 board that asks for it (``Board.dsp_product_registers``, which the FPGA build
puts on the platform) the exec pipe's product register is the MULT18X18D's own output
register (``REG_OUTPUT_CLK``, clocked by the sync domain, clock enable ``CE0``, never
reset; GSR off: reset-less like the generic one). That moved the OrangeCrab-25F from 92.1
to 104.9 MHz. With ``operand_enable`` the operands are registered a cycle before too, in
the MULT18X18D's input registers (``REG_INPUTA_CLK``/``REG_INPUTB_CLK``, enable ``CE1``):
the route from the block RAMs that hold the operands to the DSP row then ends at a
register instead of the multiplier (3.5 ns of setup at grade 6). The exec pipe uses both
for the GEMM products and the ALU MUL's unsigned partial products. Everywhere else
(simulation, Verilog for the vendor flows) they are ordinary registers, loaded when their
enable is high and held otherwise.
"""
from __future__ import annotations

from amaranth.hdl import Cat, ClockSignal, Const, Instance, Module, Signal, signed

from .registers import enabled_register

#: width of a MULT18X18D operand and of its product output
DSP_OPERAND_BITS, _PRODUCT_BITS = 18, 36


def uses_dsp_registers(platform) -> bool:
    return (getattr(platform, "family", None) == "ecp5"
            and getattr(platform, "vtalab_dsp_product_registers", False))


def registered_product(m: Module, platform, a, b, enable, name: str,
                       operand_enable=None) -> Signal:
    """A register holding the product of ``a`` and ``b`` (loaded when ``enable``); signed
    when both are, unsigned when both are (the MULT18X18D's SIGNEDA/SIGNEDB). With
    ``operand_enable``, the product of ``a`` and ``b`` as registered a cycle earlier (loaded
    when ``operand_enable``): two cycles from operands to product."""
    width = len(a) + len(b)
    signs = {a.shape().signed, b.shape().signed}
    if len(signs) != 1:
        raise TypeError(f"registered_product operands must both be signed or both unsigned, "
                        f"not {a.shape()} and {b.shape()}")
    is_signed = signs.pop()
    product = Signal(signed(width) if is_signed else width, name=name, reset_less=True)
    if not uses_dsp_registers(platform) or max(len(a), len(b)) > DSP_OPERAND_BITS:
        if operand_enable is not None:
            a = enabled_register(m, a, operand_enable, f"{name}_a")
            b = enabled_register(m, b, operand_enable, f"{name}_b")
        with m.If(enable):
            m.d.sync += product.eq(a * b)
        return product
    raw = Signal(_PRODUCT_BITS, name=f"{name}_p")
    inputs = "NONE" if operand_enable is None else "CLK0"
    a_low, b_low = _low_zeros(a), _low_zeros(b)
    m.submodules[f"{name}_dsp"] = Instance(
        "MULT18X18D",
        p_REG_INPUTA_CLK=inputs, p_REG_INPUTA_CE="CE1", p_REG_INPUTA_RST="RST0",
        p_REG_INPUTB_CLK=inputs, p_REG_INPUTB_CE="CE1", p_REG_INPUTB_RST="RST0",
        p_REG_PIPELINE_CLK="NONE",
        p_REG_OUTPUT_CLK="CLK0", p_REG_OUTPUT_CE="CE0", p_REG_OUTPUT_RST="RST0",
        p_GSR="DISABLED", p_RESETMODE="SYNC",
        p_MULT_BYPASS="DISABLED", p_CLK0_DIV="ENABLED",
        i_CLK0=ClockSignal("sync"), i_CE0=enable, i_RST0=Const(0),
        i_CE1=Const(0) if operand_enable is None else operand_enable,
        i_SIGNEDA=Const(is_signed), i_SIGNEDB=Const(is_signed),
        i_SOURCEA=Const(0), i_SOURCEB=Const(0),
        **_bits("i_A", _operand(a, a_low)), **_bits("i_B", _operand(b, b_low)),
        **_bits("o_P", raw),
    )
    m.d.comb += product.eq(raw[a_low + b_low:a_low + b_low + width])
    return product


def _low_zeros(value) -> int:
    """Zero bits below a signed operand in its 18-bit DSP input (see :func:`_operand`)."""
    return DSP_OPERAND_BITS - len(value) if value.shape().signed else 0


def _operand(value, low_zeros: int):
    """The 18-bit DSP operand. A signed value sits in the top bits over ``low_zeros``
    constant zeros (``value * 2**low_zeros``, exact, no sign extension): a constant DSP
    input is a tie-off set in the bitstream, while copies of the sign bit are routed, 11
    pins per int8 operand; the product then sits ``low_zeros`` of both operands higher in
    P. An unsigned value is zero-extended (constant pins again)."""
    if value.shape().signed:
        return Cat(Const(0, low_zeros), value)
    return Cat(value, Const(0, DSP_OPERAND_BITS - len(value)))


def _bits(prefix: str, value) -> dict:
    """One Instance port per bit: the MULT18X18D's ports are single bits (A0..A17, P0..)."""
    return {f"{prefix}{k}": value[k] for k in range(len(value))}
