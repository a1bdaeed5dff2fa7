"""The toy protocol: per rank a writer W (one page per step) and a scheduler S (accepts once)."""

from __future__ import annotations

from typing import NamedTuple

from prefetch_check.model.interface import RankProtocol, Step, Thread, formats, invariant, progress

from toy_protocol.config import ToyConfig
from toy_protocol.predicates import BUILTIN


class Rank(NamedTuple):
    written: int = 0
    accepted: bool = False


class ToyProtocol(RankProtocol):
    threads = (Thread("W", "writer"), Thread("S", "scheduler"))
    reductions_vouched = True  # no collectives, every rank alone: nothing for the reductions to get wrong
    builtin_predicates = tuple(BUILTIN)
    property_names = ("complete_on_accept", "accepted")

    def __init__(self, config: ToyConfig, predicate="fixed", name: str | None = None):
        self.config = config
        if isinstance(predicate, tuple):
            name, predicate = predicate
        if isinstance(predicate, str):
            name, predicate = predicate, BUILTIN[predicate]
        self.predicate, self.predicate_name = predicate, name or predicate.__name__

    num_requests = 1  # a step's q: the one request

    def initial_rank(self, r: int) -> Rank:
        return Rank()

    def rank_steps(self, r: int, rank: Rank) -> list:
        out = []
        if rank.written < self.config.pages:
            out.append(Step("W", "write", 0, rank._replace(written=rank.written + 1)))
        if not rank.accepted and self.accepts(rank):
            out.append(Step("S", "accept", 0, rank._replace(accepted=True)))
        return out

    def accepts(self, rank: Rank) -> bool:
        """The hook a mutant changes: whether the scheduler may accept now."""
        return self.predicate(rank.written, self.config.pages)

    def rank_view(self, rank: Rank) -> Rank:
        return rank

    def properties(self) -> list:
        pages = self.config.pages

        def early(views):
            return next((f"rank {r} accepted with {v.written} of {pages} pages written"
                         for r, v in enumerate(views) if v.accepted and v.written < pages), None)

        def unaccepted(views):
            return next((f"rank {r} has not accepted" for r, v in enumerate(views) if not v.accepted), None)

        return [invariant("complete_on_accept", early, "a rank accepts only once every page is written"),
                progress("accepted", unaccepted, "every rank eventually accepts")]

    def fields(self, state) -> dict:
        return {f"r{r}.{k}": v for r, rank in enumerate(state) for k, v in rank._asdict().items()}

    def rank_settled(self, rank: Rank) -> bool:
        return rank.accepted and rank.written == self.config.pages

    @classmethod
    def harness_configs(cls) -> tuple:
        return (ToyConfig(1, 1), ToyConfig(2, 2))

    @formats("W.write")
    def _write(self, before, after, action) -> str:
        return f"W{action.rank} writes page {before.written} ({after.written} of {self.config.pages} written)"

    @formats("S.accept")
    def _accept(self, before, after, action) -> str:
        return f"S{action.rank} accepts with {before.written} of {self.config.pages} pages written"
