"""A counterexample as data: a schedule of action ids plus the states it passes through.

A trace is rebuilt from the search's parent pointers by re-running the model from
the initial state (so it holds concrete states even when the search stored only
canonical representatives), and its schedule string replays it anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

SEPARATOR = " "


@dataclass(frozen=True)
class Step:
    action: object
    action_id: str
    actor: object
    description: str
    state: object  # the state after the step


@dataclass(frozen=True)
class Trace:
    initial: object
    steps: tuple[Step, ...]
    cycle_start: Optional[int] = None  # lasso: steps[cycle_start:] repeat forever
    final_action: Optional[Step] = None  # step invariant: the violating step (included in steps)

    @property
    def schedule(self) -> str:
        """The replayable schedule string; a lasso marks its cycle with `|`."""
        ids = [s.action_id for s in self.steps]
        if self.cycle_start is not None:
            ids.insert(self.cycle_start, "|")
        return SEPARATOR.join(ids)

    @property
    def final_state(self):
        return self.steps[-1].state if self.steps else self.initial

    def __len__(self) -> int:
        return len(self.steps)


def parse_schedule(text: str) -> tuple[list[str], Optional[int]]:
    """Split a schedule string into action ids and the cycle start (if it has a `|`)."""
    ids, cycle = [], None
    for token in text.split():
        if token == "|":
            cycle = len(ids)
        else:
            ids.append(token)
    return ids, cycle


def concrete_path(model, canonical_path: list, canonical: Optional[Callable]) -> tuple[object, list]:
    """Re-run the model along a path of (canonical) states; returns (initial, [(action, state)])."""
    canon = canonical or (lambda s: s)
    inits = [s for s in model.initial_states() if canon(s) == canonical_path[0]]
    current = inits[0]
    out = []
    for target in canonical_path[1:]:
        for action, nxt in model.successors(current):
            if canon(nxt) == target:
                out.append((action, nxt))
                current = nxt
                break
        else:
            raise AssertionError("search graph and model disagree: no step reaches the next state")
    return inits[0], out


def build_trace(model, initial, path: list, cycle_start: Optional[int] = None) -> Trace:
    steps = []
    state = initial
    for action, nxt in path:
        steps.append(Step(action, model.action_id(action), model.actor(action), model.describe(state, action, nxt), nxt))
        state = nxt
    return Trace(initial=initial, steps=tuple(steps), cycle_start=cycle_start)
