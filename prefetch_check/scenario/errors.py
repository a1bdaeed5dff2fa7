"""Bad input as one readable paragraph: which file, which line, which key, what is allowed.

Every error a user can cause (a scenario file, a flag, a predicate path) is an
`InputError`; the CLI prints its text and exits with status 2, never a traceback.
"""

from __future__ import annotations

import difflib
import re
from typing import Iterable, Optional


class InputError(Exception):
    """User input that cannot be used; the message is the whole story for the user."""


class ScenarioError(InputError):
    """A scenario file that cannot be used, with where the problem is."""

    def __init__(self, message: str, path: str = "", line: Optional[int] = None):
        self.path, self.line, self.message = path, line, message
        where = path + (f", line {line}" if line else "")
        super().__init__(f"{where}: {message}" if where else message)


def closest(word: str, valid: Iterable[str]) -> Optional[str]:
    """difflib's closest valid name, or None when nothing is close."""
    close = difflib.get_close_matches(word, list(valid), n=1, cutoff=0.6)
    return close[0] if close else None


def did_you_mean(word: str, valid: Iterable[str]) -> str:
    """`; did you mean 'ranks'?`, or the list of valid names when nothing is close."""
    valid = list(valid)
    near = closest(word, valid)
    if near:
        return f"; did you mean {near!r}?"
    return f"; valid names: {', '.join(valid)}"


# ---- locating a key in the TOML text (tomllib does not report where a key is) ----

_HEADER = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


_KEY_PART = re.compile(r"\s*(\"[^\"]*\"|'[^']*'|[^.\s]+)\s*(?:\.|$)")


def _split_key(text: str) -> tuple[str, ...]:
    """`expect."pkg.mod:fn".why` -> ("expect", "pkg.mod:fn", "why") (quoted parts may hold dots)."""
    return tuple(m.group(1).strip("\"'") for m in _KEY_PART.finditer(text.strip()))


def locate(text: str, keypath: tuple) -> Optional[int]:
    """Best-effort 1-based line of `keypath`, e.g. ("expect", "buggy", "violates") or ("request", 1, "hits").

    Integer parts index an array of tables (`[[request]]`). A key inside an inline
    table (`hits = { 3 = 1 }`) is found on its line; otherwise the line of the
    closest enclosing table or key is returned, or None.
    """
    target = tuple(str(k) for k in keypath)
    section: tuple = ()
    counts: dict = {}
    best, best_score = None, 0
    for n, line in enumerate(text.splitlines(), start=1):
        m = _HEADER.match(line)
        if m:
            name = _split_key(m.group(2))
            if m.group(1) == "[[":
                counts[name] = counts.get(name, -1) + 1
                name = name + (str(counts[name]),)
            section = path = name
            rest = ""
        else:
            code = line.split("#", 1)[0]
            if "=" not in code:
                continue
            lhs, rest = code.split("=", 1)
            path = section + _split_key(lhs)
        if path[: len(target)] == target:
            return n
        if target[: len(path)] != path:
            continue
        score = len(path)
        if rest and re.search(rf"(^|[{{,\s])[\"']?{re.escape(target[-1])}[\"']?\s*=", rest):
            score = len(target)  # the key sits in an inline table on this line
            if len(path) == len(target) - 1:
                return n
        if score > best_score:
            best, best_score = n, score
    return best
