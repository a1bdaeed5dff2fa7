"""Sidecar pools in the ack-drain world (CodeConfig.sidecars): what a hybrid model adds to one
rank's cache and controller, wired to the stand-ins, with the release's own code doing the rest.

- "swa", "mamba": the SWA / Mamba components (`tree_components`, `components[ct]`:
  stand_ins/sidecar_components.py), each with a host pool of its own in the host pool group
  (stand_ins/sidecar_pools.py). The release sizes their staging at issue (`prepare_prefetch`,
  `build_hicache_transfers`), allocates it at hit time (`_alloc_prefetch_aux_staging`), re-keys
  and shrinks the window in IO (`_sync_trailing_keys`, which may release the tail from IO),
  reads it after the KV (`_page_transfer_sidecar`, `batch_get_v2`), emits the `pool_hits` ACK,
  MIN-reduces it in Y, and keeps or discards the whole fetch in `_check_hybrid_prefetch_result`.
- "indexer": a KV-derived pool registered through the release's `register_sidecar_pool`
  (`SidecarPoolSpec(INDEXER, indices_from_pool=KV)`, all pages), read per KV batch into the KV
  slots' rows (`_page_transfer_kv_batch`), which clamps the batch to the pool's hits.

The release's `_init_extra_host_mem_release_queues` makes one release queue per sidecar entry;
the drain MIN-reduces their sizes with the others (`_sync_hicache_ready_counts`) and frees what
it pops into the named pool (`_drain_extra_release`). Judged here at a run's end: sidecar slots
held by no one, and release entries no drain will free (host_memory)."""

from __future__ import annotations

from prefetch_check.model.code.rt.verdicts import LEAK, Finding
from prefetch_check.model.code.stand_ins.flat_page import FlatPage
from prefetch_check.model.code.stand_ins.shared_arena import SharedArena
from prefetch_check.model.code.stand_ins.sidecar_components import TrailingComponent
from prefetch_check.model.code.stand_ins.sidecar_pools import HostPoolGroup, SidecarHostPool
from prefetch_check.model.code.stand_ins.sidecar_storage import SidecarStorageBackend
from prefetch_check.model.code.worlds.ack_drain import transfer_hooks

STORAGE = "mem_cache/hicache_storage.py"
BELIEFS = "mem_cache/buffer_mode/storage_existence_cache.py"
POOL_NAMES = {"swa": "SWA", "mamba": "MAMBA", "indexer": "INDEXER"}
COMPONENTS = ("swa", "mamba")


def attach(run, i: int, cc, cache, pool, tree, component_of) -> None:
    """Give rank i's cache and controller the configured sidecar pools (CodeConfig.sidecars)."""
    cfg, w, page = run.config, run.world, run.config.page_size
    run.holder.transfer_parts[i] = transfer_hooks.RankTransfers(w, i)  # the transfers the rank's threads share
    storage = run.modules[STORAGE]
    names = {s: getattr(storage.PoolName, POOL_NAMES[s]) for s in cfg.sidecars}
    fetches = cfg.requests * cfg.fetches()
    pools = {}
    for n, s in enumerate(cfg.sidecars):
        room = None if cfg.sidecar_pool_pages is None else cfg.sidecar_pool_pages[n]
        if s == "indexer":  # one row per KV slot
            pools[names[s]] = SidecarHostPool(w, i, str(names[s]), pool.size, page)
        elif s == "swa":
            pages = cfg.swa_window_pages * fetches if room is None else room
            pools[names[s]] = SidecarHostPool(w, i, str(names[s]), pages * page, page)
        else:  # one state slot per fetch
            pools[names[s]] = SidecarHostPool(w, i, str(names[s]), fetches if room is None else room, 1)
    derived = tuple(names[s] for s in cfg.sidecars if s not in COMPONENTS)
    group = HostPoolGroup(w, pool, storage.PoolName.KV, pools, derived)
    cc.mem_pool_host = group
    if cfg.shared_arena is not None:  # the KV pool and the windows draw on one arena (stand_ins/shared_arena.py)
        arena = SharedArena(w, i, cfg.shared_arena)
        arena.join(str(storage.PoolName.KV), pool)
        for s in cfg.sidecars:
            if s in COMPONENTS:
                arena.join(str(names[s]), pools[names[s]])
    cc._init_extra_host_mem_release_queues()  # the release's own: one queue per sidecar entry
    for name, q in cc.extra_host_mem_release_queues.items():
        q.name = f"r{i}.extra_host_mem_release_queue.{name}"  # before any step: its name in keys and footprints
    hits = {names[s]: cfg.sidecar_hits_of(i, n) for n, s in enumerate(cfg.sidecars)}
    old = cc.storage_backend
    if cfg.storage == "file":  # the tree's own HiCacheFile reads and writes the pools (stand_ins/file_storage.py)
        store_sidecars(old, pools, hits, cfg.requests)
    else:
        cc.storage_backend = SidecarStorageBackend(
            w, i, old.hits, old.failing, old.query_raises, page, old.raising_reads,
            sidecar_hits=hits, sidecar_failing=cfg.sidecar_failing_of(i), group=group, classes=storage)
    staged_at_hit = hasattr(type(cache), "_alloc_prefetch_aux_staging")
    components = {}
    for s in cfg.sidecars:
        if s in COMPONENTS:
            ct = component_of(POOL_NAMES[s])
            window = cfg.swa_window_pages if s == "swa" else 1
            components[ct] = TrailingComponent(w, i, s, ct, pools[names[s]], names[s], page, window, storage,
                                               staged_at_hit)
            components[ct].cache = cache
            components[ct].arena_unread = (cfg.shared_arena is not None
                                           and not hasattr(type(cc), "_shared_prefetch_requests"))
        else:
            tree.derived.append(pools[names[s]])
            cache.register_sidecar_pool(storage.SidecarPoolSpec(pool_name=names[s],
                                                                indices_from_pool=storage.PoolName.KV))
    tree.components = dict(components)
    cache.tree_components = tuple(cache.tree_components) + tuple(components)
    cache.components = {**cache.components, **components}
    beliefs = run.modules.get(BELIEFS)
    if beliefs is not None:  # the release builds one in __init__; its hybrid shortfall heals it
        cache.storage_existence_cache = beliefs.StorageExistenceCache()


def store_sidecars(backend, pools: dict, hits: dict, requests: int) -> None:
    """The file backend with sidecar pools: each pool registered as the release's attach registers
    it (`register_mem_host_pool_v2`, what `_batch_io_v2` reads into), and its leading `hits` pages
    of every request stored before the run under the backend's own per-pool key (`_log_key`), each
    holding the KV page it belongs to, as the stand-in's reads write it."""
    for name, pool in pools.items():
        pool.flat_pages = True
        backend.register_mem_host_pool_v2(pool, name)
        for q in range(requests):
            for p in range(hits[name]):
                backend.set(backend._log_key(name, f"q{q}p{p}"), FlatPage(f"q{q}p{p}"))


def release_queues(rank) -> list:
    """The rank's sidecar release queues (the drain's MIN vector has one count for each)."""
    return list(getattr(rank.cc, "extra_host_mem_release_queues", {}).values())


def due(run) -> bool:
    """Some sidecar release queue holds an entry on every rank (its MIN > 0): a round is due."""
    per_rank = [release_queues(r) for r in run.ranks]
    return any(min(qs[k].peek_size() for qs in per_rank) > 0 for k in range(len(per_rank[0])))


def queued(rank) -> bool:
    return any(q.peek_size() for q in release_queues(rank))


def guard(run) -> tuple:
    return tuple(q.name for r in run.ranks for q in release_queues(r))


def judge(run, terminal: bool, found: list) -> list[Finding]:
    """At a run's end: every sidecar slot is the tree's or free, and every release queue drained."""
    if not terminal or not run.config.sidecars or any(
            f.prop in ("not_modelled", "deadlock_freedom", "progress") for f in found):
        return []
    out, steps = [], len(run.baton.steps)
    for r in run.ranks:
        group = r.cc.mem_pool_host
        for sidecar in group.sidecar_pools():
            held = sidecar.held()
            if held:
                out.append(Finding("host_memory", f"rank {r.index}: {sidecar.pool_name} host slots {held} still held "
                                   "by no one when every thread is idle", LEAK, "", steps))
        for name, q in r.cc.extra_host_mem_release_queues.items():
            if q.peek_size():
                out.append(Finding("host_memory", f"rank {r.index}: {q.peek_size()} {name} release-queue entries no "
                                   "drain will free (a drain pops the MIN over the ranks)", LEAK, "", steps))
    return out
