"""Make a long safety counterexample 1-minimal: no single step can be left out.

The partial-order reduction finds violations along schedules that are real but not
shortest, and the search for a shortest one (`check._shorten`) is bounded: on large
configurations it is cut. Then the schedule is shrunk the way test-case reducers do
(delta debugging, one step at a time): leave a step out, replay the rest from the state
before it, keep the shorter schedule if every step is still enabled and the property
still fails (cutting it at the first failure). The result is real (replayed) and
1-minimal, not necessarily shortest. The work is bounded in replayed steps, not in
time, so the same input gives the same counterexample.
"""

from __future__ import annotations

from typing import Callable, Optional

from prefetch_check.explorer.interface import ALWAYS, ALWAYS_STEP
from prefetch_check.explorer.trace import Trace, build_trace

MAX_REPLAYED_STEPS = 2_000_000

# first_failure(states, actions) -> how many steps of the path to keep (the violation is then
# at its end), or None if the path does not violate; states[i] is the state before actions[i]
FirstFailure = Callable[[list, list], Optional[int]]


def first_failure(prop, model=None):
    """For `minimize`: how many steps of a path to keep so that it ends in prop's violation."""
    if prop.kind == ALWAYS:
        return lambda states, actions: next((i for i, s in enumerate(states) if prop.check(s)), None)
    if prop.kind == ALWAYS_STEP:
        return lambda states, actions: next(
            (i + 1 for i, a in enumerate(actions) if prop.check(states[i], a, states[i + 1])), None
        )
    return lambda states, actions: None if model.successors(states[-1]) else len(actions)  # a deadlock


def minimize(model, trace: Trace, first_failure: FirstFailure, budget: int = MAX_REPLAYED_STEPS) -> Trace:
    """A 1-minimal sub-schedule of `trace` that still fails (or `trace` itself)."""
    ids = [step.action_id for step in trace.steps]
    states = [trace.initial] + [step.state for step in trace.steps]
    actions = [step.action for step in trace.steps]
    replayed = 0
    changed = True
    while changed and replayed < budget:
        changed = False
        i = len(actions) - 1
        while i >= 0 and replayed < budget:  # from the end: late steps depend on early ones
            tail = _replay(model, states[i], ids[i + 1 :])
            replayed += len(ids) - i
            if tail is not None:
                new_states = states[: i + 1] + [s for _, s in tail]
                new_actions = actions[:i] + [a for a, _ in tail]
                keep = first_failure(new_states, new_actions)
                if keep is not None:
                    states, actions = new_states[: keep + 1], new_actions[:keep]
                    ids = [model.action_id(a) for a in actions]
                    changed = True
            i = min(i - 1, len(actions) - 1)
    if len(actions) == len(trace.steps):
        return trace
    return build_trace(model, trace.initial, list(zip(actions, states[1:])))


def _replay(model, state, ids: list) -> Optional[list]:
    """(action, state) pairs of running `ids` from `state`, or None if one is not enabled."""
    out = []
    for wanted in ids:
        for action, nxt in model.successors(state):
            if model.action_id(action) == wanted:
                out.append((action, nxt))
                state = nxt
                break
        else:
            return None
    return out
