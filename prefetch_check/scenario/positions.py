"""Where each key of a TOML text is written: the line of every table header and key.

tomllib gives values, not positions. This scanner reads the text as TOML does (strings of
the four kinds, escapes, comments, dotted and quoted keys, inline tables, arrays spanning
lines, arrays of tables), so a key's text inside a string or a comment is never taken for
the key. It runs only on text tomllib has accepted; on anything it does not follow it
gives up (no positions) rather than guess.
"""

from __future__ import annotations

from typing import Optional

_BARE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-")


class _GiveUp(Exception):
    pass


class _Scanner:
    def __init__(self, text: str):
        self.text, self.pos, self.line = text, 0, 1
        self.found: dict[tuple, int] = {}  # key path -> line of its first definition
        self.tables: dict[tuple, int] = {}  # array-of-tables path -> index of its last element

    # ---- characters ----

    def peek(self, ahead: int = 0) -> str:
        i = self.pos + ahead
        return self.text[i] if i < len(self.text) else ""

    def advance(self, n: int = 1) -> None:
        for _ in range(n):
            if self.pos >= len(self.text):
                raise _GiveUp()
            if self.text[self.pos] == "\n":
                self.line += 1
            self.pos += 1

    def blanks(self) -> None:
        while self.peek() in (" ", "\t"):
            self.advance()

    def blanks_lines_comments(self) -> None:
        while True:
            c = self.peek()
            if c in (" ", "\t", "\r", "\n"):
                self.advance()
            elif c == "#":
                self.comment()
            else:
                return

    def comment(self) -> None:
        while self.peek() not in ("\n", ""):
            self.advance()

    # ---- keys and strings ----

    def key(self) -> tuple:
        parts = []
        while True:
            self.blanks()
            c = self.peek()
            if c in ('"', "'"):
                parts.append(self.string())
            elif c in _BARE:
                start = self.pos
                while self.peek() in _BARE:
                    self.advance()
                parts.append(self.text[start:self.pos])
            else:
                raise _GiveUp()
            self.blanks()
            if self.peek() != ".":
                return tuple(parts)
            self.advance()

    def string(self) -> str:
        quote = self.peek()
        if self.text.startswith(quote * 3, self.pos):
            self.advance(3)
            start = self.pos
            while not self.text.startswith(quote * 3, self.pos):
                if quote == '"' and self.peek() == "\\":
                    self.advance()
                self.advance()
            while self.text.startswith(quote * 4, self.pos):  # up to two quotes before the end belong to it
                self.advance()
            end = self.pos
            self.advance(3)
            return self.text[start:end]
        self.advance()
        out = []
        while self.peek() != quote:
            c = self.peek()
            if c in ("\n", ""):
                raise _GiveUp()
            if quote == '"' and c == "\\":
                self.advance()
                c = self.peek()
                out.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(c, "\\" + c))
            else:
                out.append(c)
            self.advance()
        self.advance()
        return "".join(out)

    # ---- values ----

    def value(self, path: tuple) -> None:
        c = self.peek()
        if c in ('"', "'"):
            self.string()
        elif c == "[":
            self.array(path)
        elif c == "{":
            self.inline_table(path)
        else:  # number, boolean, date: up to what ends a value
            start = self.pos
            while self.peek() not in (",", "]", "}", "\n", "#", "") and not (
                self.peek() == " " and self.peek(1) in (",", "]", "}", "#", "\n", "")
            ):
                self.advance()
            if self.pos == start:
                raise _GiveUp()

    def array(self, path: tuple) -> None:
        self.advance()  # [
        index = 0
        while True:
            self.blanks_lines_comments()
            if self.peek() == "]":
                self.advance()
                return
            self.value(path + (index,))
            index += 1
            self.blanks_lines_comments()
            if self.peek() == ",":
                self.advance()
            elif self.peek() != "]":
                raise _GiveUp()

    def inline_table(self, path: tuple) -> None:
        self.advance()  # {
        self.blanks()
        if self.peek() == "}":
            self.advance()
            return
        while True:
            self.key_value(path)
            self.blanks()
            if self.peek() == ",":
                self.advance()
            elif self.peek() == "}":
                self.advance()
                return
            else:
                raise _GiveUp()

    def key_value(self, table: tuple) -> None:
        self.blanks()
        line = self.line
        path = table + self.key()
        self.record(path, line)
        self.blanks()
        if self.peek() != "=":
            raise _GiveUp()
        self.advance()
        self.blanks()
        self.value(path)

    def record(self, path: tuple, line: int) -> None:
        for i in range(1, len(path) + 1):  # a dotted key also defines its parents
            self.found.setdefault(path[:i], line)

    # ---- the document ----

    def document(self) -> None:
        table: tuple = ()
        while True:
            self.blanks_lines_comments()
            if not self.peek():
                return
            if self.peek() == "[":
                line = self.line
                double = self.peek(1) == "["
                self.advance(2 if double else 1)
                name = self.key()
                if self.peek() != "]" or (double and self.peek(1) != "]"):
                    raise _GiveUp()
                self.advance(2 if double else 1)
                table = self.table_path(name, double)
                self.record(table, line)
            else:
                self.key_value(table)
            self.blanks()
            if self.peek() == "#":
                self.comment()


    def table_path(self, name: tuple, double: bool) -> tuple:
        """A header's key path: a name under an array of tables means its last element (`[request.x]`
        after `[[request]]`); `[[name]]` starts a new element."""
        path: tuple = ()
        for i, part in enumerate(name):
            path += (part,)
            last = i == len(name) - 1
            if last and double:
                index = self.tables[name] = self.tables.get(name, -1) + 1
                path += (index,)
            elif name[: i + 1] in self.tables:
                path += (self.tables[name[: i + 1]],)
        return path


def key_lines(text: str) -> Optional[dict]:
    """key path (strings; integers index arrays) -> line of its definition, or None if the scanner gives up."""
    scanner = _Scanner(text)
    try:
        scanner.document()
    except (_GiveUp, RecursionError):
        return None
    return scanner.found


def locate(text: str, keypath: tuple) -> Optional[int]:
    """The line that defines `keypath`, e.g. ("request", 1, "hits") or ("expect", "buggy", "violates");
    else the line of its closest enclosing table or key that is written in the file; else None."""
    lines = key_lines(text)
    if lines is None:
        return None
    target = tuple(k if isinstance(k, int) else str(k) for k in keypath)
    for n in range(len(target), 0, -1):
        if target[:n] in lines:
            return lines[target[:n]]
    return None
