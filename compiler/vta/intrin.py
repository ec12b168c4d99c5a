"""The accelerator's tensor intrinsic, derived from the Config (like tinygrad's TensorCore)."""
from __future__ import annotations

from dataclasses import dataclass

from vtalab.spec import Config

from ..errors import LoweringError


@dataclass(frozen=True)
class GemmIntrinsic:
    """acc[batch, block_out] += inp[batch, block_in] x wgt[block_out, block_in]^T."""
    batch: int
    block_in: int
    block_out: int
    inp_dtype: str
    wgt_dtype: str
    acc_dtype: str
    out_dtype: str

    name = "vta_gemm"

    @property
    def shape(self) -> tuple[int, int, int]:
        return (self.batch, self.block_in, self.block_out)


def gemm_intrinsic(cfg: Config) -> GemmIntrinsic:
    return GemmIntrinsic(cfg.batch, cfg.block_in, cfg.block_out, f"int{cfg.inp_bits}",
                         f"int{cfg.wgt_bits}", f"int{cfg.acc_bits}", f"int{cfg.out_bits}")


def entry_shape(cfg: Config, scope: str) -> tuple[int, int]:
    """Trailing shape of one SRAM entry of ``scope`` ("inp", "wgt", "acc" or "out")."""
    return tuple(cfg.elem_shape(scope))


def entries(buffer, cfg: Config) -> int:
    """Number of SRAM entries a buffer of an SRAM scope occupies (its leading dims)."""
    tail = entry_shape(cfg, buffer.scope)
    if tuple(buffer.shape[-2:]) != tail:
        raise LoweringError(f"{buffer.scope} buffer {buffer.name} must end with the entry "
                            f"shape {tail}, not shape {buffer.shape}")
    n = 1
    for s in buffer.shape[:-2]:
        n *= s
    return n


def flat_index(indices, shape):
    """Row-major flattening of index expressions over ``shape``."""
    out = None
    for i, n in zip(indices, shape):
        out = i if out is None else out * n + i
    from ..ir.expr import Const, INT32
    return out if out is not None else Const(0, INT32)
