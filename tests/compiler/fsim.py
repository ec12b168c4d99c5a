"""Run a compiled Program on a fresh functional-simulator device (the runtime's job; this
only opens the device)."""
from vtalab.runtime import open_device


def run_fsim(prog, inputs: dict) -> dict:
    """The program's outputs by name (``prog.counters`` holds the run's counters)."""
    with open_device("fsim", prog.cfg, dram_bytes=prog.dram_bytes() + (1 << 16)) as dev:
        outputs, _ = prog.run_io(dev, inputs)
    return outputs
