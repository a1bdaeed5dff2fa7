"""One conformance run of a tree's code: the executor's run (harness.Run) with the model's own
scheduler loop (model/protocols/ack_drain/scheduler.py: issue, then rounds of aborts, the drain
and a walk over the waiting requests), calling the tree's cache methods with a scheduling point
where each scheduler step of the model ends, and what the refinement mapping reads recorded
(refinement.py): the scheduler's place, the item each storage thread holds, the pages written."""

from __future__ import annotations

from prefetch_check.model.code.conformance import recorders
from prefetch_check.model.code.config import CodeConfig
from prefetch_check.model.code.worlds.ack_drain.harness import ROOT_NODE, Run
from prefetch_check.model.protocols.ack_drain import refinement
from prefetch_check.model.protocols.ack_drain.config import AckConfig

S_QUEUES = ("prefetch_hit_queue", "ack_prefetch_queue", "host_mem_release_queue")
TAKES = {"prefetch": "prefetch_queue", "io": "prefetch_buffer", "sync": "prefetch_sync_queue"}
HANDS_ON = {"prefetch": "prefetch_hit_queue", "io": "prefetch_sync_queue", "sync": "ack_prefetch_queue"}


class ConformRun(Run):
    """The executor's run with the model's scheduler loop, and what the mapping reads recorded:
    the scheduler's place, the item each storage thread holds, the pages written per operation."""

    def __init__(self, modules, model_config: AckConfig, config: CodeConfig, holder, roots):
        self.model_config = model_config
        super().__init__(modules, config, holder, roots)
        for rank in self.ranks:
            rank.pos, rank.ready, rank.aborted = ("issue", 0), [False] * config.requests, [False] * config.requests
            rank.gen, rank.holding, rank.writes = [0] * config.requests, {}, {}
            rank.in_drain, rank.sizes_read, rank.decided, rank.releasing = False, set(), False, set()
            self._record(rank)
        self.baton.observe = _voting(_deciding(self.baton.observe, self.baton, self.ranks), self.baton, self.ranks)

    # ---- recorders (instance attributes over the stand-ins' methods)
    def _record(self, rank) -> None:
        cc, baton = rank.cc, self.baton
        for role, name in TAKES.items():
            q = getattr(cc, name)
            q.get = _taking(q.get, rank, role, baton)
        for role, name in HANDS_ON.items():
            q = getattr(cc, name)
            q.put = recorders.handing_on(q.put, rank, role, baton)
        for name in S_QUEUES:
            q = getattr(cc, name)
            q.qsize = _sizing(q.qsize, rank, name, baton)
        release = cc.host_mem_release_queue
        release.get = recorders.releasing(release.get, rank)
        pool = rank.pool
        pool.set_from_flat_data_page = recorders.writing(pool.set_from_flat_data_page, rank, self, _owner)
        if len(self.ranks) == 1:
            rank.cache._all_reduce = _voting_alone(rank.cache._all_reduce, rank, baton)
        pool.free = recorders.freeing(pool.free, rank)

    # ---- the model's scheduler loop (scheduler.py), calling the tree's cache methods
    def _at(self, rank, pos: tuple, what: str = "") -> None:
        rank.pos = pos
        self.baton.point(f"conformance: {what or ' '.join(map(str, pos))}")

    def _scheduler(self, rank) -> None:
        cfg, cache = self.model_config, rank.cache
        for q in range(cfg.num_requests):
            self._at(rank, ("issue", q))
            cache.prefetch_from_storage(rank.handles[q], ROOT_NODE, self.tokens(q))
        drains = 0
        while True:
            self._at(rank, ("round",))
            for q, spec in enumerate(cfg.requests):
                if spec.abort_round == drains and not rank.aborted[q]:
                    self._at(rank, ("round",), f"abort q{q}")
                    self.world.draining.pop(rank.index, None)
                    cache.release_aborted_request(rank.handles[q])
                    rank.aborted[q] = rank.ready[q] = True
            rank.in_drain, rank.sizes_read = True, set()
            cache.check_hicache_events()
            rank.in_drain = False
            if drains <= cfg.last_abort_round:
                drains += 1
            q, checked = self._next(rank, -1, 0)
            while q is not None:
                self._at(rank, ("walk", q))
                self.world.draining.pop(rank.index, None)
                if rank.ready[q]:  # admitted before, preempted since: admitted again
                    rank.gen[q] += 1
                    rank.ready[q] = False
                    cache.prefetch_from_storage(rank.handles[q], ROOT_NODE, self.tokens(q))
                else:
                    checked += 1
                    rank.ready[q] = bool(cache.check_prefetch_progress(rank.handles[q]))
                q, checked = self._next(rank, q, checked)

    def _next(self, rank, after: int, checked: int):
        """scheduler.py's next_in_walk: the next request the walk reaches this round."""
        cfg = self.model_config
        if cfg.admission_limit and checked >= cfg.admission_limit:
            return None, checked
        for q in range(after + 1, cfg.num_requests):
            if rank.aborted[q]:
                continue
            if not rank.ready[q] or rank.gen[q] + 1 < cfg.requests[q].generations:
                return q, checked
        return None, checked


def _taking(get, rank, role, baton):
    def taking(*args, **kwargs):
        item = get(*args, **kwargs)
        if recorders.role_of(baton) == role:
            rank.holding[role] = item
            rank.decided = rank.decided and role != "prefetch"
        return item
    return taking


def _deciding(observe, baton, ranks):
    """The prefetch thread's take ends where it has read whether its operation is terminated
    (the model's P.take reads the flag with the pop; the code reads it one point later)."""
    def deciding(value: str) -> None:
        observe(value)
        me = baton.current()
        if me is not None and me.role == "prefetch" and "._terminated_flag=" in value:
            ranks[me.rank].decided = True
    return deciding


def _voting(observe, baton, ranks):
    """The timeout vote: a scheduler arriving at its group's collective from the walk (not from
    the drain) is at the model's S_VOTE_WAIT, its vote in (the model's S.vote ends there)."""
    def voting(value: str) -> None:
        observe(value)
        me = baton.current()
        if me is not None and me.role == "scheduler" and value.startswith("arrive S-tp"):
            rank = ranks[me.rank]
            if rank.pos[0] == "walk":
                rank.pos = ("vote", rank.pos[1])
    return voting


def _voting_alone(all_reduce, rank, baton):
    """One rank has no collective to arrive at (_all_reduce reduces nothing): the vote's
    arrival is the call from the walk, with the verdict already computed."""
    def voting_alone(data, *args, **kwargs):
        if recorders.role_of(baton) == "scheduler" and rank.pos[0] == "walk":
            rank.pos = ("vote", rank.pos[1])
            baton.point("conformance: the timeout vote (one rank: no collective)")
        return all_reduce(data, *args, **kwargs)
    return voting_alone


def _sizing(qsize, rank, name, baton):
    def sizing(*args, **kwargs):
        n = qsize(*args, **kwargs)
        if recorders.role_of(baton) == "scheduler" and rank.in_drain:
            rank.sizes_read.add(name)
            if len(rank.sizes_read) == len(S_QUEUES):  # the model's drain_arrive ends here
                rank.pos = ("drain",)
                baton.point("conformance: the drain's sizes read")
        return n
    return sizing


def _owner(run, rank: int, slot: int):
    """The operation a host slot is allocated to (the mapping's own reading)."""
    return refinement.owner(refinement.operations(run, rank), slot)
