"""Layout packing at accelerator-region boundaries.

Inside an accelerator region every tensor is blocked for the GEMM core (see runtime/layout.py):
activations NCHW -> NCHW{batch}n{block_in}c, accumulators NCHW{batch}n{block_out}c, conv
weights OIHW -> OIHW{block_out}o{block_in}i (dense likewise), channels zero-padded to the
block. A `pack` node is inserted where a CPU value enters a region, an `unpack` where a
region value leaves it (or is a graph output). Constant weights, biases and per-channel
shift amounts are packed at compile time. Block sizes come from `ctx.config`. A batched
GEMM's operands ([G, rows, K], `Gemm.batched`) are packed per leading index (`batch` = 1:
batch_layout.py), and so is its result until it leaves the region."""
from __future__ import annotations

import numpy as np

from vtalab.runtime.layout import pack_array

from ..batch_layout import pack_batched
from ..ir import Graph, Node
from ..opdef import op_of
from .rewrite import PassContext, Rewriter


def pack_channel_vector(vector: np.ndarray, rank: int, block: int) -> np.ndarray:
    """A per-channel array broadcastable over NCHW (shape [1, C, 1, 1] or [1, C]) packed to
    broadcast over the packed layout: [1, C', 1.., 1, block]."""
    vector = np.asarray(vector)
    if vector.ndim == 0:
        return vector
    plain = vector.reshape((1, -1) + (1,) * (rank - 2))
    if plain.shape[1] == 1:
        return plain.reshape((1, 1) + (1,) * (rank - 2) + (1, 1))
    return pack_array(plain, (1, block))


class _Packer:
    def __init__(self, graph: Graph, ctx: PassContext):
        self.graph, self.cfg = graph, ctx.config
        self.rw = Rewriter(graph)
        # old -> (new, blocks, leading batch axes)
        self.packed: dict[str, tuple[str, tuple[int, int], int]] = {}
        self.plain: dict[str, str] = {}
        self.cache: dict[tuple[str, tuple[int, int], int], str] = {}

    def plain_value(self, value: str) -> str:
        if value not in self.packed:
            return self.rw.value(value)
        if value not in self.plain:
            new, _, batch = self.packed[value]
            shape = self.graph.types[value].shape
            self.plain[value] = self.rw.op("unpack", new, name=f"{value}_unpack",
                                           shape=shape, target="cpu", **_batch(batch))
        return self.plain[value]

    def packed_value(self, value: str, blocks: tuple[int, int], batch: int = 0) -> str:
        if value in self.packed and self.packed[value][1:] == (blocks, batch):
            return self.packed[value][0]
        key = (value, blocks, batch)
        if key not in self.cache:
            const = self.rw.constant_value(value)
            if const is not None:
                self.cache[key] = self.rw.const(pack_batched(const, blocks, batch),
                                                f"{value}_packed")
            else:
                self.cache[key] = self.rw.op("pack", self.plain_value(value),
                                             name=f"{value}_pack", blocks=blocks, target="cpu",
                                             **_batch(batch))
        return self.cache[key]

    def operand(self, node: Node, value: str) -> str:
        """An elementwise operand of an accelerator node, in the accumulator layout."""
        const = self.rw.constant_value(value)
        if const is not None and const.size > 1:
            rank = self.graph.types[node.outputs[0]].rank
            return self.rw.const(pack_channel_vector(const, rank, self.cfg.block_out),
                                 f"{value}_packed")
        if const is not None:
            return self.rw.value(value)
        blocks = (self.cfg.batch, self.cfg.block_out)
        if value in self.packed and self.packed[value][1] == blocks:
            return self.packed[value][0]          # an accelerator result, in its layout
        return self.packed_value(value, blocks)

    def accel_node(self, node: Node) -> None:
        cfg, attrs, gemm = self.cfg, dict(node.attrs), op_of(node).gemm
        batch = max((self.packed[v][2] for v in node.inputs if v in self.packed), default=0)
        if gemm is not None:
            batch = int(gemm.batched)
            x = self.packed_value(node.inputs[0], (cfg.batch, cfg.block_in), batch)
            w = self.packed_value(node.inputs[1], (cfg.block_out, cfg.block_in), batch)
            inputs = [x, w]
            attrs["layout"] = "packed"
        else:
            inputs = [self.operand(node, v) for v in node.inputs]
            if node.op == "shr" and np.ndim(node.attr("amount")) > 0:
                rank = self.graph.types[node.outputs[0]].rank
                attrs["amount"] = pack_channel_vector(node.attr("amount"), rank,
                                                      cfg.block_out)
        op = op_of(node).accel_op or node.op               # its packed form, if another op
        out = self.rw.emit_node(op, inputs, attrs, node.name, node.outputs)[0]
        self.packed[node.outputs[0]] = (out, (cfg.batch, cfg.block_out), batch)

    def run(self) -> Graph:
        for node in self.graph.nodes:
            if node.attr("target") == "accel":
                self.accel_node(node)
            else:
                inputs = [self.plain_value(v) if v else "" for v in node.inputs]
                self.rw.emit_node(node.op, inputs, dict(node.attrs), node.name, node.outputs)
        for value in self.graph.outputs:
            self.rw.alias(value, self.plain_value(value))
        cfg = self.cfg
        return self.rw.finish(layout=dict(batch=cfg.batch, block_in=cfg.block_in,
                                          block_out=cfg.block_out, config=cfg.name))


def _batch(batch: int) -> dict:
    """The pack / unpack attribute of `batch` leading axes (absent for none)."""
    return {"batch": batch} if batch else {}


def pack_layout(graph: Graph, ctx: PassContext) -> Graph:
    if not any(n.attr("target") == "accel" for n in graph.nodes):
        return graph
    return _Packer(graph, ctx).run()
