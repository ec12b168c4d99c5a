"""The board driver (fpga/driver.py) over a fake register bus served by the functional
simulator, and over the Verilated core's own AXI4-Lite port."""
import numpy as np
import pytest

from vtalab.fpga.bus import ArrayMemory, DmaMemory, RegisterBus, RtlBus
from vtalab.fpga.driver import FpgaDevice
from vtalab.runtime import open_device
from vtalab.spec import preset
from vtalab.spec.errors import DeviceError, TokenError, WatchdogError
from vtalab.spec.regs import register

from .fakes import FsimRegisters, run_matmul

BASE = 0x10_0000           # DMA memory starts above 0, as a board's CMA buffer does
SIZE = 4 << 20


def fake_board(cfg, **faults):
    regs = FsimRegisters(cfg, BASE + SIZE, **faults)
    memory = ArrayMemory(regs.sim.dram[BASE:], base=BASE)
    return regs, memory


def test_driver_runs_matmul_bit_exact_at_a_physical_base():
    cfg = preset("tiny")
    regs, memory = fake_board(cfg)
    with FpgaDevice(cfg, regs, memory) as dev:
        got, want, counters = run_matmul(dev)
        assert dev.alloc(64).addr >= BASE
    np.testing.assert_array_equal(got, want)
    assert counters["gemm_uops"] > 0


def test_driver_programs_registers_from_the_map():
    cfg = preset("tiny")
    regs, memory = fake_board(cfg)
    dev = FpgaDevice(cfg, regs, memory)
    run_matmul(dev)
    writes = [(entry[1], entry[2]) for entry in regs.log if entry[0] == "w"]
    offsets = [off for off, _ in writes]
    start = register("start").offset
    assert offsets[-1] == start and writes[-1][1] == 1
    assert register("insn_addr").offset in offsets and register("insn_count").offset in offsets
    insn_addr = dict(writes)[register("insn_addr").offset]
    assert insn_addr >= BASE
    dev.close()
    assert dev.closed


def test_open_device_fpga_backend_with_given_bus():
    cfg = preset("tiny")
    regs, memory = fake_board(cfg)
    assert isinstance(regs, RegisterBus) and isinstance(memory, DmaMemory)
    with open_device("fpga", cfg, bus=regs, memory=memory) as dev:
        assert dev.backend == "fpga"
        got, want, _ = run_matmul(dev)
    np.testing.assert_array_equal(got, want)


def test_wrong_bitstream_is_refused():
    cfg = preset("tiny")
    regs, memory = fake_board(cfg, config_id=0xDEADBEEF)
    with pytest.raises(DeviceError, match=r"CONFIG_ID must be 0x[0-9a-f]{8} \(config tiny\), "
                                          r"not 0xdeadbeef"):
        FpgaDevice(cfg, regs, memory)


def test_hang_times_out_naming_the_waiting_module():
    cfg = preset("tiny")
    regs, memory = fake_board(cfg, hang=True)
    with FpgaDevice(cfg, regs, memory, timeout_s=0.05) as dev:
        with pytest.raises(WatchdogError, match="compute waits on queue l2c"):
            run_matmul(dev)


def test_queue_error_is_reported():
    cfg = preset("tiny")
    regs, memory = fake_board(cfg, error=True)
    with FpgaDevice(cfg, regs, memory) as dev:
        with pytest.raises(TokenError, match="STATUS.error"):
            run_matmul(dev)


def _rtl_model(cfg):
    try:
        from vtalab.sim.rtl.model import RtlModel
        from vtalab.sim.rtl.toolchain import RtlUnavailable, check_available
    except ImportError as exc:
        pytest.skip(f"the Verilator harness (sim/rtl) is not available: {exc}")
    try:
        check_available()
    except RtlUnavailable as exc:
        pytest.skip(str(exc))
    return RtlModel(cfg, 8 << 20)


def test_driver_against_the_rtl():
    """The code that runs on a board, with the Verilated core answering the registers."""
    cfg = preset("tiny")
    model = _rtl_model(cfg)
    try:
        memory = ArrayMemory(model.dram, base=0)
        with FpgaDevice(cfg, RtlBus(model), memory) as dev:
            got, want, counters = run_matmul(dev)
            assert dev.read_reg("config_id") == cfg.config_id
    finally:
        model.close()
    np.testing.assert_array_equal(got, want)
    assert counters["cycles"] > 0 and counters["gemm_uops"] > 0
