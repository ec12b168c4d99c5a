"""Float islands the accelerator's ALU computes exactly become `alu` nodes (opdefs/alu.py).

After quantisation, an op the quantiser keeps in float runs between `dequantize` and
`quantize`. This pass replaces the islands

    dequantize(a) [, dequantize(b)] -> core [-> mul | div by 2**j] [-> relu | clip] -> quantize

with core one of add, sub, max, min, mul (two int8 sources of one shape), neg, abs,
leaky_relu with a power-of-two slope (one source), or nothing (a relu / clip of one source),
by one `alu` node computing the same int8 values in integers: the sources aligned by left
shifts (the identity weights that load them into the accumulator), one ALU op, a shift
rounding half to even, a clip. An int8 `clip` of an int8 value (a relu the quantiser kept
in int8) becomes one too. The islands the ALU cannot compute exactly stay float: add / sub of
exponents more than 15 apart (float32 rounds their sum), slopes that are not powers of two,
broadcast operands, results read in float; `graph.meta["float_reasons"]` says why for each
such op (the partition report shows it)."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from .dead_code import eliminate_dead_code
from .rewrite import PassContext, Rewriter, single_consumer
from .tabulate import _per_tensor

BINARY = {"add": "add", "sub": "add", "max": "max", "min": "min", "mul": "mul"}
UNARY = ("neg", "abs", "leaky_relu")
MAX_ALIGN = 15


def _exponent(node: Node) -> int:
    return int(round(-np.log2(float(np.asarray(node.attr("scale"), np.float64).reshape(-1)[0]))))


def _pow2(value) -> int | None:
    """j where value == 2**j exactly (as float32, as the float kernels use it), else None."""
    v = float(np.float32(value))
    if not v > 0:
        return None
    j = int(np.round(np.log2(v)))
    return j if v == 2.0 ** j else None


def _source(graph: Graph, value: str, shape) -> Node | None:
    node = graph.producer(value)
    if node is None or node.op != "dequantize" or not _per_tensor(node) or \
            graph.types[node.inputs[0]].dtype != "int8" or graph.types[value].shape != shape:
        return None
    return node


def _core_spec(graph: Graph, core: Node, shape):
    """(sources, loads, combine, exponent of n) of the island's core op, or None."""
    if core.op in BINARY and len(core.inputs) == 2:
        a, b = (_source(graph, v, shape) for v in core.inputs)
        if a is None or b is None:
            return None
        ea, eb = _exponent(a), _exponent(b)
        if core.op == "mul":
            return [a, b], [(0, 1), (1, 1)], "mul", ea + eb
        if core.op in ("add", "sub") and abs(ea - eb) > MAX_ALIGN:
            return None
        e = max(ea, eb)
        sign = -1 if core.op == "sub" else 1
        return [a, b], [(0, 1 << (e - ea)), (1, sign << (e - eb))], BINARY[core.op], e
    source = _source(graph, core.inputs[0], shape) if core.op in UNARY else None
    if source is None:
        return None
    e = _exponent(source)
    if core.op == "neg":
        return [source], [(0, -1)], "", e
    if core.op == "abs":
        return [source], [(0, 1), (0, -1)], "max", e
    j = _pow2(core.attr("alpha", 0.01))          # leaky_relu: slope 2**j, j <= 0
    if j is None or j > 0:
        return None
    return [source], [(0, 1 << -j), (0, 1)], "max", e - j


def _scale(graph: Graph, node: Node) -> int | None:
    """j where `node` multiplies by 2**j (mul / div by a scalar power-of-two constant)."""
    if node.op not in ("mul", "div") or not graph.is_constant(node.inputs[1]):
        return None
    c = graph.constants[node.inputs[1]]
    j = _pow2(c.reshape(-1)[0]) if c.size == 1 else None
    return None if j is None else (j if node.op == "mul" else -j)


def _bounds(node: Node | None, eo: int) -> tuple[int, int]:
    if node is None:
        return -128, 127
    lo, hi = (0.0, None) if node.op == "relu" else (node.attr("lo"), node.attr("hi"))
    at = lambda v: int(np.rint(np.float64(np.float32(v)) * 2.0 ** eo))  # noqa: E731
    return (-128 if lo is None else max(-128, at(lo)), 127 if hi is None else min(127, at(hi)))


def find_alu_island(graph: Graph, quantize: Node):
    """(sources, attrs) of the alu node equal to the island ending at `quantize`, or None."""
    if quantize.op != "quantize" or quantize.attr("dtype", "int8") != "int8" or \
            not _per_tensor(quantize):
        return None
    shape = graph.types[quantize.outputs[0]].shape
    clip, scale, node = None, 0, graph.producer(quantize.inputs[0])
    while node is not None and single_consumer(graph, node.outputs[0]) is not None:
        if node.op in ("relu", "clip") and clip is None and not scale:
            clip = node
        elif _scale(graph, node) is not None:
            scale += _scale(graph, node)
        else:
            break
        node = graph.producer(node.inputs[0])
    if node is None or graph.types[node.outputs[0]].shape != shape:
        return None
    if node.op == "dequantize":               # a relu / clip / rescale of one source
        spec = ([node], [(0, 1)], "", _exponent(node)) if \
            _source(graph, node.outputs[0], shape) is not None else None
    elif single_consumer(graph, node.outputs[0]) is None:
        return None
    else:
        spec = _core_spec(graph, node, shape)
    if spec is None:
        return None
    sources, loads, combine, e = spec
    eo = _exponent(quantize)
    lo, hi = _bounds(clip, eo)
    function = node.op if node.op != "dequantize" else clip.op if clip else "rescale"
    return sources, dict(loads=tuple(loads), combine=combine, shift=e - scale - eo, lo=lo,
                         hi=hi, function=function)


def _identity(attrs: dict) -> bool:
    return attrs["loads"] == ((0, 1),) and attrs["shift"] == 0 and \
        (attrs["lo"], attrs["hi"]) == (-128, 127)


def _int8_clip(graph: Graph, node: Node):
    """An int8 clip of an int8 value as an alu node's attributes."""
    if node.op != "clip" or graph.types[node.inputs[0]].dtype != "int8":
        return None
    lo, hi = node.attr("lo"), node.attr("hi")
    return dict(loads=((0, 1),), combine="", shift=0, function="clip",
                lo=-128 if lo is None else max(-128, int(lo)),
                hi=127 if hi is None else min(127, int(hi)))


def why_float(graph: Graph, node: Node) -> str | None:
    """Why an ALU-able op of dequantized int8 values stays a float op (None: not one)."""
    if node.op not in BINARY and node.op not in UNARY or \
            not any((p := graph.producer(v)) is not None and p.op == "dequantize"
                    for v in node.inputs):
        return None
    shapes = {graph.types[v].shape for v in node.inputs}
    sources = [_source(graph, v, graph.types[node.outputs[0]].shape) for v in node.inputs]
    value = node.outputs[0]                     # past the scales and clips an island takes
    while (user := single_consumer(graph, value)) is not None and \
            (user.op in ("relu", "clip") or _scale(graph, user) is not None):
        value = user.outputs[0]
    readers = graph.consumers(value)
    if len(shapes) > 1:
        return f"operand shapes {sorted(shapes)}: the ALU combines entries of one shape"
    if any(s is None for s in sources):
        return "an operand is not a dequantized int8 value"
    if node.op in ("add", "sub") and abs(_exponent(sources[0]) - _exponent(sources[1])) > \
            MAX_ALIGN:
        return f"operand exponents more than {MAX_ALIGN} apart: float32 rounds the result"
    if node.op == "leaky_relu":
        return f"slope {node.attr('alpha', 0.01)} is not a power of two at most 1"
    if len(readers) != 1 or readers[0].op != "quantize":
        names = sorted({r.op for r in readers})
        return f"its float result is read by {'/'.join(names) or 'the graph output'}, " \
               f"not requantised to int8 (the ALU's result is int8)"
    return None


def alu_islands(graph: Graph, ctx: PassContext) -> Graph:
    """The pass (a no-op when `ctx.quantize` is False: the float graph stays as it is)."""
    if not ctx.quantize:
        return graph
    rw = Rewriter(graph)
    reasons = {n.name: why for n in graph.nodes if (why := why_float(graph, n))}
    changed = bool(reasons)
    for node in graph.nodes:
        found = find_alu_island(graph, node)
        if found is not None:
            sources, attrs = found
            inputs = list(dict.fromkeys(rw.value(s.inputs[0]) for s in sources))
            index = {rw.value(s.inputs[0]): inputs.index(rw.value(s.inputs[0]))
                     for s in sources}
            attrs["loads"] = tuple((index[rw.value(sources[i].inputs[0])], scale)
                                   for i, scale in attrs["loads"])
            if _identity(attrs) and node.outputs[0] not in graph.outputs:
                rw.alias(node.outputs[0], inputs[0])     # a rescale that keeps the int8 values
            else:
                rw.emit_node("alu", inputs, attrs, node.name, node.outputs)
            changed = True
            continue
        attrs = _int8_clip(graph, node)
        if attrs is not None:
            rw.emit_node("alu", [rw.value(node.inputs[0])], attrs, node.name, node.outputs)
            changed = True
            continue
        rw.keep(node)
    if not changed:
        return graph
    kept = {**graph.meta.get("float_reasons", {}), **reasons}
    return eliminate_dead_code(rw.finish(float_reasons=kept))
