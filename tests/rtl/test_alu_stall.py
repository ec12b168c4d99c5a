"""The exec pipe's ALU stall is cycle-exact (hw/pipe_hazard.py): an ALU micro-op reads its
rows in stage 2 as soon as no micro-op ahead of it still has to write one of them (those in
stages 3..W, W the write stage), never earlier (wrong values: the bit-exact tests) and
never later (what these tests check: a stale hit bit stalls without changing a value)."""
import numpy as np
import pytest

from vtalab.hw.exec_pipe import WRITE_STAGE
from vtalab.runtime import ProgramBuilder
from vtalab.spec import preset
from vtalab.spec.isa import AluOp

from .backends import open_backend

ROWS = 16


def issue_cycles(uops, use_imm: bool) -> list[int]:
    """When each micro-op leaves stage 2: one per cycle, after the writes it reads (a
    micro-op leaving stage 2 at t writes at t + W - 2, so a reader leaves at t + W - 1)."""
    times = []
    for k, (dst, src) in enumerate(uops):
        reads = {dst} if use_imm else {dst, src}
        earliest = times[-1] + 1 if times else 0
        for j in range(k):
            if uops[j][0] in reads:
                earliest = max(earliest, times[j] + WRITE_STAGE - 1)
        times.append(earliest)
    return times


def run_cycles(dev, uops, use_imm: bool) -> int:
    """Cycles of a program with one ALU ADD instruction running ``uops`` (dst, src): the
    uop load, the instruction and FINISH, which waits for the pipe's last write."""
    builder = ProgramBuilder(dev)
    for dst, src in uops:
        builder.uop_push(dst, src, mode="alu", alu_op=AluOp.ADD, use_imm=use_imm, imm=1)
    builder.push_alu()
    return builder.finish().run(dev)["cycles"]


def _patterns(rng):
    yield "one row", [(0, 0)] * 12, True
    yield "two rows", [(k % 2, 0) for k in range(12)], True
    for gap in range(3, WRITE_STAGE + 1):         # a row again after gap - 1 others
        yield f"every {gap}", [(k % gap, 0) for k in range(3 * gap)], True
    yield "src after dst", [(k + 1, k) for k in range(12)], False
    yield "src two back", [(k % 8 + 8, (k - 2) % 8 + 8) for k in range(16)], False
    for n in range(4):
        uops = [(int(d), int(s)) for d, s in rng.integers(0, 6, (24, 2))]
        yield f"random {n}", uops, bool(n % 2)


@pytest.fixture(scope="module")
def dev():
    with open_backend("rtl", preset("tiny"), dram_bytes=1 << 20) as device:
        yield device


def test_alu_micro_ops_stall_exactly_until_the_rows_they_read_are_written(dev):
    failures = []
    for name, uops, use_imm in _patterns(np.random.default_rng(3)):
        distinct = [(k % ROWS, (k + 1) % ROWS) for k in range(len(uops))]
        model = issue_cycles(uops, use_imm)[-1] - issue_cycles(distinct, True)[-1]
        measured = run_cycles(dev, uops, use_imm) - run_cycles(dev, distinct, True)
        if measured != model:
            failures.append((name, measured, model))
    assert not failures, failures


def test_the_model_stalls_a_same_row_chain_for_the_whole_pipe():
    assert issue_cycles([(0, 0)] * 3, True) == [0, WRITE_STAGE - 1, 2 * (WRITE_STAGE - 1)]
    assert issue_cycles([(0, 1), (1, 0)], True) == [0, 1]
    assert issue_cycles([(0, 1), (1, 0)], False) == [0, WRITE_STAGE - 1]
