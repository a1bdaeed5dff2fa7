"""The ack-drain cases under host memory pressure (0.5.19 on): the host pool is full of pages the
tree holds from an earlier request (CodeConfig.host_held_pages), so the prefetch's allocation
fails and the release's own `evict_host` runs against them (model/code/stand_ins/host_held.py):
eviction making room for the retry, with a locked page the partial page-aligned prefix, and with
the prefetch anchored at the held pages the release's own anchor lock keeping them. Each names
what it sets."""

from __future__ import annotations

from prefetch_check.model.code import CodeConfig
from prefetch_check.sglang.code_checks import Case, needs
from prefetch_check.sglang.mappings.ack_drain.options import PROTOCOL

CACHE = "mem_cache/unified_radix_cache.py"
# the evict_host the stand-ins model (0.5.19-0.5.23): the tree core evicts, the cache frees the
# host values through its components
_evicts = needs(CACHE, "result = self.tree_core.drive_host_eviction(component_type, num_tokens)",
                "its evict_host does not ask tree_core.drive_host_eviction, as the host-pressure world models")
_frees = needs(CACHE, "self.components[ct].free_host_values(host_frees.pop(ct))",
               "it frees evicted host values other than through components[ct].free_host_values, as the "
               "host-pressure world models")


def skip(srt) -> str:
    return _evicts(srt) or _frees(srt)


def _pressure(**kwargs) -> CodeConfig:
    return CodeConfig(world=PROTOCOL, **{"ranks": 1, "pages": 2, "host_pages": 2, "host_held_pages": 2, **kwargs})


HELD = "host pool of 2 pages, both held by the tree"
HOST_PRESSURE_CASES: tuple[Case, ...] = (
    Case(f"1 rank, {HELD} (evict_host frees them)", _pressure(), skip=skip),
    Case(f"1 rank, {HELD}, 1 locked (a partial prefix)", _pressure(host_locked_pages=1), skip=skip),
    Case(f"1 rank, page_size=2, {HELD}, 1 locked (a partial prefix)", _pressure(page_size=2, host_locked_pages=1),
         skip=skip),
    # the held pages are the request's own prefix and the prefetch anchors at them: the release's
    # anchor lock keeps them from eviction, and the partial prefix takes the one page left
    Case("1 rank, host pool of 3 pages, 2 held by the tree as the request's prefix, the prefetch anchored "
         "there (a partial prefix)", _pressure(host_pages=3, host_anchored=True), skip=skip),
)
