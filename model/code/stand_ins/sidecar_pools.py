"""The host pool group with sidecar pools (CodeConfig.sidecars): what `mem_pool_host` is when a
model has more than its KV pool (upstream's HostPoolGroup, pool_host/group.py). The KV pool is
the anchor entry; each sidecar pool is an entry of its own, named by its PoolName, with its own
host pool: a trailing-window pool (SWA, Mamba) gets staging slots of its own at hit time, a
KV-derived pool (an indexer registered with register_sidecar_pool) keeps one row per KV slot and
is written at the KV slots' indices. `free(indices, pool=name)` frees into the named pool, as the
release's `_drain_extra_release` asks. Each sidecar pool is a HostPool (stand_ins/host_pool.py):
it judges its own double frees, frees of slots the tree owns, and keeps what IO wrote where."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.context import Strict
from prefetch_check.model.code.stand_ins.host_pool import FREE, HELD, HostPool
from prefetch_check.model.code.stand_ins.torch_stub import Tensor

WRONG_POOL = ("pages freed into the wrong pool: the sidecar pool never gets them back (it shrinks with every "
              "such prefetch) and the KV pool's free list gets slots it does not own, which it hands out over "
              "live KV (wrong KV data) or past its end")


class SidecarHostPool(HostPool):
    """One sidecar pool's host slots (its own name in footprints and the state key)."""

    _pc_what = "sidecar host pool"

    def __init__(self, world, rank: int, name: str, size: int, page_size: int):
        self.pool_name = name
        super().__init__(world, rank, size, page_size)
        self._pc_name = f"r{rank}.host_pool.{name}"

    def alloc(self, need_size: int):
        self.world.baton.observe(f"{self.pool_name} pool")
        return super().alloc(need_size)

    def write_page(self, first: int, page: str) -> None:
        """What the storage read does into this pool (its caller made the scheduling point)."""
        self.world.baton.touch(self._pc_name)
        for i in range(first, first + self.page_size):
            self.written[i] = page

    def write_page_clear(self, slots: list[int]) -> None:
        """Rows of a KV-derived pool whose KV slots were allocated again: nothing written yet."""
        self.world.baton.touch(self._pc_name)
        for i in slots:
            self.written.pop(i, None)

    def snapshot(self) -> tuple:
        return (self.pool_name,) + super().snapshot()


class PoolEntry(Strict):
    """An entry of the group: upstream's PoolEntry, the fields the prefetch path reads."""

    _pc_what = "PoolEntry"

    def __init__(self, world, name, host_pool, anchor: bool):
        self.world, self.name, self.host_pool = world, name, host_pool
        self.is_primary_index_anchor = anchor
        self.host_evict_fn = None


class HostPoolGroup(Strict):
    """`mem_pool_host` with sidecar pools: allocation and size are the anchor's (the KV pool), a
    free names its pool, the entries are the KV pool's and each sidecar's."""

    _pc_what = "mem_pool_host (a host pool group)"

    def __init__(self, world, kv_pool: HostPool, kv_name, sidecars: dict, derived: tuple = ()):
        self.world, self.kv = world, kv_pool
        self.derived = [sidecars[name] for name in derived]  # KV-derived pools: rows at the KV slots
        self.page_size, self.size, self.logical_size = kv_pool.page_size, kv_pool.size, kv_pool.logical_size
        self.anchor_entry = PoolEntry(world, kv_name, kv_pool, anchor=True)
        self.entries = [self.anchor_entry] + [PoolEntry(world, name, pool, anchor=False)
                                              for name, pool in sidecars.items()]
        self.entry_map = {e.name: e for e in self.entries}
        self.storage_format_tag = None

    def alloc(self, need_size: int):
        """The KV pool's slots; a KV-derived pool's rows at those slots start unwritten too."""
        slots = self.kv.alloc(need_size)
        if slots is not None:
            for pool in self.derived:
                pool.write_page_clear(slots.data)
        return slots

    def available_size(self) -> int:
        return self.kv.available_size()

    def clear(self) -> None:
        """Every entry's pool cleared, as the group's own clear does (the cache's reset)."""
        for entry in self.entries:
            entry.host_pool.clear()

    def free(self, indices, pool=None) -> None:
        """Free into the named pool (the KV pool when none is named). Slots the KV pool does not
        have, or has free while a sidecar pool holds them, are a sidecar's freed into the KV pool
        (a release that lost its pool argument): judged, not freed (upstream's pool would append
        them to its free list)."""
        target = self.kv if pool is None or pool == self.anchor_entry.name else self.entry_map[pool].host_pool
        if target is not self.kv:
            target.free(indices)
            return
        stray = [i for i in indices.data if not 0 <= i < self.kv.size
                 or (self.kv.status[i] == FREE and any(p.status[i] == HELD for p in self._holding(i)))]
        target.free(Tensor([i for i in indices.data if i not in stray]))
        if stray:
            owners = sorted({p.pool_name for i in stray for p in self._holding(i)}) or ["no"]
            current = self.world.baton.current()
            self.world.fault("host_memory", f"host slots {stray} of the {', '.join(owners)} pool freed into the KV "
                             "pool (the free names no pool)", WRONG_POOL, current.point.site if current else "?")

    def _holding(self, i: int) -> list:
        """The sidecar pools that hold slot i (allocated, not freed)."""
        return [e.host_pool for e in self.entries[1:] if i < e.host_pool.size and e.host_pool.status[i] == HELD]

    def layout_lease(self):
        return self.kv.layout_lease()

    def get_pool(self, name=None):
        return self.kv if name is None else self.entry_map[name].host_pool

    def sidecar_pools(self) -> list[SidecarHostPool]:
        return [e.host_pool for e in self.entries[1:]]
