"""Checks of Platform Designer scripts: components (``*_hw.tcl``) and systems (qsys-script).

A component's files exist; its top-level module is in them; every interface port is a port
of that module with the direction and width the component declares, and every module port
belongs to an interface. A system's device is the board's part; its instances are known IP
or components of the folder, with parameters those have; connections join existing
interfaces, each HPS bridge used is enabled and clocked; the FPGA-to-HPS width matches the
accelerator's bus where the bridge has that width; the register slave sits at the board
facts' address inside the lightweight bridge's window; the PLL makes the config's clock.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .commands import (QSYS_FILE_KINDS, QSYS_FILESET_KINDS, QSYS_INTERFACE_DIRECTIONS,
                       QSYS_INTERFACE_TYPES, QSYS_PORT_DIRECTIONS)
from .common import Project, as_int
from .ip_catalog import HPS_BRIDGE_ENABLES, HPS_WIDTH_CODES, QSYS_IP


@dataclass
class Component:
    name: str
    file: str
    module: "object | None" = None
    interfaces: dict = field(default_factory=dict)     # name -> (type, direction)
    ports: dict = field(default_factory=dict)          # port -> (interface, width)


@dataclass
class System:
    name: "str | None"
    file: str
    instances: dict = field(default_factory=dict)      # name -> type
    parameters: dict = field(default_factory=dict)     # (instance, parameter) -> value
    lines: dict = field(default_factory=dict)          # (instance, parameter) -> line
    connections: dict = field(default_factory=dict)    # "a.x/b.y" -> line
    exports: dict = field(default_factory=dict)        # exported name -> "inst.iface"


def read_component(project: Project, rel: str) -> "Component | None":
    script = project.script(rel, "qsys_component", referenced_by="Platform Designer's search")
    if script is None:
        return None
    comp = Component(None, rel)
    value = script.value
    top, files = None, []
    for call in script.calls:
        args = [value(w) for w in call.args]
        if call.name == "set_module_property" and args[0] == "NAME":
            comp.name = args[1]
        elif call.name == "set_module_property" and args[0] == "TOP_LEVEL_HDL_MODULE":
            top = args[1]
        elif call.name == "add_fileset" and args[1] not in QSYS_FILESET_KINDS:
            project.report(rel, call.line, call.name, f"fileset kind must be one of "
                           f"{sorted(QSYS_FILESET_KINDS)}, not {args[1]!r}")
        elif call.name == "add_fileset_file":
            files += _fileset_file(project, rel, call, args)
        elif call.name == "add_interface":
            _interface(project, rel, call, args, comp)
        elif call.name == "add_interface_port":
            _interface_port(project, rel, call, args, comp)
    modules = project.modules(files)
    comp.module = modules.get(top)
    if comp.module is None:
        project.report(rel, 0, "set_module_property", f"TOP_LEVEL_HDL_MODULE must be a "
                       f"module of the fileset's files {sorted(modules)}, not {top!r}")
        return comp
    _check_ports(project, rel, comp)
    return comp


def _fileset_file(project: Project, rel: str, call, args: list) -> list:
    if args[1] not in QSYS_FILE_KINDS:
        project.report(rel, call.line, call.name, f"file kind must be one of "
                       f"{sorted(QSYS_FILE_KINDS)}, not {args[1]!r}")
    if args[2] != "PATH":
        return []
    if not project.exists(args[3] or ""):
        project.report(rel, call.line, call.name, f"file must exist in the project folder, "
                       f"not missing: {args[3]}")
        return []
    return [args[3]] if args[1] in ("VERILOG", "SYSTEM_VERILOG") else []


def _interface(project: Project, rel: str, call, args: list, comp: Component) -> None:
    name, kind, direction = args
    if kind not in QSYS_INTERFACE_TYPES or direction not in QSYS_INTERFACE_DIRECTIONS:
        project.report(rel, call.line, call.name, f"interface type and direction must be "
                       f"one of {sorted(QSYS_INTERFACE_TYPES)} and "
                       f"{sorted(QSYS_INTERFACE_DIRECTIONS)}, not {kind!r} {direction!r}")
    comp.interfaces[name] = (kind, direction)


def _interface_port(project: Project, rel: str, call, args: list, comp: Component) -> None:
    iface, port, _, direction, width = args[:5]
    if iface not in comp.interfaces:
        project.report(rel, call.line, call.name, f"interface must be one added before "
                       f"{sorted(comp.interfaces)}, not {iface!r}")
    if direction not in QSYS_PORT_DIRECTIONS:
        project.report(rel, call.line, call.name, f"direction must be one of "
                       f"{sorted(QSYS_PORT_DIRECTIONS)}, not {direction!r}")
    comp.ports[port] = (iface, QSYS_PORT_DIRECTIONS.get(direction), as_int(width), call.line)


def _check_ports(project: Project, rel: str, comp: Component) -> None:
    module = comp.module
    for port, (_, direction, width, line) in comp.ports.items():
        actual = module.ports.get(port)
        if actual is None:
            project.report(rel, line, "add_interface_port", f"port must be one of module "
                           f"{module.name}'s ports, not {port!r}")
        elif (actual.direction, actual.width) != (direction, width):
            project.report(rel, line, "add_interface_port", f"port {port} must be "
                           f"{actual.direction} {actual.width} (as {module.file} declares), "
                           f"not {direction} {width}")
    for port in module.ports:
        if port not in comp.ports:
            project.report(rel, 0, "add_interface_port", f"port {port} of {module.name} "
                           f"must belong to an interface, not be left out")


def read_system(project: Project, rel: str, components: dict) -> "System | None":
    script = project.script(rel, "qsys", referenced_by="build.sh")
    if script is None:
        return None
    system = System(None, rel)
    for call in script.calls:
        args = [script.value(w) for w in call.args]
        handler = _SYSTEM_CALLS.get(call.name)
        if handler is not None:
            handler(project, system, components, call, args)
    _check_bridges(project, system, components)
    return system


def _device(project, system, components, call, args) -> None:
    if args[0] == "DEVICE" and args[1] != project.board.part:
        project.report(system.file, call.line, call.name, f"DEVICE must be "
                       f"{project.board.part}, not {args[1]!r}")


def _instance(project, system, components, call, args) -> None:
    name, kind = args[0], args[1]
    if kind not in QSYS_IP and kind not in components:
        project.report(system.file, call.line, call.name, f"instance type must be one of "
                       f"{sorted(QSYS_IP)} or a component of the folder "
                       f"{sorted(components)}, not {kind!r}")
    system.instances[name] = kind


def _parameter(project, system, components, call, args) -> None:
    inst, name, value = args
    kind = system.instances.get(inst)
    if kind is None:
        project.report(system.file, call.line, call.name, f"instance must be one added "
                       f"before {sorted(system.instances)}, not {inst!r}")
        return
    known = QSYS_IP[kind]["parameters"] if kind in QSYS_IP else set()
    if name not in known:
        project.report(system.file, call.line, call.name, f"parameter of {kind} must be "
                       f"one of its parameters, not {name!r}")
    system.parameters[(inst, name)] = value
    system.lines[(inst, name)] = call.line


def _connection(project, system, components, call, args) -> None:
    if None in args:
        return                              # an end the script computes: not checked
    ends = args[0].split("/") if len(args) == 1 else args
    for end in ends:
        _check_end(project, system, components, call, end)
    system.connections["/".join(ends)] = call.line


def _connection_parameter(project, system, components, call, args) -> None:
    link, name, value = args
    if link not in system.connections:
        project.report(system.file, call.line, call.name, f"connection must be one added "
                       f"before, not {link!r}")
    elif name == "baseAddress":
        _check_base(project, system, components, call, link, value)


def _export(project, system, components, call, args) -> None:
    if args[1] == "EXPORT_OF":
        _check_end(project, system, components, call, args[2])
        system.exports[args[0]] = args[2]


def _save(project, system, components, call, args) -> None:
    system.name = (args[0] or "").removesuffix(".qsys") if args else None


_SYSTEM_CALLS = {"set_project_property": _device, "add_instance": _instance,
                 "set_instance_parameter_value": _parameter, "add_connection": _connection,
                 "set_connection_parameter_value": _connection_parameter,
                 "set_interface_property": _export, "save_system": _save}


def interfaces_of(kind: str, components: dict) -> set:
    if kind in QSYS_IP:
        return QSYS_IP[kind]["interfaces"]
    comp = components.get(kind)
    return set(comp.interfaces) if comp is not None else set()


def _check_end(project, system, components, call, end: "str | None") -> None:
    inst, _, iface = (end or "").partition(".")
    if inst not in system.instances:
        project.report(system.file, call.line, call.name, f"instance must be one added "
                       f"before {sorted(system.instances)}, not {inst!r} (in {end})")
    elif iface not in interfaces_of(system.instances[inst], components):
        project.report(system.file, call.line, call.name, f"interface of {inst} "
                       f"({system.instances[inst]}) must be one of its interfaces, not "
                       f"{iface!r}")


def _check_base(project, system, components, call, link: str, text: str) -> None:
    soc = project.board.soc
    master, _, slave = link.partition("/")
    if master.partition(".")[2] != soc.reg_master:
        return
    base, size = soc.reg_window
    offset = as_int(text)
    if offset is None or base + offset != soc.reg_base:
        project.report(system.file, call.line, call.name, f"baseAddress on {link} must be "
                       f"{soc.reg_base - base:#x} (registers at {soc.reg_base:#x} in the "
                       f"board facts, bridge at {base:#x}), not {text!r}")
        return
    span = _slave_span(system, components, slave)
    if span is not None and (offset % span or offset + span > size):
        project.report(system.file, call.line, call.name, f"baseAddress on {link} must be "
                       f"aligned to the slave's {span:#x} bytes inside the bridge's "
                       f"{size:#x}, not {offset:#x}")


def _slave_span(system, components, slave: str) -> "int | None":
    inst, _, iface = slave.partition(".")
    comp = components.get(system.instances.get(inst))
    port = comp.module.ports.get(f"{iface}_awaddr") if comp and comp.module else None
    return 1 << port.width if port else None


def _check_bridges(project: Project, system: System, components: dict) -> None:
    used = {}
    for link, line in system.connections.items():
        for end in link.split("/"):
            inst, _, iface = end.partition(".")
            if system.instances.get(inst) == "altera_hps":
                used[(inst, iface)] = line
    for (inst, iface), line in used.items():
        if iface in HPS_BRIDGE_ENABLES:
            parameter, off = HPS_BRIDGE_ENABLES[iface]
            value = system.parameters.get((inst, parameter))
            if value is None or value in off:
                project.report(system.file, line, "add_connection", f"{inst} parameter "
                               f"{parameter} must enable {iface}, not be {value!r}")
        clock = iface.replace("_master", "_clock").replace("_slave", "_clock")
        if clock != iface and iface.endswith(("_master", "_slave")) and \
                (inst, clock) not in used:
            project.report(system.file, line, "add_connection", f"{inst}.{clock} must be "
                           f"connected to a clock to use {iface}, not left unconnected")
    _check_f2h_width(project, system, components)


def _check_f2h_width(project: Project, system: System, components: dict) -> None:
    for (inst, name), value in system.parameters.items():
        if name != "F2S_Width":
            continue
        line = system.lines[(inst, name)]
        if value not in HPS_WIDTH_CODES:
            project.report(system.file, line, "F2S_Width", f"F2S_Width must be one of "
                           f"{sorted(HPS_WIDTH_CODES)}, not {value!r}")
            continue
        width = HPS_WIDTH_CODES[value]
        for comp in components.values():
            data = comp.module.ports.get("m_axi_wdata") if comp.module else None
            if data and data.width in HPS_WIDTH_CODES.values() and data.width != width:
                project.report(system.file, line, "F2S_Width", f"FPGA-to-HPS width must "
                               f"be the accelerator's {data.width} bits, not {width}")
