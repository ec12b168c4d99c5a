"""Tensor expressions: what an operator computes (``tensor``), how it runs (``schedule``).

    A = te.placeholder((M, K), "int8", "A")
    k = te.reduce_axis(K, "k")
    C = te.compute((M, N), lambda i, j: te.sum(A[i, k].astype("int32") * ..., axis=k))
    s = te.create_schedule(C)
"""
from .tensor import (IterVar, Tensor, PlaceholderOp, ComputeOp, TensorRead, Reduce,
                     placeholder, compute, reduce_axis, sum, select, cast, min, max, call)
from .schedule import Schedule, Stage, create_schedule
