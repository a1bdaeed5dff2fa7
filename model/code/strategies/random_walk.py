"""A seeded random walk: each execution starts from scratch and takes a uniformly random enabled
thread at every step until the run ends (no state cache: a sample, never exhaustive). The seed
is explicit: the same seed gives the same executions."""

from __future__ import annotations

import random

from prefetch_check.model.code.strategies.ends import explored_end


class RandomWalk:
    exhaustive = False

    def __init__(self, seed: int, max_depth: int):
        self.seed, self.max_depth = seed, max_depth
        self.rng = random.Random(seed)
        self.keys: set = set()

    @property
    def states(self) -> int:
        return len(self.keys)

    def describe(self) -> str:
        return f"a random walk, seed {self.seed}"

    def more(self) -> bool:
        return True  # the search's own limits (runs, seconds) end a sample

    def start(self) -> None:
        pass

    def choose(self, decision):
        stop = explored_end(decision, None, self.max_depth)
        if stop is not None:
            return stop
        self.keys.add(decision.key())
        return self.rng.choice(decision.enabled())

    def finish(self, outcome) -> None:
        pass
