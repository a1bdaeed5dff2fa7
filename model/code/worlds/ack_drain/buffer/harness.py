"""A buffer_only run of the ack-drain world: per rank the same real cache, controller and threads
as `Run`, with the tree's real BufferModePipeline (constructed by its own __init__) as
`cache.buffer_pipeline`, the device tree and pool of this folder, and the scheduler loop's
admission of a staged prefetch as SCH's `_get_new_batch_prefill_raw` and schedule_policy's adder
make it: `check_prefetch_progress`, `pop_prefetch_loaded_span`, the pipeline's
`prepare_staged_prefetch`, then the cache's `init_load_back`; the load ack is consumed by the real
`loading_check` in a later round (`try_finish_load_back`)."""

from __future__ import annotations

from prefetch_check.model.code.rt import unset_fields
from prefetch_check.model.code.worlds.ack_drain.buffer.component import FullComponent
from prefetch_check.model.code.worlds.ack_drain.buffer.device_pool import DevicePool, ack_queue_name
from prefetch_check.model.code.worlds.ack_drain.buffer.device_tree import DeviceTree
from prefetch_check.model.code.worlds.ack_drain.buffer.admission import Key, Staging, load_back, surface_loaded
from prefetch_check.model.code.worlds.ack_drain.buffer.request import Req
from prefetch_check.model.code.worlds.ack_drain import readmission
from prefetch_check.model.code.worlds.ack_drain.harness import CACHE, CONTROLLER, Run
from prefetch_check.model.code.worlds.ack_drain.numbering import NumberedFromZero
from prefetch_check.model.code.worlds.common import ROOT_NODE, Rank
from prefetch_check.model.code.stand_ins.host_pool import HostPool
from prefetch_check.model.code.stand_ins.storage import StorageBackend

PIPELINE = "mem_cache/buffer_mode/pipeline.py"
BELIEFS = "mem_cache/buffer_mode/storage_existence_cache.py"
FILES = (BELIEFS, PIPELINE)  # loaded after the cache's files; a tree without them is stubbed like the rest


class Session:
    """The cache's streaming session: no session holds a row or a lock here."""

    def __init__(self):
        self.slots: dict = {}  # the cache's reset clears them (cache_reset.py)

    def try_match_prefix(self, params):
        return None

    def try_inc_lock_ref(self, node_id):
        return None

    def try_dec_lock_ref(self, node_id, params=None):
        return None


class _PipelinePart:
    """The pipeline's state for the run's state key."""

    def __init__(self, cache, world):
        self.cache, self.world = cache, world

    def snapshot(self) -> tuple:
        p = self.cache.buffer_pipeline
        if p is None:
            return ("pipeline", None)
        f = vars(p).get  # a field an edited reset no longer sets is the tree's own AttributeError, not ours
        return ("pipeline", tuple(sorted(h.rid for h in f("staged_prefetches", ()))),
                tuple(self.world.label(op) for op in f("pending_hit_allocs", ())),
                tuple(sorted((h.rid, lock.node_id, lock.tokens) for h, lock in f("anchor_locks", {}).items())),
                tuple(sorted(f("ongoing_buffer_load_back", ()))), f("anchor_locked_tokens_", 0))


class BufferRun(NumberedFromZero, Run):
    """`Run` with host_memory_mode buffer_only."""

    # besides the cache world's: the device tree and pool record their calls, the pipeline and the
    # storage beliefs their fields (hooks.watch, installed by pack.py, labelled in _build), and the
    # round gate's guard names the load ack lists it reads
    FOOTPRINTS = True
    TREE, STORAGE = DeviceTree, StorageBackend  # the write path's (backup_run.py) keep what it writes

    def __init__(self, modules: dict, config, holder, roots: tuple[str, ...]):
        # Every run numbers its operations from 0, as a fresh process does (numbering.py). The
        # pipeline makes its load-back ids from `op.id` (pipeline.py: -(operation_id) - 1), which the
        # state key holds (the pipeline's load-backs, the device pool's owners): a counter carried
        # over from the runs before made equal states of two runs differ (the DFS counted such copies).
        self.number_from_zero(modules)
        super().__init__(modules, config, holder, roots)
        self.settle_numbers()

    def _rank_world(self, i: int, pool_cls=HostPool) -> tuple:
        cfg = self.config
        # the write path's computed request takes device room too
        room = cfg.device_room if cfg.device_room is not None else 2 * cfg.pages * (cfg.requests + cfg.backup)
        return device_rank_world(self, i, pool_cls, self.STORAGE, self.TREE, room)

    def _build(self, i: int) -> Rank:
        rank = super()._build(i)
        cfg, cache, cc, tree = self.config, rank.cache, rank.cc, rank.tree
        beliefs_mod = self.modules.get(BELIEFS)
        full = FullComponent(self.world, self._component("FULL"))
        cache.host_memory_mode = cc.host_memory_mode = "buffer_only"
        fraction = getattr(self.modules[CONTROLLER], "HICACHE_LOAD_POOL_USAGE_FRACTION", 0.9)
        cc.prefetch_capacity_limit = int(fraction * rank.pool.size)  # CC 626-636, buffer_only
        cc.load = tree.device.load  # the H2D (device side): the ack lands on cc.ack_load_queue
        tree.device.cc_ack_queue = cc.ack_load_queue
        cache.components = {full.component_type: full}
        cache._components_tuple = (full,)
        cache.session = Session()
        cache.token_to_kv_pool_allocator = tree.device
        cache.is_swa_enabled = False
        cache.insert_session_id = None
        cache.storage_existence_cache = beliefs_mod.StorageExistenceCache() if beliefs_mod else None
        if cache.storage_existence_cache is not None:  # its fields' names in a step's footprint (hooks.watch)
            object.__setattr__(cache.storage_existence_cache, "_pc_label", f"r{i}.beliefs")
        self.world.register(_PipelinePart(cache, self.world))
        page = cfg.page_size
        for q in range(cfg.requests):
            n = cfg.device_pages * page
            tree.resident[q] = tree.device.take(n, f"req{q}", [f"q{q}p{p // page}" for p in range(n)])
        return rank

    def _scheduler(self, rank: Rank) -> None:
        """SCH's loop reduced to its calls, as `Run._scheduler`, with buffer mode's admission."""
        cache, cfg = rank.cache, self.config
        # constructed as init_hicache does, on the scheduler thread: a release whose __init__ reads
        # what this world does not model stops here, "not modelled", judging nothing
        if PIPELINE not in self.modules:
            raise self.world.not_modelled(f"host_memory_mode buffer_only: the tree has no {PIPELINE}")
        pipeline = self.modules[PIPELINE].BufferModePipeline.__new__(self.modules[PIPELINE].BufferModePipeline)
        object.__setattr__(pipeline, "_pc_label", f"r{rank.index}.pipeline")  # its fields in a step's footprint
        # init_hicache's cap: twice the device pool (a leak backstop, never binding on live content)
        pipeline.__init__(cache, None, write_backlog_cap=2 * len(rank.tree.device.owner))
        unset_fields.constructed(pipeline)
        cache.buffer_pipeline = pipeline
        rank.tree.pin_cap = lambda: pipeline.anchor_lock_cap_tokens  # judged at every pin (device_tree.py)
        if cfg.retries:  # the tree's own Scheduler methods issue, retry and admit (readmission.py)
            return readmission.drive(self, rank, Staging(self, rank))
        for q in list(rank.waiting):  # every request but one arriving later (cache_reset.py)
            self.issue(rank, q)
        self.abort_at_issue(rank)
        while True:
            self.enter_round(rank)
            self.round_begins(rank)
            if self.deadlines is not None:  # timeout: each check judged by the deadlines (worlds/deadlines.py)
                self.deadlines.round_starts(rank)
            cache.check_hicache_events()
            self.after_events(rank)
            if rank.rounds == cfg.abort_round:
                self._abort_waiting(rank)
            for q in list(rank.waiting):
                self.world.draining.pop(rank.index, None)
                if self._admit(rank, q):
                    rank.waiting.remove(q)
                    rank.admitted_round[q] = rank.rounds
                    self.baton.observe(f"admitted req{q} with {rank.resolved[q]} tokens {self.HELD_WHERE}")

    def issue(self, rank: Rank, q: int, device_tokens=None) -> None:
        """SCH's _prefetch_kvcache: the prefetch of what follows the device match (`device_tokens`,
        by default the configured device pages)."""
        d = self.config.device_pages * self.config.page_size if device_tokens is None else device_tokens
        tokens = self.tokens(q)
        self.issued(rank, q, rank.cache.prefetch_from_storage(rank.handles[q], ROOT_NODE, tokens[d:],
                                                              matched_prefix_tokens=tokens[:d]))

    def issued(self, rank: Rank, q: int, decision) -> None:
        """After the scheduler issued request q's prefetch (`decision`: what prefetch_from_storage
        returned): the PP tickets' relay binds it (tickets.py); nothing here."""

    def _admit(self, rank: Rank, q: int) -> bool:
        cache, handle = rank.cache, rank.handles[q]
        check = lambda: cache.check_prefetch_progress(handle)  # noqa: E731
        if not (check() if self.deadlines is None else self.deadlines.check(rank, q, handle, check)):
            return False
        tokens = self.tokens(q)
        matched, node = rank.tree._matched(Key(tokens))
        req = Req(self.world, handle, matched, node)
        surface_loaded(cache, req)
        if not cache.buffer_pipeline.prepare_staged_prefetch(req):
            # the staged span's anchor shrank: SCH's retry re-issues the prefetch from the new prefix
            # (with CodeConfig.retries the tree's own retry poll does: readmission.py)
            d = rank.tree._matched(Key(tokens))[0]
            cache.prefetch_from_storage(handle, ROOT_NODE, tokens[d:], matched_prefix_tokens=tokens[:d])
            return False
        if not load_back(cache, req):
            return False
        rank.resolved[q] = self.held_tokens(rank, q)
        return True

    def round_begins(self, rank: Rank) -> None:
        """In round `evict_device_round` another request's allocation evicts (evict_for_alloc)."""
        if rank.rounds == self.config.evict_device_round:
            self.happened("evict_device_round")
            rank.tree.evict_unpinned()

    HELD_WHERE = "on the device"

    def held_tokens(self, rank: Rank, q: int) -> int:
        """What an admitted request holds: its tokens on the device."""
        return len(rank.tree.resident.get(q, ()))

    def round_enabled(self, rank: Rank) -> bool:
        """`Run`'s gate, and a round also when every rank has a load ack to consume (MIN > 0), or a
        waiting request with no prefetch in flight (SGLang's loop would admit it at its next step;
        under wait_complete `Run`'s gate waits only for what is queued)."""
        if super().round_enabled(rank):
            return True
        if not self._all_at_round_start():
            return False
        if min(len(r.cc.ack_load_queue) for r in self.ranks) > 0:
            return True
        return all(any(self._idle(r, q) for q in r.waiting) for r in self.ranks)

    def _idle(self, rank: Rank, q: int) -> bool:
        """A waiting request with no prefetch in flight: SGLang's loop would admit it at its next step."""
        return rank.handles[q] not in rank.cache.ongoing_prefetch

    def gate_guard(self) -> tuple:
        """`Run`'s, and every rank's load ack list (the gate reads its length)."""
        guard = self.__dict__.get("_buffer_gate_guard")
        if guard is None:
            guard = self._buffer_gate_guard = super().gate_guard() + tuple(ack_queue_name(r.index) for r in self.ranks)
        return guard

    def _gate_may_open(self, rank: Rank) -> bool:
        return (super()._gate_may_open(rank) or bool(rank.cc.ack_load_queue)
                or any(self._idle(rank, q) for q in rank.waiting))


def device_rank_world(run, i: int, pool_cls, storage_cls, tree_cls, room_pages: int) -> tuple:
    """Rank i's host pool, tree stand-in with a device KV pool of `room_pages` pages, and storage
    backend (a world with a device side: buffer_only, cache mode's write path)."""
    cfg, page = run.config, run.config.page_size
    pool = pool_cls(run.world, i, cfg.pool_pages() * page, page)
    storage = run.storage_backend(i, pool, storage_cls)
    device = DevicePool(run.world, i, room_pages * page, pool, lambda q, pos: f"q{q}p{pos // page}")
    return pool, tree_cls(run.world, i, pool, page, device), storage
