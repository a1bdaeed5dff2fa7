"""The host radix tree of one rank (`tree_core`), as far as a storage prefetch touches it: it
takes the fetched slots on `insert_host`, says how much of the key it already held, and judges
data_integrity (each page handed to it was written by IO with that page's data). With
CodeConfig.host_held_pages it also holds an earlier request's host-only pages, which host eviction
takes (stand_ins/host_held.py)."""

from __future__ import annotations

from prefetch_check.model.code.stand_ins.context import Strict

from dataclasses import dataclass, field

from prefetch_check.model.code.stand_ins.radix import storage_hashes


@dataclass
class InsertResult:
    prefix_len: int
    host_insert_dropped: bool = False
    cache_actions: list = field(default_factory=list)
    total_len: int = 0


@dataclass
class DriveHostEvictionResult:
    """What upstream's `drive_host_eviction` returns (unified_tree_core_interface.py
    BaseEvictionResult): the host and device values it freed, per component, for the cache to
    free (`_free_values`), the cache actions, and the tokens evicted per component."""

    device_frees: dict = field(default_factory=dict)
    host_frees: dict = field(default_factory=dict)
    cache_actions: list = field(default_factory=list)
    tracker: dict = field(default_factory=dict)


@dataclass
class EvictionStep(DriveHostEvictionResult):
    """One step of the device-eviction walk (upstream's EvictDeviceNextNodeResult,
    EvictDeviceLeafResult, DemoteResult, DropSubtreeNoHostResult, one shape for all): the leaf the
    walk chose (`node_id`, None when it is done) and whether it moved, the tokens freed without a
    host backup, the write-back victim's BackupKV, whether a dropped subtree went. No component
    here pauses the walk for an internal state backup (the Mamba and SWA fields stay empty)."""

    node_id: object = None
    made_progress: bool = False
    unbacked_tokens: int = 0
    backup_kv: object = None
    is_dropped: bool = False
    mamba_backup_node_id: object = None
    swa_backup_node_id: object = None
    swa_backup_num_tokens: int = 0


class _Lock:
    """inc_host_lock_ref's receipt. Its dec params are never None, as upstream's DecLockRefParams:
    the release paths test `anchor_lock_params is not None` before giving the lock back."""

    def __init__(self, node_id):
        self.node_id = node_id

    def to_dec_params(self):
        return _DecParams(self.node_id)


@dataclass(frozen=True)
class _DecParams:
    node_id: object


class _KvEvents:
    """The tree's KV event recorder (the cache's reset records that everything was cleared)."""

    def record_all_cleared(self) -> None:
        return None


class TreeCore(Strict):
    _pc_what = "tree_core"
    _pc_footprint = True  # its calls enter a step's footprint (rt/hooks.py as_value)
    kv_events = _KvEvents()

    def __init__(self, world, rank: int, pool, page_size: int, host_only=None):
        self.world, self.rank, self.pool = world, rank, pool
        self.host_only = host_only  # HostHeldPages: an earlier request's host-only pages, or None
        self.page_size, self.enable_storage, self.is_eagle = page_size, True, False
        self.write_back_duplicate_reclaim_digest = 0
        self.held: dict[int, int] = {}  # request -> tokens the tree holds (from the request's start)
        self.locks = 0
        self.components: dict = {}  # component type -> its sidecar stand-in (stand_ins/sidecar_components.py)
        self._last_inserted = None
        self.derived: list = []  # KV-derived sidecar pools: each inserted KV slot's row must hold its page too
        self._pc_name = f"r{rank}.tree"  # its name in a step's footprint (rt/baton.py)
        world.register(self)

    def reset(self) -> None:
        """The whole tree dropped (the cache's reset): nothing held, no lock (host-only pages held
        before the run are not modelled through a reset)."""
        if self.host_only is not None:
            raise self.world.not_modelled("tree_core.reset with host pages held before the run")
        self.world.baton.touch(self._pc_name)
        self.held.clear()
        self.locks = 0
        self._last_inserted = None

    def prefetch_anchor_info(self, node_id):
        return None, None

    # the anchor queries of the scheduler's _prefetch_kvcache (the retry world anchors at the root)
    def is_root(self, node_id) -> bool:
        return node_id == 0

    def is_backuped(self, node_id) -> bool:
        return node_id == 0

    def get_last_hash_value(self, node_id):
        return None

    def get_prefix_hash_values(self, node_id) -> list:
        return []

    def inc_host_lock_ref(self, node_id):
        self.world.baton.touch(self._pc_name)
        self.locks += 1
        if self.host_only is not None and self.host_only.holds(node_id) and not self.host_only.was_evicted(node_id):
            self.host_only.lock(node_id, +1)
        return _Lock(node_id)

    def dec_host_lock_ref(self, node_id, params=None):
        self.world.baton.touch(self._pc_name)
        self.locks -= 1
        if self.host_only is not None and self.host_only.holds(node_id) and not self.host_only.was_evicted(node_id):
            if not self.host_only.lock(node_id, -1):
                raise self.world.not_modelled(f"tree_core.dec_host_lock_ref of node {node_id}, which holds no host lock")

    def insert_host(self, node_id, key, host_indices, hash_values=None, *args, **kwargs) -> InsertResult:
        baton = self.world.baton
        baton.point(f"insert {len(key)} tokens into host tree")
        baton.touch(self._pc_name)
        tokens = key.token_ids
        self._last_inserted = key  # commit_hicache_transfers follows, for the same key
        if not tokens:
            return InsertResult(prefix_len=0)
        request = tokens[0] // 1000
        if self.host_only is not None and self.host_only.was_evicted(node_id):
            site = baton.current().point.site if baton.current() else "?"
            self.world.fault("data_integrity",
                             f"rank {self.rank}: req{request}'s prefetched pages inserted below node {node_id}, "
                             "whose host pages were evicted during the fetch",
                             "wrong KV data served: the prefix the new pages extend was freed and its slots reused",
                             site)
        prefix = min(self.held.get(request, 0), len(tokens))
        slots = host_indices.data[prefix:]
        expected = storage_hashes(key, None, self.page_size)
        site = baton.current().point.site if baton.current() else "?"
        for n, slot in enumerate(slots):
            want = expected[(prefix + n) // self.page_size]
            got = self.pool.written.get(slot)
            if got != want:
                self.world.fault("data_integrity",
                                 f"rank {self.rank}: host slot {slot} handed to the tree for page {want} "
                                 f"holds {got or 'nothing written'}",
                                 "wrong KV data served: the tree holds a page IO had not written", site)
                break
            for derived in self.derived:
                got = derived.written.get(slot)
                if got != want:
                    self.world.fault("data_integrity",
                                     f"rank {self.rank}: host slot {slot} handed to the tree for page {want} holds "
                                     f"{got or 'nothing written'} in its {derived.pool_name} pool",
                                     f"wrong {derived.pool_name} data served: the tree holds a KV page whose "
                                     "sidecar row IO had not read (the usable length was not clamped to the "
                                     "sidecar's hits)", site)
                    break
        self.pool.hand_to_tree(slots)
        self.held[request] = max(self.held.get(request, 0), len(tokens))
        baton.observe(f"prefix {prefix}")
        return InsertResult(prefix_len=prefix, total_len=len(tokens))

    def drive_host_eviction(self, component_type, num_tokens: int) -> DriveHostEvictionResult:
        """Host eviction before an allocation is retried (0.5.23 unified_tree_core.py:1931: the
        FULL component evicts unlocked host leaves until num_tokens are freed). The earlier
        request's host-only pages (host_held_pages) are evicted as host_held.py says, their slots
        returned in host_frees for the cache to free; with none, there is nothing to evict: an
        empty result, as upstream's is. Evicting the pages this run's own prefetches inserted is
        not modelled (after insert they are the admitted request's, loaded and locked outside
        this world)."""
        self.world.baton.point(f"host eviction of {num_tokens} tokens (rank {self.rank})")
        self.world.baton.touch(self._pc_name)  # the held chain shrinks (host_held.py)
        if any(self.held.values()):
            from prefetch_check.model.code.stand_ins.errors import NotModelled, caller_site

            raise NotModelled("tree_core.drive_host_eviction of host pages the tree holds",
                              caller_site(self.world.baton.roots))
        if self.host_only is None:
            return DriveHostEvictionResult()
        values, tokens = self.host_only.evict(num_tokens)
        return DriveHostEvictionResult(host_frees={component_type: values} if values else {},
                                       tracker={component_type: tokens})

    def build_hicache_transfers(self, component_type, node_id, phase, *, staging_tokens: int = 0,
                                host_indices=None, **kwargs):
        """A component's PREFETCH transfers (upstream's tree core asks the component)."""
        component = self.components.get(component_type)
        if component is None or getattr(phase, "value", phase) != "prefetch":
            raise self.world.not_modelled(f"tree_core.build_hicache_transfers({component_type}, {phase})")
        return component.build_prefetch_transfers(staging_tokens, host_indices)

    def commit_hicache_transfers(self, node_id=None, phase=None, comp_xfers=None, *args, insert_result=None,
                                 **kwargs) -> None:
        """The components take their committed windows into the tree (nothing without components)."""
        if not comp_xfers or not self.components:  # no sidecar components: nothing to take, as before
            return None
        self.world.baton.touch(self._pc_name)
        key = self._last_inserted
        if key is None:
            raise self.world.not_modelled("tree_core.commit_hicache_transfers before any insert_host")
        for component_type, transfers in comp_xfers.items():
            component = self.components.get(component_type)
            if component is None:
                raise self.world.not_modelled(f"tree_core.commit_hicache_transfers of {component_type}")
            component.commit(key, transfers)
        return None

    def snapshot(self) -> tuple:
        mine = ("tree", self.rank, tuple(sorted(self.held.items())), self.locks)
        return mine if self.host_only is None else mine + (self.host_only.snapshot(),)
