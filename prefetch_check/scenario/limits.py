"""`[limits]`: the search budget of a scenario, for every predicate or one of them.

    [limits]
    max_states = 300_000        # every predicate
    max_memory = 4000           # MB of peak resident memory of the checking process
    [limits.buggy]
    max_states = 20_000         # buggy only: its counterexamples come early

Flags on the command line (--max-states, ...) override both. A limit that cuts a
search makes its undecided verdicts BOUNDED, which never satisfies "verifies".
Values are kept under the field names of `explorer.limits.Limits` (max_memory -> max_memory_mb).
"""

from __future__ import annotations

import math

from prefetch_check.explorer.limits import Limits
from prefetch_check.scenario.errors import did_you_mean
from prefetch_check.scenario.expectations import check_predicate
from prefetch_check.scenario.parameters import ValueProblem
from prefetch_check.scenario.schema import LIMIT_FIELDS, LIMIT_KEYS


def _value(key: str, value, keypath: tuple):
    kind, low = LIMIT_KEYS[key]
    ok = not isinstance(value, bool) and (isinstance(value, int) or (kind is float and isinstance(value, float)))
    if not ok or not math.isfinite(value) or value < low or (kind is float and value == 0):  # nan compares False
        what = "a finite number of seconds > 0" if kind is float else "an integer >= 1"
        what += " (MB)" if key == "max_memory" else ""
        shown = str(value).lower() if isinstance(value, (bool, float)) else repr(value)
        raise ValueProblem(keypath, f"limits: {key} must be {what}, got {shown}")
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
                out[key][LIMIT_FIELDS.get(sub, sub)] = _value(sub, v, ("limits", key, sub))
        elif key in LIMIT_KEYS:
            out[None][LIMIT_FIELDS.get(key, key)] = _value(key, value, ("limits", key))
        else:
            raise ValueProblem(("limits", key), f"unknown limit {key!r} in [limits]" + did_you_mean(key, LIMIT_KEYS))
    return out


def resolve(limits: dict, predicate: str, overrides: dict, defaults: dict | None = None) -> Limits:
    """The defaults (e.g. the machine's memory default), then scenario-wide, then the predicate's
    own, then the command line's: the last word wins. Keys are `Limits` field names."""
    merged = {
        **(defaults or {}), **limits.get(None, {}), **limits.get(predicate, {}),
        **{k: v for k, v in overrides.items() if v is not None},
    }
    return Limits(**merged)
