"""The ALU MUL in beats (hw/mul_beats.py): with ``alu_mul_lanes`` multipliers a MUL
micro-op holds stage 2 for ``mul_beats`` cycles once its rows are ready, nothing else
moves meanwhile, and the row it writes is the full product (against numpy, here under
the same-row chains that stall it; the random programs are in test_differential.py)."""
import numpy as np
import pytest

from vtalab.hw.exec_pipe import WRITE_STAGE
from vtalab.runtime import ProgramBuilder
from vtalab.spec import preset
from vtalab.spec import timing as T
from vtalab.spec.isa import AluOp

from .backends import open_backend

ROWS = 8


def issue_cycles(uops) -> list[int]:
    """When each micro-op (dst, src, cycles) with an immediate leaves stage 2: its first beat
    one cycle after the micro-op ahead left (or once the rows it reads are written), then
    one cycle per beat (``micro_op_cycles``)."""
    times = []
    for k, (dst, _, cycles) in enumerate(uops):
        first = times[-1] + 1 if times else 0
        for j in range(k):
            if uops[j][0] == dst:
                first = max(first, times[j] + WRITE_STAGE - 1)
        times.append(first + cycles - 1)
    return times


@pytest.fixture(scope="module")
def dev():
    cfg = preset("tiny").replace(alu_mul_bits=18, alu_mul_lanes=2, name="tiny-mul18x2")
    assert cfg.mul_beats == 4
    with open_backend("rtl", cfg, dram_bytes=1 << 20) as device:
        yield device


def _program(dev, insns, acc=None):
    """Cycles of ALU instructions, each (op, dst rows) with immediate 3 (the acc rows
    loaded first from ``acc`` when given), and the out rows they leave."""
    cfg = dev.cfg
    b = ProgramBuilder(dev)
    if acc is not None:
        acc_buf = dev.alloc(acc.nbytes)
        acc_buf.write(acc.tobytes())
        b.load_2d("acc", 0, acc_buf, 0, x_size=ROWS)
    for op, rows in insns:
        for dst in rows:
            b.uop_push(dst, 0, mode="alu", alu_op=op, use_imm=True, imm=3)
        b.push_alu()
    out = dev.alloc(ROWS * cfg.entry_bytes("out"))
    b.dep_push("compute", "store")
    b.dep_pop("compute", "store")
    b.store_2d(0, out, 0, x_size=ROWS)
    cycles = b.finish().run(dev)["cycles"]
    return cycles, np.frombuffer(out.read(), np.int8).reshape(ROWS, cfg.batch, cfg.block_out)


def _patterns(rng):
    yield "distinct rows", list(range(ROWS))
    yield "one row", [0] * 4
    for gap in (2, 3, 5, WRITE_STAGE):
        yield f"every {gap}", [k % gap for k in range(2 * gap)]
    for n in range(3):
        yield f"random {n}", [int(d) for d in rng.integers(0, 5, 16)]


def test_a_mul_holds_stage_2_for_its_beats_and_nothing_more(dev):
    """A MUL instruction against the ADD with the same rows: the same stalls, plus the
    beats and what they delay."""
    cfg, failures = dev.cfg, []
    for name, rows in _patterns(np.random.default_rng(5)):
        model = {mul: issue_cycles([(d, 0, T.micro_op_cycles(cfg, mul)) for d in rows])[-1]
                 for mul in (False, True)}
        measured = {mul: _program(dev, [(AluOp.MUL if mul else AluOp.ADD, rows)])[0]
                    for mul in (False, True)}
        if measured[True] - measured[False] != model[True] - model[False]:
            failures.append((name, measured, model))
    assert not failures, failures


def test_the_model_counts_beats_after_the_stall():
    assert issue_cycles([(0, 0, 4), (1, 0, 4)]) == [3, 7]
    assert issue_cycles([(0, 0, 4), (0, 0, 4)]) == [3, 3 + WRITE_STAGE - 1 + 3]


def test_mul_chains_write_the_full_products(dev):
    """Same-row chains of MUL (stalled, then in beats) and ADD: out = low 8 bits of the
    row after each micro-op in turn, as numpy computes it (MUL reads 18-bit operands)."""
    cfg = dev.cfg
    rng = np.random.default_rng(11)
    acc = rng.integers(-(1 << 12), 1 << 12, (ROWS, cfg.batch, cfg.block_out), dtype=np.int32)
    insns = [(AluOp.MUL, [0, 0, 0, 1]), (AluOp.ADD, [1, 2]), (AluOp.MUL, [1, 2, 2, 3])]
    want = acc.astype(np.int64)
    for op, rows in insns:
        for dst in rows:
            low = (want[dst] + (1 << 17)) % (1 << 18) - (1 << 17)     # 18 bits, signed
            want[dst] = low * 3 if op == AluOp.MUL else want[dst] + 3
            want[dst] = (want[dst] + (1 << 31)) % (1 << 32) - (1 << 31)
    _, got = _program(dev, insns, acc)
    written = sorted({d for _, rows in insns for d in rows})     # out mirrors acc writes
    assert np.array_equal(got[written], ((want[written] + 128) % 256 - 128).astype(np.int8))
