"""One value from a case to every way of searching it: the checker builder.

Why: the search options used to travel as positional arguments (`check_case(case, predicate,
limits, on_progress, reductions, workers)`), and each command built its own model for
simulation and the census. A `Checker` holds what is checked (a protocol instance's recipe: a
scenario case, or a configuration with its protocol, and a predicate) and how (limits, workers,
reductions, progress); each setter returns a new value, and `check`, `simulate` and `census`
are the three ways to run it, as stateright's `CheckerBuilder` and Loom's `Builder` do.

    from prefetch_check import Checker, uniform_config
    result = Checker.of(uniform_config(ranks=2, pages=2), "fixed").workers(2).check()
    sim = Checker.of_case(case, "buggy").simulate(RandomWalk(), seed=0, schedules=1000, depth=200)
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Optional

from prefetch_check.explorer.limits import Limits, with_memory_default


@dataclass(frozen=True)
class Checker:
    """`build(predicate)` makes the protocol instance; the rest says how to search it."""

    build: Callable
    predicate: str = "fixed"
    search_limits: Optional[Limits] = None  # None: the command line's memory default only
    search_workers: int = 1
    reduction_level: object = True  # True (every vouched reduction), False/"off", "symmetry"
    progress: Optional[Callable] = None  # called with each progress report (explorer/options.py)

    @classmethod
    def of(cls, config, predicate="fixed", protocol=None) -> "Checker":
        """A configuration under a protocol (a built-in name, a class or `package.module:Class`)."""
        from prefetch_check.model.protocols import load_protocol

        protocol_class = load_protocol(protocol)
        return cls(lambda p: protocol_class(config, p), predicate)

    @classmethod
    def of_case(cls, case, predicate="fixed") -> "Checker":
        """A scenario case (`scenario.Case`): it builds its own protocol, so its configuration is
        always judged under the protocol it was written for."""
        return cls(case.build, predicate)

    # ---- how: each returns a new Checker

    def limits(self, limits: Optional[Limits]) -> "Checker":
        return replace(self, search_limits=limits)

    def workers(self, n: int) -> "Checker":
        return replace(self, search_workers=n)

    def reductions(self, level) -> "Checker":
        return replace(self, reduction_level=level)

    def on_progress(self, callback: Optional[Callable]) -> "Checker":
        return replace(self, progress=callback)

    # ---- what is built

    def protocol(self):
        """The protocol instance (its configuration and predicate)."""
        return self.build(self.predicate)

    def search_model(self):
        """The compiled model the search, simulation and the census run on."""
        from prefetch_check.model.engine.compiled import CompiledModel

        return CompiledModel(self.protocol())

    # ---- the three ways to run it

    def check(self):
        """Every property judged by the exhaustive search (reductions where vouched for);
        `stats.reductions` says which ran and why."""
        from prefetch_check.model.engine.search import search
        from prefetch_check.model.engine.vouch import choose

        protocol = self.protocol()
        chosen = choose(type(protocol), self.predicate, protocol.config, self.reduction_level)
        return search(protocol, chosen, with_memory_default(self.search_limits), self.progress,
                      workers=self.search_workers)

    def simulate(self, strategy, seed: int, schedules: int, depth: int, **options):
        """Sampled schedules (explorer/simulate.py): violations found, never VERIFIED."""
        from prefetch_check.explorer.simulate import simulate

        return simulate(self.search_model(), strategy, seed, schedules, depth, **options)

    def census(self, exact: bool = True, max_states: Optional[int] = None, seed: int = 0, runs: int = 0,
               depth: int = 0, **options):
        """The fraction of runs that violate each property under a uniform random scheduler:
        solved exactly on the whole state graph (raises explorer.census.TooLarge past
        `max_states`), or sampled (`exact=False`: `runs` walks of at most `depth` steps)."""
        from prefetch_check.explorer.census import exact_census, sampled_census

        model = self.search_model()
        if exact:
            return exact_census(model, model.canonicalizer(), max_states)
        return sampled_census(model, seed, runs, depth, **options)
