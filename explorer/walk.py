"""One sampled run of a model: a strategy picks every step, every state and step on the way is judged.

This is what sampling strategies share (`simulate` and the Monte Carlo census): the
strategy only chooses among the enabled steps; judging the safety properties, ending
the run and keeping its path are done here, the same way for every strategy. A run
ends when no step is enabled (a deadlock), when the model says the state is settled
(the optional `settled(state)` member, see `interface.py`), or at the depth bound.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Optional, Protocol, Sequence

from prefetch_check.explorer.interface import ALWAYS, ALWAYS_STEP, DEADLOCK_FREE, Property, hooks

SETTLED = "settled"  # the model's `settled(state)` said no later step can change a verdict
DEADLOCK = "deadlock"  # no step enabled
DEPTH = "depth"  # the depth bound cut the run


class Strategy(Protocol):
    """Chooses the steps of a run (the role of a Scheduler in Shuttle or Coyote).

    `start` is called before every run with that run's own random source (the only
    randomness a strategy may use) and the depth bound; `choose` returns the index of
    the step to take among `choices` (every enabled (action, next state), in the
    model's order), `step` counts the steps taken so far in the run.
    """

    name: str

    def start(self, model, rng: random.Random, depth: int) -> None: ...

    def choose(self, model, state, choices: list, step: int) -> int: ...


@dataclass(frozen=True)
class Failure:
    """The first violation of a property in a run: `keep` steps of the run end in it."""

    keep: int
    reason: str


@dataclass
class Run:
    initial: object
    path: list  # [(action, state after)], empty unless the run kept it
    steps: int
    end: str  # SETTLED, DEADLOCK or DEPTH
    failures: dict = field(default_factory=dict)  # property name -> Failure (first in this run)
    actors: int = 0  # the model's actors(), or the distinct actors that had an enabled step


def judged_properties(model) -> list[Property]:
    """The properties a sampled run can judge: the applicable safety ones (progress cannot be
    decided on finite runs)."""
    return [p for p in model.properties() if p.is_safety and p.not_applicable is None]


def run_once(
    model,
    strategy: Strategy,
    rng: random.Random,
    depth: int,
    props: Sequence[Property],
    keep_path: bool = True,
    settled=None,
) -> Run:
    """One run of at most `depth` steps; records the first failure of each of `props`."""
    inits = model.initial_states()
    initial = state = inits[rng.randrange(len(inits))] if len(inits) > 1 else inits[0]
    strategy.start(model, rng, depth)
    if settled is None:
        settled = hooks(model).settled
    on_state = [p for p in props if p.kind == ALWAYS]
    on_step = [p for p in props if p.kind == ALWAYS_STEP]
    on_deadlock = [p for p in props if p.kind == DEADLOCK_FREE]
    failures: dict = {}
    path: list = []
    # actors met, for PCT's bound when the model does not list them (counting costs a call per choice)
    actors: Optional[set] = None if hasattr(model, "actors") else set()
    successors, actor_of, choose = model.successors, model.actor, strategy.choose
    steps = 0

    def judge_state(s) -> None:
        for p in on_state:
            if p.name not in failures:
                reason = p.check(s)
                if reason:
                    failures[p.name] = Failure(steps, reason)

    judge_state(state)
    end: Optional[str] = None
    while end is None:
        if settled is not None and settled(state):
            end = SETTLED
            break
        choices = successors(state)
        if not choices:
            for p in on_deadlock:
                failures.setdefault(p.name, Failure(steps, "no step is enabled (deadlock)"))
            end = DEADLOCK
            break
        if steps >= depth:
            end = DEPTH
            break
        if actors is not None:
            actors.update(actor_of(a) for a, _ in choices)
        action, nxt = choices[choose(model, state, choices, steps)]
        for p in on_step:
            if p.name not in failures and (p.concerns is None or p.concerns(action)):
                reason = p.check(state, action, nxt)
                if reason:
                    failures[p.name] = Failure(steps + 1, reason)
        steps += 1
        if keep_path:
            path.append((action, nxt))
        state = nxt
        judge_state(state)
    return Run(initial, path, steps, end, failures, len(model.actors()) if actors is None else len(actors))
