"""The ack-drain cases of cache mode's write path (0.5.19 on; CodeConfig(backup=True), the default
host_memory_mode cache under hicache write_through, SGLang's default write policy): in round 1 the
scheduler inserts a request it computed, and the tree's own code writes its node back to host and
on to storage (model/code/worlds/ack_drain/write_through/) beside the prefetch: the D2H write and
its ack under the node's device lock, the storage write under its host lock, the backup thread,
the acks drained at their MIN over the ranks. Each names its non-default settings."""

from __future__ import annotations

from prefetch_check.model.code import CodeConfig, CodeLimits
from prefetch_check.sglang.code_checks import Case, needs
from prefetch_check.sglang.mappings.ack_drain.options import PROTOCOL

CACHE = "mem_cache/unified_radix_cache.py"
WRITE = "write_through"
BACK = "write_back"
# the write path the world's tree stand-in answers (0.5.19-0.5.23): the backup's host write through
# `_execute_kv_backup`, the storage write from the tree's storage spec
_host_write = needs(CACHE, "def _execute_kv_backup(", "its host backup is not `_execute_kv_backup`, as the "
                    "write-through world models")
_storage_write = needs(CACHE, "self.tree_core.build_storage_backup_spec(", "its storage backup does not read "
                       "tree_core.build_storage_backup_spec, as the write-through world models")


def skip(srt) -> str:
    return _host_write(srt) or _storage_write(srt)


def _write(**kwargs) -> CodeConfig:
    return CodeConfig(world=PROTOCOL, backup=True, **{"ranks": 1, **kwargs})


# 0.5.23 (untraced, one core): 152, 152, 10, 100, 10, 25, 511, 152, 544, 202, 340, 25, 160, 5, 684, 492,
# 1,564, 867, 269, 269 and 6,551 runs, exhaustive, clean; the load-back under the gate "any" 1,450 (14,078
# states, 8.5 s)
WRITE_THROUGH_CASES: tuple[Case, ...] = (
    Case(f"1 rank, {WRITE} (a computed request written to host and storage)", _write(), skip=skip),
    # eviction at the insert's round: the node's device lock keeps its rows until the D2H ack
    Case(f"1 rank, {WRITE}, device eviction in round 1 (the node locked until its D2H ack)",
         _write(evict_device_round=1), skip=skip),
    # the write's host backup takes the pool's 2 pages: the prefetch's allocation finds none
    Case(f"1 rank, {WRITE}, host pool of 2 pages (the write takes it)", _write(host_pages=2), skip=skip),
    # host pressure: the node evicted from the device in round 2 is host-only, and a later hit's
    # allocation evicts it from host once its storage write's host lock is given back
    Case(f"1 rank x 2 requests x 1 page, {WRITE}, host pool of 1 page, device eviction in round 2 (host "
         "eviction waits for the storage write's host lock)",
         _write(requests=2, pages=1, host_pages=1, evict_device_round=2), skip=skip),
    # host pressure at the write: the tree holds an earlier request's 2 pages in a pool of 2, and the
    # write's host backup evicts them for its room (_execute_kv_backup -> evict_host); with one locked
    # it frees 1 page of the 2 it needs and gives the write up (the node is not backed up)
    Case(f"1 rank, {WRITE}, host pool of 2 pages, both held by the tree (the write evicts them)",
         _write(host_pages=2, host_held_pages=2), skip=skip),
    Case(f"1 rank, {WRITE}, host pool of 2 pages, both held by the tree, 1 locked (the write gives up)",
         _write(host_pages=2, host_held_pages=2, host_locked_pages=1), skip=skip),
    # a second computed request sharing the first page splits the node: in round 1 while its write-through
    # is pending (the ack's publish list moves to both fragments, each stored), in round 2 after its ack
    Case(f"1 rank, {WRITE}, a second request splits the node in round 1 (its write-through pending)",
         _write(split_round=1), skip=skip),
    Case(f"1 rank, {WRITE}, a second request splits the node in round 2 (after its write-through)",
         _write(split_round=2), skip=skip),
    Case(f"1 rank, {WRITE}, best_effort", _write(policy="best_effort"), skip=skip),
    Case(f"1 rank, {WRITE}, aborted by its client in round 2", _write(abort_round=2), skip=skip),
    # the write and storage acks drained at their MIN over the ranks (with the prefetch fetching
    # too: 9,008 runs, 33 s untraced, a bench row)
    Case(f"2 ranks x 1 page, {WRITE}, nothing stored (the acks drained across ranks)",
         _write(ranks=2, pages=1, hits=(0, 0)), skip=skip),
    # the cache's own device eviction (evict_for_alloc's walk) of a node the write gave up on: under
    # write_through an unwritten leaf is deleted with its rows (tokens dropped without a backup)
    Case(f"1 rank, {WRITE}, host pool of 2 pages, both held by the tree, 1 locked, device eviction in round 2 "
         "(the unwritten node deleted)",
         _write(host_pages=2, host_held_pages=2, host_locked_pages=1, evict_device_round=2), skip=skip),
    # hicache_write_policy write_back: the insert writes nothing; the eviction walk backs the leaf up
    # first (the deferred demote: the D2H, its ack awaited, then the storage write), or with the host
    # pool held and locked fails to and drops the node (drop_subtree_no_host)
    Case(f"1 rank, {BACK}, device eviction in round 1 (the node written back first)",
         _write(write_policy=BACK, evict_device_round=1), skip=skip),
    Case(f"1 rank, {BACK}, host pool of 2 pages, both held by the tree and locked, device eviction in round 1 "
         "(the write-back fails: the node dropped)",
         _write(write_policy=BACK, host_pages=2, host_held_pages=2, host_locked_pages=2, evict_device_round=1),
         skip=skip),
    Case(f"2 ranks x 1 page, {BACK}, nothing stored, device eviction in round 1",
         _write(write_policy=BACK, ranks=2, pages=1, hits=(0, 0), evict_device_round=1), skip=skip),
    # a load-back: the node evicted from the device in round 2, a request of its tokens arrives and
    # the cache's own init_load_back loads its host hit back (the controller's load, the H2D's ack
    # reaped by loading_check, the node's device and host locks held until then); page_size 5 or 10
    # so the node reaches the cache's load_back_threshold of 10 tokens
    Case(f"1 rank, page_size=5, {WRITE}, device eviction in round 2, its tokens requested again (loaded back)",
         _write(page_size=5, evict_device_round=2, load_back=True), skip=skip),
    # at two ranks under the gate "any" (mapping.py: every two-rank case), a round also for an H2D
    # copy done on one rank only, so a drain that reaps more than the MIN the ranks agree on runs its
    # divergent round (write_through/round_views.py judges the ranks' device trees after every
    # round's events). It was a case of its own beside this one under "agreed" until 2026-12-07
    Case(f"2 ranks x 1 page, page_size=10, {WRITE}, nothing stored, device eviction in round 2, loaded back",
         _write(ranks=2, pages=1, page_size=10, hits=(0, 0), evict_device_round=2, load_back=True), skip=skip),
    Case(f"1 rank, page_size=5, {BACK}, device eviction in round 1, loaded back (its host slots pinned to the ack)",
         _write(page_size=5, write_policy=BACK, evict_device_round=1, load_back=True), skip=skip),
    # the load-back's give-ups: 2 tokens, below its threshold; no device room (a running batch keeps
    # the rows the eviction freed: the load evicts for room, finds none and gives its locks back)
    Case(f"1 rank, {WRITE}, device eviction in round 2, its 2 tokens requested again (below the load-back "
         "threshold: not loaded)", _write(evict_device_round=2, load_back=True), skip=skip),
    Case(f"1 rank, page_size=5, {WRITE}, device eviction in round 2 for a running batch that keeps the pool, "
         "loaded back (no device room: the load gives up)",
         _write(page_size=5, evict_device_round=2, load_back=True, device_full=True), skip=skip),
    # SGLang's default stop policy: the deadlines fire as the search's choices. 0.5.22: 10,722 runs,
    # 28 s untraced on one core; traced at -j 1 beside three other searches it was cut at 120 s
    Case(f"1 rank x 1 page, {WRITE}, timeout (deadlines fire as choices)", _write(pages=1, policy="timeout"),
         limits=CodeLimits(max_seconds=300), skip=skip),
)
