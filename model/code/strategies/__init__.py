"""Search strategies as values (Shuttle's `Scheduler`, Coyote's strategies): the executor runs a
run's threads one at a time and asks its strategy, at every scheduling point, which thread goes
next; the search loop (rt/search.py) asks it whether there is another execution to run. A
strategy is an object with

    more() -> bool                 another execution to run?
    start() -> None                begin one (fresh objects: each run is replayed from scratch)
    choose(decision) -> str | Stop the thread to run next, or the end of this run (rt/decision.py)
    finish(outcome) -> None        the run ended (its schedule, end and findings)
    states: int                    distinct states it saw
    exhaustive: bool               running out of executions means every schedule was run
    describe() -> str              what it is, for a bound ("a random walk, seed 3")

One file each: dfs.py (depth-first over choice prefixes with the state cache: the executor's
exhaustive search), sleep.py (the same with sleep sets over the steps' footprints: it skips
schedules that only reorder independent steps), dpor.py (stateful DPOR with sleep sets: it
explores another order only where two steps raced), replay.py (a choice list, then the first enabled thread), guided.py (the
conformance check's replay of a model schedule), random_walk.py and pct.py (sampling: never
exhaustive). A reduction wraps a strategy instead of growing it (reduce.py: the world's
persistent set: DPOR and the sleep sets choose within it). `make(limits)` builds the one
`CodeLimits.strategy` names ("auto": DPOR).
"""

from __future__ import annotations

EXHAUSTIVE = ("auto", "dfs", "sleep", "dpor")  # CodeLimits.strategy: every schedule up to the bounds (VERIFIED possible)
SAMPLING = ("random", "pct")  # never exhaustive


def make(limits):
    """The search strategy `limits` asks for (CodeLimits.strategy, seed, pct_depth), wrapped in
    the reduction unless `limits.reduce` is off. "auto" (the default) is DPOR, which chooses
    among the world's persistent set where the reduction is on (0.5.23 2x1 best_effort: 7,557
    runs against the sleep sets' 44,886 under the same set; 1x1 prefetched again, best_effort:
    3,738 against 17,267; docs/benchmark.md)."""
    from prefetch_check.model.code.strategies.reduce import Reduced

    name = limits.strategy
    if name == "auto":
        name = "dpor"
    if name == "dfs":
        from prefetch_check.model.code.strategies.dfs import DepthFirst

        inner = DepthFirst(limits.max_depth)
    elif name == "sleep":
        from prefetch_check.model.code.strategies.sleep import SleepSets

        inner = SleepSets(limits.max_depth)
    elif name == "dpor":
        from prefetch_check.model.code.strategies.dpor import StatefulDPOR

        inner = StatefulDPOR(limits.max_depth)  # asks for the persistent set only in a world without footprints
    elif name == "random":
        from prefetch_check.model.code.strategies.random_walk import RandomWalk

        inner = RandomWalk(limits.seed, limits.max_depth)
    elif name == "pct":
        from prefetch_check.model.code.strategies.pct import PCT

        inner = PCT(limits.seed, limits.pct_depth, limits.max_depth)
    else:
        raise ValueError(f"strategy {limits.strategy!r}: the executor has {', '.join(EXHAUSTIVE + SAMPLING)}")
    return Reduced(inner) if limits.reduce else inner
