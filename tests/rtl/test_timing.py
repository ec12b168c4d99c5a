"""spec/timing.py's latencies, measured on the RTL exactly (equalities, not tolerances).

The per-instruction timeline (sim/timeline.py: ``start`` = first busy cycle, ``run`` = the
tokens are there, ``end`` = last busy cycle + 1; every state but IDLE is busy) pins what an
instruction costs its module; a waveform pins the exec pipe from the loop generator's
micro-op to the write and the token push, which no instruction-level timing can separate
from the FSM states around the loop. The cycle model's constants are these latencies plus
fitted offsets (spec/timing.py, INSN_FIT, DRAIN_FIT, LOAD_SETUP_FIT): the offsets are
calibration and have nothing to measure here.
"""
import pytest

from vtalab.runtime import ProgramBuilder
from vtalab.spec import preset
from vtalab.spec import timing as T

from .backends import open_backend


@pytest.fixture(scope="module")
def dev():
    with open_backend("rtl", preset("tiny"), dram_bytes=1 << 20, timeline=True) as device:
        yield device


def cycles_per_entry(cfg, buffer: str) -> int:
    """One per beat; entries narrower than a beat are written one per cycle."""
    return max(1, -(-cfg.entry_bytes(buffer) // cfg.bus_bytes))


def test_the_cycle_model_assumes_the_harness_dram_latency():
    from vtalab.sim.rtl.model import Timing
    assert Timing().read_latency == T.DRAM_READ_LATENCY


def _run_loads(dev, buffer, sizes, read_latency):
    dev.set_timing(read_latency=read_latency)
    try:
        dram = dev.alloc(1 << 14)
        builder = ProgramBuilder(dev)
        for entries in sizes:
            builder.load_2d(buffer, 0, dram, 0, entries)
        cycles = builder.finish().run(dev)["cycles"]
        dram.free()
    finally:
        dev.set_timing()
    return cycles, [e for e in dev.last_timeline.events if e.label.startswith("LOAD")]


@pytest.mark.parametrize("buffer", ["inp", "wgt", "acc", "uop"])
def test_a_load_costs_its_beats_plus_the_load_latency(dev, buffer):
    cfg = dev.cfg
    per_entry = cycles_per_entry(cfg, buffer)
    sizes = [3, 5, 2]
    for latency in (T.DRAM_READ_LATENCY, T.DRAM_READ_LATENCY + 3):
        cycles, events = _run_loads(dev, buffer, sizes, latency)
        want = T.load_latency(cfg, buffer, read_latency=latency)
        assert len(events) == len(sizes)
        for k, entries in enumerate(sizes):
            # one LOAD's IDLE to the next one's: the first busy cycles, IDLE being the
            # only state that is not busy
            if k + 1 < len(sizes):
                assert events[k + 1].start - events[k].start == entries * per_entry + want
            assert events[k].end - events[k].start == entries * per_entry + want - 1
        more, _ = _run_loads(dev, buffer, [s + 4 for s in sizes], latency)
        assert more - cycles == 4 * len(sizes) * per_entry


def _run_gemms(dev, count, uops):
    """``count`` GEMMs of one kernel of ``uops`` micro-ops (its uops loaded once)."""
    builder = ProgramBuilder(dev)
    for u in range(uops):
        builder.uop_push(u, u, 0, mode="gemm", reset=True)
    kernel, builder.recorder = builder.recorder.finish(), None
    for _ in range(count):
        builder.push_gemm(kernel)
    cycles = builder.finish().run(dev)["cycles"]
    return cycles, [e for e in dev.last_timeline.events if e.label == "GEMM"]


@pytest.mark.parametrize("uops", [1, 6])
def test_a_compute_instruction_costs_its_micro_ops_plus_the_dispatch(dev, uops):
    cycles, gemms = _run_gemms(dev, 3, uops)
    per_insn = uops + T.COMPUTE_INSN_LATENCY
    assert [b.start - a.start for a, b in zip(gemms, gemms[1:])] == [per_insn, per_insn]
    # busy: every state but IDLE, and LOOP is one cycle longer than its micro-ops
    assert all(e.end - e.start == per_insn - 1 for e in gemms)
    fewer, _ = _run_gemms(dev, 2, uops)
    assert cycles - fewer == per_insn


def _run_chain(dev, entries, uops):
    """LOAD inp -> l2c -> GEMM (uops loaded first) -> c2s -> STORE: one serial chain."""
    inp, out = dev.alloc(4096), dev.alloc(4096)
    builder = ProgramBuilder(dev)
    builder.load_2d("inp", 0, inp, 0, entries)
    builder.dep_push("load", "compute")
    builder.dep_pop("load", "compute")
    for u in range(uops):
        builder.uop_push(u, u, 0, mode="gemm")
    builder.push_gemm()
    builder.dep_push("compute", "store")
    builder.dep_pop("compute", "store")
    builder.store_2d(0, out, 0, 1)
    cycles = builder.finish().run(dev)["cycles"]
    inp.free()
    out.free()
    timeline = dev.last_timeline
    return cycles, {e.label: e for e in timeline.events} if timeline else {}


@pytest.mark.parametrize("entries, uops", [(4, 2), (4, 9), (12, 2)])
def test_a_gemm_pushes_its_token_the_drain_latency_after_its_last_micro_op(dev, entries, uops):
    cfg = dev.cfg
    _, ev = _run_chain(dev, entries, uops)
    load, uop_load, gemm, store = ev["LOAD INP"], ev["LOAD UOP"], ev["GEMM"], ev["STORE OUT"]
    per_entry = cycles_per_entry(cfg, "inp")
    assert load.end - load.start == entries * per_entry + T.load_latency(cfg, "inp") - 1
    # the LOAD pushes in its last busy cycle; the compute module pops the token after it
    assert uop_load.run == load.end - 1 + T.TOKEN_LATENCY
    # the GEMM pops nothing: it runs from TOKENS, its first micro-op after the issue states
    # that follow IDLE; it retires without waiting for the pipe (the compute module is free
    # for the next instruction), and its token push follows DRAIN_LATENCY after the last
    # micro-op; the waveform test below pins that split of the GEMM's busy cycles
    assert gemm.run == gemm.start
    last_uop = gemm.run + len(T.COMPUTE_ISSUE_STATES) - 1 + uops - 1
    assert gemm.end == last_uop + T.LOOP_EXIT + len(T.COMPUTE_RETIRE_STATES) + 1
    push = last_uop + T.DRAIN_LATENCY
    assert store.run == push + T.TOKEN_LATENCY


def test_the_chain_grows_a_cycle_per_beat_and_two_per_micro_op(dev):
    base, _ = _run_chain(dev, 4, 2)
    more_entries, _ = _run_chain(dev, 12, 2)
    more_uops, _ = _run_chain(dev, 4, 9)
    assert more_entries - base == 8 * cycles_per_entry(dev.cfg, "inp")
    # each micro-op is one uop word loaded (narrower than a beat: a cycle each) and one cycle
    # of the GEMM
    assert more_uops - base == 7 * 2


def _read_vcd(path, wanted):
    """{name: [value per cycle]} of 1-bit signals named by their scope path's tail
    ("compute.loop.busy"), sampled with the clock low (the harness dumps at 2c, 2c + 1)."""
    ids, scope, values, time = {}, [], {}, None
    samples = {name: [] for name in wanted}

    def sample_until(stamp):
        nonlocal time
        while time is not None and time < stamp:
            if time % 2 == 0:
                for name, code in ids.items():
                    samples[name].append(values.get(code, 0))
            time += 1

    with open(path) as vcd:
        for line in vcd:
            tok = line.split()
            if not tok:
                continue
            if tok[0] == "$scope":
                scope.append(tok[2])
            elif tok[0] == "$upscope":
                scope.pop()
            elif tok[0] == "$var":
                full = ".".join(scope + [tok[4]])
                for name in wanted:
                    if full.endswith("." + name):
                        ids[name] = tok[3]
            elif tok[0].startswith("#"):
                stamp = int(tok[0][1:])
                time = stamp if time is None else time
                sample_until(stamp)
            elif len(tok) == 1 and tok[0][0] in "01":
                values[tok[0][1:]] = int(tok[0][0])
    assert set(ids) == set(wanted), f"signals missing from the waveform: {set(wanted) - set(ids)}"
    return samples


def _high(trace):
    return [c for c, v in enumerate(trace) if v]


def test_the_exec_pipe_writes_and_pushes_at_its_stage_count(tmp_path):
    """From the waveform: the loop generator's micro-ops, the pipe's GEMM writes and the
    c2s token push of one GEMM, in cycles."""
    path = tmp_path / "drain.vcd"
    uops = 5
    with open_backend("rtl", preset("tiny"), dram_bytes=1 << 20, waveform=path) as device:
        _run_chain(device, 3, uops)
    names = ["core.compute.loop.busy", "core.compute.pipe.gemm_done", "core.push_c2s"]
    trace = _read_vcd(path, names)
    emitted, written, pushed = (_high(trace[n]) for n in names)
    assert len(emitted) == len(written) == uops and len(pushed) == 1
    assert emitted == list(range(emitted[0], emitted[0] + uops))     # one per cycle
    assert written == [c + len(T.EXEC_FRONT) + T.WRITE_STAGE - 1 for c in emitted]
    assert pushed[0] - emitted[-1] == T.DRAIN_LATENCY


@pytest.mark.parametrize("uops", range(1, 12))
def test_a_queued_push_survives_a_silent_instruction_retiring_in_its_cycle(dev, uops):
    """A pushing GEMM's token waits in the compute module's queue while the next GEMM (no
    push, as long) runs; for one of these lengths that GEMM retires in the cycle the token
    goes out. A lost token deadlocks the store that pops it."""
    out = dev.alloc(4096)
    builder = ProgramBuilder(dev)
    for u in range(uops):
        builder.uop_push(u, u, 0, mode="gemm", reset=True)
    kernel, builder.recorder = builder.recorder.finish(), None
    builder.push_gemm(kernel)
    builder.dep_push("compute", "store")
    builder.push_gemm(kernel)
    builder.dep_pop("compute", "store")
    builder.store_2d(0, out, 0, 1)
    builder.finish().run(dev)
    gemms = [e for e in dev.last_timeline.events if e.label == "GEMM"]
    store = next(e for e in dev.last_timeline.events if e.label == "STORE OUT")
    # the first GEMM did not hold the module; its token reached the store on time
    assert gemms[1].start - gemms[0].start == uops + T.COMPUTE_INSN_LATENCY
    last_uop = gemms[0].run + len(T.COMPUTE_ISSUE_STATES) - 1 + uops - 1
    assert store.run == last_uop + T.DRAIN_LATENCY + T.TOKEN_LATENCY
    out.free()
