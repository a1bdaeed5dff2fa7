"""`[limits]`: the search budget of a scenario, for every predicate or one of them.

    [limits]
    max_states = 300_000        # every predicate
    [limits.buggy]
    max_states = 20_000         # buggy only: its counterexamples come early

Flags on the command line (--max-states, ...) override both. A limit that cuts a
search makes its undecided verdicts BOUNDED, which never satisfies "verifies".
"""

from __future__ import annotations

from prefetch_check.explorer.limits import Limits
from prefetch_check.scenario.errors import did_you_mean
from prefetch_check.scenario.expectations import check_predicate
from prefetch_check.scenario.parameters import ValueProblem
from prefetch_check.scenario.schema import LIMIT_KEYS


def _value(key: str, value, keypath: tuple):
    kind, low = LIMIT_KEYS[key]
    ok = not isinstance(value, bool) and (isinstance(value, int) or (kind is float and isinstance(value, float)))
    if not ok or value < low or (kind is float and value == 0):
        what = "an integer >= 1" if kind is int else "a number of seconds > 0"
        raise ValueProblem(keypath, f"limits: {key} must be {what}, got {value!r}")
    return value


def parse_limits(table) -> dict:
    """{None: {...}, predicate: {...}}: the scenario-wide budget and per-predicate overrides."""
    if not isinstance(table, dict):
        raise ValueProblem(("limits",), "limits must be a table: [limits] with max_states / max_depth / time_limit")
    out: dict = {None: {}}
    for key, value in table.items():
        if isinstance(value, dict):
            check_predicate(key, ("limits", key))
            out[key] = {}
            for sub, v in value.items():
                if sub not in LIMIT_KEYS:
                    raise ValueProblem(("limits", key, sub), f"unknown limit {sub!r} in [limits.{key}]" + did_you_mean(sub, LIMIT_KEYS))
                out[key][sub] = _value(sub, v, ("limits", key, sub))
        elif key in LIMIT_KEYS:
            out[None][key] = _value(key, value, ("limits", key))
        else:
            raise ValueProblem(("limits", key), f"unknown limit {key!r} in [limits]" + did_you_mean(key, LIMIT_KEYS))
    return out


def resolve(limits: dict, predicate: str, overrides: dict) -> Limits:
    """Scenario-wide, then the predicate's own, then the command line's: the last word wins."""
    merged = {**limits.get(None, {}), **limits.get(predicate, {}), **{k: v for k, v in overrides.items() if v is not None}}
    return Limits(**merged)
