"""An independent linter of the vendor projects vtalab writes (Vivado for Zynq, Quartus and
Platform Designer for Cyclone V SoC), for when the vendor tools are not at hand.

It shares no code with the generators (fpga/vivado.py, fpga/quartus.py, fpga/wrapper.py):
it tokenizes the Tcl the way Tcl does (``tcl.py``), knows the vendors' commands and options
from their command references (``commands.py``) and their IP from their documentation
(``ip_catalog.py``), reads the Verilog the project carries (``verilog.py``) and the board's
pins from amaranth-boards (``board_pins.py``), and compares what the scripts say with the
board facts (``Board.soc``) and the config. Each problem names the file, the line, the
command and what is wrong.

    problems = lint_project("build/pynq-z1", "pynq-z1")      # [] when the project is sound
    check_project("build/de10-nano", "de10-nano")           # raises FpgaError listing them
"""
from __future__ import annotations

import json
from pathlib import Path

from vtalab.spec import Config

from ..boards import Board, get_board
from ..errors import FpgaError
from .common import Project
from .script import Problem

__all__ = ["Problem", "lint_project", "check_project"]


def lint_project(out_dir, board: "str | Board", cfg: "Config | None" = None) -> list[Problem]:
    """Every problem of the project in ``out_dir`` for ``board`` (config: its config.json)."""
    board = get_board(board)
    root = Path(out_dir)
    if board.soc is None or board.flow not in ("vivado", "quartus"):
        raise FpgaError(f"board must be a Vivado or Quartus board with processor-system "
                        f"facts, not {board.name} ({board.flow} flow)")
    cfg = cfg if cfg is not None else _project_config(root)
    project = Project(root, board, cfg)
    if board.flow == "vivado":
        from .vivado import lint_vivado
        lint_vivado(project)
    else:
        from .quartus import lint_quartus
        lint_quartus(project)
    return project.problems


def check_project(out_dir, board: "str | Board", cfg: "Config | None" = None) -> None:
    """Raise FpgaError listing the problems of the project, if it has any."""
    problems = lint_project(out_dir, board, cfg)
    if problems:
        raise FpgaError(f"the {get_board(board).flow} project in {out_dir} must lint clean, "
                        f"not have {len(problems)} problem(s):\n"
                        + "\n".join(f"  {p}" for p in problems))


def _project_config(root: Path) -> Config:
    path = root / "config.json"
    if not path.is_file():
        raise FpgaError(f"project {root} must hold config.json (or pass cfg), not lack it")
    return Config.from_dict(json.loads(path.read_text()))
