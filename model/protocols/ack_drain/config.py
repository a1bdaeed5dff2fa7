"""The parameters of one ack-drain scenario: one immutable value the model reads nothing besides.

The options that differ between the releases that run this protocol (see
docs/model.md and prefetch_check/sglang/mappings/ack_drain/options.py):

  cache         "unified": UnifiedRadixCache, what the server builds from 0.5.19 (the only
                class from 0.5.21): no collective at check under wait_complete and
                best_effort, the local terminated flag short-circuits the timeout vote, the
                tail [completed, L) goes through host_mem_release_queue.
                "hiradix": HiRadixCache 0.5.19-0.5.20 (shipped, not built by the server): a MAX
                vote of `is_terminated() or can_terminate_prefetch()` at every check, the tail
                freed directly in the drain.
  ack_match     "operation": an ACK is applied only to the very operation in
                ongoing_prefetch (UnifiedRadixCache 0.5.20+); "rid": to whatever operation
                holds the request id (0.5.19, and HiRadixCache 0.5.20).
  deadline      "issue": the timeout clock runs from issue (0.5.19-0.5.22); "admission"
                (0.5.23): it starts at the first check that has to wait, and never fires once
                the pages have landed.
  exceptions    "end_thread": a storage exception ends the thread that met it (0.5.19-0.5.21);
                "caught" (0.5.22+): a failing query counts 0 hits, a failing batch 0 pages,
                and completed_req is still sent.

Per rank: storage hits, failing page reads, storage calls that raise, and how many pages the
host pool can give a prefetch (`host_pages`). Upstream states that host allocation is
rank-local but deterministic across ranks (`alloc_deterministic`, the default): then every
rank must be given the same `host_pages`; switch it off to see what breaks without it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from prefetch_check.model.protocols.config_checks import check_common, check_request_pages, per_rank

POLICIES = ("wait_complete", "timeout", "best_effort")
CACHES = ("unified", "hiradix")
ACK_MATCHES = ("operation", "rid")
DEADLINES = ("issue", "admission")
EXCEPTIONS = ("end_thread", "caught")


@dataclass(frozen=True)
class Request:
    """One request as storage and the scheduler see it.

    hits[r]          leading pages present in storage on rank r
    failing[r]       page indices whose read comes back short on rank r
    query_raises[r]  the storage query raises on rank r (batch_exists)
    batch_raises[r]  batch indices whose read raises on rank r
    readmits         times the request is preempted after its check and admitted again: a new
                     prefetch under the same request id
    abort_round      the scheduler round (counted in drains) at whose start the request is
                     aborted, or -1
    """

    pages: int
    hits: tuple[int, ...]
    failing: tuple[frozenset[int], ...]
    query_raises: tuple[bool, ...] = ()
    batch_raises: tuple[frozenset[int], ...] = ()
    readmits: int = 0
    abort_round: int = -1

    PER_RANK = ("hits", "failing", "query_raises", "batch_raises")  # what model/protocols/rank_scaling.py repeats

    def __post_init__(self) -> None:
        ranks = len(self.hits)
        if self.pages < 1:
            raise ValueError("a request has at least one page")
        if not self.query_raises:
            object.__setattr__(self, "query_raises", (False,) * ranks)
        if not self.batch_raises:
            object.__setattr__(self, "batch_raises", (frozenset(),) * ranks)
        if not len(self.failing) == len(self.query_raises) == len(self.batch_raises) == ranks:
            raise ValueError("hits, failing, query_raises and batch_raises must name the same ranks")
        check_request_pages(self)
        if self.readmits < 0:
            raise ValueError("readmits must be 0 or more")

    @property
    def generations(self) -> int:
        """Prefetches the request may issue: the first, and one per readmission."""
        return 1 + self.readmits


@dataclass(frozen=True)
class AckConfig:
    ranks: int
    requests: tuple[Request, ...]
    page_size: int = 1
    storage_batch_size: int = 128  # pages per storage read (STORAGE_BATCH_SIZE upstream)
    prefetch_threshold: int = 1  # tokens; raw (no clamp): below it, no issue and a revoke at drain
    policy: str = "wait_complete"
    timeout_clock: bool = True
    host_pages: tuple = ()  # per rank: pages the host pool can give one prefetch (None: enough)
    alloc_deterministic: bool = True
    cache: str = "unified"
    ack_match: str = "operation"
    deadline: str = "issue"
    exceptions: str = "end_thread"
    admission_limit: int = 0  # checks per scheduler round (0: every waiting request)

    PER_RANK = ("host_pages",)  # besides each request's (model/protocols/rank_scaling.py)

    def __post_init__(self) -> None:
        check_common(self, {
            "policy": POLICIES, "cache": CACHES, "ack_match": ACK_MATCHES, "deadline": DEADLINES, "exceptions": EXCEPTIONS,
        })
        per_rank(self, "host_pages", None)
        if self.alloc_deterministic and len(set(self.host_pages)) > 1:
            raise ValueError(
                "host_pages differ between ranks, but alloc_deterministic assumes (as upstream states) that "
                "host allocation gives every rank the same outcome; set alloc_deterministic = false to check "
                "what happens without that assumption"
            )
        if self.admission_limit < 0:
            raise ValueError("admission_limit must be 0 (no limit) or more")

    # ---- derived facts ----

    @property
    def num_requests(self) -> int:
        return len(self.requests)

    @property
    def last_abort_round(self) -> int:
        return max(q.abort_round for q in self.requests)

    def prefetch_tokens(self, q: int) -> int:
        return self.requests[q].pages * self.page_size

    def is_issued_by_threshold(self, q: int) -> bool:
        """prefetch_from_storage issues nothing below the threshold (page-aligned length)."""
        return self.prefetch_tokens(q) >= self.prefetch_threshold

    def agreed_hit_pages(self, q: int) -> int:
        """The hit count every rank's prefetch thread leaves the MIN collective with (no exception)."""
        spec = self.requests[q]
        if self.exceptions == "caught" and any(spec.query_raises):
            return 0
        return min(spec.hits)

    def alloc_pages(self, r: int, hit_pages: int) -> int:
        """Pages the drain allocates on rank r for an operation that hit `hit_pages`: all of them;
        else the largest page-aligned prefix the pool can give if it reaches the threshold; else 0
        (the operation is revoked)."""
        room = self.host_pages[r]
        if room is None or room >= hit_pages:
            return hit_pages
        if room * self.page_size >= self.prefetch_threshold and room > 0:
            return room
        return 0

    def with_(self, **changes) -> "AckConfig":
        return replace(self, **changes)


def uniform_ack_config(ranks: int = 1, requests: int = 1, pages: int = 2, hits: int | None = None,
                       failing: dict | None = None, **params) -> AckConfig:
    """A configuration whose requests all look alike (tests, benchmarks)."""
    hits = pages if hits is None else hits
    failing = failing or {}
    spec = Request(pages=pages, hits=(hits,) * ranks, failing=tuple(frozenset(failing.get(r, ())) for r in range(ranks)))
    return AckConfig(ranks=ranks, requests=(spec,) * requests, **params)
