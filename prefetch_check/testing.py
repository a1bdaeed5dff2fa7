"""Assertions for your own tests (pytest or any runner): a failure says which property, its
verdict, why, and the schedule that replays the counterexample.

    from prefetch_check import check, uniform_config
    from prefetch_check.testing import assert_as_expected, assert_verified, assert_violated, check_scenario

    def test_the_fix_holds_at_tp2():
        assert_verified(check(uniform_config(ranks=2, requests=2), "fixed"))

    def test_the_race_is_found():
        trace = assert_violated(check_scenario("scenarios/tp2.toml", predicate="buggy"), "no_early_acceptance")
        assert len(trace) <= 6

    def test_the_scenario_holds_what_it_promises():
        assert_as_expected(check_scenario("scenarios/tp-production.toml", case=1, predicate="fixed"))

A result of `check_scenario` knows where it came from, so its failure message also gives the
`prefetch-check replay` and `prefetch-check trace` command lines; any result can draw the
counterexample itself with `prefetch_check.render(result, prop)` (terminal) or
`render(result, prop, "html")`.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, fields
from typing import Optional

from prefetch_check.api import check_case
from prefetch_check.scenario import one_case
from prefetch_check.explorer.result import NOT_APPLICABLE, VERIFIED, VIOLATED, CheckResult
from prefetch_check.explorer.trace import Trace

__all__ = ["ScenarioResult", "assert_as_expected", "assert_verified", "assert_violated", "check_scenario", "explain"]


@dataclass(repr=False)
class ScenarioResult(CheckResult):
    """A CheckResult that knows the scenario case and predicate it was checked with."""

    scenario: str = ""  # the scenario file
    case: Optional[int] = None  # 1-based case of a scenario with a [matrix], None for a single case
    predicate: str = ""

    @property
    def command_args(self) -> str:
        """`scenarios/tp2.toml --case 2 --predicate buggy`: what the CLI needs to check the same thing."""
        case = f" --case {self.case}" if self.case is not None else ""
        return f"{shlex.quote(self.scenario)}{case} --predicate {shlex.quote(self.predicate)}"

    def replay_command(self, schedule: str) -> str:
        return f"prefetch-check replay {self.command_args} {shlex.quote(schedule)}"

    def trace_command(self, prop: str) -> str:
        return f"prefetch-check trace {self.command_args} --property {prop}"


def check_scenario(path, case: Optional[int] = None, predicate: str = "fixed", **limits) -> ScenarioResult:
    """Check one case of a scenario file with its own [limits] (override them with e.g.
    `max_states=10_000`), as `prefetch-check trace` would. `case` is 1-based, as `--case`; a
    scenario with a [matrix] needs it."""
    scenario, chosen = one_case(str(path), case)
    overrides = {"max_states": None, "max_depth": None, "time_limit": None}
    unknown = set(limits) - set(overrides)
    if unknown:
        raise TypeError(f"check_scenario: unknown limit(s) {', '.join(sorted(unknown))}; use {', '.join(overrides)}")
    overrides.update(limits)
    result = check_case(chosen, predicate, scenario.limits_for(predicate, overrides))
    number = scenario.case_number(chosen)
    values = {f.name: getattr(result, f.name) for f in fields(CheckResult)}
    return ScenarioResult(**values, scenario=str(path), case=number, predicate=predicate)


def explain(result: CheckResult, props, expected: Optional[dict] = None) -> str:
    """The lines of a failure message: each property's verdict and reason (and what was
    expected, and why, when `expected` maps it to an Expectation), and for a counterexample
    its schedule and how to replay and see it."""
    lines = []
    for name in props:
        pr = result.results[name]
        x = (expected or {}).get(name)
        head = f"expected {x.expected}, got {pr.verdict}" if x else pr.verdict
        lines.append(f"  {name} {head}" + (f": {pr.reason}" if pr.reason else ""))
        if x is not None and x.why:
            lines.append(f"    expected because: {x.why}")
        if pr.trace is None:
            continue
        lasso = f", cycle from step {pr.trace.cycle_start + 1}" if pr.trace.cycle_start is not None else ""
        lines.append(f"    schedule ({len(pr.trace)} steps{lasso}): {pr.trace.schedule}")
        if isinstance(result, ScenarioResult):
            lines.append(f"    replay:  {result.replay_command(pr.trace.schedule)}")
            lines.append(f"    see it:  {result.trace_command(name)}")
        else:
            lines.append(f"    see it:  prefetch_check.render(result, {name!r})  (or render(result, {name!r}, 'html'))")
    return "\n".join(lines)


def assert_verified(result: CheckResult, *props: str) -> None:
    """Every property (or the ones named) VERIFIED by an exhaustive search. Without names a
    NOT APPLICABLE property passes too (as `result.all_verified`); a named one must be VERIFIED."""
    __tracebackhide__ = True  # pytest: show the caller's line
    _known(result, props)
    ok = (VERIFIED,) if props else (VERIFIED, NOT_APPLICABLE)
    names = props or tuple(result.results)
    failed = [n for n in names if result.results[n].verdict not in ok]
    if failed:
        raise AssertionError(
            f"{_subject(result)}: {len(failed)} of {len(names)} properties not verified ({_searched(result)})\n"
            + explain(result, failed)
        )


def assert_violated(result: CheckResult, prop: str) -> Trace:
    """`prop` VIOLATED with a counterexample; returns its trace for further assertions."""
    __tracebackhide__ = True
    _known(result, (prop,))
    pr = result.results[prop]
    if pr.verdict != VIOLATED or pr.trace is None:
        raise AssertionError(f"{_subject(result)}: expected {prop} VIOLATED ({_searched(result)})\n" + explain(result, [prop]))
    return pr.trace


def assert_as_expected(result: ScenarioResult) -> None:
    """The verdicts the scenario's [expect.<predicate>] writes down, with its `why` on a failure."""
    __tracebackhide__ = True
    if not isinstance(result, ScenarioResult):
        raise TypeError("assert_as_expected needs the result of check_scenario (it reads the scenario's [expect])")
    scenario, _ = one_case(result.scenario, result.case)
    expect = scenario.expectation(result.predicate)
    if expect is None:
        raise AssertionError(f"{result.scenario} has no [expect.{result.predicate}]: nothing to judge")
    failed = [x for x in expect.judge(result) if not x.holds]
    if failed:
        raise AssertionError(
            f"{_subject(result)}: {len(failed)} expectation(s) of [expect.{result.predicate}] do not hold "
            f"({_searched(result)})\n" + explain(result, [x.prop for x in failed], {x.prop: x for x in failed})
        )


def _known(result: CheckResult, props) -> None:
    unknown = [p for p in props if p not in result.results]
    if unknown:
        raise ValueError(f"no property {', '.join(map(repr, unknown))}; the properties are {', '.join(result.results)}")


def _subject(result: CheckResult) -> str:
    if isinstance(result, ScenarioResult):
        return f"{result.command_args}"
    return result.name


def _searched(result: CheckResult) -> str:
    s = result.stats
    return f"{s.states:,} states, " + ("exhaustive" if s.complete else f"search cut: {s.stop_reason}")
