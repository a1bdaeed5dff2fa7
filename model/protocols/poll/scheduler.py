"""Scheduler thread S[r]: issue, drain, check_prefetch_progress, terminate, insert.

Each method returns the steps rank r's scheduler can take from its rank state. The
scheduler is one sequential program per rank, so at most one step is enabled, except at
`issue` where host allocation may fail (a nondeterministic choice).

Atomicity (Lipton reduction; a collective's departure is a right mover, an arrival a left
mover): `check` evaluates the predicate, reads `terminated` and arrives in the MAX
collective in one step; `terminate` departs it, marks the operation terminated, reads
`completed_tokens` and arrives in the MIN collective; `insert` departs that one and
updates the tree. After `mark_terminate` `completed_tokens` cannot change, so reading it
together with the mark loses no behaviour. The drain pops every queue it agreed on in one
step (with alloc_at = "hit" it also reserves host slots for each hit it pops): nothing
but this scheduler reads what it changes before its next step.

Each step's description sits beside it (`@formats`) and says what the step did, read off
the rank before and after it, so a variant that changes a step's effect is described
truthfully without a description of its own.
"""

from __future__ import annotations

from prefetch_check.model.interface import Step, formats, result
from prefetch_check.model.protocols.poll.state import (
    C_COMPLETED,
    C_DRAIN,
    C_ROUND,
    C_TERMINATE,
    DROPPED,
    HELD,
    IN_TREE,
    PUBLISHED,
    REVOKED,
    S_CHECK,
    S_DRAIN,
    S_DRAIN_WAIT,
    S_INSERT,
    S_ISSUE,
    S_MAX_WAIT,
    S_MIN_WAIT,
    S_ROUND_WAIT,
    give_back,
    set_op,
)
from prefetch_check.model.protocols.poll.wording import arrival, op_label, vote_text

S = "S"
DRAIN_TAG = (C_DRAIN, -1)
QUEUE_WORDS = {"revoke": "revoke queue", "hit": "prefetch_hit_queue", "release": "release queue"}


def next_waiting(ops, after: int) -> tuple[int, int]:
    """The scheduler's next position in a round: the next unresolved request, or the next round."""
    for q in range(after + 1, len(ops)):
        if not ops[q].ready:
            return (S_CHECK, q)
    return (S_DRAIN, 0)


class SchedulerSteps:
    # Where the scheduler is, in words (the trace's per-rank view, `state_words.pc_words`); a
    # variant that adds a state adds its name: {**PollProtocol.scheduler_states, KIND: "..."}.
    scheduler_states = {
        S_ISSUE: "issue q{q}",
        S_DRAIN: "drain (round start)",
        S_DRAIN_WAIT: "waiting in drain all_reduce(MIN)",
        S_CHECK: "check q{q}",
        S_MAX_WAIT: "q{q}: waiting in all_reduce(MAX)",
        S_MIN_WAIT: "q{q}: waiting in all_reduce(MIN completed)",
        S_INSERT: "insert q{q} (own completed_tokens)",
        S_ROUND_WAIT: "waiting in the round's all_reduce(MIN) #{q} before the drain",
    }

    def scheduler_steps(self, r: int, rank) -> list[Step]:
        kind, q = rank.s_pc
        if kind == S_ISSUE:
            return self.s_issue(r, rank, q)
        if kind == S_DRAIN:
            if q < self.round_collectives():
                return self.s_round_arrive(r, rank, q)
            return self.s_drain_arrive(r, rank)
        if kind == S_ROUND_WAIT:
            return self.s_round_leave(r, rank, q)
        if kind == S_DRAIN_WAIT:
            return self.s_drain(r, rank)
        if kind == S_CHECK:
            return self.s_check(r, rank, q)
        if kind == S_MAX_WAIT:
            return self.s_decide(r, rank, q)
        if kind in (S_MIN_WAIT, S_INSERT):
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
        queued = rank._replace(s_pc=nxt, prefetch_queue=rank.prefetch_queue + (q,))
        unallocated = rank.ops[q]._replace(issued=True, ongoing=True)
        if cfg.alloc_at == "hit":  # host slots come when the drain pops its hits
            return [Step(S, "issue", q, set_op(queued, q, unallocated))]
        op = unallocated._replace(allocated=True, slots=(HELD,) * cfg.requests[q].pages)
        out = [Step(S, "issue", q, set_op(queued, q, op))]
        if cfg.alloc_may_fail[r]:
            failed = set_op(queued, q, unallocated) if cfg.queue_unallocated else rank._replace(s_pc=nxt)
            out.append(Step(S, "issue_alloc_failed", q, failed))
        return out

    @formats("S.issue")
    def format_issue(self, before, after, a):
        if not after.ops[a.q].allocated:
            return (
                f"issue q{a.q}: no host slots yet (reserved when the drain pops its hits), put the operation "
                f"on prefetch_queue, ongoing_prefetch[q{a.q}] set"
            )
        return (
            f"issue q{a.q}: allocate {self.config.prefetch_tokens(a.q)} host slots, put the operation on "
            f"prefetch_queue, ongoing_prefetch[q{a.q}] set"
        )

    @formats("S.issue_alloc_failed")
    def format_issue_alloc_failed(self, before, after, a):
        if after.ops[a.q].issued:
            return (
                f"issue q{a.q}: host allocation fails on this rank: the operation is queued anyway, without "
                f"host slots (host_indices is None), ongoing_prefetch[q{a.q}] set"
            )
        return f"issue q{a.q}: host allocation fails on this rank: no operation, no ongoing_prefetch entry"

    @formats("S.issue_skipped")
    def format_issue_skipped(self, before, after, a):
        cfg = self.config
        return f"issue q{a.q} skipped: prefetch length {cfg.prefetch_tokens(a.q)} < prefetch_threshold {cfg.prefetch_threshold}"

    # ---- the round's collectives before the drain (`Config.round_collectives`) ----

    # What this rank brings: the count of finished write-backs (writing_check) or load-backs
    # (loading_check) at the head of their ack queues. The model has neither (nothing is written
    # through or loaded back), so it is 0 on every rank and the result pops nothing: what the
    # collective does to the prefetch protocol is make every rank's scheduler wait for the others
    # before its drain reads the queue sizes.
    ROUND_VALUE = (0,)

    def round_collectives(self) -> int:
        """The round's collectives before the drain the model takes: `Config.round_collectives` with
        more than one rank. At TP 1 there is nobody to wait for and the value is 0, so the steps
        would change nothing but the scheduler's own pc (the code's all_reduce returns at once):
        leaving them out keeps 1-rank counts and counterexamples as they are."""
        return self.config.round_collectives if self.config.ranks > 1 else 0

    def s_round_arrive(self, r, rank, k: int):
        moved = rank._replace(s_pc=(S_ROUND_WAIT, k))
        return [Step(S, "round_arrive", -1, moved, ((C_ROUND, k), self.ROUND_VALUE))]

    @formats("S.round_arrive")
    def format_round_arrive(self, before, after, a):
        k = after.s_pc[1]
        return (f"round start, before the drain: {self.round_collective_name(k)}: "
                f"{op_label(self, C_ROUND)} of finished acks arrive with 0{arrival(after.s_coll)}")

    def s_round_leave(self, r, rank, k: int):
        if result(rank, "s_coll", (C_ROUND, k)) is None:
            return []
        return [Step(S, "round_leave", -1, rank._replace(s_coll=(), s_pc=(S_DRAIN, k + 1)))]

    @formats("S.round_leave")
    def format_round_leave(self, before, after, a):
        k = before.s_pc[1]
        return f"{self.round_collective_name(k)}: {op_label(self, C_ROUND)} -> {list(before.s_coll[2])}: nothing to pop"

    def round_collective_name(self, k: int) -> str:
        """The round's k-th collective: writing_check's (0.5.1.x), loading_check's (0.5.13), or
        writing_check's, then loading_check's (0.5.14-0.5.16)."""
        if self.config.round_collectives == 2:
            return ("writing_check", "loading_check")[k]
        return "writing_check or loading_check"

    # ---- drain ----

    def drain_sizes(self, rank) -> tuple[int, ...]:
        """The sizes this rank brings to the drain's all_reduce(MIN), in `Config.drain_queues` order."""
        sizes = {"revoke": len(rank.revoke_queue), "hit": len(rank.hit_queue), "release": rank.release_queue}
        return tuple(sizes[name] for name in self.config.drain_queues())

    def s_drain_arrive(self, r, rank):
        sizes = self.drain_sizes(rank)
        return [Step(S, "drain_arrive", -1, rank._replace(s_pc=(S_DRAIN_WAIT, 0)), (DRAIN_TAG, sizes))]

    @formats("S.drain_arrive")
    def format_drain_arrive(self, before, after, a):
        sizes = ", ".join(f"{QUEUE_WORDS[n]} {v}" for n, v in zip(self.config.drain_queues(), self.drain_sizes(before)))
        return f"drain: {sizes} -> all_reduce(MIN) arrive{arrival(after.s_coll)}"

    def s_drain(self, r, rank):
        agreed = result(rank, "s_coll", DRAIN_TAG)
        if agreed is None:
            return []
        counts = dict(zip(self.config.drain_queues(), agreed))
        release = self.release_count(counts.get("release", 0), rank)
        rank = self.drained(r, rank._replace(s_coll=()), counts.get("revoke", 0), release, counts.get("hit", 0))
        return [Step(S, "drain", -1, rank)]

    def release_count(self, agreed: int, rank) -> int:
        """How many release-queue entries drain frees: the count all ranks agreed on."""
        return agreed

    def drained(self, r, rank, n_revoke: int, n_release: int, n_hit: int = 0):
        """Pop n_revoke request ids (dropping them from ongoing_prefetch), n_hit operations off
        prefetch_hit_queue (allocating their host slots), free n_release slots, start the round."""
        ops = list(rank.ops)
        for q in rank.revoke_queue[:n_revoke]:
            ops[q] = ops[q]._replace(ongoing=False)
        buffer = rank.prefetch_buffer
        for q in rank.hit_queue[:n_hit]:
            ops[q] = self.hit_drained(r, q, ops[q])
            if ops[q].stage == PUBLISHED:
                buffer += (q,)
        rank = rank._replace(
            revoke_queue=rank.revoke_queue[n_revoke:],
            hit_queue=rank.hit_queue[n_hit:],
            prefetch_buffer=buffer,
            release_queue=rank.release_queue - n_release,
            ops=tuple(ops),
        )
        return rank._replace(s_pc=next_waiting(rank.ops, -1))

    def hit_drained(self, r: int, q: int, op):
        """One operation popped off prefetch_hit_queue: skipped when no longer in ongoing_prefetch;
        revoked when terminated, below the drain's threshold, or when no host slots can be had;
        else its host slots are reserved (all hits, or the prefix that fits), hash_value cut to
        them, and it goes on prefetch_buffer."""
        cfg = self.config
        if not op.ongoing:
            return op._replace(stage=DROPPED)
        revoked = op._replace(stage=REVOKED, ongoing=False)
        if op.terminated:
            return revoked
        if cfg.threshold_test == "drain" and cfg.below_threshold(op.hash_value):
            return revoked
        pages = cfg.hit_alloc_pages(q, r, op.hash_value)
        if pages is None:
            return revoked
        return op._replace(stage=PUBLISHED, allocated=True, hash_value=pages, slots=(HELD,) * pages)

    def _hit_text(self, q: int, before, after) -> str:
        ps, cfg = self.config.page_size, self.config
        if after.stage == DROPPED:
            return f"q{q} no longer in ongoing_prefetch: skipped"
        if after.stage == REVOKED:
            if before.terminated:
                return f"q{q} terminated: revoked"
            if cfg.threshold_test == "drain" and cfg.below_threshold(before.hash_value):
                return f"q{q} {before.hash_value * ps} hit tokens < threshold {cfg.prefetch_threshold}: revoked"
            return f"q{q} no host slots for {before.hash_value} page(s) nor a prefix >= threshold {cfg.prefetch_threshold}: revoked"
        got = len(after.slots)
        if got < before.hash_value:
            return (
                f"q{q} room for {got} of {before.hash_value} page(s): allocate {got * ps} host slots, "
                f"hash_value cut to {got} page(s), put on prefetch_buffer"
            )
        return f"q{q} allocate {got * ps} host slots, put on prefetch_buffer"

    @formats("S.drain")
    def format_drain(self, before, after, a):
        popped = before.revoke_queue[: len(before.revoke_queue) - len(after.revoke_queue)]
        hits = before.hit_queue[: len(before.hit_queue) - len(after.hit_queue)]
        freed = before.release_queue - after.release_queue
        names = ", ".join(f"q{x}" for x in popped) or "none"
        queues = self.config.drain_queues()
        parts = []
        if "revoke" in queues:
            parts.append(f"{len(popped)} revoked (dropped from ongoing_prefetch: {names})")
        if "hit" in queues:
            detail = "; ".join(self._hit_text(q, before.ops[q], after.ops[q]) for q in hits)
            parts.append(f"{len(hits)} hit(s)" + (f" ({detail})" if detail else ""))
        if "release" in queues:
            parts.append(f"free {freed} released slots")
        if not before.s_coll:  # a variant that drains without the collective
            return "drain without all_reduce: pop this rank's own " + ", ".join(parts)
        text = "drain: agreed " + ", ".join(parts)
        agreed = dict(zip(queues, before.s_coll[2]))
        if "release" in agreed and freed != agreed["release"]:
            text += f" (the agreed count was {agreed['release']})"
        if after.release_queue:
            text += f"; {after.release_queue} stay queued"
        return text

    # ---- check, terminate, insert ----

    def s_check(self, r, rank, q):
        op = rank.ops[q]
        if not op.ongoing:
            ready = set_op(rank, q, op._replace(ready=True))
            return [Step(S, "ready_without_prefetch", q, ready._replace(s_pc=next_waiting(ready.ops, q)))]
        if self.config.queue_unallocated and not op.allocated:
            # 0.5.1.x: "prefetch has not been issued due to insufficient host memory": ready, entry kept
            ready = set_op(rank, q, op._replace(ready=True))
            return [Step(S, "ready_unallocated", q, ready._replace(s_pc=next_waiting(ready.ops, q)))]
        if self.config.policy == "best_effort":
            # upstream returns before the collective: best_effort always terminates
            return [self._terminate("check", rank, q)]
        vote = self.termination_vote(op, self.decide_op(op))
        return [Step(S, "check", q, rank._replace(s_pc=(S_MAX_WAIT, q)), ((C_TERMINATE, q), vote))]

    @formats("S.ready_without_prefetch")
    def format_ready_without_prefetch(self, before, after, a):
        return f"check_prefetch_progress(q{a.q}): not in ongoing_prefetch -> ready, nothing loaded"

    @formats("S.ready_unallocated")
    def format_ready_unallocated(self, before, after, a):
        return (
            f"check_prefetch_progress(q{a.q}): host_indices is None (allocation failed at issue) -> ready, nothing "
            f"loaded, no collective; q{a.q} stays in ongoing_prefetch until its revoke is drained"
        )

    def termination_vote(self, op, can: bool) -> tuple[int, int]:
        """What this rank brings to the termination collective: [not can_terminate, terminated]."""
        terminated = int(op.terminated) if self.config.shape == "late2025" else 0
        return (1 - int(can), terminated)

    @formats("S.check")
    def format_check(self, before, after, a):
        q = a.q
        if after.s_pc in ((S_MIN_WAIT, q), (S_INSERT, q)):  # best_effort: terminated at once
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

    def skips_completed_min(self) -> bool:
        """No all_reduce(MIN completed_tokens) before insert: each rank inserts its own count."""
        return self.config.completed_min == "except_wait_complete" and self.config.policy == "wait_complete"

    def _terminate(self, name: str, rank, q: int) -> Step:
        """mark_terminate under the lock, read completed_tokens, arrive in all_reduce(MIN)."""
        op = rank.ops[q]
        if self.config.alloc_at == "hit" and not op.allocated:
            return self._terminate_unallocated(rank, q)
        if self.terminate_marks():
            op = op._replace(terminated=True)
        if self.skips_completed_min():
            return Step(S, name, q, set_op(rank, q, op, s_pc=(S_INSERT, q)))
        moved = set_op(rank, q, op, s_pc=(S_MIN_WAIT, q))
        return Step(S, name, q, moved, ((C_COMPLETED, q), (op.completed * self.config.page_size,)))

    def _terminate_unallocated(self, rank, q: int) -> Step:
        """alloc_at = "hit", no host slots yet: terminate_prefetch, then revoke (drop from
        ongoing_prefetch); the request is ready with nothing loaded, no collective."""
        op = rank.ops[q]._replace(terminated=rank.ops[q].terminated or self.terminate_marks(), ongoing=False, ready=True)
        rank = set_op(rank, q, op)
        return Step(S, "terminate_unallocated", q, rank._replace(s_pc=next_waiting(rank.ops, q)))

    @formats("S.terminate_unallocated")
    def format_terminate_unallocated(self, before, after, a):
        head = self._collective_result(before) if before.s_coll else f"check_prefetch_progress(q{a.q}): {self.config.policy}"
        marks = "mark_terminate" if after.ops[a.q].terminated and not before.ops[a.q].terminated else "no mark_terminate"
        return (
            f"{head}: terminate q{a.q} before any host slots were allocated: {marks}, revoke "
            f"(dropped from ongoing_prefetch), ready with nothing loaded"
        )

    def _termination_text(self, before, after, q) -> str:
        marks = "mark_terminate" if after.ops[q].terminated and not before.ops[q].terminated else "no mark_terminate"
        tokens = after.ops[q].completed * self.config.page_size
        if after.s_pc == (S_INSERT, q):
            return f"{marks}, completed_tokens={tokens}; no all_reduce under wait_complete: this rank inserts its own count"
        return f"{marks}, completed_tokens={tokens}; {op_label(self, C_COMPLETED)} arrive{arrival(after.s_coll)}"

    def _collective_result(self, before) -> str:
        return f"{op_label(self, before.s_coll[0][0])} -> {list(before.s_coll[2])}"

    @formats("S.terminate")
    def format_terminate(self, before, after, a):
        return f"{self._collective_result(before)}: terminate_prefetch(q{a.q}): {self._termination_text(before, after, a.q)}"

    def s_insert(self, r, rank, q):
        ps = self.config.page_size
        op = rank.ops[q]
        if rank.s_pc[0] == S_INSERT:
            tokens = op.completed * ps
        else:
            agreed = result(rank, "s_coll", (C_COMPLETED, q))
            if agreed is None:
                return []
            tokens = self.insert_tokens(agreed, op)
            rank = rank._replace(s_coll=())
        tree_pages = tokens // ps
        op, queued = self.released(op._replace(slots=give_back(op.slots, 0, tree_pages, IN_TREE)), tree_pages, op.completed)
        op = op._replace(inserted=tokens, ongoing=False, ready=True)
        rank = set_op(rank, q, op, release_queue=rank.release_queue + queued)
        return [Step(S, "insert", q, rank._replace(s_pc=next_waiting(rank.ops, q)))]

    def insert_tokens(self, agreed: tuple, op) -> int:
        """The tokens insert hands to the tree: min_completed, the result of all_reduce(MIN)."""
        (min_completed,) = agreed
        return min_completed

    @formats("S.insert")
    def format_insert(self, before, after, a):
        ps, q = self.config.page_size, a.q
        tokens = after.ops[q].inserted
        if before.s_pc[0] == S_INSERT:
            head = f"insert this rank's own completed_tokens: hash_value[:{tokens // ps}] ({tokens} tokens)"
        else:
            (m,) = before.s_coll[2]
            if tokens == m:
                head = f"{op_label(self, C_COMPLETED)} -> min_completed={m}: insert hash_value[:{m // ps}] ({m} tokens)"
            else:
                head = (
                    f"{op_label(self, C_COMPLETED)} -> min_completed={m}, ignored: insert this rank's "
                    f"hash_value[:{tokens // ps}] ({tokens} tokens)"
                )
        return f"{head} into the tree, {self.release_words} host slots [{tokens}, {before.ops[q].completed * ps}), q{q} ready"
