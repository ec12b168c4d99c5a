"""The GEMM/ALU execution pipeline: one micro-op per cycle, with forwarding.

    stage 1  uop word read (address from the loop generator)
    stage 2  indices = uop fields + loop offsets; read acc[dst], acc[src], inp[src], wgt[wgt]
    stage 3  forward in-flight results, then GEMM or ALU; result registered
    stage 4  write acc[dst] and out[dst] (low out_bits of every element)

Back-to-back micro-ops that touch the same accumulator row see each other's results: the
row read in stage 2 is replaced by the result in stage 4 (written this cycle) or by the
one written the cycle before, whichever is newer, when their indices match.
"""
from __future__ import annotations

from amaranth.hdl import Module, Mux, Signal, signed, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec.isa import ALU_IMM_BITS, ALU_OPCODE_BITS

from .alu import AluCore
from .gemm import GemmCore, element_view
from .isa_layout import isa_layouts
from .sram import entry_bits, read_signature, write_signature


def op_layout() -> data.StructLayout:
    """What a micro-op carries down the pipe besides its indices."""
    return data.StructLayout({
        "is_alu": unsigned(1), "reset": unsigned(1), "alu_opcode": unsigned(ALU_OPCODE_BITS),
        "use_imm": unsigned(1), "imm": signed(ALU_IMM_BITS),
    })


class ExecPipe(wiring.Component):
    """Consumes (uop index, offsets, op) when ``valid``; ``busy`` while any stage is full."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        lay = isa_layouts(cfg)
        self.uop_layout = lay.uop
        widths = {n: lay.uop[n].shape.width for n in ("dst", "src", "wgt")}
        acc_bits = entry_bits(cfg, "acc")
        super().__init__({
            "valid": In(1),
            "uop_addr": In(cfg.addr_bits("uop")),
            "dst_offset": In(widths["dst"]),
            "src_offset": In(widths["src"]),
            "wgt_offset": In(widths["wgt"]),
            "op": In(op_layout()),
            "busy": Out(1),
            "gemm_done": Out(1),            # one micro-op retired, per cycle
            "alu_done": Out(1),
            "uop_read": In(read_signature(32, cfg.depth("uop"))),
            "acc_read_dst": In(read_signature(acc_bits, cfg.depth("acc"))),
            "acc_read_src": In(read_signature(acc_bits, cfg.depth("acc"))),
            "acc_write": In(write_signature(acc_bits, cfg.depth("acc"))),
            "inp_read": In(read_signature(entry_bits(cfg, "inp"), cfg.depth("inp"))),
            "wgt_read": In(read_signature(entry_bits(cfg, "wgt"), cfg.depth("wgt"))),
            "out_write": In(write_signature(entry_bits(cfg, "out"), cfg.depth("out"))),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        acc_aw = cfg.addr_bits("acc")
        acc_bits = entry_bits(cfg, "acc")
        # stage 1: uop read
        m.d.comb += self.uop_read.addr.eq(self.uop_addr)
        valid1, op1 = Signal(), Signal(op_layout())
        offs1 = [Signal.like(getattr(self, f"{n}_offset"), name=f"{n}_off1")
                 for n in ("dst", "src", "wgt")]
        m.d.sync += [valid1.eq(self.valid), op1.eq(self.op)]
        m.d.sync += [o.eq(getattr(self, f"{n}_offset"))
                     for o, n in zip(offs1, ("dst", "src", "wgt"))]
        # stage 2: index arithmetic and data reads
        uop = data.View(self.uop_layout, self.uop_read.data)
        dst, src, wgt = Signal(acc_aw), Signal(offs1[1].shape()), Signal(offs1[2].shape())
        m.d.comb += [dst.eq(uop.dst + offs1[0]), src.eq(uop.src + offs1[1]),
                     wgt.eq(uop.wgt + offs1[2])]
        m.d.comb += [self.acc_read_dst.addr.eq(dst), self.acc_read_src.addr.eq(src),
                     self.inp_read.addr.eq(src), self.wgt_read.addr.eq(wgt)]
        valid2, op2 = Signal(), Signal(op_layout())
        dst2, src2 = Signal(acc_aw), Signal(acc_aw)
        m.d.sync += [valid2.eq(valid1), op2.eq(op1), dst2.eq(dst), src2.eq(src)]
        # stage 3: forwarding and arithmetic
        valid3, dst3, res3 = Signal(), Signal(acc_aw), Signal(acc_bits)
        valid4, dst4, res4 = Signal(), Signal(acc_aw), Signal(acc_bits)
        is_alu3 = Signal()

        def forward(row, index):
            return Mux(valid3 & (dst3 == index), res3,
                       Mux(valid4 & (dst4 == index), res4, row))

        m.submodules.gemm = gemm = GemmCore(cfg)
        m.submodules.alu = alu = AluCore(cfg)
        acc_dst = Signal(acc_bits)
        m.d.comb += [
            acc_dst.eq(forward(self.acc_read_dst.data, dst2)),
            gemm.inp.eq(self.inp_read.data), gemm.wgt.eq(self.wgt_read.data),
            gemm.acc.eq(acc_dst),
            alu.opcode.eq(op2.alu_opcode), alu.use_imm.eq(op2.use_imm), alu.imm.eq(op2.imm),
            alu.dst.eq(acc_dst), alu.src.eq(forward(self.acc_read_src.data, src2)),
        ]
        result = Mux(op2.is_alu, alu.result, Mux(op2.reset, 0, gemm.result))
        m.d.sync += [valid3.eq(valid2), dst3.eq(dst2), res3.eq(result), is_alu3.eq(op2.is_alu)]
        # stage 4: write back
        out = element_view(cfg, "out", self.out_write.data)
        res = element_view(cfg, "acc", res3)
        m.d.comb += [
            self.acc_write.addr.eq(dst3), self.acc_write.data.eq(res3),
            self.acc_write.en.eq(valid3),
            self.out_write.addr.eq(dst3), self.out_write.en.eq(valid3),
            self.gemm_done.eq(valid3 & ~is_alu3), self.alu_done.eq(valid3 & is_alu3),
        ]
        m.d.comb += [out[k].eq(res[k][:cfg.out_bits]) for k in range(len(out))]
        m.d.sync += [valid4.eq(valid3), dst4.eq(dst3), res4.eq(res3)]
        m.d.comb += self.busy.eq(valid1 | valid2 | valid3 | valid4)
        return m
