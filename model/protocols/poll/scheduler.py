"""Scheduler thread S[r]: issue, drain, check_prefetch_progress, terminate, insert.

Each method returns the steps rank r's scheduler can take from its rank state. The
scheduler is one sequential program per rank, so at most one step is enabled, except at
`issue` where host allocation may fail (a nondeterministic choice).

Atomicity (Lipton reduction; a collective's departure is a right mover, an arrival a left
mover): `check` evaluates the predicate, reads `terminated` and arrives in the MAX
collective in one step; `terminate` departs it, marks the operation terminated, reads
`completed_tokens` and arrives in the MIN collective; `insert` departs that one and
updates the tree. After `mark_terminate` `completed_tokens` cannot change, so reading it
together with the mark loses no behaviour.

Each step's description sits beside it (`@formats`) and says what the step did, read off
the rank before and after it, so a variant that changes a step's effect is described
truthfully without a description of its own.
"""

from __future__ import annotations

from prefetch_check.model.interface import Step, formats, result
from prefetch_check.model.protocols.poll.state import (
    C_COMPLETED,
    C_DRAIN,
    C_TERMINATE,
    HELD,
    IN_TREE,
    RELEASED,
    S_CHECK,
    S_DRAIN,
    S_DRAIN_WAIT,
    S_ISSUE,
    S_MAX_WAIT,
    S_MIN_WAIT,
    give_back,
    set_op,
)
from prefetch_check.model.protocols.poll.wording import arrival, op_label, vote_text

S = "S"
DRAIN_TAG = (C_DRAIN, -1)


def next_waiting(ops, after: int) -> tuple[int, int]:
    """The scheduler's next position in a round: the next unresolved request, or the next round."""
    for q in range(after + 1, len(ops)):
        if not ops[q].ready:
            return (S_CHECK, q)
    return (S_DRAIN, 0)


class SchedulerSteps:
    def scheduler_steps(self, r: int, rank) -> list[Step]:
        kind, q = rank.s_pc
        if kind == S_ISSUE:
            return self.s_issue(r, rank, q)
        if kind == S_DRAIN:
            return self.s_drain_arrive(r, rank)
        if kind == S_DRAIN_WAIT:
            return self.s_drain(r, rank)
        if kind == S_CHECK:
            return self.s_check(r, rank, q)
        if kind == S_MAX_WAIT:
            return self.s_decide(r, rank, q)
        if kind == S_MIN_WAIT:
            return self.s_insert(r, rank, q)
        raise AssertionError(f"unknown scheduler pc {rank.s_pc}")

    # ---- issue ----

    def _after_issue(self, q: int) -> tuple[int, int]:
        return (S_ISSUE, q + 1) if q + 1 < self.config.num_requests else (S_DRAIN, 0)

    def s_issue(self, r, rank, q):
        cfg = self.config
        nxt = self._after_issue(q)
        if not cfg.is_issued_by_threshold(q):
            return [Step(S, "issue_skipped", q, rank._replace(s_pc=nxt))]
        op = rank.ops[q]._replace(issued=True, ongoing=True, slots=(HELD,) * cfg.requests[q].pages)
        out = [Step(S, "issue", q, set_op(rank, q, op, s_pc=nxt, prefetch_queue=rank.prefetch_queue + (q,)))]
        if cfg.alloc_may_fail[r]:
            out.append(Step(S, "issue_alloc_failed", q, rank._replace(s_pc=nxt)))
        return out

    @formats("S.issue")
    def format_issue(self, before, after, a):
        return (
            f"issue q{a.q}: allocate {self.config.prefetch_tokens(a.q)} host slots, put the operation on "
            f"prefetch_queue, ongoing_prefetch[q{a.q}] set"
        )

    @formats("S.issue_alloc_failed")
    def format_issue_alloc_failed(self, before, after, a):
        return f"issue q{a.q}: host allocation fails on this rank: no operation, no ongoing_prefetch entry"

    @formats("S.issue_skipped")
    def format_issue_skipped(self, before, after, a):
        cfg = self.config
        return f"issue q{a.q} skipped: prefetch length {cfg.prefetch_tokens(a.q)} < prefetch_threshold {cfg.prefetch_threshold}"

    # ---- drain ----

    def s_drain_arrive(self, r, rank):
        sizes = (len(rank.revoke_queue), rank.release_queue)
        return [Step(S, "drain_arrive", -1, rank._replace(s_pc=(S_DRAIN_WAIT, 0)), (DRAIN_TAG, sizes))]

    @formats("S.drain_arrive")
    def format_drain_arrive(self, before, after, a):
        return (
            f"drain: revoke queue {len(before.revoke_queue)}, release queue {before.release_queue} "
            f"-> all_reduce(MIN) arrive{arrival(after.s_coll)}"
        )

    def s_drain(self, r, rank):
        agreed = result(rank, "s_coll", DRAIN_TAG)
        if agreed is None:
            return []
        n_revoke, n_release = agreed
        rank = self.drained(rank._replace(s_coll=()), n_revoke, self.release_count(n_release, rank))
        return [Step(S, "drain", -1, rank)]

    def release_count(self, agreed: int, rank) -> int:
        """How many release-queue entries drain frees: the count all ranks agreed on."""
        return agreed

    def drained(self, rank, n_revoke: int, n_release: int):
        """Pop n_revoke request ids (dropping them from ongoing_prefetch), free n_release slots, start the round."""
        ops = list(rank.ops)
        for q in rank.revoke_queue[:n_revoke]:
            ops[q] = ops[q]._replace(ongoing=False)
        rank = rank._replace(
            revoke_queue=rank.revoke_queue[n_revoke:],
            release_queue=rank.release_queue - n_release,
            ops=tuple(ops),
        )
        return rank._replace(s_pc=next_waiting(rank.ops, -1))

    @formats("S.drain")
    def format_drain(self, before, after, a):
        popped = before.revoke_queue[: len(before.revoke_queue) - len(after.revoke_queue)]
        freed = before.release_queue - after.release_queue
        names = ", ".join(f"q{x}" for x in popped) or "none"
        if not before.s_coll:  # a variant that drains without the collective
            return f"drain without all_reduce: pop this rank's own {len(popped)} revoked (dropped from ongoing_prefetch: {names}), free {freed} released slots"
        n_revoke, n_release = before.s_coll[2]
        text = f"drain: agreed {n_revoke} revoked (dropped from ongoing_prefetch: {names}), free {freed} released slots"
        if freed != n_release:
            text += f" (the agreed count was {n_release})"
        if after.release_queue:
            text += f"; {after.release_queue} stay queued"
        return text

    # ---- check, terminate, insert ----

    def s_check(self, r, rank, q):
        op = rank.ops[q]
        if not op.ongoing:
            ready = set_op(rank, q, op._replace(ready=True))
            return [Step(S, "ready_without_prefetch", q, ready._replace(s_pc=next_waiting(ready.ops, q)))]
        if self.config.policy == "best_effort":
            # upstream returns before the collective: best_effort always terminates
            return [self._terminate("check", rank, q)]
        vote = self.termination_vote(op, self.decide_op(op))
        return [Step(S, "check", q, rank._replace(s_pc=(S_MAX_WAIT, q)), ((C_TERMINATE, q), vote))]

    @formats("S.ready_without_prefetch")
    def format_ready_without_prefetch(self, before, after, a):
        return f"check_prefetch_progress(q{a.q}): not in ongoing_prefetch -> ready, nothing loaded"

    def termination_vote(self, op, can: bool) -> tuple[int, int]:
        """What this rank brings to the termination collective: [not can_terminate, terminated]."""
        terminated = int(op.terminated) if self.config.shape == "late2025" else 0
        return (1 - int(can), terminated)

    @formats("S.check")
    def format_check(self, before, after, a):
        q = a.q
        if after.s_pc == (S_MIN_WAIT, q):  # best_effort: terminated at once
            return f"check_prefetch_progress(q{q}): {self.config.policy} -> terminate at once: {self._termination_text(before, after, q)}"
        return (
            f"check_prefetch_progress(q{q}): {self.explain_predicate(before.ops[q])}; "
            f"{op_label(self, C_TERMINATE)} arrive {vote_text(after.s_coll[2], self.config.shape)}{arrival(after.s_coll)}"
        )

    def s_decide(self, r, rank, q):
        agreed = result(rank, "s_coll", (C_TERMINATE, q))
        if agreed is None:
            return []
        not_all_can, any_terminated = agreed
        if not_all_can == 0 or any_terminated:
            return [self._terminate("terminate", rank._replace(s_coll=()), q)]
        return [Step(S, "keep_waiting", q, rank._replace(s_coll=(), s_pc=next_waiting(rank.ops, q)))]

    @formats("S.keep_waiting")
    def format_keep_waiting(self, before, after, a):
        return f"{self._collective_result(before)}: some rank cannot terminate q{a.q} -> keep waiting"

    def terminate_marks(self) -> bool:
        """terminate_prefetch calls mark_terminate before it reads completed_tokens."""
        return True

    def _terminate(self, name: str, rank, q: int) -> Step:
        """mark_terminate under the lock, read completed_tokens, arrive in all_reduce(MIN)."""
        op = rank.ops[q]
        if self.terminate_marks():
            op = op._replace(terminated=True)
        moved = set_op(rank, q, op, s_pc=(S_MIN_WAIT, q))
        return Step(S, name, q, moved, ((C_COMPLETED, q), (op.completed * self.config.page_size,)))

    def _termination_text(self, before, after, q) -> str:
        marks = "mark_terminate" if after.ops[q].terminated and not before.ops[q].terminated else "no mark_terminate"
        return (
            f"{marks}, completed_tokens={after.ops[q].completed * self.config.page_size}; "
            f"{op_label(self, C_COMPLETED)} arrive{arrival(after.s_coll)}"
        )

    def _collective_result(self, before) -> str:
        return f"{op_label(self, before.s_coll[0][0])} -> {list(before.s_coll[2])}"

    @formats("S.terminate")
    def format_terminate(self, before, after, a):
        return f"{self._collective_result(before)}: terminate_prefetch(q{a.q}): {self._termination_text(before, after, a.q)}"

    def s_insert(self, r, rank, q):
        ps = self.config.page_size
        agreed = result(rank, "s_coll", (C_COMPLETED, q))
        if agreed is None:
            return []
        op = rank.ops[q]
        tokens = self.insert_tokens(agreed, op)
        tree_pages = tokens // ps
        slots = give_back(op.slots, 0, tree_pages, IN_TREE)
        slots = give_back(slots, tree_pages, op.completed, RELEASED)
        extra = max(0, op.completed - tree_pages)
        op = op._replace(slots=slots, inserted=tokens, ongoing=False, ready=True)
        rank = set_op(rank, q, op, s_coll=(), release_queue=rank.release_queue + extra)
        return [Step(S, "insert", q, rank._replace(s_pc=next_waiting(rank.ops, q)))]

    def insert_tokens(self, agreed: tuple, op) -> int:
        """The tokens insert hands to the tree: min_completed, the result of all_reduce(MIN)."""
        (min_completed,) = agreed
        return min_completed

    @formats("S.insert")
    def format_insert(self, before, after, a):
        ps, q = self.config.page_size, a.q
        (m,) = before.s_coll[2]
        tokens = after.ops[q].inserted
        if tokens == m:
            head = f"{op_label(self, C_COMPLETED)} -> min_completed={m}: insert hash_value[:{m // ps}] ({m} tokens)"
        else:
            head = (
                f"{op_label(self, C_COMPLETED)} -> min_completed={m}, ignored: insert this rank's "
                f"hash_value[:{tokens // ps}] ({tokens} tokens)"
            )
        return f"{head} into the tree, release host slots [{tokens}, {before.ops[q].completed * ps}), q{q} ready"
