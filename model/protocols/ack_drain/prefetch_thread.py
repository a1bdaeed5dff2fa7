"""Prefetch thread P[r] (prefetch_thread_func): query storage, agree on the hit count, hand back.

`take` dequeues an operation and asks storage how many leading pages it holds (0 when the
operation is already terminated) and arrives in the MIN collective: one step (the query is
local, the arrival a left mover). `publish` departs with the agreed count, sets hash_value
and storage_hit_count, and puts the operation on prefetch_hit_queue for the scheduler's
drain. No threshold test, no host memory here. A storage query that raises ends the thread
on that rank (0.5.19-0.5.21) or counts as 0 hits (0.5.22+).
"""

from __future__ import annotations

from prefetch_check.model.interface import Step, formats, result
from prefetch_check.model.protocols.ack_drain.state import C_HITS, DEAD, HIT, QUERYING, set_op
from prefetch_check.model.protocols.poll.wording import arrival

P = "P"


class PrefetchThreadSteps:
    def prefetch_steps(self, r: int, rank) -> list[Step]:
        if rank.p_pc == DEAD:
            return []
        if rank.p_pc < 0:
            if not rank.prefetch_queue:
                return []
            return self.p_take(r, rank, rank.prefetch_queue[0])
        return self.p_publish(r, rank, rank.p_pc)

    def p_take(self, r, rank, i):
        q = self.request_of[i]
        op = rank.ops[i]
        rank = rank._replace(prefetch_queue=rank.prefetch_queue[1:])
        if op.terminated:
            hits = 0
        elif self.config.requests[q].query_raises[r]:
            if self.config.exceptions == "end_thread":
                dead = set_op(rank, i, op._replace(stage=QUERYING, disturbed=True), p_pc=DEAD)
                return [Step(P, "query_raises", q, dead)]
            hits, op = 0, op._replace(disturbed=True)
        else:
            hits = self.config.requests[q].hits[r]
        moved = set_op(rank, i, op._replace(stage=QUERYING), p_pc=i)
        return [Step(P, "take", q, moved, ((C_HITS, i), (hits,)))]

    @formats("P.take")
    def format_p_take(self, before, after, a):
        i = before.prefetch_queue[0]
        op = before.ops[i]
        if op.terminated:
            found = "terminated: 0 hits, no query"
        elif after.ops[i].disturbed and not op.disturbed:
            found = "batch_exists raises: caught, 0 hits"
        else:
            found = f"batch_exists -> {self.config.requests[a.q].hits[a.rank]} leading page(s)"
        return f"take #{i} from prefetch_queue; {found}; all_reduce(MIN hits) arrive{arrival(after.p_coll)}"

    @formats("P.query_raises")
    def format_p_query_raises(self, before, after, a):
        return f"take #{before.prefetch_queue[0]}; batch_exists raises: only queue.Empty is caught, the prefetch thread ends"

    def p_publish(self, r, rank, i):
        agreed = result(rank, "p_coll", (C_HITS, i))
        if agreed is None:
            return []
        op = rank.ops[i]._replace(stage=HIT, hash_value=self.published_hits(agreed, r, i))
        return [Step(P, "publish", self.request_of[i], set_op(rank, i, op, p_pc=-1, p_coll=(), hit_queue=rank.hit_queue + (i,)))]

    def published_hits(self, agreed: tuple, r: int, i: int) -> int:
        """The hit count the operation carries to the drain: the all_reduce(MIN) result."""
        (hits,) = agreed
        return hits

    @formats("P.publish")
    def format_p_publish(self, before, after, a):
        i = before.p_pc
        return (
            f"all_reduce(MIN hits) -> {before.p_coll[2][0]}: #{i} hash_value = {after.ops[i].hash_value} page(s), "
            "on prefetch_hit_queue"
        )
