"""Verdicts and statistics of one check: what a user reads, tests assert on, reports render."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from prefetch_check.explorer.trace import Trace

VERIFIED = "VERIFIED"  # exhaustive search, property holds in every reachable behaviour
VIOLATED = "VIOLATED"  # a replayed counterexample exists
BOUNDED = "BOUNDED"  # a limit cut the search before the property could be decided
NOT_APPLICABLE = "NOT APPLICABLE"  # the property says nothing about this configuration


@dataclass(frozen=True)
class PropertyResult:
    name: str
    verdict: str
    description: str
    reason: str = ""  # why violated / why not applicable / what bounded the search
    trace: Optional[Trace] = None


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
    progress_seconds: float = 0.0
    stored_states: Optional[int] = None  # states kept in the visited set, when fewer than `states`

    @property
    def states_per_second(self) -> float:
        return self.states / self.seconds if self.seconds > 0 else float("inf")


@dataclass
class CheckResult:
    name: str  # what was checked, e.g. the predicate's name
    results: dict  # property name -> PropertyResult, in the model's order
    stats: Stats

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
