"""PCT, probabilistic concurrency testing (Burckhardt, Kothari, Musuvathi, Nagarakatte,
ASPLOS 2010): random priorities per actor and d-1 priority change points.

Every actor gets a random priority; each step is taken by the enabled actor of highest
priority (among its own enabled actions, if it has several, one at random). Before
the run, d-1 distinct change points are drawn uniformly from the steps 1..k (k: the
depth bound); at the i-th change point the actor about to step drops to priority
d-i, below every initial priority, and the next actor in line steps instead.

A run that comes back to a state it has already visited is going round a busy-wait
loop: under strict priorities the looping actor would starve everyone below it until
the depth bound. As Shuttle and Coyote do for a thread that yields, the actor about to
step there drops below every other priority (a departure from the paper, which
assumes threads do not spin).

A bug of depth d is one that shows whenever d particular ordering constraints between
steps hold. PCT finds it in one run with probability at least 1 / (n * k^(d-1)) for
n actors and runs of at most k steps: the first constraint's actor must get the top
priority (1/n) and each of the d-1 change points must fall on its step (1/k each).
"""

from __future__ import annotations

from prefetch_check.explorer.interface import hooks

import random


def pct_bound(actors: int, steps: int, depth: int) -> float:
    """The probability PCT of depth `depth` finds a bug of that depth in one run, at least:
    1 / (n * k^(d-1)) for n = `actors`, k = `steps`."""
    return 1.0 / (actors * steps ** (depth - 1))


class PCT:
    name = "pct"

    def __init__(self, depth: int):
        if depth < 1:
            raise ValueError("the PCT depth d is at least 1")
        self.depth = depth

    def describe(self) -> str:
        return f"PCT with depth d={self.depth} ({self.depth - 1} priority change point(s) per run)"

    def start(self, model, rng: random.Random, depth: int) -> None:
        self._rng = rng
        self._priority: dict = {}
        self._seen: set = set()
        self._yields = 0
        count = min(self.depth - 1, depth)
        points = sorted(rng.sample(range(1, depth + 1), count)) if count else []
        # step number (1-based) -> the low priority the actor about to take it drops to
        self._changes = {step: self.depth - i for i, step in enumerate(points, start=1)}
        actors = hooks(model).actors
        if actors is not None:  # every actor known up front: a uniformly random order of them
            for actor in actors():
                self._priority[actor] = (1, rng.random())

    def _of(self, actor):
        p = self._priority.get(actor)
        if p is None:  # an actor not announced by actors(): a random place among the others
            p = self._priority[actor] = (1, self._rng.random())
        return p

    def choose(self, model, state, choices: list, step: int) -> int:
        actor_of = model.actor
        best = max((actor_of(a) for a, _ in choices), key=self._of)
        low = self._changes.get(step + 1)
        if low is not None:
            self._priority[best] = (0, low)
        if state in self._seen:  # a busy-wait loop: the looping actor yields to everyone else
            self._yields += 1
            self._priority[best] = (-1, -self._yields)
        else:
            self._seen.add(state)
        if low is not None or self._priority[best][0] < 0:
            best = max((actor_of(a) for a, _ in choices), key=self._of)
        mine = [i for i, (a, _) in enumerate(choices) if actor_of(a) == best]
        return mine[0] if len(mine) == 1 else mine[self._rng.randrange(len(mine))]
