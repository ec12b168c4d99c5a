"""vtalab.fpga: boards, build flows, reports and the board driver.

Importing this package registers one Config preset per board (``ulx3s-85f``, ...). The
build and the driver load lazily: ``from vtalab.fpga.build import build_board``.
"""
from .boards import BOARDS, Board, board_names, get_board
from .errors import FpgaError, ResourceError

__all__ = ["BOARDS", "Board", "board_names", "get_board", "FpgaError", "ResourceError"]

# The "fpga" device backend is declared as an entry point ("vtalab.backends" in
# pyproject.toml): the runtime finds it without importing this package.
