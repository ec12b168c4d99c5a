"""Module headers of Verilog files: names, ports (direction and width) and named instances.

Enough Verilog-2001 for what a project's scripts refer to: ANSI headers (``module m (input
wire [7:0] a, ...)``) and the port lists Yosys writes (names in the header, ``input [7:0]
a;`` in the body), escaped identifiers, attributes and comments. Instances are read only of
modules the caller names (``.port(expr)`` connections), so generated netlists with
thousands of cells are not parsed statement by statement.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

_NOISE = re.compile(r'"(?:\\.|[^"\\])*"|/\*.*?\*/|//[^\n]*|\(\*(?!\)).*?\*\)', re.S)
_IDENT = r"(?:\\\S+|[A-Za-z_][A-Za-z0-9_$]*)"
_MODULE = re.compile(rf"\bmodule\s+({_IDENT})\s*(?:#\s*\((?:[^()]|\([^()]*\))*\)\s*)?\(")
_DIRECTION = r"(input|output|inout)"
_TYPE = r"(?:\s+(?:wire|reg|logic|tri))?(?:\s+signed)?"
_RANGE = r"(?:\s*\[\s*(\d+)\s*:\s*(\d+)\s*\])?"
_ANSI_PORT = re.compile(rf"^(?:{_DIRECTION}{_TYPE})?{_RANGE}\s*({_IDENT})$")
_BODY_DECL = re.compile(rf"\b{_DIRECTION}{_TYPE}{_RANGE}\s+([^;]+);")
_CONNECTION = re.compile(r"\.\s*([A-Za-z_][A-Za-z0-9_$]*)\s*\(")


@dataclass(frozen=True)
class Port:
    name: str
    direction: str          # input, output, inout
    width: int


@dataclass
class Instance:
    module: str
    name: str
    line: int
    connections: dict       # port -> expression text


@dataclass
class Module:
    name: str
    file: str
    line: int
    ports: dict = field(default_factory=dict)      # name -> Port
    body: str = ""
    body_line: int = 0

    def instances(self, of_modules) -> list[Instance]:
        """Instances of the named modules in this module's body."""
        names = "|".join(re.escape(m) for m in sorted(of_modules, key=len, reverse=True))
        if not names:
            return []
        found = []
        pattern = re.compile(rf"(?<![\w$.\\])({names})\s+(?:#\s*\([^;]*?\)\s*)?({_IDENT})\s*\(")
        for match in pattern.finditer(self.body):
            inner = _balanced(self.body, match.end() - 1)
            line = self.body_line + self.body.count("\n", 0, match.start())
            found.append(Instance(match.group(1), match.group(2), line, _connections(inner)))
        return found


class VerilogError(ValueError):
    """Generated Verilog that the header parser cannot read (the message says where)."""


def parse_modules(text: str, file: str) -> dict:
    """name -> Module of every module in ``text``."""
    clean = _NOISE.sub(lambda m: m.group() if m.group().startswith('"')
                       else "\n" * m.group().count("\n"), text)
    modules = {}
    for match in _MODULE.finditer(clean):
        header = _balanced(clean, match.end() - 1)
        body_start = match.end() + len(header) + 1
        end = clean.find("endmodule", body_start)
        if end < 0:
            raise VerilogError(f"{file}: module {match.group(1)} must end with endmodule")
        module = Module(match.group(1), file, clean.count("\n", 0, match.start()) + 1,
                        body=clean[body_start:end],
                        body_line=clean.count("\n", 0, body_start) + 1)
        module.ports = _ports(header, module.body)
        modules[module.name] = module
    return modules


def _balanced(text: str, open_at: int) -> str:
    """The text inside the parenthesis opened at ``open_at``."""
    depth = 0
    for index in range(open_at, len(text)):
        depth += {"(": 1, ")": -1}.get(text[index], 0)
        if depth == 0:
            return text[open_at + 1:index]
    raise VerilogError("a parenthesis must be closed, not left open at the end of the file")


def _split_top(text: str) -> list[str]:
    items, depth, start = [], 0, 0
    for index, char in enumerate(text):
        depth += {"(": 1, ")": -1, "{": 1, "}": -1, "[": 1, "]": -1}.get(char, 0)
        if char == "," and depth == 0:
            items.append(text[start:index])
            start = index + 1
    items.append(text[start:])
    return [item.strip() for item in items if item.strip()]


def _width(msb, lsb) -> int:
    return abs(int(msb) - int(lsb)) + 1 if msb is not None else 1


def _ports(header: str, body: str) -> dict:
    items = _split_top(header)
    if re.search(rf"\b{_DIRECTION}\b", header):
        return _ansi_ports(items)
    declared = {}
    for match in _BODY_DECL.finditer(body):
        direction, msb, lsb, names = match.groups()
        for name in _split_top(names):
            name = name.split("=")[0].strip()
            declared[name] = Port(name, direction, _width(msb, lsb))
    return {name: declared[name] for name in items if name in declared}


def _ansi_ports(items: list[str]) -> dict:
    ports, direction = {}, None
    for item in items:
        match = _ANSI_PORT.match(" ".join(item.split()))
        if not match:
            raise VerilogError(f"port declaration must be [direction] [type] [range] name, "
                               f"not {item!r}")
        new_direction, msb, lsb, name = match.groups()
        direction = new_direction or direction
        if direction is None:
            raise VerilogError(f"port {name} must have a direction, not none")
        ports[name] = Port(name, direction, _width(msb, lsb))
    return ports


def _connections(inner: str) -> dict:
    connections = {}
    for match in _CONNECTION.finditer(inner):
        connections[match.group(1)] = _balanced(inner, match.end() - 1).strip()
    return connections
