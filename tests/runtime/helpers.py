"""Shared pieces of the runtime tests: numpy references and small program fragments."""
import numpy as np

from vtalab.runtime import Loop, UopKernel


def wrap(values, bits: int) -> np.ndarray:
    """Two's-complement wrap of int64 values to ``bits`` bits (kept as int64)."""
    values = np.asarray(values, dtype=np.int64)
    half = 1 << (bits - 1)
    return ((values + half) % (1 << bits)) - half


def narrow(cfg, values) -> np.ndarray:
    """What the out buffer holds for accumulator ``values``: their low out_bits bits."""
    return wrap(values, cfg.out_bits).astype(f"int{cfg.out_bits}")


def acc_entries(cfg, rows: int, low: int, high: int, rng) -> np.ndarray:
    """``rows`` random accumulator entries, shape (rows, batch, block_out), int32."""
    shape = (rows, cfg.batch, cfg.block_out)
    return rng.integers(low, high, size=shape, dtype=np.int64).astype(f"int{cfg.acc_bits}")


def upload(dev, array: np.ndarray):
    buf = dev.alloc(array.nbytes)
    dev.copy_in(buf, array)
    return buf


def out_buffer(dev, cfg, rows: int):
    return dev.alloc(rows * cfg.entry_bytes("out"))


def read_out(dev, cfg, buf, rows: int) -> np.ndarray:
    return dev.copy_out(buf, f"int{cfg.out_bits}", (rows, cfg.batch, cfg.block_out))


def alu_rows(b, op, m: int, n: int, imm=None, dst_base: int = 0, src_base=None) -> None:
    """ALU over acc rows dst_base + [0, m*n): loop of m, n micro-ops per iteration.

    The operand is ``imm`` or, without it, acc row src_base + the same offset.
    """
    src_base = dst_base if src_base is None else src_base
    uops = [(dst_base + j, src_base + j) for j in range(n)]
    b.push_alu(UopKernel.alu(op, uops, [Loop(m, dst_factor=n, src_factor=n)], imm=imm))


def store_rows(b, out_buf, rows: int, sram_index: int = 0) -> None:
    """Hand the out rows to the store module and store them contiguously."""
    b.dep_push("compute", "store")
    b.dep_pop("compute", "store")
    b.store_2d(sram_index, out_buf, 0, rows)


def identity_gemm(b, rows: int) -> None:
    """acc[r] = inp[r] x I for r < rows (reset, then one GEMM), with block_out <= block_in."""
    b.push_gemm(UopKernel.gemm([(0, 0, 0)], [Loop(rows, 1, 1, 0)], reset=True))
    b.push_gemm(UopKernel.gemm([(0, 0, 0)], [Loop(rows, 1, 1, 0)]))


def identity_weights(cfg) -> np.ndarray:
    return np.eye(cfg.block_out, cfg.block_in, dtype=f"int{cfg.wgt_bits}")[None]
