"""Datapath bench: GEMM core (random int8 tiles vs numpy, int32 wrap-around), ALU core
(every opcode, immediate and register operands, negative shifts) against the functional
simulator's ALU, and a token queue (push/pop, simultaneous, full and empty errors)."""
from __future__ import annotations

import os

import cocotb
import numpy as np
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, FallingEdge, ReadOnly, Timer

from vtalab.sim.alu import alu_apply, wrap
from vtalab.spec import preset
from vtalab.spec.isa import AluOp

CFG = preset(os.environ.get("VTALAB_CONFIG", "tiny"))


def pack(values, bits: int) -> int:
    word = 0
    for k, value in enumerate(np.asarray(values).ravel()):
        word |= (int(value) & ((1 << bits) - 1)) << (k * bits)
    return word


def unpack(word: int, bits: int, count: int) -> np.ndarray:
    raw = [(word >> (k * bits)) & ((1 << bits) - 1) for k in range(count)]
    return wrap(np.array(raw, dtype=np.int64), bits)


async def settle():
    await Timer(1, unit="ns")


@cocotb.test()
async def test_gemm_random_tiles(dut):
    rng = np.random.default_rng(1)
    b, bi, bo = CFG.batch, CFG.block_in, CFG.block_out
    for trial in range(200):
        extreme = trial % 4 == 0
        inp = np.full((b, bi), -128) if extreme else rng.integers(-128, 128, (b, bi))
        wgt = np.full((bo, bi), -128) if extreme else rng.integers(-128, 128, (bo, bi))
        acc = rng.integers(-(1 << 31), 1 << 31, (b, bo))
        if trial % 8 == 0:
            acc[:] = (1 << 31) - 1 - rng.integers(0, 1000, (b, bo))     # must wrap
        dut.gemm_inp.value = pack(inp, CFG.inp_bits)
        dut.gemm_wgt.value = pack(wgt, CFG.wgt_bits)
        dut.gemm_acc.value = pack(acc, CFG.acc_bits)
        await settle()
        want = wrap(acc.astype(np.int64) + inp.astype(np.int64) @ wgt.astype(np.int64).T,
                    CFG.acc_bits)
        got = unpack(int(dut.gemm_result.value), CFG.acc_bits, b * bo).reshape(b, bo)
        assert np.array_equal(got, want), f"trial {trial}: got {got}, want {want}"


@cocotb.test()
async def test_alu_every_opcode(dut):
    rng = np.random.default_rng(2)
    lanes = CFG.batch * CFG.block_out
    limit = 1 << (CFG.acc_bits - 1)
    for op in AluOp:
        for trial in range(60):
            use_imm = trial % 2 == 0
            dst = rng.integers(-limit, limit, lanes)
            if trial % 3 == 0:
                src = rng.integers(-(1 << CFG.shift_bits), 1 << CFG.shift_bits, lanes)
            else:
                src = rng.integers(-limit, limit, lanes)
            imm = int(rng.integers(-(1 << 15), 1 << 15))
            if trial % 5 == 0:
                imm = int(rng.integers(-40, 40))      # small, incl. 16..31 = left shifts
            dut.alu_opcode.value = int(op)
            dut.alu_use_imm.value = int(use_imm)
            dut.alu_imm.value = imm & 0xFFFF
            dut.alu_dst.value = pack(dst, CFG.acc_bits)
            dut.alu_src.value = pack(src, CFG.acc_bits)
            await settle()
            operand = np.full(lanes, imm, dtype=np.int64) if use_imm else src
            if op == AluOp.SAT:     # the immediate always; src added unless use_imm
                want = alu_apply(CFG, op, dst.astype(np.int64), np.int64(imm),
                                 None if use_imm else src.astype(np.int64))
            else:
                want = alu_apply(CFG, op, dst.astype(np.int64), operand.astype(np.int64))
            got = unpack(int(dut.alu_result.value), CFG.acc_bits, lanes)
            assert np.array_equal(got, want), (f"{op.name} imm={use_imm and imm}: "
                                               f"got {got}, want {want}")


@cocotb.test()
async def test_token_queue(dut):
    Clock(dut.clk, 10, unit="ns").start()
    dut.queue_push.value = 0
    dut.queue_pop.value = 0
    dut.rst.value = 1
    await ClockCycles(dut.clk, 2)
    dut.rst.value = 0
    rng = np.random.default_rng(3)
    level = 0
    for cycle in range(400):
        await FallingEdge(dut.clk)
        push = int(rng.random() < 0.5 and level < 4)
        pop = int(rng.random() < 0.5 and level > 0)
        dut.queue_push.value = push
        dut.queue_pop.value = pop
        await ReadOnly()
        assert int(dut.queue_level.value) == level
        assert int(dut.queue_available.value) == (level > 0)
        assert int(dut.queue_error.value) == 0
        level += push - pop
    await FallingEdge(dut.clk)
    dut.queue_push.value = 0
    dut.queue_pop.value = 0
    for _ in range(level):          # drain, then pop once more: an error
        await FallingEdge(dut.clk)
        dut.queue_pop.value = 1
    await FallingEdge(dut.clk)
    await ReadOnly()
    assert int(dut.queue_level.value) == 0 and int(dut.queue_error.value) == 0
    await FallingEdge(dut.clk)
    dut.queue_pop.value = 1
    await FallingEdge(dut.clk)
    dut.queue_pop.value = 0
    await ReadOnly()
    assert int(dut.queue_error.value) == 1, "popping an empty queue must set error"
