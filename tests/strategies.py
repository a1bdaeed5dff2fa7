"""Hypothesis strategies shared by the property-based tests."""

from __future__ import annotations

from hypothesis import HealthCheck
from hypothesis import strategies as st

from prefetch_check.model.protocols.poll.config import POLICIES, SHAPES, Config, RequestSpec

# every property-based test: reproducible examples (derandomized), no per-example deadline
SETTINGS = dict(deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow])


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
        page_size=draw(st.integers(1, 2)),
        storage_batch_size=draw(st.integers(1, 2)),
        prefetch_threshold=draw(st.integers(0, 4)),
        clamp_threshold=draw(st.booleans()),
        policy=draw(st.sampled_from(POLICIES)),
        timeout_clock=draw(st.booleans()),
        alloc_may_fail=tuple(draw(st.booleans()) for _ in range(ranks)),
        shape=draw(st.sampled_from(SHAPES)),
    )
