"""Consecutive accelerator steps joined into one program (compiler/vta/join.py).

A run of accelerator steps with no CPU step between them becomes ``parts`` joined steps
of about equal MACs (``parts=1``: one program for the whole run; the RTL simulation of a
joined step cannot be split across worker processes, so a few parts keep ``jobs=2`` runs
parallel). Buffers are named after the values and constants they hold, so one layer's
output and the next one's input are one buffer. A step whose residual the host widens
first (``widen``) or whose stream was not kept stays alone.
"""
from __future__ import annotations

from ..errors import CompileError
from ..vta import join_streams
from .module import Step


def join_steps(steps: list, cfg, parts: int, keep=(), shapes=None, offsets=None) -> list:
    """``steps`` with each run of joinable accelerator steps joined into ``parts`` steps
    (``parts=0``: unchanged); ``keep``: values read after the last step; ``shapes``: the
    module's shape of a value that layers view differently (an ALU layer's flat entries);
    ``offsets``: each value's byte offset in the arena (the memory plan reuses ranges:
    the token passes then order and check accesses to the same bytes by any value)."""
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 0:
        raise CompileError(f"join must be a whole number of programs >= 0, not {parts!r}")
    if parts == 0:
        return list(steps)
    out, run = [], []
    for k, step in enumerate(steps + [None]):
        if step is not None and _joinable(step):
            run.append(step)
            continue
        end = k - len(run)                         # where the run starts, then each group
        for group in _split(run, parts):
            end += len(group)
            read_later = {v for s in steps[end:] for v in s.inputs} | set(keep)
            out.append(group[0] if len(group) == 1
                       else joined_step(group, cfg, read_later, shapes, offsets))
        run = []
        if step is not None:
            out.append(step)
    return out


def _joinable(step: Step) -> bool:
    return step.target == "accel" and step.stream is not None and step.widen is None


def _split(run: list, parts: int) -> list:
    """``run`` cut into at most ``parts`` consecutive groups of about equal MACs."""
    total = sum(_macs(s) for s in run) or 1
    groups, done = [[]], 0
    for step in run:
        if groups[-1] and done >= total * len(groups) / parts:
            groups.append([])
        groups[-1].append(step)
        done += _macs(step)
    return [g for g in groups if g]


def _read_inside(value: str, group: list) -> bool:
    return any(value in s.inputs for s in group)


def _macs(step: Step) -> int:
    return step.info.get("macs", 0)


def joined_step(group: list, cfg, read_later, shapes=None, offsets=None) -> Step:
    """One step running ``group``. A value its layers both make and read, and no later
    step reads (``read_later`` holds those that are), is ``internal``: in the arena
    while the program runs (the memory plan may reuse its range within it), neither an
    input nor an output of the step."""
    name = f"{group[0].name}..{group[-1].name}"
    produced = {v for s in group for v in s.outputs}
    inputs = tuple(dict.fromkeys(v for s in group for v in s.inputs
                                 if v and v not in produced))
    outputs = tuple(dict.fromkeys(v for s in group for v in s.outputs
                                  if v in read_later or not _read_inside(v, group)))
    bindings = {}
    for s in group:
        for kind, bound in s.bindings.values():
            internal = kind == "value" and bound in produced and bound not in outputs
            bindings[bound] = ("internal" if internal else kind, bound)
    arena = {bound: ("arena", offsets[bound]) for bound in bindings
             if offsets and bound in offsets}
    kernel = join_streams(cfg, [(s.stream, {p: bound for p, (_, bound) in s.bindings.items()})
                                for s in group], name, shapes, arena)
    members = [{"name": s.name, "op": s.op, **s.info} for s in group]
    info = {"macs": sum(_macs(s) for s in group),
            "ideal_cycles": sum(s.info.get("ideal_cycles", 0) for s in group),
            "what": f"{len(group)} layers joined", "members": members}
    return Step(name, "joined", "accel", inputs, outputs, "accelerator", kernel=kernel,
                bindings=bindings, info=info)
