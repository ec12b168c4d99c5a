"""Loop IR shared by the accelerator lowering and the CPU/CUDA fallbacks.

``expr``: typed scalar expressions; ``stmt``: immutable statements (loops with kinds,
buffers with scopes, stores, allocations, attributes); ``arith``: affine analysis and
interval bounds; ``printer``: text form; ``interp``: a reference executor.
"""
from .dtype import DType, dtype_of
from .expr import (Expr, Var, Const, Binary, Cmp, Not, Select, Cast, Call, Load, const,
                   select, cast, min_expr, max_expr, call)
from .stmt import Buffer, Stmt, For, Seq, Store, Allocate, Attr, IfThen, Evaluate, seq
from .printer import format_ir
