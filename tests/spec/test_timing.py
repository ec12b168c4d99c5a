"""spec/timing.py: the hardware's latencies, and the cycle model's constants built from them
(tests/rtl/test_timing.py measures the latencies on the RTL)."""
import ast
from pathlib import Path

import pytest

from vtalab.spec import preset, preset_names, timing

COMPILER = Path(__file__).resolve().parents[2] / "compiler"


@pytest.mark.parametrize("name", preset_names())
def test_totals_are_positive_and_the_same_for_every_preset(name):
    cfg = preset(name)
    t = timing.timing(cfg)
    assert min(t.compute_insn_latency, t.drain_latency, t.load_latency,
               t.insn_cycles, t.drain_cycles, t.load_setup_cycles) > 0
    assert (t.insn_cycles, t.drain_cycles, t.load_setup_cycles) == (
        timing.INSN_CYCLES, timing.DRAIN_CYCLES, timing.LOAD_SETUP_CYCLES)
    assert (t.compute_insn_latency, t.drain_latency, t.load_latency) == (
        timing.COMPUTE_INSN_LATENCY, timing.DRAIN_LATENCY, timing.LOAD_LATENCY)
    # inp entries are one or two beats on every preset: the module-level latency holds;
    # wgt entries are three beats or more, staged once more on their way in
    assert timing.load_latency(cfg, "inp") == timing.LOAD_LATENCY
    assert timing.load_latency(cfg, "wgt") == timing.LOAD_LATENCY + timing.DMA_BEAT_STAGE


def test_only_entries_of_three_beats_or_more_pass_the_beat_stage():
    cfg = preset("tiny")            # inp 1 beat, wgt 8, acc 4
    assert cfg.entry_bytes("wgt") >= timing.BEAT_STAGE_BEATS * cfg.bus_bytes
    assert timing.dma_latency(cfg, "wgt") == timing.dma_latency(cfg, "inp") + 1
    assert timing.dma_latency(cfg, "acc") == timing.dma_latency(cfg, "wgt")
    two = preset("default")         # inp 2 beats: no stage
    assert timing.dma_latency(two, "inp") == timing.dma_latency(cfg, "inp")


def test_totals_are_the_latencies_plus_the_model_offsets():
    assert timing.INSN_CYCLES == timing.COMPUTE_INSN_LATENCY + timing.INSN_FIT
    assert timing.DRAIN_CYCLES == timing.DRAIN_LATENCY + timing.DRAIN_FIT
    assert timing.LOAD_SETUP_CYCLES == timing.LOAD_LATENCY + timing.LOAD_SETUP_FIT


def test_latencies_are_sums_of_the_named_stages():
    assert timing.drain_latency() == len(timing.EXEC_FRONT) + timing.WRITE_STAGE
    assert timing.compute_insn_latency() == (len(timing.COMPUTE_ISSUE_STATES)
                                             + timing.LOOP_EXIT
                                             + len(timing.COMPUTE_RETIRE_STATES))
    cfg = preset("tiny")
    assert timing.dma_latency(cfg, "inp", read_latency=5) \
        == timing.dma_latency(cfg, "inp") + 5 - timing.DRAM_READ_LATENCY
    # a LOAD on the compute module passes a state more (DRAIN) than one on the load module
    assert timing.load_latency(cfg, "acc") == timing.load_latency(cfg, "wgt") + 1
    # uop entries are narrower than a beat: no register completes them, no stage copies
    assert timing.dma_latency(cfg, "uop") == timing.dma_latency(cfg, "acc") \
        - timing.DMA_UNPACK_REGISTER - timing.DMA_BEAT_STAGE


def test_the_cycle_model_takes_its_constants_from_spec():
    from vtalab.compiler.tune import cost
    assert cost.INSN == timing.INSN_CYCLES
    assert cost.DRAIN == timing.DRAIN_CYCLES
    assert cost.LOAD_SETUP == timing.LOAD_SETUP_CYCLES
    for name in preset_names():
        t = timing.timing(preset(name))
        assert (cost.INSN, cost.DRAIN, cost.LOAD_SETUP) == (
            t.insn_cycles, t.drain_cycles, t.load_setup_cycles)


def _is_latency_name(name: str) -> bool:
    upper = name.upper()
    return "DRAIN" in upper or "SETUP" in upper or name == "INSN"   # not ``insn = ...``


def _numbers_assigned_to_latency_names(source: str) -> list[int]:
    """Lines that give a DRAIN/SETUP/INSN name (or parameter default) a number literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        pairs = []
        if isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names = [n for t in targets for n in ast.walk(t)]
            pairs = [(n.id if isinstance(n, ast.Name) else n.attr, node.value) for n in names
                     if isinstance(n, (ast.Name, ast.Attribute))]
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            args = node.args
            positional = args.posonlyargs + args.args
            pairs = list(zip([a.arg for a in positional[len(positional) - len(args.defaults):]],
                             args.defaults))
            pairs += [(a.arg, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d]
        for name, value in pairs:
            if value is not None and _is_latency_name(name) and any(
                    isinstance(c, ast.Constant) and type(c.value) in (int, float)
                    for c in ast.walk(value)):
                found.append(value.lineno)
    return found


def test_the_scan_finds_copied_latencies():
    assert _numbers_assigned_to_latency_names("DRAIN = 49\n") == [1]
    assert _numbers_assigned_to_latency_names("x = 1\nLOAD_SETUP: int = 31\n") == [2]
    assert _numbers_assigned_to_latency_names("def f(drain_cycles=49):\n    pass\n") == [1]
    assert _numbers_assigned_to_latency_names("DRAIN = timing.DRAIN_CYCLES\n") == []
    assert _numbers_assigned_to_latency_names("INSN = 4\ninsn = Insn(y_size=1)\n") == [1]


def test_no_compiler_file_copies_a_hardware_latency():
    copied = []
    for path in sorted(COMPILER.rglob("*.py")):
        try:
            lines = _numbers_assigned_to_latency_names(path.read_text())
        except SyntaxError:         # a file being edited: not importable, not a copy yet
            continue
        copied += [f"{path.relative_to(COMPILER.parent)}:{line}" for line in lines]
    assert not copied, f"take DRAIN/SETUP/INSN latencies from vtalab.spec.timing: {copied}"
