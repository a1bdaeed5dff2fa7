"""Replay a schedule string through a model, step by step.

This is the check that a counterexample is real: every trace is replayed from the
initial state before it is reported, and a saved schedule that the model no longer
allows says exactly where it diverges.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefetch_check.explorer.trace import Trace, build_trace, parse_schedule


@dataclass
class Divergence(Exception):
    step: int  # 0-based index of the action that is not enabled
    wanted: str
    enabled: list[str]
    trace_so_far: Trace

    def __str__(self) -> str:
        enabled = ", ".join(self.enabled) or "nothing (deadlock)"
        return f"step {self.step + 1}: {self.wanted!r} is not enabled; enabled: {enabled}"


def replay(model, schedule: str | list[str], initial=None) -> Trace:
    """Run the actions of `schedule` from `initial` (default: the first initial state)."""
    if isinstance(schedule, str):
        ids, cycle = parse_schedule(schedule)
    else:
        ids, cycle = list(schedule), None
    start = model.initial_states()[0] if initial is None else initial
    state, path = start, []
    for i, wanted in enumerate(ids):
        choices = model.successors(state)
        for action, nxt in choices:
            if model.action_id(action) == wanted:
                path.append((action, nxt))
                state = nxt
                break
        else:
            raise Divergence(i, wanted, [model.action_id(a) for a, _ in choices], build_trace(model, start, path))
    return build_trace(model, start, path, cycle)
