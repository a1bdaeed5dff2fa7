"""Verdicts and statistics of one check: what a user reads, tests assert on, reports render."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from prefetch_check.explorer.trace import Trace

VERIFIED = "VERIFIED"  # exhaustive search, property holds in every reachable behaviour
VIOLATED = "VIOLATED"  # a replayed counterexample exists
BOUNDED = "BOUNDED"  # a limit cut the search before the property could be decided
NOT_APPLICABLE = "NOT APPLICABLE"  # the property says nothing about this configuration
NOT_JUDGED = "NOT JUDGED"  # this engine cannot judge the property in this configuration (the reason says why)
NOT_MODELLED = "NOT MODELLED"  # a path the engine does not model was reached: nothing past it is judged


@dataclass(frozen=True)
class PropertyResult:
    name: str
    verdict: str
    description: str
    reason: str = ""  # why violated / why not applicable / what bounded the search
    trace: Optional[Trace] = None

    def __repr__(self) -> str:
        """One line: the trace's states would fill a screen (the schedule replays it)."""
        trace = "" if self.trace is None else f", trace of {len(self.trace)} steps: {self.trace.schedule!r}"
        reason = f", {self.reason!r}" if self.reason else ""
        return f"PropertyResult({self.name!r}, {self.verdict}{reason}{trace})"


@dataclass
class Stats:
    states: int  # distinct states visited (stored + fused through, see explorer/bfs.py)
    transitions: int
    max_depth: int
    seconds: float
    complete: bool
    stop_reason: Optional[str]
    action_counts: dict = field(default_factory=dict)
    never_fired: tuple = ()
    frontier: int = 0
    peak_memory_mb: float = 0.0
    progress_seconds: float = 0.0  # the progress analysis, after the search
    shortening_seconds: float = 0.0  # searching for shortest counterexamples, after a reduced search
    stored_states: Optional[int] = None  # states kept in the visited set, when fewer than `states`
    reductions: str = ""  # which reductions the search used and why (set by whoever chose them)
    reductions_settled: bool = False  # they were settled before the run (nothing for a user to be told)

    @property
    def total_seconds(self) -> float:
        """The whole check: search, shortening and progress analysis."""
        return self.seconds + self.shortening_seconds + self.progress_seconds

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else float("inf")


# the order a summary lists verdicts in: what needs attention first
_VERDICT_ORDER = (VIOLATED, BOUNDED, NOT_APPLICABLE, VERIFIED)


@dataclass
class CheckResult:
    name: str  # what was checked, e.g. the predicate's name
    results: dict  # property name -> PropertyResult, in the model's order
    stats: Stats
    # The model whose states the traces hold, to describe and draw them (`show`); set by whoever
    # ran the check (prefetch_check.check sets the readable protocol model). Not compared, and
    # not pickled (a model may hold functions that do not pickle): a result that crossed a
    # process boundary has None here.
    model: Optional[object] = field(default=None, compare=False, repr=False)

    def __repr__(self) -> str:
        """Short enough for an assertion message: the verdicts, grouped, and the state count."""
        groups = {}
        for n, r in self.results.items():
            groups.setdefault(r.verdict, []).append(n)
        order = [v for v in _VERDICT_ORDER if v in groups] + [v for v in groups if v not in _VERDICT_ORDER]
        verdicts = "; ".join(f"{v}: {', '.join(groups[v])}" for v in order)
        searched = f"{self.stats.states:,} states" + ("" if self.stats.complete else f", cut: {self.stats.stop_reason}")
        return f"CheckResult({self.name!r}, {verdicts}; {searched})"

    def __getstate__(self):
        state = dict(self.__dict__)
        state["model"] = None
        return state

    def verdict(self, prop: str) -> str:
        return self.results[prop].verdict

    def trace(self, prop: str) -> Optional[Trace]:
        return self.results[prop].trace

    @property
    def violated(self) -> list[str]:
        return [n for n, r in self.results.items() if r.verdict == VIOLATED]

    @property
    def verified(self) -> list[str]:
        return [n for n, r in self.results.items() if r.verdict == VERIFIED]

    @property
    def all_verified(self) -> bool:
        """Every property is VERIFIED or NOT APPLICABLE, after an exhaustive search."""
        return all(r.verdict in (VERIFIED, NOT_APPLICABLE) for r in self.results.values())
