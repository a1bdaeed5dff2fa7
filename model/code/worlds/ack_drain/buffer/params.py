"""The parameter records of mem_cache/base_prefix_cache.py the buffer pipeline builds (plain
dataclasses upstream; only the fields the path reads and writes), the write path's records of the
tree core and the insert (BufferBackupSnapshot, BufferBackupState, BackupKV, a split's action), and `envs` with the two
variables BufferModePipeline reads at construction, at their upstream defaults. Any other
environment variable is a placeholder, as the stub module's names are."""

from __future__ import annotations

import dataclasses
from typing import Any, Optional

from prefetch_check.model.code.rt.stubs import placeholder
from prefetch_check.model.code.stand_ins.context import Strict


@dataclasses.dataclass
class MatchPrefixParams:
    key: Any
    cow_mamba: bool = False
    req: Any = None


@dataclasses.dataclass
class InsertParams:
    """upstream's fields (base_prefix_cache.py InsertParams), the component ones unused here."""

    key: Any = None
    value: Any = None
    mamba_value: Any = None
    mamba_keep_idx: Optional[int] = None
    c128_value: Any = None
    prev_prefix_len: int = 0
    swa_branching_seqlen: Optional[int] = None
    component_evicted_seqlens: dict = dataclasses.field(default_factory=dict, kw_only=True)
    inserted_len: int = 0
    priority: int = 0
    session_id: Optional[str] = None
    track_adopted_ranges: bool = False
    rotation_base: Optional[int] = None


@dataclasses.dataclass
class EvictParams:
    num_tokens: int = 0
    swa_num_tokens: int = 0
    mamba_num: int = 0


@dataclasses.dataclass
class DecLockRefParams:
    node_id: Optional[int] = None


@dataclasses.dataclass
class InitLoadBackParams:
    best_match_node: Any
    host_hit_length: int
    mem_quota: Optional[int] = None
    req: Any = None


@dataclasses.dataclass(frozen=True)
class BackupKV:
    """cache_action.py's BackupKV (the write path, CodeConfig.backup): the nodes to back up, parents first."""

    node_ids: list


@dataclasses.dataclass(frozen=True)
class ComponentAction:
    """cache_action.py's base of the actions the cache routes to a component (0.5.23)."""


@dataclasses.dataclass(frozen=True)
class UpdatePendingBackupOnNodeSplit(ComponentAction):
    """0.5.23's split of a node: the cache moves its pending write-through's publish list to the two
    fragments (ack_id set), then routes the action to the FULL component."""

    ack_id: Optional[int]
    old_node_id: int
    new_node_id: int
    new_child_node_id: int
    component_type: Any = None


@dataclasses.dataclass(frozen=True)
class FreeComponentDeviceSlot(ComponentAction):
    """cache_action.py's free of one component's device slots (the eviction walk's device frees,
    drained by `_drain_device_frees` to the component)."""

    indices: list
    component_type: Any = None


@dataclasses.dataclass
class EvictResult:
    """base_prefix_cache.py's EvictResult: what an eviction freed, per component."""

    num_tokens_evicted: int = 0
    swa_num_tokens_evicted: int = 0
    mamba_num_evicted: int = 0


@dataclasses.dataclass(frozen=True)
class ReplaceWriteThroughOnNodeSplit:
    """0.5.19-0.5.22's split of a node with a write-through pending (a cache action of its own)."""

    ack_id: int
    old_node_id: int
    new_node_id: int
    new_child_node_id: int


@dataclasses.dataclass(frozen=True)
class BufferBackupSnapshot:
    """unified_tree_core_interface.py's record of a node at enqueue time."""

    node_id: int
    parent_node_id: int
    parent_is_root: bool
    parent_last_hash: object
    hash_values: list
    key: object
    prefix_keys: object


@dataclasses.dataclass(frozen=True)
class BufferBackupState:
    parent_node_id: int
    parent_is_root: bool
    parent_last_hash: object


class MatchResult(Strict):
    """base_prefix_cache.py MatchResult's fields the path reads; any other is not modelled."""

    _pc_what = "MatchResult"

    def __init__(self, world, device_prefix_len: int, last_device_node, last_host_node, host_hit_length: int = 0):
        self.world = world
        self.device_prefix_len, self.last_device_node = device_prefix_len, last_device_node
        self.last_host_node, self.host_hit_length = last_host_node, host_hit_length
        self.cache_actions: list = []


class _Var:
    def __init__(self, value):
        self.value = value

    def get(self):
        return self.value


class Envs:
    """`sglang.srt.environ.envs`: the buffer pipeline's two variables at upstream's defaults
    (environ.py: SGLANG_HICACHE_BUFFER_ANCHOR_LOCK_CAP 0.5, SGLANG_ENABLE_HICACHE_SWA_TAIL_ONLY_BACKUP False),
    and the file backend's."""

    SGLANG_HICACHE_BUFFER_ANCHOR_LOCK_CAP = _Var(0.5)
    SGLANG_ENABLE_HICACHE_SWA_TAIL_ONLY_BACKUP = _Var(False)
    # HiCacheFile and its LRU file evictor (storage="file"), at environ.py's defaults: no directory
    # override (the run's own is passed), no size cap or free-space floor, no metadata cache
    SGLANG_HICACHE_FILE_BACKEND_STORAGE_DIR = _Var(None)
    SGLANG_HICACHE_FILE_BACKEND_MAX_SIZE = _Var(None)
    SGLANG_HICACHE_FILE_BACKEND_EVICTION_RATIO = _Var(0.9)
    SGLANG_HICACHE_FILE_BACKEND_MIN_FREE_SPACE = _Var("0")
    SGLANG_HICACHE_FILE_BACKEND_ENABLE_METADATA_CACHE = _Var(False)
    SGLANG_HICACHE_FILE_BACKEND_METADATA_TTL = _Var(5.0)

    def __init__(self, roots):
        self._pc_roots = roots

    def __getattr__(self, name):
        if name.startswith("__") or name.startswith("_pc"):
            raise AttributeError(name)
        return placeholder(f"sglang.srt.environ.envs.{name}", self._pc_roots)  # as the stub's: unusable


def known(roots) -> dict[str, dict[str, object]]:
    """The stub modules' extra names for this configuration (rt/loader.load_tree's known_extra)."""
    names = {"MatchPrefixParams": MatchPrefixParams, "InsertParams": InsertParams, "EvictParams": EvictParams,
             "EvictResult": EvictResult, "DecLockRefParams": DecLockRefParams, "InitLoadBackParams": InitLoadBackParams}
    # the write path's records (CodeConfig.backup): the tree core's backup snapshot and the insert's action
    interface = {"BufferBackupSnapshot": BufferBackupSnapshot, "BufferBackupState": BufferBackupState}
    return {"sglang.srt.mem_cache.base_prefix_cache": names, "sglang.srt.environ": {"envs": Envs(roots)},
            "sglang.srt.mem_cache.unified_cache.unified_tree_core_interface": interface,
            "sglang.srt.mem_cache.unified_cache.cache_action": {
                "BackupKV": BackupKV, "ComponentAction": ComponentAction,
                "UpdatePendingBackupOnNodeSplit": UpdatePendingBackupOnNodeSplit,
                "FreeComponentDeviceSlot": FreeComponentDeviceSlot,
                "ReplaceWriteThroughOnNodeSplit": ReplaceWriteThroughOnNodeSplit}}
