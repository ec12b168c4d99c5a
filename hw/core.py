"""The accelerator: fetch, load, compute and store around the SRAMs, token queues and AXI.

    host --AXI4-Lite--> ControlRegs --start--> Fetch --insn queues--> Load / Compute / Store
    Load -> inp, wgt SRAM -> Compute -> out SRAM -> Store ;  four token queues between them
    Fetch, Load, Compute (uop/acc loads) read and Store writes DRAM through one AxiMaster

``done`` rises when FINISH has retired, or the fetch unit refused an instruction (its
program-order checks, hw/fetch_check.py), and every module, queue, pipe and write has
drained. START clears the token queues and every unit's error latch, so nothing of one run,
legal or not, reaches the next; ERROR and the units' instruction indices say what a run
found illegal (spec/regs.py).
"""
from __future__ import annotations

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from vtalab.spec import Config
from vtalab.spec import regs as regmap

from .axi_master import AxiMaster
from .compute import Compute
from .control import ControlRegs
from .fetch import Fetch
from .interfaces import AxiLiteSignature, AxiSignature
from .load import Load
from .sram import Sram, wgt_lane_groups
from .store import Store
from .token_queue import TokenQueue

# (queue, producer module, its push port, consumer module, its pop/has ports' suffix)
TOKEN_WIRING = (
    ("l2c", "load", "compute"),
    ("c2l", "compute", "load"),
    ("c2s", "compute", "store"),
    ("s2c", "store", "compute"),
)


class Core(wiring.Component):
    """The whole accelerator for one Config: an AXI4 master and an AXI4-Lite slave."""

    def __init__(self, cfg: Config):
        self.cfg = cfg
        super().__init__({
            "axi": Out(AxiSignature(cfg.bus_bits)),
            "ctrl": In(AxiLiteSignature(regmap.ADDR_BITS)),
            "done": Out(1),
        })

    def elaborate(self, platform):
        m = Module()
        cfg = self.cfg
        units = {"fetch": Fetch(cfg), "load": Load(cfg), "compute": Compute(cfg),
                 "store": Store(cfg)}
        for name, unit in units.items():
            m.submodules[name] = unit
        m.submodules.axi_master = master = AxiMaster(cfg, n_read=3)
        m.submodules.regs = regs = ControlRegs(cfg)
        wiring.connect(m, wiring.flipped(self.axi), master.axi)
        wiring.connect(m, wiring.flipped(self.ctrl), regs.bus)
        fetch, load, compute, store = (units[n] for n in ("fetch", "load", "compute", "store"))
        wiring.connect(m, fetch.dma, master.read_0)
        wiring.connect(m, load.dma, master.read_1)
        wiring.connect(m, compute.dma, master.read_2)
        wiring.connect(m, store.dma, master.write)
        wiring.connect(m, fetch.load_insn, load.insn)
        wiring.connect(m, fetch.compute_insn, compute.insn)
        wiring.connect(m, fetch.store_insn, store.insn)
        self._buffers(m, platform, load, compute, store)
        queues = self._tokens(m, units, regs.start)
        self._control(m, regs, units, queues, master)
        self._errors(m, regs, units, queues)
        return m

    @staticmethod
    def _errors(m, regs, units, queues):
        """ERROR (one code byte per unit), the units' instruction indices, STATUS.error."""
        codes = [units[unit].error_code for unit in regmap.ERROR_UNITS]
        faults = [queue.error for queue in queues.values()]
        for unit in regmap.ERROR_UNITS:
            m.d.comb += getattr(regs, f"value_error_{unit}_insn").eq(units[unit].error_index)
        for unit in ("load", "compute", "store"):
            m.d.comb += units[unit].clear.eq(regs.start)
        m.d.comb += [regs.value_error.eq(Cat(*codes)),
                     regs.status_error.eq(Cat(*codes).any() | Cat(*faults).any())]

    def _buffers(self, m, platform, load, compute, store):
        cfg = self.cfg
        m.submodules.inp_sram = inp = Sram.for_buffer(cfg, "inp")
        m.submodules.wgt_sram = wgt = Sram.for_buffer(
            cfg, "wgt", write_slices=wgt_lane_groups(cfg, platform))
        self._wgt_slices(m, load, compute, wgt)
        m.submodules.out_sram = out = Sram.for_buffer(cfg, "out")
        wiring.connect(m, load.inp_write, inp.write)
        wiring.connect(m, compute.inp_read, inp.read_0)
        wiring.connect(m, compute.wgt_read, wgt.read_0)
        wiring.connect(m, compute.out_write, out.write)
        wiring.connect(m, store.out_read, out.read_0)

    @staticmethod
    def _wgt_slices(m, load, compute, wgt) -> None:
        """The wgt buffer's write, and with slices each slice's read and write address
        and write enable from the copies beside it (hw/sram.py wgt_lane_groups)."""
        if wgt.slices == 1:
            wiring.connect(m, load.wgt_write, wgt.write)
            return
        ports = wgt.write_ports()
        bits = len(ports[0].data)
        for k, port in enumerate(ports):
            copy = load.wgt_write_copies[k]
            m.d.comb += [port.addr.eq(copy.addr), port.en.eq(copy.en),
                         port.data.eq(load.wgt_write.data[k * bits:(k + 1) * bits]),
                         wgt.read_0_addrs[k].eq(compute.wgt_read_addrs[k])]

    def _tokens(self, m, units, clear) -> dict:
        queues = {}
        for name, producer, consumer in TOKEN_WIRING:
            m.submodules[f"{name}_queue"] = queue = TokenQueue()
            m.d.comb += [queue.clear.eq(clear),
                         queue.push.eq(getattr(units[producer], f"push_{name}")),
                         queue.pop.eq(getattr(units[consumer], f"pop_{name}")),
                         getattr(units[consumer], f"has_{name}").eq(queue.available)]
            queues[name] = queue
        return queues

    def _control(self, m, regs, units, queues, master):
        fetch, load, compute, store = (units[n] for n in ("fetch", "load", "compute", "store"))
        running, finished = Signal(), Signal()
        idle = ~fetch.busy & ~load.busy & ~compute.busy & ~store.busy & master.write.idle \
            & ~fetch.load_insn.valid & ~fetch.store_insn.valid & ~fetch.compute_insn.valid \
            & ~compute.pipe_busy
        with m.If(regs.start):
            m.d.sync += [running.eq(1), finished.eq(0), self.done.eq(0)]
        with m.Elif(running):
            with m.If(compute.finish):
                m.d.sync += finished.eq(1)
            with m.If((finished | fetch.aborted) & idle):
                m.d.sync += [running.eq(0), self.done.eq(1)]
        axi = master.axi
        m.d.comb += [
            fetch.start.eq(regs.start),
            fetch.insn_addr.eq(regs.insn_addr),
            fetch.insn_count.eq(regs.insn_count),
            regs.running.eq(running),
            regs.status_done.eq(self.done), regs.status_busy.eq(running),
            regs.status_load_wait_c2l.eq(load.waiting),
            regs.status_compute_wait_l2c.eq(compute.wait_l2c),
            regs.status_compute_wait_s2c.eq(compute.wait_s2c),
            regs.status_store_wait_c2s.eq(store.waiting),
            regs.inc_cycles.eq(1),
            regs.inc_fetch_busy.eq(fetch.busy), regs.inc_load_busy.eq(load.busy),
            regs.inc_compute_busy.eq(compute.busy), regs.inc_store_busy.eq(store.busy),
            regs.inc_load_stall.eq(load.waiting),
            regs.inc_compute_stall.eq(compute.wait_l2c | compute.wait_s2c),
            regs.inc_store_stall.eq(store.waiting),
            regs.inc_gemm_uops.eq(compute.gemm_uop), regs.inc_alu_uops.eq(compute.alu_uop),
        ]
        beat_bytes = self.cfg.bus_bytes
        m.d.comb += [
            regs.inc_bytes_read.eq((axi.rvalid & axi.rready) * beat_bytes),
            regs.inc_bytes_written.eq(_popcount(axi.wstrb) * (axi.wvalid & axi.wready)),
            regs.inc_insns.eq(_fire(load.insn) + _fire(compute.insn) + _fire(store.insn)),
        ]


def _fire(port):
    return port.valid & port.ready


def _popcount(value):
    bits = [value[i] for i in range(len(value))]
    while len(bits) > 1:
        bits = [bits[k] + bits[k + 1] for k in range(0, len(bits) - 1, 2)] + \
            ([bits[-1]] if len(bits) % 2 else [])
    return bits[0]
