"""PCT, probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi, Nagarakatte, ASPLOS
2010), as Shuttle's PctScheduler runs it: each execution gives every thread a random priority
above `depth`, and picks `depth - 1` change points among the steps (up to the longest run seen
so far); the enabled thread of highest priority always runs, and at the i-th change point the
thread about to run drops to priority i, below every initial one. A bug of depth d is found by
one execution with probability at least 1 / (n * k^(d-1)) for n threads and k steps. Seeded,
never exhaustive."""

from __future__ import annotations

import random

from prefetch_check.model.code.strategies.ends import explored_end


class PCT:
    exhaustive = False

    def __init__(self, seed: int, depth: int, max_depth: int):
        if depth < 1:
            raise ValueError(f"PCT depth {depth}: at least 1 (no change point)")
        self.seed, self.depth, self.max_depth = seed, depth, max_depth
        self.rng = random.Random(seed)
        self.longest = 0  # steps of the longest execution so far: where change points may fall
        self.keys: set = set()
        self.priority: dict[str, float] = {}
        self.changes: dict[int, int] = {}

    @property
    def states(self) -> int:
        return len(self.keys)

    def describe(self) -> str:
        return f"PCT, depth {self.depth}, seed {self.seed}"

    def more(self) -> bool:
        return True  # the search's own limits (runs, seconds) end a sample

    def start(self) -> None:
        self.priority = {}
        steps = range(1, max(self.longest, 1) + 1)
        points = self.rng.sample(steps, min(self.depth - 1, len(steps)))
        self.changes = {step: i for i, step in enumerate(sorted(points), start=1)}

    def choose(self, decision):
        stop = explored_end(decision, None, self.max_depth)
        if stop is not None:
            return stop
        self.keys.add(decision.key())
        enabled = decision.enabled()
        for name in enabled:  # a thread's initial priority, drawn when first enabled: above depth
            if name not in self.priority:
                self.priority[name] = self.depth + self.rng.random()
        chosen = max(enabled, key=self.priority.__getitem__)
        change = self.changes.get(decision.depth + 1)
        if change is not None:
            self.priority[chosen] = change  # below every initial priority
            chosen = max(enabled, key=self.priority.__getitem__)
        return chosen

    def finish(self, outcome) -> None:
        self.longest = max(self.longest, len(outcome.schedule))
