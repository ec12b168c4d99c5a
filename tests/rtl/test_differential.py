"""Random legal programs: functional simulator and RTL agree on every DRAM byte.

The RTL side alternates between an ideal memory and one with latency and random
back-pressure on every AXI channel. A mismatch is shrunk and its disassembly printed.
"""
import pytest

from vtalab.runtime.fsim_device import FsimDevice
from vtalab.sim.differential import Differential
from vtalab.sim.fuzz import generate
from vtalab.spec import preset
from vtalab.spec.isa import AluInsn, AluOp, Isa, Mem, MemInsn, Opcode

from .backends import SYNTHESIS, open_backend

TIMINGS = [{}, {"pressure": 0.3, "read_latency": 4, "write_latency": 2, "seed": 5},
           {"pressure": 0.1, "read_latency": 1, "write_latency": 9, "seed": 9}]
COUNTS = {"tiny": 300, "default": 100, "tiny-mul18": 150, "tiny-mul18x2": 150,
          "tiny-mulx1": 100, "tiny-alux2": 150}
#: the tiny preset with the one-DSP MUL of the ECP5 boards; with 2 multipliers (4 beats);
#: VTA's 32-bit MUL in one multiplier (8 beats, three products each); 2 ALU lanes (every
#: opcode in 4 beats) with the 18-bit MUL
VARIANTS = {"tiny-mul18": dict(alu_mul_bits=18), "tiny-mul18x2": dict(alu_mul_bits=18,
                                                                     alu_mul_lanes=2),
            "tiny-mulx1": dict(alu_mul_lanes=1),
            "tiny-alux2": dict(alu_mul_bits=18, alu_lanes=2)}


def _config(name: str):
    """A preset, or the tiny preset with a MUL of ``VARIANTS``."""
    if name in VARIANTS:
        return preset("tiny").replace(**VARIANTS[name], name=name)
    return preset(name)


@pytest.mark.parametrize("name", ["tiny", "default", *VARIANTS])
def test_random_programs_match_the_functional_simulator(name):
    cfg = _config(name)
    with open_backend("fsim", cfg, dram_bytes=1 << 20) as ref, \
            open_backend("rtl", cfg, dram_bytes=1 << 20, cycle_limit=1_000_000) as dut:
        diff = Differential(ref, dut, TIMINGS)
        found = diff.fuzz(COUNTS[name], seed=1000 * len(name))
    assert not found, "\n\n".join(m.report() for m in found)


def test_random_programs_match_on_the_synthesis_netlist():
    """The datapath FPGA builds synthesize (exact int8 products, free-running pipeline
    registers: hw/exec_pipe.py) against the functional simulator."""
    cfg = preset("default")
    with open_backend("fsim", cfg, dram_bytes=1 << 20) as ref, \
            open_backend(SYNTHESIS, cfg, dram_bytes=1 << 20, cycle_limit=1_000_000) as dut:
        found = Differential(ref, dut, TIMINGS).fuzz(60, seed=4242)
    assert not found, "\n\n".join(m.report() for m in found)


class MulBreaksStores(FsimDevice):
    """A broken 'device': after any ALU MUL runs, the last STORE's first byte is wrong."""

    def _execute(self, insn_addr, insn_count):
        counters = super()._execute(insn_addr, insn_count)
        raw = self.sim.dram[insn_addr:insn_addr + 16 * insn_count].tobytes()
        insns = Isa(self.cfg).decode_program(raw)
        stores = [i for i in insns if isinstance(i, MemInsn) and i.opcode == Opcode.STORE
                  and i.x_size]
        if stores and any(isinstance(i, AluInsn) and i.alu_op == AluOp.MUL for i in insns):
            self.sim.dram[stores[-1].dram_base * self.cfg.entry_bytes("out")] ^= 0x5A
        return counters


def test_mismatch_is_shrunk_to_a_small_program_with_its_disassembly():
    cfg = preset("tiny")
    ref, dut = FsimDevice(cfg, dram_bytes=1 << 20), MulBreaksStores(cfg, dram_bytes=1 << 20)
    diff = Differential(ref, dut)
    original = next(p for p in (generate(cfg, diff.base, seed) for seed in range(40))
                    if diff.check(p) is not None)
    first = diff.shrink(original, {})
    assert len(first.program.instructions()) < len(original.instructions())
    rounds = first.program.rounds
    assert len(rounds) == 1 and first.program.in_slots == first.program.out_slots == 1
    report = first.report()
    assert "DRAM bytes differ" in report and "ALU    MUL" in report and "STORE  OUT" in report


def test_generated_programs_are_legal_and_varied():
    cfg = preset("tiny")
    seen = set()
    with FsimDevice(cfg, dram_bytes=1 << 20) as ref:
        diff = Differential(ref, FsimDevice(cfg, dram_bytes=1 << 20))
        for seed in range(40):
            program = generate(cfg, diff.base, seed)
            assert diff.check(program) is None
            for insn in program.instructions():
                seen.add(type(insn).__name__ if not isinstance(insn, MemInsn) else
                         f"{insn.opcode.name} {Mem(insn.mem).name}")
                if isinstance(insn, AluInsn):
                    seen.add(insn.alu_op.name)
            seen.add(f"S{program.in_slots}T{program.out_slots}")
    assert {"GemmInsn", "LOAD INP", "LOAD WGT", "LOAD ACC", "LOAD UOP", "STORE OUT",
            "MIN", "MAX", "ADD", "SHR", "MUL", "S2T2", "S1T1"} <= seen
