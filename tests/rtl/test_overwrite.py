"""GEMM_OVERWRITE (spec/isa.py): each micro-op writes its products' sum instead of adding
it to the acc row; the last micro-op on a row wins. Directed programs on the functional
simulator and the RTL against numpy, with the overwrite right behind accumulations of the
same rows (the exec pipe's forwarding window: hw/exec_pipe.py zeroes the forwarded row)."""
import numpy as np
import pytest

from vtalab.runtime import ProgramBuilder
from vtalab.spec import preset
from vtalab.spec.isa import GemmInsn, Isa, Opcode

from .backends import BACKENDS, open_backend

ROWS = 6


def _load(b, dev, rng, cfg):
    """inp rows 0..ROWS-1 and wgt rows 0..2 with random int8; returns them as arrays."""
    inp = rng.integers(-128, 128, (ROWS, cfg.batch, cfg.block_in), dtype=np.int8)
    wgt = rng.integers(-128, 128, (3, cfg.block_out, cfg.block_in), dtype=np.int8)
    bufs = {}
    for name, array in (("inp", inp), ("wgt", wgt)):
        bufs[name] = dev.alloc(array.nbytes)
        bufs[name].write(array.tobytes())
        b.load_2d(name, 0, bufs[name], 0, x_size=len(array))
    return inp, wgt, bufs


def _gemm(b, uops, overwrite=False, reset=False):
    for dst, src, wgt in uops:
        b.uop_push(dst, src, wgt, overwrite=overwrite, reset=reset)
    b.push_gemm()


def _dot(inp, wgt, s, w):
    return inp[s].astype(np.int64) @ wgt[w].astype(np.int64).T


def _run(dev, program_fn):
    cfg = dev.cfg
    rng = np.random.default_rng(7)
    b = ProgramBuilder(dev)
    inp, wgt, bufs = _load(b, dev, rng, cfg)
    b.dep_push("load", "compute")
    b.dep_pop("load", "compute")
    expected = program_fn(b, inp, wgt)
    out = dev.alloc(ROWS * cfg.entry_bytes("out"))
    b.dep_push("compute", "store")
    b.dep_pop("compute", "store")
    b.store_2d(0, out, 0, x_size=ROWS)
    counters = b.finish().run(dev)
    got = np.frombuffer(out.read(), np.int8).reshape(ROWS, cfg.batch, cfg.block_out)
    want = ((expected + 128) % 256 - 128).astype(np.int8)       # the out buffer's low bits
    return got, want, counters


def _behind_accumulations(b, inp, wgt):
    acc = np.zeros((ROWS, inp.shape[1], wgt.shape[1]), np.int64)
    first = [(r, r, 0) for r in range(ROWS)]
    _gemm(b, first, reset=True)
    _gemm(b, first)                                   # acc += inp x wgt0
    for r in range(ROWS):
        acc[r] += _dot(inp, wgt, r, 0)
    # overwrite right behind: rows 0..5 while their sums are still in the pipe; row 2
    # twice (the last wins), row 5 not at all (keeps its sum)
    over = [(0, 1, 1), (1, 2, 1), (2, 3, 2), (3, 0, 2), (2, 4, 1), (4, 5, 2)]
    _gemm(b, over, overwrite=True)
    for dst, src, w in over:
        acc[dst] = _dot(inp, wgt, src, w)
    again = [(r, (r + 1) % ROWS, 2) for r in range(ROWS)]
    _gemm(b, again)                                   # accumulate onto the overwritten rows
    for dst, src, w in again:
        acc[dst] += _dot(inp, wgt, src, w)
    return acc


def _looped_overwrite(b, inp, wgt):
    """An overwrite with two loop levels over rows that hold sums already."""
    acc = np.zeros((ROWS, inp.shape[1], wgt.shape[1]), np.int64)
    _gemm(b, [(r, r, 2) for r in range(ROWS)], reset=True)
    _gemm(b, [(r, r, 2) for r in range(ROWS)])
    b.uop_loop_begin(3, dst_factor=2, src_factor=2, wgt_factor=0)
    b.uop_loop_begin(2, dst_factor=1, src_factor=1, wgt_factor=1)
    b.uop_push(0, 0, 0, overwrite=True)
    b.uop_loop_end()
    b.uop_loop_end()
    b.push_gemm()
    for o in range(3):
        for i in range(2):
            acc[2 * o + i] = _dot(inp, wgt, 2 * o + i, i)
    return acc


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("program", [_behind_accumulations, _looped_overwrite])
def test_overwrite_writes_the_products_and_the_last_one_wins(backend, program):
    with open_backend(backend, preset("tiny"), dram_bytes=1 << 20) as dev:
        got, want, counters = _run(dev, program)
    assert np.array_equal(got, want)
    assert counters["gemm_uops"] > 0


def test_overwrite_is_its_own_opcode_and_leaves_vta_fields_alone():
    isa = Isa(preset("default"))
    plain = GemmInsn(uop_end=7, iter_out=3, dst_factor_out=5, src_factor_in=2)
    over = GemmInsn(overwrite=True, uop_end=7, iter_out=3, dst_factor_out=5, src_factor_in=2)
    field = isa.opcode_field
    a, b = isa.encode(plain), isa.encode(over)
    assert field.extract(a) == Opcode.GEMM and field.extract(b) == Opcode.GEMM_OVERWRITE == 5
    assert a & ~(field.mask << field.lsb) == b & ~(field.mask << field.lsb)
    assert isa.decode(b) == over and isa.decode(a) == plain
    assert isa.disasm(b).startswith("GEMM_OVERWRITE ")
