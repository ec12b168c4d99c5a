"""The DRAM allocator and the Device protocol's memory side (fsim backend)."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from vtalab.runtime import (Buffer, Device, DramAllocator, OutOfDeviceMemory, backend_names,
                            open_device, register_backend)
from vtalab.runtime import device as device_module
from vtalab.runtime.device import default_alignment
from vtalab.spec import preset
from vtalab.spec.errors import ConfigError, DeviceError


# ---- allocator ----------------------------------------------------------------------------

def test_first_fit_reuses_the_first_hole():
    heap = DramAllocator(4096, align=64)
    a, b, c = heap.alloc(100), heap.alloc(100), heap.alloc(100)
    assert (a, b, c) == (0, 128, 256)
    heap.free(b)
    assert heap.alloc(64) == 128          # first hole that fits
    assert heap.alloc(200) == 384         # the 64-byte rest of the hole is too small


def test_alignment_per_call_and_base():
    heap = DramAllocator(1 << 16, base=0x1000, align=16)
    assert heap.alloc(1) == 0x1000
    assert heap.alloc(1) == 0x1010
    assert heap.alloc(10, align=4096) == 0x2000
    assert heap.alloc(1) == 0x1020        # the alignment gap stays usable


def test_free_coalesces_neighbours():
    heap = DramAllocator(1024, align=1)
    blocks = [heap.alloc(256) for _ in range(4)]
    for addr in (blocks[0], blocks[2], blocks[1], blocks[3]):
        heap.free(addr)
    assert heap.free_blocks() == [(0, 1024)]
    assert heap.alloc(1024) == 0


def test_out_of_memory_names_sizes():
    heap = DramAllocator(1024, align=1)
    heap.alloc(600)
    with pytest.raises(OutOfDeviceMemory, match=r"700 bytes.*largest one \(424 bytes; 424 of "
                                                r"1024 bytes free\)"):
        heap.alloc(700)
    assert issubclass(OutOfDeviceMemory, DeviceError)


@pytest.mark.parametrize("kwargs,match", [
    (dict(nbytes=0), "nbytes must be a positive integer, not 0"),
    (dict(nbytes=-5), "nbytes must be a positive integer, not -5"),
    (dict(nbytes=8, align=3), "align must be a power of two, not 3"),
    (dict(nbytes=8, align=0), "align must be a positive integer, not 0"),
])
def test_bad_requests(kwargs, match):
    with pytest.raises(DeviceError, match=match):
        DramAllocator(1024).alloc(**kwargs)


def test_double_free_and_unknown_address():
    heap = DramAllocator(1024)
    addr = heap.alloc(10)
    heap.free(addr)
    with pytest.raises(DeviceError, match="start of a live allocation, not 0x0"):
        heap.free(addr)
    with pytest.raises(DeviceError, match="not 0x7"):
        heap.free(7)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.integers(1, 300), st.sampled_from([1, 8, 64])),
                max_size=40))
def test_random_alloc_free_never_overlaps(ops):
    heap = DramAllocator(4096, align=8)
    live = {}
    for is_free, size, align in ops:
        if is_free and live:
            addr = sorted(live)[size % len(live)]
            heap.free(addr)
            del live[addr]
            continue
        try:
            addr = heap.alloc(size, align)
        except OutOfDeviceMemory:
            continue
        assert addr % align == 0 and addr + size <= 4096
        assert all(addr + size <= a or a + n <= addr for a, n in live.items())
        live[addr] = size
    assert heap.used_bytes == sum(live.values())
    for addr in list(live):
        heap.free(addr)
    assert heap.free_blocks() == [(0, 4096)]


# ---- device memory ------------------------------------------------------------------------

@pytest.fixture
def tiny_dev():
    with open_device("fsim", preset("tiny"), dram_bytes=1 << 20) as dev:
        yield dev


def test_open_device_gives_the_protocol(tiny_dev):
    assert isinstance(tiny_dev, Device)
    assert tiny_dev.cfg == preset("tiny") and tiny_dev.backend == "fsim"
    assert "fsim" in backend_names()


def test_open_device_accepts_a_preset_name():
    with open_device("fsim", "tiny", dram_bytes=4096) as dev:
        assert dev.cfg.name == "tiny"


def test_unknown_backend_and_config():
    with pytest.raises(DeviceError, match=r"backend must be one of \[.*'fsim'.*\], not 'fpga9'"):
        open_device("fpga9", preset("tiny"))
    with pytest.raises(ConfigError, match="nosuchpreset"):
        open_device("fsim", "nosuchpreset")


def test_registered_backend_is_opened(monkeypatch):
    monkeypatch.setattr(device_module, "_BACKENDS", dict(device_module._BACKENDS))
    opened = []
    register_backend("recording", lambda cfg, **kw: opened.append((cfg, kw)) or "device")
    assert open_device("recording", "tiny", speed=3) == "device"
    assert opened == [(preset("tiny"), {"speed": 3})]


def test_buffers_are_aligned_for_every_entry_kind(tiny_dev):
    align = default_alignment(tiny_dev.cfg)
    buffers = [tiny_dev.alloc(n) for n in (1, 100, 3)]
    assert all(buf.addr % align == 0 for buf in buffers)
    assert all(align % tiny_dev.cfg.entry_bytes(kind) == 0
               for kind in ("uop", "inp", "wgt", "acc", "out"))


def test_copy_in_and_out_at_offsets(tiny_dev):
    buf = tiny_dev.alloc(64)
    tiny_dev.copy_in(buf, np.arange(16, dtype=np.int32))
    tiny_dev.copy_in(buf, b"\xff\xff", offset=4)
    out = tiny_dev.copy_out(buf, np.int32)
    assert out.tolist() == [0, 0xffff] + list(range(2, 16))
    assert tiny_dev.copy_out(buf, np.int16, (2, 2), offset=8).tolist() == [[2, 0], [3, 0]]
    big_endian = np.array([1, 2], dtype=">i4")
    tiny_dev.copy_in(buf, big_endian)
    assert tiny_dev.copy_out(buf, np.int32, 2).tolist() == [1, 2]


def test_copy_bounds_are_checked(tiny_dev):
    buf = tiny_dev.alloc(16)
    with pytest.raises(DeviceError, match="copy of 20 bytes at offset 0 must fit in the "
                                          "buffer of 16 bytes"):
        tiny_dev.copy_in(buf, bytes(20))
    with pytest.raises(DeviceError, match="at offset 12 .* not end at 20"):
        tiny_dev.copy_out(buf, np.int32, 2, offset=12)
    with pytest.raises(DeviceError, match="offset must be a non-negative integer, not -1"):
        tiny_dev.copy_in(buf, b"1", offset=-1)
    with pytest.raises(DeviceError, match="data must be bytes or a numpy array, not list"):
        tiny_dev.copy_in(buf, [1, 2])


def test_freed_and_foreign_buffers_are_refused(tiny_dev):
    buf = tiny_dev.alloc(32)
    buf.free()
    with pytest.raises(DeviceError, match="buffer must be live, not freed"):
        tiny_dev.free(buf)
    with pytest.raises(DeviceError, match="buffer must be live"):
        tiny_dev.copy_out(buf)
    with open_device("fsim", "tiny", dram_bytes=4096) as other:
        foreign = other.alloc(32)
        with pytest.raises(DeviceError, match="buffer must belong to this fsim device"):
            tiny_dev.copy_in(foreign, b"x")
    with pytest.raises(DeviceError, match="buffer must be a Buffer from alloc"):
        tiny_dev.free(0)


def test_out_of_device_memory(tiny_dev):
    with pytest.raises(OutOfDeviceMemory, match=f"allocation of {2 << 20} bytes"):
        tiny_dev.alloc(2 << 20)


def test_closed_device_refuses_everything():
    dev = open_device("fsim", "tiny", dram_bytes=4096)
    buf = dev.alloc(16)
    with dev:
        pass
    assert dev.closed
    for call in (lambda: dev.alloc(1), lambda: dev.copy_out(buf), lambda: dev.run(0, 1)):
        with pytest.raises(DeviceError, match="fsim device must be open, not closed"):
            call()
    dev.close()                                         # closing twice is harmless


@pytest.mark.parametrize("addr,count,match", [
    (8, 1, "insn_addr must be a non-negative multiple of 16, not 8"),
    (0, 0, "insn_count must be a positive integer, not 0"),
    (4080, 2, "must lie inside DRAM"),
])
def test_run_arguments_are_checked(addr, count, match):
    with open_device("fsim", "tiny", dram_bytes=4096) as dev:
        with pytest.raises(DeviceError, match=match):
            dev.run(addr, count)


def test_buffer_helpers_round_trip(tiny_dev):
    buf = tiny_dev.alloc(8)
    assert isinstance(buf, Buffer) and buf.nbytes == 8
    buf.write(np.array([7, -7], dtype=np.int32))
    assert buf.read(np.int32).tolist() == [7, -7]
