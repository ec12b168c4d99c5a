"""What the Vivado and Quartus project checks share: the project folder, its problems, its
scripts, Verilog and run script, the board's pins, and the clock and address arithmetic."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

from vtalab.spec import Config

from .board_pins import board_pins
from .script import Problem, Script
from .verilog import VerilogError, parse_modules

_SIZE = re.compile(r"^(\d+)\s*([KMG]?)$", re.I)
_SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


class Project:
    """A generated project folder being linted; collects ``problems``."""

    def __init__(self, root, board, cfg: Config):
        self.root, self.board, self.cfg = Path(root), board, cfg
        self.problems: list[Problem] = []
        self._pins = None

    def report(self, file: str, line: int, command: str, message: str) -> None:
        self.problems.append(Problem(file, line, command, message))

    def script(self, rel: str, dialect: str, returns: "dict | None" = None,
               referenced_by: str = "the project") -> "Script | None":
        path = self.root / rel
        if not path.is_file():
            self.report(rel, 0, "-", f"file must exist (named by {referenced_by}), not missing")
            return None
        script = Script(path, self.root, dialect, returns)
        self.problems.extend(script.problems)
        return script if script.parsed else None

    def relative(self, path_text: str) -> str:
        """A script's file path relative to the project folder (absolute ones resolved)."""
        path = Path(path_text)
        if path.is_absolute():
            try:
                return str(path.resolve().relative_to(self.root.resolve()))
            except ValueError:
                return path_text
        return path_text

    def exists(self, rel: str) -> bool:
        path = (self.root / rel).resolve()
        return path.is_file() and self.root.resolve() in path.parents

    def pins(self) -> dict:
        if self._pins is None:
            self._pins = board_pins(self.board.platform)
        return self._pins

    def modules(self, rels: list) -> dict:
        """name -> Module of the Verilog files ``rels`` (each must exist)."""
        modules = {}
        for rel in rels:
            if not self.exists(rel):
                continue
            try:
                modules.update(parse_modules((self.root / rel).read_text(), rel))
            except VerilogError as exc:
                self.report(rel, 0, "verilog", str(exc))
        return modules

    def shell_commands(self, rel: str = "build.sh") -> list:
        """(line, argv) of each command of the run script."""
        path = self.root / rel
        if not path.is_file():
            self.report(rel, 0, "-", "file must exist (the project's run script), not missing")
            return []
        commands = []
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if line.strip() and not line.lstrip().startswith("#"):
                commands.append((number, shlex.split(line)))
        return commands

    def check_pin(self, file: str, line: int, command: str, site: str,
                  io_standard: "str | None") -> None:
        """A placed pin: one of the board's, with the I/O standard the board gives it."""
        pin = self.pins().get(site)
        if pin is None:
            self.report(file, line, command, f"pin must be one of {self.board.title}'s pins "
                        f"(amaranth-boards {self.board.platform}), not {site!r}")
        elif io_standard is not None and pin.io_standard not in (None, io_standard):
            self.report(file, line, command, f"I/O standard of pin {site} ({pin.where}) "
                        f"must be {pin.io_standard!r}, not {io_standard!r}")

    def check_clock(self, file: str, line: int, period_text: str, port: str,
                    site: "str | None") -> None:
        """create_clock on a board pin: the period of the oscillator amaranth-boards names."""
        pin = self.pins().get(site) if site else None
        if pin is None or pin.clock_hz is None:
            self.report(file, line, "create_clock", f"clocked port {port} must be on a "
                        f"clock pin of the board, not on {site or 'no pin'}")
            return
        want = 1e9 / pin.clock_hz
        if not _close(period_text, want):
            self.report(file, line, "create_clock", f"period of {port} ({pin.where}, "
                        f"{pin.clock_hz / 1e6:g} MHz) must be {want:.3f} ns, not "
                        f"{period_text!r}")

    def check_mhz(self, file: str, line: int, command: str, what: str, text: "str | None",
                  want_mhz: float) -> None:
        if text is None or not _close(text, want_mhz):
            self.report(file, line, command, f"{what} must be {want_mhz:g} MHz (config "
                        f"{self.cfg.name} clock_mhz), not {text!r}")


def _close(text: str, want: float) -> bool:
    try:
        return abs(float(text) - want) <= 1e-3 * max(1.0, abs(want))
    except (TypeError, ValueError):
        return False


def size_bytes(text: str) -> "int | None":
    """Vivado's range spelling ("4K", "64K", "1M", "4096") in bytes."""
    match = _SIZE.match(text.strip()) if text else None
    return int(match.group(1)) * _SIZE_UNITS[match.group(2).upper()] if match else None


def as_int(text: "str | None") -> "int | None":
    try:
        return int(text, 0)
    except (TypeError, ValueError):
        return None


def tcl_pairs(text: str) -> "list[tuple[str, str]] | None":
    """A Tcl dict/list literal ``k {v w} k2 "v"`` as pairs; None for an odd count."""
    from .tcl import TclSyntaxError, parse
    try:
        commands = parse("x " + text.replace("\n", " "), "<list>")
    except TclSyntaxError:
        return None
    words = [w.literal or "" for w in commands[0].words[1:]] if commands else []
    if len(words) % 2:
        return None
    return list(zip(words[::2], words[1::2]))
