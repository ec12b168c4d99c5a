"""Checks of a generated Vivado project (Zynq boards): build.sh, build.tcl and its XDC files.

The run script must source an existing Tcl script; the project's part is the board's; the
files it adds exist in the folder; module cells reference modules the added Verilog
defines, and the pins and interfaces the block design connects exist on them (an interface
``x`` is the ports named ``x_*``, as Vivado infers it); IP VLNVs and automation rules are
well formed and known; every PS7 port used is enabled by its CONFIG.PCW_* property, whose
names are the PS7's; FCLK_CLK0, the automation clocks and the wrapper's FREQ_HZ are the
config's clock; the register segment is where the board facts put it, inside M_AXI_GP0's
window, as large as the slave's address bits; the XDC places only block-design ports, on
the board's pins (amaranth-boards) with their I/O standard, and places every one of them.
"""
from __future__ import annotations

import re

from vtalab.spec import regs as regmap

from .common import Project, as_int, size_bytes, tcl_pairs
from .ip_catalog import (AUTOMATION_RULES, KNOWN_IP, PS7_FCLK0_MHZ, PS7_GP0_WINDOW,
                         PS7_HP_WIDTHS, PS7_PORT_ENABLES, PS7_PROPERTIES, RULE, VLNV)
from .xdc import check_xdc

_PATTERN = {name: (lambda args: " ".join(args)) for name in (
    "get_bd_pins", "get_bd_intf_pins", "get_bd_ports", "get_bd_cells", "get_files")}
RETURNS = {**_PATTERN, "create_bd_cell": lambda args: args[-1] if args else None}
_STEPS = {"opt_design", "place_design", "phys_opt_design", "route_design", "write_bitstream"}
_FREQ_HZ = re.compile(r"FREQ_HZ\s+(\d+)")


def lint_vivado(project: Project) -> None:
    tcl_name = _run_script(project)
    if tcl_name is None:
        return
    tcl = project.script(tcl_name, "vivado", RETURNS, referenced_by="build.sh")
    if tcl is not None:
        _Design(project, tcl).check()


def _run_script(project: Project) -> "str | None":
    for line, argv in project.shell_commands():
        if argv and argv[0] == "vivado":
            if "-source" in argv[:-1]:
                return argv[argv.index("-source") + 1]
            project.report("build.sh", line, "vivado", "vivado must be given -source "
                           "<script>, not run without one")
            return None
    project.report("build.sh", 0, "-", "build.sh must run vivado, not leave it out")
    return None


class _Design:
    """The block design build.tcl describes, checked call by call."""

    def __init__(self, project: Project, tcl):
        self.project, self.tcl, self.file = project, tcl, tcl.file
        self.sources, self.constraints = [], []
        self.cells = {}                 # name -> ("module", module) | ("ip", vlnv)
        self.bd_ports = {}              # name -> line of create_bd_port
        self.ps7 = {}                   # PCW property -> value
        self.ps7_lines = {}             # PCW property -> line that sets it
        self.ps7_used = {}              # PS7 port -> line
        self.links = {}                 # slave interface "/cell/intf" -> master
        self.bd = None
        self.offset = None              # of the register segment, once set
        self._modules = None

    def bad(self, call, message: str) -> None:
        self.project.report(self.file, call.line, call.name, message)

    def value(self, call, option: str) -> "str | None":
        word = call.options.get(option)
        return self.tcl.value(word) if word not in (None, True) else None

    @property
    def modules(self) -> dict:
        if self._modules is None:
            self._modules = self.project.modules([f for f in self.sources if f.endswith(".v")])
        return self._modules

    def check(self) -> None:
        for call in self.tcl.calls:
            handler = getattr(self, "_" + call.name, None)
            if handler is not None:
                handler(call)
        self._check_ps7()
        self._check_wrapper_clock()
        placed = {}
        for rel in self.constraints:
            placed.update(check_xdc(self.project, rel, self.bd_ports, self.file))
        for port, line in self.bd_ports.items():
            if port not in placed:
                self.project.report(self.file, line, "create_bd_port", f"port {port} must "
                                    f"have a PACKAGE_PIN in the XDC, not none (write_bitstream "
                                    f"refuses unplaced ports)")

    # ---- project and files -------------------------------------------------------------
    def _create_project(self, call) -> None:
        part = self.value(call, "-part")
        if part != self.project.board.part:
            self.bad(call, f"-part must be {self.project.board.part} "
                           f"({self.project.board.title}), not {part!r}")

    def _add_files(self, call) -> None:
        fileset = self.value(call, "-fileset") or "sources_1"
        for word in call.args:
            for path in self.tcl.words_of(word) or []:
                rel = self.project.relative(path)
                if not self.project.exists(rel):
                    self.bad(call, f"file must exist in the project folder, not missing: {rel}")
                elif fileset.startswith("constrs"):
                    self.constraints.append(rel)
                else:
                    self.sources.append(rel)

    # ---- block design ------------------------------------------------------------------
    def _create_bd_design(self, call) -> None:
        self.bd = self.tcl.value(call.args[0])

    def _create_bd_cell(self, call) -> None:
        name = self.tcl.value(call.args[0])
        kind = (self.value(call, "-type") or "ip").lower()
        if kind == "module":
            module = self.value(call, "-reference")
            if module not in self.modules:
                named = sorted(m for m in self.modules if not m.startswith("\\"))
                self.bad(call, f"-reference must name a module of the added sources "
                               f"{named}, not {module!r}")
            self.cells[name] = ("module", module)
        elif kind == "ip":
            vlnv = self.value(call, "-vlnv") or ""
            self._check_vlnv(call, vlnv)
            self.cells[name] = ("ip", vlnv)

    def _check_vlnv(self, call, vlnv: str) -> None:
        if not VLNV.match(vlnv):
            self.bad(call, f"-vlnv must be vendor:library:name:major.minor, not {vlnv!r}")
            return
        ip, _, version = vlnv.rpartition(":")
        if ip in KNOWN_IP and version not in KNOWN_IP[ip]:
            self.bad(call, f"version of {ip} must be one of {sorted(KNOWN_IP[ip])}, "
                           f"not {version!r}")

    def _create_bd_port(self, call) -> None:
        direction = self.value(call, "-dir")
        if direction not in ("I", "O", "IO"):
            self.bad(call, f"-dir must be I, O or IO, not {direction!r}")
        self.bd_ports[self.tcl.value(call.args[0])] = call.line

    def _apply_bd_automation(self, call) -> None:
        rule = self.value(call, "-rule") or ""
        if not RULE.match(rule) or rule not in AUTOMATION_RULES:
            self.bad(call, f"-rule must be one of {sorted(AUTOMATION_RULES)}, not {rule!r}")
        pairs = tcl_pairs(self.value(call, "-config") or "")
        if pairs is None:
            self.bad(call, "-config must be a list of name-value pairs, not an odd list")
            return
        config = dict(pairs)
        for key in ("Clk_master", "Clk_slave", "Clk_xbar"):
            if key in config:
                self._check_automation_clock(call, key, config[key])
        if "Master" in config and "Slave" in config and rule.endswith(":axi4"):
            for end in (config["Master"], config["Slave"]):
                self._check_endpoint(call, end.strip("/"), interface=True)
            self.links[config["Slave"]] = config["Master"]

    def _check_automation_clock(self, call, key: str, text: str) -> None:
        match = re.match(r"^/?([^/\s]+)/(\S+)\s+\(([\d.]+) MHz\)$", text)
        if not match:
            self.bad(call, f"{key} must be '/cell/pin (N MHz)', not {text!r}")
            return
        self._check_endpoint(call, f"{match.group(1)}/{match.group(2)}", interface=False)
        self.project.check_mhz(self.file, call.line, call.name, key, match.group(3),
                               self.project.cfg.clock_mhz)

    def _get_bd_pins(self, call) -> None:
        for word in call.args:
            self._check_endpoint(call, self.tcl.value(word), interface=False)

    def _get_bd_intf_pins(self, call) -> None:
        for word in call.args:
            self._check_endpoint(call, self.tcl.value(word), interface=True)

    def _get_bd_ports(self, call) -> None:
        for word in call.args:
            name = self.tcl.value(word)
            if name is not None and name not in self.bd_ports:
                self.bad(call, f"port must be one of the block design's ports "
                               f"{sorted(self.bd_ports)}, not {name!r}")

    def _check_endpoint(self, call, path: "str | None", interface: bool) -> None:
        """``cell/pin``: the cell exists and has the pin (or interface)."""
        if path is None or "/" not in path:
            return
        cell, pin = path.split("/", 1)
        if cell not in self.cells:
            self.bad(call, f"cell must be one of {sorted(self.cells)}, not {cell!r} "
                           f"(in {path})")
        elif self.cells[cell][0] == "module":
            self._check_module_pin(call, cell, pin, interface)
        elif "processing_system7" in self.cells[cell][1]:
            if pin not in PS7_PORT_ENABLES:
                self.bad(call, f"PS7 port must be one of {sorted(PS7_PORT_ENABLES)}, "
                               f"not {pin!r}")
            self.ps7_used.setdefault(pin, call.line)

    def _check_module_pin(self, call, cell: str, pin: str, interface: bool) -> None:
        module = self.modules.get(self.cells[cell][1])
        if module is None:
            return
        found = any(p.startswith(pin + "_") for p in module.ports) if interface \
            else pin in module.ports
        if not found:
            what = f"an interface ({pin}_* ports)" if interface else "a port"
            self.bad(call, f"{cell}/{pin} must be {what} of module {module.name}, not missing")

    # ---- properties ---------------------------------------------------------------------
    def _set_property(self, call) -> None:
        if "-dict" in call.options:
            pairs = tcl_pairs(self.value(call, "-dict") or "")
            targets = [self.tcl.value(word) for word in call.args]
            if pairs is None:
                self.bad(call, "-dict must be a list of name-value pairs, not an odd list")
            elif any(self.cells.get(t, ("", ""))[1].startswith(
                    "xilinx.com:ip:processing_system7") for t in targets):
                self._ps7_properties(call, pairs)
            return
        if len(call.args) != 3:
            self.bad(call, f"set_property must be given -dict or name, value and objects, "
                           f"not {len(call.args)} arguments")
            return
        name, value = (self.tcl.value(word) for word in call.args[:2])
        if name == "offset":
            self._check_offset(call, value)
        elif name == "range":
            self._check_range(call, value)
        elif name == "top":
            self._check_top(call, value)

    def _ps7_properties(self, call, pairs: list) -> None:
        for key, value in pairs:
            name = key[len("CONFIG."):] if key.startswith("CONFIG.") else None
            if name is None or not re.match(r"^PCW_[A-Z0-9_]+$", name):
                self.bad(call, f"PS7 property must be CONFIG.PCW_<NAME>, not {key!r}")
            elif name not in PS7_PROPERTIES:
                self.bad(call, f"PS7 property must be one of processing_system7's "
                               f"CONFIG.PCW_* names, not {key!r}")
            else:
                self.ps7[name] = value
                self.ps7_lines[name] = call.line

    def _check_offset(self, call, text: "str | None") -> None:
        offset, soc = as_int(text), self.project.board.soc
        base, size = PS7_GP0_WINDOW
        if offset != soc.reg_base:
            self.bad(call, f"register offset must be {soc.reg_base:#010x} (board facts of "
                           f"{self.project.board.name}), not {text!r}")
        elif not base <= offset < base + size:
            self.bad(call, f"register offset must be inside M_AXI_GP0's window "
                           f"{base:#x}-{base + size - 1:#x}, not {offset:#x}")
        self.offset = offset

    def _check_range(self, call, text: "str | None") -> None:
        size = size_bytes(text or "")
        bits = self._slave_address_bits()
        if size is None or size & (size - 1) or size < regmap.MAP_BYTES:
            self.bad(call, f"register range must be a power of two of at least "
                           f"{regmap.MAP_BYTES} bytes (the register map), not {text!r}")
        elif bits is not None and size != 1 << bits:
            self.bad(call, f"register range must be {1 << bits} bytes (the slave's "
                           f"{bits} address bits), not {text!r}")
        elif self.offset is not None and self.offset % size:
            self.bad(call, f"register offset must be aligned to the range {size:#x}, "
                           f"not {self.offset:#x}")

    def _slave_address_bits(self) -> "int | None":
        master = f"/ps7/{self.project.board.soc.reg_master}"
        for slave, source in self.links.items():
            cell, _, intf = slave.strip("/").partition("/")
            module = self.modules.get(self.cells.get(cell, ("", ""))[1])
            if source == master and module and f"{intf}_awaddr" in module.ports:
                return module.ports[f"{intf}_awaddr"].width
        return None

    def _check_top(self, call, top: "str | None") -> None:
        tops = {f"{self.bd}_wrapper"} if self.bd else set()
        if top not in tops | set(self.modules):
            self.bad(call, f"top must be the block design's wrapper {sorted(tops)} or a "
                           f"module of the sources, not {top!r}")

    def _launch_runs(self, call) -> None:
        step = self.value(call, "-to_step")
        if step is not None and step not in _STEPS:
            self.bad(call, f"-to_step must be one of {sorted(_STEPS)}, not {step!r}")

    # ---- after the walk ------------------------------------------------------------------
    def _check_ps7(self) -> None:
        for port, line in self.ps7_used.items():
            enable = PS7_PORT_ENABLES[port]
            if self.ps7.get(enable) != "1":
                self.project.report(self.file, line, "ps7", f"{enable} must be 1 for the "
                                    f"design to use {port}, not {self.ps7.get(enable)!r}")
        soc = self.project.board.soc
        for port, role in ((soc.reg_master, "registers"), (soc.dma_slave, "DMA")):
            if port not in self.ps7_used:
                self.project.report(self.file, 0, "ps7", f"the {role} must go through "
                                    f"{port} (board facts), not leave it unconnected")
        for name, value in self.ps7.items():
            if name.endswith("_DATA_WIDTH") and value not in PS7_HP_WIDTHS:
                self.project.report(self.file, self.ps7_lines[name], "ps7", f"{name} must "
                                    f"be 32 or 64, not {value!r}")
        self.project.check_mhz(self.file, self.ps7_lines.get(PS7_FCLK0_MHZ, 0), "ps7",
                               PS7_FCLK0_MHZ, self.ps7.get(PS7_FCLK0_MHZ),
                               self.project.cfg.clock_mhz)

    def _check_wrapper_clock(self) -> None:
        want = round(self.project.cfg.clock_mhz * 1e6)
        for kind, module_name in self.cells.values():
            module = self.modules.get(module_name) if kind == "module" else None
            text = (self.project.root / module.file).read_text() if module else ""
            for found in _FREQ_HZ.findall(text):
                if int(found) != want:
                    self.project.report(module.file, 0, "X_INTERFACE_PARAMETER", f"FREQ_HZ "
                                        f"must be {want} (clock_mhz), not {found}")

