"""What one executor check runs: the deployment and requests (CodeConfig) and the search bounds
(CodeLimits). Plain data: the parent sends it to the child process as JSON."""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Optional

POLICIES = ("wait_complete", "best_effort", "timeout")  # timeout: the search fires deadlines (explores_clock)
# the ack-drain world's round gate (worlds/ack_drain/harness.py `round_enabled`): "agreed" starts a
# round under wait_complete only when a drained queue holds something on every rank (MIN > 0),
# which assumes the drain pops at most the MIN the ranks agree on; "any" also when one holds
# something on some rank (MAX > 0) and something was put on a drained queue since the last round
# started (one round per arrival): a drain popping more than the MIN runs its divergent round.
# "auto", the default: "any" under best_effort (1.6x the runs of 0.5.23's 2x1), "agreed" under
# wait_complete (15x at 2x1) and timeout (its 2-rank search does not finish either way). At one
# rank the two are the same gate.
ROUND_GATES = ("auto", "any", "agreed")
CACHE_CLASSES = ("UnifiedRadixCache", "HiRadixCache")  # the ack-drain world's judged classes (HiRadixCache: 0.5.19-0.5.20)


@dataclass(frozen=True)
class CodeConfig:
    """ranks x requests of `pages` pages each; per rank what storage holds and fails."""

    ranks: int = 1
    requests: int = 1
    pages: int = 2
    page_size: int = 1
    policy: str = "wait_complete"
    hits: Optional[tuple[int, ...]] = None  # stored leading pages per rank (None: all)
    failing: Optional[tuple[tuple[int, ...], ...]] = None  # unreadable pages per rank
    query_raises: Optional[tuple[bool, ...]] = None  # the existence query raises on that rank
    raising_reads: Optional[tuple[tuple[int, ...], ...]] = None  # per rank: a batch read starting at one of these pages raises
    host_pages: Optional[int] = None  # host pool size in pages (None: room for every request)
    threshold_pages: int = 1  # the tree's prefetch_threshold, in pages
    reissue: bool = False  # once admitted, each request is retracted and prefetched again (same handle)
    abort_round: Optional[int] = None  # in this scheduler round every waiting request is aborted instead of checked
    # (0: as soon as every request is issued, before the first round)
    # the retry world: the tree's own Scheduler retry/re-issue/readmission methods on a waiting queue
    retries: bool = False
    retry_interval: int = 1  # hicache_storage_prefetch_retry_poll_interval (upstream's default: 8)
    retry_attempts: int = 2  # hicache_storage_prefetch_retry_max_attempts (upstream's default: 8)
    readmissions: int = 0  # an admitted request is retracted and readmitted this many times (retries only)
    batch: Optional[int] = None  # requests admitted per round (None: all; retries only)
    lost_device_pages: int = 0  # pages the device matched at the lookup, lost before admission (retries only)
    capacity_pages: Optional[int] = None  # prefetch_capacity_limit in pages (None: every request's; rate limit)
    rid_reuse: bool = False  # after an abort the client reuses the rid for a new request (retries only)
    # retries only, 2 requests or more: the last request arrives in this scheduler round, not at the start,
    # and the tree's _add_request_to_queue meets it with the server's queue settings (ARRIVALS says which)
    arrival_round: Optional[int] = None
    arrival: str = "preempts"
    # the cache's reset (worlds/ack_drain/cache_reset.py): the engine paused, flush_cache is asked from this
    # scheduler round (0: as soon as every request is issued) and again each round until the tree's own
    # is_fully_idle lets it through (flush_gate.py); then tree_cache.reset(), and the engine resumes
    reset_round: Optional[int] = None
    # with reset_round: the last request arrives as the engine resumes, issued after the reset and served by the
    # storage threads the reset started (what the restart must leave working: the stop event cleared, the queues)
    reset_arrival: bool = False
    driven_clock: bool = False  # the conformance check moves the clock; else under timeout the search fires it
    # the storage backend: the stand-in (stand_ins/storage.py, written_storage.py) or the tree's own
    # HiCacheFile and its LRU file evictor on a fresh directory of each run (stand_ins/file_storage.py)
    storage: str = "stand-in"
    file_pages: Optional[int] = None  # storage="file": the file evictor's cap (max_size) in pages (None: no cap)
    file_metadata_cache: bool = False  # storage="file": HiCacheFile's positive-lookup metadata cache on
    # storage="file": pages (of every request) another server sharing the storage deletes, on each
    # rank at a moment the search chooses (its LRU evicting them: a query may find a page its read misses)
    file_lost: tuple[int, ...] = ()
    host_memory_mode: str = "cache"  # buffer_only: the tree's BufferModePipeline stages fetches (worlds/ack_drain/buffer/)
    device_pages: int = 0  # buffer_only: leading pages of each request already on the device (the splice anchor)
    evict_device_round: Optional[int] = None  # buffer_only, backup: in this round the device tree evicts every unpinned page
    device_room: Optional[int] = None  # buffer_only: the device KV pool in pages (None: twice every request's pages)
    # the write path under hicache write_through (buffer_only: worlds/ack_drain/buffer/backup_run.py,
    # through the pipeline; cache mode: worlds/ack_drain/write_through/): every insert into the device
    # tree backs its new node up to host and storage, and in round 1 the scheduler inserts a request
    # it computed itself (its prefill), `pages` pages
    backup: bool = False
    # hicache_write_policy of the write path: write_through (the default), or in cache mode write_back,
    # where the insert writes nothing and device eviction backs an unwritten leaf up first (needs
    # evict_device_round: nothing is written before)
    write_policy: str = "write_through"
    # cache mode's write path: in this round a second computed request sharing the first's first page is
    # inserted, splitting the first's node (write_through/tree.py); None: no second request
    split_round: Optional[int] = None
    # buffer_only's write path: the computed request inserted in this many chunks, one a round from
    # round 1, each a longer prefix (chunked prefill: cache_unfinished_req after each chunk), so its
    # nodes form a chain, each a child of the one before: a child's write is admitted only while its
    # parent is stored or in flight, and two writes compete for the write window
    computed_chunks: int = 1
    # buffer_only's write path: the computed request has request 0's tokens (another request computed
    # the prefix request 0 prefetches), so its insert may cover request 0's staged span on the device
    computed_shares: bool = False
    # buffer_only's write path: the computed request's length in pages (None: `pages`); with
    # computed_shares and fewer pages than request 0, the device comes to cover only the head of
    # request 0's staged span (the hit-time trim of a device-resident head, then a partial plan)
    computed_pages: Optional[int] = None
    # cache mode's write path: once the device eviction (evict_device_round) took the computed
    # request's node on every rank, a request of its tokens arrives, and the scheduler loads its host
    # hit back to the device through the cache's own init_load_back (write_through/run.py)
    load_back: bool = False
    # load_back: the allocation that made the device eviction keeps the rows it freed (a running
    # batch), so the load-back finds no device room, evicts for it and gives up
    device_full: bool = False
    # host memory pressure: host-only pages the tree holds from an earlier request (evictable by the
    # release's evict_host when a prefetch's host allocation fails), the leading ones locked
    host_held_pages: int = 0  # pages of the host pool (host_pages) the tree holds at the start
    host_locked_pages: int = 0  # of those, the leading pages a running request locks (never evictable)
    host_anchored: bool = False  # the held pages are the request's own prefix: its prefetch anchors at them
    # sidecar pools (worlds/ack_drain/sidecars.py): "swa" / "mamba" (the SWA and Mamba components'
    # trailing-window pools, each its own host pool) and "indexer" (a KV-derived pool registered
    # with register_sidecar_pool: read per KV batch into the KV slots' rows)
    sidecars: tuple[str, ...] = ()
    sidecar_hits: Optional[tuple[tuple[int, ...], ...]] = None  # per rank, per sidecar: its stored leading pages
    sidecar_failing: Optional[tuple[tuple[int, ...], ...]] = None  # per rank: pages no sidecar pool can read
    swa_window_pages: int = 2  # the SWA component's window (full_window_pages)
    sidecar_pool_pages: Optional[tuple[int, ...]] = None  # per sidecar: its host pool in its pages (None: room for all)
    shared_arena: Optional[int] = None  # the KV and SWA/Mamba pools share one host arena of this many page envelopes
    cache_class: str = "UnifiedRadixCache"  # ack-drain: HiRadixCache runs the class 0.5.19-0.5.20 ship beside it
    # PP > 1 (worlds/ack_drain/stages.py): `ranks` are all the ranks, pp_size stages of ranks // pp_size
    # TP ranks each (rank i is stage i // tp, TP rank i % tp), each rank its own host pool
    pp_size: int = 1
    world: str = "ack-drain"  # the protocol whose world the tree's classes run in (a registered one with a world pack)
    round_gate: str = "auto"  # ack-drain: when a scheduler round starts (ROUND_GATES; `gate()` resolves auto)

    def __post_init__(self):
        if self.policy not in POLICIES:
            raise ValueError(f"policy {self.policy!r}: the executor runs {', '.join(POLICIES)}")
        from prefetch_check.model.code.pack import worlds

        if self.world not in worlds():
            raise ValueError(f"world {self.world!r}: the executor has {', '.join(worlds())}")
        if not self.retries and (self.readmissions or self.batch is not None or self.lost_device_pages or self.rid_reuse):
            raise ValueError("readmissions, batch, lost_device_pages and rid_reuse belong to the retry world: retries=True")
        _check_arrival(self)
        _check_reset(self)
        if self.round_gate not in ROUND_GATES:
            raise ValueError(f"round_gate {self.round_gate!r}: the executor has {', '.join(ROUND_GATES)}")
        if self.round_gate == "any" and self.world != "ack-drain":
            raise ValueError(f"round_gate {self.round_gate!r}: the ack-drain world's gate ({self.world}'s own waits for "
                             "every rank's queues)")
        if self.cache_class not in CACHE_CLASSES:
            raise ValueError(f"cache_class {self.cache_class!r}: the executor runs {', '.join(CACHE_CLASSES)}")
        if self.cache_class == "HiRadixCache" and (self.world != "ack-drain" or self.retries or self.host_held_pages
                                                   or self.host_memory_mode != "cache"):
            raise ValueError("cache_class HiRadixCache: the ack-drain world in host_memory_mode cache, without "
                             "retries or host_held_pages (its radix tree's eviction is not modelled)")
        if self.host_memory_mode not in ("cache", "buffer_only"):
            raise ValueError(f"host_memory_mode {self.host_memory_mode!r}: the executor runs cache, buffer_only")
        if self.host_memory_mode == "buffer_only" and self.retries and (self.readmissions or self.lost_device_pages
                                                                         or self.rid_reuse):
            raise ValueError("buffer_only with retries: the device tree's own match and eviction (device_pages, "
                             "evict_device_round), without readmissions, lost_device_pages or rid_reuse (a "
                             "retracted staged request is not modelled)")
        if self.host_memory_mode == "cache" and (self.device_pages or self.device_room is not None
                                                 or (self.evict_device_round is not None and not self.backup)):
            raise ValueError("device_pages, evict_device_round and device_room need host_memory_mode='buffer_only' "
                             "(evict_device_round: or the write path, backup=True)")
        if self.backup and (self.pp_size > 1 or self.world != "ack-drain"):
            raise ValueError("backup (the write path) runs in the ack-drain world without PP")
        if self.backup and self.host_memory_mode == "cache" and (
                self.retries or self.sidecars or self.host_anchored or self.cache_class != "UnifiedRadixCache"
                or self.reissue):
            raise ValueError("backup in host_memory_mode cache (worlds/ack_drain/write_through/): UnifiedRadixCache "
                             "without retries, reissue, sidecars or host_anchored")
        if self.split_round is not None and (not self.backup or self.host_memory_mode != "cache" or self.pages < 2
                                             or self.evict_device_round is not None or self.host_held_pages
                                             or self.split_round < 1):
            raise ValueError("split_round: cache mode's write path (backup=True) of 2 pages or more, from round 1, "
                             "without evict_device_round or host_held_pages")
        if self.computed_chunks != 1 and (not self.backup or self.host_memory_mode != "buffer_only"
                                          or not 1 <= self.computed_chunks <= self.pages):
            raise ValueError(f"computed_chunks {self.computed_chunks}: buffer_only's write path (backup=True), "
                             f"between 1 and pages ({self.pages}) chunks of its computed request")
        if self.computed_shares and (not self.backup or self.host_memory_mode != "buffer_only"):
            raise ValueError("computed_shares: buffer_only's write path (backup=True)")
        if self.computed_pages is not None and (not self.backup or self.host_memory_mode != "buffer_only"
                                                or not self.computed_chunks <= self.computed_pages <= self.pages):
            raise ValueError(f"computed_pages {self.computed_pages}: buffer_only's write path (backup=True), from "
                             f"computed_chunks ({self.computed_chunks}) to pages ({self.pages})")
        if self.storage not in ("stand-in", "file"):
            raise ValueError(f"storage {self.storage!r}: the executor runs stand-in, file")
        if self.storage == "file" and (self.host_memory_mode != "cache" or self.world != "ack-drain"
                                       or self.pp_size > 1 or self.cache_class != "UnifiedRadixCache"
                                       or self.failing is not None or self.query_raises is not None
                                       or self.raising_reads is not None or self.sidecar_failing is not None):
            raise ValueError("storage file: the ack-drain world's UnifiedRadixCache in host_memory_mode cache, without "
                             "PP, failing, sidecar_failing, query_raises or raising_reads (HiCacheFile reads what is on "
                             "disk)")
        if self.file_pages is not None and (self.storage != "file" or self.file_pages < 1):
            raise ValueError(f"file_pages {self.file_pages}: a cap of 1 page or more on storage='file'")
        if self.file_metadata_cache and self.storage != "file":
            raise ValueError("file_metadata_cache: HiCacheFile's metadata cache, on storage='file'")
        if self.file_lost and (self.storage != "file" or not all(0 <= p < self.pages for p in self.file_lost)):
            raise ValueError(f"file_lost {self.file_lost!r}: pages 0..{self.pages - 1} of storage='file'")
        if self.write_policy not in ("write_through", "write_back"):
            raise ValueError(f"write_policy {self.write_policy!r}: the executor runs write_through, write_back")
        if self.write_policy == "write_back" and (not self.backup or self.host_memory_mode != "cache"
                                                  or self.evict_device_round is None or self.split_round is not None):
            raise ValueError("write_policy write_back: cache mode's write path (backup=True) with evict_device_round "
                             "(under write_back only the eviction writes), without split_round")
        if self.load_back and (not self.backup or self.host_memory_mode != "cache" or self.evict_device_round is None):
            raise ValueError("load_back: cache mode's write path (backup=True) with evict_device_round (a node "
                             "evicted from the device is loaded back)")
        if self.device_full and not self.load_back:
            raise ValueError("device_full: a load-back's device room (load_back=True)")
        if not 0 <= self.device_pages < self.pages:
            raise ValueError(f"device_pages {self.device_pages}: between 0 and pages - 1 ({self.pages - 1})")
        if not 0 <= self.host_locked_pages <= self.host_held_pages:
            raise ValueError(f"host_locked_pages {self.host_locked_pages}: between 0 and host_held_pages "
                             f"({self.host_held_pages})")
        if self.host_held_pages and self.host_memory_mode != "cache":
            raise ValueError("host_held_pages needs host_memory_mode='cache' (buffer_only's tree holds no host pages)")
        if self.host_anchored and (not self.host_held_pages or self.requests != 1 or self.reissue or self.retries):
            raise ValueError("host_anchored: one request (no reissue, no retries) continuing host_held_pages > 0")
        if self.host_held_pages > self.pool_pages():
            raise ValueError(f"host_held_pages {self.host_held_pages}: more than the host pool's {self.pool_pages()} pages")
        _check_sidecars(self)
        if self.pp_size < 1 or self.ranks % self.pp_size:
            raise ValueError(f"pp_size {self.pp_size}: a divisor of ranks ({self.ranks}), each stage the same TP size")
        if self.pp_size > 1 and self.world != "ack-drain":
            raise ValueError(f"pp_size > 1: the executor runs pipeline stages in the ack-drain world, not {self.world}")
        if (self.host_memory_mode == "buffer_only" and self.pp_size == 1 and self.pool_pages() * self.page_size < 2
                and (self.hits is None or any(self.hits))):
            # CC.__init__: prefetch_capacity_limit = int(0.9 * pool size), 0 for a 1-token pool, so
            # prefetch_rate_limited() parks every hit for good: "never admitted" about a pool no server has
            raise ValueError(f"host_memory_mode buffer_only with a host pool of {self.pool_pages() * self.page_size} "
                             "token: the release loads into at most 0.9 of its pool, none of 1 token, so every storage "
                             "hit parks for good; give it 2 tokens or more (pages, host_pages or page_size)")
        if self.pp_size > 1 and self.host_memory_mode == "buffer_only" and (self.retries or self.device_pages):
            raise ValueError("pp_size > 1 with buffer_only (the PP tickets) runs without retries and device pages")
        if self.pp_size > 1 and (self.sidecars or self.cache_class != "UnifiedRadixCache"):
            raise ValueError("pp_size > 1 runs UnifiedRadixCache without sidecar pools (not modelled together)")
        for name in ("hits", "failing", "query_raises", "raising_reads", "sidecar_hits", "sidecar_failing"):
            value = getattr(self, name)
            if value is not None and len(value) != self.ranks:
                raise ValueError(f"{name} gives {len(value)} ranks, the configuration has {self.ranks}")

    def gate(self) -> str:
        """The round gate this configuration runs: round_gate, "auto" resolved by the policy."""
        if self.round_gate != "auto":
            return self.round_gate
        return "any" if self.policy == "best_effort" else "agreed"

    def explores_clock(self) -> bool:
        """The search chooses where each rank's deadline fires (worlds/deadlines.py): the timeout
        policy, unless the conformance check drives the clock."""
        return self.policy == "timeout" and not self.driven_clock

    def tp_size(self) -> int:
        """The TP ranks of one pipeline stage."""
        return self.ranks // self.pp_size

    def hits_of(self, rank: int) -> int:
        return self.pages if self.hits is None else self.hits[rank]

    def failing_of(self, rank: int) -> frozenset[int]:
        return frozenset(self.failing[rank]) if self.failing is not None else frozenset()

    def raises_of(self, rank: int) -> bool:
        return bool(self.query_raises[rank]) if self.query_raises is not None else False

    def raising_reads_of(self, rank: int) -> frozenset[int]:
        return frozenset(self.raising_reads[rank]) if self.raising_reads is not None else frozenset()

    def sidecar_hits_of(self, rank: int, n: int) -> int:
        """Sidecar n's stored leading pages on this rank (None: as many as the KV pool's)."""
        if self.sidecar_hits is None:
            return self.first_page() + self.hits_of(rank)
        return self.first_page() + self.sidecar_hits[rank][n]

    def agreed_pages_of(self, rank: int) -> int:
        """The pages this rank's hit query can agree to: its stored KV pages, cut by each sidecar
        pool's (the backends' fold: a pool missing a page, or a window, shortens the usable prefix)."""
        cut = [self.sidecar_hits_of(rank, n) - self.first_page() for n in range(len(self.sidecars))]
        return min([self.hits_of(rank)] + cut)

    def sidecar_failing_of(self, rank: int) -> frozenset[int]:
        return frozenset(self.sidecar_failing[rank]) if self.sidecar_failing is not None else frozenset()

    def pool_pages(self) -> int:
        """Room for every request (twice with reissue: the first fetch stays in the tree), and for
        the pages the tree holds at the start (host_held_pages)."""
        return self.host_pages if self.host_pages is not None else self.needed_pages() + self.host_held_pages

    def room_pages(self) -> int:
        """What the prefetches can get of the host pool: all of it but the locked pages (the
        release's evict_host makes room by evicting the tree's unlocked ones); anchored at the held
        pages, the release's own anchor lock keeps all of them."""
        return self.pool_pages() - (self.host_held_pages if self.host_anchored else self.host_locked_pages)

    def first_page(self) -> int:
        """The request's first page the prefetch asks for: after the held pages it continues."""
        return self.host_held_pages if self.host_anchored else 0

    def needed_pages(self) -> int:
        """Every fetch's pages, and the write path's staging of its computed request (backup)."""
        return self.pages * (self.requests * self.fetches() + self.backup) + (
            self.pages - 1 if self.split_round is not None else 0)

    def fetches(self) -> int:
        """How many times one request's pages may be fetched (each fetch stays in the host tree)."""
        more = (1 + self.readmissions + self.retry_attempts + (1 if self.rid_reuse else 0)) if self.retries else 0
        return (2 if self.reissue else 1) + more

    def undisturbed(self) -> bool:
        """No short read, no exception, no abort, no device eviction, no capped file storage (its
        evictor may take a page a query found), no rate limit (0.5.23 admits a
        rate-limited queue head without storage: storage_prefetch.py pop_ready), no device match lost
        with no re-issue left (past the cap the scheduler admits the shorter match as is):
        wait_complete must then deliver the agreed hits."""
        return (self.abort_round is None and self.arrival_round is None and self.evict_device_round is None
                and self.reset_round is None
                and self.capacity_pages is None
                and self.file_pages is None and not self.file_lost
                and self.sidecar_failing is None
                and not (self.lost_device_pages and self.retry_attempts < 1)
                and not any(self.failing_of(r) or self.raises_of(r) or self.raising_reads_of(r)
                            for r in range(self.ranks)))

    def judges_delivery(self) -> bool:
        """wait_complete_delivers applies: wait_complete, nothing disturbing the request, and room
        in the host pool for every fetch; or, with pages the tree holds (host_held_pages), one
        request fetched once, which must get what the room left by the locked pages allows
        (`delivered_tokens`), unless the write path's host backup takes that room first (backup)."""
        if self.policy != "wait_complete" or not self.undisturbed() or self.sidecar_pool_pages is not None:
            return False
        pressured = ((self.host_held_pages or self.shared_arena is not None) and self.requests == 1
                     and self.fetches() == 1 and not self.backup)
        return self.room_pages() >= self.needed_pages() or bool(pressured)

    def scripted_events(self) -> dict[str, str]:
        """The events the configuration puts in a scheduler round, each with what it is. A search
        in which no run reaches one checked nothing of it (CodeResult.unreached, rt/search.py): the
        request admitted before the round, say, as an edit that admits early would make it."""
        events = (("abort_round", "the client's abort of a waiting request in round {}"),
                  ("evict_device_round", "the device eviction in round {}"),
                  ("split_round", "the node split in round {}"),
                  ("arrival_round", "the last request's arrival in round {}"),
                  ("reset_round", "flush_cache (the cache's reset) in round {}"))
        return {name: what.format(getattr(self, name)) for name, what in events if getattr(self, name) is not None}

    def judged_deliveries(self) -> tuple[int, ...]:
        """The requests wait_complete_delivers judges: every one where `judges_delivery`; after the
        cache's reset (reset_arrival) the request arriving after it, which nothing else disturbs (the
        reset emptied the host pool: room for it). Asked at every terminal run: computed once."""
        return _judged_deliveries(self)

    def arena_pages(self, agreed_pages: int) -> int:
        """With a shared arena: the longest KV prefix whose pages and trailing windows fit in it
        (allocate_storage_hit's search for a prefix; the windows are cut to the prefix)."""
        windows = [min(self.swa_window_pages, self.pages) if s == "swa" else 1
                   for s in self.sidecars if s in ("swa", "mamba")]
        return max((k for k in range(agreed_pages + 1) if k + sum(min(w, k) for w in windows) <= self.shared_arena),
                   default=0)

    def delivered_tokens(self, agreed_tokens: int) -> int:
        """What wait_complete must deliver of the tokens the ranks agreed on: the protocol's
        allocation (alloc; on failure evict_host and retry; else the largest page-aligned prefix
        that fits, if at least the threshold; else nothing) leaves the room the locked pages allow."""
        if self.shared_arena is not None:
            want = self.arena_pages(agreed_tokens // self.page_size) * self.page_size
            return want if want >= self.threshold_pages * self.page_size else 0
        want = min(agreed_tokens, self.room_pages() * self.page_size)
        return want if want >= self.threshold_pages * self.page_size else 0

    def to_json(self) -> dict:
        """The fields; the buffer_only and host-pressure ones only when set, so another
        configuration's JSON (and the cached verdicts keyed by it) is what it was before they existed."""
        data = dataclasses.asdict(self)
        for name, default in _OPTIONAL_DEFAULTS.items():
            if data[name] == default:
                del data[name]
        return data

    @classmethod
    def from_json(cls, data: dict) -> "CodeConfig":
        def tup(v):
            return tuple(tup(x) for x in v) if isinstance(v, list) else v
        return cls(**{k: tup(v) for k, v in data.items()})


_OPTIONAL_DEFAULTS = {"host_memory_mode": "cache", "device_pages": 0, "evict_device_round": None, "device_room": None,
                      "backup": False, "split_round": None, "computed_chunks": 1, "computed_shares": False, "computed_pages": None, "load_back": False, "device_full": False, "write_policy": "write_through", "storage": "stand-in", "file_pages": None,
                      "file_metadata_cache": False, "file_lost": (),
                      "host_held_pages": 0, "host_locked_pages": 0, "host_anchored": False,
                      "cache_class": "UnifiedRadixCache", "sidecars": (),
                      "sidecar_hits": None, "sidecar_failing": None, "swa_window_pages": 2,
                      "sidecar_pool_pages": None, "shared_arena": None, "pp_size": 1, "round_gate": "auto",
                      "arrival_round": None, "arrival": "preempts", "reset_round": None,
                      "reset_arrival": False}
# CodeConfig.arrival: how the server meets the last request arriving in arrival_round (the waiting queue
# stand-in's server settings, worlds/ack_drain/waiting_queue.py `QUEUE_SETTINGS`)
ARRIVALS = {
    "preempts": "max_queued_requests at the requests waiting, priority scheduling on, and the arrival outranks "
                "them: _abort_on_queued_limit aborts the least preferred waiting request for it",
    "rejected": "max_queued_requests at the requests waiting, no priority scheduling: the arrival is aborted",
    "priority_refused": "a priority on the arrival while priority scheduling is off, abort_on_priority_when_disabled: "
                        "_set_or_validate_priority aborts it",
}


def _check_arrival(cfg: "CodeConfig") -> None:
    """A late arrival the retry world runs, or a clear error naming the field."""
    if cfg.arrival not in ARRIVALS:
        raise ValueError(f"arrival {cfg.arrival!r}: one of {', '.join(ARRIVALS)}")
    if cfg.arrival_round is None:
        return
    if not cfg.retries or cfg.requests < 2 or cfg.arrival_round < 1:
        raise ValueError("arrival_round: the retry world (retries=True), 2 requests or more (the last one arrives "
                         "late), a round from 1")


@functools.lru_cache(maxsize=64)
def _judged_deliveries(cfg: "CodeConfig") -> tuple[int, ...]:
    """CodeConfig.judged_deliveries, once per configuration (the late request's check builds a
    configuration of its own, whose checks would otherwise run at every terminal run)."""
    if cfg.judges_delivery():
        return tuple(range(cfg.requests))
    if not cfg.reset_arrival:
        return ()
    late = dataclasses.replace(cfg, reset_round=None, reset_arrival=False, requests=1)
    return (cfg.requests - 1,) if late.judges_delivery() else ()


def _check_reset(cfg: "CodeConfig") -> None:
    """A cache reset the world runs (worlds/ack_drain/cache_reset.py), or a clear error naming the field."""
    if cfg.reset_round is None:
        if cfg.reset_arrival:
            raise ValueError("reset_arrival: a request arriving after the cache's reset needs reset_round")
        return
    if cfg.reset_arrival and cfg.requests < 2:
        raise ValueError("reset_arrival: 2 requests or more (the last one arrives after the reset)")
    if cfg.reset_round < 0:
        raise ValueError(f"reset_round {cfg.reset_round}: a round from 0 (0: as soon as every request is issued)")
    if cfg.retries and (cfg.reset_round < 1 or cfg.reset_arrival or cfg.abort_round is not None
                        or cfg.arrival_round is not None or cfg.rid_reuse):
        raise ValueError("reset_round with retries: from round 1 (the retry world's scheduler loop), without "
                         "reset_arrival, an abort, a late arrival or a reused rid")
    if cfg.host_memory_mode == "buffer_only" and (cfg.ranks != 1 or cfg.retries or cfg.evict_device_round is not None):
        raise ValueError("reset_round under buffer_only: one rank, without retries or evict_device_round")
    if cfg.backup and (cfg.computed_chunks != 1 or cfg.computed_shares or cfg.computed_pages is not None):
        raise ValueError("reset_round with backup: the computed request in one chunk, not sharing a request's tokens")
    if cfg.backup and cfg.host_memory_mode == "cache" and (
            cfg.ranks != 1 or cfg.write_policy != "write_through" or cfg.split_round is not None
            or cfg.evict_device_round is not None or cfg.load_back):
        raise ValueError("reset_round with cache mode's write path: one rank under write_through, without "
                         "split_round, evict_device_round or load_back")
    if (cfg.world != "ack-drain" or cfg.cache_class != "UnifiedRadixCache"
            or cfg.reissue or cfg.host_held_pages or cfg.pp_size != 1
            or cfg.storage != "stand-in"):
        raise ValueError("reset_round: the ack-drain world on UnifiedRadixCache with the storage stand-in, "
                         "without reissue, host_held_pages or PP")
    if cfg.abort_round is not None and (cfg.host_memory_mode != "cache" or cfg.backup or cfg.sidecars
                                        or cfg.reset_arrival or cfg.abort_round > cfg.reset_round):
        raise ValueError("reset_round with abort_round: cache mode, the abort in the flush's round or before, "
                         "without backup, sidecars or reset_arrival")
    if cfg.sidecars and (cfg.host_memory_mode != "cache" or cfg.retries or cfg.shared_arena is not None):
        raise ValueError("reset_round with sidecars: cache mode, without retries or a shared arena")


SIDECARS = ("swa", "mamba", "indexer")  # what CodeConfig.sidecars may name (worlds/ack_drain/sidecars.py)


def _check_sidecars(cfg: "CodeConfig") -> None:
    """A sidecar configuration the world builds, or a clear error naming the field."""
    unknown = [s for s in cfg.sidecars if s not in SIDECARS]
    if unknown or len(set(cfg.sidecars)) != len(cfg.sidecars):
        raise ValueError(f"sidecars {cfg.sidecars!r}: each at most once, of {', '.join(SIDECARS)}")
    if not cfg.sidecars and (cfg.sidecar_hits is not None or cfg.sidecar_failing is not None):
        raise ValueError("sidecar_hits and sidecar_failing need sidecars, e.g. sidecars=('swa',)")
    if cfg.sidecars and (cfg.host_memory_mode != "cache" or cfg.world != "ack-drain" or cfg.retries
                         or cfg.host_held_pages or cfg.cache_class != "UnifiedRadixCache"):
        raise ValueError("sidecars run in the ack-drain world's cache mode on UnifiedRadixCache, without retries or "
                         "host_held_pages")
    if cfg.swa_window_pages < 1:
        raise ValueError(f"swa_window_pages {cfg.swa_window_pages}: at least 1")
    if cfg.sidecar_pool_pages is not None and (len(cfg.sidecar_pool_pages) != len(cfg.sidecars)
                                               or any(n < 0 for n in cfg.sidecar_pool_pages)):
        raise ValueError(f"sidecar_pool_pages {cfg.sidecar_pool_pages!r}: one size (>= 0) per sidecar (the "
                         "indexer's is ignored: its rows are the KV pool's)")
    if cfg.shared_arena is not None and (cfg.shared_arena < 0 or not set(cfg.sidecars) & {"swa", "mamba"}
                                         or cfg.requests != 1 or cfg.fetches() != 1):
        raise ValueError(f"shared_arena {cfg.shared_arena!r}: >= 0 envelopes, with a SWA or Mamba sidecar, one request "
                         "fetched once")
    for per_rank in cfg.sidecar_hits or ():
        if len(per_rank) != len(cfg.sidecars):
            raise ValueError(f"sidecar_hits {cfg.sidecar_hits!r}: one count per sidecar ({len(cfg.sidecars)}) per rank")


@dataclass(frozen=True)
class CodeLimits:
    """Search bounds: runs (schedules started), seconds, steps per run; memory and CPU of the child;
    and the search strategy, each exhaustive up to the bounds (VERIFIED possible): "auto" (DPOR, the
    default), "dpor" (an order only where two steps raced, within the world's persistent set unless
    `reduce` is off; strategies/dpor.py), "sleep" (every schedule up to reordering independent
    steps; strategies/sleep.py), "dfs" (every schedule, unreduced by footprints); or a sample,
    "random" (a seeded random walk) or "pct" (PCT with `pct_depth`), never exhaustive."""

    max_runs: int = 200_000
    max_seconds: float = 120.0
    max_depth: int = 2_000
    stop_on_first: bool = False
    stop_on: tuple[str, ...] = ()  # stop once every one of these properties is violated
    reduce: bool = True  # the world's persistent set (off: every enabled thread at every state)
    strategy: str = "auto"  # auto, dpor, sleep, dfs, random or pct (model/code/strategies/)
    seed: int = 0  # of a sampling strategy: the same seed, the same runs
    pct_depth: int = 3  # PCT's bug depth d: d - 1 priority change points per run
    child_cpu_seconds: int = 900
    child_memory_bytes: int = 2 << 30

    def __post_init__(self):
        from prefetch_check.model.code.strategies import EXHAUSTIVE, SAMPLING

        if self.strategy not in EXHAUSTIVE + SAMPLING:
            raise ValueError(f"strategy {self.strategy!r}: the executor has {', '.join(EXHAUSTIVE + SAMPLING)}")

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


@dataclass
class Step:
    """One step of a counterexample: the choice (thread) and what it did where."""

    choice: str
    rank: int
    site: str
    label: str
    observed: str


@dataclass
class Violation:
    prop: str
    message: str
    consequence: str
    site: str
    schedule: list[str]  # the replayable choice list
    steps: list[Step] = field(default_factory=list)


@dataclass(frozen=True)
class Bound:
    """What cut a search, as fields (`kind`: runs, seconds, depth, cpu, memory (the child's caps:
    rt/caps.py), not_modelled, stopped, sampled;
    `value`: the limit, the properties stopped at, or for a sample the strategy; `cut`: a
    sample's own cut, a kind or ""). `text` is how reports say it (CodeResult.bound)."""

    kind: str
    value: object = None
    cut: str = ""

    def text(self, runs: int = 0) -> str:
        if self.kind == "runs":
            return f"{self.value} runs"
        if self.kind == "seconds":
            return f"{self.value:g} s"
        if self.kind == "depth":
            return f"runs longer than {self.value} steps"
        if self.kind == "cpu":
            return f"the child's CPU cap of {self.value:g} s (child_cpu_seconds)"
        if self.kind == "memory":
            return f"the child's memory cap of {int(self.value) >> 20} MiB (child_memory_bytes)"
        if self.kind == "not_modelled":
            return "a path not modelled"
        if self.kind == "first":
            return "stopped at the first violation"
        if self.kind == "stopped":
            return f"stopped once {', '.join(self.value)} were violated"
        inner = Bound(self.cut, self.value[1]).text() if self.cut else f"{runs} runs"
        return f"sampled by {self.value[0]} ({inner}): sampling is never exhaustive"


@dataclass
class CodeResult:
    """Verdict per property (the explorer's words: explorer/result.py), with how much was searched."""

    verdicts: dict[str, str]
    violations: dict[str, Violation]
    runs: int
    states: int
    seconds: float
    exhaustive: bool
    bound: str  # what cut the search when not exhaustive
    not_modelled: list[str]
    peak_rss_kib: int = 0
    not_judged: dict = field(default_factory=dict)  # property -> why this configuration cannot judge it
    coverage: Optional[dict] = None  # the lines of the tree the check ran, when asked (rt/tracer.py)
    limit: Optional[dict] = None  # what cut the search as fields (Bound); None: exhaustive
    unreached: list = field(default_factory=list)  # scripted events no run reached (CodeConfig.scripted_events)

    @property
    def cut(self) -> Optional[Bound]:
        return Bound(**self.limit) if self.limit else None

    @property
    def status(self) -> str:
        """The search as one word: VERIFIED (exhaustive), NOT_MODELLED (a path not modelled was
        reached) or BOUNDED (a limit cut it)."""
        from prefetch_check.explorer.result import BOUNDED, NOT_MODELLED, VERIFIED

        return VERIFIED if self.exhaustive else NOT_MODELLED if self.not_modelled else BOUNDED

    @classmethod
    def from_json(cls, data: dict) -> "CodeResult":
        violations = {k: Violation(**{**v, "steps": [Step(**s) for s in v["steps"]]}) for k, v in data["violations"].items()}
        return cls(**{**data, "violations": violations})

    def to_json(self) -> dict:
        return dataclasses.asdict(self)
