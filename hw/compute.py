"""The compute module: owns the uop and accumulator buffers; LOAD uop/acc, GEMM, ALU, FINISH.

Per instruction: pop l2c (pop_prev) and s2c (pop_next) tokens first, run, push c2l
(push_prev) and c2s (push_next) last. GEMM and ALU stream one micro-op per cycle from the
loop generator into the execution pipeline; the next instruction starts while the pipeline
drains. A GEMM/ALU that pushes does not hold the module for the drain either: its pushes
wait in a small queue, each with the count of micro-ops that must have left the write
stage first, and go out the cycle after they have (the cycle the drain would have pushed
them in), while the next instruction already runs. A LOAD or FINISH drains the pipe and
that queue first. An entry of a uop/acc LOAD past its buffer, or a micro-op index past its
buffer (found in the exec pipe a few cycles on, hence the tag that names its instruction),
is latched as the module's error (hw/error_latch.py).
"""
from __future__ import annotations

from amaranth.hdl import Module, Signal
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec.isa import INSN_BITS, LOOP_OPCODES, Mem, Opcode
from vtalab.spec.regs import ERROR_CODE_BITS, ErrorCode

from .channel_slices import FifoSlice
from .dma_reader import DmaReader
from .error_latch import INDEX_BITS, LAG_BITS, ErrorLatch
from .exec_pipe import ExecPipe
from .forward import acc_lane_groups
from .interfaces import ReadClientSignature, insn_stream
from .isa_layout import isa_layouts
from .load import mux_read_clients
from .registers import replicated_register
from .sram import Sram, entry_bits, read_signature, write_signature
from .uop_loop import OFFSETS, UopLoop

#: pushes of retired GEMM/ALU instructions waiting for their micro-ops to be written
PENDING_PUSHES = 8
#: width of the micro-op counters they compare (a wrapping difference: far more than the
#: pipe holds)
UOP_COUNT_BITS = 8


class Compute(wiring.Component):
    """Takes LOAD uop/acc, GEMM, ALU and FINISH instructions from ``insn``."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        super().__init__({
            "insn": In(insn_stream()),
            "pop_l2c": Out(1), "has_l2c": In(1), "pop_s2c": Out(1), "has_s2c": In(1),
            "push_c2l": Out(1), "push_c2s": Out(1),
            "dma": Out(ReadClientSignature(cfg.bus_bits)),
            "inp_read": In(read_signature(entry_bits(cfg, "inp"), cfg.depth("inp"))),
            "wgt_read": In(read_signature(entry_bits(cfg, "wgt"), cfg.depth("wgt"))),
            "wgt_read_addrs": Out(data.ArrayLayout(cfg.addr_bits("wgt"), cfg.block_out)),
            "out_write": In(write_signature(entry_bits(cfg, "out"), cfg.depth("out"))),
            "busy": Out(1), "wait_l2c": Out(1), "wait_s2c": Out(1),
            "finish": Out(1), "gemm_uop": Out(1), "alu_uop": Out(1),
            "pipe_busy": Out(1),
            "clear": In(1), "error_code": Out(ERROR_CODE_BITS), "error_index": Out(INDEX_BITS),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        word = Signal(INSN_BITS)
        lay = isa_layouts(cfg)
        mem, gemm, alu = data.View(lay.mem, word), data.View(lay.gemm, word), \
            data.View(lay.alu, word)
        m.submodules.uop_sram = uop_sram = Sram.for_buffer(cfg, "uop")
        slices = acc_lane_groups(cfg, platform)
        m.submodules.acc_sram = acc_sram = Sram.for_buffer(
            cfg, "acc", read_ports=2, write_slices=slices)
        m.submodules.uop_dma = uop_dma = DmaReader(cfg, "uop", two_d=False)
        m.submodules.acc_dma = acc_dma = DmaReader(cfg, "acc", pad=True, write_copies=slices)
        m.submodules.loop = loop = UopLoop(cfg)
        m.submodules.pipe = pipe = ExecPipe(cfg)
        self._wire_dma(m, word, uop_dma, acc_dma, uop_sram, pipe, mem)
        self._wire_acc_write(m, platform, acc_sram, pipe, acc_dma)
        self._wire_pipe(m, gemm, alu, loop, pipe, uop_sram, acc_sram)
        m.d.comb += [self.gemm_uop.eq(pipe.gemm_done), self.alu_uop.eq(pipe.alu_done),
                     self.pipe_busy.eq(pipe.busy)]
        self._control(m, word, gemm, loop, pipe, uop_dma, acc_dma)
        self._errors(m, pipe, uop_dma, acc_dma)
        return m

    def _errors(self, m, pipe, uop_dma, acc_dma):
        """The first error: a micro-op's index (its instruction ``lag`` back, from the tag it
        carried), else a LOAD's entry past the buffer (the current instruction)."""
        m.submodules.errors = errors = ErrorLatch()
        m.d.comb += [errors.clear.eq(self.clear),
                     errors.taken.eq(self.insn.valid & self.insn.ready),
                     pipe.tag.eq(errors.count[:LAG_BITS]),
                     self.error_code.eq(errors.latched), self.error_index.eq(errors.index)]
        with m.If(pipe.index_error):
            m.d.comb += [errors.error.eq(1), errors.code.eq(ErrorCode.INDEX_RANGE),
                         errors.lag.eq(errors.count[:LAG_BITS] - pipe.error_tag)]
        with m.Else():
            m.d.comb += [errors.error.eq(uop_dma.overflow | acc_dma.overflow),
                         errors.code.eq(ErrorCode.SRAM_RANGE)]

    def _wire_dma(self, m, word, uop_dma, acc_dma, uop_sram, pipe, mem):
        is_acc = Signal()
        with m.If(uop_dma.start | acc_dma.start):
            m.d.sync += is_acc.eq(acc_dma.start)
        mux_read_clients(m, self.dma, [uop_dma.dma, acc_dma.dma], is_acc)
        m.d.comb += [uop_dma.insn.eq(word), acc_dma.insn.eq(word)]
        m.d.comb += [uop_sram.write.addr.eq(uop_dma.write.addr),
                     uop_sram.write.data.eq(uop_dma.write.data),
                     uop_sram.write.en.eq(uop_dma.write.en)]

    @staticmethod
    def _wire_acc_write(m, platform, acc_sram, pipe, acc_dma):
        """The exec pipe's write-back, else the acc LOAD's, into each slice of the
        accumulator: each slice's multiplexer selects with a copy of the pipe's write
        enable of its own (loaded from the stage before: the same value every cycle), and
        takes copies of both writers' addresses and of the LOAD's enable, not one
        flip-flop routed to the address and enable pins of every block RAM."""
        ports = acc_sram.write_ports()
        pipe_writes = replicated_register(m, platform, pipe.acc_write_next, len(ports),
                                          "acc_write_pipe")
        bits = len(ports[0].data)
        for k, (port, pipe_write) in enumerate(zip(ports, pipe_writes)):
            lanes = slice(k * bits, (k + 1) * bits)
            dma = acc_dma.write_copies[k]
            with m.If(pipe_write):
                m.d.comb += [port.addr.eq(pipe.acc_write_addrs[k]),
                             port.data.eq(pipe.acc_write.data[lanes]), port.en.eq(1)]
            with m.Else():
                m.d.comb += [port.addr.eq(dma.addr), port.data.eq(acc_dma.write.data[lanes]),
                             port.en.eq(dma.en)]

    def _wire_pipe(self, m, gemm, alu, loop, pipe, uop_sram, acc_sram):
        for name in ("uop_bgn", "uop_end", "iter_out", "iter_in"):
            m.d.comb += getattr(loop, name).eq(gemm[name])
        for name in OFFSETS:
            for level in ("out", "in"):
                field = f"{name}_factor_{level}"
                m.d.comb += getattr(loop, field).eq(gemm[field])
            m.d.comb += [getattr(pipe, f"{name}_offset").eq(getattr(loop, f"{name}_offset")),
                         getattr(pipe, f"{name}_past").eq(getattr(loop, f"{name}_past"))]
        m.d.comb += [
            pipe.valid.eq(loop.busy), pipe.uop_addr.eq(loop.uop_addr),
            loop.stall.eq(pipe.stall),
            pipe.op.is_alu.eq(alu.opcode == Opcode.ALU), pipe.op.reset.eq(gemm.reset),
            pipe.op.overwrite.eq(gemm.opcode == Opcode.GEMM_OVERWRITE),
            pipe.op.alu_opcode.eq(alu.alu_opcode), pipe.op.use_imm.eq(alu.use_imm),
            pipe.op.imm.eq(alu.imm),
        ]
        self._read(m, uop_sram.read_port(0), pipe.uop_read)
        self._read(m, acc_sram.read_port(0), pipe.acc_read_dst)
        self._read(m, acc_sram.read_port(1), pipe.acc_read_src)
        if acc_sram.slices > 1:
            m.d.comb += [acc_sram.read_0_addrs.eq(pipe.acc_read_dst_addrs),
                         acc_sram.read_1_addrs.eq(pipe.acc_read_src_addrs)]
        self._read(m, wiring.flipped(self.inp_read), pipe.inp_read)
        self._read(m, wiring.flipped(self.wgt_read), pipe.wgt_read)
        m.d.comb += self.wgt_read_addrs.eq(pipe.wgt_read_addrs)
        m.d.comb += [self.out_write.addr.eq(pipe.out_write.addr),
                     self.out_write.data.eq(pipe.out_write.data),
                     self.out_write.en.eq(pipe.out_write.en)]

    @staticmethod
    def _read(m, port, user):
        m.d.comb += [port.addr.eq(user.addr), port.en.eq(user.en), user.data.eq(port.data)]

    def _deferred_pushes(self, m, pipe, gemm):
        """The queue of pushes waiting for the pipe; a retiring instruction's entry is
        the micro-op count it waits for and its push flags."""
        entry = data.StructLayout({"target": UOP_COUNT_BITS, "push_prev": 1, "push_next": 1})
        # the head entry from flip-flops (FifoSlice registered: same cycles as a SyncFIFO),
        # not a LUT-RAM read in front of the subtraction and the token queues' levels
        m.submodules.pending = pending = FifoSlice(entry.size, PENDING_PUSHES, registered=True)
        head, new = data.View(entry, pending.o_data), data.View(entry, pending.i_data)
        issued, written = Signal(UOP_COUNT_BITS), Signal(UOP_COUNT_BITS)
        with m.If(pipe.valid & ~pipe.stall):
            m.d.sync += issued.eq(issued + 1)
        with m.If(pipe.gemm_done | pipe.alu_done):
            m.d.sync += written.eq(written + 1)
        behind = Signal(UOP_COUNT_BITS)
        m.d.comb += [behind.eq(written - head.target),
                     new.target.eq(issued), new.push_prev.eq(gemm.push_prev),
                     new.push_next.eq(gemm.push_next),
                     pending.o_ready.eq(pending.o_valid & ~behind[-1])]
        with m.If(pending.o_ready):
            m.d.comb += [self.push_c2l.eq(head.push_prev), self.push_c2s.eq(head.push_next)]
        return pending

    def _control(self, m, word, gemm, loop, pipe, uop_dma, acc_dma):
        pushes = gemm.push_prev | gemm.push_next
        pending = self._deferred_pushes(m, pipe, gemm)
        is_loop = Signal()
        m.d.comb += is_loop.eq(gemm.opcode.matches(*LOOP_OPCODES))
        mem_type = data.View(isa_layouts(self.cfg).mem, word).memory_type
        loop_start = Signal()
        m.d.sync += loop_start.eq(0)
        m.d.comb += loop.start.eq(loop_start)
        with m.FSM():
            with m.State("IDLE"):
                m.d.comb += self.insn.ready.eq(1)
                with m.If(self.insn.valid):
                    m.d.sync += word.eq(self.insn.payload)
                    m.next = "TOKENS"
            with m.State("TOKENS"):
                m.d.comb += [self.busy.eq(1), self.wait_l2c.eq(gemm.pop_prev & ~self.has_l2c),
                             self.wait_s2c.eq(gemm.pop_next & ~self.has_s2c)]
                with m.If(~self.wait_l2c & ~self.wait_s2c):
                    m.d.comb += [self.pop_l2c.eq(gemm.pop_prev), self.pop_s2c.eq(gemm.pop_next)]
                    with m.If(gemm.opcode.matches(*LOOP_OPCODES)):
                        m.d.sync += loop_start.eq(1)
                        m.next = "START"
                    with m.Else():
                        m.next = "DRAIN"
            with m.State("START"):
                # the loop's start is a flip-flop high exactly in this state: neither the
                # token checks above nor a state decode reach the loop registers' clock
                # enables (Fmax)
                m.d.comb += self.busy.eq(1)
                m.next = "LOOP"
            with m.State("LOOP"):
                m.d.comb += self.busy.eq(1)
                with m.If(~loop.busy):
                    m.next = "RETIRE"
            with m.State("DRAIN"):
                m.d.comb += self.busy.eq(1)
                with m.If(~pipe.busy & ~pending.o_valid):
                    with m.If(gemm.opcode == Opcode.LOAD):
                        m.next = "DMA_START"
                    with m.Else():
                        m.d.comb += self.finish.eq(gemm.opcode == Opcode.FINISH)
                        m.next = "RETIRE"
            with m.State("DMA_START"):
                # like START: the DMA starts are decoded from registers alone, so the
                # pipe's busy never reaches the DMA registers' clock enables (Fmax)
                m.d.comb += [self.busy.eq(1), uop_dma.start.eq(mem_type == Mem.UOP),
                             acc_dma.start.eq(mem_type == Mem.ACC)]
                m.next = "DMA"
            with m.State("DMA"):
                m.d.comb += self.busy.eq(1)
                with m.If(~uop_dma.busy & ~acc_dma.busy):
                    m.next = "RETIRE"
            with m.State("RETIRE"):
                m.d.comb += self.busy.eq(1)
                with m.If(is_loop):
                    # no push from here: one of the queue may go out in this very cycle
                    with m.If(~pushes | pending.i_ready):
                        m.d.comb += pending.i_valid.eq(pushes)
                        m.next = "IDLE"
                with m.Else():
                    # LOAD/FINISH: the pipe and the queue are empty (DRAIN)
                    m.d.comb += [self.push_c2l.eq(gemm.push_prev),
                                 self.push_c2s.eq(gemm.push_next)]
                    m.next = "IDLE"
