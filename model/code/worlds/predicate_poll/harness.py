"""One run of a predicate-poll tree's own code (0.5.1-0.5.18): per rank the real HiRadixCache and
HiCacheController, made with `__new__` and the attributes their prefetch path reads, wired to this
run's stand-ins; the threads S (our scheduler loop calling the real check_hicache_events and
check_prefetch_progress), P (the real prefetch_thread_func) and IO (the thread P starts itself:
the executor's IO thread runs the target P hands to threading.Thread).

What differs from the ack-drain world (worlds/ack_drain/harness.py): the scheduler polls a predicate, so a round
may start whenever a request waits (a round that changes nothing leads back to a state already
seen); a state where only the schedulers can move and a whole round of them changes nothing is a
request waiting forever, judged as the end of the run (`closes_cycle`).

Under the timeout policy each rank's deadline fires as a choice of the search (worlds/deadlines.py):
the tree's own deadline code runs as written against the rank's clock (start_time read at issue,
the timeout computed by `is_prefetch_timeout` or inline, the ranks' MAX vote)."""

from __future__ import annotations

from prefetch_check.model.code.rt import loader, stubs
from prefetch_check.model.code.stand_ins.clock import make_time
from prefetch_check.model.code.stand_ins.queues import Empty
from prefetch_check.model.code.stand_ins.radix import RadixKey
from prefetch_check.model.code.stand_ins.sync import Event
from prefetch_check.model.code.stand_ins.tree import TreeCore
from prefetch_check.model.code.worlds.common import GATE, GATE_INPUTS, ROOT_NODE, Rank, WorldRun
from prefetch_check.model.code.worlds.deadlines import EveryDeadlineAdmits
from prefetch_check.model.code.worlds.predicate_poll.stand_ins import (EmptyAcks, HostNode, PollHostPool, RankQueueFactory,
                                                                      RelativeGroup, Started, make_poll_threading,
                                                                      page_hashes)

# Below sglang/srt: the files this world runs as written, HiRadixCache and HiCacheController.
HIRADIX, CONTROLLER = "mem_cache/hiradix_cache.py", "managers/cache_controller.py"
STORAGE = "mem_cache/hicache_storage.py"  # PrefetchTimeoutConfig (0.5.12 on)
FILES = (STORAGE, CONTROLLER, HIRADIX)
# queues the controller's __init__ / attach creates (the prefetch thread makes prefetch_buffer itself)
QUEUES = ("prefetch_queue", "prefetch_revoke_queue", "prefetch_hit_queue", "backup_queue", "ack_backup_queue",
          "host_mem_release_queue")
DRAINED = ("prefetch_revoke_queue", "prefetch_hit_queue", "ack_backup_queue", "host_mem_release_queue")


class PollRun(WorldRun):
    PER_RANK = 3  # S, P, IO
    DRAINED = DRAINED
    GROUP = RelativeGroup
    # the stand-ins, the operation's hooks and the watched cache and controller (pack.py) record
    # every shared object a step touches; this world's own: the host node, the started targets,
    # the groups' rebase, the acceptance probe's reads (the revoke queue, the clock)
    FOOTPRINTS = True

    def __init__(self, modules: dict, config, holder, roots: tuple[str, ...]):
        if config.reissue or config.abort_round is not None:
            raise ValueError("the poll world runs no re-issued or aborted requests yet")
        self.started = None
        holder.run = self
        super().__init__(modules, config, holder, roots)
        not_modelled = stubs.not_modelled_factory(roots)
        loader.bind_world(modules, RankQueueFactory(self.world), Empty,
                          make_poll_threading(self.world, self.started, not_modelled),
                          make_time(not_modelled, clock=self.clock))
        self.only_schedulers: set = set()  # keys since a thread other than the schedulers could last move
        self.baton.settled = self.settled
        self.deadlines = EveryDeadlineAdmits(self) if config.explores_clock() else None  # timeout: firing is a choice

    # ---- building
    def _build(self, i: int) -> Rank:
        cfg, w = self.config, self.world
        if self.started is None:
            self.started = Started(w)
            self.groups["IO-tp"] = RelativeGroup(w, "IO-tp", tuple(range(cfg.ranks)))
        cache_cls = self.modules[HIRADIX].HiRadixCache
        cc_cls = self.modules[CONTROLLER].HiCacheController
        page = cfg.page_size
        pool, tree, storage = self._rank_world(i, PollHostPool)
        multi = cfg.ranks > 1

        cc = cc_cls.__new__(cc_cls)
        object.__setattr__(cc, "_pc_label", f"r{i}.cc")  # its fields' names in a step's footprint (hooks.watch)
        self._queues(cc, i, QUEUES)
        stop = Event(w, f"r{i}.stop")
        attrs = dict(
            stop_event=stop, storage_stop_event=stop, storage_backend=storage, storage_backend_type="file",
            mem_pool_host=pool, storage_host_pool=pool, page_size=page, enable_storage=True,
            prefetch_threshold=max(cfg.threshold_pages * page, page), prefetch_capacity_limit=pool.size + 1,  # never rate-limited
            prefetch_tokens_occupied=0, tp_world_size=cfg.ranks, tp_size=cfg.ranks, tp_rank=i,
            prefetch_tp_group=self.groups["P-hits"] if multi else None,
            prefetch_io_tp_group=self.groups["IO-tp"] if multi else None, backup_tp_group=None,
            prefetch_sync_groups=[self.groups["P-hits"]] if multi else [],
            tp_group=self.groups["S-tp"] if multi else None, attn_cp_group=None, attn_tp_group=None, pp_group=None,
            get_hash_str=page_hashes(page), storage_batch_size=128, is_mla=False, has_draft=False,
            draft_page_get_func=None, mem_pool_host_draft=None, enable_storage_metrics=False, io_backend="",
            write_queue=EmptyAcks(), load_queue=EmptyAcks(), ack_write_queue=EmptyAcks(), ack_load_queue=EmptyAcks())
        for k, v in attrs.items():
            setattr(cc, k, v)
        if "_generic_page_get" in dir(cc_cls):
            cc.page_get_func = cc._generic_page_get
        cc.batch_exists_func = storage.batch_exists  # 0.5.2's attach binds the backend's own

        cache = cache_cls.__new__(cache_cls)
        object.__setattr__(cache, "_pc_label", f"r{i}.cache")
        node = HostNode(w, i)
        attrs = dict(
            cache_controller=cc, page_size=page, tp_group=self.groups["S-tp"] if multi else None,
            tp_world_size=cfg.ranks, enable_storage=True, prefetch_threshold=cfg.threshold_pages * page,
            prefetch_stop_policy=cfg.policy, ongoing_write_through={}, ongoing_load_back={},
            ongoing_prefetch={}, ongoing_backup={}, enable_storage_metrics=False, metrics_collector=None,
            storage_metrics_collector=None, prefetch_loaded_tokens_by_reqid={}, attn_cp_group=None,
            attn_tp_group=None, pp_rank=0, pp_size=1, pp_group=None, work_list=[], is_eagle=False, disable=False,
            device="cpu", evictable_host_leaves=set(), tp_rank=i, root_node=node, hicache_storage_pass_prefix_keys=False,
            _insert_helper_host=self._inserter(tree), **self._timeout_knobs())
        for k, v in attrs.items():
            try:
                setattr(cache, k, v)
            except AttributeError:  # a property of that release (it computes the value itself)
                pass
        if "_prefetch_timeout_check_linear_func" in dir(cache_cls):  # 0.5.3 on: __init__ binds the deadline rule
            cache.is_prefetch_timeout = cache._prefetch_timeout_check_linear_func
        rank = Rank(i, cache, cc, pool, tree, [f"req{q}" for q in range(cfg.requests)], list(range(cfg.requests)))
        rank.node = node
        return rank

    def _timeout_knobs(self) -> dict:
        """The timeout's length as each release's deadline reads it, at upstream's defaults: 0.5.1-0.5.2
        `prefetch_timeout` (3 s), 0.5.3-0.5.11 `prefetch_timeout_base` + `prefetch_timeout_per_page`,
        0.5.12 on the tree's own PrefetchTimeoutConfig(). A fired clock passes any of them."""
        page = self.config.page_size
        knobs = dict(prefetch_timeout=3, prefetch_timeout_base=1.0, prefetch_timeout_per_page=page / 1024 * 0.25)
        timeout_config = getattr(self.modules[STORAGE], "PrefetchTimeoutConfig", None)
        if timeout_config is not None:
            knobs["prefetch_timeout_config"] = timeout_config()
        return knobs

    @staticmethod
    def _inserter(tree: TreeCore):
        """`_insert_helper_host`, the host radix tree's insert, stands in: the tree takes the slots
        and judges each page was written (world/tree.py)."""

        def insert(node, key, host_value, hash_value=None, *args, **kwargs):
            key = key if isinstance(key, RadixKey) else RadixKey(list(key))
            return tree.insert_host(ROOT_NODE, key, host_value, hash_value).prefix_len

        return insert

    # ---- the threads
    def _spawn(self, rank: Rank) -> None:
        i, cc = rank.index, rank.cc
        self.baton.spawn(f"S{i}", i, "scheduler", lambda: self._scheduler(rank), touches=(GATE_INPUTS,))
        self.baton.spawn(f"P{i}", i, "prefetch", cc.prefetch_thread_func)
        self.baton.spawn(f"IO{i}", i, "io", lambda: self._started_thread(i))

    def _started_thread(self, i: int) -> None:
        self.baton.point("wait until the prefetch thread starts this thread", lambda: bool(self.started.targets.get(i)),
                         (self.started.name(i),))
        self.baton.touch(self.started.name(i), write=False)
        self.started.targets[i][0]()

    def _scheduler(self, rank: Rank) -> None:
        """SCH's loop reduced to its calls: issue every request, then rounds of check_hicache_events and
        check_prefetch_progress for each waiting request. At the round start the loop's state is all
        in `rank`, so what the thread observed before is forgotten there (a round that changes nothing
        comes back to the same state)."""
        cache = rank.cache
        for q, rid in enumerate(rank.handles):
            issue = lambda q=q, rid=rid: cache.prefetch_from_storage(rid, rank.node, self.tokens(q))  # noqa: E731
            issue() if self.deadlines is None else self.deadlines.issue(rank, q, issue)
        while True:
            self.baton.forget()
            for group in self.groups.values():
                group.rebase()
            self.baton.point(GATE, lambda: self.round_enabled(rank), self.gate_guard())
            rank.rounds += 1
            if self.deadlines is not None:
                self.deadlines.round_starts(rank)
            cache.check_hicache_events()
            for q in list(rank.waiting):
                check = lambda q=q: cache.check_prefetch_progress(rank.handles[q])  # noqa: E731
                if check() if self.deadlines is None else self.deadlines.check(rank, q, rank.handles[q], check):
                    rank.waiting.remove(q)
                    rank.resolved[q] = rank.tree.held.get(q, 0)
                    rank.admitted_round[q] = rank.rounds
                    self.baton.observe(f"admitted req{q} with {rank.resolved[q]} tokens in the host tree")

    def round_enabled(self, rank: Rank) -> bool:
        """Lockstep as in the ack-drain world; once every scheduler is at its round start, a round
        runs while a request waits (its check polls the predicate) or while every rank has something
        queued for the drain (it pops the MIN over the ranks)."""
        most = max(r.rounds for r in self.ranks)
        if rank.rounds < most:
            return True
        if not self._all_at_round_start():
            return False
        if any(r.waiting for r in self.ranks):
            return True
        return any(min(getattr(r.cc, q).peek_size() for r in self.ranks) > 0 for q in self.DRAINED)

    def ample(self) -> list[str]:
        """A thread about to arrive at or leave a collective goes alone: that step touches only its
        group (arrivals at one call commute; a leave is enabled once all arrived and reads only
        their values), so it is independent of every other thread's next step. Otherwise the
        rank-level persistent set of the ack-drain world."""
        for m in self.baton.enabled():
            if m.point.label.startswith("all_reduce("):
                return [m.name]
        return super().ample()

    def _gate_may_open(self, rank: Rank) -> bool:
        """Here a waiting request on any rank opens the gate too, once every scheduler is there."""
        return any(r.waiting for r in self.ranks) or super()._gate_may_open(rank)

    def settled(self) -> tuple[tuple, tuple]:
        """What a step's end reads besides its own accesses (rt/baton.py): a step after which only
        the schedulers can move reads the gate's inputs, which every scheduler step writes. The run's
        end at a polling cycle (`closes_cycle`) is decided by the scheduler steps from such a state
        on, and reads that no other thread can move: so a scheduler that sleeps (strategies/sleep.py)
        wakes where the others stop, and the cycle is run (the cycle proviso of partial-order
        reduction; without it the sleep sets cut every run that closed 0.5.18's no-hits cycle)."""
        if any(m.role != "scheduler" for m in self.baton.enabled()):
            return (), ()
        return (GATE_INPUTS,), ()

    def closes_cycle(self, key: bytes) -> bool:
        """True at a state seen before in this run since the last moment a thread other than the
        schedulers could move: only the schedulers moved since, and nothing changed, so they poll
        round after round forever (a request waiting forever is judged at this end)."""
        if any(m.role != "scheduler" for m in self.baton.enabled()):
            self.only_schedulers.clear()
            return False
        if key in self.only_schedulers:
            return True
        self.only_schedulers.add(key)
        return False

    def key(self) -> tuple:
        """What determines the future, with nothing that does not: the threads (status, point,
        what each observed; the scheduler's observations since its round start), their positions,
        the stand-ins' contents in a canonical order, and the ranks' loop state with round counts
        relative to the rank furthest behind. Sound because nothing the code under test can read
        is left out or made equal: the stand-ins' names (per rank, in that rank's creation order:
        stand_ins.py's rank_name), the order of their snapshots and the collective call numbers the
        threads observe (counted from the rank behind: RelativeGroup.rebase) are the executor's own
        bookkeeping, which the code never sees; two runs that differ only in them have the same
        next steps, the same findings and the same ends."""
        base = min(r.rounds for r in self.ranks)
        ranks = tuple((r.rounds - base, tuple(r.waiting), tuple(sorted(r.resolved.items())),
                       len(r.cache.ongoing_prefetch), r.cc.prefetch_tokens_occupied) for r in self.ranks)
        key = (self.baton.threads_key(), self._world(), ranks, self._admissions(base))
        return key if self.deadlines is None else key + (self.deadlines.key(),)

    def _world(self) -> tuple:
        """The stand-ins' contents in a canonical order: each part's snapshot names its part (rank
        and name), and parts register as they are made, so the ranks' threads making theirs in
        another order would otherwise give the same state another key."""
        return tuple(sorted((p.snapshot() for p in self.world.parts), key=repr))

    def _admissions(self, base: int) -> tuple:
        """Per request, the rounds the ranks admitted it in, relative to the first (and whether that
        round is still the current one): what tp_agreement reads, without the absolute count."""
        out = []
        for q in range(self.config.requests):
            got = [r.admitted_round.get(q) for r in self.ranks]
            done = [a for a in got if a is not None]
            if not done:
                out.append(None)
                continue
            first = min(done)
            out.append((tuple(None if a is None else a - first for a in got), max(first - base, -1)))
        return tuple(out)
