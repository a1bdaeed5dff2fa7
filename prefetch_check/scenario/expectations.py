"""`[expect.<predicate>]`: the verdicts a scenario's author checked, understood and wrote down.

    [expect.buggy]
    violates = ["no_early_acceptance"]
    verifies = ["host_memory"]
    why.no_early_acceptance = "S checks before P publishes: 0 == 0 accepts"

    [expect.fixed]
    verifies = "all"            # every property not listed under violates / not_applicable
    why.all = "..."             # applies to every expectation without its own why

A property left unlisted is reported but not judged. "verifies" holds only for an
exhaustive search: a BOUNDED verdict fails it.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefetch_check.explorer.report.records import Expectation
from prefetch_check.explorer.result import CheckResult
from prefetch_check.model.protocols.poll.predicates import PredicateError
from prefetch_check.model.predicate_loader import load_predicate
from prefetch_check.scenario.errors import did_you_mean
from prefetch_check.scenario.parameters import ValueProblem
from prefetch_check.scenario.schema import ALL, EXPECT_KEYS, EXPECT_VERDICTS


@dataclass(frozen=True)
class Expect:
    """What one predicate should give: property -> expected verdict, and why."""

    predicate: str
    verdicts: tuple[tuple[str, str], ...]  # (property, verdict) in NAMES order
    why: tuple[tuple[str, str], ...] = ()

    def judge(self, result: CheckResult) -> tuple[Expectation, ...]:
        reasons = dict(self.why)
        return tuple(
            Expectation(prop, verdict, result.verdict(prop), reasons.get(prop, reasons.get(ALL, "")))
            for prop, verdict in self.verdicts
        )


def check_predicate(spec: str, keypath: tuple) -> None:
    try:
        load_predicate(spec)
    except PredicateError as exc:
        raise ValueProblem(keypath, str(exc)) from None


def _names(value, keypath: tuple, allow_all: bool, names: tuple) -> list[str]:
    if allow_all and value == ALL:
        return [ALL]
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        form = 'a list of property names' + (' or "all"' if allow_all else "")
        raise ValueProblem(keypath, f"{keypath[-1]} must be {form}")
    for name in value:
        if name not in names:
            raise ValueProblem(keypath, f"unknown property {name!r} in {keypath[-1]}" + did_you_mean(name, names))
    return value


def parse_expect(table, names: tuple) -> dict[str, Expect]:
    """Validate `[expect]` (predicate -> table) against the protocol's property names; the
    predicates must load."""
    if not isinstance(table, dict):
        raise ValueProblem(("expect",), "expect must be a table of predicates: [expect.buggy], [expect.fixed], ...")
    out = {}
    for pred, body in table.items():
        where = ("expect", pred)
        check_predicate(pred, where)
        if not isinstance(body, dict):
            raise ValueProblem(where, f"expect.{pred} must be a table with violates / verifies / not_applicable / why")
        for key in body:
            if key not in EXPECT_KEYS:
                raise ValueProblem(where + (key,), f"unknown key {key!r} in [expect.{pred}]" + did_you_mean(key, EXPECT_KEYS))
        seen: dict[str, str] = {}
        wants_all = False
        for key in ("violates", "not_applicable", "verifies"):
            if key not in body:
                continue
            for name in _names(body[key], where + (key,), allow_all=key == "verifies", names=names):
                if name == ALL:
                    wants_all = True
                    continue
                if name in seen:
                    raise ValueProblem(where + (key,), f"property {name!r} is listed under both {seen[name]} and {key}")
                seen[name] = key
        if wants_all:
            for name in names:
                seen.setdefault(name, "verifies")
        if not seen:
            raise ValueProblem(where, f"[expect.{pred}] lists no property under violates, verifies or not_applicable")
        why = body.get("why", {})
        if not isinstance(why, dict) or not all(isinstance(v, str) for v in why.values()):
            raise ValueProblem(where + ("why",), 'why must be a table of one-line strings: why.<property> = "..."')
        for name in why:
            if name != ALL and name not in names:
                raise ValueProblem(where + ("why", name), f"why names an unknown property {name!r}" + did_you_mean(name, names + (ALL,)))
        verdicts = tuple((p, EXPECT_VERDICTS[seen[p]]) for p in names if p in seen)
        out[pred] = Expect(pred, verdicts, tuple(why.items()))
    return out
