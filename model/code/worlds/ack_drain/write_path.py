"""What the write path under hicache write_through shares in buffer_only (buffer/backup_run.py) and
cache mode (write_through/run.py): the request the scheduler computed itself, inserted in round 1
(SCH's cache_unfinished_req after its prefill: request `requests`, of `pages` pages, not
prefetched), the backup thread B, and the controller as a rank that writes its own KV (the real
`write_storage`, the generic page set, the D2H of device_pool.py's `start_writing`)."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.context import Strict
from prefetch_check.model.code.stand_ins.radix import RadixKey
from prefetch_check.model.code.stand_ins.torch_stub import Tensor
from prefetch_check.model.code.worlds.ack_drain.buffer.params import InsertParams
from prefetch_check.model.code.worlds.ack_drain.harness import CONTROLLER, HYBRID
from prefetch_check.model.code.worlds.common import Rank

COMPUTED_ROUND = 1  # the round whose start inserts the computed request


class _StorageConfig(Strict):
    """The controller's storage_config as the write path reads it: this rank writes its own KV
    (`backup_skip` is `not is_storage_writer`; no MLA shard writer)."""

    _pc_what = "storage_config"

    def __init__(self, world):
        self.world, self.is_storage_writer = world, True


class WritePath:
    """A run mix-in: per rank one more thread, B (the backup thread); `_writer(rank)` in `_build`,
    `_insert_computed(rank)` as round COMPUTED_ROUND starts."""

    PER_RANK = 5  # S, P, IO, Y, B

    def __init__(self, modules: dict, config, holder, roots: tuple[str, ...]):
        _label_writes(modules)
        super().__init__(modules, config, holder, roots)

    def scripted_rounds(self) -> tuple:
        """The configuration's scripted rounds and the computed request's inserts (stutter.py)."""
        return super().scripted_rounds() + tuple(range(COMPUTED_ROUND, COMPUTED_ROUND + self.config.computed_chunks))

    def computed_tokens(self, rounds: int) -> int:
        """The computed request's tokens the insert as round `rounds` starts covers (0: no insert
        then): its chunk k of CodeConfig.computed_chunks ends at page ceil(pages * k / chunks), so
        the first chunk is the longest (a parent larger than its child: the child's write is
        dropped with it when the parent's cannot stage)."""
        cfg = self.config
        k = rounds - COMPUTED_ROUND + 1
        if not 1 <= k <= cfg.computed_chunks:
            return 0
        pages = cfg.pages if cfg.computed_pages is None else cfg.computed_pages
        return -(-pages * k // cfg.computed_chunks) * cfg.page_size

    def _writer(self, rank: Rank) -> None:
        """The controller of a rank that writes its own KV: its storage_config (0.5.23's
        `backup_skip` property reads it) or, before, the `backup_skip` flag __init__ sets (unset,
        the backup thread's AttributeError is swallowed by `_page_backup_or_log` and nothing is
        stored: 0.5.22's buffer write cases stored nothing so), the generic page set, and what its
        own transfers read (`_l2_side`)."""
        cc = rank.cc
        cc.storage_config = _StorageConfig(self.world)
        if not isinstance(getattr(type(cc), "backup_skip", None), property):
            cc.backup_skip = False
        cc.page_set_func = cc._generic_page_set
        cc.write_policy = self.config.write_policy
        self._l2_side(rank)
        rank.tree.is_write_back = cc.write_policy == "write_back"  # where the cache's property keeps it
        rank.cache.is_write_back = rank.tree.is_write_back

    def _l2_side(self, rank: Rank) -> None:
        """What the controller's own transfers read (start_writing, start_loading: their merge,
        `move_hybrid_indices` -> `move_indices` on the CPU path, `_l2_transfers`, the ack's token
        and byte counts): the L2 transfer engine and the device allocator are the device side's
        (buffer/device_pool.py), the host pool group's anchor entry names its device pool."""
        cc, device, pool = rank.cc, rank.tree.device, rank.pool
        cc.mem_pool_device_allocator = cc.l2_transfer_engine = device
        cc.write_fence_stream = None
        cc.io_backend, pool.__dict__["layout"] = "direct", "page_first_direct"
        pool.__dict__["size_per_token"] = 1
        anchor = pool.anchor_entry
        anchor.device_pool, anchor.layer_mapper, anchor.packed_draft_device_pools = device, None, ()
        anchor.name = self.modules["mem_cache/hicache_storage.py"].PoolName.KV

    def _spawn(self, rank: Rank) -> None:
        super()._spawn(rank)
        self.baton.spawn(f"B{rank.index}", rank.index, "backup", rank.cc.backup_thread_func)

    def computed_request(self) -> int:
        """Whose tokens the computed request has: its own number (`requests`), or request 0's
        (CodeConfig.computed_shares)."""
        return 0 if self.config.computed_shares else self.config.requests

    def _insert_computed(self, rank: Rank, n: int, have: tuple = ()) -> None:
        """SCH's cache_unfinished_req after a prefill (chunk) of the computed request: its first n
        tokens' KV rows inserted into the tree, `have` the device slots of its earlier chunks (the
        request holds them) and the forward pass's new rows in slots it took."""
        w, page = self.computed_request(), self.config.page_size
        have = list(have[:n])
        new = rank.tree.device.take(n - len(have), f"req{w}", [f"q{w}p{t // page}" for t in range(len(have), n)])
        slots = have + new
        self.baton.observe(f"computed req{w} on device slots {slots}")
        rank.cache.insert(InsertParams(key=RadixKey([w * 1000 + t for t in range(n)]), value=Tensor(slots)))


def _describe_write(cls, op, world) -> str:
    """A storage write in a queue (the backup queue, the storage ack queue): its number, which every
    run counts from 0 (numbering.py), and the pages it stores; the prefetch operations are named
    when made (rt/hooks.py), which `World.label` asks first."""
    return f"write{op.id}{list(op.hash_value)}"


def _label_writes(modules: dict) -> None:
    """The write's operation labelled by what it stores in the queues' part of the state key."""
    for mod in (modules.get(HYBRID), modules[CONTROLLER]):
        cls = getattr(mod, "StorageOperation", None)
        if cls is not None and "_pc_describe" not in cls.__dict__:
            type.__setattr__(cls, "_pc_describe", classmethod(_describe_write))
