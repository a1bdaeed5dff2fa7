"""Depth-first search over choice prefixes with a state cache: the executor's exhaustive search
(stateless model checking). Each execution replays a prefix from scratch, then takes the first
enabled thread until the run ends or reaches a state already expanded; the alternatives at every
state it expanded are pushed, the deepest on top. Sound because a state's key (what every thread
observed, plus the stand-ins' contents) determines its future."""

from __future__ import annotations

from prefetch_check.model.code.strategies.ends import explored_end, replayed


class DepthFirst:
    exhaustive = True

    def __init__(self, max_depth: int):
        self.max_depth = max_depth
        self.stack: list[list[str]] = [[]]
        self.seen: set = set()
        self.prefix: list[str] = []
        self.expanded: list[tuple[int, list[str], str]] = []  # (depth, enabled, chosen) past the prefix

    @property
    def states(self) -> int:
        return len(self.seen)

    def describe(self) -> str:
        return "depth-first search"

    def more(self) -> bool:
        return bool(self.stack)

    def start(self) -> None:
        self.prefix, self.expanded = self.stack.pop(), []

    def choose(self, decision):
        depth = decision.depth
        if depth < len(self.prefix):
            return replayed(decision, self.prefix[depth])
        stop = explored_end(decision, self.seen, self.max_depth)
        if stop is not None:
            return stop
        enabled = decision.enabled()
        self.expanded.append((depth, enabled, enabled[0]))
        return enabled[0]

    def finish(self, outcome) -> None:
        schedule = outcome.schedule
        for depth, enabled, chosen in self.expanded:
            for alt in reversed(enabled):
                if alt != chosen:
                    self.stack.append(schedule[:depth] + [alt])
