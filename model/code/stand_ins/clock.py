"""time for the code under test: a virtual clock per rank. It stands still (no policy on the
modelled path reads it to decide under wait_complete or best_effort) unless something moves it:
the conformance check fires a rank's clock where the model's timeout clock C[r] fires
(model/protocols/ack_drain/clock.py), putting that rank's time past every deadline. Sleeping is
not modelled."""

from __future__ import annotations

import types

START = 1000.0
FIRED = 1e6  # seconds a fired clock jumps: past any prefetch timeout (base + per page)


class Clock:
    """Each rank's monotonic clock (ranks' wall clocks differ: PP0 decides, TP takes the MAX)."""

    def __init__(self, baton, now: float = START):
        self.baton, self.start, self.ahead = baton, now, {}

    def now(self) -> float:
        me = self.baton.current()
        return self.start + (self.ahead.get(me.rank, 0.0) if me is not None else 0.0)

    def fire(self, rank: int) -> None:
        """Rank `rank`'s time moves past every deadline it has started."""
        self.ahead[rank] = self.ahead.get(rank, 0.0) + FIRED


def make_time(not_modelled, now: float = START, clock: Clock | None = None) -> types.ModuleType:
    mod = types.ModuleType("time")
    read = clock.now if clock is not None else (lambda: now)
    mod.monotonic = mod.perf_counter = mod.time = read
    mod.monotonic_ns = mod.perf_counter_ns = mod.time_ns = lambda: int(read() * 1e9)
    mod.__getattr__ = lambda name: not_modelled(f"time.{name}")
    return mod
