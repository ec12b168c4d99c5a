"""ECP5 block-RAM output registers: flip-flops after a DP16KD moved into it (REGMODE OUTREG).

A DP16KD without its output register drives its read data 5.8 ns after the clock at speed
grade 6; whatever register takes that data must be reached in the 4 ns left of a 10 ns
cycle, and across the die it is not. The block RAM has an output register of its own
(``REGMODE_x = "OUTREG"``, clock enable ``OCEx``) that Yosys never uses: its memory mapper
has no output-register merge. The core already registers every SRAM read right after the
block RAM (exec pipe stage 3, hw/gemm_tree.py operands, the uop word), so those fabric
flip-flops are exactly the output register, one cycle after the read, same clock enable.

``pack_output_registers`` rewrites the synthesized JSON netlist between Yosys and nextpnr:
for each read side of a DP16KD whose every used data output feeds one TRELLIS_FF and
nothing else, with that side's clock, one clock enable, no reset and the block RAM's own
reset tied low, the flip-flops are removed, their outputs driven by the block RAM's data
pins and the side switched to OUTREG with the flip-flops' enable as OCE. Cycle behaviour
is unchanged (read data one cycle after the read, held while the enable is low); a side
that does not match is left as Yosys mapped it.

Only flip-flops whose outputs go straight into other cells' inputs without logic (a DSP,
another flip-flop, a block RAM or LUT RAM) move. A fabric register that feeds logic is
a relay the placer puts beside that logic; moved into the block RAM, the route from the
block RAM's fixed site to the logic joins the logic's path (on the ULX3S-85F the ALU's
adders behind the accumulator read became the slowest paths: docs/fpga.md). Such a
register gains from OUTREG only with a second register behind it (one more cycle).

In the 36-bit pseudo-dual-port mapping (``DATA_WIDTH_B`` = 36) all 36 outputs belong to
the read port B: both REGMODEs and both OCEs are set, which needs CLKA and CLKB on one net.
"""
from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import asdict, dataclass
from pathlib import Path

from vtalab.spec._atomic import write_text_atomic

from .errors import FpgaError

BRAM, FF = "DP16KD", "TRELLIS_FF"
#: cells whose inputs a moved register may feed: no logic between the block RAM and them
PLAIN_SINKS = frozenset({"MULT18X18D", FF, BRAM, "TRELLIS_DPR16X4"})
DATA_PINS = 18
LOW, HIGH = "0", "1"


@dataclass
class OutregStats:
    brams: int = 0            # block RAMs with at least one side in OUTREG
    registers: int = 0        # flip-flops moved into them
    sides_left: int = 0       # used read sides that did not qualify

    def to_dict(self) -> dict:
        return asdict(self)


def pack_output_registers(netlist: dict, top: str = "top") -> OutregStats:
    """Rewrite ``netlist`` (Yosys JSON, module ``top``) in place; returns what moved."""
    try:
        module = netlist["modules"][top]
    except KeyError:
        raise FpgaError(f"netlist must have module {top!r}, not "
                        f"{sorted(netlist.get('modules', {}))}") from None
    cells = module["cells"]
    loads = _loads(module)
    sink_types = {bit: {cells[c]["type"] if c else "port" for c, _ in sinks}
                  for bit, sinks in loads.items()}
    stats = OutregStats()
    for name in [n for n, c in cells.items() if c["type"] == BRAM]:
        packed = 0
        for side in _read_sides(cells[name]):
            moved = _pack_side(cells, loads, sink_types, cells[name], side)
            if moved is None:
                stats.sides_left += 1
            packed += moved or 0
        if packed:
            stats.brams += 1
            stats.registers += packed
    return stats


def pack_file(path: "str | Path", top: str = "top") -> OutregStats:
    """``pack_output_registers`` on a netlist file, written back atomically."""
    path = Path(path)
    try:
        netlist = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise FpgaError(f"netlist {path} must be readable JSON, not: {exc}") from None
    stats = pack_output_registers(netlist, top)
    if stats.registers:
        write_text_atomic(path, json.dumps(netlist))
    return stats


@dataclass(frozen=True)
class _Side:
    pins: tuple                # data output pin names
    letters: tuple             # "A"/"B": whose REGMODE/OCE/clock/reset this side uses


def _read_sides(bram: dict) -> list:
    pdp = _int_param(bram, "DATA_WIDTH_B") == 36
    if pdp:
        pins = tuple(f"DO{x}{i}" for x in "AB" for i in range(DATA_PINS))
        return [_Side(pins, ("A", "B"))]
    return [_Side(tuple(f"DO{x}{i}" for i in range(DATA_PINS)), (x,)) for x in "AB"]


def _pack_side(cells, loads, sink_types, bram, side) -> "int | None":
    """Flip-flops moved into ``side`` (0 if it reads nothing), None if it does not qualify."""
    conn = bram["connections"]
    used = [(pin, conn[pin][0]) for pin in side.pins
            if pin in conn and isinstance(conn[pin][0], int) and loads.get(conn[pin][0])]
    if not used:
        return 0
    clocks = {tuple(conn.get(f"CLK{x}", [])) for x in side.letters}
    if len(clocks) != 1 or not _bram_side_plain(bram, side):
        return None
    clock = clocks.pop()
    flops, enables = [], set()
    for pin, bit in used:
        sinks = loads[bit]
        if len(sinks) != 1 or sinks[0][1] != "DI" or cells[sinks[0][0]]["type"] != FF:
            return None
        ff_name = sinks[0][0]
        if not sink_types.get(cells[ff_name]["connections"]["Q"][0], set()) <= PLAIN_SINKS:
            return None
        enable = _plain_ff_enable(cells[ff_name], clock)
        if enable is None:
            return None
        enables.add(enable)
        flops.append((pin, ff_name))
    if len(enables) != 1:
        return None
    enable = list(enables.pop())
    for pin, ff_name in flops:
        conn[pin] = list(cells.pop(ff_name)["connections"]["Q"])
    for x in side.letters:
        bram["parameters"][f"REGMODE_{x}"] = "OUTREG"
        conn[f"OCE{x}"] = enable
    return len(flops)


def _bram_side_plain(bram: dict, side) -> bool:
    """The side's clock is not inverted, its reset is tied low, OCE is used as is."""
    params, conn = bram["parameters"], bram["connections"]
    for x in side.letters:
        if params.get(f"CLK{x}MUX", f"CLK{x}") != f"CLK{x}":
            return False
        if params.get(f"OCE{x}MUX", f"OCE{x}") != f"OCE{x}":
            return False
        if conn.get(f"RST{x}", [LOW]) != [LOW] or params.get(f"REGMODE_{x}", "NOREG") != "NOREG":
            return False
    return True


def _plain_ff_enable(ff: dict, clock: tuple) -> "tuple | None":
    """The flip-flop's clock enable as a connection (``("1",)`` if always enabled), or
    None if it has another clock, an inverted clock or enable, or a reset."""
    params, conn = ff["parameters"], ff["connections"]
    if tuple(conn.get("CLK", [])) != clock or params.get("CLKMUX", "CLK") != "CLK":
        return None
    if conn.get("LSR", [LOW]) != [LOW]:
        return None
    cemux = params.get("CEMUX", "CE").strip()
    if cemux == "1" or (cemux == "CE" and conn.get("CE", [HIGH]) == [HIGH]):
        return (HIGH,)
    if cemux == "CE":
        return tuple(conn["CE"])
    return None


def _loads(module: dict) -> dict:
    """bit -> [(cell, input port)], the module's output ports counted as loads."""
    loads = defaultdict(list)
    for name, cell in module["cells"].items():
        for port, bits in cell["connections"].items():
            if cell["port_directions"].get(port) == "input":
                for bit in bits:
                    if isinstance(bit, int):
                        loads[bit].append((name, port))
    for name, port in module.get("ports", {}).items():
        if port["direction"] != "input":
            for bit in port["bits"]:
                if isinstance(bit, int):
                    loads[bit].append(("", name))
    return loads


def _int_param(cell: dict, name: str) -> int:
    value = cell["parameters"].get(name, "0")
    if isinstance(value, int):
        return value
    text = value.strip()
    return int(text, 2) if text and set(text) <= {"0", "1"} else int(text or 0)
