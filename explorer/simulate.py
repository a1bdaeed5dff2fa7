"""Sampled search beyond exhaustive reach: many seeded runs under a strategy.

Run i of seed S draws every choice from its own `random.Random(f"{S}:{i}")`, so a seed
gives the same runs, in the same order, on any machine, and any one run can be
repeated alone. The safety properties and deadlocks are judged on every state and
step a run visits; the first run that violates a property gives its counterexample,
which is made 1-minimal (`minimize.py`) and replayed from scratch before it is
reported. Progress is not judged: no finite run shows that something never happens.
A run that finds nothing proves nothing either: `Simulation` carries what is needed to
say what N clean runs are worth (see `confidence.py` and `pct.pct_bound`).
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Optional, Union

from prefetch_check.explorer.minimize import first_failure
from prefetch_check.explorer.minimize import minimize
from prefetch_check.explorer.replay import replay
from prefetch_check.explorer.trace import Trace, build_trace
from prefetch_check.explorer.walk import DEPTH, Strategy, judged_properties, run_once

# replayed steps the shrinking of one counterexample may spend (see minimize.py)
SHRINK_BUDGET = 200_000


class SampledCounterexampleNotReplayable(AssertionError):
    """A shrunk counterexample does not replay and fail: a bug of the simulator."""


@dataclass(frozen=True)
class Violation:
    name: str
    reason: str
    trace: Trace  # shrunk and replayed
    run: int  # 0-based index of the run that found it
    found_steps: int  # steps of that run up to the violation, before shrinking
    found_seconds: float  # from the start of the sampling to the end of that run


@dataclass
class Simulation:
    strategy: str
    seed: int
    schedules: int  # runs asked for
    depth: int
    runs: int = 0  # runs done
    steps: int = 0  # steps taken in all runs
    longest: int = 0
    ends: dict = field(default_factory=dict)  # how runs ended (walk.SETTLED / DEADLOCK / DEPTH) -> count
    actors: int = 0  # most actors seen enabled in one run
    seconds: float = 0.0  # sampling, without shrinking
    shrink_seconds: float = 0.0
    judged: tuple = ()  # names of the properties judged on every state / step
    not_judged: dict = field(default_factory=dict)  # name -> why the sampling cannot judge it
    violations: dict = field(default_factory=dict)  # name -> Violation
    stop_reason: Optional[str] = None  # why fewer than `schedules` runs were done

    @property
    def cut_by_depth(self) -> int:
        return self.ends.get(DEPTH, 0)


def run_rng(seed: int, i: int) -> random.Random:
    """The random source of run i of a seed (a string seed: stable across Python versions)."""
    return random.Random(f"{seed}:{i}")


def simulate(
    model,
    strategy: Strategy,
    seed: int,
    schedules: int,
    depth: int,
    stop_when_found: Union[bool, Iterable[str]] = True,
    time_limit: Optional[float] = None,
    on_run: Optional[Callable[[Simulation], None]] = None,
    shrink_budget: int = SHRINK_BUDGET,
) -> Simulation:
    """Up to `schedules` runs of at most `depth` steps. `stop_when_found`: True stops once every
    judged property has a violation, a collection of property names once each of those has
    one, False never. `time_limit` (seconds) may cut the runs (the result says so)."""
    props = judged_properties(model)
    if stop_when_found is True:
        wanted = {p.name for p in props}
    else:
        wanted = set(stop_when_found or ())
    result = Simulation(strategy.name, seed, schedules, depth, judged=tuple(p.name for p in props))
    for p in model.properties():
        if p.not_applicable is None and not p.is_safety:
            result.not_judged[p.name] = (
                "sampling cannot decide a progress property: a finite run never shows that "
                "something stays undone forever"
            )
    found: dict = {}  # name -> (run index, Run, seconds)
    t0 = time.perf_counter()
    for i in range(schedules):
        if time_limit is not None and time.perf_counter() - t0 > time_limit:
            result.stop_reason = f"time limit of {time_limit:g}s"
            break
        run = run_once(model, strategy, run_rng(seed, i), depth, [p for p in props if p.name not in found])
        result.runs += 1
        result.steps += run.steps
        result.longest = max(result.longest, run.steps)
        result.ends[run.end] = result.ends.get(run.end, 0) + 1
        result.actors = max(result.actors, run.actors)
        for name in run.failures:
            found.setdefault(name, (i, run, time.perf_counter() - t0))
        if on_run is not None:
            on_run(result)
        if wanted and wanted <= found.keys():
            if result.runs < schedules:
                result.stop_reason = (
                    "every judged property has a violation" if len(wanted) == len(props)
                    else f"{', '.join(sorted(wanted))} found"
                )
            break
    result.seconds = time.perf_counter() - t0
    t1 = time.perf_counter()
    for p in props:  # in the model's order
        if p.name in found:
            i, run, seconds = found[p.name]
            failure = run.failures[p.name]
            trace = _shrunk(model, p, run, failure.keep, shrink_budget)
            result.violations[p.name] = Violation(p.name, failure.reason, trace, i, failure.keep, seconds)
    result.shrink_seconds = time.perf_counter() - t1
    return result


def _shrunk(model, prop, run, keep: int, budget: int) -> Trace:
    """The run's path up to the violation, made 1-minimal, replayed from scratch and checked."""
    fails = first_failure(prop, model)
    trace = minimize(model, build_trace(model, run.initial, run.path[:keep]), fails, budget)
    again = replay(model, trace.schedule, initial=trace.initial)
    states = [again.initial] + [s.state for s in again.steps]
    if fails(states, [s.action for s in again.steps]) != len(again.steps):
        raise SampledCounterexampleNotReplayable(f"{prop.name}: {trace.schedule}")
    return again
