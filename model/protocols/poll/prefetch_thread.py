"""Prefetch thread P[r]: take an operation, query storage, agree on hits, revoke or publish.

`take` dequeues, asks storage for the leading pages present (static per rank in the
configuration) and arrives in the MIN collective of the hit count: the query is local
and the arrival a left mover, so one step. The departure is merged with its decision
(`revoke` or `publish`), the step that makes `hash_value` visible to the scheduler.
"""

from __future__ import annotations

from prefetch_check.model.interface import Step, formats, result
from prefetch_check.model.protocols.poll.state import C_HITS, PUBLISHED, QUERIED, RELEASED, REVOKED, give_back, set_op
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

    def p_take(self, r, rank, q):
        hits = self.config.requests[q].hits[r]
        op = rank.ops[q]._replace(stage=QUERIED)
        moved = set_op(rank, q, op, p_pc=q, prefetch_queue=rank.prefetch_queue[1:])
        return [Step(P, "take", q, moved, ((C_HITS, q), (hits,)))]

    @formats("P.take")
    def format_p_take(self, before, after, a):
        hits = self.config.requests[a.q].hits[a.rank]
        return (
            f"take q{a.q} from prefetch_queue; batch_exists -> {hits} leading pages; "
            f"{self.collectives[C_HITS].name} arrive{arrival(after.p_coll)}"
        )

    def p_decide(self, r, rank, q):
        agreed = result(rank, "p_coll", (C_HITS, q))
        if agreed is None:
            return []
        hit_pages = self.decision_hits(agreed, r, q)
        op = rank.ops[q]
        pages = len(op.slots)
        if self.revokes(hit_pages):
            return [Step(P, "revoke", q, self.revoked(rank, q, op, pages))]
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
        """Put q on the revoke queue and release every host slot; hash_value stays empty."""
        freed = pages if self.revoke_releases() else 0
        op = op._replace(stage=REVOKED, slots=give_back(op.slots, 0, freed, RELEASED))
        queue = rank.revoke_queue + (q,) if self.revoke_queues() else rank.revoke_queue
        return set_op(rank, q, op, p_pc=-1, p_coll=(), revoke_queue=queue, release_queue=rank.release_queue + freed)

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
        slots = f"release all {len(freed)} host slots" if freed else "host slots kept"
        return f"{self._decision_text(before, a)} < threshold {self.config.effective_threshold}: revoke q{q}: {queued}, {slots}"

    def published(self, rank, q, op, pages, hit_pages):
        """Set hash_value (now visible to S), release [hits, L), hand the op to the IO thread."""
        first, last = self.unused_slots(hit_pages, pages)
        op = op._replace(stage=PUBLISHED, hash_value=hit_pages, slots=give_back(op.slots, first, last, RELEASED))
        return set_op(
            rank, q, op, p_pc=-1, p_coll=(), prefetch_buffer=rank.prefetch_buffer + (q,),
            release_queue=rank.release_queue + max(0, last - first),
        )

    @formats("P.publish")
    def format_p_publish(self, before, after, a):
        q, ps = a.q, self.config.page_size
        op = after.ops[q]
        hashes = f"hash_value = {op.hash_value} page(s) (now visible to the scheduler)" if op.hash_value else "hash_value still empty"
        return (
            f"{self._decision_text(before, a)}: publish q{q}: {hashes}, release host slots "
            f"{page_range(released(before.ops[q], op), ps)}, put on prefetch_buffer"
        )
