"""A schedule census: how likely a run hits each violation under a stated scheduling distribution.

The distribution is uniform random scheduling: in every state each enabled action
is equally likely, and a run goes on until no step is enabled, or until the model
says the state is settled (the optional `settled(state)`, see `interface.py`: no later
step can change a verdict, e.g. every actor idle but one looping without effect). For each
safety property the census gives the probability that such a run violates it.

- `exact_census` builds the whole state graph (under `canonical`, if given: a symmetry
  of the model maps a state's successors to its image's successors, so the chain of
  orbits is an exact lumping of the chain of states) and solves the absorbing chain
  (`absorption.py`): exact up to floating point, for graphs that fit in memory. It needs
  no `settled`: a run that never settles goes round a closed class of states forever,
  and the solution accounts for that too.
- `sampled_census` runs the random walk (`walk.py`) and gives each probability with a
  Wilson interval. A run cut by the depth bound before it settled has not shown whether
  it would hit: it counts as a miss for the low end and as a hit for the high end.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional

from prefetch_check.explorer.absorption import reach_probability
from prefetch_check.explorer.confidence import CONFIDENCE, wilson
from prefetch_check.explorer.interface import ALWAYS, ALWAYS_STEP, DEADLOCK_FREE, hooks
from prefetch_check.explorer.random_walk import RandomWalk
from prefetch_check.explorer.simulate import run_rng
from prefetch_check.explorer.walk import DEPTH, judged_properties, run_once

EXACT = "exact"
SAMPLED = "sampled"
DISTRIBUTION = "uniform random scheduling: in every state each enabled action is equally likely"


class TooLarge(Exception):
    """The state graph has more states than the exact census may build."""


@dataclass(frozen=True)
class Estimate:
    name: str
    probability: float  # the exact value, or hits / runs
    low: float  # the interval (equal to `probability` when exact)
    high: float
    exact: bool
    hits: int = 0  # sampled: runs that violated the property


@dataclass
class Census:
    method: str  # EXACT or SAMPLED
    estimates: dict = field(default_factory=dict)  # property name -> Estimate, in the model's order
    not_judged: dict = field(default_factory=dict)  # name -> why a census says nothing about it
    seconds: float = 0.0
    states: int = 0  # exact: states of the (lumped) graph
    transitions: int = 0
    loops: int = 0  # exact: strongly connected components of more than one state
    largest_loop: int = 0
    runs: int = 0  # sampled
    seed: Optional[int] = None
    depth: Optional[int] = None
    cut: int = 0  # sampled runs the depth bound ended before they settled
    confidence: float = CONFIDENCE


def _not_judged(model) -> dict:
    return {
        p.name: "a census counts violations a run reaches; progress is a property of infinite runs"
        for p in model.properties()
        if p.not_applicable is None and not p.is_safety
    }


@dataclass
class _Chain:
    states: list  # id -> (canonical) state
    starts: list  # ids of the initial states (a run starts in each with equal probability)
    total: list  # id -> number of enabled actions (0: a deadlock, or settled)
    edges: list  # id -> [(successor id, number of actions)]
    bad_states: dict  # state-property name -> bytearray of violating ids
    bad_steps: dict  # step-property name -> {id: Counter(successor id -> violating actions)}
    transitions: int


def _build(model, props, canonical, max_states, settled) -> _Chain:
    canon = canonical or (lambda s: s)
    on_state = [p for p in props if p.kind == ALWAYS]
    on_step = [p for p in props if p.kind == ALWAYS_STEP]
    ids: dict = {}
    states: list = []
    total: list = []
    edges: list = []
    bad_states = {p.name: bytearray() for p in on_state + [p for p in props if p.kind == DEADLOCK_FREE]}
    bad_steps: dict = {p.name: {} for p in on_step}
    transitions = 0

    def add(s) -> int:
        c = canon(s)
        i = ids.get(c)
        if i is None:
            if max_states is not None and len(states) >= max_states:
                raise TooLarge(f"more than {max_states} states")
            i = ids[c] = len(states)
            states.append(c)
        return i

    starts = [add(s) for s in model.initial_states()]
    u = 0
    while u < len(states):
        s = states[u]
        for p in on_state:
            bad_states[p.name].append(1 if p.check(s) else 0)
        choices = [] if settled is not None and settled(s) else model.successors(s)
        for p in props:
            if p.kind == DEADLOCK_FREE:
                bad_states[p.name].append(0 if choices or (settled is not None and settled(s)) else 1)
        out: Counter = Counter()
        for action, nxt in choices:
            v = add(nxt)
            out[v] += 1
            for p in on_step:
                if (p.concerns is None or p.concerns(action)) and p.check(s, action, nxt):
                    bad_steps[p.name].setdefault(u, Counter())[v] += 1
        transitions += len(choices)
        total.append(len(choices))
        edges.append(list(out.items()))
        u += 1
    return _Chain(states, starts, total, edges, bad_states, bad_steps, transitions)


def exact_census(model, canonical: Optional[Callable] = None, max_states: Optional[int] = None) -> Census:
    """The exact probabilities; raises TooLarge past `max_states` states."""
    t0 = time.perf_counter()
    props = judged_properties(model)
    chain = _build(model, props, canonical, max_states, hooks(model).settled)
    n = len(chain.states)
    starts = chain.starts
    census = Census(EXACT, not_judged=_not_judged(model), states=n, transitions=chain.transitions)
    for p in props:
        if p.name in chain.bad_steps:
            bad = chain.bad_steps[p.name]
            hits = [0] * n
            edges = list(chain.edges)
            for u, counts in bad.items():
                hits[u] = sum(counts.values())
                edges[u] = [(v, c - counts.get(v, 0)) for v, c in chain.edges[u] if c - counts.get(v, 0) > 0]
            target = bytearray(n)
        else:
            hits, edges, target = [0] * n, chain.edges, chain.bad_states[p.name]
        solution = reach_probability(chain.total, edges, hits, target)
        value = sum(solution.values[i] for i in starts) / len(starts)
        census.estimates[p.name] = Estimate(p.name, value, value, value, True)
        census.loops = max(census.loops, solution.components)
        census.largest_loop = max(census.largest_loop, solution.largest)
    census.seconds = time.perf_counter() - t0
    return census


def sampled_census(model, seed: int, runs: int, depth: int, confidence: float = CONFIDENCE) -> Census:
    """Monte Carlo: `runs` random walks of at most `depth` steps, seeded like `simulate`."""
    t0 = time.perf_counter()
    props = judged_properties(model)
    hits: Counter = Counter()
    undecided: Counter = Counter()  # runs cut by the depth bound that had not (yet) hit the property
    cut = 0
    strategy = RandomWalk()
    for i in range(runs):
        run = run_once(model, strategy, run_rng(seed, i), depth, props, keep_path=False)
        hits.update(run.failures.keys())
        if run.end == DEPTH:
            cut += 1
            undecided.update(p.name for p in props if p.name not in run.failures)
    census = Census(SAMPLED, not_judged=_not_judged(model), runs=runs, seed=seed, depth=depth, cut=cut,
                    confidence=confidence)
    for p in props:
        k = hits[p.name]
        low = wilson(k, runs, confidence)[0]
        high = wilson(k + undecided[p.name], runs, confidence)[1]
        census.estimates[p.name] = Estimate(p.name, k / runs, low, high, False, k)
    census.seconds = time.perf_counter() - t0
    return census
