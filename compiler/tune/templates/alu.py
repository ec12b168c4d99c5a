"""Accelerator elementwise template (``accel.elementwise``): a op b on the ALU, requantised.

Workload: ``{"blocks": NB, "op": "add"|"mul"|"min"|"max", "broadcast": bool, "shift": S}``
over int32 (NB, batch, block_out) operands loaded into the accumulator. Knobs: the blocks
per tile (a `Split` of the block axis) and virtual threads (which must divide the tiles);
constraint: a tile's operands and stages fit the accumulator (one copy per thread). The
prior counts what the compute module serialises: the two acc loads (bus beats plus the
per-LOAD latency), one ALU micro-op per entry and stage, the store.
"""
from __future__ import annotations

import numpy as np

from vtalab.spec import Config
from vtalab.spec.isa import AluOp
from vtalab.spec.timing import micro_op_cycles

from ...topi.common import Requant
from ...topi.elementwise import ElementwiseKnobs, elementwise, elementwise_reference
from ..cost import INSN, LOAD_SETUP
from ..space import Choice, Space, Split
from ..task import Task, register
from .accel import AccelTemplate


class ElementwiseTemplate(AccelTemplate):
    name = "accel.elementwise"

    def describe(self, task: Task) -> str:
        a = task.args
        return f"accel.elementwise {a['op']} {a['blocks']} blocks" + \
            (" broadcast" if a["broadcast"] else "")

    @staticmethod
    def knobs(point: dict) -> ElementwiseKnobs:
        return ElementwiseKnobs(point["tile"][1], point["vthreads"])

    def stages(self, task: Task) -> int:
        return 2 + bool(task.args["shift"])          # op, [shift,] clip

    def space(self, task: Task) -> Space:
        cfg, blocks = task.cfg, task.args["blocks"]
        rows = cfg.batch

        def fits(p):   # a, b (or one broadcast row) and the stages, per thread
            tile = p["tile"][1]
            b_rows = rows if task.args["broadcast"] else tile * rows
            return p["vthreads"] * (tile * rows * (1 + self.stages(task)) + b_rows) \
                <= cfg.depth("acc")
        return Space([Split("tile", blocks), Choice("vthreads", [1, 2, 4])],
                     [("vthreads divide the tiles", lambda p: p["tile"][0] % p["vthreads"] == 0),
                      ("tiles fit the accumulator", fits)])

    def prior(self, task: Task, point: dict) -> float:
        cfg, tile = task.cfg, point["tile"][1]
        tiles = task.args["blocks"] // tile
        entries = tile * cfg.batch
        beats = max(1, -(-cfg.entry_bytes("acc") // cfg.bus_bytes))
        b_entries = cfg.batch if task.args["broadcast"] else entries
        load = (entries + b_entries) * beats + 2 * LOAD_SETUP
        # the op's pass, then SHR / SAT: each takes micro_op_cycles per row
        passes = [AluOp.MUL if task.args["op"] == "mul" else AluOp.ADD] \
            + [AluOp.SAT] * (self.stages(task) - 1)
        alu = sum(entries * micro_op_cycles(cfg, op) + INSN for op in passes)
        store = entries * max(1, -(-cfg.entry_bytes("out") // cfg.bus_bytes)) + LOAD_SETUP
        overlap = point["vthreads"] > 1
        return float(tiles * (load + alu + (0 if overlap else store)) + (store if overlap else 0))

    def rq(self, task: Task) -> Requant:
        return Requant(shift=task.args["shift"], bias=False)

    def declare(self, task: Task, point: dict):
        a = task.args
        return elementwise(task.cfg, a["blocks"], a["op"], a["broadcast"], self.rq(task),
                           self.knobs(point))

    def inputs(self, task: Task, seed: int = 0) -> dict:
        cfg, a = task.cfg, task.args
        rng = np.random.default_rng(seed)
        shape = (a["blocks"], cfg.batch, cfg.block_out)
        lim = 1 << min(15, cfg.mul_bits - 1) if a["op"] == "mul" else 1 << 24
        return {"a": rng.integers(-lim, lim, shape).astype(np.int32),
                "b": rng.integers(-lim, lim, (1,) + shape[1:] if a["broadcast"] else shape)
                .astype(np.int32)}

    def reference(self, task: Task, inputs: dict) -> np.ndarray:
        b = inputs["b"]
        if task.args["broadcast"]:
            b = np.broadcast_to(b, inputs["a"].shape)
        return elementwise_reference(inputs["a"], b, task.args["op"], self.rq(task), task.cfg)


ELEMENTWISE = register(ElementwiseTemplate())


def elementwise_task(cfg: Config, blocks: int, op: str = "add", broadcast: bool = False,
                     shift: int = 0) -> Task:
    return Task.make(ELEMENTWISE.name, {"blocks": blocks, "op": op, "broadcast": broadcast,
                                        "shift": shift}, cfg)
