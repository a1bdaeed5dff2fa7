"""The ack-drain world as the executor sees it (model/code/pack.py): UnifiedRadixCache and its
controller with the sync thread (0.5.19 on), registered on the ack-drain descriptor."""

from __future__ import annotations

from pathlib import Path

from prefetch_check.model.code.config import CodeConfig
from prefetch_check.model.code.pack import ConformanceKit, WorldPack
from prefetch_check.model.code.rt import hooks, loader, unset_fields
from prefetch_check.model.code.worlds.ack_drain import conformance_configs as conformance
from prefetch_check.model.code.worlds.ack_drain import identity, transfer_hooks
from prefetch_check.model.code.worlds.ack_drain import judge
from prefetch_check.model.code.worlds.ack_drain.buffer import harness as buffer
from prefetch_check.model.code.worlds.ack_drain.buffer.backup_run import BackupRun
from prefetch_check.model.code.worlds.ack_drain.cache_reset import (BackupResetRun, BufferResetRun, ResetRun,
                                                                    WriteThroughResetRun)
from prefetch_check.model.code.worlds.ack_drain.write_through.run import WriteThroughRun
from prefetch_check.model.code.worlds.ack_drain.buffer import params as buffer_params
from prefetch_check.model.code.worlds.ack_drain.buffer.tickets import TicketStagesRun
from prefetch_check.model.code.worlds.ack_drain.harness import CACHE, COMPONENT_TYPES, CONTROLLER, FILES, HYBRID, Run
from prefetch_check.model.code.worlds.ack_drain.hiradix import harness as hiradix
from prefetch_check.model.code.worlds.ack_drain.stages import StagesRun
from prefetch_check.model.protocols.ack_drain import refinement

PROTOCOL = "ack-drain"


def imports(srt: Path, torch, roots: tuple[str, ...]) -> dict:
    """Import the tree's files (the component types first: the stubs take their names from them),
    nothing hooked: what a unit-level script runs against (rt/unit_script.py)."""
    return loader.load_tree(srt, torch, FILES + buffer.FILES + hiradix.FILES, first=COMPONENT_TYPES,
                            known_extra=buffer_params.known(roots))


def load(srt: Path, torch, holder, roots: tuple[str, ...]) -> dict:
    """`imports`, then the hooks on its PrefetchOperation and the operation_identity probe."""
    modules = imports(srt, torch, roots)
    ctrl = modules[CONTROLLER]
    op_mod = modules.get(HYBRID) if hasattr(modules.get(HYBRID), "PrefetchOperation") else ctrl
    hooks.install(op_mod.PrefetchOperation, ctrl.PrefetchAck, holder)
    for rel, name in ((buffer.PIPELINE, "BufferModePipeline"), (buffer.BELIEFS, "StorageExistenceCache")):
        cls = getattr(modules.get(rel), name, None)  # buffer_only: their fields in the steps' footprints
        if cls is not None:
            hooks.watch(cls, holder)
    identity.install(modules[CACHE].UnifiedRadixCache, op_mod.PrefetchOperation, holder)
    transfer_hooks.install(getattr(modules.get("mem_cache/hicache_storage.py"), "PoolTransfer", None), holder)
    if hasattr(modules.get(hiradix.HIRADIX), "HiRadixCache"):  # 0.5.19-0.5.20: its controller's own operation
        hooks.install(ctrl.PrefetchOperation, ctrl.PrefetchAck, holder)
        identity.install(modules[hiradix.HIRADIX].HiRadixCache, ctrl.PrefetchOperation, holder)
    # the objects the worlds build with __new__: a field they never set is not modelled where read
    for rel, name in ((CACHE, "UnifiedRadixCache"), (HYBRID, "HybridCacheController"), (CONTROLLER, "HiCacheController"),
                      (hiradix.HIRADIX, "HiRadixCache"), (buffer.PIPELINE, "BufferModePipeline")):
        unset_fields.guard(getattr(modules.get(rel), name, None), roots)
    return modules


def make_run(modules, config: CodeConfig, holder, roots):
    """The harness of this configuration: buffer_only runs the tree's BufferModePipeline (buffer/),
    pp_size > 1 pipeline stages (stages.py), cache_class HiRadixCache that class (hiradix/), reset_round
    the cache's reset while requests wait (cache_reset.py)."""
    if config.cache_class == "HiRadixCache":
        return hiradix.HiRadixRun(modules, config, holder, roots)
    if config.pp_size > 1:
        if config.host_memory_mode == "buffer_only":  # the PP tickets of 0.5.21+ (buffer/tickets.py)
            return TicketStagesRun(modules, config, holder, roots)
        return StagesRun(modules, config, holder, roots)
    if config.backup:  # the write path: buffer_only's (buffer/backup_run.py), cache mode's (write_through/)
        cls = BackupRun if config.host_memory_mode == "buffer_only" else WriteThroughRun
        if config.reset_round is not None:  # flush_cache with a write in flight (cache_reset.py)
            cls = BackupResetRun if config.host_memory_mode == "buffer_only" else WriteThroughResetRun
        return cls(modules, config, holder, roots)
    if config.reset_round is not None:  # flush_cache while requests wait (cache_reset.py)
        cls = BufferResetRun if config.host_memory_mode == "buffer_only" else ResetRun
        return cls(modules, config, holder, roots)
    cls = buffer.BufferRun if config.host_memory_mode == "buffer_only" else Run
    return cls(modules, config, holder, roots)


def not_judged(config: CodeConfig) -> dict[str, str]:
    out = {}
    if config.policy != "timeout":  # under timeout, judged until a deadline fires (worlds/deadlines.py)
        out["no_early_acceptance"] = ("the executor's policies have no acceptance predicate to race (wait_complete "
                                      "and best_effort vote nothing; under timeout it is judged until a deadline "
                                      "fires)")
    return {**out, **judge.not_judged(config)}


BENCH = tuple((name, CodeConfig(world=PROTOCOL, **kwargs)) for name, kwargs in (
    ("1x1", dict(ranks=1)),
    ("2x1", dict(ranks=2)),
    ("2x1, rank 0 cannot read page 1", dict(ranks=2, failing=((1,), ()))),
    ("2x1, rank 0's existence query raises", dict(ranks=2, query_raises=(True, False))),
    ("1x2", dict(ranks=1, requests=2)),
    # issue 31's goal: exhaustive under 5 minutes (BOUNDED at 900 s, 106,256 runs on 2026-12-06)
    ("2x2", dict(ranks=2, requests=2)),
    ("1x1 best_effort", dict(ranks=1, policy="best_effort")),
    ("2x1 best_effort", dict(ranks=2, policy="best_effort")),
    ("1x1 abort in round 1", dict(ranks=1, abort_round=1)),
    ("2x1 abort in round 1", dict(ranks=2, abort_round=1)),
    ("1x1 prefetched again, wait_complete", dict(ranks=1, reissue=True)),
    ("1x1 prefetched again, best_effort", dict(ranks=1, policy="best_effort", reissue=True)),
    ("1x1 buffer_only, 1 page on the device", dict(ranks=1, host_memory_mode="buffer_only", device_pages=1)),
    ("2x1 buffer_only", dict(ranks=2, host_memory_mode="buffer_only")),
    ("1x2 buffer_only, host pool of 2 pages", dict(ranks=1, requests=2, host_memory_mode="buffer_only", host_pages=2)),
    ("1x1 buffer_only under retries, 1 page on the device", dict(ranks=1, host_memory_mode="buffer_only",
                                                                 device_pages=1, retries=True)),
    ("1x3 pages buffer_only under retries, 2 on a 3-page device, evicted in round 2",
     dict(ranks=1, pages=3, host_memory_mode="buffer_only", device_pages=2, device_room=3, evict_device_round=2,
          retries=True)),
    ("1x1 timeout, deadlines fire", dict(ranks=1, policy="timeout")),
    # issue 31's 2-rank timeout: exhaustive in 110,878 runs, 305 s under the gate "agreed" (2026-12-07)
    ("2x1 timeout, 1 page stored nowhere", dict(ranks=2, pages=1, policy="timeout", hits=(0, 0))),
    ("1x1 retries, device match lost, readmitted twice", dict(ranks=1, pages=1, retries=True, lost_device_pages=1,
                                                              readmissions=2)),
    ("1x3 retries, rate-limited to one, one a round", dict(ranks=1, requests=3, pages=1, retries=True, capacity_pages=1,
                                                           batch=1)),
    ("1x1 retries, aborted in round 1", dict(ranks=1, pages=1, retries=True, abort_round=1)),
    ("1x1 retries, aborted in round 1, the rid reused", dict(ranks=1, pages=1, retries=True, abort_round=1,
                                                              rid_reuse=True)),
    ("1x2 retries, req1 arrives in round 1 and preempts req0", dict(ranks=1, requests=2, pages=1, retries=True,
                                                                     arrival_round=1, arrival="preempts")),
    ("1x1 host pool of 2 pages held by the tree, evicted", dict(ranks=1, host_pages=2, host_held_pages=2)),
    ("2x1 the same, 1 page locked: a partial prefix", dict(ranks=2, host_pages=2, host_held_pages=2, host_locked_pages=1)),
    ("1x1 sidecars swa,mamba,indexer", dict(ranks=1, sidecars=("swa", "mamba", "indexer"))),
    ("1x1 sidecars indexer, page 1 unreadable", dict(ranks=1, sidecars=("indexer",), sidecar_failing=((1,),))),
    ("1x1 sidecars swa, page 1 unreadable", dict(ranks=1, sidecars=("swa",), sidecar_failing=((1,),))),
    ("1x1 sidecars swa, host pool of 1 page", dict(ranks=1, sidecars=("swa",), host_pages=1)),
    ("1x1 sidecars swa,mamba, Mamba pool of 0", dict(ranks=1, sidecars=("swa", "mamba"), sidecar_pool_pages=(2, 0))),
    ("1x1 sidecars swa,indexer, abort in round 1", dict(ranks=1, sidecars=("swa", "indexer"), abort_round=1)),
    ("1x1 sidecars swa,indexer, best_effort", dict(ranks=1, sidecars=("swa", "indexer"), policy="best_effort")),
    ("2x1 1 page, sidecars swa,indexer, rank 0 short", dict(ranks=2, pages=1, sidecars=("swa", "indexer"),
                                                             sidecar_failing=((0,), ()))),
    ("2x1 1 page, sidecars mamba, rank 1 stores none", dict(ranks=2, pages=1, sidecars=("mamba",),
                                                             sidecar_hits=((1,), (0,)))),
    ("2x1 sidecars swa,mamba,indexer", dict(ranks=2, sidecars=("swa", "mamba", "indexer"))),
    ("1x1 sidecars swa, shared host arena of 3", dict(ranks=1, sidecars=("swa",), shared_arena=3)),
    ("1x1 sidecars swa,mamba,indexer, shared host arena of 4", dict(ranks=1, sidecars=("swa", "mamba", "indexer"),
                                                                    shared_arena=4)),
    # PP > 1 (stages.py): 2 stages of 1 rank, the first stage decides
    ("PP=2, 1 rank a stage", dict(ranks=2, pp_size=2)),
    ("PP=2, 1 rank a stage, stage 1 cannot read page 1", dict(ranks=2, pp_size=2, failing=((), (1,)))),
    ("PP=2, 1 rank a stage, aborted in round 1", dict(ranks=2, pp_size=2, abort_round=1)),
    ("PP=2, 1 rank a stage, timeout, 1 page stored nowhere", dict(ranks=2, pp_size=2, pages=1, policy="timeout",
                                                                  hits=(0, 0))),
    ("PP=2, 1 rank a stage, best_effort", dict(ranks=2, pp_size=2, policy="best_effort")),
    # buffer_only's write path under write_through (buffer/backup_run.py)
    ("1x1 buffer_only write_through", dict(ranks=1, host_memory_mode="buffer_only", backup=True)),
    ("1x2 buffer_only write_through, host pool of 2 pages", dict(ranks=1, requests=2, host_memory_mode="buffer_only",
                                                                 backup=True, host_pages=2)),
    ("2x1 buffer_only write_through", dict(ranks=2, host_memory_mode="buffer_only", backup=True)),
    ("1x1 buffer_only write_through, 2 chunks, host pool of 3 pages",
     dict(ranks=1, host_memory_mode="buffer_only", backup=True, computed_chunks=2, host_pages=3)),
    # cache mode's write path under write_through (write_through/), the prefetch fetching beside it
    ("1x1 write_through", dict(ranks=1, backup=True)),
    ("1x2 write_through", dict(ranks=1, requests=2, backup=True)),
    ("2x1 write_through", dict(ranks=2, backup=True)),
    ("1x1 write_through timeout", dict(ranks=1, backup=True, policy="timeout")),
    # a second computed request splits the node while its write-through is pending (write_through/tree.py)
    ("1x1 write_through split", dict(ranks=1, backup=True, split_round=1)),
    ("2x1 write_through split, nothing stored", dict(ranks=2, backup=True, split_round=1, hits=(0, 0))),
    # write_back: the device eviction's walk writes the leaf back first (write_through/tree.py)
    ("1x1 write_back evicted", dict(ranks=1, backup=True, write_policy="write_back", evict_device_round=1)),
    ("2x1 write_back evicted", dict(ranks=2, backup=True, write_policy="write_back", evict_device_round=1)),
    # the load-back of a host hit: the node evicted from the device, its tokens requested again
    # (write_through/run.py), with the prefetch fetching its 2 pages beside it
    ("1x1 write_through loaded back", dict(ranks=1, backup=True, page_size=5, evict_device_round=2, load_back=True)),
    ("2x1 write_through loaded back", dict(ranks=2, backup=True, page_size=5, evict_device_round=2, load_back=True)),
    ("1x1 write_back loaded back", dict(ranks=1, backup=True, page_size=5, write_policy="write_back",
                                        evict_device_round=1, load_back=True)),
    # the tree's own file backend (stand_ins/file_storage.py): uncapped, and capped with its metadata cache
    ("1x1 storage=file", dict(ranks=1, storage="file")),
    ("2x1 storage=file", dict(ranks=2, storage="file")),
    ("2x1 write_through storage=file", dict(ranks=2, backup=True, storage="file")),
    ("1x1 write_through storage=file of 3 pages, metadata cache", dict(ranks=1, backup=True, storage="file", file_pages=3,
                                                                        file_metadata_cache=True)),
    # the PP tickets (buffer/tickets.py, 0.5.23's shape)
    ("PP=2 buffer_only tickets, 1 page", dict(ranks=2, pp_size=2, pages=1, host_memory_mode="buffer_only")),
    ("PP=2 buffer_only tickets, stage 1 cannot read page 1", dict(ranks=2, pp_size=2, host_memory_mode="buffer_only",
                                                                  failing=((), (1,)))),
    ("PP=2 buffer_only tickets, 1 page, aborted in round 1", dict(ranks=2, pp_size=2, pages=1,
                                                                  host_memory_mode="buffer_only", abort_round=1)),
    ("PP=2 buffer_only tickets, 1 page, stage 1's query raises", dict(ranks=2, pp_size=2, pages=1,
                                                                      host_memory_mode="buffer_only",
                                                                      query_raises=(False, True))),
    ("PP=2 buffer_only tickets, 1 page, aborted as issued", dict(ranks=2, pp_size=2, pages=1,
                                                                 host_memory_mode="buffer_only", abort_round=0)),
    # the cache's reset (cache_reset.py): flush_cache asked from round 1, let through by the tree's own
    # is_fully_idle once the cache is idle (flush_gate.py)
    ("1x1 cache reset asked after round 1's drain", dict(ranks=1, reset_round=1)),
    ("1x2 cache reset asked after round 1's drain, then a request arrives", dict(ranks=1, requests=2, reset_round=1,
                                                                                reset_arrival=True)),
    ("1x2 best_effort, cache reset asked after round 1's drain, then a request arrives",
     dict(ranks=1, requests=2, reset_round=1, reset_arrival=True, policy="best_effort")),
    ("1x2 buffer_only, 1 device page, cache reset asked after round 1's drain, then a request arrives",
     dict(ranks=1, requests=2, host_memory_mode="buffer_only", device_pages=1, reset_round=1, reset_arrival=True)),
    ("1x1 retries, cache reset asked after round 1's drain", dict(ranks=1, pages=1, retries=True, reset_round=1)),
    ("1x1 buffer_only write_through, cache reset asked mid-write",
     dict(ranks=1, host_memory_mode="buffer_only", backup=True, reset_round=2)),
    # the finding "a cache reset right after an abort strands a sync thread at TP 2" (a case of `sglang`
    # under the gate "any", cut at its two properties there)
    ("2x1 aborted in round 1, then a cache reset asked", dict(ranks=2, abort_round=1, reset_round=1)),
))

PACK = WorldPack(
    protocol=PROTOCOL,
    files=FILES + buffer.FILES,
    imports=imports,
    read=("managers/scheduler.py",),  # the retry world compiles its Scheduler methods (scheduler_methods.py)
    optional=buffer.FILES,  # only buffer_only runs them; without them its cases stop "not modelled"
    load=load,
    run=make_run,
    not_judged=not_judged,
    conformance=ConformanceKit(
        refinement=refinement, make_run=conformance.make_run, in_transit=conformance.in_transit,
        config_to_json=conformance.config_to_json, config_from_json=conformance.config_from_json,
        unsupported=conformance.unsupported, protocol_class=conformance.protocol_class, budgets=conformance.BUDGETS,
        budget_config=conformance.budget_config, release_batch_size=conformance.RELEASE_STORAGE_BATCH_SIZE),
    bench=BENCH,
    properties=judge.PROPERTIES,
    judge=judge.judge,
)
