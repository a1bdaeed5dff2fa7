"""Cache mode's write path (CodeConfig.backup with host_memory_mode cache): the cache world with
hicache write_through. In round 1 the scheduler inserts a request it computed itself (SCH's
cache_unfinished_req after its prefill; request `requests`, of `pages` pages, not prefetched); the
tree's insert hands the cache a BackupKV of its node (tree.py), and from there the release's code
runs as written: `_execute_and_commit_kv_backup`, `_execute_kv_backup` (the host room, `evict_host`,
the controller's real `write`), the tree's commit and the node's device lock, the D2H ack in
`writing_check` -> `_finish_write_through_ack` -> `write_backup_storage` (the node's host lock, the
controller's `write_storage`), the backup thread B (`backup_thread_func`, the generic page set) and
the storage ack's drain (`_drain_backup`: the host lock given back). Beside it the prefetches share
the host pool, the storage and the scheduler's drain. Stand-ins: the D2H copy
(device_pool.py `submit_device_to_host`: the L2 engine the controller's own `start_writing`
hands its transfers), the storage that keeps what is written (stand_ins/written_storage.py).
What its runs are judged for at the end: judge.py."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.components import FullComponent
from prefetch_check.model.code.stand_ins.host_held import HostHeldPages
from prefetch_check.model.code.stand_ins.written_storage import WrittenStorage
from prefetch_check.model.code.worlds.ack_drain.buffer.harness import Session, device_rank_world
from prefetch_check.model.code.worlds.ack_drain.harness import CACHE, Run
from prefetch_check.model.code.worlds.ack_drain.numbering import NumberedFromZero
from prefetch_check.model.code.worlds.ack_drain.write_gate import WriteAcksGate
from prefetch_check.model.code.worlds.ack_drain.write_path import COMPUTED_ROUND, WritePath
from prefetch_check.model.code.stand_ins.radix import RadixKey
from prefetch_check.model.code.stand_ins.torch_stub import Tensor
from prefetch_check.model.code.worlds.ack_drain.buffer.device_tree import node_of
from prefetch_check.model.code.worlds.ack_drain.buffer.params import EvictParams, InsertParams
from prefetch_check.model.code.worlds.ack_drain.write_through.load_back import LoadBack
from prefetch_check.model.code.worlds.ack_drain.write_through.round_views import RoundViews
from prefetch_check.model.code.worlds.ack_drain.write_through.tree import WriteThroughTree
from prefetch_check.model.code.stand_ins.host_pool import HostPool
from prefetch_check.model.code.worlds.common import Rank


class _WritePart:
    """The cache's write-through and storage-backup bookkeeping and the controller's queued and
    acked D2H writes (with a load-back, its loads and H2D acks too), for the run's state key."""

    def __init__(self, cache):
        self.cache = cache

    def snapshot(self) -> tuple:
        c, cc = self.cache, self.cache.cache_controller
        part = ("write-through", tuple(sorted(c.ongoing_write_through)), tuple(sorted(c.ongoing_backup)),
                tuple(tuple(op.node_ids) for op in cc.write_queue),
                tuple((tuple(a.node_ids), a.finish_event.done) for a in cc.ack_write_queue))
        if "load_queue" not in cc.__dict__:  # no load-back in this run (CodeConfig.load_back)
            return part
        return part + (tuple(sorted(c.ongoing_load_back)), tuple(tuple(op.node_ids) for op in cc.load_queue),
                       tuple((tuple(a.node_ids), a.finish_event.done) for a in cc.ack_load_queue))


class WriteThroughRun(RoundViews, WriteAcksGate, LoadBack, WritePath, NumberedFromZero, Run):
    """`Run` with the write path (write_path.py: the computed request, the backup thread B)."""

    def __init__(self, modules: dict, config, holder, roots: tuple[str, ...]):
        self.number_from_zero(modules)
        super().__init__(modules, config, holder, roots)
        self.settle_numbers()

    def _rank_world(self, i: int, pool_cls=HostPool) -> tuple:
        """The device pool holds the computed request; with host_held_pages the host tree also holds
        an earlier request's host-only pages (stand_ins/host_held.py), numbered after the computed
        request, which the write's host backup evicts for its room (`_execute_kv_backup` ->
        `evict_host`) as a prefetch's allocation does."""
        cfg = self.config
        pool, tree, storage = device_rank_world(self, i, pool_cls, WrittenStorage, WriteThroughTree, cfg.pages)
        if cfg.host_held_pages:
            tree.host_only = HostHeldPages(self.world, i, pool, cfg.page_size, cfg.host_held_pages,
                                           cfg.host_locked_pages, cfg.requests + 1)
        tree.split_action = self._split_action
        return pool, tree, storage

    def _split_action(self, ack: int, old: int, new: int, child: int):
        """The split's action as the release's tree core makes it: 0.5.23 routes it to FULL with the
        pending ack; 0.5.19-0.5.22 have a cache action of its own."""
        actions = self.modules[CACHE].__dict__
        if "UpdatePendingBackupOnNodeSplit" in actions:
            return actions["UpdatePendingBackupOnNodeSplit"](ack_id=ack, old_node_id=old, new_node_id=new,
                                                             new_child_node_id=child, component_type=self._component("FULL"))
        return actions["ReplaceWriteThroughOnNodeSplit"](ack_id=ack, old_node_id=old, new_node_id=new,
                                                         new_child_node_id=child)

    def _build(self, i: int) -> Rank:
        rank = super()._build(i)
        cache = rank.cache
        self._writer(rank)
        cache.insert_session_id = None
        cache.session = Session()
        # _execute_kv_backup's host room check: no shared page-envelope arena, no reclaim function
        rank.pool.__dict__["shared_allocation_domain"] = None
        rank.pool.anchor_entry.host_evict_fn = None
        rank.tree.component = self._component("FULL")
        if self.config.evict_device_round is not None or self.config.split_round is not None:
            # the device eviction's frees and a host-only node's host eviction go through the FULL
            # component; 0.5.23 routes a split's action to it (only then, as the cache world's)
            cache.components = {rank.tree.component: FullComponent(self.world, rank.pool, rank.tree.device,
                                                                          rank.tree.component)}
        cache.token_to_kv_pool_allocator = rank.tree.device  # what the eviction's room checks read
        if self.config.load_back:
            self._loader(rank)
        cache.is_swa_enabled = False
        self.world.register(_WritePart(cache))
        return rank

    def _insert_sharing(self, rank: Rank) -> None:
        """A second computed request (number `requests + 1`) that shares the first's first page: its
        prefill reused that page's rows (its prefix match) and computed the rest into slots it took;
        its insert splits the first request's node at the page (tree.py)."""
        cfg, w = self.config, self.config.requests
        n, page = cfg.pages * cfg.page_size, cfg.page_size
        shared = [w * 1000 + t for t in range(page)]
        own = rank.tree.device.take(n - page, f"req{w + 1}", [f"q{w + 1}p{t // page}" for t in range(page, n)])
        prefix_rows = rank.tree.resident[node_of(w, n)][:page]  # not split yet: this insert splits it
        self.baton.observe(f"computed req{w + 1} on device slots {own} after req{w}'s first page")
        key = shared + [(w + 1) * 1000 + t for t in range(page, n)]
        rank.cache.insert(InsertParams(key=RadixKey(key), value=Tensor(list(prefix_rows) + own)))

    def _allocate_short(self, rank: Rank) -> None:
        """Another request's allocation of the whole device pool finds it short by that much: the
        allocator asks the cache to evict (`evict_for_alloc`, as allocator/base.py does), whose
        walk (`_evict_components`) takes every device leaf no lock holds (tree.py). With
        CodeConfig.device_full the request keeps every row then free (a running batch)."""
        device = rank.tree.device
        rank.cache.evict_for_alloc(EvictParams(num_tokens=len(device.owner)))
        if self.config.device_full:
            taken = device.take(device.owner.count(None), "running")
            self.baton.observe(f"a running batch holds device slots {taken}")

    def enter_round(self, rank: Rank) -> None:
        super().enter_round(rank)
        if rank.rounds == COMPUTED_ROUND:
            self._insert_computed(rank, self.computed_tokens(rank.rounds))
        if rank.rounds == self.config.split_round:
            self.happened("split_round")
            self._insert_sharing(rank)
        if rank.rounds == self.config.evict_device_round:
            self.happened("evict_device_round")
            self._allocate_short(rank)
