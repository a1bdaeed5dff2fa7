"""One immutable value that fixes everything a run of the protocol may depend on.

The model never reads parameters from anywhere else, so a configuration plus a
predicate fully determines the state graph (and therefore every verdict).

Besides the scenario's parameters (ranks, requests, what storage holds, the policy),
a configuration names the shape of the protocol: every step whose behaviour changed
between the SGLang releases 0.5.1 and 0.5.18 is an option here, and `releases.py` maps
each release family to its options. The defaults are the late2025 shape (0.5.6-0.5.15).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Optional

from prefetch_check.model.protocols.config_checks import check_common, check_request_pages, per_rank

POLICIES = ("wait_complete", "timeout", "best_effort")

# The two upstream shapes of the termination protocol (see PROTOCOL.md, "Version note").
#   late2025: scheduler reduces MAX over [not can_terminate, terminated]; the IO thread
#             calls mark_terminate after a batch that did not complete in full.
#   seed:     scheduler reduces only can_terminate (MIN); the terminated flag is not
#             shared and a short batch just stops.
SHAPES = ("late2025", "seed")
# Where host slots are reserved: when the prefetch is issued (for every page asked for), or
# when the scheduler's drain pops the operation off prefetch_hit_queue (for the hits only).
ALLOC_AT = ("issue", "hit")
# Where hits below the threshold are revoked: by the prefetch thread against the controller's
# threshold (clamped to a page when `clamp_threshold`), or by the scheduler's drain against
# the cache's raw `prefetch_threshold` (0.5.18).
THRESHOLD_TESTS = ("prefetch_thread", "drain")
# When the scheduler agrees on completed_tokens (all_reduce MIN) before insert: always, or
# not under wait_complete (0.5.1.x: each rank inserts its own count).
COMPLETED_MIN = ("always", "except_wait_complete")
TAIL_RELEASES = (1, 2)
# The all_reduce(MIN) calls the scheduler makes at the top of every round before the drain reads its
# queue sizes: none (0.5.2-0.5.12: writing_check skips its own when nothing is written back, and
# loading_check has none), loading_check's (0.5.13), writing_check's and loading_check's (0.5.14-0.5.16).
ROUND_COLLECTIVES = (0, 1, 2)


class ShapeError(ValueError):
    """Shape options no release combines and the model does not define; `key` names the option
    to change (and `request` the request, for a per-request one), so a scenario error can point at it."""

    def __init__(self, key: str, message: str, request: Optional[int] = None):
        super().__init__(message)
        self.key, self.request = key, request


@dataclass(frozen=True)
class RequestSpec:
    """What storage holds for one request, seen from every rank.

    hits[r]        -- leading pages present in storage on rank r (batch_exists stops at the first miss)
    failing[r]     -- page indices whose load fails on rank r
    alloc_pages[r] -- pages the hit-time host allocation can get for this request on rank r (after
                      evict_host and the retry); only with alloc_at = "hit". Default: all of them.
    """

    pages: int
    hits: tuple[int, ...]
    failing: tuple[frozenset[int], ...]
    alloc_pages: tuple[int, ...] = ()

    PER_RANK = ("hits", "failing", "alloc_pages")  # what model/protocols/rank_scaling.py repeats

    def __post_init__(self) -> None:
        if self.pages < 1:
            raise ValueError("a request has at least one page")
        if len(self.hits) != len(self.failing):
            raise ValueError("hits and failing must name the same ranks")
        check_request_pages(self)
        if not self.alloc_pages:
            object.__setattr__(self, "alloc_pages", (self.pages,) * len(self.hits))
        if len(self.alloc_pages) != len(self.hits):
            raise ValueError("alloc_pages must name the same ranks as hits")
        for a in self.alloc_pages:
            if not 0 <= a <= self.pages:
                raise ValueError(f"alloc_pages {a} outside 0..{self.pages}")


@dataclass(frozen=True)
class Config:
    """Parameters of one scenario; see PROTOCOL.md, "Parameters a scenario sets", and the
    release shapes (docs/model.md, "Release shapes")."""

    ranks: int
    requests: tuple[RequestSpec, ...]
    page_size: int = 1
    storage_batch_size: int = 8
    prefetch_threshold: int = 1
    clamp_threshold: bool = True
    policy: str = "wait_complete"
    timeout_clock: bool = True
    alloc_may_fail: tuple[bool, ...] = ()
    shape: str = "late2025"
    # ---- release shapes (defaults: late2025, 0.5.6-0.5.15) ----
    count_before_write: bool = False  # the IO thread counts a page (increment) before writing its data
    count_whole_batch: bool = False  # with count_before_write: one increment for a whole storage batch, then its writes
    round_collectives: int = 0  # all_reduce(MIN) calls the scheduler makes each round before the drain
    direct_release: bool = False  # host slots are freed at once (mem_pool_host.free), not queued for the drain
    tail_releases: int = 1  # how often the IO thread gives back the tail [completed_tokens, hits)
    completed_min: str = "always"  # when the scheduler takes all_reduce(MIN completed_tokens) before insert
    queue_unallocated: bool = False  # a failed allocation at issue still queues the operation, without slots
    alloc_at: str = "issue"  # where host slots are reserved
    threshold_test: str = "prefetch_thread"  # where hits below the threshold are revoked
    alloc_deterministic: bool = True  # assumption: the hit-time allocation has the same outcome on every rank

    PER_RANK = ("alloc_may_fail",)  # besides each request's (model/protocols/rank_scaling.py)

    def __post_init__(self) -> None:
        check_common(self, {
            "policy": POLICIES, "shape": SHAPES, "alloc_at": ALLOC_AT, "threshold_test": THRESHOLD_TESTS,
            "completed_min": COMPLETED_MIN, "tail_releases": TAIL_RELEASES, "round_collectives": ROUND_COLLECTIVES,
        })
        per_rank(self, "alloc_may_fail", False)
        self._check_shape()

    def _check_shape(self) -> None:
        """Combinations of shape options that no release has and the model does not define."""
        if self.count_whole_batch and not self.count_before_write:
            raise ShapeError("count_whole_batch", "count_whole_batch needs count_before_write (0.5.1 counts a batch, then writes it)")
        if self.threshold_test == "drain" and self.alloc_at != "hit":
            raise ShapeError("threshold_test", 'threshold_test = "drain" needs alloc_at = "hit" (the drain tests the threshold on prefetch_hit_queue)')
        if self.alloc_at == "hit":
            if self.queue_unallocated:
                raise ShapeError("queue_unallocated", 'queue_unallocated is about the allocation at issue; with alloc_at = "hit" nothing is allocated at issue')
            if any(self.alloc_may_fail):
                raise ShapeError(
                    "alloc_may_fail",
                    'alloc_may_fail is the allocation at issue; with alloc_at = "hit" the allocation outcome is '
                    "alloc_pages, per request and rank"
                )
        else:
            for i, q in enumerate(self.requests):
                if any(a != q.pages for a in q.alloc_pages):
                    raise ShapeError(
                        "alloc_pages", 'alloc_pages is the hit-time allocation (alloc_at = "hit"); at issue, use alloc_may_fail', i
                    )
        if self.alloc_deterministic:
            for i, q in enumerate(self.requests):
                if len(set(q.alloc_pages)) > 1:
                    raise ShapeError(
                        "alloc_pages",
                        f"request {i}: alloc_pages differ across ranks {list(q.alloc_pages)}, but alloc_deterministic "
                        "is on (upstream's assumption that the hit-time allocation reaches the same outcome on every "
                        "rank); set alloc_deterministic = false to check what happens without it",
                        i,
                    )
        if self.queue_unallocated and any(self.alloc_may_fail) and self.effective_threshold == 0:
            raise ShapeError(
                "queue_unallocated",
                "queue_unallocated with a threshold of 0 is not modelled: upstream's prefetch thread would publish "
                "an operation without host slots and fail on host_indices None (TypeError)"
            )

    # ---- derived facts, each a pure function of the configuration ----

    @property
    def num_requests(self) -> int:
        return len(self.requests)

    @property
    def effective_threshold(self) -> int:
        """The revoke threshold the prefetch thread compares hit tokens against (the controller's)."""
        if self.clamp_threshold:
            return max(self.prefetch_threshold, self.page_size)
        return self.prefetch_threshold

    @property
    def revoke_queue_exists(self) -> bool:
        """The prefetch thread revokes through prefetch_revoke_queue (gone when the drain tests the threshold)."""
        return self.threshold_test == "prefetch_thread"

    def drain_queues(self) -> tuple[str, ...]:
        """The queues whose sizes the drain agrees on (all_reduce MIN), in the order it pops them."""
        out = ("revoke",) if self.revoke_queue_exists else ()
        out += ("hit",) if self.alloc_at == "hit" else ()
        return out + (() if self.direct_release else ("release",))

    def prefetch_tokens(self, q: int) -> int:
        """Host slots `issue` allocates for request q (the page-aligned prefetch length)."""
        return self.requests[q].pages * self.page_size

    def is_issued_by_threshold(self, q: int) -> bool:
        """Whether `issue` creates an operation at all (prefetch length >= threshold)."""
        return self.prefetch_tokens(q) >= self.prefetch_threshold

    def agreed_hit_pages(self, q: int) -> int:
        """The hit count every rank leaves the MIN collective with, in pages (no allocation failing)."""
        return min(self.requests[q].hits)

    def below_threshold(self, hit_pages: int) -> bool:
        """Whether agreed hits are revoked: by the prefetch thread against the controller's threshold,
        or by the drain against the raw one."""
        if self.threshold_test == "drain":
            return hit_pages * self.page_size < self.prefetch_threshold
        return hit_pages * self.page_size < self.effective_threshold

    def hit_alloc_pages(self, q: int, r: int, hit_pages: int) -> Optional[int]:
        """The pages the drain's allocation reserves for q on rank r, or None (revoke): all the hits
        when they fit (alloc, else evict_host and alloc again), else the largest page-aligned prefix
        that fits if it holds at least the raw threshold, else nothing."""
        room = self.requests[q].alloc_pages[r]
        if room >= hit_pages:
            return hit_pages
        return room if room * self.page_size >= self.prefetch_threshold else None

    def is_revoked(self, q: int) -> bool:
        """Whether q is revoked on every rank when no allocation at issue fails: agreed hits below the
        threshold, or (hit-time allocation) no room on any rank."""
        hits = self.agreed_hit_pages(q)
        if self.below_threshold(hits):
            return True
        return self.alloc_at == "hit" and all(self.hit_alloc_pages(q, r, hits) is None for r in range(self.ranks))

    def delivered_pages(self, q: int) -> Optional[int]:
        """The pages every rank should insert for q when nothing fails or times out, or None when
        some rank revokes it (below the threshold, or its hit-time allocation found no room)."""
        if not self.is_issued_by_threshold(q):
            return None
        hits = self.agreed_hit_pages(q)
        if self.below_threshold(hits):
            return None
        if self.alloc_at == "issue":
            return hits
        got = [self.hit_alloc_pages(q, r, hits) for r in range(self.ranks)]
        return None if None in got else min(got)

    def with_(self, **changes) -> "Config":
        """A copy with some parameters changed (the configuration itself never changes)."""
        return replace(self, **changes)


def uniform_config(
    ranks: int = 1,
    requests: int = 1,
    pages: int = 2,
    hits: int | None = None,
    failing: dict[int, set[int]] | None = None,
    alloc_pages: int | dict[int, int] | None = None,
    **params,
) -> Config:
    """A configuration whose requests all look alike: the common case in tests and benchmarks.

    `failing` maps a rank to the pages that fail to load on it (for every request);
    `alloc_pages` is the hit-time allocation's room, one value for every rank or a map rank -> pages.
    """
    hits = pages if hits is None else hits
    failing = failing or {}
    if alloc_pages is None:
        room = ()
    elif isinstance(alloc_pages, dict):
        room = tuple(alloc_pages.get(r, pages) for r in range(ranks))
    else:
        room = (alloc_pages,) * ranks
    spec = RequestSpec(
        pages=pages,
        hits=(hits,) * ranks,
        failing=tuple(frozenset(failing.get(r, ())) for r in range(ranks)),
        alloc_pages=room,
    )
    return Config(ranks=ranks, requests=(spec,) * requests, **params)
