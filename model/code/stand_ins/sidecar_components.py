"""The SWA and Mamba components of a hybrid model (`cache.components[SWA|MAMBA]`), as far as a
storage prefetch uses them (upstream's components/swa.py and mamba.py: 0.5.20 on the staging is
sized at issue and allocated at hit time; 0.5.19's swa_component.py / mamba_component.py allocate
it at issue, and `prepare_prefetch` then returns it, or that the allocation failed). Each keeps a trailing window of the request's pages in a
host pool of its own: SWA the last `window` pages (fewer when the span is shorter and anchored at
the root), Mamba one state slot for the last page. `prepare_prefetch` sizes the staging,
`build_prefetch_transfers` gives the PREFETCH transfer with placeholder keys (the release's
`_sync_trailing_keys` fills the real hashes), `alloc_prefetch_staging` allocates from the pool (on
failure the cache's evict_host for the component, then once more, as upstream), and `commit`
takes a committed transfer's slots into the host tree, checking each holds the page of the
inserted key it should (data_integrity: the window the tree serves)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from prefetch_check.model.code.stand_ins.context import Strict
from prefetch_check.model.code.stand_ins.errors import caller_site
from prefetch_check.model.code.stand_ins.radix import storage_hashes

PLACEHOLDER = "__placeholder__"


@dataclass(frozen=True)
class PreparePrefetchResult:
    """upstream's PreparePrefetchResult in both shapes: the staging the component needs (0.5.20
    on, allocated at the hit), or the staging it allocated at issue and whether that failed (0.5.19)."""

    staging_tokens: int = 0
    alloc_failed: bool = False
    host_indices: object = None


class TrailingComponent(Strict):
    """One trailing-window component (SWA: `window` pages of `page_size` slots each; Mamba: one
    state slot per page, window 1)."""

    def __init__(self, world, rank: int, kind: str, component_type, pool, pool_name, page_size: int, window: int,
                 classes, staged_at_hit: bool):
        self.world, self.rank, self.kind, self.pool = world, rank, kind, pool
        self.component_type = component_type
        self.pool_name, self.page_size, self.window, self.classes = pool_name, page_size, window, classes
        self.staged_at_hit = staged_at_hit
        self.cache = None  # set once the cache is built (evict_host on a failed staging alloc)
        self.arena_unread = False  # a shared host arena the release has no code to allocate from
        self._pc_what = f"components[{kind.upper()}]"

    def prepare_prefetch(self, node_id, *, prefetch_tokens: int = 0) -> PreparePrefetchResult:
        if self.arena_unread:
            raise self.world.not_modelled(f"{self._pc_what}.prepare_prefetch with a shared host arena (a release "
                                          "without _shared_prefetch_requests: its windows never come from the arena)")
        if self.kind == "mamba":
            tokens = 1
        else:
            pages = prefetch_tokens // self.page_size
            # a full window, or at the root (the whole sequence is the window) the pages there are
            tokens = (self.window if pages >= self.window else pages if pages > 0 and node_id == 0 else 0) * self.page_size
        if self.staged_at_hit or tokens == 0:
            return PreparePrefetchResult(staging_tokens=tokens)
        # 0.5.19: the staging is allocated here, at issue (the caller forfeits the fetch on failure)
        host_indices = self.alloc_prefetch_staging(tokens)
        return PreparePrefetchResult(alloc_failed=host_indices is None, host_indices=host_indices)

    def build_prefetch_transfers(self, staging_tokens: int, host_indices=None) -> Optional[list]:
        """The PREFETCH transfer: placeholder keys, one per window page (0.5.19: with the staging
        allocated at issue, sized by it)."""
        if host_indices is not None:
            staging_tokens = host_indices.numel()
        pages = 1 if self.kind == "mamba" else staging_tokens // self.page_size
        if staging_tokens == 0 or pages == 0:
            return None
        return [self.classes.PoolTransfer(name=self.pool_name, host_indices=host_indices, keys=[PLACEHOLDER] * pages,
                                          hit_policy=self.classes.PoolHitPolicy.TRAILING_PAGES)]

    def alloc_prefetch_staging(self, num_tokens: int):
        host_indices = self.pool.alloc(num_tokens)
        if host_indices is None:
            self.cache.evict_host(num_tokens, self.component_type)
            host_indices = self.pool.alloc(num_tokens)
        return host_indices

    def buffer_belief_policy(self, pool):
        return None  # the built-in policy of the transfer's hit policy (components/base.py default)

    def free_host_values(self, host_values: list) -> None:
        for value in host_values:
            self.pool.free(value)

    def commit(self, key, transfers: list) -> None:
        """The host tree takes the committed window: each pool page must hold the page of the
        inserted key it stands for (the key's last pages, in order)."""
        baton = self.world.baton
        expected = storage_hashes(key, None, self.page_size)
        site = caller_site(baton.roots)  # the release's commit_hicache_transfers call
        for t in transfers:
            if t.host_indices is None:
                continue
            keys = list(t.keys or [])
            want = expected[len(expected) - len(keys):] if keys else []
            slots = t.host_indices.data
            for n, page in enumerate(want):
                for slot in slots[n * self.pool.page_size:(n + 1) * self.pool.page_size]:
                    got = self.pool.written.get(slot)
                    if got != page:
                        self.world.fault("data_integrity",
                                         f"rank {self.rank}: {self.kind} host slot {slot} handed to the tree for "
                                         f"page {page} holds {got or 'nothing written'}",
                                         f"wrong {self.kind.upper()} state served: the tree's window of the request "
                                         "holds a page IO had not written there", site)
                        break
            self.pool.hand_to_tree(slots)
