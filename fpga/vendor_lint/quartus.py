"""Checks of a generated Quartus project (Cyclone V SoC): build.sh, the Platform Designer
scripts (qsys.py), build.tcl, the SDC files and the top level's instance of the system.

The run script's steps name existing scripts, generate the systems the Qsys scripts save
and convert the .sof the project writes; ``load_package flow`` comes before
``execute_module``, whose tools run in order (map, fit, asm; sta after fit); the device is
the board's part; the project's files exist or are what qsys-generate makes; the top-level
entity is a module of them; every pin assignment names a top-level port bit and a pin of the
board (amaranth-boards) with its I/O standard, and every top-level port bit is placed or
left to the HPS DDR pin script; the top connects every signal of the system's exported
interfaces, the DDR ones as wide as the HPS parameters make them; create_clock's period is
the board oscillator's; the PLL turns that oscillator into the config's clock.
"""
from __future__ import annotations

import re

from .commands import QSF_FILE_NAMES, QSF_GLOBAL_NAMES, QSF_INSTANCE_NAMES, QUARTUS_TOOLS
from .common import Project, as_int
from .ip_catalog import HPS_MEMORY_WIDTHS, QSYS_IP
from .qsys import read_component, read_system

_PORT_BIT = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:\[(\d+)\])?$")
_TOOL_ORDER = ("map", "fit", "asm")


def lint_quartus(project: Project) -> None:
    steps = _run_steps(project)
    components = {}
    for path in sorted(project.root.glob("*_hw.tcl")):
        comp = read_component(project, path.name)
        if comp is not None and comp.name:
            components[comp.name] = comp
    systems = {}
    for rel in steps["qsys"]:
        system = read_system(project, rel, components)
        if system is not None and system.name:
            systems[system.name] = system
    for line, name in steps["generate"]:
        if name not in systems:
            project.report("build.sh", line, "qsys-generate", f"system must be one a Qsys "
                           f"script saves {sorted(systems)}, not {name!r}")
    if steps["tcl"] is not None:
        _QuartusProject(project, steps, systems).check()


def _run_steps(project: Project) -> dict:
    steps = {"qsys": [], "generate": [], "tcl": None, "sof": None}
    for line, argv in project.shell_commands():
        tool, args = (argv[0], argv[1:]) if argv else ("", [])
        if tool == "qsys-script":
            steps["qsys"] += [a.split("=", 1)[1] for a in args if a.startswith("--script=")]
        elif tool == "qsys-generate" and args:
            steps["generate"].append((line, args[0].removesuffix(".qsys")))
        elif tool == "quartus_sh" and "-t" in args[:-1]:
            steps["tcl"] = args[args.index("-t") + 1]
        elif tool == "quartus_cpf":
            sofs = [a for a in args if a.endswith(".sof")]
            steps["sof"] = (line, sofs[0]) if sofs else None
    if steps["tcl"] is None:
        project.report("build.sh", 0, "-", "build.sh must run quartus_sh -t <script>, not "
                       "leave it out")
    return steps


class _QuartusProject:
    def __init__(self, project: Project, steps: dict, systems: dict):
        self.project, self.steps, self.systems = project, steps, systems
        self.tcl = project.script(steps["tcl"], "quartus", referenced_by="build.sh")
        self.file = steps["tcl"]
        self.globals = {}               # assignment name -> [(value, call)]
        self.locations = {}             # port bit -> (site, call)
        self.standards = {}             # port bit -> I/O standard
        self.sourced = []

    def bad(self, call, message: str) -> None:
        self.project.report(self.file, call.line, call.name, message)

    def check(self) -> None:
        if self.tcl is None:
            return
        self._walk()
        top = self._top()
        if top is not None:
            self._check_pins(top)
            self._check_system_instances(top)
            self._check_clocks(top)

    def _walk(self) -> None:
        packages, tools, value = set(), [], self.tcl.value
        for call in self.tcl.calls:
            if call.name == "load_package":
                packages.add(value(call.args[0]))
            elif call.name == "project_new":
                self._check_sof(call, value(call.args[0]))
            elif call.name == "set_global_assignment":
                self._global(call, value(call.options["-name"]),
                             value(call.args[0]) if call.args else None)
            elif call.name == "set_location_assignment":
                self._location(call, value(call.args[0]) if call.args else None,
                               value(call.options["-to"]))
            elif call.name == "set_instance_assignment":
                self._instance_assignment(call)
            elif call.name == "execute_module":
                if "flow" not in packages:
                    self.bad(call, "execute_module must follow load_package flow, not "
                                   "come before it")
                tools.append((value(call.options["-tool"]), call))
            elif call.name == "source":
                self._source(call, value(call.args[0]) if call.args else None)
        self._check_tools(tools)

    def _check_sof(self, call, name: "str | None") -> None:
        sof = self.steps["sof"]
        if sof is not None and sof[1] != f"output_files/{name}.sof":
            self.project.report("build.sh", sof[0], "quartus_cpf", f"the .sof must be "
                                f"output_files/{name}.sof (project {name}), not {sof[1]!r}")

    def _generated(self, rel: str) -> bool:
        return any(rel.startswith(f"{name}/synthesis/") for name in self.systems)

    def _global(self, call, name: "str | None", value: "str | None") -> None:
        if name not in QSF_GLOBAL_NAMES:
            self.bad(call, f"-name must be a known global assignment, not {name!r}")
            return
        self.globals.setdefault(name, []).append((value, call))
        board = self.project.board
        if name == "DEVICE" and value != board.part:
            self.bad(call, f"DEVICE must be {board.part}, not {value!r}")
        elif name in QSF_FILE_NAMES and not (self.project.exists(value or "")
                                             or self._generated(value or "")):
            self.bad(call, f"{name} must exist in the project folder or be made by "
                           f"qsys-generate, not missing: {value}")

    def _location(self, call, value: "str | None", port: "str | None") -> None:
        if not (value or "").startswith("PIN_"):
            self.bad(call, f"location must be PIN_<pin>, not {value!r}")
            return
        self.locations[port] = (value[len("PIN_"):], call)

    def _instance_assignment(self, call) -> None:
        name = self.tcl.value(call.options["-name"])
        if name not in QSF_INSTANCE_NAMES:
            self.bad(call, f"-name must be a known instance assignment, not {name!r}")
        elif name == "IO_STANDARD":
            self.standards[self.tcl.value(call.options.get("-to"))] = \
                self.tcl.value(call.args[0]) if call.args else None

    def _source(self, call, rel: "str | None") -> None:
        if not (self.project.exists(rel or "") or self._generated(rel or "")):
            self.bad(call, f"sourced file must exist or be made by qsys-generate, not "
                           f"missing: {rel}")
        self.sourced.append(rel or "")

    def _check_tools(self, tools: list) -> None:
        seen = []
        for tool, call in tools:
            if tool not in QUARTUS_TOOLS:
                self.bad(call, f"-tool must be one of {sorted(QUARTUS_TOOLS)}, not {tool!r}")
                continue
            later = _TOOL_ORDER[_TOOL_ORDER.index(tool) + 1:] if tool in _TOOL_ORDER else ()
            if any(step in seen for step in later) or (tool == "sta" and "fit" not in seen):
                self.bad(call, f"{tool} must run after {' and '.join(seen) or 'nothing'} in "
                               f"the order map, fit, asm (sta after fit), not out of order")
            seen.append(tool)

    # ---- the top level --------------------------------------------------------------
    def _top(self):
        names = [v for v, _ in self.globals.get("TOP_LEVEL_ENTITY", [])]
        files = [v for v, _ in self.globals.get("VERILOG_FILE", [])]
        self.modules = self.project.modules([f for f in files if f])
        if len(names) != 1 or names[0] not in self.modules:
            self.project.report(self.file, 0, "set_global_assignment", f"TOP_LEVEL_ENTITY "
                                f"must name one module of the VERILOG_FILEs "
                                f"{sorted(self.modules)}, not {names}")
            return None
        return self.modules[names[0]]

    def _check_pins(self, top) -> None:
        for port, (site, call) in self.locations.items():
            match = _PORT_BIT.match(port or "")
            actual = top.ports.get(match.group(1)) if match else None
            index = int(match.group(2)) if match and match.group(2) else 0
            if actual is None or index >= actual.width:
                self.bad(call, f"-to must be a port bit of {top.name} "
                               f"{sorted(top.ports)}, not {port!r}")
            self.project.check_pin(self.file, call.line, call.name, site,
                                   self.standards.get(port))
        hps_pins = {expr for inst in top.instances(self.systems) for sig, expr in
                    inst.connections.items() if sig.startswith("memory_")}
        sourced = any("pin_assignments" in rel for rel in self.sourced)
        for port in top.ports.values():
            if port.name in hps_pins and sourced:
                continue
            bits = [port.name] if port.width == 1 else [f"{port.name}[{i}]"
                                                        for i in range(port.width)]
            missing = [bit for bit in bits if bit not in self.locations]
            if missing:
                self.project.report(self.file, 0, "set_location_assignment", f"every "
                                    f"top-level port bit must have a pin, not {missing[0]} "
                                    f"(of {top.name})")

    def _check_system_instances(self, top) -> None:
        for inst in top.instances(self.systems):
            system = self.systems[inst.module]
            expected = {}
            for export, target in system.exports.items():
                kind = system.instances.get(target.partition(".")[0])
                signals = QSYS_IP.get(kind, {}).get("exports", {}).get(target.partition(".")[2])
                for signal in signals or ():
                    expected[f"{export}_{signal}"] = (target, signal)
            for name in inst.connections:
                if name not in expected:
                    self.project.report(top.file, inst.line, inst.module, f"port must be one "
                                        f"of {inst.module}'s exports {sorted(expected)}, not "
                                        f"{name!r}")
            for name, (target, signal) in expected.items():
                if name not in inst.connections:
                    self.project.report(top.file, inst.line, inst.module, f"{name} must be "
                                        f"connected (export of {target}), not left open")
                else:
                    self._check_memory_width(top, system, target, signal,
                                             inst.connections[name], inst)

    def _check_memory_width(self, top, system, target, signal, expr, inst) -> None:
        if signal not in HPS_MEMORY_WIDTHS or expr not in top.ports:
            return
        parameter, divisor = HPS_MEMORY_WIDTHS[signal]
        value = as_int(system.parameters.get((target.partition(".")[0], parameter)))
        if value is not None and top.ports[expr].width != value // divisor:
            self.project.report(top.file, inst.line, inst.module, f"{expr} must be "
                                f"{value // divisor} bits ({parameter} {value}), not "
                                f"{top.ports[expr].width}")

    # ---- clocks ---------------------------------------------------------------------
    def _check_clocks(self, top) -> None:
        for rel, call in self.globals.get("SDC_FILE", []):
            self._check_sdc(rel, top)
        for system in self.systems.values():
            self._check_pll(system)

    def _check_sdc(self, rel: "str | None", top) -> None:
        sdc = self.project.script(rel or "", "sdc", {"get_ports": " ".join},
                                  referenced_by=self.file) if self.project.exists(rel or "") \
            else None
        if sdc is None:
            return
        for call in sdc.find("create_clock"):
            for word in call.args:
                port = sdc.value(word)
                if port not in top.ports:
                    self.project.report(rel, call.line, call.name, f"clock port must be a "
                                        f"port of {top.name}, not {port!r}")
                    continue
                site = self.locations.get(port, (None,))[0]
                self.project.check_clock(rel, call.line, sdc.value(call.options["-period"]),
                                         port, site)
        plls = any(kind == "altera_pll" for s in self.systems.values()
                   for kind in s.instances.values())
        if plls and not sdc.find("derive_pll_clocks"):
            self.project.report(rel, 0, "derive_pll_clocks", "derive_pll_clocks must "
                                "constrain the PLL's outputs, not be missing")

    def _check_pll(self, system) -> None:
        """The PLL makes clock_mhz from the board's oscillator (and says so)."""
        wanted = {("altera_pll", "gui_output_clock_frequency0"): self.project.cfg.clock_mhz,
                  ("altera_pll", "gui_reference_clock_frequency"): self._board_clock_mhz(),
                  ("clock_source", "clockFrequency"): self._board_clock_mhz() * 1e6}
        for inst, kind in system.instances.items():
            for (ip, parameter), want in wanted.items():
                if ip == kind:
                    key = (inst, parameter)
                    self.project.check_mhz(system.file, system.lines.get(key, 0), inst,
                                           f"{parameter} of {inst}",
                                           system.parameters.get(key), want)

    def _board_clock_mhz(self) -> float:
        """The oscillator on the fabric clock pin, as amaranth-boards gives it."""
        soc = self.project.board.soc
        site = self.locations.get(soc.fabric_clock, (None,))[0]
        pin = self.project.pins().get(site)
        return pin.clock_hz / 1e6 if pin is not None and pin.clock_hz else 0.0
