"""Cycle timing of the hardware in hw/, and the cycle model's constants built from it.

The compiler's cost models need the hardware's latencies but must not import hw/ (Amaranth
is optional) nor copy its numbers, so they live here. hw/exec_pipe.py takes its stage
numbers from this file; every other latency below is one register or one FSM state that
the named hw/ code makes, and tests/rtl/test_timing.py measures each total on the RTL
exactly, so a retiming that moves a cycle fails there until this file says so.

Cycles are counted as the RTL timeline counts them (sim/timeline.py): an instruction costs
a module the cycles from its IDLE state (taking it from the queue) to the next
instruction's IDLE state, when nothing waits on tokens or on the bus.

    compute GEMM/ALU, pushing or not        k micro-ops + compute_insn_latency()      (5)
                                            (ALU: micro_op_cycles() each)
    GEMM's last micro-op -> its token push  DRAIN_LATENCY                              (16)
    LOAD of inp/wgt (load module)           its beats + load_latency(cfg, buffer)  (14/15)

The cycle model (compiler/tune/cost.py) charges INSN_CYCLES, DRAIN_CYCLES and
LOAD_SETUP_CYCLES instead (4, 36, 31): those latencies plus calibration offsets (the end of
this file), which are fitted, not hardware.
"""
from __future__ import annotations

from dataclasses import dataclass

# ---- compute module: GEMM/ALU (hw/compute.py, hw/uop_loop.py) -----------------------------
#: FSM states, one cycle each, a GEMM/ALU instruction passes before its micro-op loop: IDLE
#: (taken from the queue), TOKENS (pops), START (the loop's start from a register)
COMPUTE_ISSUE_STATES = ("IDLE", "TOKENS", "START")
#: LOOP sees the loop generator's busy drop one cycle after the last micro-op
LOOP_EXIT = 1
#: RETIRE: one cycle; a GEMM/ALU's pushes go into a queue there and out once its micro-ops
#: have left the write stage, while the next instruction runs (before session 15 RETIRE
#: waited for the drain: DRAIN_LATENCY - LOOP_EXIT - 1 = 13 cycles more per pushing GEMM)
COMPUTE_RETIRE_STATES = ("RETIRE",)

# ---- exec pipe (hw/exec_pipe.py uses these) --------------------------------------------------
#: registers between the loop generator and stage 2, by their names in hw/exec_pipe.py; they
#: hold a micro-op in the stages 1a, 1r, 1b, 1c, 1d of its docstring (stage 1 is the cycle
#: the loop generator emits it: the uop word's read)
EXEC_FRONT = ("1", "1a", "1r", "1c", "1d")
#: stage of the accumulator and out-buffer write (stages 2..WRITE_STAGE follow the front)
WRITE_STAGE = 11

# ---- dependency tokens (hw/token_queue.py) ---------------------------------------------------
#: a token pushed in cycle c can be popped from cycle c + 1 (the level is a register)
TOKEN_LATENCY = 1

# ---- LOADs: FSM states (hw/load.py, hw/compute.py) ------------------------------------------
#: load module (inp, wgt), one cycle each besides RUN: IDLE, TOKENS, START (the DMA's
#: start from the state register), PUSH (the token from the state register)
LOAD_STATES = ("IDLE", "TOKENS", "START", "PUSH")
#: compute module (uop, acc), one cycle each besides DMA: IDLE, TOKENS, DRAIN (one cycle
#: when the exec pipe is empty), DMA_START, RETIRE
COMPUTE_LOAD_STATES = ("IDLE", "TOKENS", "DRAIN", "DMA_START", "RETIRE")
LOADED_BY_COMPUTE = ("uop", "acc")

# ---- LOADs: the read path, one register each (hw/dma_reader.py, hw/axi_master.py) ------------
DMA_START_REGISTER = 1     # DmaReader's start strobe registered (start_q)
DMA_REQUEST_REGISTER = 1   # row_requests: a row's request valid/address/beats registered
AXI_REQUEST_SLICE = 1      # AxiMaster: the client's request RegisterSlice
AXI_BURST_STAGING = 1      # BurstSplitter: the request's staging register
AXI_BURST_OFFER = 1        # BurstSplitter: the burst's length registered, then offered on AR
AXI_R_DISPATCH = 1         # AxiMaster: the R beat's dispatch register (credits, no slice)
AXI_RESPONSE_SLICE = 1     # AxiMaster: the client's response FifoSlice
DMA_UNPACK_REGISTER = 1    # entries of a beat or more: the one-beat FifoSlice, or the register
                           # that completes a wider entry (narrower entries: none)
DMA_SRAM_WRITE = 1         # the SRAM write registered
#: entries of BEAT_STAGE_BEATS beats or more: each beat registered once more, in copies
#: beside the entry's registers, before it lands in them (hw/dma_assembler.py)
DMA_BEAT_STAGE = 1
BEAT_STAGE_BEATS = 3
#: cycles from AR to the first R beat of the DRAM the cycle model assumes: the RTL harness's
#: default (sim/rtl/model.py Timing.read_latency); a board's DRAM takes longer
DRAM_READ_LATENCY = 1

READ_PATH = (DMA_START_REGISTER, DMA_REQUEST_REGISTER, AXI_REQUEST_SLICE, AXI_BURST_STAGING,
             AXI_BURST_OFFER, AXI_R_DISPATCH, AXI_RESPONSE_SLICE, DMA_SRAM_WRITE)


def micro_op_cycles(cfg, alu_op=None) -> int:
    """Cycles a micro-op takes the exec pipe's issue when nothing stalls it: a GEMM's
    (``alu_op`` None) one; an ALU micro-op's ``cfg.alu_beats``, a MUL's ``cfg.mul_beats``
    (one per group of ALU lanes or multipliers: hw/alu_beats.py holds it in stage 2 for
    the others)."""
    if alu_op is None:
        return 1
    from .isa import AluOp                       # late import: isa depends on Config
    return cfg.mul_beats if alu_op == AluOp.MUL else cfg.alu_beats


def compute_insn_latency() -> int:
    """Cycles a GEMM/ALU instruction without a token push costs the compute module besides
    one per micro-op (5): issue states, LOOP's exit cycle, RETIRE."""
    return len(COMPUTE_ISSUE_STATES) + LOOP_EXIT + len(COMPUTE_RETIRE_STATES)


def drain_latency() -> int:
    """Cycles from the loop generator's last micro-op of a GEMM to its token push (16).

    The micro-op emitted in cycle t reaches stage 2 at t + len(EXEC_FRONT) + 1 and the write
    stage at t + len(EXEC_FRONT) + WRITE_STAGE - 1; the push waiting in the compute
    module's queue goes out the cycle after it (hw/compute.py ``_deferred_pushes``)."""
    return len(EXEC_FRONT) + WRITE_STAGE


def dma_latency(cfg, buffer: str, read_latency: int = DRAM_READ_LATENCY) -> int:
    """Cycles from a DMA's start (the START / DMA_START state) to its first SRAM write.

    The DMA then writes one entry per beat (entries narrower than a beat: one per cycle) and
    its module's RUN / DMA state ends the cycle after the last write, so that state lasts
    this many cycles plus one per beat."""
    entry = cfg.entry_bytes(buffer)
    unpack = DMA_UNPACK_REGISTER if entry >= cfg.bus_bytes else 0
    stage = DMA_BEAT_STAGE if entry >= BEAT_STAGE_BEATS * cfg.bus_bytes else 0
    return sum(READ_PATH) + read_latency + unpack + stage


def load_latency(cfg, buffer: str, read_latency: int = DRAM_READ_LATENCY) -> int:
    """Cycles a LOAD of ``buffer`` costs its module besides one per beat (on the default
    config inp 14, wgt 15: its entries pass the beat stage; acc 16 and uop 14, the compute
    module having a state more, acc entries passing the beat stage and uop entries being
    narrower than a beat)."""
    states = COMPUTE_LOAD_STATES if buffer in LOADED_BY_COMPUTE else LOAD_STATES
    return len(states) + dma_latency(cfg, buffer, read_latency)


def _wide_load_latency() -> int:
    """``load_latency`` of a load-module buffer whose entries are one or two beats (inp on
    every preset): no Config needed."""
    return len(LOAD_STATES) + sum(READ_PATH) + DRAM_READ_LATENCY + DMA_UNPACK_REGISTER


COMPUTE_INSN_LATENCY = compute_insn_latency()
DRAIN_LATENCY = drain_latency()
LOAD_LATENCY = _wide_load_latency()

# ---- the cycle model's constants (compiler/tune/cost.py) --------------------------------------
# The cycle model is a step formula, not a simulation: per reduction step one GEMM of k
# micro-ops (k + INSN_CYCLES + DRAIN_CYCLES), per LOAD its beats + LOAD_SETUP_CYCLES, per
# extra compute instruction its micro-ops + INSN_CYCLES. Its constants were fit to measured
# RTL runs (DRAIN 45 / LOAD_SETUP 30 on 16 ResNet-18 layers of the default config, 1.8%
# mean error: docs/fpga.md) and since then moved by each hardware latency change, not refit.
# So each is a latency above plus an offset. The offsets are calibration, not registers:
# they absorb what the step formula does not model cycle by cycle (e.g. a pad entry costs
# the RTL one cycle, the formula a whole entry's beats; a step's loads and GEMM meet in
# more ways than "serial" or "max"). Kept here, beside the latencies they are added to, so
# that a retiming moves the model with the hardware; a refit changes only the offsets.
INSN_FIT = -1          # the model charges 4 per compute instruction, the RTL spends 5
#: 34 when a pushing GEMM still held the compute module for its drain; the cycles it held
#: then (its drain less LOOP's exit and RETIRE) no longer count
DRAIN_FIT = 34 - (DRAIN_LATENCY - LOOP_EXIT - len(COMPUTE_RETIRE_STATES))
LOAD_SETUP_FIT = 17

INSN_CYCLES = COMPUTE_INSN_LATENCY + INSN_FIT            # 4
DRAIN_CYCLES = DRAIN_LATENCY + DRAIN_FIT                 # 36
LOAD_SETUP_CYCLES = LOAD_LATENCY + LOAD_SETUP_FIT        # 31


@dataclass(frozen=True)
class PipeTiming:
    """One Config's hardware latencies and the cycle model's constants built from them."""
    compute_insn_latency: int
    drain_latency: int
    load_latency: int           # LOAD of inp (load module) at the model's DRAM latency
    insn_cycles: int
    drain_cycles: int
    load_setup_cycles: int


def timing(cfg) -> PipeTiming:
    """The PipeTiming of ``cfg`` (a spec.Config); its cycle-model constants are the same
    for every Config whose inp entries are one or two beats, every preset among them."""
    load = load_latency(cfg, "inp")
    return PipeTiming(
        compute_insn_latency=COMPUTE_INSN_LATENCY, drain_latency=DRAIN_LATENCY,
        load_latency=load, insn_cycles=COMPUTE_INSN_LATENCY + INSN_FIT,
        drain_cycles=DRAIN_LATENCY + DRAIN_FIT, load_setup_cycles=load + LOAD_SETUP_FIT)
