"""Read the activation ranges of an already-quantised (QDQ) model and drop its Q/DQ pairs.

onnxruntime's QDQ format puts `QuantizeLinear -> DequantizeLinear` on activations (and a
DequantizeLinear on int8 weight constants, which constant folding has already turned into
float weights). Each activation pair says which real range the model was calibrated for:
[(qmin - zp) * scale, (qmax - zp) * scale]. This pass records max(|lo|, |hi|) per value in
`graph.meta["activation_ranges"]` (read by the quantize pass) and reconnects the consumers
to the float value, leaving a float graph. A pair whose range starts at exactly 0 also
saturates: onnxruntime removes a ReLU / Clip(0, 6) before such a pair, so it becomes
`clip(0, hi)` to keep the model's meaning (unless the value is already non-negative: a
ReLU's or a Clip(lo >= 0)'s output, maybe moved by ops that keep the range). The op table
says which ops are quantize / dequantize (`qdq`), clip (`clip_bounds`) or keep the range."""
from __future__ import annotations

import numpy as np

from ..ir import Graph, Node
from ..opdef import op_of
from .rewrite import PassContext, Rewriter, single_consumer


def _bounds(node: Node) -> tuple[float, float]:
    scale = np.asarray(node.attr("scale"), np.float64)
    zp = np.asarray(node.attr("zero_point")).astype(np.float64)
    info = np.iinfo(node.attr("dtype", "int8"))
    return float(np.min((info.min - zp) * scale)), float(np.max((info.max - zp) * scale))


def _non_negative(rw: Rewriter, value: str) -> bool:
    """Produced by a clip with a lower bound >= 0 (relu, clip(0, 6)), maybe through ops
    that keep the range: the pair's lower bound adds nothing (its upper bound is the int8
    saturation the quantiser derives from the same range)."""
    producers = {out: n for n in rw.b.nodes for out in n.outputs}
    producer = producers.get(value)
    while producer is not None and op_of(producer).keeps_range:
        producer = producers.get(producer.inputs[0])
    if producer is None or op_of(producer).clip_bounds is None:
        return False
    lo = op_of(producer).clip_bounds(producer)[0]
    return lo is not None and lo >= 0


def strip_qdq(graph: Graph, ctx: PassContext) -> Graph:
    ranges = dict(graph.meta.get("activation_ranges", {}))
    rw = Rewriter(graph)
    dropped = set()
    for node in graph.nodes:
        if node.name in dropped:
            continue
        if op_of(node).qdq == "quantize" and graph.types[node.inputs[0]].dtype == "float32":
            users = graph.consumers(node.outputs[0])
            if users and all(op_of(u).qdq == "dequantize" for u in users) and \
                    node.outputs[0] not in graph.outputs:
                lo, hi = _bounds(node)
                source = rw.value(node.inputs[0])
                ranges[source] = max(ranges.get(source, 0.0), abs(lo), abs(hi))
                if lo == 0.0 and not _non_negative(rw, source):
                    # the pair saturates at 0: a ReLU / ReLU6 the quantiser removed
                    source = rw.op("clip", source, name=f"{node.name}_clip", lo=0.0, hi=hi)
                    ranges[source] = ranges[rw.value(node.inputs[0])]
                for user in users:
                    rw.alias(user.outputs[0], source)
                    dropped.add(user.name)
                continue
        rw.keep(node)
    return rw.finish(activation_ranges=ranges) if ranges else rw.finish()


__all__ = ["strip_qdq", "single_consumer"]
