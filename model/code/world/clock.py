"""time for the code under test: a virtual clock that stands still (no policy on the modelled
path reads it to decide under wait_complete or best_effort); sleeping is not modelled."""

from __future__ import annotations

import types


def make_time(not_modelled, now: float = 1000.0) -> types.ModuleType:
    mod = types.ModuleType("time")
    mod.monotonic = mod.perf_counter = mod.time = lambda: now
    mod.monotonic_ns = mod.perf_counter_ns = mod.time_ns = lambda: int(now * 1e9)
    mod.__getattr__ = lambda name: not_modelled(f"time.{name}")
    return mod
