"""The GEMM datapath of the exec pipe: operands registered in stage 3, copied in stage 4
(one copy per DSP column: the block RAMs that hold them are a long route from the DSP
rows), registered again in stage 5 (on ECP5 boards the DSPs' input registers), element
products in stage 6, the products registered again in stage 7 (a landing register the
placer can put between the DSP row and the adders: on the ULX3S both routes are long),
adder trees over stages 8 and 9, the accumulate of stage 10. Lanes past the platform's DSP
budget (``vtalab_gemm_dsp_products``) build their product from LUTs instead: two halves
registered in stage 6, added on the way into stage 7's register (hw/lut_multiplier.py).

Two elaborations compute the same accumulator values:

- *exact* (synthesis, the default): int8 operands, int16 products (on ECP5 boards that ask
  for it in the MULT18X18D's input and output registers, hw/ecp5_dsp.py), each tree level
  one bit wider: the narrowest adders;
- *wide* (cycle simulators, ``hw.verilog.for_simulator``): operands sign-extended
  once when registered, every product and sum at the accumulator's width, wrapping.
  Wrapping is exact here because the accumulate keeps only ``acc_bits`` anyway (sums and
  products modulo 2**acc_bits commute with the final truncation). Verilator stores a
  narrower signed value zero-extended and sign-extends it at every use; at full width
  nothing is extended (a product is one 64-bit multiply, truncated). The wide datapath is
  also retimed: each output's whole sum of products is computed in stage 3, straight from
  the SRAM read data, and only the BATCH x BLOCK_OUT sums are registered, in stages 3..9.
  GEMM micro-ops move one stage per cycle from stage 3 on (the stage enables are a delay
  line, hw/exec_pipe.py), so every sum reaches stage 10 in the same cycle with the same
  value, and the sums only matter there. Verilator then copies 16 sums per stage instead
  of 256 operands, products and landed products per stage.
"""
from __future__ import annotations

from amaranth.hdl import Module, signed

from vtalab.spec import Config

from .ecp5_dsp import registered_product, uses_dsp_registers
from .gemm import element_view, tree_sum
from .lut_multiplier import gemm_dsp_products, split_product
from .registers import enabled_register, replicated_register, replicates
from .verilog import for_simulator


class GemmTree:
    """Call :meth:`operands` (stage 3), then :meth:`sums` (stages 4..9, the wide datapath
    from 3), then :meth:`accumulate` (stage 10)."""

    def __init__(self, m: Module, cfg: Config, platform):
        self.m, self.cfg, self.platform = m, cfg, platform
        self.wide = for_simulator(platform)
        self.dsp_products = gemm_dsp_products(platform, cfg.macs_per_cycle)

    def operands(self, inp_data, wgt_data, enable) -> None:
        """Register the SRAM read data of the inp and wgt entries (stage 3)."""
        m, cfg = self.m, self.cfg
        self.inp, self.wgt = [], []
        if self.wide:                  # used as read in stage 3, see _retimed_sums
            self.inp = [self._extend(x) for x in element_view(cfg, "inp", inp_data)]
            self.wgt = [self._extend(x) for x in element_view(cfg, "wgt", wgt_data)]
            return
        for buffer, data, regs in (("inp", inp_data, self.inp), ("wgt", wgt_data, self.wgt)):
            for k, element in enumerate(element_view(cfg, buffer, data)):
                regs.append(enabled_register(m, element, enable, f"{buffer}4_{k}"))

    def sums(self, gemm: dict) -> list:
        """Each output's sum of products (registered in stage 9 for stage 10), in
        accumulator element order (``gemm``: the stage enables, 3..9 for the wide datapath,
        4..9 for the exact one). Exact: the operands copied per DSP in stage 4, registered
        again in stage 5, products in stage 6, landed in stage 7, sums of groups of them in
        stage 8, the group sums in stage 9."""
        cfg = self.cfg
        if self.wide:
            return self._retimed_sums(gemm)
        group = _first_tree_group(cfg.block_in)
        inp, wgt = self._relayed(gemm[4])
        inp, wgt, in_dsp = self._stage5_operands(inp, wgt, gemm[5])
        sums = []
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                products = [self._register(
                    self._product(_copy(inp[b * cfg.block_in + i], o),
                                  _copy(wgt[o * cfg.block_in + i], b), in_dsp, gemm[6],
                                  f"prod7_{b}_{o}_{i}", lane=(b * cfg.block_out + o)
                                  * cfg.block_in + i),
                    gemm[7], f"land8_{b}_{o}_{i}") for i in range(cfg.block_in)]
                partial = [self._register(self._sum(products[g:g + group]), gemm[8],
                                          f"part9_{b}_{o}_{g // group}")
                           for g in range(0, cfg.block_in, group)]
                sums.append(self._register(self._sum(partial), gemm[9], f"sum10_{b}_{o}"))
        return sums

    def _retimed_sums(self, gemm: dict) -> list:
        """The wide datapath's sums: computed whole in stage 3, then delayed to stage 9."""
        cfg, sums = self.cfg, []
        for b in range(cfg.batch):
            for o in range(cfg.block_out):
                total = self._sum([(self.inp[b * cfg.block_in + i] *
                                    self.wgt[o * cfg.block_in + i])[:cfg.acc_bits]
                                   for i in range(cfg.block_in)])
                for stage in range(3, 10):
                    total = self._register(total, gemm[stage], f"sum{stage + 1}_{b}_{o}")
                sums.append(total)
        return sums

    def accumulate(self, acc_element, tree_total):
        """The new accumulator element (``acc_bits`` wide, wrapping)."""
        if self.wide:
            acc_element = acc_element.as_unsigned()
        return (acc_element + tree_total)[:self.cfg.acc_bits]

    def _extend(self, element):
        """``element`` sign-extended to acc_bits by arithmetic (((x + top) mod 2**n) - top,
        modulo 2**acc_bits): Amaranth writes a sign extension as a concatenation of copies
        of the sign bit, which Verilator assembles bit by bit, and Yosys rewrites the
        equivalent ``x ^ top`` into bit operations (twice the instructions per element)."""
        width, bits = len(element), self.cfg.acc_bits
        top = 1 << (width - 1)
        return ((element.as_unsigned() + top)[:width] + ((1 << bits) - top))[:bits]

    def _relayed(self, enable) -> tuple:
        """The operands copied in stage 4, per element a list of its copies (``_copy``
        picks the one a DSP reads): in the open flow one copy of an inp element per output
        column and of a wgt element per batch row, each placed on the way to its DSP
        (nextpnr does not replicate registers; one inp element feeds BLOCK_OUT DSPs spread
        over the DSP rows); elsewhere one register per element."""
        cfg = self.cfg
        return ([self._copies(x, cfg.block_out, enable, f"inp5_{k}")
                 for k, x in enumerate(self.inp)],
                [self._copies(x, cfg.batch, enable, f"wgt5_{k}")
                 for k, x in enumerate(self.wgt)])

    def _copies(self, value, copies: int, enable, name: str) -> list:
        regs = replicated_register(self.m, self.platform, value, copies, name, enable=enable,
                                   reset=False)
        distinct = regs if replicates(self.platform) else regs[:1]
        return [reg.as_signed() for reg in distinct]

    def _stage5_operands(self, inp: list, wgt: list, enable):
        """The operands as registered in stage 5: on ECP5 boards inside each DSP (the enable
        goes to the product's ``operand_enable``), else once per copy here."""
        if uses_dsp_registers(self.platform):
            return inp, wgt, enable

        def registered(elements, name):
            return [[self._register(c, enable, f"{name}_{k}_{j}") for j, c in enumerate(copies)]
                    for k, copies in enumerate(elements)]
        return registered(inp, "inp6"), registered(wgt, "wgt6"), None

    def _product(self, a, b, operand_enable, enable, name, lane: int):
        """Lane ``lane``'s product, registered in stage 6 (a multiplier), or its two
        halves registered there and added on the way to stage 7 (LUTs, past the DSPs)."""
        if lane >= self.dsp_products:
            return split_product(self.m, a, b, enable, name, operand_enable=operand_enable,
                                 platform=self.platform)
        return registered_product(self.m, self.platform, a, b, enable, name,
                                  operand_enable=operand_enable)

    def _sum(self, values):
        return tree_sum(values, self.cfg.acc_bits if self.wide else None)

    def _register(self, value, enable, name):
        shape = self.cfg.acc_bits if self.wide else signed(len(value))
        return enabled_register(self.m, value, enable, name, shape)


def _copy(copies: list, reader: int):
    """The copy of an operand that its ``reader``-th DSP reads (the only one when the
    platform keeps one)."""
    return copies[reader % len(copies)]


def _first_tree_group(count: int) -> int:
    """Products summed in stage 8: the first half of the tree's levels (rounded up)."""
    levels = (count - 1).bit_length()
    return 1 << ((levels + 1) // 2)
