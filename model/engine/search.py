"""The one search path: a protocol instance, searched at a reduction level, judged, traced.

The API, the command line, the mutation run, the soundness harness and user variants
all come through `search`, so a property is judged the same way wherever it is asked.
The search runs on the compiled model; counterexamples are replayed a second time
through the readable model, so traces hold the protocol's own rank states.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from prefetch_check.explorer.check import check as check_model
from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.options import SearchOptions, observers_of
from prefetch_check.explorer.replay import replay
from prefetch_check.explorer.result import CheckResult
from prefetch_check.model.engine.compiled import CompiledModel
from prefetch_check.model.engine.readable import ReadableModel

FULL = "full"  # rank symmetry, partial-order reduction and chain fusion
SYMMETRY = "symmetry"  # rank symmetry only: counterexamples are shortest as found
OFF = "off"  # the plain state graph
LEVELS = (FULL, SYMMETRY, OFF)


@dataclass(frozen=True)
class Reductions:
    """The reductions a search uses, and why (reports show `note`)."""

    level: str
    note: str
    settled: bool = False  # vouched for by the test suite (the class's own `reductions_vouched`): no note to print


def search(
    protocol, reductions: Reductions, limits: Limits = Limits(), on_progress=None, name: Optional[str] = None,
    workers: int = 1,
) -> CheckResult:
    """Judge every property of `protocol` (an instance, with its configuration and predicate);
    `workers`: processes the search runs on (explorer/parallel.py), the same verdicts for any number."""
    model = CompiledModel(protocol)
    level = reductions.level
    options = SearchOptions(
        limits,
        canonical=model.canonicalizer() if level in (FULL, SYMMETRY) else None,
        expand=model.reduced_successors if level == FULL else None,
        fuse=level == FULL and workers == 1,
        workers=workers,
        observers=observers_of(on_progress),
    )
    result = check_model(model, options, name=name or protocol.predicate_name)
    readable = ReadableModel(protocol)
    for prop_name, prop in result.results.items():
        if prop.trace is not None:
            result.results[prop_name] = replace(prop, trace=replay(readable, prop.trace.schedule))
    result.model = readable
    result.stats.reductions = reductions.note
    result.stats.reductions_settled = reductions.settled
    return result
