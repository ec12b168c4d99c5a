"""One vendor script, tokenized and checked command by command against its dialect.

Every command (also inside ``[...]``, if/foreach/proc bodies and if conditions) must be a
command of the dialect or a proc the script defines; its options must be the command's
options, with values where they take one; required options present; the count of positional
arguments right. Each bound command is kept as a ``Call`` for the project checks, with a
small evaluator for the values they need (``set`` variables, ``[info script]``, ``[file
dirname ...]``, ``[list ...]``; a dialect adds what its object getters return).
"""
from __future__ import annotations

import difflib
import os
import re
from dataclasses import dataclass
from pathlib import Path

from .commands import DIALECTS, TCL_SUBCOMMANDS, commands_of
from .tcl import Command, TclSyntaxError, Word, parse, parse_expression

_OPTION = re.compile(r"-[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class Problem:
    file: str
    line: int
    command: str
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line > 0 else self.file
        return f"{where}: {self.command}: {self.message}"


@dataclass
class Call:
    name: str
    options: dict               # option -> Word (takes a value) or True
    args: list                  # positional Words
    line: int
    command: Command


def suggest(name: str, known) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
    return f" (did you mean {close[0]}?)" if close else ""


class Script:
    """``calls`` in execution order and ``problems`` of one script file."""

    def __init__(self, path: Path, root: Path, dialect: str, returns: "dict | None" = None):
        self.path, self.file = path, str(path.relative_to(root))
        self.dialect_title = DIALECTS[dialect][0]
        self.commands = commands_of(dialect)
        self.returns = {"list": self._list, "file": self._file, "info": self._info,
                        **(returns or {})}
        self.calls: list[Call] = []
        self.problems: list[Problem] = []
        self.env: dict = {}
        self.procs: set = set()
        self.parsed = True              # False: Tcl would not parse it (no further checks)
        try:
            self._walk(parse(path.read_text(), self.file))
        except TclSyntaxError as exc:
            self.parsed = False
            self.problem(exc.line, "tcl", exc.reason)

    def problem(self, line: int, command: str, message: str) -> None:
        self.problems.append(Problem(self.file, line, command, message))

    def find(self, name: str) -> list[Call]:
        return [call for call in self.calls if call.name == name]

    # ---- values -----------------------------------------------------------------------
    def value(self, word: "Word | None") -> "str | None":
        """The word's value where the script fixes it, else None."""
        if word is None:
            return None
        out = []
        for kind, part in word.parts:
            if kind == "text":
                out.append(part)
            elif kind == "var":
                if part not in self.env:
                    return None
                out.append(self.env[part])
            else:
                result = self.evaluate(part)
                if result is None:
                    return None
                out.append(result)
        return "".join(out)

    def words_of(self, word: Word) -> "list[str] | None":
        """A list-valued word: ``[list a b]`` item by item, else the value split on blanks."""
        cmds = word.commands()
        if len(word.parts) == 1 and cmds and len(cmds[0]) == 1 and cmds[0][0].name == "list":
            items = [self.value(w) for w in cmds[0][0].words[1:]]
            return None if None in items else items
        text = self.value(word)
        return None if text is None else text.split()

    def evaluate(self, commands: list) -> "str | None":
        if len(commands) != 1 or commands[0].name not in self.returns:
            return None
        cmd = commands[0]
        args = [self.value(word) for word in cmd.words[1:]]
        return None if None in args else self.returns[cmd.name](args)

    def _list(self, args: list) -> str:
        return " ".join("{%s}" % a if (not a or re.search(r"\s", a)) else a for a in args)

    def _file(self, args: list) -> "str | None":
        sub, rest = (args[0], args[1:]) if args else ("", [])
        if sub == "dirname" and len(rest) == 1:
            return os.path.dirname(rest[0])
        if sub == "normalize" and len(rest) == 1:
            return os.path.normpath(rest[0])
        if sub == "join" and rest:
            return os.path.join(*rest)
        return None

    def _info(self, args: list) -> "str | None":
        return str(self.path) if args == ["script"] else None

    # ---- walking --------------------------------------------------------------------
    def _walk(self, commands: list) -> None:
        for cmd in commands:
            self._command(cmd)

    def _command(self, cmd: Command) -> None:
        for word in cmd.words:
            for nested in word.commands():
                self._walk(nested)
            self._stray_closers(word, cmd)
        name = cmd.name
        if name is None:
            return                          # a command named by a substitution
        spec = self.commands.get(name)
        if spec is None and name not in self.procs:
            self.problem(cmd.line, name, f"command must be a {self.dialect_title} or Tcl "
                         f"command{suggest(name, self.commands)}, not unknown {name!r}")
            return
        call = self._bind(cmd, spec) if spec is not None else None
        if call is not None:
            self.calls.append(call)
            self._builtin(call)

    def _stray_closers(self, word: Word, cmd: Command) -> None:
        if word.kind != "bare":
            return
        for kind, text in word.parts:
            if kind == "text" and ("]" in text or "}" in text):
                self.problem(word.line, cmd.name or "?", f"a bare word must not hold an "
                             f"unmatched ']' or '}}' (unbalanced brackets or braces), "
                             f"not {text!r}")

    def _bind(self, cmd: Command, spec) -> "Call | None":
        call = Call(cmd.name, {}, [], cmd.line, cmd)
        words = cmd.words[1:]
        index = 0
        while index < len(words):
            word = words[index]
            text = word.literal
            index += 1
            if spec.check_options and text is not None and _OPTION.match(text):
                if text not in spec.options:
                    self.problem(word.line, cmd.name, f"option must be one of "
                                 f"{' '.join(sorted(spec.options))}{suggest(text, spec.options)}"
                                 f", not {text!r}")
                    return None
                if spec.options[text]:
                    if index >= len(words):
                        self.problem(word.line, cmd.name, f"option {text} must have a value, "
                                     f"not be the last word")
                        return None
                    call.options[text] = words[index]
                    index += 1
                else:
                    call.options[text] = True
            else:
                call.args.append(word)
        return call if self._counts_right(call, spec) else None

    def _counts_right(self, call: Call, spec) -> bool:
        missing = [opt for opt in spec.required if opt not in call.options]
        if missing:
            self.problem(call.line, call.name, f"option {missing[0]} must be given, not missing")
            return False
        count = len(call.args)
        if any(word.expand for word in call.args):
            return True
        if count < spec.least or (spec.most is not None and count > spec.most):
            most = "any number" if spec.most is None else spec.most
            self.problem(call.line, call.name, f"positional arguments must number "
                         f"{spec.least} to {most}, not {count}")
            return False
        return True

    # ---- Tcl's own commands ----------------------------------------------------------
    def _builtin(self, call: Call) -> None:
        words = call.command.words[1:]
        if call.name == "set" and words:
            name = self.value(words[0])
            if name is not None and len(words) == 2:
                result = self.value(words[1])
                if result is None:
                    self.env.pop(name, None)        # set to something the lint cannot know
                else:
                    self.env[name] = result
        elif call.name == "proc" and len(words) == 3:
            self.procs.add(words[0].literal)
            self._body(words[2])
        elif call.name == "if":
            self._if(call, words)
        elif call.name in ("foreach", "while", "catch", "for") and words:
            bodies = {"foreach": [-1], "while": [-1], "catch": [0], "for": [0, 2, 3]}
            for position in bodies[call.name]:
                if -len(words) <= position < len(words):
                    self._body(words[position])
            if call.name == "while":
                self._expression(words[0])
        elif call.name in TCL_SUBCOMMANDS and words and words[0].literal is not None:
            known = TCL_SUBCOMMANDS[call.name]
            if words[0].literal not in known:
                self.problem(call.line, call.name, f"subcommand must be one of "
                             f"{' '.join(sorted(known))}, not {words[0].literal!r}")

    def _if(self, call: Call, words: list) -> None:
        index = 0
        while index < len(words):
            self._expression(words[index])
            index += 1 + (index + 1 < len(words) and words[index + 1].literal == "then")
            if index >= len(words):
                self.problem(call.line, "if", "a condition must be followed by a body, "
                             "not end the command")
                return
            self._body(words[index])
            index += 1
            keyword = words[index].literal if index < len(words) else None
            if keyword == "elseif":
                index += 1
            elif index < len(words):
                index += keyword == "else"
                if index != len(words) - 1:
                    self.problem(call.line, "if", "else must be followed by exactly one "
                                 "body, not more words")
                    return
                self._body(words[index])
                return

    def _body(self, word: Word) -> None:
        if word.literal is None:
            return
        try:
            self._walk(parse(word.literal, self.file, word.line))
        except TclSyntaxError as exc:
            self.parsed = False
            self.problem(exc.line, "tcl", exc.reason)

    def _expression(self, word: Word) -> None:
        if word.kind == "braced":
            for nested in parse_expression(word.literal, self.file, word.line).commands():
                self._walk(nested)
