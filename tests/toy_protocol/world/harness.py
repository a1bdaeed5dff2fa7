"""One run of the toy world: per rank the tree's real ToyCache and ToyCacheController, the
controller's own `prefetch_thread_func` as thread W and our scheduler loop as thread S, which
calls the tree's `check_prefetch_progress` whenever the pages written changed since its last call.
The storage backend is the one stand-in: every page read is a scheduling point."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prefetch_check.model.code.rt.baton import Baton
from prefetch_check.model.code.stand_ins.context import World

CACHE = "mem_cache/toy_cache.py"
CONTROLLER = "managers/toy_controller.py"
FILES = (CACHE, CONTROLLER)
GATE = "scheduler round"
EARLY = "a request served before its pages are loaded: wrong KV data"


class Storage:
    """The storage backend stand-in: a read is a point (another thread may run first)."""

    def __init__(self, baton: Baton):
        self.baton = baton

    def get(self, request_id, page: int) -> None:
        self.baton.point(f"read page {page}")


@dataclass
class ToyRank:
    index: int
    cache: object
    operation: object
    accepted: bool = False
    seen: object = None  # the pages written when the scheduler last checked


class ToyRun:
    """A fresh toy world: ranks, threads W<r> and S<r>, nothing run yet."""

    def __init__(self, modules: dict, config, holder, roots: tuple[str, ...]):
        self.config, self.roots = config, roots
        self.baton = Baton(roots)
        self.world = World(self.baton)
        holder.world = self.world
        cache_cls, ctrl_cls = modules[CACHE].ToyCache, modules[CONTROLLER].ToyCacheController
        code = cache_cls.can_terminate_prefetch.__code__
        self.predicate_site = f"{Path(code.co_filename).as_posix().removeprefix(roots[0])}:{code.co_firstlineno + 1}"
        self.ranks = []
        for r in range(config.ranks):
            cache = cache_cls(ctrl_cls(Storage(self.baton)))
            rank = ToyRank(r, cache, cache.prefetch_from_storage(f"req{r}", config.pages))
            self.ranks.append(rank)
            self.baton.spawn(f"W{r}", r, "writer", lambda rank=rank: rank.cache.cache_controller.prefetch_thread_func(
                rank.operation))
            self.baton.spawn(f"S{r}", r, "scheduler", lambda rank=rank: self._scheduler(rank))

    def _scheduler(self, rank: ToyRank) -> None:
        op = rank.operation
        while True:
            self.baton.forget()  # the loop's state is all in `rank` here: a round that changes nothing comes back
            self.baton.point(GATE, lambda: op.completed_pages != rank.seen)
            rank.seen = op.completed_pages
            if rank.cache.check_prefetch_progress(op.request_id):
                rank.accepted = True
                if op.completed_pages < op.pages:
                    self.world.fault("complete_on_accept", f"rank {rank.index} accepted {op.request_id} with "
                                     f"{op.completed_pages} of {op.pages} pages written", EARLY, self.predicate_site)
                return

    def key(self) -> tuple:
        return self.baton.threads_key(), tuple((r.operation.completed_pages, r.accepted, r.seen) for r in self.ranks)

    def ample(self) -> list[str]:
        return [m.name for m in self.baton.enabled()]
