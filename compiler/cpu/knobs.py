"""Schedule knobs of the tunable CPU kernels: the hand heuristics as data.

Every tunable kernel (conv2d NCHW, dense, pooling, softmax) takes ``knobs: dict | None``.
None means the heuristic choice below, which is exactly what the kernel did before it was
tunable; a dict overrides some or all of the heuristic's knobs (the autotuner's templates
in ``compiler/tune/templates/cpu.py`` declare which values are legal). The resolved knobs
are part of the kernel memo key, so None and the default point share one kernel.

    knobs = conv_nchw_knobs(oc=64, ow=56, kw=3, dtype="float32", target=None)
    # {"oc_tile": 16, "lanes": 16, "unroll_oc": True, "unroll_kw": True, ...}
"""
from __future__ import annotations

import json

from ..errors import ScheduleError
from .common import pick_factor, pick_lanes, vector_lanes
from .loops import row_layout

REGISTERS = 32                       # vector registers a register tile may fill (AVX-512)


def resolve(default: dict, knobs: dict | None, what: str) -> dict:
    """``default`` overridden by ``knobs`` (None: the default); unknown names raise."""
    if not knobs:
        return dict(default)
    unknown = sorted(set(knobs) - set(default))
    if unknown:
        raise ScheduleError(f"{what} knobs must be among {sorted(default)}, not {unknown}")
    return {**default, **knobs}


def knob_key(knobs: dict) -> str:
    """The canonical text of resolved knobs (part of a kernel's memo key)."""
    return json.dumps(knobs, sort_keys=True)


def check_divides(what: str, factor, extent: int) -> int:
    if not isinstance(factor, int) or isinstance(factor, bool) or factor < 1 or extent % factor:
        raise ScheduleError(f"{what} must be a positive divisor of {extent}, not {factor!r}")
    return factor


def check_positive(what: str, value) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise ScheduleError(f"{what} must be a positive int, not {value!r}")
    return value


def check_choice(what: str, value, choices) -> object:
    if value not in choices:
        raise ScheduleError(f"{what} must be one of {list(choices)}, not {value!r}")
    return value


# ---- conv2d NCHW --------------------------------------------------------------------------

CONV_ORDERS = ("oc_oh", "oh_oc")     # outer loop order of the output tiles


def conv_row_multiple(ow: int, lanes: int) -> int:
    """The row is computed rounded up to whole ``lanes`` vectors when lanes does not
    divide it (only the output stage stores a masked tail)."""
    return lanes if ow % lanes else 1


def conv_nchw_knobs(oc: int, ow: int, kw: int, acc_dtype: str, target=None) -> dict:
    """Heuristic: tiles of up to 16 output channels x one vector of output pixels (a full
    vector over a row rounded up, or the largest power of two dividing the row)."""
    full = vector_lanes(target, acc_dtype)
    lanes = full if ow % full and ow >= 12 else pick_lanes(ow, full)
    return {"oc_tile": pick_factor(oc, 16), "lanes": lanes, "unroll_oc": True,
            "unroll_kw": kw <= 11, "order": "oc_oh", "par_depth": 3}


# ---- dense ---------------------------------------------------------------------------------

def dense_block(N: int, target=None) -> int:
    """Output features per packed weight block: whole vectors, as many as registers allow,
    so each output tile streams one contiguous block of the packed weight."""
    full = vector_lanes(target)
    lanes = pick_lanes(N, full)
    regs = 28 if full >= 16 else 12                 # AVX-512 has 32 vector registers
    return lanes * pick_factor(N // lanes, max(1, regs // -(-lanes // full)))


def dense_knobs(M: int, block: int, acc_dtype: str, target=None) -> dict:
    """Heuristic for a packed weight of ``block`` outputs per block: one row of vectors
    over the block, up to 28 accumulators in all, rows and blocks in parallel."""
    lanes = pick_lanes(block, vector_lanes(target, acc_dtype))
    return {"lanes": lanes, "m_tile": pick_factor(M, max(1, 28 // max(1, block // lanes))),
            "k_unroll": 1, "parallel": True}


# ---- pooling -------------------------------------------------------------------------------

POOL_PARALLEL = ("plane", "row")     # separable max pool: planes, or (plane, row) pairs


def separable_pool_knobs(dtype: str, target=None) -> dict:
    return {"lanes": vector_lanes(target, dtype), "parallel": "plane"}


def window_pool_knobs(ow: int, kw: int, acc_dtype: str, target=None) -> dict:
    return {"lanes": pick_lanes(ow, vector_lanes(target, acc_dtype)), "unroll_kw": kw <= 11,
            "parallel": True}


def global_pool_knobs(hw: int, dtype: str, target=None) -> dict:
    return {"lanes": min(vector_lanes(target, dtype), hw), "parallel": True}


# ---- softmax -------------------------------------------------------------------------------

def softmax_knobs(N: int, target=None) -> dict:
    lanes, chains = row_layout(N, vector_lanes(target))
    return {"lanes": lanes, "chains": chains, "parallel": True}
