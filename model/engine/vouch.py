"""The soundness harness: a reduction is sound for a protocol where it never changes a verdict.

`compare` searches one configuration twice, with every reduction and without any, and
returns the first property whose verdict differs (or None). It also asks that the reduced
search takes every kind of step the plain one takes: a persistent set never makes a step
unreachable (a step it postpones stays enabled, and no rank can loop alone), so a kind that
only the plain search takes means a step declared to commute does not (this is how
`P.take` under hit-time allocation was found: it reads `terminated`, which the scheduler
may set first). The test suite runs it for
every built-in protocol on random configurations and on every shipped scenario; that is
what a protocol's `reductions_vouched = True` stands for. A user's variant (any class
that does not set it in its own body) is vouched for here, at run time: `compare` on the
protocol's own small harness configurations and, when it is small enough to search
plainly, on the configuration being checked. Where the harness cannot vouch, the plain
search runs and the report says so.
"""

from __future__ import annotations

from typing import Optional

from prefetch_check.explorer.limits import Limits
from prefetch_check.model.engine.search import FULL, OFF, SYMMETRY, Reductions, search

PLAIN_BUDGET = 50_000  # states of a plain harness search; a larger configuration is not compared
_vouched: dict = {}  # (protocol class, predicate) -> Reductions, for this process


def compare(protocol_class, config, predicate, budget: int = PLAIN_BUDGET) -> Optional[tuple[str, str]]:
    """How the fully reduced search of one configuration disagrees with the plain one, as (what,
    detail), e.g. ("change a verdict", "progress: VERIFIED with the reductions, VIOLATED
    without"), or None. Raises `TooLarge` when the plain search does not finish within `budget` states."""
    plain = search(protocol_class(config, predicate), Reductions(OFF, ""), Limits(max_states=budget))
    if not plain.stats.complete:
        raise TooLarge(f"the plain search needs more than {budget:,} states")
    reduced = search(protocol_class(config, predicate), Reductions(FULL, ""))
    for name, r in plain.results.items():
        if reduced.results[name].verdict != r.verdict:
            return "change a verdict", f"{name}: {reduced.results[name].verdict} with the reductions, {r.verdict} without"
    lost = hidden_steps(reduced, plain)
    if lost:
        return "hide a step", f"{', '.join(lost)}: taken by the plain search, never with the reductions"
    return None


def hidden_steps(reduced, plain) -> list[str]:
    """The step kinds the plain search takes and the reduced one never does."""
    return [k for k in plain.stats.action_counts if k not in reduced.stats.action_counts]


class TooLarge(Exception):
    """A configuration too large for the plain search the harness compares against."""


def choose(protocol_class, predicate, config, requested) -> Reductions:
    """The reductions a search of `protocol_class` may use, as asked (`requested`: True for the
    most that is sound, or one of `search.LEVELS`)."""
    if requested is False or requested == OFF:
        return Reductions(OFF, "off: the plain state graph, as asked")
    if requested == SYMMETRY:
        return Reductions(SYMMETRY, "rank symmetry only, as asked (counterexamples shortest as found)")
    if protocol_class.__dict__.get("reductions_vouched", False):
        return Reductions(FULL, "full: vouched for this protocol by the soundness harness of the test suite", settled=True)
    key = (protocol_class, predicate if isinstance(predicate, str) else id(predicate), config)
    if key not in _vouched:
        _vouched[key] = _vouch(protocol_class, predicate, config)
    return _vouched[key]


def _vouch(protocol_class, predicate, config) -> Reductions:
    harness = list(protocol_class.harness_configs())
    configs = harness + [config]
    compared = 0
    for i, c in enumerate(configs):
        try:
            difference = compare(protocol_class, c, predicate)
        except TooLarge:
            continue
        compared += 1
        if difference is not None:
            what, detail = difference
            return Reductions(
                OFF,
                f"off: the soundness harness found that the reductions {what} of this variant "
                f"({detail}, on {'the configuration checked' if i == len(harness) else f'harness configuration {i + 1}'}), "
                "so the plain search ran",
            )
    if not compared:
        return Reductions(OFF, "off: no configuration small enough for the soundness harness to vouch for the reductions")
    return Reductions(
        FULL, f"full: vouched for this variant by the soundness harness ({compared} configurations, reduced vs plain: the same verdicts and step kinds)"
    )
