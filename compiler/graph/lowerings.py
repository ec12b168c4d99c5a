"""Accelerator lowerings of the operators the accelerator runs (compiler/exec/lower.py,
lower_alu.py).

The op table (opdefs/) names them as each such operator's `lower`:
`fn(graph, node, cfg) -> exec.lower.AccelPlan`, raising `exec.lower.Unsupported` where the
accelerator cannot run the node (the module then runs it on the CPU). A new GEMM operator
names one of these (or a new one here), not a branch in the lowering. compiler/exec is
imported on first use (the op table loads without it).
"""
from __future__ import annotations


def conv2d(graph, node, cfg):
    """accel_conv2d: packed x [N', C', H, W, n, c], w [O', C', kh, kw, o, c]."""
    from ..exec.lower import lower_conv2d
    return lower_conv2d(graph, node, cfg)


def dense(graph, node, cfg):
    """accel_dense: packed x [M', K', m, k], w [N', K', n, k]."""
    from ..exec.lower import lower_dense
    return lower_dense(graph, node, cfg)


def batch_dense(graph, node, cfg):
    """accel_batch_dense: G packed denses, x [G, M', K', m, k], w [G, N', K', n, k]."""
    from ..exec.lower import lower_batch_dense
    return lower_batch_dense(graph, node, cfg)


def alu(graph, node, cfg):
    """accel_alu: int8 elementwise on the ALU."""
    from ..exec.lower_alu import lower_alu
    return lower_alu(graph, node, cfg)
