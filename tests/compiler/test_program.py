"""The compiler emits the runtime's Program: relocations resolved by the runtime at
`default_alignment(cfg)`, through the ISA's encoder, on any device; module files keep it."""
import numpy as np
import pytest

from vtalab.compiler.topi import DenseKnobs, Requant, dense, dense_reference
from vtalab.compiler.vta import build
from vtalab.runtime import open_device
from vtalab.runtime.device import default_alignment
from vtalab.runtime.program import UOP_SYMBOL, Program
from vtalab.spec import Isa, preset
from vtalab.spec.errors import ProgramError


@pytest.fixture(scope="module")
def prog():
    cfg = preset("tiny")
    sch, args = dense(cfg, 2, 32, 16, Requant(shift=5), DenseKnobs(tile_n=1, vthreads=2))
    return build(sch, cfg, args)


def _inputs(prog, seed=0):
    rng = np.random.default_rng(seed)
    return {b.name: rng.integers(-100, 100, b.shape).astype(b.dtype)
            for b in prog.buffers if b.name != "out"}


def test_compiler_output_is_the_runtime_program(prog):
    assert isinstance(prog, Program)
    names = {name for _, name in prog.relocs}
    assert names == {b.name for b in prog.buffers} | {UOP_SYMBOL}
    assert prog.outputs == ("out",)
    assert prog.encode() == prog.code                       # unplaced: as stored


def test_run_io_places_at_the_default_alignment_and_frees(prog):
    ins = _inputs(prog)
    with open_device("fsim", prog.cfg, dram_bytes=1 << 20) as dev:
        bases, insn_addr, owned = prog.place(dev)
        align = default_alignment(prog.cfg)
        assert all(addr % align == 0 for addr in bases.values())
        for buf in owned.values():
            dev.free(buf)
        before = dev.allocator.used_bytes
        out, counters = prog.run_io(dev, ins)
        assert dev.allocator.used_bytes == before             # everything it placed is freed
    assert counters["macs"] == 2 * 32 * 16
    want = dense_reference(ins["data"], ins["weight"], ins["bias"], Requant(shift=5))
    np.testing.assert_array_equal(out["out"], want)


def test_relocation_moves_dram_base_by_address_over_element_size(prog):
    bases = {name: 1024 * (k + 1) for k, name in enumerate(sorted({n for _, n in prog.relocs}))}
    placed = Isa(prog.cfg).decode_program(prog.encode(bases))
    for index, name in prog.relocs:
        size = 4 if name == UOP_SYMBOL else prog.cfg.entry_bytes(placed[index].mem.buffer)
        assert placed[index].dram_base == prog.insns[index].dram_base + bases[name] // size
    with pytest.raises(ProgramError, match="must be given to place program"):
        prog.encode({UOP_SYMBOL: 0})
    with pytest.raises(ProgramError, match="must be a multiple of"):
        prog.encode({**bases, "data": 3})


def test_bad_inputs_are_named(prog):
    ins = _inputs(prog)
    ins["data"] = ins["data"][:1]
    with open_device("fsim", prog.cfg, dram_bytes=1 << 20) as dev:
        with pytest.raises(ProgramError, match="input data must have shape"):
            prog.run_io(dev, ins)
        with pytest.raises(ProgramError, match="buffer must be one of"):
            prog.run_io(dev, {"nope": np.zeros(1)})


def test_memory_plan_aligns_to_the_runtime_alignment():
    from vtalab.compiler.graph.passes.plan_memory import plan_memory  # noqa: F401
    from vtalab.compiler.graph.passes.rewrite import PassContext
    cfg = preset("default").replace(block_in=32, block_out=32)
    assert default_alignment(cfg) > 64            # a 1x32x32 acc entry is 128 bytes
    assert PassContext(config=cfg).alignment is None   # None: the planner asks the runtime
