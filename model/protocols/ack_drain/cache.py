"""What the radix cache does with an operation, on the scheduler thread: revoke it, insert its
result into the host tree, give back its host memory. Shared by the drain, the check and abort.

`ongoing_prefetch` is keyed by the request id: an operation of an earlier prefetch of the
same request can find the entry of a newer one. Where upstream looks an entry up by the id,
so does the model (`_revoke_pending_prefetch`, `_handle_prefetch_result`'s pop), and the
consequences are the model's to find.
"""

from __future__ import annotations

from prefetch_check.model.protocols.ack_drain.state import (
    IN_TREE,
    LOADING,
    NO_OP,
    RELEASED,
    S_CRASHED,
    give_back,
    set_op,
    set_req,
)


class CacheOperations:
    def revoke_pending(self, rank, q: int, by: int = NO_OP):
        """_revoke_pending_prefetch(rid): drop whatever ongoing_prefetch holds for the id (frees
        nothing). `by`: the operation on whose account it is revoked, when that is not certain to
        be the one ongoing_prefetch holds (the hit drain)."""
        req = rank.reqs[q]
        if req.ongoing == NO_OP:
            return rank
        if by != NO_OP:
            rank = self.noted_stale(rank, by, req.ongoing)
        if not self.revoke_drops_entry():
            return rank
        return set_req(rank, q, req._replace(ongoing=NO_OP))

    def revoke_drops_entry(self) -> bool:
        """_revoke_pending_prefetch pops the request's entry from ongoing_prefetch."""
        return True

    def noted_stale(self, rank, i: int, entry: int):
        """Operation i acts on ongoing_prefetch's entry `entry`, an operation of another prefetch of
        the same request: note the first time (the operation_identity property reads it)."""
        if i == entry or rank.stale:
            return rank
        return rank._replace(stale=(i, entry))

    def handle_result(self, rank, i: int):
        """_handle_prefetch_result(operation i): completed_tokens of operation i in whole pages;
        pop ongoing_prefetch[rid] and insert that entry's slots [0, completed) into the host tree:
        the part already in the tree is freed directly, the rest handed to the tree. Without host
        memory behind the entry (host_indices None), upstream slices None: the scheduler dies."""
        q = self.request_of[i]
        req = rank.reqs[q]
        entry = req.ongoing
        if entry == NO_OP:
            return rank
        rank = self.noted_stale(rank, i, entry)
        held = rank.ops[entry]
        if held.stage != LOADING or not held.slots:
            return rank._replace(s_pc=(S_CRASHED, q, 0), s_coll=())
        pages = min(rank.ops[i].completed, len(held.slots))
        matched = min(req.tree, pages)
        slots = give_back(held.slots, *self.freed_at_insert(matched, pages), RELEASED)
        slots = give_back(slots, matched, pages, IN_TREE)
        rank = set_op(rank, entry, held._replace(slots=slots))
        return set_req(rank, q, req._replace(ongoing=NO_OP, tree=max(req.tree, pages)))

    def freed_at_insert(self, matched: int, pages: int) -> tuple[int, int]:
        """The slots _handle_prefetch_result frees directly: [0, matched), the part already in the tree."""
        return 0, matched

    def release_tail(self, rank, i: int):
        """The host memory of operation i beyond completed_tokens, given back when its completed_req
        is drained: freed directly (HiRadixCache) or queued on host_mem_release_queue (Unified)."""
        op = rank.ops[i]
        first, last = op.completed, len(op.slots)
        if first >= last:
            return rank
        rank = set_op(rank, i, op._replace(slots=give_back(op.slots, first, last, RELEASED)))
        if self.config.cache == "unified":
            rank = rank._replace(release_queue=rank.release_queue + last - first)
        return rank

    def is_current(self, rank, i: int) -> bool:
        """Whether an ACK of operation i applies: the request id is in ongoing_prefetch ("rid"), or
        ongoing_prefetch holds this very operation ("operation")."""
        ongoing = rank.reqs[self.request_of[i]].ongoing
        if self.config.ack_match == "rid":
            return ongoing != NO_OP
        return ongoing == i
