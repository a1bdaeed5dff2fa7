"""One run of the tree's own code: per rank the real UnifiedRadixCache and HybridCacheController,
made with `__new__` and the attributes the prefetch path reads (CODE-PATH.md section 4), wired to
this run's stand-ins; the threads S (our scheduler loop, calling the real cache methods), P, IO and
Y (the real thread functions)."""

from __future__ import annotations

import functools
import inspect

from prefetch_check.model.code.rt import stubs
from prefetch_check.model.code.stand_ins.components import FullComponent
from prefetch_check.model.code.stand_ins.sync import Event, Lock
from prefetch_check.model.code.worlds.ack_drain import readmission, sidecars, stutter
from prefetch_check.model.code.worlds.common import (GATE, GATE_INPUTS, ROOT_NODE, Rank, WorldRun,  # noqa: F401 (conformance_run)
                                                     gate_side, scheduler_state)
from prefetch_check.model.code.worlds.deadlines import OwnDeadlineAdmits

# Below sglang/srt: the files this world runs as written (those a release lacks are stubbed like the rest).
COMPONENT_TYPES = "mem_cache/unified_cache/component_type.py"
CACHE, CONTROLLER = "mem_cache/unified_radix_cache.py", "managers/cache_controller.py"
HYBRID = "mem_cache/hybrid_cache/hybrid_cache_controller.py"
FILES = (COMPONENT_TYPES, "utils/poll_timer.py", "mem_cache/storage_prefetch.py", "mem_cache/hicache_storage.py",
         CONTROLLER, HYBRID, CACHE, "mem_cache/storage/file/lru_file_evictor.py")  # the last: storage="file"
S_QUEUES = ("prefetch_hit_queue", "ack_prefetch_queue", "host_mem_release_queue")  # what the drain pops
QUEUES = ("prefetch_queue", "prefetch_buffer", "prefetch_sync_queue", "backup_queue", "ack_backup_queue",
          "pp_prefetch_command_queue") + S_QUEUES


class Run(WorldRun):
    """Builds one run's world and ranks; `round_enabled` is the scheduler loop's gate."""

    PER_RANK = 4  # threads per rank, spawned in this order: S, P, IO, Y
    DRAINED = S_QUEUES  # the queues the scheduler's drain pops
    FOOTPRINTS = True  # the stand-ins and the operation's hooks record every shared object a step touches
    round_start = None  # the gate "any": the drained queues' puts when the last round started (enter_round)
    stuttered = False  # a round started in an earlier round start's state, only schedulers able to run
    # (stutter.py): no round starts after it
    held_at = None  # a round started in an earlier round start's state, another thread able to run: the
    # step it started at; no round starts until a thread other than the schedulers moves (stutter.py)
    DEADLINES = OwnDeadlineAdmits

    def __init__(self, modules: dict, config, holder, roots: tuple[str, ...]):
        self.schedulers: dict = {}  # rank -> its scheduler stand-in (retry world only)
        self.holder = holder
        holder.transfer_parts = {}  # transfer_hooks.py: with sidecar pools, each rank's transfers (sidecars.attach)
        super().__init__(modules, config, holder, roots)
        self.deadlines = self.DEADLINES(self) if config.explores_clock() else None  # timeout: firing is a choice
        # the drain's agreed counts never make a first-stage scheduler wait (stand_ins/queues.py)
        self.world.drain_may_block = lambda i: getattr(self.ranks[i].cache, "pp_rank", 0) != 0

    # ---- building
    def _build(self, i: int) -> Rank:
        cfg, w = self.config, self.world
        urc_cls, hcc_cls = self._cache_class(), self._controller_class()
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
        cc.prefetch_capacity_limit = (cfg.capacity_pages or cfg.needed_pages()) * page
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
        if tree.host_only is not None:  # host eviction frees through the FULL component (only then:
            # other paths iterate components, and with none they stay what they were)
            attrs["components"] = {self._component("FULL"): FullComponent(w, pool)}
        for k, v in attrs.items():
            setattr(cache, k, v)
        if cfg.sidecars:  # a hybrid model's sidecar pools (worlds/ack_drain/sidecars.py)
            sidecars.attach(self, i, cc, cache, pool, tree, self._component)
        retries = getattr(self.modules.get("mem_cache/storage_prefetch.py"), "StoragePrefetchRetries", None)
        if retries is not None:
            cache.storage_prefetch_retries = retries()
        by_handle = _takes_a_handle(urc_cls.prefetch_from_storage)
        handles = [stubs.CacheRequestHandle(f"req{q}", 0) if by_handle else f"req{q}" for q in range(cfg.requests)]
        return Rank(i, cache, cc, pool, tree, handles, list(range(cfg.requests)))

    def _cache_class(self):
        return self.modules[CACHE].UnifiedRadixCache

    def _controller_class(self):
        hcc_mod = self.modules.get(HYBRID) or self.modules[CONTROLLER]
        return getattr(hcc_mod, "HybridCacheController", None) or self.modules[CONTROLLER].HiCacheController

    def _component(self, name: str):
        ct = self.modules.get(COMPONENT_TYPES)
        return getattr(ct.ComponentType, name) if ct is not None else name

    def _hashes(self, key, prior):
        from prefetch_check.model.code.stand_ins.radix import storage_hashes
        return storage_hashes(key, prior, self.config.page_size)

    # ---- the threads
    def _spawn(self, rank: Rank) -> None:
        i, cc = rank.index, rank.cc
        # what the round gate reads of a scheduler changes only where it reaches or leaves the gate
        # (round_enabled asks for every scheduler at its gate unless a peer is a round ahead)
        self.baton.spawn(f"S{i}", i, "scheduler", lambda: self._scheduler(rank), touches=(scheduler_state(i),),
                         edge_touches=(gate_side(i),), edge_labels=frozenset((GATE,)))
        self.baton.spawn(f"P{i}", i, "prefetch", cc.prefetch_thread_func)
        self.baton.spawn(f"IO{i}", i, "io", cc.prefetch_io_aux_func)
        self.baton.spawn(f"Y{i}", i, "sync", cc.prefetch_sync_thread_func)

    def _scheduler(self, rank: Rank) -> None:
        """The scheduler's part of the path (not prefetch-path code: SCH's loop, reduced to its
        calls): issue every request, then rounds of check_hicache_events + check_prefetch_progress."""
        if self.config.retries:  # the tree's own Scheduler methods on a waiting-queue stand-in
            return readmission.drive(self, rank)
        cache = rank.cache
        for q in list(rank.waiting):  # every request but one arriving later (cache_reset.py)
            self.issue(rank, q)
        self.abort_at_issue(rank)
        reissued: set = set()
        while True:
            self.enter_round(rank)
            if self.deadlines is not None:
                self.deadlines.round_starts(rank)
            cache.check_hicache_events()
            self.after_events(rank)
            if rank.rounds == self.config.abort_round:
                self._abort_waiting(rank)
            for q in list(rank.waiting):
                self.world.draining.pop(rank.index, None)
                check = lambda q=q: cache.check_prefetch_progress(rank.handles[q])  # noqa: E731
                if check() if self.deadlines is None else self.deadlines.check(rank, q, rank.handles[q], check):
                    rank.waiting.remove(q)
                    rank.resolved[q] = self.held_tokens(rank, q)
                    rank.admitted_round[q] = rank.rounds
                    self.baton.observe(f"admitted req{q} with {rank.resolved[q]} tokens {self.HELD_WHERE}")
                    if self.config.reissue and q not in reissued:  # retracted: SCH re-adds it to the queue
                        reissued.add(q)
                        self.issue(rank, q)
                        rank.waiting.append(q)
            self.round_ends(rank)

    def issue(self, rank: Rank, q: int, device_tokens=None) -> None:
        """SCH's _prefetch_kvcache for request q: the tree's prefetch_from_storage (`device_tokens`:
        buffer_only's device match, buffer/harness.py)."""
        rank.cache.prefetch_from_storage(rank.handles[q], self.anchor(rank), self.tokens(q))

    def after_events(self, rank: Rank) -> None:
        """What the scheduler does after a round's check_hicache_events (cache mode's load-back:
        write_through/load_back.py; the cache's reset: cache_reset.py)."""

    def round_ends(self, rank: Rank) -> None:
        """What the scheduler does after a round's admissions (the cache's reset asked again:
        cache_reset.py)."""

    def round_begins(self, rank: Rank) -> None:
        """What happens outside the prefetch path as a round begins (buffer_only: device eviction)."""

    HELD_WHERE = "in the host tree"  # where an admitted request's tokens are (`held_tokens`)

    def held_tokens(self, rank: Rank, q: int) -> int:
        """What an admitted request holds: its tokens in the host tree."""
        return rank.tree.held.get(q, 0)

    def abort_at_issue(self, rank: Rank) -> None:
        """abort_round 0: the client's abort reaches the scheduler in the same receive as its request,
        or the next one, before any round (whatever the storage threads have done with it by then)."""
        if self.config.abort_round == 0:
            self._abort_waiting(rank)

    def _abort_waiting(self, rank: Rank) -> None:
        """SCH's abort path (tree_cache.finish -> release_aborted_request) for every waiting request."""
        for q in list(rank.waiting):
            self.happened("abort_round")
            self.world.draining.pop(rank.index, None)
            rank.cache.release_aborted_request(rank.handles[q])
            rank.waiting.remove(q)
            rank.aborted.append(q)
            self.baton.observe(f"aborted req{q}")

    def enter_round(self, rank: Rank) -> None:
        """The scheduler's round start: wait at the gate, then count the round. Under the gate "any"
        the first rank to start a round keeps how many items were ever put on the drained queues
        (`round_start`, the gate's memory)."""
        self.baton.point(GATE, lambda: self.round_enabled(rank) and not (self._leads(rank) and self._no_new_round()),
                         self.gate_guard())
        if self._leads(rank):
            stutter.check(self, rank)
            if self.any_gate():
                self.remember_round_start()
        rank.rounds += 1
        self.baton.observe(f"round {rank.rounds}")

    def scripted_rounds(self) -> tuple:
        """The rounds a scripted event of the configuration happens in (an abort, the device
        eviction, a split, a late arrival): each is unlike the rounds before it (stutter.py `horizon`)."""
        cfg = self.config
        return tuple(r for r in (cfg.abort_round, cfg.evict_device_round, cfg.split_round, cfg.arrival_round)
                     if r is not None)

    def _no_new_round(self) -> bool:
        """A spin was found (no round starts again) or a round that changed nothing holds the next."""
        return self.stuttered or stutter.holding(self)

    def scheduler_names(self) -> frozenset:
        """The schedulers' thread names (stutter.py tells their steps from the others')."""
        names = self.__dict__.get("_scheduler_names")
        if names is None:
            names = self._scheduler_names = frozenset(m.name for m in self.baton.threads if m.role == "scheduler")
        return names

    def _leads(self, rank: Rank) -> bool:
        """No peer is a round ahead of `rank`: after a spin (stutter.py) no new round starts, but a
        peer still joins the round the spin was found at (its collectives would wait for it)."""
        return rank.rounds == max(r.rounds for r in self.ranks)

    def remember_round_start(self) -> None:
        """The gate "any": what the gate remembers as the first scheduler starts a round."""
        self.round_start = self._drained_puts()

    def round_enabled(self, rank: Rank) -> bool:
        """A round starts when a peer is a round ahead (lockstep), or when every scheduler waits at
        its round start and there is something to drain on every rank (MIN > 0), or under the gate
        "any" (CodeConfig.round_gate; by default under best_effort) something queued on a drained queue of some rank (MAX > 0)
        with something put on one since the last round started, or a policy other than
        wait_complete still has a request to check. The gate "agreed" (MIN only), assumes
        the drain pops at most the MIN the ranks agree on: rounds with nothing agreed to drain are
        stuttering steps under wait_complete. "any" assumes only that a round with nothing put
        since the last one started does nothing new, so a drain popping more than the MIN (its
        local qsize, the MAX) runs its divergent round. Asking every scheduler to be at its round
        start makes this gate depend on no step but the other gates and the drained queues."""
        most = max(r.rounds for r in self.ranks)
        if rank.rounds < most:
            return True
        if not self._all_at_round_start():
            return False
        for q in S_QUEUES:
            if min(getattr(r.cc, q).peek_size() for r in self.drain_deciders()) > 0:
                return True
        if self.config.sidecars and sidecars.due(self):
            return True
        if self.any_gate() and self._queued_since_round_start():
            return True
        if self._admits_without_prefetch() and self._declined_on_every_rank():  # its next check admits it
            return True
        if self.config.retries and readmission.pending(self):
            return True
        if self.deadlines is not None:  # timeout: a round is due where a deadline fired or a check is new
            return self.deadlines.round_due()
        return self.config.policy != "wait_complete" and any(r.waiting for r in self.ranks)

    def _admits_without_prefetch(self) -> bool:
        """A request may wait with no prefetch in flight, which its next check admits (a deciding
        round the drained queues do not announce): with sidecar pools (declined or forfeited at
        issue) and after the cache's reset (cache_reset.py: the reset drops every prefetch)."""
        return bool(self.config.sidecars) or self.config.reset_round is not None

    def _declined_on_every_rank(self) -> bool:
        """A waiting request with no prefetch in flight on any rank (declined or forfeited at
        issue: 0.5.19 forfeits one whose component staging fails there). Asked only with sidecar
        pools: the HiRadixCache world's 2x1 search no longer finished in 60 s with it on for every
        configuration (not analysed; its figures stay those of main)."""
        return any(all(q in r.waiting and r.handles[q] not in r.cache.ongoing_prefetch for r in self.ranks)
                   for q in range(self.config.requests))

    def drain_deciders(self) -> list:
        """The ranks whose queue sizes the drain's MIN reduces (with PP stages: the first stage's)."""
        return self.ranks

    def any_gate(self) -> bool:
        """The gate "any" at more than one rank (at one, the MIN of the drain is the rank's own
        count: "agreed" is the same gate, and the world keeps its figures)."""
        return self.config.gate() == "any" and self.config.ranks > 1

    def _drained(self) -> list:
        """Every rank's queues the drain pops (with sidecar pools their release queues too)."""
        return [getattr(r.cc, q) for r in self.ranks for q in S_QUEUES] + (
            [q for r in self.ranks for q in sidecars.release_queues(r)] if self.config.sidecars else [])

    def _drained_puts(self) -> int:
        return sum(q.puts for q in self._drained())

    def _queued_since_round_start(self) -> bool:
        """The gate "any": something queued on some rank (MAX > 0), and something put on a drained
        queue since the last round started (each arrival allows one round; the pops of a round
        allow none, so a round that left its peer's item behind is not run again for it)."""
        queues = self._drained()
        start = self.round_start
        return any(q.peek_size() for q in queues) and (start is None or sum(q.puts for q in queues) > start)

    def _gate_key(self) -> tuple:
        """The gate's memory as the state key needs it: puts only add, so whether any came since the
        last round started is all the gate will ever ask of it (the queues' contents are in the
        world's snapshot)."""
        if not self.any_gate():
            return ()
        start = self.round_start
        return (start is None or self._drained_puts() > start,)

    def _gate_may_open(self, rank: Rank) -> bool:
        if self.any_gate():  # any rank's enqueue on a drained queue opens every gate
            return True
        declined_here = self._admits_without_prefetch() and any(rank.handles[q] not in rank.cache.ongoing_prefetch
                                                                for q in rank.waiting)
        return (super()._gate_may_open(rank) or (self.deadlines is not None and self.deadlines.may_open(rank))
                or (bool(self.config.sidecars) and sidecars.queued(rank)) or declined_here)

    def gate_guard(self) -> tuple:
        """The gate also reads the sidecar release queues (their MIN opens a round)."""
        return super().gate_guard() + (sidecars.guard(self) if self.config.sidecars else ())

    @staticmethod
    def rank_state(r: Rank) -> tuple:
        """A rank's loop state in the key, but its round count (stutter.py compares rounds by it)."""
        return (tuple(r.waiting), tuple(sorted(r.resolved.items())), len(r.cache.ongoing_prefetch),
                r.cc.prefetch_tokens_occupied)

    def key(self) -> tuple:
        ranks = tuple((r.rounds,) + self.rank_state(r) for r in self.ranks)
        key = (self.baton.threads_key(), self.world.snapshot(), ranks) + self._gate_key() + (
            ("stuttered",) if self.stuttered else ()) + (("held",) if stutter.holding(self) else ())
        return key if self.deadlines is None else key + (self.deadlines.key(),)


@functools.lru_cache(maxsize=None)
def _takes_a_handle(prefetch_from_storage) -> bool:
    """0.5.20 on: prefetch_from_storage takes a request handle, not a rid. Read once per tree
    (each run builds its ranks anew; the signature's parse was 7% of a run)."""
    params = inspect.signature(prefetch_from_storage).parameters
    return "request" in params or "handle" in params


class _Counter(dict):
    """_prefetch_outcome_stats: a dict of counters that start at 0."""

    def __missing__(self, key):
        return 0
