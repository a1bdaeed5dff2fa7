"""A code counterexample as the explorer's Trace, so the viewers of model counterexamples
(terminal, HTML, Markdown, JSON, ITF: explorer/view/) draw it too.

The executor's run is no model with states to diff: its steps are choices of a thread, each
parked at a point of the tree (file:line) and observing values. A step's actor is its
(rank, thread) pair, as the models' threads are; the "state" after a step holds, per thread that
ran, where its last step was and what it saw there, so each row's changed fields are the
running thread's site and observations."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Union

from prefetch_check.explorer.result import VIOLATED, PropertyResult
from prefetch_check.explorer.trace import Step as TraceStep
from prefetch_check.explorer.trace import Trace
from prefetch_check.model.code.config import Step, Violation

_CHOICE = re.compile(r"([A-Za-z_]+)(\d+)")


class CodeRunView:
    """What the viewers ask a model for, for a code run: fields of a state, actors' grouping.
    It has no successors (the viewers draw only the actors that acted)."""

    group_name = "rank"

    def successors(self, state) -> list:
        return []

    def actor(self, action):
        return actor(action.choice)

    def fields(self, state) -> dict:
        return dict(state)


def actor(choice: str):
    """(rank, thread) of a choice like "IO1"; the choice itself when it has no rank suffix."""
    found = _CHOICE.fullmatch(choice)
    return (int(found.group(2)), found.group(1)) if found else choice


@dataclass(frozen=True)
class CodeCounterexample:
    model: CodeRunView
    trace: Trace
    result: PropertyResult


def to_trace(violation: Union[Violation, dict]) -> CodeCounterexample:
    """The explorer's Trace of a code violation (a Violation, or its JSON as CodeResult.to_json
    and `prefetch-check sglang --json` write it), with its PropertyResult (VIOLATED)."""
    if isinstance(violation, dict):
        steps = [Step(**s) for s in violation["steps"]]
        prop, message, consequence = violation["prop"], violation["message"], violation["consequence"]
    else:
        steps, prop, message, consequence = violation.steps, violation.prop, violation.message, violation.consequence
    state: dict = {}
    out = []
    for s in steps:
        state = {**state, f"{s.choice}.at": s.site, f"{s.choice}.saw": s.observed}
        what = f"{s.choice} {s.label} at {s.site}" + (f" -> {s.observed}" if s.observed else "")
        out.append(TraceStep(s, s.choice, actor(s.choice), what, tuple(state.items())))
    trace = Trace((), tuple(out))
    return CodeCounterexample(CodeRunView(), trace, PropertyResult(prop, VIOLATED, consequence, message, trace))
