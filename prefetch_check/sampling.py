"""The protocol model as sampling strategies and the census need it, and TP sizes beyond the scenarios.

`sampling_model` is the search model (`api.search_model`), whose optional explorer member
`settled(state)` holds when every rank is settled (`PollProtocol.rank_settled`: every
thread idle, every request resolved, nothing left on the revoke or release queue). From
such a state only the schedulers step, round after round of drain with empty queues,
which changes nothing any property reads, so a run may stop there (tests/test_sampling.py
checks this against the full state graph).

`with_ranks` rescales a configuration whose ranks are all alike to another TP size:
simulation reaches sizes (TP=32) that scenario files do not allow.
"""

from __future__ import annotations

from prefetch_check.api import search_model
from prefetch_check.model.protocols.poll.config import Config
from prefetch_check.scenario import InputError


def sampling_model(config: Config, predicate="fixed", protocol=None):
    """The search model; its `settled(state)` is the protocol's `rank_settled` on every rank."""
    return search_model(config, predicate, protocol)


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
