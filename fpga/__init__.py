"""vtalab.fpga: boards, build flows, reports and the board driver.

Importing this package registers one Config preset per board (``ulx3s-85f``, ...). The
build and the driver load lazily: ``from vtalab.fpga.build import build_board``.
"""
from .boards import BOARDS, Board, board_names, get_board
from .errors import FpgaError, ResourceError

__all__ = ["BOARDS", "Board", "board_names", "get_board", "FpgaError", "ResourceError"]


def _register_backend() -> None:
    from vtalab.runtime.device import _BACKENDS, register_backend
    if "fpga" not in _BACKENDS:
        register_backend("fpga", "vtalab.fpga.driver:open_device")


_register_backend()
