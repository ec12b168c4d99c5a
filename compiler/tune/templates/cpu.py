"""Tunable LLVM CPU kernels (compiler/cpu): conv2d NCHW, dense, pooling and softmax.

Each template's knobs are the kernel's ``knobs`` (compiler/cpu/knobs.py; the default point
is the hand heuristic, so an untuned compile is unchanged). Tasks carry the host CPU's
fingerprint, measured in seconds by the ``cpu`` measurer. Inputs lie on a grid of 1/8
(floats) so every float sum is exact whatever the accumulation order: a point's output
equals the float64 numpy reference to rounding of the last operation.

    task = conv2d_task((1, 64, 56, 56), (64, 64, 3, 3), padding=1)
    fn = task.impl.build(task, task.impl.default(task))
    y = fn(task.impl.inputs(task, seed=0))
    task = cpu_tasks_of(node, in_types)      # a graph node's task, None if not tunable
"""
from __future__ import annotations

import time
from functools import lru_cache

import numpy as np

from ...cpu import knobs as ck
from ...cpu.common import pair, padding4, vector_lanes
from ...cpu.conv import out_size
from ...errors import CompileError
from ...target import Target
from ..space import Bool, Choice, Space
from ..task import Task, Template, register


@lru_cache(maxsize=1)
def host_fingerprint() -> str:
    return Target.host(None).fingerprint()


def _pow2(lo: int, hi: int) -> list[int]:
    return [1 << i for i in range(hi.bit_length()) if lo <= 1 << i <= hi]


def _divisors(n: int, limit: int) -> list[int]:
    return [d for d in range(1, min(n, limit) + 1) if n % d == 0]


def _lanes(full: int, default: int, upto: int | None = None, divides: int | None = None):
    """Vector widths: powers of two from 4 to two full vectors (up to the next power of two
    of ``upto``; dividing ``divides``), and the heuristic's ``default``."""
    top = min(2 * full, 1 << max(2, (upto - 1).bit_length())) if upto else 2 * full
    pick = [p for p in _pow2(4, top) if divides is None or divides % p == 0]
    return sorted(set(pick) | {default})


def _grid(rng, shape, dtype: str) -> np.ndarray:
    """Seeded values: int8 over its range, floats on a grid of 1/8 in [-1, 1]."""
    if dtype == "int8":
        return rng.integers(-128, 128, shape).astype(np.int8)
    return (rng.integers(-8, 9, shape) / 8).astype(np.float32)


def _ints(shape) -> list[int]:
    return [int(d) for d in shape]


def _acc(dtype: str) -> str:
    return "int32" if dtype == "int8" else "float32"


def _call(kernel, reshape=None):
    """fn(*arrays) -> output of a compiled kernel (a fresh output array per call)."""
    param = kernel.plan.params[-1]

    def fn(*arrays):
        out = np.empty(param.shape, param.dtype.numpy)
        kernel(*arrays, out)
        return out if reshape is None else out.reshape(reshape)
    return fn


class CpuTemplate(Template):
    kind, unit = "cpu", "seconds"

    def target_key(self, cfg) -> str:
        return host_fingerprint()

    def describe(self, task: Task) -> str:
        """The template and its workload, compactly: ``cpu.dense M=16 K=512 N=1000 ...``."""
        def short(v):
            return "x".join(map(str, v)) if isinstance(v, list) else str(v)
        args = task.args
        return f"{self.name} " + " ".join(f"{k}={short(args[k])}" for k in sorted(args)
                                          if args[k] not in (False, None))

    def func(self, task: Task, point: dict):
        """The lowered PrimFunc of ``point`` (not compiled)."""
        raise NotImplementedError

    def kernel(self, task: Task, point: dict):
        """A freshly compiled kernel of ``point`` (outside the kernel memo, so a tuning run
        does not keep every candidate; the disk cache still shares object code)."""
        from ...llvm import build
        return build(self.func(task, point), Target.host(None), zero_scratch=False)

    def features(self, task: Task, point: dict) -> dict:
        from ..features import loop_features
        return loop_features(self.func(task, point))

    def run(self, task: Task, point: dict, inputs: dict, device=None, repeat: int = 5):
        """(output, best seconds of ``repeat`` calls) after one warm-up call."""
        fn = self.build(task, point)
        out = fn(inputs)
        best = float("inf")
        for _ in range(repeat):
            t0 = time.perf_counter()
            fn(inputs)
            best = min(best, time.perf_counter() - t0)
        return out, best


# ---- conv2d ------------------------------------------------------------------------------

def conv2d_task(x_shape, w_shape, dtype="float32", stride=1, padding=0, dilation=1, groups=1,
                bias=False, relu=False) -> Task:
    return Task.make("cpu.conv2d", {
        "x": _ints(x_shape), "w": _ints(w_shape), "dtype": str(dtype),
        "stride": list(pair(stride, "stride")), "pads": list(padding4(padding)),
        "dilation": list(pair(dilation, "dilation")), "groups": int(groups),
        "bias": bool(bias), "relu": bool(relu)})


class Conv2dTemplate(CpuTemplate):
    """NCHW convolution (``cpu.conv2d_nchw_kernel``). Workload: ``{"x": [N, C, H, W],
    "w": [OC, C/groups, KH, KW], "dtype": "float32"|"int8", "stride": [sh, sw], "pads":
    [top, left, bottom, right], "dilation": [dh, dw], "groups": g, "bias": bool, "relu":
    bool}``. Knobs: ``oc_tile`` (a divisor of OC up to 32), ``lanes`` (output pixels per
    tile; the row is computed rounded up to them), ``unroll_oc``, ``unroll_kw``, ``order``
    of the tile loops, ``par_depth`` (outer loops fused into the parallel one: 2 or 3);
    constraint: the register tile fits 32 vector registers."""
    name = "cpu.conv2d"

    def _ow(self, a) -> int:
        return out_size(a["x"][3], a["w"][3], a["stride"][1], a["dilation"][1], a["pads"][1],
                        a["pads"][3])

    def default(self, task: Task) -> dict:
        a = task.args
        return ck.conv_nchw_knobs(a["w"][0], self._ow(a), a["w"][3], _acc(a["dtype"]))

    def space(self, task: Task) -> Space:
        a, d = task.args, self.default(task)
        full = vector_lanes(None, _acc(a["dtype"]))
        knobs = [Choice("oc_tile", sorted(set(_divisors(a["w"][0], 32)) | {d["oc_tile"]})),
                 Choice("lanes", _lanes(full, d["lanes"], upto=self._ow(a))),
                 Bool("unroll_oc"), Bool("unroll_kw"), Choice("order", ck.CONV_ORDERS),
                 Choice("par_depth", (2, 3))]
        fits = ("the register tile fits 32 vector registers",
                lambda p: p["oc_tile"] * -(-p["lanes"] // full) <= ck.REGISTERS)
        return Space(knobs, [fits])

    def func(self, task: Task, point: dict):
        from ...cpu.conv import conv2d_nchw_func
        a = task.args
        return conv2d_nchw_func(a["x"], a["w"], a["dtype"], a["stride"], a["pads"],
                                a["dilation"], a["groups"], a["bias"], a["relu"], None, point)

    def inputs(self, task: Task, seed: int = 0) -> dict:
        a, rng = task.args, np.random.default_rng(seed)
        out = {"x": _grid(rng, a["x"], a["dtype"]), "w": _grid(rng, a["w"], a["dtype"])}
        if a["bias"]:
            b = _grid(rng, (a["w"][0],), "float32")
            out["bias"] = (b * 8 * 1024).astype(np.int32) if a["dtype"] == "int8" else b
        return out

    def build(self, task: Task, point: dict):
        call = _call(self.kernel(task, point))
        names = ("x", "w", "bias") if task.args["bias"] else ("x", "w")
        return lambda inputs: call(*(inputs[n] for n in names))

    def reference(self, task: Task, inputs: dict) -> np.ndarray:
        from ...exec import cpu_numpy as N
        a, x, w = task.args, inputs["x"], inputs["w"]
        (kh, kw), g = a["w"][2:], a["groups"]
        cols = N.windows(x.astype(np.float64), (kh, kw), a["stride"], a["pads"], a["dilation"])
        n, c, oh, ow = cols.shape[:4]
        ws = w.astype(np.float64).reshape(g, a["w"][0] // g, c // g, kh, kw)
        out = np.einsum("ngchwij,gocij->ngohw", cols.reshape(n, g, c // g, oh, ow, kh, kw), ws)
        out = out.reshape(n, a["w"][0], oh, ow)
        if a["bias"]:
            out = out + inputs["bias"].astype(np.float64).reshape(1, -1, 1, 1)
        out = np.maximum(out, 0) if a["relu"] else out
        return N.wrap32(out) if a["dtype"] == "int8" else out.astype(np.float32)


# ---- dense -------------------------------------------------------------------------------

def dense_task(M: int, K: int, N: int, dtype="float32", bias=False, relu=False) -> Task:
    return Task.make("cpu.dense", {"M": int(M), "K": int(K), "N": int(N), "dtype": str(dtype),
                                   "bias": bool(bias), "relu": bool(relu)})


class DenseTemplate(CpuTemplate):
    """Dense x[M, K] @ w[N, K]^T (``cpu.dense``; w packed into blocks). Workload: ``{"M",
    "K", "N", "dtype": "float32"|"int8", "bias": bool, "relu": bool}``. Knobs: ``block``
    (outputs per packed weight block, a divisor of N), ``lanes`` (vector width dividing the
    block), ``m_tile`` (rows per register tile), ``k_unroll`` (1/2/4/8 dividing K),
    ``parallel``; constraints: lanes divides block, the register tile fits 32 registers."""
    name = "cpu.dense"

    def default(self, task: Task) -> dict:
        a = task.args
        block = ck.dense_block(a["N"])
        return {"block": block, **ck.dense_knobs(a["M"], block, _acc(a["dtype"]))}

    def space(self, task: Task) -> Space:
        a, d = task.args, self.default(task)
        full = vector_lanes(None, _acc(a["dtype"]))
        knobs = [Choice("block", _divisors(a["N"], a["N"])),
                 Choice("lanes", _lanes(full, d["lanes"], divides=a["N"])),
                 Choice("m_tile", sorted(set(_divisors(a["M"], 32)) | {d["m_tile"]})),
                 Choice("k_unroll", [u for u in (1, 2, 4, 8) if a["K"] % u == 0]),
                 Bool("parallel")]
        vectors = lambda p: p["block"] // p["lanes"] * -(-p["lanes"] // full)  # noqa: E731
        return Space(knobs, [("lanes divides block", lambda p: p["block"] % p["lanes"] == 0),
                             ("the register tile fits 32 vector registers",
                              lambda p: p["m_tile"] * vectors(p) <= ck.REGISTERS)])

    def _schedule_knobs(self, point: dict) -> dict:
        return {k: v for k, v in point.items() if k != "block"}

    def func(self, task: Task, point: dict):
        from ...cpu.dense import dense_func
        a = task.args
        return dense_func(a["M"], a["K"], a["N"], point["block"], a["dtype"], a["bias"],
                          a["relu"], None, self._schedule_knobs(point))

    def inputs(self, task: Task, seed: int = 0) -> dict:
        a, rng = task.args, np.random.default_rng(seed)
        out = {"x": _grid(rng, (a["M"], a["K"]), a["dtype"]),
               "w": _grid(rng, (a["N"], a["K"]), a["dtype"])}
        if a["bias"]:
            b = _grid(rng, (a["N"],), "float32")
            out["bias"] = (b * 8 * 1024).astype(np.int32) if a["dtype"] == "int8" else b
        return out

    def build(self, task: Task, point: dict):
        from ...cpu.dense import pack_dense_weight
        a = task.args
        call = _call(self.kernel(task, point), (a["M"], a["N"]))
        packed = {}                      # the last weight and its packing

        def fn(inputs):
            w = inputs["w"]
            if packed.get("w") is not w:
                packed.update(w=w, wp=pack_dense_weight(w, point["block"]))
            extra = (inputs["bias"],) if a["bias"] else ()
            return call(inputs["x"], packed["wp"], *extra)
        return fn

    def reference(self, task: Task, inputs: dict) -> np.ndarray:
        from ...exec.cpu_numpy import wrap32
        a = task.args
        out = inputs["x"].astype(np.float64) @ inputs["w"].astype(np.float64).T
        if a["bias"]:
            out = out + inputs["bias"].astype(np.float64)
        out = np.maximum(out, 0) if a["relu"] else out
        return wrap32(out) if a["dtype"] == "int8" else out.astype(np.float32)


# ---- pooling and softmax live in cpu_pool.py (they build on the helpers above) -------------

from .cpu_pool import (POOL_KINDS, PoolTemplate, SoftmaxTemplate, pool_task,  # noqa: E402,F401
                       softmax_task)

for _tpl in (Conv2dTemplate(), DenseTemplate(), PoolTemplate(), SoftmaxTemplate()):
    register(_tpl)


# ---- graph nodes -------------------------------------------------------------------------


def cpu_tasks_of(node, in_types) -> Task | None:
    """The tuning task of a graph node's LLVM CPU kernel (``in_types``: the node's input
    TensorTypes, None for absent inputs), or None where the node gets no tunable kernel:
    the op's `tune` reader (the op table) where its LLVM kernel applies."""
    from ...exec.cpu_ops import llvm_available
    from ...graph.opdef import op_of
    d = op_of(node)
    types = [t for t in in_types if t is not None]
    if d.tune is None or d.llvm_when is None or not types or not llvm_available() or \
            not d.llvm_when(node, types):
        return None
    return d.tune(node, types, None, None)


__all__ = ["Conv2dTemplate", "DenseTemplate", "PoolTemplate", "SoftmaxTemplate", "conv2d_task",
           "dense_task", "pool_task", "softmax_task", "cpu_tasks_of", "host_fingerprint"]
