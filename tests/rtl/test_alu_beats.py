"""ALU micro-ops in beats (hw/alu_beats.py): with fewer ALU lanes (``alu_lanes``) or MUL
multipliers (``alu_mul_lanes``) than elements a micro-op holds stage 2 for its beats
(spec/timing.py ``micro_op_cycles``) once its rows are ready, nothing else moves
meanwhile, and the row it writes is whole (against numpy, here under the same-row chains
that stall it; the random programs are in test_differential.py)."""
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


#: (alu_lanes, alu_mul_lanes) on the tiny preset (8 elements), MUL 18 bits wide: MUL in
#: 4 beats; every opcode in 4 beats; the others in 2 and MUL in 8
SHAPES = {"mul-x2": (0, 2), "alu-x2": (2, 0), "alu-x4-mul-x1": (4, 1)}


@pytest.fixture(scope="module", params=list(SHAPES))
def dev(request):
    alu, mul = SHAPES[request.param]
    cfg = preset("tiny").replace(alu_mul_bits=18, alu_lanes=alu, alu_mul_lanes=mul,
                                 name=f"tiny-{request.param}")
    with open_backend("rtl", cfg, dram_bytes=1 << 20) as device:
        yield device


def _program(dev, insns, acc=None):
    """Cycles of ALU instructions, each (op, dst rows) with immediate 3 (op None: a GEMM;
    the acc rows loaded first from ``acc`` when given), and the out rows they leave."""
    cfg = dev.cfg
    b = ProgramBuilder(dev)
    if acc is not None:
        acc_buf = dev.alloc(acc.nbytes)
        acc_buf.write(acc.tobytes())
        b.load_2d("acc", 0, acc_buf, 0, x_size=ROWS)
    for op, rows in insns:
        for dst in rows:
            if op is None:
                b.uop_push(int(dst), 0, 0, mode="gemm")
            else:
                b.uop_push(int(dst), 0, mode="alu", alu_op=op, use_imm=True, imm=3)
        b.push_gemm() if op is None else b.push_alu()
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


@pytest.mark.parametrize("op", [AluOp.MIN, AluOp.MUL])
def test_alu_micro_ops_hold_stage_2_for_their_beats_and_nothing_more(dev, op):
    """On distinct rows each micro-op costs its beats more than a GEMM's one cycle; a row
    pattern costs the model's stalls and beats against rows taken in turn."""
    cfg, failures = dev.cfg, []
    beats = T.micro_op_cycles(cfg, op)
    more = _program(dev, [(op, range(8))])[0] - _program(dev, [(None, range(8))])[0]
    assert more == 8 * (beats - 1)
    for name, rows in _patterns(np.random.default_rng(5)):
        turns = [k % ROWS for k in range(len(rows))]
        model = [issue_cycles([(d, 0, beats) for d in r])[-1] for r in (rows, turns)]
        measured = [_program(dev, [(op, r)])[0] for r in (rows, turns)]
        if measured[0] - measured[1] != model[0] - model[1]:
            failures.append((name, measured, model))
    assert not failures, failures


def test_the_model_counts_beats_after_the_stall():
    assert issue_cycles([(0, 0, 4), (1, 0, 4)]) == [3, 7]
    assert issue_cycles([(0, 0, 4), (0, 0, 4)]) == [3, 3 + WRITE_STAGE - 1 + 3]


def test_alu_chains_write_whole_rows(dev):
    """Same-row chains of MUL, ADD and MAX (stalled, then in beats): out = low 8 bits of
    the row after each micro-op in turn, as numpy computes it (MUL reads 18 bits)."""
    cfg = dev.cfg
    rng = np.random.default_rng(11)
    acc = rng.integers(-(1 << 12), 1 << 12, (ROWS, cfg.batch, cfg.block_out), dtype=np.int32)
    insns = [(AluOp.MUL, [0, 0, 0, 1]), (AluOp.ADD, [1, 2]), (AluOp.MUL, [1, 2, 2, 3]),
             (AluOp.MAX, [3, 0, 4])]
    want = acc.astype(np.int64)
    ops = {AluOp.MUL: lambda x: ((x + (1 << 17)) % (1 << 18) - (1 << 17)) * 3,
           AluOp.ADD: lambda x: x + 3, AluOp.MAX: lambda x: np.maximum(x, 3)}
    for op, rows in insns:
        for dst in rows:
            want[dst] = (ops[op](want[dst]) + (1 << 31)) % (1 << 32) - (1 << 31)
    _, got = _program(dev, insns, acc)
    written = sorted({d for _, rows in insns for d in rows})     # out mirrors acc writes
    assert np.array_equal(got[written], ((want[written] + 128) % 256 - 128).astype(np.int8))
