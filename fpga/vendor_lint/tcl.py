"""A Tcl tokenizer: scripts into commands into words, by Tcl's own rules (the Dodekalogue).

Commands end at a newline or a semicolon; words are separated by blanks; ``{...}`` words
are literal (nested braces counted, backslash-newline still a space), ``"..."`` and bare
words take ``$var``, ``${var}``, ``[script]`` and backslash substitutions; ``#`` starts a
comment where a command could start; ``{*}`` expands a word. A close-brace or close-quote
must end its word. What Tcl would refuse to parse is a ``TclSyntaxError`` naming the file
and the line where the unclosed brace, quote or bracket opened.

Nothing is evaluated: a word keeps its parts (literal text, variable names, the commands of
each ``[...]``), so a linter can look inside command substitutions and bodies.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from vtalab.fpga.errors import FpgaError

_VAR_NAME = re.compile(r"(?:::)?[A-Za-z0-9_]+(?:::[A-Za-z0-9_]+)*")
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "f": "\f", "v": "\v"}


class TclSyntaxError(FpgaError):
    def __init__(self, file: str, line: int, message: str):
        super().__init__(f"{file}:{line}: {message}")
        self.file, self.line, self.reason = file, line, message


@dataclass
class Word:
    """One word: ``kind`` bare, braced or quoted; ``parts`` ("text", str), ("var", name)
    or ("cmd", [Command]) in order (a braced word is one text part)."""
    kind: str
    line: int
    parts: list = field(default_factory=list)
    expand: bool = False

    @property
    def literal(self) -> "str | None":
        """The word's value when it has no substitutions, else None."""
        if any(kind != "text" for kind, _ in self.parts):
            return None
        return "".join(text for _, text in self.parts)

    def commands(self) -> list:
        return [cmds for kind, cmds in self.parts if kind == "cmd"]


@dataclass
class Command:
    words: list
    line: int

    @property
    def name(self) -> "str | None":
        return self.words[0].literal if self.words else None


def parse(text: str, file: str = "<script>", first_line: int = 1) -> list[Command]:
    """The commands of a script; raises TclSyntaxError where Tcl would not parse it."""
    parser = _Parser(text, file, first_line)
    return parser.script(close=None, opened=first_line)


def parse_expression(text: str, file: str, first_line: int) -> Word:
    """An ``expr`` argument (an if/while condition): its [..] and $ substitutions."""
    parser = _Parser(text, file, first_line)
    word = Word("quoted", first_line)
    parser.substituted(word, stop="", braces_literal=True)
    return word


class _Parser:
    def __init__(self, text: str, file: str, line: int):
        self.text, self.file, self.line, self.pos = text, file, line, 0

    # ---- helpers -----------------------------------------------------------------
    def peek(self, offset: int = 0) -> str:
        index = self.pos + offset
        return self.text[index] if index < len(self.text) else ""

    def take(self) -> str:
        char = self.text[self.pos]
        self.pos += 1
        if char == "\n":
            self.line += 1
        return char

    def fail(self, message: str, line: "int | None" = None):
        raise TclSyntaxError(self.file, self.line if line is None else line, message)

    def at_continuation(self) -> bool:
        return self.peek() == "\\" and self.peek(1) == "\n"

    def skip_blanks(self) -> None:
        """Spaces, tabs and backslash-newlines (with the blanks after them)."""
        while True:
            if self.peek() in (" ", "\t"):
                self.take()
            elif self.at_continuation():
                self.take(), self.take()
            else:
                return

    # ---- scripts and commands ------------------------------------------------------
    def script(self, close: "str | None", opened: int) -> list[Command]:
        commands = []
        while True:
            self.skip_blanks()
            char = self.peek()
            if char == "":
                if close:
                    self.fail("missing close-bracket for the [ opened here", opened)
                return commands
            if close and char == close:
                self.take()
                return commands
            if char in "\n;":
                self.take()
            elif char == "#":
                self.comment()
            else:
                commands.append(self.command(close))

    def comment(self) -> None:
        while self.peek() not in ("", "\n"):
            if self.at_continuation():
                self.take()
            self.take()

    def command(self, close: "str | None") -> Command:
        cmd = Command([], self.line)
        while True:
            self.skip_blanks()
            char = self.peek()
            if char in ("", "\n", ";") or (close and char == close):
                return cmd
            cmd.words.append(self.word(close))

    # ---- words ---------------------------------------------------------------------
    def word(self, close: "str | None") -> Word:
        expand = self.text.startswith("{*}", self.pos) and self.peek(3) not in (
            "", " ", "\t", "\n", ";")
        if expand:
            self.pos += 3
        start = self.peek()
        if start == "{":
            word = self.braced()
        elif start == '"':
            word = self.quoted()
        else:
            word = Word("bare", self.line)
            self.substituted(word, stop=close or "", bare=True)
        word.expand = expand
        if word.kind != "bare":
            self.check_word_end(word.kind, close)
        return word

    def check_word_end(self, kind: str, close: "str | None") -> None:
        char = self.peek()
        if char in ("", " ", "\t", "\n", ";") or self.at_continuation() or (
                close and char == close):
            return
        what = "close-brace" if kind == "braced" else "close-quote"
        self.fail(f"extra characters after {what}: {char!r}")

    def braced(self) -> Word:
        opened = self.line
        word = Word("braced", opened)
        self.take()
        depth, chars = 1, []
        while True:
            char = self.peek()
            if char == "":
                self.fail("missing close-brace for the { opened here", opened)
            if self.at_continuation():
                self.take(), self.take()
                while self.peek() in (" ", "\t"):
                    self.take()
                chars.append(" ")
                continue
            self.take()
            if char == "\\" and self.peek():
                chars.append(char + self.take())      # an escaped brace does not count
                continue
            depth += {"{": 1, "}": -1}.get(char, 0)
            if depth == 0:
                word.parts = [("text", "".join(chars))]
                return word
            chars.append(char)

    def quoted(self) -> Word:
        opened = self.line
        word = Word("quoted", opened)
        self.take()
        self.substituted(word, stop='"', opened=opened)
        if self.peek() != '"':
            self.fail('missing close-quote for the " opened here', opened)
        self.take()
        return word

    def substituted(self, word: Word, stop: str, bare: bool = False, opened: int = 0,
                    braces_literal: bool = False) -> None:
        """Text with $, [ and \\ substitutions up to ``stop`` (bare: up to a blank too)."""
        text = []

        def flush():
            if text:
                word.parts.append(("text", "".join(text)))
                text.clear()
        while True:
            char = self.peek()
            if char == "" or (stop and char == stop):
                break
            if bare and (char in " \t\n;" or self.at_continuation()):
                break
            if char == "\\":
                text.append(self.backslash())
            elif char == "$" and self.variable_follows():
                flush()
                word.parts.append(("var", self.variable()))
            elif char == "[":
                flush()
                line = self.line
                self.take()
                word.parts.append(("cmd", self.script(close="]", opened=line)))
            elif char == "{" and braces_literal:
                text.append("{" + self.braced().literal + "}")
            else:
                text.append(self.take())
        flush()

    def backslash(self) -> str:
        self.take()
        char = self.peek()
        if char == "":
            return "\\"
        if char == "\n":
            self.take()
            while self.peek() in (" ", "\t"):
                self.take()
            return " "
        self.take()
        return _ESCAPES.get(char, char)

    def variable_follows(self) -> bool:
        return self.peek(1) == "{" or bool(_VAR_NAME.match(self.text, self.pos + 1))

    def variable(self) -> str:
        self.take()
        if self.peek() == "{":
            opened = self.line
            end = self.text.find("}", self.pos)
            if end < 0:
                self.fail("missing close-brace for the variable name opened here", opened)
            name = self.text[self.pos + 1:end]
            self.pos = end + 1
            return name
        match = _VAR_NAME.match(self.text, self.pos)
        self.pos = match.end()
        name = match.group()
        if self.peek() == "(":
            end = self.text.find(")", self.pos)
            if end < 0:
                self.fail(f"missing ) after the array variable {name}")
            name += self.text[self.pos:end + 1]
            self.pos = end + 1
        return name
