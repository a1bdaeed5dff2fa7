"""The shared page-envelope host arena (CodeConfig.shared_arena): upstream's unified host backing
(pool_host/unified.py), where the KV pool and the sidecar pools (SWA, Mamba) draw their pages
from one memory budget, so the release allocates a prefetch's KV bounce and its windows at once
(`alloc_prefetch_host_buffers` -> `_alloc_shared_host_requests_with_reclaim` -> `alloc_many`) and
sizes a partial prefix by asking whether it fits (`can_fit_prefetch_host_buffers` ->
`can_fit_many_then`). Here every pool's page is one envelope of the arena (upstream's envelopes
are one size across its sides); each pool keeps its own slots (stand_ins/host_pool.py), and a
page is live while its pool's slots are not free. `alloc_many` is all or nothing: a request that
fits no side, or more envelopes than the arena has free, gets None and takes nothing. What is not
modelled: the layout compaction (logical pages are physical here, so no compaction is needed)
and the byte-shortfall reclaim through `host_evict_fn` (the entries have none: the tree holds no
page in the arena)."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.context import Strict
from prefetch_check.model.code.stand_ins.host_pool import FREE


class SharedArena(Strict):
    """One rank's arena: `envelopes` pages in all, shared by the pools that name it."""

    _pc_what = "shared_allocation_domain"

    def __init__(self, world, rank: int, envelopes: int):
        self.world, self.rank, self.envelopes = world, rank, envelopes
        self.sides: dict[str, object] = {}  # pool label -> its HostPool

    def join(self, label: str, pool, bytes_per_page: int = 1) -> None:
        """`pool` draws its pages from this arena (the fields the release reads of a shared pool)."""
        self.sides[label] = pool
        pool.__dict__.update(shared_allocation_domain=self, pool_label=label,
                             size_per_token=bytes_per_page // pool.page_size or 1)

    def _live(self) -> int:
        return sum((len(p.status) - p.status.count(FREE)) // p.page_size for p in self.sides.values())

    def _pages(self, requests) -> list[tuple[object, int]]:
        out = []
        for label, need in requests:
            pool = self.sides[label]
            if need % pool.page_size:
                raise self.world.not_modelled(f"shared arena request of {need} slots of {label}: not whole pages")
            out.append((pool, need // pool.page_size))
        return out

    def _fits(self, pages, live: int, empty: bool) -> bool:
        if live + sum(n for _, n in pages) > self.envelopes:
            return False
        for pool in {id(p): p for p, _ in pages}.values():
            want = sum(n for p, n in pages if p is pool)
            room = len(pool.status) // pool.page_size if empty else pool.status.count(FREE) // pool.page_size
            if want > room:
                return False
        return True

    def free_bytes(self) -> int:
        for pool in self.sides.values():
            self.world.baton.touch(pool._pc_name, write=False)
        return self.envelopes - self._live()

    def can_fit_many_then(self, requests, following_requests, *, empty: bool = False) -> bool:
        for pool in self.sides.values():
            self.world.baton.touch(pool._pc_name, write=False)
        first = self._pages(requests)
        live = 0 if empty else self._live()
        if not self._fits(first, live, empty):
            return False
        return not following_requests or self._fits(first + self._pages(following_requests), live, empty)

    def alloc_many(self, requests):
        pages = self._pages(requests)
        self.world.baton.point(f"alloc_many {[(str(label), n) for label, n in requests]} (rank {self.rank})")
        for pool in self.sides.values():
            self.world.baton.touch(pool._pc_name)
        if not self._fits(pages, self._live(), empty=False):
            self.world.baton.observe("alloc_many failed")
            return None
        return [pool.alloc(n * pool.page_size) for pool, n in pages]
