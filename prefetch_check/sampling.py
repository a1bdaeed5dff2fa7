"""The protocol model as sampling strategies and the census need it, and TP sizes beyond the scenarios.

`sampling_model` is the search model (`api.search_model`), whose optional explorer member
`settled(state)` holds when every rank is settled (`PollProtocol.rank_settled`: every
thread idle, every request resolved, nothing left on the revoke or release queue). From
such a state only the schedulers step, round after round of drain with empty queues,
which changes nothing any property reads, so a run may stop there (tests/test_sampling.py
checks this against the full state graph).

`with_ranks` rescales a configuration (of either protocol) whose ranks are all alike to another TP size:
simulation reaches sizes (TP=32) that scenario files do not allow.
"""

from __future__ import annotations

from prefetch_check.api import search_model
from prefetch_check.model.protocols.rank_scaling import rescale
from prefetch_check.scenario import InputError


def sampling_model(config, predicate="fixed", protocol=None):
    """The search model; its `settled(state)` is the protocol's `rank_settled` on every rank."""
    return search_model(config, predicate, protocol)


def with_ranks(config, ranks: int, where: str = ""):
    """`config` (of either protocol) at `ranks` tensor-parallel ranks; every per-rank value must be
    the same on all ranks (`model/protocols/rank_scaling.py`)."""
    try:
        return rescale(config, ranks)
    except ValueError as exc:
        raise InputError(
            f"{where + ': ' if where else ''}--ranks {ranks}: the scenario's ranks differ "
            f"({exc} vary by rank), so it cannot be rescaled to another TP size; "
            "write a scenario with the per-rank values you want instead"
        ) from None
