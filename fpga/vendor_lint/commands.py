"""The commands each kind of vendor script may use, with the options each accepts.

From the vendors' command references: Vivado UG835 (project, IP integrator, runs, reports;
every Vivado command also takes -quiet and -verbose), the XDC subset of UG903, Quartus'
::quartus::project and ::quartus::flow packages (every command also takes -h, -help and
-long_help), the Quartus SDC commands, and Platform Designer's system scripting and _hw.tcl
component commands (positional arguments only). Tcl's own commands are known everywhere
except in constraint files; their options are not checked.

A spec is written ``"-part= -force | 0-2 | -period"``: options (``=`` takes a value), the
count of positional arguments (``N``, ``N-M`` or ``N+``), options a call must give.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Spec:
    options: dict                 # option -> takes a value
    least: int = 0                # positional arguments
    most: "int | None" = None
    required: tuple = ()
    check_options: bool = True


def _spec(text: str = "", args: str = "0+", required: str = "", common: str = "") -> Spec:
    options = {}
    for token in (text + " " + common).split():
        options[token.rstrip("=")] = token.endswith("=")
    if args.endswith("+"):
        least, most = int(args[:-1]), None
    elif "-" in args:
        least, most = (int(n) for n in args.split("-"))
    else:
        least = most = int(args)
    return Spec(options, least, most, tuple(required.split()))


def _table(common: str, entries: dict) -> dict:
    return {name: _spec(*(entry if isinstance(entry, tuple) else (entry,)), common=common)
            for name, entry in entries.items()}


_TCL_COMMANDS = """after append array break catch cd clock close concat continue dict error eval
exec exit expr file for foreach format gets glob global if incr info join lappend lindex
list llength lrange lreplace lsearch lsort namespace open package proc puts pwd regexp
regsub return set source split string switch unset upvar variable while""".split()
TCL = {name: Spec({}, check_options=False) for name in _TCL_COMMANDS}
TCL_SUBCOMMANDS = {
    "file": {"normalize", "dirname", "join", "exists", "copy", "delete", "mkdir", "tail",
             "rootname", "extension", "isfile", "isdirectory", "rename"},
    "info": {"script", "exists", "commands", "procs", "level", "hostname", "nameofexecutable"},
    "package": {"require", "provide", "present"},
    "string": {"equal", "compare", "first", "last", "length", "match", "range", "map",
               "tolower", "toupper", "trim", "trimleft", "trimright", "is", "repeat"},
}

_VIVADO_GET = "-regexp -nocase -hierarchical -filter= -of_objects="
VIVADO = _table("-quiet -verbose", {
    "create_project": ("-part= -force -in_memory -ip -rtl_kernel", "0-2"),
    "set_property": ("-dict= -objects=", "0-3"),
    "get_property": ("-min -max", "2"),
    "current_project": ("", "0-1"),
    "current_fileset": ("-constrset -simset", "0-1"),
    "add_files": ("-fileset= -of_objects= -norecurse -scan_for_includes -copy_to= -force",
                  "0+"),
    "update_compile_order": ("-fileset=", "0"),
    "create_bd_design": ("-dir= -cell= -bdsource=", "1"),
    "create_bd_cell": ("-vlnv= -type= -reference= -revision=", "1"),
    "create_bd_port": ("-dir= -from= -to= -type= -freq_hz= -polarity=", "1"),
    "get_board_parts": ("-regexp -nocase -filter= -of_objects= -latest_file_version "
                        "-latest_hw_revision", "0-1"),
    "apply_bd_automation": ("-rule= -config= -dict= -opts=", "1+", "-rule"),
    "connect_bd_net": ("-net=", "2+"),
    "connect_bd_intf_net": ("-intf_net= -boundary_type=", "2"),
    "get_bd_pins": (_VIVADO_GET, "0+"), "get_bd_ports": (_VIVADO_GET, "0+"),
    "get_bd_intf_pins": (_VIVADO_GET, "0+"), "get_bd_intf_ports": (_VIVADO_GET, "0+"),
    "get_bd_cells": (_VIVADO_GET, "0+"), "get_bd_nets": (_VIVADO_GET, "0+"),
    "get_bd_addr_segs": (_VIVADO_GET + " -excluded", "0+"),
    "get_bd_addr_spaces": (_VIVADO_GET, "0+"),
    "assign_bd_address": ("-target_address_space= -offset= -range= -boundary -force "
                          "-export_to_file= -dict= -combine_segments -external", "0+"),
    "validate_bd_design": ("-force -design= -include_boundary", "0"),
    "save_bd_design": ("", "0-1"),
    "get_files": ("-regexp -nocase -filter= -of_objects= -compile_order= -used_in= "
                  "-references -all", "0+"),
    "generate_target": ("-force", "2"),
    "make_wrapper": ("-files= -top -testbench -inst_template -fileset= -import -force",
                     "0", "-files"),
    "launch_runs": ("-jobs= -scripts_only -dir= -to_step= -next_step -host= -force "
                    "-pre_launch_script= -post_launch_script= -custom_script=", "1+"),
    "wait_on_run": ("-timeout=", "1"),
    "get_runs": ("-regexp -nocase -filter= -of_objects=", "0+"),
    "open_run": ("-name= -pr_config=", "1"),
    "report_utilization": ("-file= -append -hierarchical -pblocks= -cells= -slr", "0"),
    "report_timing_summary": ("-file= -append -max_paths= -delay_type= "
                              "-report_unconstrained -check_timing_verbose", "0"),
    "write_bitstream": ("-force -bin_file", "1"),
})

_SDC_GET = "-regexp -nocase -filter= -of_objects="
XDC = _table("-quiet -verbose", {
    "set_property": ("-dict=", "1-3"),
    "get_ports": (_SDC_GET + " -scoped_to_current_instance -prop_thru_buffers", "0+"),
    "get_pins": (_SDC_GET + " -hierarchical", "0+"),
    "get_cells": (_SDC_GET + " -hierarchical", "0+"),
    "get_nets": (_SDC_GET + " -hierarchical", "0+"),
    "get_clocks": (_SDC_GET, "0+"),
    "create_clock": ("-period= -name= -waveform= -add", "0+", "-period"),
    "set_false_path": ("-from= -to= -through= -setup -hold", "0"),
})
XDC_PORT_PROPERTIES = {"PACKAGE_PIN", "IOSTANDARD", "DRIVE", "SLEW", "PULLUP", "PULLDOWN",
                       "PULLTYPE", "IOB", "DIFF_TERM", "IN_TERM", "OFFCHIP_TERM"}

_QSF = "-comment= -disable -fall -remove -rise -tag="
QUARTUS = _table("-h -help -long_help", {
    "load_package": ("-version=", "1"),
    "project_new": ("-family= -overwrite -part= -revision=", "1"),
    "project_open": ("-current_revision -force -revision=", "1"),
    "project_close": ("-dont_export_assignments", "0"),
    "export_assignments": ("-reorganize", "0"),
    "set_global_assignment": (_QSF + " -entity= -name= -section_id=", "0-1", "-name"),
    "set_location_assignment": (_QSF + " -to=", "0-1", "-to"),
    "set_instance_assignment": (_QSF + " -entity= -from= -name= -section_id= -to=", "0-1",
                                "-name"),
    "execute_module": ("-args= -dont_export_assignments -tool=", "0", "-tool"),
    "execute_flow": ("-compile -analysis_and_elaboration -implement -finalize", "0"),
})
QUARTUS_TOOLS = {"map", "syn", "fit", "asm", "sta", "eda", "cdb", "cpf", "drc", "pow", "npp"}
QSF_GLOBAL_NAMES = {
    "FAMILY", "DEVICE", "TOP_LEVEL_ENTITY", "VERILOG_FILE", "SYSTEMVERILOG_FILE", "VHDL_FILE",
    "QIP_FILE", "QSYS_FILE", "SDC_FILE", "TCL_SCRIPT_FILE", "PROJECT_OUTPUT_DIRECTORY",
    "ORIGINAL_QUARTUS_VERSION", "LAST_QUARTUS_VERSION", "NUM_PARALLEL_PROCESSORS", "SEED",
    "OPTIMIZATION_MODE", "MIN_CORE_JUNCTION_TEMP", "MAX_CORE_JUNCTION_TEMP"}
QSF_FILE_NAMES = {"VERILOG_FILE", "SYSTEMVERILOG_FILE", "VHDL_FILE", "QIP_FILE", "QSYS_FILE",
                  "SDC_FILE", "TCL_SCRIPT_FILE"}
QSF_INSTANCE_NAMES = {"IO_STANDARD", "CURRENT_STRENGTH_NEW", "SLEW_RATE", "VIRTUAL_PIN",
                      "WEAK_PULL_UP_RESISTOR", "PARTITION_HIERARCHY"}

SDC = _table("", {
    "create_clock": ("-period= -name= -waveform= -add", "0+", "-period"),
    "create_generated_clock": ("-source= -name= -divide_by= -multiply_by= -add "
                               "-master_clock=", "1+", "-source"),
    "derive_pll_clocks": ("-create_base_clocks -use_net_name", "0"),
    "derive_clock_uncertainty": ("-add -overwrite -dtw", "0"),
    "get_ports": ("-compatibility_mode -nocase -nowarn", "0-1"),
    "get_pins": ("-compatibility_mode -hierarchical -nocase -nowarn", "0-1"),
    "get_clocks": ("-include_generated_clocks -nocase -nowarn", "0-1"),
    "set_false_path": ("-from= -to= -through= -setup -hold", "0"),
    "set_clock_groups": ("-asynchronous -exclusive -group=", "0"),
})

# Platform Designer's commands take positional arguments only.
QSYS = _table("", {
    "create_system": ("", "0-1"), "load_system": ("", "1"), "save_system": ("", "0-1"),
    "set_project_property": ("", "2"),
    "add_instance": ("", "2-3"),
    "set_instance_parameter_value": ("", "3"),
    "add_connection": ("", "1-2"),
    "set_connection_parameter_value": ("", "3"),
    "add_interface": ("", "3"),
    "set_interface_property": ("", "3"),
})
QSYS_COMPONENT = _table("", {
    "set_module_property": ("", "2"),
    "add_fileset": ("", "2-4"),
    "set_fileset_property": ("", "3"),
    "add_fileset_file": ("", "4+"),
    "add_interface": ("", "3"),
    "add_interface_port": ("", "5-6"),
    "set_interface_property": ("", "3"),
    "add_parameter": ("", "2-4"),
    "set_parameter_property": ("", "3"),
})
QSYS_INTERFACE_TYPES = {"clock", "reset", "axi", "axi4", "axi4lite", "avalon",
                        "avalon_streaming", "conduit", "interrupt"}
QSYS_INTERFACE_DIRECTIONS = {"start", "end", "source", "sink", "sender", "receiver",
                             "master", "slave"}
QSYS_PORT_DIRECTIONS = {"Input": "input", "Output": "output", "Bidir": "inout"}
QSYS_FILE_KINDS = {"VERILOG", "SYSTEM_VERILOG", "VHDL", "SDC", "OTHER", "QIP",
                   "VERILOG_INCLUDE"}
QSYS_FILESET_KINDS = {"QUARTUS_SYNTH", "SIM_VERILOG", "SIM_VHDL", "EXAMPLE_DESIGN"}

# Which table applies to which kind of file, and whether Tcl's commands are allowed too.
DIALECTS = {
    "vivado": ("Vivado", VIVADO, True),
    "xdc": ("XDC", XDC, False),
    "quartus": ("Quartus", QUARTUS, True),
    "sdc": ("SDC", SDC, False),
    "qsys": ("Platform Designer", QSYS, True),
    "qsys_component": ("Platform Designer component", QSYS_COMPONENT, True),
}


def commands_of(dialect: str) -> dict:
    title, table, with_tcl = DIALECTS[dialect]
    return {**TCL, **table} if with_tcl else dict(table)
