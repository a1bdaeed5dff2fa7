"""Bad input as one readable paragraph: which file, which line, which key, what is allowed.

Every error a user can cause (a scenario file, a flag, a predicate path) is an
`InputError`; the CLI prints its text and exits with status 2, never a traceback.
"""

from __future__ import annotations

import difflib
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
