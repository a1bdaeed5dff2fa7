"""What a report is made of: check results, each with the verdicts someone expected.

Generic on purpose: a subject (e.g. a scenario) checked by a variant (e.g. a
predicate), its `CheckResult`, and the expectations judged against it. Reports
never import a model; they render these records.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prefetch_check.explorer.result import BOUNDED, CheckResult

UNJUDGED = 3  # the exit status when something could not be judged (a search a limit cut), nothing failed


@dataclass(frozen=True)
class Expectation:
    """One stated verdict for one property, and the verdict the check gave."""

    prop: str
    expected: str  # VERIFIED, VIOLATED or NOT APPLICABLE
    actual: str
    why: str = ""  # the author's one-line explanation, shown when it fails

    @property
    def holds(self) -> bool:
        # exact match: a BOUNDED search never counts as VERIFIED
        return self.actual == self.expected


@dataclass(frozen=True)
class Entry:
    subject: str  # e.g. the scenario (and matrix case)
    variant: str  # e.g. the predicate
    result: CheckResult
    expectations: tuple[Expectation, ...] = ()
    parameters: dict = field(default_factory=dict)  # JSON-ready description of the subject
    source: str = ""  # e.g. the scenario file

    def expectation(self, prop: str):
        for e in self.expectations:
            if e.prop == prop:
                return e
        return None

    @property
    def failed(self) -> list[Expectation]:
        return [e for e in self.expectations if not e.holds]


@dataclass(frozen=True)
class Labels:
    """Column titles, so a report speaks its caller's words."""

    subject: str = "subject"
    variant: str = "variant"
    title: str = "check results"


def summary(entries) -> tuple[int, int]:
    """(expectations that hold, expectations that fail)."""
    total = sum(len(e.expectations) for e in entries)
    failed = sum(len(e.failed) for e in entries)
    return total - failed, failed


def exit_status(entries) -> int:
    """1 when an expectation does not hold on a finished search (a verdict differs); else 3 when
    some property could not be judged (a search a limit cut: BOUNDED, expected or not), so a CI
    gate never passes on a search that did not finish; else 0."""
    entries = list(entries)
    if any(e.actual != BOUNDED for entry in entries for e in entry.failed):
        return 1
    if any(pr.verdict == BOUNDED for entry in entries for pr in entry.result.results.values()):
        return UNJUDGED
    return 0
