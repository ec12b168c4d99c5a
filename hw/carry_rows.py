"""Gated sums of shifted copies of ``a`` built as rows of ECP5 carry cells (CCU2C).

A LUT product (hw/lut_multiplier.py) adds copies of ``a``, each gated by one bit of ``b``.
Written as ``Mux(bit, a, 0)`` plus ``+``, Yosys makes one LUT4 per gated bit and a carry
chain per adder: ~160 LUT4 and 18 CCU2C per int8 x int8 product. Each half of a CCU2C is a
LUT4 whose output is the propagate of its bit, with the generate taken from the same
LUT's entries at C = D = 0; so the AND of a partial-product bit fits in the adder's own
LUT:

    first row   s = t0 + t1:     F = (A & B) ^ (C & D)   A, B = a_i-1, b1; C, D = a_i, b0
    later rows  s = s + t_j:     F = C ^ (A & B)         A, B = a_i-j, b_j; C = s_i
    a subtracted term (on A, B): ~(A & B) instead of (A & B), carry in 1 (two's complement)

and the generate (F at C = D = 0) is ``A & B`` (or its complement when that term is
subtracted), the addend on A and B itself, which is what a full adder's carry must be
when the propagate is 0: so a subtracted term always sits on A and B. A row is n + 1 carry
bits for an n-bit ``a``; the bits of ``s`` below a row's shift pass through untouched.
An int8 half (four terms) is three rows, 15 CCU2C.

Only ECP5 open-flow platforms get the cells; elsewhere (simulators, the RTL synthesis
netlist, vendor flows) the same sum is a balanced tree of ``+`` (hw/gemm.py tree_sum).
tests/fpga/test_carry_rows.py proves both equal for every operand with Yosys' own CCU2C
model.
"""
from __future__ import annotations

from amaranth.hdl import Cat, Const, Instance, Mux, Signal

from .gemm import tree_sum


def _init(function) -> Const:
    """A LUT4's INIT: entry ``D*8 + C*4 + B*2 + A`` is ``function(A, B, C, D)``."""
    value = sum(function(k & 1, (k >> 1) & 1, (k >> 2) & 1, (k >> 3) & 1) << k
                for k in range(16))
    return Const(value, 16)


#: F of a first row's bit, by whether its second term (on A, B) is subtracted
FIRST_ROW = {neg: _init(lambda a, b, c, d, neg=neg: (a & b) ^ neg ^ (c & d))
             for neg in (0, 1)}
#: F of a later row's bit (C is the running sum's bit), by whether its term is subtracted
LATER_ROW = {neg: _init(lambda a, b, c, d, neg=neg: c ^ (a & b) ^ neg) for neg in (0, 1)}
_UNUSED = (Const(0, 16), (Const(0),) * 4)


def uses_carry_cells(platform) -> bool:
    return getattr(platform, "family", None) == "ecp5"


def gated_sum(m, platform, a, bits: list, top_negative: bool, name: str):
    """``sum_j (bits[j] ? a : 0) << j`` for a signed ``a``, the last term subtracted when
    ``top_negative`` (``bits`` read as a signed number): signed, ``len(a) + len(bits)``
    bits wide (``len(a)`` for one unsigned bit). Carry-cell rows on ECP5 open-flow
    platforms, a balanced adder tree elsewhere."""
    if uses_carry_cells(platform):
        return _rows(m, a, bits, top_negative, name)
    terms = [Mux(bit, a, 0) << j for j, bit in enumerate(bits)]
    if top_negative:
        terms[-1] = -terms[-1]
    return tree_sum(terms)


def _rows(m, a, bits: list, top_negative: bool, name: str):
    """:func:`gated_sum` as rows of CCU2C cells (see the module's table)."""
    n, k = len(a), len(bits)
    negative = [top_negative and j == k - 1 for j in range(k)]

    def a_bit(i):                    # a sign-extended; zeros below bit 0
        return a[min(i, n - 1)] if i >= 0 else Const(0)

    if k == 1:
        row = [(LATER_ROW[negative[0]], (a_bit(i), bits[0], Const(0), Const(0)))
               for i in range(n + negative[0])]
        return Cat(*_chain(m, f"{name}_r0", row, negative[0])).as_signed()
    row = [(FIRST_ROW[negative[1]], (a_bit(i - 1), bits[1], a_bit(i), bits[0]))
           for i in range(n + 2)]
    total = _chain(m, f"{name}_r1", row, negative[1])
    for j in range(2, k):           # bits below j pass through; n + 1 carry bits from j
        row = [(LATER_ROW[negative[j]], (a_bit(i - j), bits[j], total[min(i, len(total) - 1)],
                                         Const(0)))
               for i in range(j, n + j + 1)]
        total = total[:j] + _chain(m, f"{name}_r{j}", row, negative[j])
    return Cat(*total).as_signed()


def _chain(m, name: str, cells: list, carry_in: bool) -> list:
    """One carry chain of CCU2C cells, two bits each: ``cells`` holds each bit's (INIT,
    (A, B, C, D)); returns the bits' sums (an odd last cell's upper half is unused)."""
    count = len(cells)
    cells = list(cells) + [_UNUSED] * (count % 2)
    carry, sums = Const(int(carry_in)), []
    for pair in range(len(cells) // 2):
        (init0, (a0, b0, c0, d0)), (init1, (a1, b1, c1, d1)) = cells[2 * pair:2 * pair + 2]
        sum0, sum1 = Signal(name=f"{name}_s{2 * pair}"), Signal(name=f"{name}_s{2 * pair + 1}")
        carry_out = Signal(name=f"{name}_c{pair}")
        m.submodules[f"{name}_cc{pair}"] = Instance(
            "CCU2C", p_INIT0=init0, p_INIT1=init1, p_INJECT1_0="NO", p_INJECT1_1="NO",
            i_CIN=carry, i_A0=a0, i_B0=b0, i_C0=c0, i_D0=d0,
            i_A1=a1, i_B1=b1, i_C1=c1, i_D1=d1, o_S0=sum0, o_S1=sum1, o_COUT=carry_out)
        carry = carry_out
        sums += [sum0, sum1]
    return sums[:count]
