"""One poll conformance run of a tree's code (0.5.1-0.5.18): the poll world's run
(worlds/predicate_poll/harness.py's PollRun) with the model's own scheduler loop (model/protocols/poll/scheduler.py:
issue in order, then rounds of the drain and a walk that checks every request not yet ready),
calling the tree's check_hicache_events and check_prefetch_progress, with a scheduling point
where each scheduler step of the model ends, and what the refinement mapping reads recorded
(model/protocols/poll/refinement.py): the scheduler's place and how far its check got, the
operation each storage thread holds, the pages written, each operation's allocation."""

from __future__ import annotations

from prefetch_check.model.code.conformance import recorders
from prefetch_check.model.code.worlds.predicate_poll.harness import PollRun
from prefetch_check.model.code.stand_ins.queues import QueueFactory
from prefetch_check.model.protocols.poll.config import Config
from prefetch_check.model.protocols.poll import refinement
from prefetch_check.model.protocols.poll.refinement import CODE_QUEUES


class ConformPollRun(PollRun):
    """The poll world's run with the model's scheduler loop and the mapping's recorders."""

    def __init__(self, modules, model_config: Config, config, holder, roots):
        self.model_config = model_config
        super().__init__(modules, config, holder, roots)
        factory = _RecordingQueues(self.world, self)
        for mod in modules.values():  # the prefetch thread makes prefetch_buffer itself: record it
            if "Queue" in mod.__dict__:
                mod.__dict__["Queue"] = factory
        drained = tuple(CODE_QUEUES[name] for name in model_config.drain_queues())
        for rank in self.ranks:
            rank.pos, rank.phase, rank.ready = ("issue", 0), "", [False] * config.requests
            rank.holding, rank.writes, rank.releasing, rank.allocated = {}, {}, set(), {}
            rank.in_drain, rank.sizes_read, rank.round_start = False, set(), 0
            rank.run_hit_alloc = model_config.alloc_at == "hit"
            rank.decided = not rank.run_hit_alloc  # with hit-time allocation P's take reads the terminated flag
            rank.cc.storage_batch_size = model_config.storage_batch_size
            self._record(rank, drained)
        if model_config.alloc_at == "hit":
            self.baton.observe = _deciding(self.baton.observe, self.baton, self.ranks)

    # ---- recorders (instance attributes over the stand-ins' and the tree's methods)
    def _record(self, rank, drained: tuple) -> None:
        cc, cache, baton = rank.cc, rank.cache, self.baton
        q = cc.prefetch_queue
        q.get = _taking(q.get, rank, "prefetch", baton)
        for name in ("prefetch_revoke_queue", "prefetch_hit_queue"):
            q = getattr(cc, name)
            q.put = recorders.handing_on(q.put, rank, "prefetch", baton)
        for name in drained:
            q = getattr(cc, name)
            q.qsize = _sizing(q.qsize, rank, name, len(drained), baton)
        release = cc.host_mem_release_queue
        release.get = recorders.releasing(release.get, rank)
        rank.pool.set_from_flat_data_page = recorders.writing(rank.pool.set_from_flat_data_page, rank, self, _owner)
        rank.pool.free = recorders.freeing(rank.pool.free, rank)
        cache.can_terminate_prefetch = _phased(cache.can_terminate_prefetch, rank, "voting", "voted", baton)
        cc.terminate_prefetch = _phased(cc.terminate_prefetch, rank, "", "terminated", baton)
        if not drained:  # a drain with nothing to agree on reads its sizes at once
            rank.sizes_read = None

    # ---- the model's scheduler loop (scheduler.py), calling the tree's cache methods
    def _at(self, rank, pos: tuple, what: str = "") -> None:
        rank.pos, rank.phase = pos, ""
        self.baton.point(f"conformance: {what or ' '.join(map(str, pos))}")

    def _scheduler(self, rank) -> None:
        cache = rank.cache
        for q, rid in enumerate(rank.handles):
            self._at(rank, ("issue", q))
            cache.prefetch_from_storage(rid, rank.node, self.tokens(q))
        while True:
            self._at(rank, ("round",))
            if "S-tp" in self.groups:  # the round's collectives before the drain are counted from here
                rank.round_start = self.groups["S-tp"].calls[rank.index]
            rank.in_drain = True
            if rank.sizes_read is None:
                rank.pos = ("drain",)
            else:
                rank.sizes_read = set()
            cache.check_hicache_events()
            rank.in_drain = False
            q = self._next(rank, -1)
            while q is not None:
                self._at(rank, ("check", q))
                rank.ready[q] = bool(cache.check_prefetch_progress(rank.handles[q]))
                q = self._next(rank, q)

    def _next(self, rank, after: int):
        """scheduler.py's next_waiting: the next request not yet ready this round."""
        for q in range(after + 1, self.model_config.num_requests):
            if not rank.ready[q]:
                return q
        return None


class _RecordingQueues(QueueFactory):
    """The run's queue factory; the queue the prefetch thread makes (prefetch_buffer) records
    what the IO thread takes and the prefetch thread hands on."""

    def __init__(self, world, run):
        super().__init__(world)
        self.run = run

    def __call__(self, maxsize: int = 0, name: str = ""):
        queue = super().__call__(maxsize, name)
        me = self.world.baton.current()
        if me is not None and me.role == "prefetch":
            rank = self.run.ranks[me.rank]
            queue.get = _taking(queue.get, rank, "io", self.world.baton)
            queue.put = recorders.handing_on(queue.put, rank, "prefetch", self.world.baton)
        return queue


def _taking(get, rank, role, baton):
    """The thread holds what it took; the IO thread holds it until it asks for the next one."""
    def taking(*args, **kwargs):
        mine = recorders.role_of(baton) == role
        if mine and role == "io":
            rank.holding[role] = None
        item = get(*args, **kwargs)
        if mine:
            rank.holding[role] = item
            if role == "prefetch" and rank.run_hit_alloc:
                rank.decided = False
        return item
    return taking


def _deciding(observe, baton, ranks):
    """With hit-time allocation the prefetch thread's take ends where it has read whether its
    operation is terminated (the model's P.take reads the flag with the pop)."""
    def deciding(value: str) -> None:
        observe(value)
        me = baton.current()
        if me is not None and me.role == "prefetch" and "._terminated_flag=" in value:
            ranks[me.rank].decided = True
    return deciding


def _sizing(qsize, rank, name, count, baton):
    def sizing(*args, **kwargs):
        n = qsize(*args, **kwargs)
        if recorders.role_of(baton) == "scheduler" and rank.in_drain and rank.sizes_read is not None:
            rank.sizes_read.add(name)
            if len(rank.sizes_read) == count and rank.pos != ("drain",):  # the model's drain_arrive ends here
                rank.pos = ("drain",)
                baton.point("conformance: the drain's sizes read")
        return n
    return sizing


def _phased(method, rank, before: str, after: str, baton):
    """How far check_prefetch_progress got: into the vote, past it, past terminate_prefetch (a
    scheduling point there: the model's step ends where the method returns)."""
    def phased(*args, **kwargs):
        if before:
            rank.phase = before
        out = method(*args, **kwargs)
        rank.phase = after
        baton.point(f"conformance: {after}")
        return out
    return phased


def _owner(run, rank: int, slot: int):
    """The operation a host slot is allocated to (the mapping's own reading)."""
    return refinement.owner(refinement.operations_by_rank(run)[rank], slot)
