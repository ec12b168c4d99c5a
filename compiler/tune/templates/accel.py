"""Accelerator templates: fused conv2d and dense (GEMM + requant epilogue on the ALU).

Workloads (JSON):
- ``accel.conv2d``: ``{"shape": [batch, channels, height, width, filters, kernel, stride,
  pad], "epilogue": {Epilogue fields}}``
- ``accel.dense``: ``{"m": M, "k": K, "n": N, "epilogue": {...}}``

Knobs: each tiled axis is a `Split` into (outer, tile); virtual threads 1/2/4 and the axis
they split; constraints: the tiles (one copy per thread) fit the SRAMs, the thread count
divides the split axis. The cost model (compiler/tune/cost.py) is the prior. The reference
is numpy on the packed layouts (int64 products wrapped to int32, then the epilogue), and
independent of the knobs.
"""
from __future__ import annotations

import dataclasses
from functools import lru_cache

import numpy as np

from vtalab.spec import Config

from ...topi import Conv2dKnobs, Conv2dShape, DenseKnobs
from ..cost import conv2d_cycles, fits
from ..space import Choice, Space, Split
from ..task import Task, Template, register
from .epilogue import VEC, epilogue_inputs, epilogue_reference, wrap


def _epilogue(task: Task):
    from ...exec.templates import Epilogue
    ep = dict(task.args["epilogue"])
    for k in ("residual_shifts", "shifts"):
        ep[k] = tuple(ep.get(k, ()))
    return Epilogue(**ep)


def epilogue_dict(ep) -> dict:
    """The epilogue as a task sees it: immediate shift steps only by direction (their
    amounts change no instruction but the immediate, so a recalibrated model with other
    shifts finds the same tuning records)."""
    def canonical(steps):
        return [s if s == VEC else (7 if s > 0 else -1) for s in steps]
    d = dataclasses.asdict(ep)
    d["shifts"], d["residual_shifts"] = canonical(ep.shifts), canonical(ep.residual_shifts)
    return d


def _ep_text(task: Task) -> str:
    """A short epilogue summary for task names: + residual, per-channel shifts, relu."""
    ep = task.args["epilogue"]
    out = " +res" if ep["residual"] else ""
    out += " vec-shift" if VEC in ep["shifts"] else ""
    out += " relu" if ep["lo"] == 0 else ""
    return out


def _ep_cost(task: Task):
    from ...exec.lower import epilogue_cost
    return epilogue_cost(_epilogue(task))


@lru_cache(maxsize=64)
def _built(task: Task, point_key: str):
    """(schedule, args, Program) of a point, memoised per process."""
    import json
    from ...vta import build
    point = json.loads(point_key)
    sch, args = task.impl.declare(task, point)
    return sch, args, build(sch, task.cfg, args, task.template.replace(".", "_"))


class AccelTemplate(Template):
    kind, unit = "accel", "cycles"

    def declare(self, task: Task, point: dict):
        raise NotImplementedError

    def features(self, task: Task, point: dict) -> dict:
        from ...te.lower import schedule_to_func
        from ..features import loop_features
        sch, args = self.declare(task, point)
        return loop_features(schedule_to_func(sch, args, "f"))

    def program(self, task: Task, point: dict):
        from ..space import point_key
        return _built(task, point_key(point))[2]

    def run(self, task: Task, point: dict, inputs: dict, device=None):
        prog = self.program(task, point)
        feeds = {b.name: inputs[b.name] for b in prog.buffers if b.name in inputs}
        if device is None:
            from vtalab.runtime import open_device
            with open_device("fsim", task.cfg, dram_bytes=prog.dram_bytes() + (1 << 16)) as dev:
                outs, counters = prog.run_io(dev, feeds)
        else:
            outs, counters = prog.run_io(device, feeds)
        return outs[prog.outputs[0]], dict(counters)

    def default(self, task: Task) -> dict:
        points = self.space(task).points()
        return min(points, key=lambda p: (self.prior(task, p), self.space(task).index(p)))


def _vt_constraints(knob_axis: dict):
    """Constraints that the thread count divides the outer extent of the split axis, and
    that one thread has no axis choice (it would only duplicate points)."""
    def divides(p):
        vt = p["vthreads"]
        return vt == 1 or p[knob_axis[p["vthread_axis"]]][0] % vt == 0

    def one_axis(p):
        return p["vthreads"] > 1 or p["vthread_axis"] == "co"
    return [("vthreads divide the split axis", divides), ("one thread: axis co", one_axis)]


class Conv2dTemplate(AccelTemplate):
    name = "accel.conv2d"

    @staticmethod
    def shape(task: Task) -> Conv2dShape:
        return Conv2dShape(*task.args["shape"])

    def describe(self, task: Task) -> str:
        b, c, h, w, f, k, s, p = task.args["shape"]
        return f"accel.conv2d {h}x{w} {c}->{f} {k}x{k}/{s} p{p}{_ep_text(task)}"

    @staticmethod
    def knobs(task: Task, point: dict) -> Conv2dKnobs:
        sh = Conv2dShape(*task.args["shape"])
        tw = point["tile_w"][1]
        return Conv2dKnobs(point["tile_h"][1], 0 if tw == sh.out_hw[1] else tw,
                           point["tile_co"][1], point["tile_ci"][1], point["vthreads"],
                           point["vthread_axis"])

    @lru_cache(maxsize=256)
    def space(self, task: Task) -> Space:
        cfg, sh = task.cfg, self.shape(task)
        oh, ow = sh.out_hw
        knobs = [Split("tile_h", oh), Split("tile_w", ow),
                 Split("tile_co", sh.filters // cfg.block_out),
                 Split("tile_ci", sh.channels // cfg.block_in),
                 Choice("vthreads", [1, 2, 4]), Choice("vthread_axis", ["co", "h"])]
        cost = _ep_cost(task)
        fit = ("tiles fit the SRAMs", lambda p: fits(cfg, sh, self.knobs(task, p), cost))
        return Space(knobs, _vt_constraints({"co": "tile_co", "h": "tile_h"}) + [fit])

    def prior(self, task: Task, point: dict) -> float:
        return float(conv2d_cycles(task.cfg, self.shape(task), self.knobs(task, point),
                                   _ep_cost(task)))

    def declare(self, task: Task, point: dict):
        from ...exec.templates import fused_conv2d
        return fused_conv2d(task.cfg, self.shape(task), _epilogue(task),
                            self.knobs(task, point))

    def inputs(self, task: Task, seed: int = 0) -> dict:
        cfg, sh = task.cfg, self.shape(task)
        rng = np.random.default_rng(seed)
        B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
        nb, cb, cob = sh.batch // B, sh.channels // BI, sh.filters // BO
        oh, ow = sh.out_hw
        ins = {"data": rng.integers(-128, 128, (nb, cb, sh.height, sh.width, B, BI), np.int8),
               "kernel": rng.integers(-128, 128, (cob, cb, sh.kernel, sh.kernel, BO, BI),
                                      np.int8)}
        ins.update(epilogue_inputs(_epilogue(task), (nb, cob, oh, ow, B, BO), (cob, B, BO),
                                   rng))
        return ins

    def reference(self, task: Task, inputs: dict) -> np.ndarray:
        sh = self.shape(task)
        P, S, K = sh.pad, sh.stride, sh.kernel
        oh, ow = sh.out_hw
        d = np.pad(inputs["data"].astype(np.int64), ((0, 0), (0, 0), (P, P), (P, P), (0, 0),
                                                      (0, 0)))
        w = inputs["kernel"].astype(np.int64)
        acc = 0
        for kh in range(K):
            for kw in range(K):
                win = d[:, :, kh:kh + S * (oh - 1) + 1:S, kw:kw + S * (ow - 1) + 1:S]
                acc = acc + np.einsum("ncHWbi,ocpi->noHWbp", win, w[:, :, kh, kw])
        bits = task.cfg.acc_bits
        return epilogue_reference(wrap(acc, bits), inputs, _epilogue(task),
                                  lambda v: v[None, :, None, None], bits)


class DenseTemplate(AccelTemplate):
    name = "accel.dense"

    def describe(self, task: Task) -> str:
        a = task.args
        return f"accel.dense {a['m']}x{a['k']}->{a['n']}{_ep_text(task)}"

    def blocks(self, task: Task):
        a, cfg = task.args, task.cfg
        return a["m"] // cfg.batch, a["k"] // cfg.block_in, a["n"] // cfg.block_out

    @staticmethod
    def knobs(point: dict) -> DenseKnobs:
        return DenseKnobs(point["tile_m"][1], point["tile_n"][1], point["tile_k"][1],
                          point["order"], point["vthreads"])

    def as_conv(self, task: Task):
        """The same GEMM as a 1x1 conv (rows = M blocks), for the cycle model."""
        mb, kb, nb = self.blocks(task)
        cfg = task.cfg
        return Conv2dShape(cfg.batch, kb * cfg.block_in, mb, 1, nb * cfg.block_out, 1)

    def conv_knobs(self, point: dict) -> Conv2dKnobs:
        kn = self.knobs(point)
        return Conv2dKnobs(kn.tile_m, 0, kn.tile_n, kn.tile_k, kn.vthreads, "co")

    @lru_cache(maxsize=256)
    def space(self, task: Task) -> Space:
        mb, kb, nb = self.blocks(task)
        knobs = [Split("tile_m", mb), Split("tile_n", nb), Split("tile_k", kb),
                 Choice("order", ["mn", "nm"]), Choice("vthreads", [1, 2, 4])]
        cfg, cost, sh = task.cfg, _ep_cost(task), self.as_conv(task)

        def vt_divides(p):
            return p["tile_n"][0] % p["vthreads"] == 0
        fit = ("tiles fit the SRAMs", lambda p: fits(cfg, sh, self.conv_knobs(p), cost))
        return Space(knobs, [("vthreads divide the N tiles", vt_divides), fit])

    def prior(self, task: Task, point: dict) -> float:
        cycles = conv2d_cycles(task.cfg, self.as_conv(task), self.conv_knobs(point),
                               _ep_cost(task))
        # "nm" re-reads the whole input per column tile instead of the weights per row tile
        return float(cycles) * (1.0 + 1e-3 * (point["order"] == "nm"))

    def declare(self, task: Task, point: dict):
        from ...exec.templates import fused_dense
        a = task.args
        return fused_dense(task.cfg, a["m"], a["k"], a["n"], _epilogue(task), self.knobs(point))

    def inputs(self, task: Task, seed: int = 0) -> dict:
        cfg = task.cfg
        mb, kb, nb = self.blocks(task)
        rng = np.random.default_rng(seed)
        B, BI, BO = cfg.batch, cfg.block_in, cfg.block_out
        ins = {"data": rng.integers(-128, 128, (mb, kb, B, BI), np.int8),
               "weight": rng.integers(-128, 128, (nb, kb, BO, BI), np.int8)}
        ins.update(epilogue_inputs(_epilogue(task), (mb, nb, B, BO), (nb, B, BO), rng))
        return ins

    def reference(self, task: Task, inputs: dict) -> np.ndarray:
        acc = np.einsum("mkxi,nkyi->mnxy", inputs["data"].astype(np.int64),
                        inputs["weight"].astype(np.int64))
        bits = task.cfg.acc_bits
        return epilogue_reference(wrap(acc, bits), inputs, _epilogue(task), lambda v: v[None],
                                  bits)


CONV2D = register(Conv2dTemplate())
DENSE = register(DenseTemplate())


def conv2d_task(cfg: Config, sh: Conv2dShape, ep) -> Task:
    return Task.make(CONV2D.name, {"shape": list(dataclasses.astuple(sh)),
                                   "epilogue": epilogue_dict(ep)}, cfg)


def dense_task(cfg: Config, m: int, k: int, n: int, ep) -> Task:
    return Task.make(DENSE.name, {"m": m, "k": k, "n": n, "epilogue": epilogue_dict(ep)}, cfg)
