"""Checks of an XDC file: it places only the block design's ports, on the board's pins
(amaranth-boards) with their I/O standard, with properties ports have; a clock's period is
its pin's oscillator's."""
from __future__ import annotations

from .commands import XDC_PORT_PROPERTIES
from .common import Project, tcl_pairs

RETURNS = {"get_ports": lambda args: " ".join(args)}


def check_xdc(project: Project, rel: str, bd_ports: dict, referenced_by: str) -> dict:
    """port -> site of the ports the XDC file ``rel`` places."""
    script = project.script(rel, "xdc", RETURNS, referenced_by=referenced_by)
    if script is None:
        return {}
    placed, clocks = {}, []
    for call in script.calls:
        if call.name == "set_property":
            placed.update(_placement(project, script, rel, call, bd_ports))
        elif call.name == "create_clock":
            clocks.append(call)
    for call in clocks:
        period = script.value(call.options["-period"])
        for word in call.args:
            port = script.value(word)
            project.check_clock(rel, call.line, period, port, placed.get(port))
    return placed


def _placement(project: Project, script, rel: str, call, bd_ports: dict) -> dict:
    value = script.value
    if "-dict" in call.options:
        pairs = tcl_pairs(value(call.options["-dict"]) or "") or []
        ports = value(call.args[0]) if call.args else None
    elif len(call.args) == 3:
        pairs, ports = [(value(call.args[0]), value(call.args[1]))], value(call.args[2])
    else:
        return {}
    props = dict(pairs)
    for name in props:
        if name not in XDC_PORT_PROPERTIES:
            project.report(rel, call.line, call.name, f"port property must be one of "
                           f"{sorted(XDC_PORT_PROPERTIES)}, not {name!r}")
    placed = {}
    for port in (ports or "").split():
        if port not in bd_ports:
            project.report(rel, call.line, call.name, f"port must be one of the block "
                           f"design's ports {sorted(bd_ports)}, not {port!r}")
        if "PACKAGE_PIN" in props:
            project.check_pin(rel, call.line, call.name, props["PACKAGE_PIN"],
                              props.get("IOSTANDARD"))
            placed[port] = props["PACKAGE_PIN"]
    return placed
