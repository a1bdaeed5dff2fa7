"""A strategy that follows a given schedule (action ids): replaying a sampled run, and tests."""

from __future__ import annotations

import random


class ScheduleNotEnabled(ValueError):
    pass


class Scripted:
    name = "scripted"

    def __init__(self, ids: list[str]):
        self.ids = list(ids)

    def describe(self) -> str:
        return f"a fixed schedule of {len(self.ids)} steps"

    def start(self, model, rng: random.Random, depth: int) -> None:
        pass

    def choose(self, model, state, choices: list, step: int) -> int:
        if step >= len(self.ids):
            raise ScheduleNotEnabled(f"the schedule has only {len(self.ids)} steps")
        wanted = self.ids[step]
        for i, (action, _) in enumerate(choices):
            if model.action_id(action) == wanted:
                return i
        raise ScheduleNotEnabled(f"step {step + 1}: {wanted!r} is not enabled")
