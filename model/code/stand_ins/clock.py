"""time for the code under test: a virtual clock per rank. It stands still until something moves
it. Two movers: the conformance check fires a rank's clock where the model's timeout clock C[r]
fires (model/protocols/ack_drain/clock.py); the code engine's own search under the timeout policy
makes "the deadline of rank r fires" one more choice, like a thread (worlds/deadlines.py, as
Coyote treats timers). Firing puts that rank's time past every deadline it has started. Sleeping
is not modelled."""

from __future__ import annotations

import types

START = 1000.0
FIRED = 1e6  # seconds a fired clock jumps: past any prefetch timeout (base + per page)


class Clock:
    """Each rank's monotonic clock (ranks' wall clocks differ: PP0 decides, TP takes the MAX).
    It remembers, per rank, whether the code read it since it last fired (`armed`: a deadline
    measured from that reading may be running) and how often it fired (`epoch`). With `explored`
    each reading is folded into the reading thread's observations, so the state key tells a start
    time read before a firing from one read after it."""

    def __init__(self, baton, now: float = START, explored: bool = False):
        self.baton, self.start, self.ahead = baton, now, {}
        self.explored = explored
        self.armed: set[int] = set()
        self.epoch: dict[int, int] = {}
        self.reads: dict[int, int] = {}  # readings per rank
        self.read_at: dict[int, int] = {}  # the firings a rank had when its code last read it

    def now(self) -> float:
        me = self.baton.current()
        if me is None:
            return self.start
        self.baton.touch(name(me.rank))
        self.armed.add(me.rank)
        self.reads[me.rank] = self.reads.get(me.rank, 0) + 1
        self.read_at[me.rank] = self.epoch.get(me.rank, 0)
        if self.explored:
            self.baton.observe(f"clock of rank {me.rank} read at firing {self.epoch.get(me.rank, 0)}")
        return self.start + self.ahead.get(me.rank, 0.0)

    def fire(self, rank: int) -> None:
        """Rank `rank`'s time moves past every deadline it has started."""
        self.baton.touch(name(rank))
        self.ahead[rank] = self.ahead.get(rank, 0.0) + FIRED
        self.epoch[rank] = self.epoch.get(rank, 0) + 1
        self.armed.discard(rank)

    def key(self) -> tuple:
        return tuple(sorted(self.epoch.items())), tuple(sorted(self.armed))


def name(rank: int) -> str:
    """Rank `rank`'s clock in a step's footprint (rt/baton.py)."""
    return f"r{rank}.clock"


def make_time(not_modelled, now: float = START, clock: Clock | None = None) -> types.ModuleType:
    mod = types.ModuleType("time")
    read = clock.now if clock is not None else (lambda: now)
    mod.monotonic = mod.perf_counter = mod.time = read
    mod.monotonic_ns = mod.perf_counter_ns = mod.time_ns = lambda: int(read() * 1e9)
    mod.__getattr__ = lambda name: not_modelled(f"time.{name}")
    return mod
