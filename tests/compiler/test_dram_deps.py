"""DRAM hazards in insert_deps/verify_tokens: a load of bytes an earlier store of the same
stream wrote waits for that store (joined programs: one layer's output is the next one's
input), through the compute module, with no token more than it needs."""
import pytest

from vtalab.compiler.errors import VerifyError
from vtalab.compiler.vta.passes.deps import insert_deps
from vtalab.compiler.vta.passes.verify_tokens import verify_tokens
from vtalab.compiler.vta.stream import Record, Stream
from vtalab.spec import preset
from vtalab.spec.isa import FinishInsn, GemmInsn, Mem, MemInsn, Opcode

CFG = preset("default")


def _store(base=0, entries=4):
    insn = MemInsn(opcode=Opcode.STORE, mem=Mem.OUT, dram_base=base, x_size=entries,
                   x_stride=entries)
    return Record(insn, "store", "x", reads=(("out", 0, entries - 1),))


def _load(base=0, entries=4, mem=Mem.INP, unit="load"):
    insn = MemInsn(opcode=Opcode.LOAD, mem=mem, dram_base=base, x_size=entries,
                   x_stride=entries)
    buf = mem.buffer
    return Record(insn, unit, "x", writes=((buf, 0, entries - 1),))


def _gemm_writing_out():
    return Record(GemmInsn(), "compute", None, (("uop", 0, 0),), (("out", 0, 3),))


def _deps(*recs):
    stream = insert_deps(Stream(list(recs)), CFG)
    verify_tokens(stream, CFG)
    return stream.records


def _flags(rec):
    return {f for f in ("pop_prev", "pop_next", "push_prev", "push_next")
            if getattr(rec.insn, f)}


def test_a_load_of_stored_bytes_waits_through_a_compute_relay():
    store, load = _store(), _load()
    recs = _deps(store, load)
    assert [r.unit for r in recs] == ["store", "compute", "load", "compute"]
    relay = recs[1]
    assert relay.insn.x_size == 0 and relay.insn.mem == Mem.UOP       # a compute no-op
    assert _flags(store) == {"push_prev"}
    assert _flags(relay) == {"pop_next", "push_prev"}
    assert _flags(load) == {"pop_next", "push_next"}        # (push: FINISH waits for it)


def test_a_load_of_other_bytes_is_not_ordered_after_the_store():
    store, load = _store(base=0), _load(base=64)
    recs = _deps(store, load)
    assert [r.unit for r in recs] == ["store", "load", "compute"]
    assert _flags(load) == {"push_next"}


def test_a_compute_load_of_stored_bytes_pops_the_store_token_itself():
    store, acc = _store(), _load(mem=Mem.ACC, unit="compute")
    recs = _deps(store, acc)
    assert len(recs) == 3
    assert _flags(store) == {"push_prev"} and _flags(acc) == {"pop_next"}


def test_a_store_compute_already_waited_for_needs_no_relay():
    """The GEMM overwrites the out entries the store reads, so it pops the store's token:
    the load then pops the GEMM's token, and no no-op is inserted."""
    store, gemm, load = _store(), _gemm_writing_out(), _load()
    recs = _deps(store, gemm, load)
    assert recs[:3] == [store, gemm, load]
    assert _flags(gemm) == {"pop_next", "push_prev"}
    assert _flags(load) == {"pop_next", "push_next"}


def test_the_verifier_rejects_an_unordered_store_and_load_of_one_buffer():
    stream = Stream([_store(), _load(), Record(FinishInsn(), "compute")])
    with pytest.raises(VerifyError, match=r"instruction 1 \(load\) must be ordered after "
                                          r"conflicting instruction 0 \(store\)"):
        verify_tokens(stream, CFG)


def test_buffers_placed_in_one_region_conflict_on_shared_bytes():
    """A joined program's values share the arena, whose ranges the memory plan reuses:
    with their places given, a load of another value in the bytes a store wrote waits."""
    store, load = _store(), _load()
    load.reloc = "y"
    apart = insert_deps(Stream([store, load]), CFG).records
    assert [r.unit for r in apart] == ["store", "load", "compute"]
    store, load = _store(), _load()
    load.reloc = "y"
    stream = Stream([store, load], dram_bases={"x": ("arena", 256), "y": ("arena", 256)})
    shared = insert_deps(stream, CFG).records
    assert [r.unit for r in shared] == ["store", "compute", "load", "compute"]
    verify_tokens(stream, CFG)
    racy = Stream([_store(), _load(base=0), Record(FinishInsn(), "compute")],
                  dram_bases={"x": ("arena", 0)})
    racy.records[1].reloc = "y"
    racy.dram_bases["y"] = ("arena", 0)
    with pytest.raises(VerifyError, match="must be ordered after"):
        verify_tokens(racy, CFG)
