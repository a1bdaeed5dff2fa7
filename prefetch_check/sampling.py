"""The protocol model as sampling strategies and the census need it, and TP sizes beyond the scenarios.

`sampling_model` is the search model (`api.search_model`) plus the optional explorer
member `settled(state)`: every thread idle, every request resolved, and nothing left
on a rank's revoke or release queue. From such a state only the schedulers step, round
after round of drain with empty queues, which changes nothing any property reads
(their program counters and collective registers only), so a run may stop there
(tests/test_sampling.py checks this against the full state graph).

`with_ranks` rescales a configuration whose ranks are all alike to another TP size:
simulation reaches sizes (TP=32) that scenario files do not allow.
"""

from __future__ import annotations

from prefetch_check.api import search_model
from prefetch_check.model.config import Config
from prefetch_check.model.predicates import Predicate
from prefetch_check.scenario import InputError


class SettlingModel:
    """A compiled protocol model with `settled(state)`; everything else is the model's own."""

    def __init__(self, model):
        self._model = model
        self._rank_settled: dict = {}  # rank code -> whether that rank is settled (a state is when all are)

    def settled(self, cstate) -> bool:
        known = self._rank_settled
        for code in cstate:
            answer = known.get(code)
            if answer is None:
                rank = self._model.rank_of[code]
                answer = known[code] = (
                    self._model.spec.quiescent((rank,)) and not rank.revoke_queue and not rank.release_queue
                )
            if not answer:
                return False
        return True

    def __getattr__(self, name):
        return getattr(self._model, name)


def sampling_model(config: Config, predicate: Predicate | str = "fixed") -> SettlingModel:
    return SettlingModel(search_model(config, predicate))


def with_ranks(config: Config, ranks: int, where: str = "") -> Config:
    """`config` at `ranks` tensor-parallel ranks; every per-rank value must be the same on all ranks."""
    if ranks == config.ranks:
        return config
    problems = []
    if len(set(config.alloc_may_fail)) > 1:
        problems.append("alloc_may_fail")
    for q, spec in enumerate(config.requests):
        if len(set(spec.hits)) > 1:
            problems.append(f"request {q} hits")
        if len(set(spec.failing)) > 1:
            problems.append(f"request {q} failing")
    if problems:
        raise InputError(
            f"{where + ': ' if where else ''}--ranks {ranks}: the scenario's ranks differ "
            f"({', '.join(problems)} vary by rank), so it cannot be rescaled to another TP size; "
            "write a scenario with the per-rank values you want instead"
        )
    requests = tuple(
        spec.__class__(pages=spec.pages, hits=spec.hits[:1] * ranks, failing=spec.failing[:1] * ranks)
        for spec in config.requests
    )
    return config.with_(ranks=ranks, requests=requests, alloc_may_fail=config.alloc_may_fail[:1] * ranks)
