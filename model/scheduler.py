"""Scheduler thread S[r]: issue, drain, check_prefetch_progress, terminate, insert.

Each method returns the (action, next state) pairs the scheduler of rank r can take.
The scheduler is one sequential program per rank, so at most one step is enabled,
except at `issue` where host allocation may fail (a nondeterministic choice).

Atomicity (Lipton reduction; a collective's departure is a right mover, an arrival a
left mover): `check` evaluates the predicate, reads `terminated` and arrives in the
MAX collective in one step; `terminate` departs it, marks the operation terminated,
reads `completed_tokens` and arrives in the MIN collective; `insert` departs that
one and updates the tree. After `mark_terminate` `completed_tokens` cannot change,
so reading it together with the mark loses no behaviour.
"""

from __future__ import annotations

from prefetch_check.model.actions import SCHEDULER, Action
from prefetch_check.model.collectives import SCHEDULER as GROUP
from prefetch_check.model.collectives import arrive, result_for
from prefetch_check.model.state import (
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
    set_rank,
)

DRAIN_TAG = (C_DRAIN, -1)


def next_waiting(ops, after: int) -> tuple[int, int]:
    """The scheduler's next position in a round: the next unresolved request, or the next round."""
    for q in range(after + 1, len(ops)):
        if not ops[q].ready:
            return (S_CHECK, q)
    return (S_DRAIN, 0)


class SchedulerSteps:
    def scheduler_steps(self, state, r: int) -> list:
        rank = state[r]
        kind, q = rank.s_pc
        if kind == S_ISSUE:
            return self.s_issue(state, r, q)
        if kind == S_DRAIN:
            return self.s_drain_arrive(state, r)
        if kind == S_DRAIN_WAIT:
            return self.s_drain(state, r)
        if kind == S_CHECK:
            return self.s_check(state, r, q)
        if kind == S_MAX_WAIT:
            return self.s_decide(state, r, q)
        if kind == S_MIN_WAIT:
            return self.s_insert(state, r, q)
        raise AssertionError(f"unknown scheduler pc {rank.s_pc}")

    def _after_issue(self, q: int) -> tuple[int, int]:
        return (S_ISSUE, q + 1) if q + 1 < self.config.num_requests else (S_DRAIN, 0)

    def s_issue(self, state, r, q):
        cfg, rank = self.config, state[r]
        nxt = self._after_issue(q)
        if not cfg.is_issued_by_threshold(q):
            return [(Action(r, SCHEDULER, "issue_skipped", q), set_rank(state, r, rank._replace(s_pc=nxt)))]
        op = rank.ops[q]._replace(
            issued=True, ongoing=True, slots=(HELD,) * cfg.requests[q].pages
        )
        issued = set_op(rank, q, op, s_pc=nxt, prefetch_queue=rank.prefetch_queue + (q,))
        out = [(Action(r, SCHEDULER, "issue", q), set_rank(state, r, issued))]
        if cfg.alloc_may_fail[r]:
            failed = rank._replace(s_pc=nxt)
            out.append((Action(r, SCHEDULER, "issue_alloc_failed", q), set_rank(state, r, failed)))
        return out

    def s_drain_arrive(self, state, r):
        rank = state[r]
        sizes = (len(rank.revoke_queue), rank.release_queue)
        moved = rank._replace(s_pc=(S_DRAIN_WAIT, 0))
        return [(Action(r, SCHEDULER, "drain_arrive"), arrive(state, GROUP, r, moved, DRAIN_TAG, sizes, min))]

    def s_drain(self, state, r):
        rank = state[r]
        agreed = result_for(rank, GROUP, DRAIN_TAG)
        if agreed is None:
            return []
        n_revoke, n_release = agreed
        rank = self.drained(rank._replace(s_coll=()), n_revoke, self.release_count(n_release, rank))
        return [(Action(r, SCHEDULER, "drain"), set_rank(state, r, rank))]

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

    def s_check(self, state, r, q):
        cfg, rank = self.config, state[r]
        op = rank.ops[q]
        if not op.ongoing:
            ready = set_op(rank, q, op._replace(ready=True))
            ready = ready._replace(s_pc=next_waiting(ready.ops, q))
            return [(Action(r, SCHEDULER, "ready_without_prefetch", q), set_rank(state, r, ready))]
        if cfg.policy == "best_effort":
            # upstream returns before the collective: best_effort always terminates
            return [(Action(r, SCHEDULER, "check", q), self._terminate(state, r, q, rank))]
        can = self.decide(state, r, q)
        moved = rank._replace(s_pc=(S_MAX_WAIT, q))
        nxt = arrive(state, GROUP, r, moved, (C_TERMINATE, q), self.termination_vote(op, can), self.termination_reduce)
        return [(Action(r, SCHEDULER, "check", q), nxt)]

    # the reduction of the termination collective (all_reduce MAX)
    termination_reduce = staticmethod(max)

    def termination_vote(self, op, can: bool) -> tuple[int, int]:
        """What this rank brings to the termination collective: [not can_terminate, terminated]."""
        terminated = int(op.terminated) if self.config.shape == "late2025" else 0
        return (1 - int(can), terminated)

    def s_decide(self, state, r, q):
        rank = state[r]
        agreed = result_for(rank, GROUP, (C_TERMINATE, q))
        if agreed is None:
            return []
        not_all_can, any_terminated = agreed
        if not_all_can == 0 or any_terminated:
            return [(Action(r, SCHEDULER, "terminate", q), self._terminate(state, r, q, rank._replace(s_coll=())))]
        waiting = rank._replace(s_coll=(), s_pc=next_waiting(rank.ops, q))
        return [(Action(r, SCHEDULER, "keep_waiting", q), set_rank(state, r, waiting))]

    def _terminate(self, state, r, q, rank):
        """mark_terminate under the lock, read completed_tokens, arrive in all_reduce(MIN)."""
        op = rank.ops[q]._replace(terminated=True)
        moved = set_op(rank, q, op, s_pc=(S_MIN_WAIT, q))
        tokens = op.completed * self.config.page_size
        return arrive(state, GROUP, r, moved, (C_COMPLETED, q), (tokens,), min)

    def s_insert(self, state, r, q):
        ps, rank = self.config.page_size, state[r]
        agreed = result_for(rank, GROUP, (C_COMPLETED, q))
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
        rank = rank._replace(s_pc=next_waiting(rank.ops, q))
        return [(Action(r, SCHEDULER, "insert", q), set_rank(state, r, rank))]

    def insert_tokens(self, agreed: tuple, op) -> int:
        """The tokens insert hands to the tree: min_completed, the result of all_reduce(MIN)."""
        (min_completed,) = agreed
        return min_completed
