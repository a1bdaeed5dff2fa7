"""A tiny generic explorer model given as a table, for the explorer's own tests (no protocol)."""

from __future__ import annotations

from prefetch_check.explorer.interface import always, always_step, eventually


class TableModel:
    """state -> [(actor, next state)], from state 0; an action is (actor, next state).

    Properties, each only when asked for: `pending(state)` true -> "done" is not yet reached
    (progress); `bad_state` -> "safe" fails there; `bad_step` = (state, next state) -> "safe_step"
    fails on that step. `expand` explores every step, so under chain fusion a state with one
    step is walked through."""

    def __init__(self, table: dict, pending=None, bad_state=None, bad_step=None):
        self.table, self.pending, self.bad_state, self.bad_step = table, pending, bad_state, bad_step

    def initial_states(self):
        return [0]

    def successors(self, state):
        return [((actor, nxt), nxt) for actor, nxt in self.table.get(state, [])]

    def expand(self, state):
        succ = self.successors(state)
        return succ, [action for action, _ in succ]

    def properties(self):
        props = []
        if self.pending is not None:
            props.append(eventually("done", lambda s: f"state {s} pending" if self.pending(s) else None))
        if self.bad_state is not None:
            props.append(always("safe", lambda s: f"state {s} is bad" if s == self.bad_state else None))
        if self.bad_step is not None:
            props.append(always_step("safe_step", lambda s, a, t: "bad step" if (s, t) == self.bad_step else None))
        return props

    def actor(self, action):
        return action[0]

    def action_id(self, action):
        return f"{action[0]}>{action[1]}"

    def action_kind(self, action):
        return action[0]

    def action_kinds(self):
        return sorted({a for steps in self.table.values() for a, _ in steps})

    def describe(self, state, action, next_state):
        return f"{action[0]}: {state} -> {next_state}"
