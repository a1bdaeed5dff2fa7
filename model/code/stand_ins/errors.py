"""The two exceptions the stand-ins raise: what the prefetch path did outside the model, and
the end of a run (a BaseException, so the path's own `except Exception` never swallows it)."""

from __future__ import annotations

import functools
import sys


class NotModelled(BaseException):
    """The prefetch path called something that is neither its own code nor a stand-in (a
    BaseException, so the path's own `except Exception` cannot turn it into a silent 0 hits)."""

    def __init__(self, callee: str, site: str):
        super().__init__(f"not modelled: {callee} at {site}")
        self.callee, self.site = callee, site


class WorldFault:
    """Marks an exception a stand-in raises on purpose (a configured storage error): it is the
    world failing, so a thread it kills is a no_crash finding, not a stand-in bug."""


class Abandon(BaseException):
    """Raised at a scheduling point when the scheduler ends the run: unwinds the thread."""


def caller_site(roots: tuple[str, ...], skip: int = 2) -> str:
    """file:line of the innermost frame of the code under test (a path below one of `roots`),
    relative to its srt folder; '?' when no such frame is on the stack."""
    frame = sys._getframe(skip)
    while frame is not None:
        relative = _below(frame.f_code.co_filename, roots)
        if relative is not None:
            return f"{relative}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


@functools.lru_cache(maxsize=4096)
def _below(name: str, roots: tuple[str, ...]):
    """`name` relative to the first of `roots` it is below, or None (a pure function, memoised:
    every scheduling point asks it for each frame it walks)."""
    for root in roots:
        if name.startswith(root):
            return name[len(root):].lstrip("/")
    return None
