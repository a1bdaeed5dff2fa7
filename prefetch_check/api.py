"""The Python API: check a configuration with a predicate from a user's own tests.

    from prefetch_check import check, compare, uniform_config
    result = check(uniform_config(ranks=2, requests=2, pages=2), "fixed")
    assert result.all_verified

`protocol` is a built-in protocol's name (default "predicate-poll"), a protocol class, or
`package.module:ClassName` of a user's variant (a subclass that overrides one step or
hook). `check` and `check_case` are shorthand for the builder (`prefetch_check.checker`):
`Checker.of(config, predicate, protocol).limits(...).workers(n).check()`, which also
simulates and takes the census. Reductions are used where they are vouched for (`model/engine/vouch.py`); the
result's `stats.reductions` says which ran and why.
"""

from __future__ import annotations

from typing import Iterable, Optional

from prefetch_check.checker import Checker
from prefetch_check.explorer.limits import Limits
from prefetch_check.explorer.result import CheckResult
from prefetch_check.model.engine.compiled import CompiledModel
from prefetch_check.model.engine.readable import ReadableModel


def build_protocol(config, predicate="fixed", protocol=None):
    """An instance of the protocol (class, name or `package.module:Class`) for one configuration and predicate."""
    return Checker.of(config, predicate, protocol).protocol()


def build_model(config, predicate="fixed", protocol=None) -> ReadableModel:
    """The readable model (`explorer.interface.Model`): states are tuples of the protocol's rank
    states; what traces hold and `replay` runs."""
    return ReadableModel(build_protocol(config, predicate, protocol))


def search_model(config, predicate="fixed", protocol=None) -> CompiledModel:
    """The explorer model the searches run on (compact states): for strategies other than the
    exhaustive search, such as simulation."""
    return Checker.of(config, predicate, protocol).search_model()


def check(
    config,
    predicate="fixed",
    limits: Optional[Limits] = None,
    on_progress=None,
    reductions=True,
    protocol=None,
    workers: int = 1,
) -> CheckResult:
    """Judge every property of the protocol for one configuration and one predicate.

    `reductions`: True for every reduction that is vouched for, False (or "off") for the plain
    state graph (slower; the reference the reductions are tested against), "symmetry" for rank
    symmetry alone (counterexamples shortest as found). `workers`: processes the one search runs
    on (the same counts, verdicts and counterexamples for any number from 2 on; see docs/design.md).
    `limits`: where they set no memory limit, the command line's default applies (half of the
    machine's memory), so a configuration too big for the machine ends BOUNDED with its figures.
    """
    return (Checker.of(config, predicate, protocol).limits(limits).on_progress(on_progress)
            .reductions(reductions).workers(workers).check())


def check_case(case, predicate="fixed", limits: Optional[Limits] = None, on_progress=None, reductions=True,
               workers: int = 1) -> CheckResult:
    """`check` of a scenario case (`scenario.Case`): the case builds its protocol instance, so its
    configuration is always judged under its own protocol."""
    return (Checker.of_case(case, predicate).limits(limits).on_progress(on_progress)
            .reductions(reductions).workers(workers).check())


def compare(
    config,
    predicates: Iterable = ("buggy", "fixed"),
    limits: Optional[Limits] = None,
    on_progress=None,
    reductions=True,
    protocol=None,
) -> dict[str, CheckResult]:
    """The same configuration under several predicates, side by side (name -> result)."""
    out = {}
    for p in predicates:
        result = check(config, p, limits, on_progress, reductions, protocol)
        out[result.name] = result
    return out
