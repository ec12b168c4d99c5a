"""The blocked DRAM layouts (runtime/layout.py), the one packing the runtime, the compiler's
layout pass and its kernels all use: round trips, odd shapes, zero padding, entry positions,
the strict per-buffer form and its errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from vtalab.runtime.layout import (buffer_blocks, on_plain_operands, pack, pack_array,
                                   packed_shape, padded_plain_shape, round_up, unpack,
                                   unpack_array)
from vtalab.spec import preset
from vtalab.spec.errors import ProgramError


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 5), st.integers(1, 40), st.integers(1, 4), st.sampled_from([1, 2, 4]),
       st.sampled_from([4, 8, 16]))
def test_pack_unpack_round_trip_of_odd_nchw_shapes(n, c, hw, batch, block):
    x = np.random.default_rng(0).integers(-128, 128, (n, c, hw, hw + 1)).astype(np.int8)
    packed = pack_array(x, (batch, block))
    assert packed.shape == packed_shape(x.shape, (batch, block))
    assert packed.shape[-2:] == (batch, block)
    assert np.array_equal(unpack_array(packed, x.shape), x)
    assert int(np.abs(packed.astype(int)).sum()) == int(np.abs(x.astype(int)).sum())


def test_padding_is_zero_and_sized_to_whole_blocks():
    x = np.full((3, 5), 7, np.int32)
    packed = pack_array(x, (2, 4))
    assert packed.shape == (2, 2, 2, 4)
    plain = unpack_array(packed, padded_plain_shape(packed))
    assert plain.shape == (4, 8)
    assert np.array_equal(plain[:3, :5], x)
    assert not plain[3:].any() and not plain[:, 5:].any()
    assert round_up(5, 4) == 8 and round_up(8, 4) == 8 and round_up(1, 16) == 16


def test_packed_element_positions():
    x = np.arange(2 * 32 * 2 * 2).reshape(2, 32, 2, 2)
    p = pack_array(x, (1, 16))  # N' C' H W n c
    assert p[1, 1, 0, 1, 0, 3] == x[1, 16 + 3, 0, 1]
    w = np.arange(32 * 16).reshape(32, 16)
    q = pack_array(w, (16, 8))  # O' I' o i
    assert q[1, 1, 2, 5] == w[16 + 2, 8 + 5]


def test_pack_rejects_bad_ranks_and_blocks():
    with pytest.raises(ProgramError, match="rank >= 2 and two positive blocks"):
        pack_array(np.zeros(4), (1, 4))
    with pytest.raises(ProgramError, match="two positive blocks, not shape .* blocks \\(0, 4\\)"):
        pack_array(np.zeros((4, 4)), (0, 4))
    with pytest.raises(ProgramError, match="must have rank 6, not 4"):
        unpack_array(np.zeros((1, 1, 2, 2)), (1, 2, 3, 3))
    with pytest.raises(ProgramError, match="at least \\(3, 5\\) rows and columns, not \\(2, 2\\)"):
        unpack_array(np.zeros((1, 1, 2, 2)), (3, 5))


@pytest.mark.parametrize("buffer", ["inp", "wgt", "acc", "out"])
def test_buffer_entries_round_trip(buffer):
    cfg = preset("tiny")
    rows, cols = buffer_blocks(cfg, buffer)
    x = np.arange(rows * 3 * cols * 2).reshape(rows * 3, cols * 2)
    entries = pack(cfg, buffer, x)
    assert entries.shape == (3, 2, rows, cols)
    assert np.array_equal(entries[2, 1], x[2 * rows:, cols:])
    assert np.array_equal(unpack(cfg, buffer, entries), x)


def test_buffer_packing_refuses_partial_entries():
    cfg = preset("tiny")
    with pytest.raises(ProgramError, match="columns must be a multiple of 8, not 20"):
        pack(cfg, "wgt", np.zeros((8, 20)))
    with pytest.raises(ProgramError, match="rank 2, not 3"):
        pack(cfg, "inp", np.zeros((1, 8, 8)))
    with pytest.raises(ProgramError, match="buffer must be one of .*, not 'uop'"):
        pack(cfg, "uop", np.zeros((8, 8)))
    with pytest.raises(ProgramError, match="entries must have shape"):
        unpack(cfg, "out", np.zeros((1, 1, 3, 3)))


def test_gemm_on_packed_operands_equals_the_plain_gemm():
    rng = np.random.default_rng(1)
    x = rng.integers(-8, 8, (3, 10))            # 3 rows, K = 10 (padded to 12)
    w = rng.integers(-8, 8, (5, 10))            # 5 outputs (padded to 8)
    got = on_plain_operands(pack_array(x, (2, 4)), pack_array(w, (4, 4)), lambda a, b: a @ b.T)
    assert got.shape == packed_shape((3, 5), (2, 4))
    assert np.array_equal(unpack_array(got, (3, 5)), x @ w.T)
