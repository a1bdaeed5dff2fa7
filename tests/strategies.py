"""Hypothesis strategies shared by the property-based tests."""

from __future__ import annotations

from hypothesis import HealthCheck
from hypothesis import strategies as st

from prefetch_check.model.protocols.poll.config import POLICIES, SHAPES, Config, RequestSpec

# every property-based test: reproducible examples (derandomized), no per-example deadline
SETTINGS = dict(deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])


def sizes(draw, max_threshold: int) -> dict:
    """page_size 1-2, storage_batch_size 1-2 and a threshold up to `max_threshold`, drawn in that
    order: the sizes every protocol's configuration takes."""
    return dict(
        page_size=draw(st.integers(1, 2)),
        storage_batch_size=draw(st.integers(1, 2)),
        prefetch_threshold=draw(st.integers(0, max_threshold)),
    )


@st.composite
def configs(draw, min_ranks: int = 1, max_ranks: int = 2):
    """Small random configurations: requests 1-2, pages 1-3, page_size 1-2; hits per rank,
    failing pages, threshold, clamp, policy, clock, shape and allocation failure all random."""
    ranks = draw(st.integers(min_ranks, max_ranks))
    requests = []
    for _ in range(draw(st.integers(1, 2))):
        pages = draw(st.integers(1, 3))
        hits = tuple(draw(st.integers(0, pages)) for _ in range(ranks))
        failing = tuple(frozenset(draw(st.sets(st.integers(0, pages - 1), max_size=1))) for _ in range(ranks))
        requests.append(RequestSpec(pages=pages, hits=hits, failing=failing))
    return Config(
        ranks=ranks,
        requests=tuple(requests),
        **sizes(draw, max_threshold=4),
        clamp_threshold=draw(st.booleans()),
        policy=draw(st.sampled_from(POLICIES)),
        timeout_clock=draw(st.booleans()),
        alloc_may_fail=tuple(draw(st.booleans()) for _ in range(ranks)),
        shape=draw(st.sampled_from(SHAPES)),
    )


@st.composite
def ack_configs(draw, min_ranks: int = 1, max_ranks: int = 2):
    """Small random ack-drain configurations: every option and failure of the protocol random."""
    from prefetch_check.model.protocols.ack_drain.config import (
        ACK_MATCHES, CACHES, DEADLINES, EXCEPTIONS, POLICIES as ACK_POLICIES, AckConfig, Request,
    )

    ranks = draw(st.integers(min_ranks, max_ranks))
    requests = []
    for _ in range(draw(st.integers(1, 2))):
        pages = draw(st.integers(1, 2))
        requests.append(Request(
            pages=pages,
            hits=tuple(draw(st.integers(0, pages)) for _ in range(ranks)),
            failing=tuple(frozenset(draw(st.sets(st.integers(0, pages - 1), max_size=1))) for _ in range(ranks)),
            query_raises=tuple(draw(st.booleans()) and draw(st.booleans()) for _ in range(ranks)),
            batch_raises=tuple(frozenset(draw(st.sets(st.integers(0, 1), max_size=1))) if draw(st.booleans()) else frozenset()
                               for _ in range(ranks)),
            readmits=draw(st.integers(0, 1)),
            abort_round=draw(st.sampled_from([-1, -1, 1, 2])),
        ))
    deterministic = draw(st.booleans())
    host = draw(st.sampled_from([None, 1, 2]))
    host_pages = (host,) * ranks if deterministic else tuple(draw(st.sampled_from([None, 1])) for _ in range(ranks))
    return AckConfig(
        ranks=ranks,
        requests=tuple(requests),
        **sizes(draw, max_threshold=2),
        policy=draw(st.sampled_from(ACK_POLICIES)),
        timeout_clock=draw(st.booleans()),
        host_pages=host_pages,
        alloc_deterministic=deterministic,
        cache=draw(st.sampled_from(CACHES)),
        ack_match=draw(st.sampled_from(ACK_MATCHES)),
        deadline=draw(st.sampled_from(DEADLINES)),
        exceptions=draw(st.sampled_from(EXCEPTIONS)),
        admission_limit=draw(st.integers(0, 1)),
    )


@st.composite
def release_configs(draw, min_ranks: int = 1, max_ranks: int = 2):
    """Small random configurations of every release shape (model/protocols/poll/releases.py): a
    family's options, one option of it maybe flipped, and (hit-time allocation) random room per
    request, equal on every rank or not (the alloc_deterministic assumption on or off)."""
    from hypothesis import assume

    from prefetch_check.model.protocols.poll.config import ShapeError
    from prefetch_check.model.protocols.poll.releases import FAMILIES

    base = draw(configs(min_ranks, max_ranks))
    shape = dict(FAMILIES[draw(st.sampled_from(sorted(FAMILIES)))].options)
    flip = draw(st.sampled_from([None, "count_before_write", "count_whole_batch", "direct_release", "queue_unallocated"]))
    if flip is not None:
        shape[flip] = not shape.get(flip, False)
    shape.setdefault("shape", base.shape)
    shape["round_collectives"] = draw(st.integers(0, 2))  # writing_check / loading_check before the drain
    requests, alloc_may_fail, deterministic = base.requests, base.alloc_may_fail, True
    if shape.get("alloc_at") == "hit":
        alloc_may_fail = (False,) * base.ranks
        deterministic = draw(st.booleans())
        requests = []
        for spec in base.requests:
            if deterministic:
                room = (draw(st.integers(0, spec.pages)),) * base.ranks
            else:
                room = tuple(draw(st.integers(0, spec.pages)) for _ in range(base.ranks))
            requests.append(RequestSpec(spec.pages, spec.hits, spec.failing, room))
        requests = tuple(requests)
    try:
        return base.with_(requests=requests, alloc_may_fail=alloc_may_fail, alloc_deterministic=deterministic, **shape)
    except ShapeError:
        assume(False)
