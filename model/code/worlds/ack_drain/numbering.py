"""Operation numbers as a fresh process has them: cache_controller.py's StorageOperation and
CacheOperation number their operations with a class counter (`op.id`), which the runs before would
carry over. A world whose state key holds such numbers (buffer_only's load-back ids, the write
path's storage writes and their acks) numbers each run from 0, and a step that numbered an
operation writes the counter, which is no stand-in's (two threads numbering operations race on it)."""

from __future__ import annotations

from prefetch_check.model.code.worlds.ack_drain.harness import CONTROLLER

NUMBERED = ("StorageOperation", "CacheOperation")  # cache_controller.py's classes with a class `counter`
COUNTERS = "operations.counter"  # in a step's footprint: a step that numbered an operation writes it


class NumberedFromZero:
    """A run mix-in: `number_from_zero(modules)` before the world is built, `settle_numbers()` after."""

    def number_from_zero(self, modules: dict) -> None:
        self.numbered = [cls for cls in (getattr(modules[CONTROLLER], n, None) for n in NUMBERED)
                         if isinstance(getattr(cls, "counter", None), int)]
        for cls in self.numbered:
            cls.counter = 0
        self.counts = self._counts()

    def settle_numbers(self) -> None:
        self.baton.settled = self.settled

    def _counts(self) -> tuple:
        return tuple(cls.counter for cls in self.numbered)

    def settled(self) -> tuple[tuple, tuple]:
        """What a step's end adds to its footprint (rt/baton.py)."""
        counts = self._counts()
        if counts == self.counts:
            return (), ()
        self.counts = counts
        return (), (COUNTERS,)
