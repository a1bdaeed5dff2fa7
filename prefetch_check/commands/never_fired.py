"""`run`'s warning about actions that never fired: a part of the protocol a scenario never reaches.

An action class that fires under none of a case's predicates was not exercised by that
case at all (a verdict says nothing about it): either the scenario was meant to reach it
and does not, or the model cannot take it. One line per case, on stderr, so that stdout
(the verdict table and the reports) stays the same whatever was fired.
"""

from __future__ import annotations

import sys


def never_fired(tasks, results) -> list[tuple[str, tuple, bool]]:
    """Per case, in run order: (case name, action classes fired by no predicate, whether every
    search of the case was cut by a limit, so that they might fire beyond it)."""
    cases: dict = {}
    for task, result in zip(tasks, results):
        key = (str(task.scenario.path), task.case.name)
        if key not in cases:
            cases[key] = [task.case.name, list(result.stats.never_fired), result.stats.complete]
            continue
        entry = cases[key]
        entry[1] = [k for k in entry[1] if k in result.stats.never_fired]
        entry[2] = entry[2] or result.stats.complete
    return [(name, tuple(kinds), not complete) for name, kinds, complete in cases.values() if kinds]


def warn_never_fired(tasks, results, file=None) -> None:
    rows = never_fired(tasks, results)
    if not rows:
        return
    file = file or sys.stderr
    width = max(len(name) for name, _, _ in rows)
    print("prefetch-check: warning: actions that never fired in a case, under any predicate (the case does not "
          "reach that part of the protocol: intended?):", file=file)
    for name, kinds, cut in rows:
        note = "  (every search was cut by a limit: they may fire beyond it)" if cut else ""
        print(f"  {name:<{width}}  {', '.join(kinds)}{note}", file=file)
