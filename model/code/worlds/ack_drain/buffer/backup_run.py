"""buffer_only's write path (CodeConfig.backup): the buffer world with hicache write_through. In
round 1 the scheduler inserts a request it computed itself (SCH's cache_unfinished_req after its
prefill; request `requests`, of `pages` pages, not prefetched), and every insert into the device
tree, that one and each staged prefetch's load-back, hands the cache a BackupKV of its new node
(backup_tree.py). From there the tree's code runs as written: the cache's
`_execute_and_commit_kv_backup`, the pipeline's `enqueue_backup_intent`, `flush_pending_writes`
(admission, staging through the controller's real `write`, the node's lock), the D2H ack in
`writing_check` -> `finish_backup_ack` -> the controller's `write_storage`, the backup thread B
(`backup_thread_func`: the host staging read page by page, `batch_set`), and the storage ack's
drain -> `finish_storage_write_ack` (beliefs, staging freed). Stand-ins: the D2H copy
(device_pool.py `submit_device_to_host`: the L2 engine the controller's own `start_writing`
hands its transfers), the storage that keeps what is written (stand_ins/written_storage.py).
What its runs are judged for at the end: backup_judge.py."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.host_pool import FREE
from prefetch_check.model.code.stand_ins.written_storage import WrittenStorage
from prefetch_check.model.code.worlds.ack_drain.buffer.backup_tree import BackupDeviceTree
from prefetch_check.model.code.worlds.ack_drain.buffer.harness import BufferRun
from prefetch_check.model.code.worlds.ack_drain.write_gate import WriteAcksGate
from prefetch_check.model.code.worlds.ack_drain.write_path import WritePath
from prefetch_check.model.code.worlds.common import Rank

class _WritePart:
    """The write side of the pipeline and the storage beliefs, for the run's state key."""

    def __init__(self, cache):
        self.cache = cache

    def snapshot(self) -> tuple:
        p, beliefs = self.cache.buffer_pipeline, self.cache.storage_existence_cache
        if p is None:
            return ("writes", None)
        pools = _beliefs(beliefs)
        return ("writes", tuple((i.snapshot.node_id, str(i.pool)) for i in p.pending_write_queue),
                tuple(sorted((n, tuple(sorted(map(str, ps)))) for n, ps in p.inflight_backup_pools.items())),
                tuple(sorted((a, e.intent.snapshot.node_id) for a, e in p.ongoing_write_through.items())),
                tuple(sorted((o, e.intent.snapshot.node_id) for o, e in p.ongoing_backup.items())),
                p.write_staged_tokens_, p.write_backlog_tokens_, pools)


def _beliefs(beliefs) -> tuple:
    """The storage beliefs (StorageExistenceCache) as plain values: per pool the hashes believed
    stored, in LRU order, and the in-flight counts; a release of another shape by its fields."""
    if beliefs is None:
        return ()
    pools = getattr(beliefs, "_pools", None)
    if pools is None:
        return tuple(sorted((k, repr(v)) for k, v in vars(beliefs).items()))
    return tuple(sorted((str(name), tuple(b._entries), tuple(sorted(b._inflight.items())))
                        for name, b in pools.items()))


class BackupRun(WriteAcksGate, WritePath, BufferRun):
    """`BufferRun` with the write path (write_path.py: the computed request, the backup thread B)."""
    TREE = BackupDeviceTree
    STORAGE = WrittenStorage

    def _build(self, i: int) -> Rank:
        rank = super()._build(i)
        self._writer(rank)
        self.world.register(_WritePart(rank.cache))
        return rank

    def __init__(self, modules: dict, config, holder, roots: tuple[str, ...]):
        self.free_at_round: dict[int, int] = {}  # rank -> its free host slots when its last round started
        super().__init__(modules, config, holder, roots)

    def round_begins(self, rank: Rank) -> None:
        super().round_begins(rank)
        n = self.computed_tokens(rank.rounds)
        if n:
            self._insert_computed(rank, n, tuple(rank.tree.resident.get(self.computed_request(), ())))

    # ---- the round gate (write_gate.py): a write ack or a storage ack on every rank opens a round
    # (MIN > 0), and so does a hit parked for staging once host slots were freed since the rank's round started: the
    # storage ack frees write staging after the drain retried the parked hits (the hits drain
    # first), and SGLang's loop retries them at its next drain
    def enter_round(self, rank: Rank) -> None:
        super().enter_round(rank)
        self.free_at_round[rank.index] = rank.pool.status.count(FREE)

    def _parked_room(self, rank: Rank) -> bool:
        p = rank.cache.buffer_pipeline
        return (p is not None and bool(p.pending_hit_allocs)
                and rank.pool.status.count(FREE) > self.free_at_round.get(rank.index, 0))

    def _write_round_due(self) -> bool:
        return super()._write_round_due() or any(self._parked_room(r) for r in self.ranks)

    def _write_guard(self, rank: Rank) -> tuple:
        return super()._write_guard(rank) + (rank.pool._pc_name, f"r{rank.index}.pipeline.pending_hit_allocs")

    def _gate_may_open(self, rank: Rank) -> bool:
        return super()._gate_may_open(rank) or self._parked_room(rank)

    def _gate_key(self) -> tuple:
        """The gate's memory: whether each rank's parked hits have new room (all the gate asks of it)."""
        return super()._gate_key() + tuple(self._parked_room(r) for r in self.ranks)

