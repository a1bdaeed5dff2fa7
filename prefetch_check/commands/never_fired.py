"""`run`'s warnings about the parts of the protocol a scenario does or does not reach.

An action class that fires under none of a case's predicates was not exercised by that
case at all (a verdict says nothing about it): either the scenario was meant to reach it
and does not, or the model cannot take it. A scenario declares the actions it is not meant
to reach (its `unreached` key, scenario/unreached.py); the others are warned about, one line
per case. A declared action that fires under some predicate, or that the case's
configuration cannot take at all, is a stale declaration and is warned about too. All on
stderr, so that stdout (the verdict table and the reports) stays the same whatever was fired.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass


@dataclass(frozen=True)
class Reach:
    """What one case's searches reached, over every predicate run."""

    case: str
    path: str  # the scenario file
    never: tuple[str, ...]  # possible actions fired by no predicate, not declared unreached
    cut: bool  # every search of the case was cut by a limit, so they might fire beyond it
    fired: tuple[str, ...]  # declared unreached, yet fired under some predicate
    impossible: tuple[str, ...]  # declared unreached, but the configuration cannot take them at all


def reach(tasks, results) -> list[Reach]:
    """Per case, in run order, what its searches reached against what its scenario declares."""
    cases: dict = {}
    for task, result in zip(tasks, results):
        key = (str(task.scenario.path), task.case.name)
        entry = cases.setdefault(key, {"case": task.case, "never": None, "fired": set(), "possible": set(),
                                       "complete": False})
        never = list(result.stats.never_fired)
        entry["never"] = never if entry["never"] is None else [k for k in entry["never"] if k in never]
        entry["fired"] |= set(result.stats.action_counts)
        entry["possible"] |= set(result.stats.action_counts) | set(never)
        entry["complete"] = entry["complete"] or result.stats.complete
    out = []
    for (path, name), e in cases.items():
        declared = e["case"].unreached
        out.append(Reach(
            name, path,
            never=tuple(k for k in e["never"] if k not in declared),
            cut=not e["complete"],
            fired=tuple(k for k in declared if k in e["fired"]),
            impossible=tuple(k for k in declared if k not in e["possible"]),
        ))
    return out


def never_fired(tasks, results) -> list[tuple[str, tuple, bool]]:
    """Per case, in run order: (case name, action classes fired by no predicate and not declared
    unreached, whether every search of the case was cut by a limit, so that they might fire beyond it)."""
    return [(r.case, r.never, r.cut) for r in reach(tasks, results) if r.never]


def stale(tasks, results) -> list[Reach]:
    """The cases whose `unreached` declaration names an action that fired or cannot fire there."""
    return [r for r in reach(tasks, results) if r.fired or r.impossible]


def warn_never_fired(tasks, results, file=None) -> None:
    file = file or sys.stderr
    rows = never_fired(tasks, results)
    if rows:
        width = max(len(name) for name, _, _ in rows)
        print("prefetch-check: warning: actions that never fired in a case, under any predicate (the case does not "
              "reach that part of the protocol: intended? then say so in the scenario's `unreached` key):", file=file)
        for name, kinds, cut in rows:
            note = "  (every search was cut by a limit: they may fire beyond it)" if cut else ""
            print(f"  {name:<{width}}  {', '.join(kinds)}{note}", file=file)
    old = stale(tasks, results)
    if old:
        width = max(len(r.case) for r in old)
        print("prefetch-check: warning: actions a scenario declares unreached (its `unreached` key) that its case "
              "does reach, or cannot take at all: remove them from the key:", file=file)
        for r in old:
            said = [f"{k} (fired)" for k in r.fired] + [f"{k} (not an action of this configuration)" for k in r.impossible]
            print(f"  {r.case:<{width}}  {', '.join(said)}  [{r.path}]", file=file)
