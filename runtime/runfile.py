"""Saved programs: a DRAM image plus where its instructions are, runnable on any backend.

``vtalab sim --backend fsim|rtl PROGRAM`` calls ``run_program_file``. A program file is
either an ``.npz`` written by ``save_program`` (config, DRAM image from address 0,
instruction address and count; the fuzzer saves its shrunk reproducers this way) or a raw
stream of 128-bit instructions (``.bin``), run at address 0 on zeroed DRAM.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from vtalab.spec import Config, load_config
from vtalab.spec.errors import DeviceError
from vtalab.spec.isa import INSN_BYTES

from .device import open_device

MIN_DRAM = 1 << 20


def save_program(path, cfg: Config, dram: np.ndarray, insn_addr: int, insn_count: int) -> Path:
    path = Path(path)
    with open(path, "wb") as out:       # a file object: numpy adds no ".npz" suffix
        np.savez_compressed(out, config=cfg.to_json(), dram=np.asarray(dram, np.uint8),
                            insn_addr=insn_addr, insn_count=insn_count)
    return path


def save_fuzz_program(path, program) -> Path:
    """Save a ``vtalab.sim.fuzz.FuzzProgram`` (e.g. a shrunk mismatch) as a program file."""
    image, offset = program.image()
    dram = np.zeros(program.base + image.size, dtype=np.uint8)
    dram[program.base:] = image
    return save_program(path, program.cfg, dram, program.base + offset,
                        len(program.instructions()))


def load_program(path, config=None) -> tuple[Config, np.ndarray, int, int]:
    """(config, DRAM image, instruction byte address, instruction count)."""
    path = Path(path)
    if not path.is_file():
        raise DeviceError(f"program file must exist, not be missing: {path}")
    raw = path.read_bytes()
    if raw[:2] == b"PK":                                   # a zip: save_program's .npz
        with np.load(path) as data:
            cfg = Config.from_dict(json.loads(str(data["config"])))
            if config is not None:
                cfg = load_config(config)
            return cfg, data["dram"], int(data["insn_addr"]), int(data["insn_count"])
    if len(raw) % INSN_BYTES or not raw:
        raise DeviceError(f"program file must be an .npz from save_program or a multiple of "
                          f"{INSN_BYTES} bytes of instructions, not {len(raw)} bytes")
    return load_config(config or "default"), np.frombuffer(raw, np.uint8), 0, \
        len(raw) // INSN_BYTES


def run_program_file(path, backend: str = "fsim", config=None, timeline=None,
                     trace_json=None, echo=print, **options) -> dict:
    """Run a saved program; print and return its counters.

    ``timeline`` (PNG path) and ``trace_json`` (Perfetto JSON path) need the rtl backend;
    further ``options`` go to the device (e.g. ``pressure=0.2``, ``waveform="run.fst"``).
    """
    cfg, image, insn_addr, insn_count = load_program(path, config)
    dram_bytes = max(MIN_DRAM, -(-image.size // MIN_DRAM) * MIN_DRAM)
    if timeline or trace_json:
        if backend != "rtl":
            raise DeviceError(f"a timeline needs backend rtl, not {backend!r}")
        options["timeline"] = True
    with open_device(backend, cfg, dram_bytes=dram_bytes, **options) as dev:
        buf = dev.alloc(image.size)
        if buf.addr != 0:
            raise DeviceError(f"the program image must load at address 0, not {buf.addr:#x}")
        buf.write(image)
        start = time.perf_counter()
        counters = dev.run(insn_addr, insn_count)
        seconds = time.perf_counter() - start
        if timeline:
            dev.last_timeline.plot(timeline, title=f"{Path(path).name} on {cfg.name}")
            echo(f"timeline: {timeline}")
        if trace_json:
            dev.last_timeline.save_trace(trace_json)
            echo(f"perfetto trace: {trace_json}")
    echo(f"{Path(path).name}: {insn_count} instructions on {backend} ({cfg.name}) "
         f"in {seconds:.3f} s")
    echo(format_counters(counters))
    return counters


def format_counters(counters: dict) -> str:
    width = max((len(k) for k in counters), default=0)
    lines = []
    for key, value in counters.items():
        text = f"{value:.4f}" if isinstance(value, float) else f"{value:,}"
        lines.append(f"  {key:<{width}}  {text:>14}")
    return "\n".join(lines)
