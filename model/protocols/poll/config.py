"""One immutable value that fixes everything a run of the protocol may depend on.

The model never reads parameters from anywhere else, so a configuration plus a
predicate fully determines the state graph (and therefore every verdict).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

POLICIES = ("wait_complete", "timeout", "best_effort")

# The two upstream shapes of the termination protocol (see PROTOCOL.md, "Version note").
#   late2025: scheduler reduces MAX over [not can_terminate, terminated]; the IO thread
#             calls mark_terminate after a batch that did not complete in full.
#   seed:     scheduler reduces only can_terminate (MIN); the terminated flag is not
#             shared and a short batch just stops.
SHAPES = ("late2025", "seed")


@dataclass(frozen=True)
class RequestSpec:
    """What storage holds for one request, seen from every rank.

    hits[r]    -- leading pages present in storage on rank r (batch_exists stops at the first miss)
    failing[r] -- page indices whose load fails on rank r
    """

    pages: int
    hits: tuple[int, ...]
    failing: tuple[frozenset[int], ...]

    def __post_init__(self) -> None:
        if self.pages < 1:
            raise ValueError("a request has at least one page")
        if len(self.hits) != len(self.failing):
            raise ValueError("hits and failing must name the same ranks")
        for h in self.hits:
            if not 0 <= h <= self.pages:
                raise ValueError(f"hits {h} outside 0..{self.pages}")
        for f in self.failing:
            if any(not 0 <= p < self.pages for p in f):
                raise ValueError(f"failing pages {sorted(f)} outside 0..{self.pages - 1}")


@dataclass(frozen=True)
class Config:
    """Parameters of one scenario; see PROTOCOL.md, "Parameters a scenario sets"."""

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

    def __post_init__(self) -> None:
        if self.ranks < 1:
            raise ValueError("ranks must be at least 1")
        if not self.requests:
            raise ValueError("at least one request")
        if self.page_size < 1 or self.storage_batch_size < 1 or self.prefetch_threshold < 0:
            raise ValueError("page_size and storage_batch_size >= 1, prefetch_threshold >= 0")
        if self.policy not in POLICIES:
            raise ValueError(f"policy must be one of {POLICIES}")
        if self.shape not in SHAPES:
            raise ValueError(f"shape must be one of {SHAPES}")
        for q in self.requests:
            if len(q.hits) != self.ranks:
                raise ValueError(f"hits name {len(q.hits)} ranks, config has {self.ranks}")
        if not self.alloc_may_fail:
            object.__setattr__(self, "alloc_may_fail", (False,) * self.ranks)
        if len(self.alloc_may_fail) != self.ranks:
            raise ValueError("alloc_may_fail names every rank")

    # ---- derived facts, each a pure function of the configuration ----

    @property
    def num_requests(self) -> int:
        return len(self.requests)

    @property
    def effective_threshold(self) -> int:
        """The revoke threshold the prefetch thread compares hit tokens against."""
        if self.clamp_threshold:
            return max(self.prefetch_threshold, self.page_size)
        return self.prefetch_threshold

    def prefetch_tokens(self, q: int) -> int:
        """Host slots `issue` allocates for request q (the page-aligned prefetch length)."""
        return self.requests[q].pages * self.page_size

    def is_issued_by_threshold(self, q: int) -> bool:
        """Whether `issue` creates an operation at all (prefetch length >= threshold)."""
        return self.prefetch_tokens(q) >= self.prefetch_threshold

    def agreed_hit_pages(self, q: int) -> int:
        """The hit count every rank leaves the MIN collective with, in pages."""
        return min(self.requests[q].hits)

    def is_revoked(self, q: int) -> bool:
        """Whether the prefetch thread revokes q (agreed hits below the clamped threshold)."""
        return self.agreed_hit_pages(q) * self.page_size < self.effective_threshold

    def with_(self, **changes) -> "Config":
        """A copy with some parameters changed (the configuration itself never changes)."""
        return replace(self, **changes)


def uniform_config(
    ranks: int = 1,
    requests: int = 1,
    pages: int = 2,
    hits: int | None = None,
    failing: dict[int, set[int]] | None = None,
    **params,
) -> Config:
    """A configuration whose requests all look alike: the common case in tests and benchmarks.

    `failing` maps a rank to the pages that fail to load on it (for every request).
    """
    hits = pages if hits is None else hits
    failing = failing or {}
    spec = RequestSpec(
        pages=pages,
        hits=(hits,) * ranks,
        failing=tuple(frozenset(failing.get(r, ())) for r in range(ranks)),
    )
    return Config(ranks=ranks, requests=(spec,) * requests, **params)
