"""Illegal-program fuzzing: the validator, the functional simulator and the RTL must give
every mutant of a legal random program the same verdict, and stay correct after it.

Per seed: a legal program (sim/fuzz.py) and a mutant of it (sim/mutate.py) are placed at
one address on both devices. Three verdicts, each "ok" or (error class, instruction index):
the validator's (runtime/validate.py, before anything runs), the reference's and the device
under test's, both run without the validator (so the simulator's own checks and the
hardware's error registers decide). Where the validator rejects the mutant, both devices
must also refuse it with the validator on. Then a fresh legal program runs on both and
must match bit for bit (the device under test with its random memory timing).

A mutant that still reads micro-ops none of its LOADs wrote is redrawn: its verdict would
depend on the runs before it. A WatchdogError is a hang; any exception outside the
project's hierarchy is a crash.
"""
from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field

from vtalab.sim.differential import Differential
from vtalab.sim.fuzz import generate
from vtalab.sim.mutate import mutate
from vtalab.spec.errors import VtaError, WatchdogError

from .validate import reads_stale_uops, verdict

LEGAL_SEEDS = 1 << 30          # the legal program after mutant ``seed`` uses this + seed
MAX_REDRAWS = 20


@dataclass
class Report:
    programs: int = 0
    redrawn: int = 0
    verdicts: Counter = field(default_factory=Counter)   # class name (or "ok") -> count
    agree: int = 0
    validated_agree: int = 0
    mismatches: list = field(default_factory=list)       # reports
    hangs: int = 0
    crashes: int = 0
    legal_runs: int = 0
    legal_mismatches: list = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not (self.mismatches or self.hangs or self.crashes or self.legal_mismatches)

    def summary(self) -> dict:
        return {"programs": self.programs, "redrawn": self.redrawn,
                "verdicts": dict(sorted(self.verdicts.items())),
                "agree": self.agree, "validated_agree": self.validated_agree,
                "mismatches": len(self.mismatches), "hangs": self.hangs,
                "crashes": self.crashes, "legal_runs": self.legal_runs,
                "legal_mismatches": len(self.legal_mismatches),
                "seconds": round(self.seconds, 1)}


def verdict_of(error) -> tuple:
    """("ok",) or (class name, instruction index or None) of a run's outcome."""
    if error is None:
        return ("ok",)
    found = re.search(r"instruction (\d+)", str(error))
    return type(error).__name__, int(found.group(1)) if found else None


class IllegalFuzz:
    """``ref`` and ``dut``: devices of one Config and DRAM size (fsim and RTL)."""

    def __init__(self, ref, dut, timings=None, max_rounds: int = 3):
        self.diff = Differential(ref, dut, timings)
        self.ref, self.dut, self.cfg = ref, dut, ref.cfg
        self.max_rounds = max_rounds
        self.report = Report()

    def close(self) -> None:
        self.diff.close()

    def fuzz(self, count: int, seed: int = 0, progress=None) -> Report:
        start = time.perf_counter()
        for k in range(count):
            self.one(seed + k)
            if progress:
                progress(k + 1, count, self.report)
        self.report.seconds += time.perf_counter() - start
        return self.report

    def one(self, seed: int) -> None:
        report = self.report
        mutant, base = self._draw(seed)
        words = mutant.words
        want = verdict_of(verdict(self.cfg, words, self.ref._read_dram_within,
                                  self.ref.dram_bytes))
        report.programs += 1
        report.verdicts[want[0]] += 1
        timing = self.diff.timings[seed % len(self.diff.timings)]
        if want != ("ok",):
            got = [self._run(dev, base, words, {}, validate=True) for dev in (self.ref,
                                                                                 self.dut)]
            report.validated_agree += all(g == want for g in got)
        got_ref = self._run(self.ref, base, words, {}, validate=False)
        got_dut = self._run(self.dut, base, words, timing, validate=False)
        if got_ref == got_dut == want:
            report.agree += 1
        elif "crash" not in (got_ref[0], got_dut[0]) and "hang" not in (got_ref[0],
                                                                       got_dut[0]):
            report.mismatches.append(
                f"seed {seed}: validator {want}, fsim {got_ref}, rtl {got_dut} "
                f"(timing {timing or 'default'}; {'; '.join(mutant.what)})\n{mutant.disasm()}")
        legal = generate(self.cfg, self.diff.base, LEGAL_SEEDS + seed, self.max_rounds)
        report.legal_runs += 1
        why = self.diff.check(legal, timing)
        if why is not None:
            report.legal_mismatches.append(f"legal program after mutant {seed}: {why}")

    def _draw(self, seed: int):
        """A mutant whose verdict does not depend on earlier runs, placed on both devices."""
        for redraw in range(MAX_REDRAWS):
            program = generate(self.cfg, self.diff.base, seed, self.max_rounds)
            mutant = mutate(program, seed * MAX_REDRAWS + redraw, self.ref.dram_bytes)
            image, offset = mutant.image()
            for device, buf in ((self.ref, self.diff.ref_buf), (self.dut, self.diff.dut_buf)):
                device.copy_in(buf, image)
            if not reads_stale_uops(self.cfg, mutant.words, self.ref._read_dram_within,
                                    self.ref.dram_bytes):
                return mutant, self.diff.base + offset
            self.report.redrawn += 1
        raise VtaError(f"mutants of seed {seed} must not all read stale micro-ops, but "
                       f"{MAX_REDRAWS} draws did")

    def _run(self, device, addr: int, words: list, timing: dict, validate: bool) -> tuple:
        if hasattr(device, "set_timing"):
            device.set_timing(**timing)
        try:
            device.run(addr, len(words), validate=validate)
        except WatchdogError:
            self.report.hangs += 1
            return ("hang",)
        except VtaError as exc:
            return verdict_of(exc)
        except Exception as exc:           # noqa: BLE001 - counted, reported by the caller
            self.report.crashes += 1
            self.report.mismatches.append(f"crash on {device.backend}: {exc!r}")
            return ("crash",)
        finally:
            if timing and hasattr(device, "set_timing"):
                device.set_timing()
        return ("ok",)
