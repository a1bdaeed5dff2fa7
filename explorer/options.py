"""How one search runs: one value with every option, and the observers that watch it.

Options travel as one `SearchOptions` value from the caller to the search, never as loose
keyword arguments. What a search reports while it runs (progress, the phase it is in) goes
to its observers; the state graph the progress analysis needs is recorded by an observer
of its own kind (`graph.GraphRecorder`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Optional

from prefetch_check.explorer.limits import Limits


@dataclass(frozen=True)
class SearchOptions:
    """limits:          a limit reached makes every undecided verdict BOUNDED
    canonical:       state -> the representative of its orbit (symmetry reduction), or None
    expand:          state -> (chosen successors, the enabled actions or a bitmask of their
                     actors): a reduced expansion (partial-order reduction), or None for every
                     successor; the enabled actors, not only the chosen ones, decide fairness
    fuse:            walk through states with a single chosen step without storing them
                     (needs `expand`; see bfs.py)
    stop_when_found: end once every safety property has a finding (the shortening search)
    workers:         processes one search runs on (parallel.py; 1: this process alone); the
                     result is the same whatever the number, but with more than one no chain
                     fusion (every visited state is stored)
    observers:       `SearchObserver`s told about progress and phases"""

    limits: Limits = Limits()
    canonical: Optional[Callable] = None
    expand: Optional[Callable] = None
    fuse: bool = False
    stop_when_found: bool = False
    workers: int = 1
    observers: tuple = field(default=(), compare=False)

    def __post_init__(self) -> None:
        if self.fuse and self.expand is None:
            raise ValueError("chain fusion needs a reduced expansion (expand=...)")
        if self.workers < 1:
            raise ValueError(f"a search needs at least one worker, got {self.workers}")

    def with_(self, **changes) -> "SearchOptions":
        return replace(self, **changes)


class SearchObserver:
    """Told what a check is doing. `info` has `phase` ("search", "progress analysis",
    "shortening"), `seconds` in that phase, and for the search `states`, `expanded`,
    `transitions`, `frontier`, `depth`; `done: True` on a phase's last report."""

    def on_progress(self, info: dict) -> None:
        pass


class CallbackObserver(SearchObserver):
    """An observer that hands every report to a function (the API's `on_progress`)."""

    def __init__(self, callback: Callable[[dict], None]):
        self.callback = callback

    def on_progress(self, info: dict) -> None:
        self.callback(info)


def observers_of(on_progress: Optional[Callable]) -> tuple:
    """The observers for an `on_progress` callback (None: none)."""
    return () if on_progress is None else (CallbackObserver(on_progress),)
