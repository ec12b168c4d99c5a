"""Timeline of an RTL run: per-instruction events, Perfetto JSON, Gantt PNG, waveform."""
import json

import numpy as np
import pytest

from vtalab.spec import preset
from vtalab.spec.isa import module_of

from .backends import open_backend
from .programs import matmul


@pytest.fixture(scope="module")
def run():
    with open_backend("rtl", preset("tiny"), dram_bytes=4 << 20, timeline=True) as dev:
        result, expected, counters, program = matmul(dev, m=16, k=64, n=32, vthreads=2)
        np.testing.assert_array_equal(result, expected)
        yield dev.last_timeline, counters, program.instructions()


def test_one_event_per_instruction_in_module_order(run):
    timeline, counters, insns = run
    for module in ("load", "compute", "store"):
        want = [k for k, insn in enumerate(insns) if module_of(insn) == module]
        events = [e for e in timeline.events if e.module == module]
        assert [e.index for e in events] == want
        assert all(e.start <= e.run < e.end for e in events)
        assert all(a.end <= b.start for a, b in zip(events, events[1:]))
        assert timeline.busy(module) <= counters[f"{module}_busy"]
    assert timeline.cycles <= counters["cycles"]


def test_double_buffering_overlaps_loads_with_gemms(run):
    timeline, _, _ = run
    assert timeline.overlap() > 0


def test_perfetto_trace_and_png(run, tmp_path):
    timeline, _, insns = run
    data = json.loads(timeline.save_trace(tmp_path / "trace.json").read_text())
    slices = [e for e in data["traceEvents"] if e["ph"] == "X" and e["cat"] != "wait"]
    assert len(slices) == len(insns)
    assert {e["name"] for e in slices} >= {"GEMM", "LOAD INP", "STORE OUT", "FINISH"}
    pytest.importorskip("matplotlib")
    png = timeline.plot(tmp_path / "timeline.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_waveform_dump_from_the_traced_build(tmp_path):
    path = tmp_path / "run.vcd"
    with open_backend("rtl", preset("tiny"), dram_bytes=1 << 20, waveform=path) as dev:
        result, expected, _, _ = matmul(dev, m=8, k=16, n=16, vthreads=1)
    np.testing.assert_array_equal(result, expected)
    assert path.stat().st_size > 1000 and path.read_bytes().startswith(b"$")
