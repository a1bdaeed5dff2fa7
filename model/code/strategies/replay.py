"""Replay of a choice list (a counterexample's schedule), then the first enabled thread until the
run ends, as the search's runs go on past their prefix (no state cache): one execution."""

from __future__ import annotations

from prefetch_check.model.code.strategies.ends import explored_end, replayed


class Replay:
    exhaustive = False
    states = 0

    def __init__(self, schedule: list[str], max_depth: int):
        self.schedule, self.max_depth, self.left = list(schedule), max_depth, 1

    def describe(self) -> str:
        return f"a replay of {len(self.schedule)} choices"

    def more(self) -> bool:
        return self.left > 0

    def start(self) -> None:
        self.left -= 1

    def choose(self, decision):
        if decision.depth < len(self.schedule):
            return replayed(decision, self.schedule[decision.depth])
        return explored_end(decision, None, self.max_depth) or decision.enabled()[0]

    def finish(self, outcome) -> None:
        pass


def replay_strategy(schedule: list[str], limits):
    """The replay of `schedule` under the reduction `limits` asks for (as the search ran it)."""
    from prefetch_check.model.code.strategies.reduce import Reduced

    replay = Replay(schedule, limits.max_depth)
    return Reduced(replay) if limits.reduce else replay
