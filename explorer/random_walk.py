"""The uniform random walk: at every step each enabled action is equally likely.

The simplest sampling strategy and the scheduling distribution the census measures
(`census.py`): what it finds often is what a loaded machine hits often.
"""

from __future__ import annotations

import random


class RandomWalk:
    name = "random"

    def describe(self) -> str:
        return "random walk (every enabled action equally likely)"

    def start(self, model, rng: random.Random, depth: int) -> None:
        self._rng = rng

    def choose(self, model, state, choices: list, step: int) -> int:
        return self._rng.randrange(len(choices))
