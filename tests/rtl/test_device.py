"""The rtl backend behind the Device protocol: results, counters, watchdog, config id."""
import numpy as np
import pytest

from vtalab.spec import preset
from vtalab.spec.errors import DeadlockError, DeviceError, WatchdogError
from vtalab.spec.regs import COUNTERS

from .backends import open_backend
from .programs import deadlock_program, matmul, run_insns


def test_matmul_matches_numpy_and_reports_counters(tiny_rtl):
    result, expected, counters, program = matmul(tiny_rtl)
    np.testing.assert_array_equal(result, expected)
    for key in COUNTERS + ("insn_gemm", "bytes_inp", "macs", "gemm_utilization"):
        assert key in counters, key
    assert counters["insns"] == len(program.insns)
    assert counters["gemm_utilization"] == round(counters["gemm_uops"] / counters["cycles"], 4)
    assert counters["compute_busy"] <= counters["cycles"]
    assert counters["bytes_written"] == counters["bytes_out"]


def test_counters_agree_with_the_functional_simulator(tiny_rtl):
    with open_backend("fsim", preset("tiny"), dram_bytes=4 << 20) as fsim:
        *_, want, _ = matmul(fsim, seed=3)
    *_, got, _ = matmul(tiny_rtl, seed=3)
    for key, value in want.items():
        assert got[key] == value, key


@pytest.mark.parametrize("pressure,latency", [(0.3, 1), (0.6, 9)])
def test_back_pressure_and_latency_do_not_change_results(pressure, latency):
    with open_backend("rtl", preset("tiny"), dram_bytes=4 << 20, pressure=pressure,
                      read_latency=latency, write_latency=latency, seed=7) as dev:
        result, expected, counters, _ = matmul(dev, seed=1)
    np.testing.assert_array_equal(result, expected)


@pytest.mark.parametrize("validate", [True, False])
@pytest.mark.parametrize("backend", ["fsim", "rtl"])
def test_deadlock_is_a_deadlock_on_every_backend(backend, validate):
    # without the validator the hardware's fetch unit finds it: no cycle limit to wait for
    with open_backend(backend, preset("tiny"), dram_bytes=1 << 20, validate=validate) as dev:
        with pytest.raises(DeadlockError, match=r"compute module at instruction 0 \(GEMM\) "
                                                r"waits: pop from empty queue l2c"):
            run_insns(dev, deadlock_program())
        result, expected, _, _ = matmul(dev)
        np.testing.assert_array_equal(result, expected)


def test_a_run_past_the_cycle_limit_is_a_watchdog_error():
    with open_backend("rtl", preset("tiny"), dram_bytes=1 << 20, cycle_limit=50) as dev:
        with pytest.raises(WatchdogError, match=r"must finish within 50 cycles"):
            matmul(dev)
        dev.cycle_limit = 1_000_000
        result, expected, _, _ = matmul(dev)        # the core was reset: usable again
        np.testing.assert_array_equal(result, expected)


def test_build_for_another_config_is_refused():
    from vtalab.sim.rtl.build import library
    from vtalab.sim.rtl.model import RtlModel
    with open_backend("rtl", preset("tiny"), dram_bytes=1 << 20):
        lib = library(preset("tiny"))
    with pytest.raises(DeviceError, match="CONFIG_ID must be"):
        RtlModel(preset("tiny").replace(bus_bits=128), 1 << 20, lib_path=lib)


def test_bad_options_are_refused():
    with pytest.raises(DeviceError, match="pressure must be"):
        open_backend("rtl", preset("tiny"), dram_bytes=1 << 20, pressure=1.5)
    with pytest.raises(DeviceError, match="cycle_limit must be"):
        open_backend("rtl", preset("tiny"), dram_bytes=1 << 20, cycle_limit=0)


def test_a_slow_memory_is_not_a_stall():
    # reads outstanding longer than the harness's stall window (1024 quiet cycles) are bus
    # traffic, not a stall
    with open_backend("rtl", preset("tiny"), dram_bytes=4 << 20, read_latency=3000,
                      write_latency=2000) as dev:
        result, expected, counters, _ = matmul(dev, m=8, k=16, n=16)
    np.testing.assert_array_equal(result, expected)
    assert counters["cycles"] > 3000
