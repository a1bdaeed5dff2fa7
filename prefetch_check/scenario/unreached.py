"""`unreached`: the actions a scenario is not meant to reach, so `run` does not warn about them.

A scenario exercises a part of the protocol; the actions it never takes (the IO thread's when
the storage query kills the prefetch thread first) are reported by `run` as a warning
(commands/never_fired.py) unless the scenario says it knows:

    unreached = ["S.ready", "I.take"]              # every case of the scenario

    [unreached]                                    # per matrix case: a key selects the cases
    "cache=unified" = ["S.accept", "S.wait"]       # whose matrix values include all of its own
    "cache=hiradix, deadline=issue" = ["S.ready"]

Each name must be an action of the scenario's protocol; a selector names matrix keys and
values of this scenario. A declared action that fires after all is reported too (a stale
declaration), so the list cannot go out of date silently.
"""

from __future__ import annotations

from prefetch_check.scenario.errors import did_you_mean
from prefetch_check.scenario.matrix import value_text
from prefetch_check.scenario.parameters import ValueProblem
from prefetch_check.scenario.schema import type_name

KEY = "unreached"


def parse_unreached(value, matrix: dict, choices: list[dict], actions: tuple[str, ...]) -> list[tuple[str, ...]]:
    """Per case (in the order of `choices`, the matrix's combinations), the actions declared unreached."""
    if value is None:
        return [() for _ in choices]
    if isinstance(value, list):
        names = _names(value, (KEY,), actions)
        return [names for _ in choices]
    if not isinstance(value, dict):
        raise ValueProblem((KEY,), f"{KEY} must be a list of action names, e.g. {KEY} = [\"S.ready\"], or a table "
                                   f"of such lists keyed by matrix values (\"cache=unified\" = [...]); got {type_name(value)}")
    per_case: list[list[str]] = [[] for _ in choices]
    for selector, names in value.items():
        wanted = _selector(selector, matrix)
        listed = _names(names, (KEY, selector), actions)
        chosen = [i for i, choice in enumerate(choices) if all(value_text(choice[k]) == v for k, v in wanted.items())]
        if not chosen:
            raise ValueProblem((KEY, selector), f"{KEY}: {selector!r} selects no case of this scenario's matrix")
        for i in chosen:
            per_case[i] += [n for n in listed if n not in per_case[i]]
    return [tuple(names) for names in per_case]


def _names(value, keypath: tuple, actions: tuple[str, ...]) -> tuple[str, ...]:
    where = ".".join(f'"{k}"' if "=" in k else k for k in keypath)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ValueProblem(keypath, f"{where} must be a list of action names (strings), e.g. [\"S.ready\", \"I.take\"]")
    for name in value:
        if name not in actions:
            raise ValueProblem(keypath, f"{where}: unknown action {name!r} of this scenario's protocol"
                                        + did_you_mean(name, actions))
    return tuple(dict.fromkeys(value))


def _selector(text: str, matrix: dict) -> dict[str, str]:
    """`"cache=unified, deadline=issue"` as {key: value text}, each a key and value of the matrix."""
    if not matrix:
        raise ValueProblem((KEY, text), f"{KEY} is a table of matrix selectors, but this scenario has no [matrix]: "
                                        f"write {KEY} = [...] for its one case")
    wanted = {}
    for part in text.split(","):
        key, eq, val = (s.strip() for s in part.partition("="))
        if not eq or not key or not val:
            raise ValueProblem((KEY, text), f"{KEY}: {text!r} is not a matrix selector: write \"key=value\" "
                                            "(several joined by commas), e.g. \"cache=unified\"")
        if key not in matrix:
            raise ValueProblem((KEY, text), f"{KEY}: {key!r} is not swept by this scenario's [matrix]"
                                            + did_you_mean(key, matrix))
        values = [value_text(v) for v in matrix[key]]
        if val not in values:
            raise ValueProblem((KEY, text), f"{KEY}: {key}={val} is not a value of the matrix (it sweeps "
                                            f"{key} over {', '.join(values)})")
        wanted[key] = val
    return wanted
