"""Prefetch thread P[r]: take an operation, query storage, agree on hits, revoke or hand it on.

`take` dequeues, asks storage for the leading pages present (static per rank in the
configuration) and arrives in the MIN collective of the hit count: the query is local
and the arrival a left mover, so one step. No query runs, and the rank brings 0 hits,
for an operation without host slots (`queue_unallocated`, 0.5.1.x) or, with alloc_at =
"hit", one already terminated. The departure is merged with its decision: `revoke`,
`publish` (host slots reserved at issue: hash_value visible to the scheduler, the op on
prefetch_buffer), or `record_hits` (alloc_at = "hit": hash_value visible, the op on
prefetch_hit_queue, where the scheduler's drain reserves its host slots).
"""

from __future__ import annotations

from prefetch_check.model.interface import Step, formats, result
from prefetch_check.model.protocols.poll.state import C_HITS, HIT_QUEUED, PUBLISHED, QUERIED, RELEASED, REVOKED, set_op
from prefetch_check.model.protocols.poll.wording import arrival, op_label

P = "P"


def released(before, after) -> list[int]:
    """Pages whose host slots a step gave back (held before, released after)."""
    return [p for p, (x, y) in enumerate(zip(before.slots, after.slots)) if x != y and y == RELEASED]


def page_range(pages: list[int], page_size: int) -> str:
    """`[2, 4)` in tokens for consecutive pages, else the pages listed."""
    if not pages:
        return "none"
    if pages == list(range(pages[0], pages[-1] + 1)):
        return f"[{pages[0] * page_size}, {(pages[-1] + 1) * page_size})"
    return "pages " + ", ".join(map(str, pages))


class PrefetchThreadSteps:
    def prefetch_steps(self, r: int, rank) -> list[Step]:
        if rank.p_pc < 0:
            if not rank.prefetch_queue:
                return []
            return self.p_take(r, rank, rank.prefetch_queue[0])
        return self.p_decide(r, rank, rank.p_pc)

    def skips_query(self, op) -> bool:
        """No storage query, 0 hits: the operation has no host slots (allocation failed at issue and
        it was queued anyway), or, with hit-time allocation, it is already terminated."""
        if self.config.alloc_at == "hit":
            return op.terminated
        return not op.allocated

    def p_take(self, r, rank, q):
        op = rank.ops[q]
        hits = 0 if self.skips_query(op) else self.config.requests[q].hits[r]
        moved = set_op(rank, q, op._replace(stage=QUERIED), p_pc=q, prefetch_queue=rank.prefetch_queue[1:])
        return [Step(P, "take", q, moved, ((C_HITS, q), (hits,)))]

    @formats("P.take")
    def format_p_take(self, before, after, a):
        op = before.ops[a.q]
        if self.skips_query(op):
            why = "terminated" if op.terminated and self.config.alloc_at == "hit" else "no host slots (host_indices is None)"
            query = f"{why}: no storage query, 0 hits"
        else:
            query = f"batch_exists -> {self.config.requests[a.q].hits[a.rank]} leading pages"
        return f"take q{a.q} from prefetch_queue; {query}; {self.collectives[C_HITS].name} arrive{arrival(after.p_coll)}"

    def p_decide(self, r, rank, q):
        agreed = result(rank, "p_coll", (C_HITS, q))
        if agreed is None:
            return []
        hit_pages = self.decision_hits(agreed, r, q)
        op = rank.ops[q]
        pages = len(op.slots)
        if self.config.revoke_queue_exists and self.revokes(hit_pages):
            return [Step(P, "revoke", q, self.revoked(rank, q, op, pages))]
        if self.config.alloc_at == "hit":
            return [Step(P, "record_hits", q, self.hits_recorded(rank, q, op, hit_pages))]
        return [Step(P, "publish", q, self.published(rank, q, op, pages, hit_pages))]

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

    def revoke_releases(self) -> bool:
        """revoke gives every host slot of the operation back."""
        return True

    def revoke_queues(self) -> bool:
        """revoke puts the request id on the revoke queue (the scheduler drops it at drain)."""
        return True

    def revoked(self, rank, q, op, pages):
        """Put q on the revoke queue and release every host slot it has; hash_value stays empty."""
        op, queued = self.released(op, 0, pages if self.revoke_releases() else 0)
        op = op._replace(stage=REVOKED)
        queue = rank.revoke_queue + (q,) if self.revoke_queues() else rank.revoke_queue
        return set_op(rank, q, op, p_pc=-1, p_coll=(), revoke_queue=queue, release_queue=rank.release_queue + queued)

    def _decision_text(self, before, a) -> str:
        """How the departed hit count was compared, e.g. `all_reduce(MIN) -> 2 hit tokens`."""
        ps = self.config.page_size
        (agreed,) = before.p_coll[2]
        used = self.decision_hits(before.p_coll[2], a.rank, a.q)
        text = f"{op_label(self, C_HITS)} -> {agreed * ps} hit tokens"
        if used != agreed:
            text += f", ignored; own {used * ps} hit tokens"
        return text

    @formats("P.revoke")
    def format_p_revoke(self, before, after, a):
        q = a.q
        queued = f"revoke queue += q{q}" if len(after.revoke_queue) > len(before.revoke_queue) else "revoke queue untouched"
        freed = released(before.ops[q], after.ops[q])
        if freed:
            slots = f"{self.release_words} all {len(freed)} host slots"
        else:
            slots = "no host slots to give back" if not before.ops[q].slots else "host slots kept"
        return f"{self._decision_text(before, a)} < threshold {self.config.effective_threshold}: revoke q{q}: {queued}, {slots}"

    def published(self, rank, q, op, pages, hit_pages):
        """Set hash_value (now visible to S), release [hits, L), hand the op to the IO thread."""
        first, last = self.unused_slots(hit_pages, pages)
        op, queued = self.released(op, first, last)
        op = op._replace(stage=PUBLISHED, hash_value=hit_pages)
        return set_op(
            rank, q, op, p_pc=-1, p_coll=(), prefetch_buffer=rank.prefetch_buffer + (q,),
            release_queue=rank.release_queue + queued,
        )

    @formats("P.publish")
    def format_p_publish(self, before, after, a):
        q, ps = a.q, self.config.page_size
        op = after.ops[q]
        hashes = f"hash_value = {op.hash_value} page(s) (now visible to the scheduler)" if op.hash_value else "hash_value still empty"
        return (
            f"{self._decision_text(before, a)}: publish q{q}: {hashes}, {self.release_words} host slots "
            f"{page_range(released(before.ops[q], op), ps)}, put on prefetch_buffer"
        )

    def hits_recorded(self, rank, q, op, hit_pages):
        """alloc_at = "hit": set hash_value (now visible to S) and put the op on prefetch_hit_queue."""
        op = op._replace(stage=HIT_QUEUED, hash_value=hit_pages)
        return set_op(rank, q, op, p_pc=-1, p_coll=(), hit_queue=rank.hit_queue + (q,))

    @formats("P.record_hits")
    def format_p_record_hits(self, before, after, a):
        q = a.q
        op = after.ops[q]
        hashes = f"hash_value = {op.hash_value} page(s) (now visible to the scheduler)" if op.hash_value else "hash_value still empty"
        test = "" if self.config.threshold_test == "drain" else f" >= threshold {self.config.effective_threshold}"
        return f"{self._decision_text(before, a)}{test}: {hashes}, put q{q} on prefetch_hit_queue (host slots come at the drain)"
