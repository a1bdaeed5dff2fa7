"""One scheduling decision of a run, as a strategy sees it (Shuttle's `Scheduler::next_task`):
which threads are enabled, and the world's hooks a strategy may ask for, each computed on demand
and at most once per step: the state key (a digest of the world's `key()`), whether the state
closes a cycle the world ends runs at (`closes_cycle`), and its persistent set (`ample`)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass


@dataclass(frozen=True)
class Stop:
    """A strategy's answer that ends the run here: `end` says how (TERMINAL is judged as the end
    of the run: deadlock, progress, leaks; SEEN and DEPTH are cuts)."""

    end: str


TERMINAL, SEEN, DEPTH = "terminal", "seen", "depth"


class Decision:
    """The decision at `depth` (the steps taken so far) of one run of `run` (a world's harness)."""

    __slots__ = ("run", "depth", "_every", "_key", "_cycle")

    def __init__(self, run):
        self.run, self.depth = run, 0
        self._every = self._key = self._cycle = None

    def at(self, depth: int) -> "Decision":
        self.depth, self._every, self._key, self._cycle = depth, None, None, None
        return self

    def every(self) -> list[str]:
        """Every enabled thread, in spawn order (a replayed choice must be one of them)."""
        if self._every is None:
            self._every = [m.name for m in self.run.baton.enabled()]
        return self._every

    def can_run(self, name: str) -> bool:
        """Whether thread `name` is enabled (a replayed choice: one guard, not every thread's)."""
        if self._every is not None:
            return name in self._every
        return self.run.baton.can_run(name)

    def enabled(self) -> list[str]:
        """The threads to choose from: every enabled one (a reduction narrows it: reduce.py)."""
        return self.every()

    def ample(self) -> list[str]:
        """The world's persistent set: enabled threads whose next steps no other can interfere with."""
        return self.run.ample()

    def key(self) -> bytes:
        """The state's key: what determines the future (the world's `key()`), digested."""
        if self._key is None:
            self._key = hashlib.blake2b(repr(self.run.key()).encode(), digest_size=16).digest()
        return self._key

    def closes_cycle(self) -> bool:
        """The world ends a run at a state that comes back while nothing but polling moved (the
        predicate-poll world: a request waiting forever); False for a world without that end.
        Asked once per step (the world's hook keeps what it saw since the run began to explore)."""
        if self._cycle is None:
            hook = getattr(self.run, "closes_cycle", None)
            self._cycle = hook is not None and hook(self.key())
        return self._cycle


class Narrowed:
    """A decision whose `enabled` is the world's persistent set (the reduction's view)."""

    __slots__ = ("inner",)

    def __init__(self, inner: Decision):
        self.inner = inner

    @property
    def depth(self) -> int:
        return self.inner.depth

    @property
    def run(self):
        return self.inner.run

    def every(self) -> list[str]:
        return self.inner.every()

    def can_run(self, name: str) -> bool:
        return self.inner.can_run(name)

    def enabled(self) -> list[str]:
        return self.inner.ample()

    def ample(self) -> list[str]:
        return self.inner.ample()

    def key(self) -> bytes:
        return self.inner.key()

    def closes_cycle(self) -> bool:
        return self.inner.closes_cycle()
