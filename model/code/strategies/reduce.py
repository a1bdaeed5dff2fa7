"""A reduction as a wrapper (not a strategy of its own): the wrapped strategy chooses among the
world's persistent set (`ample`: the ack-drain world's rank-level set, the predicate-poll world's
collective singletons before it) instead of every enabled thread. A replayed choice is still
checked against every enabled thread, and nothing is computed for steps a strategy replays."""

from __future__ import annotations

from prefetch_check.model.code.rt.decision import Narrowed


class Reduced:
    def __init__(self, inner):
        self.inner = inner

    @property
    def exhaustive(self) -> bool:
        return self.inner.exhaustive

    @property
    def states(self) -> int:
        return self.inner.states

    def describe(self) -> str:
        return self.inner.describe()

    def more(self) -> bool:
        return self.inner.more()

    def start(self) -> None:
        self.inner.start()

    def choose(self, decision):
        return self.inner.choose(Narrowed(decision))

    def finish(self, outcome) -> None:
        self.inner.finish(outcome)
