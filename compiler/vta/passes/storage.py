"""Storage check: every SRAM-scoped buffer is a whole number of entries and fits alone."""
from __future__ import annotations

from vtalab.spec import Config

from ...errors import SramCapacityError
from ...ir.stmt import Allocate, SRAM_SCOPES
from ...ir.visit import walk
from ..intrin import entries


def check_storage(func, cfg: Config):
    for node in walk(func.body):
        if isinstance(node, Allocate) and node.buffer.scope in SRAM_SCOPES:
            b = node.buffer
            n = entries(b, cfg)
            if n > cfg.depth(b.scope):
                raise SramCapacityError(
                    f"{b.scope} buffer must hold the tile {b.name} of shape {b.shape} "
                    f"({n} entries of {cfg.entry_bytes(b.scope)} B), but {b.scope}_depth is "
                    f"{cfg.depth(b.scope)}; use smaller tiles")
    return func
