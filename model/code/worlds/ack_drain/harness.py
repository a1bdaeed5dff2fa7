"""One run of the tree's own code: per rank the real UnifiedRadixCache and HybridCacheController,
made with `__new__` and the attributes the prefetch path reads (CODE-PATH.md section 4), wired to
this run's stand-ins; the threads S (our scheduler loop, calling the real cache methods), P, IO and
Y (the real thread functions)."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field

from prefetch_check.model.code.rt import loader, stubs
from prefetch_check.model.code.config import CodeConfig
from prefetch_check.model.code.rt.baton import Baton
from prefetch_check.model.code.stand_ins.clock import Clock, make_time
from prefetch_check.model.code.stand_ins.collectives import Collectives, Group
from prefetch_check.model.code.stand_ins.context import World
from prefetch_check.model.code.stand_ins.host_pool import HostPool
from prefetch_check.model.code.stand_ins.queues import Empty, Queue, QueueFactory
from prefetch_check.model.code.stand_ins.storage import StorageBackend
from prefetch_check.model.code.stand_ins.sync import Event, Lock, make_threading
from prefetch_check.model.code.stand_ins.tree import TreeCore

ROOT_NODE = 0
GATE = "scheduler round"
S_QUEUES = ("prefetch_hit_queue", "ack_prefetch_queue", "host_mem_release_queue")  # what the drain pops
QUEUES = ("prefetch_queue", "prefetch_buffer", "prefetch_sync_queue", "backup_queue", "ack_backup_queue",
          "pp_prefetch_command_queue") + S_QUEUES


@dataclass
class Rank:
    """The objects of one rank, and what its scheduler loop saw."""

    index: int
    cache: object
    cc: object
    pool: HostPool
    tree: TreeCore
    handles: list
    waiting: list
    resolved: dict = field(default_factory=dict)  # request -> tokens its tree held when it was admitted
    admitted_round: dict = field(default_factory=dict)  # request -> the round check_prefetch_progress said True
    rounds: int = 0


class Run:
    """Builds one run's world and ranks; `rounds_enabled` is the scheduler loop's gate."""

    PER_RANK = 4  # threads per rank, spawned in this order: S, P, IO, Y
    DRAINED = S_QUEUES  # the queues the scheduler's drain pops
    GROUP = Group  # the collective group stand-in

    def __init__(self, modules: dict, config: CodeConfig, holder, roots: tuple[str, ...]):
        self.config, self.modules = config, modules
        self.baton = Baton(roots)
        self.world = World(self.baton)
        holder.world = self.world
        holder.collectives = Collectives(self.world, lambda: self.baton.current().rank)
        not_modelled = stubs.not_modelled_factory(roots)
        self.clock = Clock(self.baton)  # moves only where the conformance check fires it (timeout policy)
        loader.bind_world(modules, QueueFactory(self.world), Empty, make_threading(self.world, not_modelled),
                          make_time(not_modelled, clock=self.clock))
        r = config.ranks
        everyone = tuple(range(r))
        self.groups = {name: self.GROUP(self.world, name, everyone) for name in ("S-tp", "P-hits", "Y-completion")}
        self.ranks = [self._build(i) for i in range(r)]
        for rank in self.ranks:
            self._spawn(rank)

    # ---- building
    def _build(self, i: int) -> Rank:
        cfg, w = self.config, self.world
        urc_cls = self.modules[loader.CACHE].UnifiedRadixCache
        hcc_mod = self.modules.get(loader.HYBRID) or self.modules[loader.CONTROLLER]
        hcc_cls = getattr(hcc_mod, "HybridCacheController", None) or self.modules[loader.CONTROLLER].HiCacheController
        page = cfg.page_size
        pool, tree, storage = self._rank_world(i)
        multi = cfg.ranks > 1

        cc = hcc_cls.__new__(hcc_cls)
        self._queues(cc, i, QUEUES)
        cc.extra_host_mem_release_queues = {}
        cc.storage_stop_event = Event(w, f"r{i}.stop")
        cc.storage_backend = storage
        cc.storage_host_pool = pool
        cc.mem_pool_host = pool
        cc.page_size = page
        cc.prefetch_hits_sync_groups = [self.groups["P-hits"]] if multi else []
        cc.prefetch_completion_sync_groups = [self.groups["Y-completion"]] if multi else []
        cc.host_memory_mode = "cache"
        cc.prefetch_threshold = max(cfg.threshold_pages * page, page)
        # room for every request's tokens: never rate-limited, even with a short pool (host_pages)
        cc.prefetch_capacity_limit = cfg.needed_pages() * page
        cc.prefetch_tokens_occupied = 0
        cc.host_write_staged_tokens_fn = None
        cc.pp_prefetch_command_group = None
        cc.pp_prefetch_decisions, cc.pp_prefetch_states = {}, {}
        cc.pp_prefetch_state_lock = Lock(w, f"r{i}.pp_state_lock")
        cc.write_queue, cc.ack_write_queue, cc.ack_load_queue = [], [], []
        cc.enable_storage = True
        cc.get_hash_str = lambda key, prior=None, page_size=None: self._hashes(key, prior)  # 0.5.19 binds it at attach
        cc.page_get_func = cc._generic_page_get
        cc.tp_world_size = cfg.ranks
        cc.is_kv_sharded = False

        cache = urc_cls.__new__(urc_cls)
        cache.tree_core = tree  # first: page_size and enable_storage forward to it
        attrs = dict(
            disable=False, cache_controller=cc, tree_components=(self._component("FULL"),), components={},
            sidecar_pool_specs=[], host_memory_mode="cache", buffer_pipeline=None, linker=None,
            prefetch_threshold=cfg.threshold_pages * page, prefetch_stop_policy=cfg.policy,
            prefetch_timeout_base=1.0, prefetch_timeout_per_page=page / 1024 * 0.25,
            hicache_storage_pass_prefix_keys=False, ongoing_prefetch={}, _storage_prefetch_wait={},
            _storage_prefetch_hit_remaining_by_reqid={}, prefetch_loaded_tokens_by_reqid={},
            prefetch_loaded_storage_start_by_reqid={}, ongoing_backup={}, ongoing_write_through={},
            ongoing_load_back={}, storage_existence_cache=None, enable_storage_metrics=False,
            storage_metrics_collector=None, metrics_collector=None, pp_rank=0, pp_size=1, pp_group=None,
            tp_group=self.groups["S-tp"] if multi else None, attn_cp_group=None, attn_tp_group=None,
            tp_world_size=cfg.ranks, work_list=[], _storage_prefetch_missed_rids=set(),
            _prefetch_outcome_stats=_Counter(), host_pool_group=None, tp_rank=i)
        for k, v in attrs.items():
            setattr(cache, k, v)
        retries = getattr(self.modules.get("mem_cache/storage_prefetch.py"), "StoragePrefetchRetries", None)
        if retries is not None:
            cache.storage_prefetch_retries = retries()
        by_handle = "request" in inspect.signature(urc_cls.prefetch_from_storage).parameters
        handles = [stubs.CacheRequestHandle(f"req{q}", 0) if by_handle else f"req{q}" for q in range(cfg.requests)]
        return Rank(i, cache, cc, pool, tree, handles, list(range(cfg.requests)))

    def _rank_world(self, i: int, pool_cls=HostPool) -> tuple:
        """Rank i's host pool, host tree and storage backend, as the configuration says."""
        cfg, page = self.config, self.config.page_size
        pool = pool_cls(self.world, i, cfg.pool_pages() * page, page)
        storage = StorageBackend(self.world, i, cfg.hits_of(i), cfg.failing_of(i), cfg.raises_of(i), page,
                                 cfg.raising_reads_of(i))
        return pool, TreeCore(self.world, i, pool, page), storage

    def _queues(self, cc, i: int, names: tuple[str, ...]) -> None:
        for q in names:
            setattr(cc, q, Queue(self.world, f"r{i}.{q}"))

    def _component(self, name: str):
        ct = self.modules.get(loader.REAL[0])
        return getattr(ct.ComponentType, name) if ct is not None else name

    def _hashes(self, key, prior):
        from prefetch_check.model.code.stand_ins.radix import storage_hashes
        return storage_hashes(key, prior, self.config.page_size)

    def tokens(self, q: int) -> list[int]:
        return [q * 1000 + t for t in range(self.config.pages * self.config.page_size)]

    # ---- the threads
    def _spawn(self, rank: Rank) -> None:
        i, cc = rank.index, rank.cc
        self.baton.spawn(f"S{i}", i, "scheduler", lambda: self._scheduler(rank))
        self.baton.spawn(f"P{i}", i, "prefetch", cc.prefetch_thread_func)
        self.baton.spawn(f"IO{i}", i, "io", cc.prefetch_io_aux_func)
        self.baton.spawn(f"Y{i}", i, "sync", cc.prefetch_sync_thread_func)

    def _scheduler(self, rank: Rank) -> None:
        """The scheduler's part of the path (not prefetch-path code: SCH's loop, reduced to its
        calls): issue every request, then rounds of check_hicache_events + check_prefetch_progress."""
        cache = rank.cache
        for q, handle in enumerate(rank.handles):
            cache.prefetch_from_storage(handle, ROOT_NODE, self.tokens(q))
        reissued: set = set()
        while True:
            self.baton.point(GATE, lambda: self.round_enabled(rank))
            rank.rounds += 1
            self.baton.observe(f"round {rank.rounds}")
            cache.check_hicache_events()
            if rank.rounds == self.config.abort_round:  # SCH's abort path: tree_cache.finish -> release_aborted_request
                for q in list(rank.waiting):
                    self.world.draining.pop(rank.index, None)
                    cache.release_aborted_request(rank.handles[q])
                    rank.waiting.remove(q)
                    self.baton.observe(f"aborted req{q}")
            for q in list(rank.waiting):
                self.world.draining.pop(rank.index, None)
                if cache.check_prefetch_progress(rank.handles[q]):
                    rank.waiting.remove(q)
                    rank.resolved[q] = rank.tree.held.get(q, 0)
                    rank.admitted_round[q] = rank.rounds
                    self.baton.observe(f"admitted req{q} with {rank.resolved[q]} tokens in the host tree")
                    if self.config.reissue and q not in reissued:  # retracted: SCH re-adds it to the queue
                        reissued.add(q)
                        cache.prefetch_from_storage(rank.handles[q], ROOT_NODE, self.tokens(q))
                        rank.waiting.append(q)

    def round_enabled(self, rank: Rank) -> bool:
        """A round starts when a peer is a round ahead (lockstep), or when every scheduler waits at
        its round start and there is something to drain on every rank (MIN > 0), or a policy other
        than wait_complete still has a request to check. Rounds with nothing to drain are stuttering
        steps under wait_complete; asking every scheduler to be at its round start makes this gate
        depend on no step but the other gates (rank_ample relies on it)."""
        most = max(r.rounds for r in self.ranks)
        if rank.rounds < most:
            return True
        if any(r.rounds < most or not self._at_gate(r) for r in self.ranks):
            return False
        for q in S_QUEUES:
            if min(getattr(r.cc, q).peek_size() for r in self.ranks) > 0:
                return True
        return self.config.policy != "wait_complete" and any(r.waiting for r in self.ranks)

    def _at_gate(self, rank: Rank) -> bool:
        m = self.baton.threads[self.PER_RANK * rank.index]
        return m.status == "parked" and m.point.label == GATE

    def rank_ample(self) -> list[str]:
        """A persistent set: the enabled threads of the first rank whose next steps no other rank
        can interfere with. Ranks share only collectives and the round gate; a step of another rank
        can reach this rank only by enabling one of its threads parked at a collective's leave, or
        its scheduler parked at the round gate while it has something queued to drain. A rank with
        neither qualifies; when none does, every enabled thread is explored."""
        enabled = self.baton.enabled()
        for rank in self.ranks:
            mine = [m for m in enabled if m.rank == rank.index]
            if not mine:
                continue
            ok = True
            for m in self.baton.threads[self.PER_RANK * rank.index: self.PER_RANK * (rank.index + 1)]:
                if m.status != "parked" or m in mine:
                    continue
                if "leave" in m.point.label:
                    ok = False
                elif m.point.label == GATE and self._gate_may_open(rank):
                    ok = False
            if ok:
                return [m.name for m in mine]
        return [m.name for m in enabled]

    def _gate_may_open(self, rank: Rank) -> bool:
        """Whether another rank's steps can open this rank's closed round gate (round_enabled):
        only with something queued here for the drain's MIN."""
        return any(getattr(rank.cc, q).peek_size() for q in self.DRAINED)

    def key(self) -> tuple:
        ranks = tuple((r.rounds, tuple(r.waiting), tuple(sorted(r.resolved.items())),
                       len(r.cache.ongoing_prefetch), r.cc.prefetch_tokens_occupied) for r in self.ranks)
        return (self.baton.threads_key(), self.world.snapshot(), ranks)


class _Counter(dict):
    """_prefetch_outcome_stats: a dict of counters that start at 0."""

    def __missing__(self, key):
        return 0
