"""The host KV pool (`mem_pool_host`, also the `storage_host_pool` IO writes pages into): slots
allocated in whole pages, each slot free, held by a prefetch, owned by the host tree, or evicted
from the tree and not yet freed. It judges host_memory (a double free, a free of a slot the tree
owns, a leak at the end) and keeps what IO wrote into each slot for data_integrity."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.context import Strict

import contextlib

from prefetch_check.model.code.stand_ins.errors import WorldFault
from prefetch_check.model.code.stand_ins.flat_page import FlatPage, page_name
from prefetch_check.model.code.stand_ins.torch_stub import Tensor

FREE, HELD, TREE, EVICTED = "free", "held", "tree", "evicted"


class NotWholePages(AssertionError, WorldFault):
    """The pool's own assertion (upstream's alloc asserts whole pages): the caller's bug, not ours."""


class _Entry:
    def __init__(self, pool):
        self.host_pool = pool
        self.is_primary_index_anchor = True
        self.name = "KV"


class HostPool(Strict):
    _pc_what = "mem_pool_host"
    _pc_footprint = True  # its calls enter a step's footprint (rt/hooks.py as_value)

    def __init__(self, world, rank: int, size: int, page_size: int):
        self.world, self.rank, self.size, self.logical_size, self.page_size = world, rank, size, size, page_size
        self.status = [FREE] * size
        self.written: dict[int, str] = {}  # slot -> the page hash IO stored there
        self.anchor_entry = _Entry(self)
        self.entry_map: dict = {}
        self.entries: list = []
        self.storage_format_tag = None
        self._pc_name = f"r{rank}.host_pool"  # its name in a step's footprint (rt/baton.py)
        self.flat_pages = False  # a backend of raw bytes (storage="file") reads and writes FlatPages
        world.register(self)

    # ---- the pool API: alloc and free are points (IO writes into the same slots), the size is not
    def available_size(self, pool=None) -> int:
        self._kv_only(pool)
        self.world.baton.touch(self._pc_name, write=False)
        return self.status.count(FREE)

    def _kv_only(self, pool) -> None:
        """A pool group's call for one pool (the PP tickets' allocation names it): the KV pool only."""
        if pool is not None and str(getattr(pool, "value", pool)) != "kv":
            raise self.world.not_modelled(f"mem_pool_host for pool {pool}")

    def alloc(self, need_size: int, pool=None, reclaim=None, start_owner=None):
        self._kv_only(pool)
        self.world.baton.point(f"alloc {need_size} host slots (rank {self.rank})")
        self.world.baton.touch(self._pc_name)
        # upstream's pool asserts whole pages (pool_host/base.py alloc): a caller's misaligned size
        # kills the calling thread there, so it does here
        if need_size % self.page_size:
            raise NotWholePages(f"host alloc of {need_size} slots: not whole pages of {self.page_size}")
        if need_size > self.available_size():
            # observed: a failed alloc changes nothing else, and a retry of the same size parks at
            # the same label; unobserved, its state would be the first attempt's (SEEN, never run on)
            self.world.baton.observe("alloc failed")
            return None
        slots = [i for i, s in enumerate(self.status) if s == FREE][:need_size]
        for i in slots:
            self.status[i] = HELD
            self.written.pop(i, None)
        return Tensor(slots)

    def free(self, indices, pool=None) -> None:
        self.world.baton.point(f"free host slots {indices.data} (rank {self.rank})")
        self.world.baton.touch(self._pc_name)
        site = self.world.baton.current().point.site if self.world.baton.current() else "?"
        for i in indices.data:
            if self.status[i] == FREE:
                self.world.fault("host_memory", f"rank {self.rank}: host slot {i} freed twice",
                                 "host memory freed twice: two requests may later share one slot (wrong KV data)", site)
            elif self.status[i] == TREE:
                self.world.fault("host_memory", f"rank {self.rank}: host slot {i} freed while the host tree owns it",
                                 "the tree serves a slot the pool hands out again: wrong KV data served", site)
            self.status[i] = FREE
            self.written.pop(i, None)

    def clear(self) -> None:
        """Every slot free again (the cache's reset, once its storage threads stopped)."""
        self.world.baton.touch(self._pc_name)
        self.status = [FREE] * self.size
        self.written.clear()

    def resolve_host_transfers(self, transfers, **kwargs):
        """The group's side-pool allocation (a write's extra pools): none here."""
        if transfers:
            raise self.world.not_modelled("mem_pool_host.resolve_host_transfers of side pools")
        return None

    def layout_lease(self):
        return contextlib.nullcontext()

    def get_pool(self, name=None):
        return self

    # ---- what IO does (another thread: a scheduling point)
    def get_dummy_flat_data_page(self):
        return FlatPage() if self.flat_pages else None

    def set_from_flat_data_page(self, index, data) -> None:
        data = page_name(data)
        first = index.item() if isinstance(index, Tensor) else int(index)
        self.world.baton.point(f"write page {data} into host slot {first}")
        self.world.baton.touch(self._pc_name)
        for i in range(first, first + self.page_size):
            self.written[i] = data

    def get_data_page(self, index, flat: bool = True):
        """What the backup thread reads out of a staging slot to store it (the generic page set):
        a point, as the scheduler frees staging at the storage ack. A slot neither held nor the
        tree's (cache mode stores a node's host value), or with nothing written (the D2H copy never
        landed), is stored as it is: the storage stand-in judges the value."""
        first = int(index)
        self.world.baton.point(f"read host slot {first} to store it (rank {self.rank})")
        self.world.baton.touch(self._pc_name, write=False)
        value = self.written.get(first) if self.status[first] in (HELD, TREE) else None
        return FlatPage(value) if self.flat_pages else value

    # ---- what the tree stand-in does when it takes slots
    def hand_to_tree(self, slots: list[int]) -> None:
        self.world.baton.touch(self._pc_name)
        for i in slots:
            self.status[i] = TREE

    def hold_for_tree(self, slots: list[int], page: str) -> None:
        """Slots the tree holds before the run starts (stand_ins/host_held.py), with their page."""
        for i in slots:
            self.status[i] = TREE
            self.written[i] = page

    def evict_from_tree(self, slots: list[int]) -> None:
        """The tree dropped these slots (host eviction): the cache is to free them."""
        self.world.baton.touch(self._pc_name)
        for i in slots:
            self.status[i] = EVICTED

    def held(self) -> list[int]:
        self.world.baton.touch(self._pc_name, write=False)
        return [i for i, s in enumerate(self.status) if s == HELD]

    def evicted(self) -> list[int]:
        self.world.baton.touch(self._pc_name, write=False)
        return [i for i, s in enumerate(self.status) if s == EVICTED]

    def snapshot(self) -> tuple:
        return ("pool", self.rank, "".join(s[0] for s in self.status), tuple(sorted(self.written.items())))
