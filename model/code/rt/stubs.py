"""The stub sglang modules: each name the prefetch path needs from outside it is a known stand-in;
any other name is a placeholder that raises `NotModelled` (with the caller's file:line) the
moment the path uses it: called, or asked for an attribute."""

from __future__ import annotations

import dataclasses
import enum
import types
from typing import Any, Callable, NamedTuple, Optional

from prefetch_check.model.code.stand_ins import radix
from prefetch_check.model.code.stand_ins.errors import NotModelled, caller_site
from prefetch_check.model.code.stand_ins.tree import InsertResult


class _PlaceholderMeta(type):
    def __call__(cls, *args, **kwargs):
        raise NotModelled(cls._pc_name, caller_site(cls._pc_roots))

    def __getattr__(cls, name):
        if name.startswith("__") or name.startswith("_pc_"):
            raise AttributeError(name)
        value = placeholder(f"{cls._pc_name}.{name}", cls._pc_roots)
        type.__setattr__(cls, name, value)  # one placeholder a name (a class made anew was 3% of a run)
        return value

    def __getitem__(cls, item):  # Queue[T]-like subscripts in evaluated annotations
        return cls

    def __iter__(cls):  # else `for`/`in` would walk __getitem__ without end
        raise NotModelled(cls._pc_name, caller_site(cls._pc_roots))


def placeholder(name: str, roots: tuple[str, ...]) -> type:
    """A class standing for `name`: subclassable and importable, unusable."""
    return _PlaceholderMeta(name.rsplit(".", 1)[-1], (), {"_pc_name": name, "_pc_roots": roots})


@dataclasses.dataclass(frozen=True)
class CacheRequestHandle:
    rid: str
    attempt_id: int = 0


class BasePrefixCache:
    """The base class of the cache: the methods on the path are the cache's own, but for the
    eviction metrics, which upstream's base records only with a metrics collector (the worlds run
    without one)."""

    def update_eviction_metrics(self, num_evicted: int, start_time: float) -> None:
        if self.metrics_collector is not None:
            raise NotImplementedError("update_eviction_metrics with a metrics collector")


class CacheTransferPhase(str, enum.Enum):
    """components/base.py's phases (every member: `_build_sidecar_transfers` compares against them)."""

    BACKUP_HOST = "backup_host"
    LOAD_BACK = "load_back"
    BACKUP_STORAGE = "backup_storage"
    PREFETCH = "prefetch"


def rank_consensus(*args, **kwargs):
    """Identity, as SGLang runs it unless SGLANG_ENABLE_RANK_CONSENSUS_CHECKER is set."""
    if len(args) == 1 and callable(args[0]) and not kwargs:
        return args[0]
    return lambda fn: fn


def _shared_layout(pool) -> bool:
    """pool_host/base.py's test: a pool with a shared allocation domain (read from the instance's
    own fields, so a strict stand-in is never asked for an attribute it lacks)."""
    return getattr(pool, "__dict__", {}).get("shared_allocation_domain") is not None


class L2Transfer(NamedTuple):
    """l2_transfer.py's transfer record, which the controller builds and its L2 transfer engine
    runs (the engine is the device side's stand-in: buffer/device_pool.py)."""

    host_pool: Any
    device_pool: Any
    host_indices: Any
    device_indices: Any
    layer_mapper: Optional[Callable] = None
    is_draft: bool = False


class _Inert:
    """A device module nobody on the path uses (CC calls get_device_module() at import)."""


def known(component_type) -> dict[str, dict[str, object]]:
    """Module name -> {name: stand-in}. `component_type` is the tree's own real enum module."""
    ct = component_type
    return {
        "sglang.srt.utils": {"get_device_module": lambda *a, **k: _Inert()},
        "sglang.srt.utils.rank_consensus_checker": {"rank_consensus": rank_consensus},
        "sglang.srt.utils.common": {"ceil_align": lambda x, a: (x + a - 1) // a * a},
        "sglang.srt.mem_cache.base_prefix_cache": {
            "BasePrefixCache": BasePrefixCache, "CacheRequestHandle": CacheRequestHandle, "InsertResult": InsertResult},
        "sglang.srt.mem_cache.radix_cache": {"RadixKey": radix.RadixKey},
        "sglang.srt.mem_cache.l2_transfer": {"L2Transfer": L2Transfer},
        "sglang.srt.mem_cache.utils": {"get_storage_hash_str": radix.storage_hashes},
        # a pool of the shared host arena stand-in (stand_ins/shared_arena.py) names its domain
        "sglang.srt.mem_cache.pool_host.base": {"uses_shared_host_layout": _shared_layout},
        "sglang.srt.mem_cache.unified_cache.components": {} if ct is None else {
            "ComponentType": ct.ComponentType, "BASE_COMPONENT_TYPE": ct.BASE_COMPONENT_TYPE,
            "CacheTransferPhase": CacheTransferPhase},
    }


class StubModule(types.ModuleType):
    """A package-shaped module whose unknown names are placeholders."""

    def __init__(self, name: str, names: dict, roots: tuple[str, ...]):
        super().__init__(name)
        self.__path__ = []  # a package: its submodules go through our finder too
        self.__dict__.update(names)
        self._pc_roots = roots

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        value = placeholder(f"{self.__name__}.{name}", self._pc_roots)
        setattr(self, name, value)
        return value


def not_modelled_factory(roots: tuple[str, ...]) -> Callable[[str], type]:
    """What a stand-in module (torch, threading, time) answers for a name it lacks: a placeholder,
    but Python's own dunder names stay missing, as on StubModule: a placeholder `__file__` is
    subscriptable without end, and a tool that walks sys.modules (hypothesis 6.170's constant
    scan in a test process) iterated it forever."""

    def not_modelled(name: str) -> type:
        if name.rsplit(".", 1)[-1].startswith("__"):
            raise AttributeError(name)
        return placeholder(name, roots)

    return not_modelled
