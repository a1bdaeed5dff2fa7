"""Judging the safety properties during a search: each until its first, shortest, finding.

A state property is judged once per `property_key` when the model has one (many states
share the inputs of their properties); a step property only on the steps it `concerns`.
Progress properties are not judged here: the search records which states are pending for
each (bits of one int), and the progress analysis judges them on the recorded graph.
"""

from __future__ import annotations

from dataclasses import dataclass

from prefetch_check.explorer.interface import ALWAYS, ALWAYS_STEP, DEADLOCK_FREE, EVENTUALLY, hooks


@dataclass
class Finding:
    """Where a safety property first failed: a state, or an edge from `state_id` by `action`."""

    state_id: int
    reason: str
    action: object = None  # for a step invariant: the action leaving state_id
    next_state: object = None


class Judge:
    def __init__(self, model, findings: dict, wants_bits: bool):
        props = [p for p in model.properties() if p.not_applicable is None]
        self.state_props = [p for p in props if p.kind == ALWAYS]
        self.step_props = [p for p in props if p.kind == ALWAYS_STEP]
        self.progress_props = [p for p in props if p.kind == EVENTUALLY]
        self.wants_deadlock = any(p.kind == DEADLOCK_FREE for p in props)
        self.findings = findings
        self.live_state = list(self.state_props)  # properties without a finding yet
        self.live_step = list(self.step_props)
        self.key_of = hooks(model).property_key
        self.wants_bits = wants_bits and bool(self.progress_props)
        self.verdicts: dict = {}  # property_key -> verdict (when the model has one)
        self._step_judges: dict = {}  # action -> the step properties that judge it

    @property
    def progress_bits(self) -> dict:
        """Progress property name -> its bit in the pending bits."""
        return {p.name: i for i, p in enumerate(self.progress_props)}

    def verdict(self, state) -> tuple:
        """(((property, reason) of each failing state property), bit i set when pending for the
        i-th progress property); judged once per property_key when the model has one."""
        key_of = self.key_of
        if key_of is not None:
            key = key_of(state)
            known = self.verdicts.get(key)
            if known is not None:
                return known
        bad = []
        for p in self.state_props if key_of is not None else self.live_state:
            reason = p.check(state)
            if reason:
                bad.append((p, reason))
        bits = 0
        if self.wants_bits:
            for i, p in enumerate(self.progress_props):
                if p.check(state):
                    bits |= 1 << i
        known = (tuple(bad), bits)
        if key_of is not None:
            self.verdicts[key] = known
        return known

    def record(self, sid: int, bad: tuple) -> None:
        """Findings for the live properties among the failing ones of state sid."""
        for p, reason in bad:
            if p in self.live_state:
                self.findings[p.name] = Finding(sid, reason)
                self.live_state.remove(p)

    def judges(self, action) -> list:
        """The step properties that judge this action."""
        judged = self._step_judges.get(action)
        if judged is None:
            judged = self._step_judges[action] = [p for p in self.step_props if p.concerns is None or p.concerns(action)]
        return judged

    def violates_step(self, state, action, nxt) -> bool:
        """Whether a live step property fails on this step (nothing is recorded)."""
        live = self.live_step
        for p in self.judges(action):
            if p in live and p.check(state, action, nxt):
                return True
        return False

    def judge_step(self, sid: int, state, action, nxt) -> None:
        """Record the findings of the live step properties that fail on this step."""
        live = self.live_step
        for p in self.judges(action):
            if p in live:
                reason = p.check(state, action, nxt)
                if reason:
                    self.findings[p.name] = Finding(sid, reason, action, nxt)
                    live.remove(p)

    def all_found(self, deadlocks: list) -> bool:
        """Every safety property has a finding (deadlock freedom: a deadlock was found)."""
        return not self.live_state and not self.live_step and (bool(deadlocks) or not self.wants_deadlock)
