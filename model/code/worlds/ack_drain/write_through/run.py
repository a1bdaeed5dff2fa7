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
(buffer/device_pool.py `start_writing`), the storage that keeps what is written (stand_ins/
written_storage.py). What its runs are judged for at the end: judge.py."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.components import FullComponent
from prefetch_check.model.code.stand_ins.radix import RadixKey
from prefetch_check.model.code.stand_ins.torch_stub import Tensor
from prefetch_check.model.code.stand_ins.written_storage import WrittenStorage
from prefetch_check.model.code.worlds.ack_drain.buffer.backup_run import COMPUTED_ROUND, as_storage_writer, label_writes
from prefetch_check.model.code.worlds.ack_drain.buffer.device_pool import DevicePool
from prefetch_check.model.code.worlds.ack_drain.buffer.harness import Session
from prefetch_check.model.code.worlds.ack_drain.buffer.params import InsertParams
from prefetch_check.model.code.worlds.ack_drain.harness import CONTROLLER, Run
from prefetch_check.model.code.worlds.ack_drain.numbering import NumberedFromZero
from prefetch_check.model.code.worlds.ack_drain.write_gate import WriteAcksGate
from prefetch_check.model.code.worlds.ack_drain.write_through.tree import WriteThroughTree
from prefetch_check.model.code.stand_ins.host_pool import HostPool
from prefetch_check.model.code.worlds.common import Rank


class _WritePart:
    """The cache's write-through and storage-backup bookkeeping and the controller's queued and
    acked D2H writes, for the run's state key."""

    def __init__(self, cache):
        self.cache = cache

    def snapshot(self) -> tuple:
        c, cc = self.cache, self.cache.cache_controller
        return ("write-through", tuple(sorted(c.ongoing_write_through)), tuple(sorted(c.ongoing_backup)),
                tuple(tuple(op.node_ids) for op in cc.write_queue), tuple(tuple(a.node_ids) for a in cc.ack_write_queue))


class WriteThroughRun(WriteAcksGate, NumberedFromZero, Run):
    """`Run` with the write path; per rank one more thread, B (the backup thread)."""

    PER_RANK = 5  # S, P, IO, Y, B

    def __init__(self, modules: dict, config, holder, roots: tuple[str, ...]):
        label_writes(modules)
        self.number_from_zero(modules)
        super().__init__(modules, config, holder, roots)
        self.settle_numbers()

    def _rank_world(self, i: int, pool_cls=HostPool) -> tuple:
        cfg, page = self.config, self.config.page_size
        pool = pool_cls(self.world, i, cfg.pool_pages() * page, page)
        storage = WrittenStorage(self.world, i, cfg.first_page() + cfg.hits_of(i), cfg.failing_of(i),
                                 cfg.raises_of(i), page, cfg.raising_reads_of(i))
        device = DevicePool(self.world, i, cfg.pages * page, pool, lambda q, pos: f"q{q}p{pos // page}")
        return pool, WriteThroughTree(self.world, i, pool, page, device), storage

    def _build(self, i: int) -> Rank:
        rank = super()._build(i)
        cc, cache, device = rank.cc, rank.cache, rank.tree.device
        merge = self.modules[CONTROLLER].CacheOperation.merge_ops
        as_storage_writer(cc, self.world)
        cc.page_set_func = cc._generic_page_set
        cc.write_policy = "write_through"
        cc.start_writing = lambda: device.start_writing(cc, merge)  # the D2H (device side)
        cache.is_write_back = False
        cache.insert_session_id = None
        cache.session = Session()
        # _execute_kv_backup's host room check: no shared page-envelope arena, no reclaim function
        rank.pool.__dict__["shared_allocation_domain"] = None
        rank.pool.anchor_entry.host_evict_fn = None
        if self.config.evict_device_round is not None:  # a node evicted from the device is host-only:
            # host eviction frees it through the FULL component (only then, as the cache world's)
            cache.components = {self._component("FULL"): FullComponent(self.world, rank.pool)}
        self.world.register(_WritePart(cache))
        return rank

    def _spawn(self, rank: Rank) -> None:
        super()._spawn(rank)
        self.baton.spawn(f"B{rank.index}", rank.index, "backup", rank.cc.backup_thread_func)

    def enter_round(self, rank: Rank) -> None:
        super().enter_round(rank)
        if rank.rounds == COMPUTED_ROUND:
            self._insert_computed(rank)
        if rank.rounds == self.config.evict_device_round:
            rank.tree.evict_unlocked()

    def _insert_computed(self, rank: Rank) -> None:
        """SCH's cache_unfinished_req after the computed request's prefill: its KV rows, written by
        the forward pass into device slots it took, inserted into the tree."""
        cfg, w = self.config, self.config.requests
        n, page = cfg.pages * cfg.page_size, cfg.page_size
        slots = rank.tree.device.take(n, f"req{w}", [f"q{w}p{t // page}" for t in range(n)])
        self.baton.observe(f"computed req{w} on device slots {slots}")
        rank.cache.insert(InsertParams(key=RadixKey([w * 1000 + t for t in range(n)]), value=Tensor(slots)))
