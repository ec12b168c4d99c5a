"""Illegal programs on every backend, with and without the runtime's validator: the same
error class naming the same instruction; and a device that stays correct after each one.

One fixture runs every case on fsim and on the RTL, each with the validator (which stops
the program before it runs) and without it (the simulator's own checks, the hardware's
error registers). After each bad run the same device runs a legal matmul, on the RTL with
slow memory and random back-pressure, and must match numpy bit for bit.
"""
import numpy as np
import pytest

from vtalab.spec import preset
from vtalab.spec.errors import TokenError

from .backends import BACKENDS, open_backend
from .illegal_cases import cases
from .programs import matmul

CFG = preset("tiny")
DRAM_BYTES = 1 << 20
SLOW = {"read_latency": 40, "write_latency": 25, "pressure": 0.4}


@pytest.fixture(scope="module", params=[(b, v) for b in BACKENDS for v in (True, False)],
                ids=lambda p: f"{p[0]}-{'validated' if p[1] else 'unvalidated'}")
def device(request):
    backend, validate = request.param
    with open_backend(backend, CFG, dram_bytes=DRAM_BYTES, validate=validate) as dev:
        data = dev.alloc(8192, align=4096)
        data.write(bytes(8192))
        yield dev, data.addr


def run_words(dev, words) -> dict:
    stream = b"".join(w.to_bytes(16, "little") for w in words)
    buf = dev.alloc(len(stream))
    buf.write(stream)
    try:
        return dev.run(buf.addr, len(words))
    finally:
        buf.free()


def legal_matmul_matches(dev, seed: int) -> None:
    if hasattr(dev, "set_timing"):
        dev.set_timing(seed=seed + 1, **SLOW)
    try:
        result, expected, _, _ = matmul(dev, seed=seed)
    finally:
        if hasattr(dev, "set_timing"):
            dev.set_timing()
    np.testing.assert_array_equal(result, expected)


CASES = cases(CFG, 0, DRAM_BYTES)


@pytest.mark.parametrize("k", range(len(CASES)), ids=[c.name for c in CASES])
def test_illegal_program_names_its_instruction_everywhere(device, k):
    dev, data = device
    case = cases(CFG, data, DRAM_BYTES)[k]
    with pytest.raises(case.error, match=rf"instruction {case.index}\b") as caught:
        run_words(dev, case.words)
    assert type(caught.value) is case.error
    legal_matmul_matches(dev, seed=k)


def test_every_rule_has_a_case():
    from vtalab.spec.regs import ErrorCode
    names = " ".join(c.name for c in CASES).lower()
    for word in ("leftover", "uop_end", "past the", "after finish", "opcode", "alu opcode",
                 "store from", "load into", "pop_prev", "deadlock", "max_tokens", "no finish",
                 "x_stride", "dram"):
        assert word in names, word
    assert len(ErrorCode) == 14


@pytest.mark.parametrize("validate", [True, False])
def test_a_leftover_token_cannot_corrupt_the_next_run(validate):
    """The issue's case: a run ends with an l2c token left; the next, legal program's GEMM
    must still wait for its own load, with a slow memory that would expose it."""
    with open_backend("rtl", CFG, dram_bytes=DRAM_BYTES, validate=validate) as dev:
        data = dev.alloc(4096)
        data.write(bytes(4096))
        leftover = [w for w in cases(CFG, data.addr, DRAM_BYTES)
                    if w.name == "leftover token"][0]
        for seed in range(3):
            with pytest.raises(TokenError, match=r"instruction 2 \(FINISH\)"):
                run_words(dev, leftover.words)
            legal_matmul_matches(dev, seed)


@pytest.mark.parametrize("name, index", [("deadlock: a pop nothing pushed", 1),
                                         ("uop_end", 1)])
def test_default_config_stops_at_once_without_the_validator(name, index):
    """On ``default`` (VTA's uop_end 8200 and 16383 hung until the cycle limit): the
    hardware's own verdict, never a WatchdogError."""
    cfg = preset("default")
    with open_backend("rtl", cfg, dram_bytes=DRAM_BYTES, validate=False) as dev:
        data = dev.alloc(4096)
        data.write(bytes(4096))
        for case in cases(cfg, data.addr, DRAM_BYTES):
            if case.name.startswith(name):
                with pytest.raises(case.error, match=rf"instruction {index}\b"):
                    run_words(dev, case.words)
        result, expected, _, _ = matmul(dev)
        np.testing.assert_array_equal(result, expected)


def test_the_board_driver_reads_the_same_verdicts():
    """fpga/driver.py against the Verilated core's registers, without the validator."""
    from vtalab.fpga.bus import ArrayMemory, RtlBus
    from vtalab.fpga.driver import FpgaDevice
    from vtalab.sim.rtl.model import RtlModel
    open_backend("rtl", CFG).close()              # skips without the tools, builds once
    model = RtlModel(CFG, DRAM_BYTES)
    try:
        with FpgaDevice(CFG, RtlBus(model), ArrayMemory(model.dram, base=0),
                        validate=False) as dev:
            data = dev.alloc(8192, align=4096)
            data.write(bytes(8192))
            for case in cases(CFG, data.addr, DRAM_BYTES):
                if "DRAM" in case.name:            # the board's bus has no such check
                    continue
                with pytest.raises(case.error, match=rf"instruction {case.index}\b"):
                    run_words(dev, case.words)
    finally:
        model.close()


@pytest.mark.parametrize("name, count", [("tiny", 150), ("default", 40)])
def test_random_illegal_programs_get_one_verdict_everywhere(name, count):
    """Mutants of random legal programs: the validator, fsim and the RTL (both without the
    validator) name the same error and instruction; no hang, no crash; a legal program
    after each still matches bit for bit (bench/fuzz.py --illegal runs thousands)."""
    from vtalab.runtime.fuzz_illegal import IllegalFuzz
    cfg = preset(name)
    timings = [{}, {"pressure": 0.3, "read_latency": 4, "write_latency": 2, "seed": 5}]
    with open_backend("fsim", cfg, dram_bytes=DRAM_BYTES, validate=False) as ref, \
            open_backend("rtl", cfg, dram_bytes=DRAM_BYTES, validate=False,
                         cycle_limit=2_000_000) as dut:
        report = IllegalFuzz(ref, dut, timings).fuzz(count, seed=7000 * len(name))
    assert report.ok, "\n\n".join(report.mismatches[:3] + report.legal_mismatches[:3])
    assert report.agree == report.programs == count
    assert len(report.verdicts) >= 4, report.verdicts      # several kinds of error seen
