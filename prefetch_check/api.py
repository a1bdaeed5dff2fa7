"""The Python API: check a configuration with a predicate from a user's own tests.

    from prefetch_check import check, compare, uniform_config
    result = check(uniform_config(ranks=2, requests=2, pages=2), "fixed")
    assert result.all_verified
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from prefetch_check.explorer.check import check as check_model
from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.replay import replay
from prefetch_check.explorer.result import CheckResult
from prefetch_check.model.compiled import CompiledProtocol
from prefetch_check.model.config import Config
from prefetch_check.model.predicates import Predicate
from prefetch_check.model.protocol import PrefetchProtocol


def build_model(config: Config, predicate: Predicate | str = "fixed") -> PrefetchProtocol:
    return PrefetchProtocol(config, predicate)


def search_model(config: Config, predicate: Predicate | str = "fixed"):
    """The explorer model the searches run on (compact states, `explorer.interface.Model`):
    for strategies other than the exhaustive search, such as simulation."""
    return CompiledProtocol(build_model(config, predicate))


def check(
    config: Config,
    predicate: Predicate | str = "fixed",
    limits: Limits = Limits(),
    on_progress=None,
    reductions: bool = True,
) -> CheckResult:
    """Judge every property of the protocol for one configuration and one predicate.

    `reductions=False` searches the plain state graph (no rank symmetry, no partial-order
    reduction): slower, and the reference the reductions are tested against.
    """
    spec = build_model(config, predicate)
    model = CompiledProtocol(spec)
    result = check_model(
        model,
        limits,
        name=spec.predicate_name,
        canonical=model.canonicalizer() if reductions else None,
        on_progress=on_progress,
        expand=model.reduced_successors if reductions else None,
        fuse=reductions,
    )
    return _in_spec_states(spec, result)


def _in_spec_states(spec, result: CheckResult) -> CheckResult:
    """Re-run every counterexample through the readable specification (a second replay check),
    so traces hold `Rank` tuples rather than the search's compact codes; the result keeps the
    specification to describe them (`result.show(prop)`)."""
    for name, prop in result.results.items():
        if prop.trace is not None:
            result.results[name] = replace(prop, trace=replay(spec, prop.trace.schedule))
    result.model = spec
    return result


def compare(
    config: Config,
    predicates: Iterable[Predicate | str] = ("buggy", "fixed"),
    limits: Limits = Limits(),
    on_progress=None,
    reductions: bool = True,
) -> dict[str, CheckResult]:
    """The same configuration under several predicates, side by side (name -> result)."""
    out = {}
    for p in predicates:
        result = check(config, p, limits, on_progress, reductions)
        out[result.name] = result
    return out
