"""Lowering of one fused GEMM node (`accel_conv2d`, `accel_dense`, `accel_batch_dense`)
to an accelerator kernel (and of `accel_alu`: lower_alu.py).

    plan = lower_accel(graph, node, cfg)     # AccelPlan, or raises Unsupported (-> CPU)

`lower_accel` runs the lowering the op table names for the node's op (`OpDef.lower`,
graph/lowerings.py), so a new accelerator op is an entry there, not a branch here.

The node's attributes become an `Epilogue` (templates.py); knobs are chosen automatically:
candidate tilings are ranked by compiler/tune's cost model (predicted cycles, the fused
epilogue included), the tuning log's best first under `ApplyBest`, and the first that
fits the SRAMs (estimated here, then confirmed by the accelerator pipeline) is kept.
Operands are bound to graph values (activations in the memory plan), graph constants
(packed weights) or constants prepared here (bias and shift vectors in the template's
layout). A residual is widened to int32 by a CPU step into a scratch buffer, so the
accumulator can load it.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from vtalab.runtime.program import Program
from vtalab.spec import Config
from vtalab.spec.isa import imm_range, shift_range

from ..errors import CompileError
from ..graph.ir import Graph, Node
from ..graph.opdef import REGISTRY, op_of
from ..topi import Conv2dKnobs, Conv2dShape, DenseKnobs
from ..topi.common import divisors
from ..tune import EpilogueCost, conv2d_ranked, lookup
from ..tune.cost import residual_tile
from ..vta import build_with_stream
from .templates import VEC, Epilogue, fused_batch_dense, fused_conv2d, fused_dense, \
    split_shift, split_shift_vector

MAX_TRIES = 6


class Unsupported(CompileError):
    """An accelerator node this lowering cannot run; the module runs it on the CPU."""


@dataclass
class AccelPlan:
    kernel: Program
    bindings: dict            # param -> ("value" | "const" | "scratch", name); joined
                              # steps also "internal" (compiler/exec/join.py)
    consts: dict              # new constant name -> array
    widen: tuple | None       # (residual value, scratch name): int8 -> int32 on the CPU
    info: dict = field(default_factory=dict)
    stream: object = None     # the finished stream of `kernel` (joinable with others)


def _vector(array, blocks: int, cfg: Config) -> np.ndarray:
    """A packed per-channel graph constant (or scalar) as a (blocks, batch, block_out) int32."""
    a = np.asarray(array)
    flat = np.broadcast_to(a.reshape(-1), (blocks * cfg.block_out,)) if a.size == 1 \
        else a.reshape(blocks * cfg.block_out)
    return np.ascontiguousarray(np.broadcast_to(
        flat.reshape(blocks, 1, cfg.block_out), (blocks, cfg.batch, cfg.block_out))
    ).astype(np.int32)


def _shift_steps(amount, blocks, cfg, prefix, consts) -> tuple:
    """Epilogue steps for a scalar or per-channel shift attribute; vectors go to consts."""
    lo, hi = shift_range(cfg)
    a = np.asarray(0 if amount is None else amount, np.int64)
    if a.size == 1 or np.all(a == a.reshape(-1)[0]):
        return tuple(split_shift(int(a.reshape(-1)[0]), lo, hi))
    steps = []
    for k, chunk in enumerate(split_shift_vector(a, lo, hi)):
        consts[f"{prefix}{k}"] = _vector(chunk, blocks, cfg)
        steps.append(VEC)
    return tuple(steps)


def _bound(node: Node, key: str, trivial: int) -> int | None:
    """A clip bound as an ALU immediate; None where it clips nothing (the int32 limit)."""
    value = node.attr(key)
    if value is None or int(value) == trivial:
        return None
    lo, hi = imm_range()
    if not lo <= int(value) <= hi:
        raise Unsupported(f"{key} of {node.name} must be in {lo}..{hi} (the ALU's signed "
                          f"immediate), not {value}")
    return int(value)


def epilogue_of(graph: Graph, node: Node, blocks: int, cfg: Config):
    """(Epilogue, {param: array}) from a fused node's inputs and attributes."""
    if node.attr("out_dtype", "int8") != "int8":
        raise Unsupported(f"out_dtype of {node.name} must be int8 on the accelerator, "
                          f"not {node.attr('out_dtype')}")
    consts = {}
    has_bias = len(node.inputs) > 2 and bool(node.inputs[2])
    if has_bias:
        consts["bias"] = _vector(graph.constants[node.inputs[2]], blocks, cfg)
    residual = len(node.inputs) > 3 and bool(node.inputs[3])
    rshr = np.asarray(node.attr("residual_shr", 0), np.int64)
    as_gemm = residual and cfg.block_in == cfg.block_out and np.all(rshr == rshr.flat[0])
    if as_gemm:
        # shr(r, a) == shr(r * 2**k, a + k) exactly for k >= 0 (left shifts compose):
        # the identity weight takes up to 2**(wgt_bits - 2) of a left shift
        k = int(np.clip(-rshr.flat[0], 0, cfg.wgt_bits - 2))
        consts["residual_eye"] = (np.eye(cfg.block_out, dtype=np.int8) << k).reshape(
            1, 1, cfg.block_out, cfg.block_in)
        rshifts = _shift_steps(int(rshr.flat[0]) + k, blocks, cfg, "rshift", consts)
    else:
        rshifts = _shift_steps(node.attr("residual_shr", 0), blocks, cfg, "rshift", consts) \
            if residual else ()
    shifts = _shift_steps(node.attr("shift", 0), blocks, cfg, "shift", consts)
    lo, hi = _bound(node, "lo", -(1 << 31)), _bound(node, "hi", (1 << 31) - 1)
    return Epilogue(has_bias, residual, rshifts, shifts, lo, hi, bool(as_gemm)), consts


def conv_shape(graph: Graph, node: Node, cfg: Config) -> Conv2dShape:
    x, w = graph.types[node.inputs[0]].shape, graph.types[node.inputs[1]].shape
    strides, pads = tuple(node.attr("strides", (1, 1))), tuple(node.attr("pads", (0,) * 4))
    kh, kw = w[2], w[3]
    problems = []
    if kh != kw:
        problems.append(f"kernel must be square, not {kh}x{kw}")
    if strides[0] != strides[1]:
        problems.append(f"strides must be equal, not {strides}")
    if len(set(pads)) != 1 or (pads[0] and pads[0] >= kh):
        problems.append(f"pads must be equal and below the kernel size, not {pads}")
    if tuple(node.attr("dilations", (1, 1))) != (1, 1) or node.attr("groups", 1) != 1:
        problems.append("dilations and groups must be 1")
    if x[4] != cfg.batch or x[5] != cfg.block_in or w[4] != cfg.block_out:
        problems.append(f"blocks must be the config's, not {x[4:]}/{w[4:]}")
    if problems:
        raise Unsupported(f"accel_conv2d {node.name}: " + "; ".join(problems))
    return Conv2dShape(x[0] * x[4], x[1] * x[5], x[2], x[3], w[0] * w[4], kh, strides[0],
                       pads[0])


def epilogue_cost(ep: Epilogue) -> EpilogueCost:
    """The cost model's view of a fused epilogue: ALU passes and acc operands."""
    return EpilogueCost(alu_op_count(ep), ep.vectors, ep.residual, ep.residual_gemm)


def alu_op_count(ep: Epilogue) -> int:
    """ALU micro-ops per output entry, after the matcher folds the tail into SAT
    (compiler/vta/passes/alu.py ``fuse_sat``): the residual's alignment steps, its add,
    the bias add, the shift steps and the clip, less what one SAT replaces."""
    if ep.residual_gemm:         # the residual is the accumulator's start: no ADD
        return len(ep.residual_shifts) + _requant_ops(ep, ["add_acc"] * ep.bias)
    return _requant_ops(ep, ["shr"] * len(ep.residual_shifts) + ["add_acc"] * ep.residual
                        + ["add_acc"] * ep.bias)


def _requant_ops(ep: Epilogue, ops: list) -> int:
    """ALU micro-ops of ``ops`` then the shift steps and the clip, after the SAT fold."""
    ops = ops + ["shr_vec" if s == VEC else "shr" for s in ep.shifts]
    lo, hi = ep.lo, ep.hi
    if lo is None or hi is None or not -128 <= lo <= hi <= 127:
        return len(ops) + (lo is not None) + (hi is not None)
    if ops[-1:] == ["shr"]:
        ops.pop()
    if ops[-1:] == ["add_acc"]:
        ops.pop()
    return len(ops) + 1 + (hi < 127) + (lo not in (0, -128))


def conv_candidates(cfg: Config, sh: Conv2dShape, ep: Epilogue) -> list[Conv2dKnobs]:
    """Tilings that fit the SRAMs, fewest predicted cycles first (compiler/tune's cost
    model, 2 and 1 virtual threads together); the tuning log's best first when a tuning
    context (compiler/tune/apply.py) has a record of this task."""
    cost = epilogue_cost(ep)
    found = sorted(((cycles, -vt, i), kn) for vt in (2, 1)
                   for i, (cycles, kn) in enumerate(conv2d_ranked(cfg, sh, vt, cost)))
    from ..tune.templates.accel import CONV2D, conv2d_task
    task = conv2d_task(cfg, sh, ep)
    return _tuned_first(CONV2D.knobs(task, p) if (p := lookup(task)) else None,
                        [kn for _, kn in found])


def dense_candidates(cfg: Config, m: int, k: int, n: int, ep: Epilogue) -> list[DenseKnobs]:
    mb, kb, nb = m // cfg.batch, k // cfg.block_in, n // cfg.block_out
    cost = epilogue_cost(ep)
    found = []
    for vt in (2, 1):
        for tn in divisors(nb):
            if (nb // tn) % vt:
                continue
            for tm in divisors(mb):
                acc = vt * tn * (tm * (1 + residual_tile(cost)) + 1) + nb * ep.vectors
                res_inp, res_wgt = (tm * tn, 1) if ep.residual_gemm else (0, 0)
                for tk in divisors(kb):
                    if vt * (tm * tk + res_inp) > cfg.depth("inp") or \
                            vt * (tn * tk + res_wgt) > cfg.depth("wgt") or \
                            acc > cfg.depth("acc"):
                        continue
                    found.append(((vt, tm * tn, tk), DenseKnobs(tm, tn, tk, "mn", vt)))
    found.sort(key=lambda item: item[0], reverse=True)
    from ..tune.templates.accel import DENSE, dense_task
    tuned = lookup(dense_task(cfg, m, k, n, ep))
    return _tuned_first(DENSE.knobs(tuned) if tuned else None, [kn for _, kn in found])


def _tuned_first(tuned, ranked: list) -> list:
    if tuned is None:
        return ranked
    return [tuned] + [kn for kn in ranked if kn != tuned]


def _first_that_builds(cfg, name, candidates, declare):
    errors = []
    for knobs in candidates[:MAX_TRIES]:
        try:
            sch, args = declare(knobs)
            return (knobs, args, *build_with_stream(sch, cfg, args, name))
        except CompileError as exc:
            errors.append(f"{knobs}: {exc}")
    raise Unsupported(f"{name} must fit the accelerator with some tiling, not with any of "
                      f"{len(candidates)} candidates ({errors[-1] if errors else 'none fit'})")


def lower_accel(graph: Graph, node: Node, cfg: Config) -> AccelPlan:
    """The accelerator kernel of `node`: its op table entry's `lower`."""
    lower = op_of(node).lower
    if lower is None:
        runnable = sorted(n for n, d in REGISTRY.ops.items() if d.lower is not None)
        raise Unsupported(f"op of {node.name} must be one the accelerator runs "
                          f"({', '.join(runnable)}), not {node.op}")
    return lower(graph, node, cfg)


def _output_blocks(graph: Graph, node: Node, axis: int) -> int:
    return graph.types[node.outputs[0]].shape[axis]


def lower_conv2d(graph: Graph, node: Node, cfg: Config) -> AccelPlan:
    ep, consts = epilogue_of(graph, node, _output_blocks(graph, node, 1), cfg)
    sh = conv_shape(graph, node, cfg)
    built = _first_that_builds(cfg, node.name, conv_candidates(cfg, sh, ep),
                               lambda kn: fused_conv2d(cfg, sh, ep, kn))
    what = (f"conv {sh.channels}->{sh.filters} {sh.kernel}x{sh.kernel}/{sh.stride} "
            f"{sh.height}x{sh.width}")
    return _gemm_plan(graph, node, cfg, ep, consts, built, sh.macs, what)


def lower_dense(graph: Graph, node: Node, cfg: Config) -> AccelPlan:
    ep, consts = epilogue_of(graph, node, _output_blocks(graph, node, 1), cfg)
    x, w = graph.types[node.inputs[0]].shape, graph.types[node.inputs[1]].shape
    m, k, n = x[0] * x[2], x[1] * x[3], w[0] * w[2]
    built = _first_that_builds(cfg, node.name, dense_candidates(cfg, m, k, n, ep),
                               lambda kn: fused_dense(cfg, m, k, n, ep, kn))
    return _gemm_plan(graph, node, cfg, ep, consts, built, m * k * n, f"dense {k}->{n}")


def lower_batch_dense(graph: Graph, node: Node, cfg: Config) -> AccelPlan:
    ep, consts = epilogue_of(graph, node, _output_blocks(graph, node, 2), cfg)
    x, w = graph.types[node.inputs[0]].shape, graph.types[node.inputs[1]].shape
    g, m, k, n = x[0], x[1] * x[3], x[2] * x[4], w[1] * w[3]
    built = _first_that_builds(cfg, node.name, dense_candidates(cfg, m, k, n, ep),
                               lambda kn: fused_batch_dense(cfg, g, m, k, n, ep, kn))
    return _gemm_plan(graph, node, cfg, ep, consts, built, g * m * k * n,
                      f"batched dense {g} x ({m}x{k} @ {k}x{n})")


def _gemm_plan(graph: Graph, node: Node, cfg: Config, ep: Epilogue, consts: dict, built,
               macs: int, what: str) -> AccelPlan:
    """Bind a fused GEMM kernel (`built`: knobs, args, program) to the node's operands."""
    knobs, args, kernel, stream = built
    weights = "const" if graph.is_constant(node.inputs[1]) else "value"   # computed: DRAM
    bindings = {args[0].name: ("value", node.inputs[0]), args[1].name: (weights, node.inputs[1]),
                args[-1].name: ("value", node.outputs[0])}
    named = {}
    for name, array in consts.items():
        named[f"{node.name}:{name}"] = array
        bindings[name] = ("const", f"{node.name}:{name}")
    widen = None
    if ep.residual and ep.residual_gemm:
        bindings["residual"] = ("value", node.inputs[3])
    elif ep.residual:
        widen = (node.inputs[3], f"{node.name}:residual")
        bindings["residual"] = ("scratch", widen[1])
    _check_shapes(graph, kernel, bindings, named)
    info = {"macs": macs, "what": what, "knobs": str(knobs),
            "ideal_cycles": -(-macs // cfg.macs_per_cycle)}
    return AccelPlan(kernel, bindings, named, widen, info, stream)


def _check_shapes(graph, kernel, bindings, consts) -> None:
    for param in kernel.buffers:
        kind, name = bindings[param.name]
        if kind == "scratch":
            continue
        shape = consts[name].shape if name in consts else graph.types[name].shape
        if tuple(shape) != param.shape:
            raise CompileError(f"{param.name} of kernel {kernel.name} must have shape "
                               f"{param.shape}, not {tuple(shape)} (value {name})")
