"""Benchmark rows for sampling (issue 13): `simulate` beyond exhaustive reach, and the census.

These rows measure something other than a search's states, so they have their own table
(`prefetch-check bench` prints it below the search rows) and their own JSON key. Each row
runs in a fresh process like the search rows, on the seed race (one request of two pages,
policy wait_complete) under the buggy predicate, with a fixed seed.

  simulate rows  seconds from the row's start (the model built from scratch) until both of
                 the seed race's violations were found, then the shrinking apart; the target
                 of issue 13: TP=32 found within 10 s on a 2-core machine
  census rows    the probability that a uniform random schedule violates no_early_acceptance
                 and wait_complete_delivers: exact, or sampled with a 95% Wilson interval
"""

from __future__ import annotations

import multiprocessing
import time
from dataclasses import asdict, dataclass, field
from typing import Optional

from prefetch_check.explorer.limits import peak_memory_mb

PREDICATE = "buggy"
SEED = 1
RACE = ("no_early_acceptance", "wait_complete_delivers")  # the seed race's two violations
SECTION = "sampling"


@dataclass(frozen=True)
class SamplingRow:
    key: str
    kind: str  # simulate | census
    ranks: int
    strategy: str = "random"  # simulate: random | pct
    pct_depth: int = 2
    schedules: int = 1000  # simulate: at most
    depth: int = 2000  # steps per run at most
    method: str = "exact"  # census: exact | sampled
    runs: int = 0  # census, sampled
    quick: bool = False
    target_seconds: Optional[float] = None  # simulate: both violations found within this

    @property
    def section(self) -> str:
        return SECTION

    @property
    def configuration(self) -> str:
        if self.kind == "simulate":
            how = "random walk" if self.strategy == "random" else f"PCT d={self.pct_depth}"
            return f"TP={self.ranks}, {how}, seed {SEED}, <= {self.schedules} runs of <= {self.depth} steps"
        if self.method == "exact":
            return f"TP={self.ranks}, exact"
        return f"TP={self.ranks}, {self.runs:,} runs, seed {SEED}"

    @property
    def target(self) -> str:
        return f"both found <= {self.target_seconds:g} s" if self.target_seconds is not None else ""

    def config(self):
        from prefetch_check.model.protocols.poll.config import uniform_config

        return uniform_config(ranks=self.ranks, requests=1, pages=2, policy="wait_complete")


SAMPLING_ROWS: tuple[SamplingRow, ...] = (
    SamplingRow("simulate-tp4", "simulate", 4, quick=True),
    SamplingRow("simulate-tp32-random", "simulate", 32, target_seconds=10.0),
    SamplingRow("simulate-tp32-pct", "simulate", 32, strategy="pct", pct_depth=2, target_seconds=10.0),
    SamplingRow("census-tp1", "census", 1, quick=True),
    SamplingRow("census-tp2", "census", 2, quick=True),
    SamplingRow("census-tp4", "census", 4),
    SamplingRow("census-tp8", "census", 8, method="sampled", runs=2000, depth=5000),
)


@dataclass
class SamplingMeasurement:
    row: SamplingRow
    error: str = ""
    killed: bool = False
    seconds: float = 0.0  # simulate: until both violations were found (or the runs ended); census: all of it
    shrink_seconds: float = 0.0
    runs: int = 0
    steps: int = 0
    states: int = 0  # census, exact: states of the lumped graph
    found: dict = field(default_factory=dict)  # simulate: violation -> (run, steps found at, shrunk length)
    probabilities: dict = field(default_factory=dict)  # census: property -> (value, low, high, exact)
    peak_mib: Optional[float] = None

    def met(self) -> Optional[bool]:
        if self.row.target_seconds is None:
            return None
        return not self.error and set(RACE) <= set(self.found) and self.seconds <= self.row.target_seconds

    def summary(self) -> str:
        if self.error:
            return f"ERROR: {self.error}"
        if self.row.kind == "simulate":
            if not self.found:
                return f"nothing found in {self.runs} runs"
            return "; ".join(f"{name} in run #{run} (step {at}, shrunk to {length})"
                             for name, (run, at, length) in self.found.items())
        parts = []
        for name, (value, low, high, exact) in self.probabilities.items():
            parts.append(f"{name} {value:.4f}" + ("" if exact else f" [{low:.4f}, {high:.4f}]"))
        return "; ".join(parts)

    def as_json(self) -> dict:
        return {**asdict(self), "row": {**asdict(self.row), "configuration": self.row.configuration},
                "summary": self.summary(), "target_met": self.met()}


def _child(row: SamplingRow, budget: float, conn) -> None:
    from prefetch_check.explorer.census import exact_census, sampled_census
    from prefetch_check.explorer.pct import PCT
    from prefetch_check.explorer.random_walk import RandomWalk
    from prefetch_check.explorer.simulate import simulate
    from prefetch_check.sampling import sampling_model

    t0 = time.perf_counter()
    model = sampling_model(row.config(), PREDICATE)
    out: dict = {}
    if row.kind == "simulate":
        strategy = RandomWalk() if row.strategy == "random" else PCT(row.pct_depth)
        build = time.perf_counter() - t0
        sim = simulate(model, strategy, SEED, row.schedules, row.depth, stop_when_found=RACE, time_limit=budget)
        last = max((v.found_seconds for v in sim.violations.values()), default=sim.seconds)
        out.update(seconds=build + (last if set(RACE) <= set(sim.violations) else sim.seconds),
                   shrink_seconds=sim.shrink_seconds, runs=sim.runs, steps=sim.steps,
                   found={n: (v.run, v.found_steps, len(v.trace)) for n, v in sim.violations.items()})
    else:
        if row.method == "exact":
            census = exact_census(model, model.canonicalizer())
        else:
            census = sampled_census(model, SEED, row.runs, row.depth)
        out.update(seconds=time.perf_counter() - t0, runs=census.runs, states=census.states,
                   probabilities={n: (e.probability, e.low, e.high, e.exact)
                                  for n, e in census.estimates.items() if n in RACE})
    out["peak_mib"] = peak_memory_mb()
    conn.send(out)
    conn.close()


def measure_sampling(row: SamplingRow, budget: float, grace: float) -> SamplingMeasurement:
    """Run one row in a fresh process; kill it at budget plus `grace` (the search rows' grace)."""
    ctx = multiprocessing.get_context("spawn")
    receiver, sender = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(row, budget, sender), daemon=True)
    proc.start()
    sender.close()
    m = SamplingMeasurement(row)
    limit = budget + grace
    try:
        ready = receiver.poll(limit)
        figures = receiver.recv() if ready else None
    except EOFError:
        figures = None
    if figures is None:
        if proc.is_alive():
            m.killed = True
            proc.kill()
            m.error = f"killed at {limit:g} s"
        else:
            m.error = "the row's process exited without a result"
        proc.join()
        return m
    proc.join()
    for k, v in figures.items():
        setattr(m, k, v)
    return m
