"""Prefetch thread P[r]: take an operation, query storage, agree on hits, revoke or publish.

`take` dequeues, asks storage for the leading pages present (static per rank in the
configuration) and arrives in the MIN collective of the hit count: the query is local
and the arrival a left mover, so one step. The departure is merged with its decision
(`revoke` or `publish`), the step that makes `hash_value` visible to the scheduler.
"""

from __future__ import annotations

from prefetch_check.model.actions import PREFETCH, Action
from prefetch_check.model.collectives import PREFETCH as GROUP
from prefetch_check.model.collectives import arrive, result_for
from prefetch_check.model.state import C_HITS, PUBLISHED, QUERIED, RELEASED, REVOKED, give_back, set_op, set_rank


class PrefetchThreadSteps:
    def prefetch_steps(self, state, r: int) -> list:
        rank = state[r]
        if rank.p_pc < 0:
            if not rank.prefetch_queue:
                return []
            return self.p_take(state, r, rank.prefetch_queue[0])
        return self.p_decide(state, r, rank.p_pc)

    def p_take(self, state, r, q):
        rank = state[r]
        hits = self.config.requests[q].hits[r]
        op = rank.ops[q]._replace(stage=QUERIED)
        moved = set_op(rank, q, op, p_pc=q, prefetch_queue=rank.prefetch_queue[1:])
        return [(Action(r, PREFETCH, "take", q), arrive(state, GROUP, r, moved, (C_HITS, q), (hits,), min))]

    def p_decide(self, state, r, q):
        rank = state[r]
        agreed = result_for(rank, GROUP, (C_HITS, q))
        if agreed is None:
            return []
        hit_pages = self.decision_hits(agreed, r, q)
        op = rank.ops[q]
        pages = len(op.slots)
        if self.revokes(hit_pages):
            return [(Action(r, PREFETCH, "revoke", q), set_rank(state, r, self.revoked(rank, q, op, pages)))]
        return [(Action(r, PREFETCH, "publish", q), set_rank(state, r, self.published(rank, q, op, pages, hit_pages)))]

    def unused_slots(self, hit_pages: int, pages: int) -> tuple[int, int]:
        """The host slots publish gives back: the tail [hits, L) beyond the agreed hits."""
        return hit_pages, pages

    def revokes(self, hit_pages: int) -> bool:
        """Revoke when the agreed hit tokens are below the (clamped) threshold."""
        return hit_pages * self.config.page_size < self.config.effective_threshold

    def decision_hits(self, agreed: tuple, r: int, q: int) -> int:
        """The hit count (pages) revoke-or-publish is decided on: the result of all_reduce(MIN)."""
        (hit_pages,) = agreed
        return hit_pages

    def revoked(self, rank, q, op, pages):
        """Put q on the revoke queue and release every host slot; hash_value stays empty."""
        op = op._replace(stage=REVOKED, slots=give_back(op.slots, 0, pages, RELEASED))
        return set_op(
            rank,
            q,
            op,
            p_pc=-1,
            p_coll=(),
            revoke_queue=rank.revoke_queue + (q,),
            release_queue=rank.release_queue + pages,
        )

    def published(self, rank, q, op, pages, hit_pages):
        """Set hash_value (now visible to S), release [hits, L), hand the op to the IO thread."""
        op = op._replace(
            stage=PUBLISHED,
            hash_value=hit_pages,
            slots=give_back(op.slots, *self.unused_slots(hit_pages, pages), RELEASED),
        )
        return set_op(
            rank,
            q,
            op,
            p_pc=-1,
            p_coll=(),
            prefetch_buffer=rank.prefetch_buffer + (q,),
            release_queue=rank.release_queue + pages - hit_pages,
        )
