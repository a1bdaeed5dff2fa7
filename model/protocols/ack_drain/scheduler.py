"""Scheduler thread S[r]: issue, abort, the drain (hits, ACKs, releases), the checks.

One sequential program per rank: each round starts with the aborts due in it, then the
drain (`check_hicache_events`: all_reduce(MIN) of the queue sizes, then exactly that many
pops of each queue, in upstream's order), then a walk over the waiting requests in order,
as far as the admission loop gets (`admission_limit`): a request admitted earlier and
preempted since is admitted again (a new prefetch under the same id); a waiting one is
checked (`check_prefetch_progress`).

Atomicity, as in the predicate-poll model: a collective's arrival is merged with the local
work before it, its departure with the work after it (Lipton: arrivals move left,
departures right). Every step's description sits beside it and reads what the step did off
the rank before and after it.
"""

from __future__ import annotations

from prefetch_check.model.interface import Step, formats, result
from prefetch_check.model.protocols.ack_drain.state import (
    C_DRAIN,
    C_VOTE,
    HELD,
    LOADING,
    NO_OP,
    PROGRESS,
    QUEUED,
    REVOKED,
    S_CHECK,
    S_CRASHED,
    S_DRAIN_WAIT,
    S_ISSUE,
    S_ROUND,
    S_VOTE_WAIT,
    RELEASED,
    Op,
    give_back,
    set_op,
    set_req,
)
from prefetch_check.model.protocols.poll.wording import arrival

S = "S"
DRAIN_TAG = (C_DRAIN, -1)


class SchedulerSteps:
    # Where the scheduler is, in words (the trace's per-rank view, `state_words.pc_words`); a
    # variant that adds a state adds its name: {**AckDrainProtocol.scheduler_states, KIND: "..."}.
    scheduler_states = {
        S_ISSUE: "issue q{q}",
        S_ROUND: "round start (aborts, drain)",
        S_DRAIN_WAIT: "waiting in drain all_reduce(MIN)",
        S_CHECK: "check q{q}",
        S_VOTE_WAIT: "q{q}: waiting in all_reduce(MAX)",
        S_CRASHED: "dead",
    }

    def scheduler_steps(self, r: int, rank) -> list[Step]:
        kind, q, checked = rank.s_pc
        if kind == S_ISSUE:
            return self.s_issue(r, rank, q)
        if kind == S_ROUND:
            return self.s_round(r, rank)
        if kind == S_DRAIN_WAIT:
            return self.s_drain(r, rank)
        if kind == S_CHECK:
            return self.s_walk(r, rank, q, checked)
        if kind == S_VOTE_WAIT:
            return self.s_decide(r, rank, q, checked)
        return []  # S_CRASHED: the thread is gone

    # ---- issue: prefetch_from_storage ----

    def _issue(self, rank, q: int, gen: int):
        """A new operation for generation `gen` of request q, on prefetch_queue, in ongoing_prefetch."""
        i = self.op_index(q, gen)
        rank = set_op(rank, i, Op(issued=True, stage=QUEUED), prefetch_queue=rank.prefetch_queue + (i,))
        return set_req(rank, q, rank.reqs[q]._replace(gen=gen, ongoing=i, ready=False))

    def s_issue(self, r, rank, q):
        nxt = (S_ISSUE, q + 1, 0) if q + 1 < self.config.num_requests else (S_ROUND, 0, 0)
        if not self.config.is_issued_by_threshold(q):
            return [Step(S, "issue_skipped", q, rank._replace(s_pc=nxt))]
        return [Step(S, "issue", q, self._issue(rank, q, 0)._replace(s_pc=nxt))]

    @formats("S.issue")
    def format_issue(self, before, after, a):
        i = after.reqs[a.q].ongoing
        return (
            f"prefetch_from_storage(q{a.q}): operation #{i} on prefetch_queue, ongoing_prefetch[q{a.q}] = #{i}; "
            "no host memory yet (allocated at the hit drain)"
        )

    @formats("S.issue_skipped")
    def format_issue_skipped(self, before, after, a):
        cfg = self.config
        return f"prefetch_from_storage(q{a.q}) skipped: length {cfg.prefetch_tokens(a.q)} < prefetch_threshold {cfg.prefetch_threshold}"

    # ---- the top of a round: aborts, then the drain ----

    def s_round(self, r, rank):
        for q, spec in enumerate(self.config.requests):
            if spec.abort_round == rank.round and not rank.reqs[q].aborted:
                return [Step(S, "abort", q, self.aborted(rank, q))]
        return self.drain_start(r, rank)

    def drain_start(self, r, rank):
        """check_hicache_events: arrive in all_reduce(MIN) with the sizes of the queues the drain pops."""
        sizes = (len(rank.hit_queue), len(rank.ack_queue), rank.release_queue)
        return [Step(S, "drain_arrive", -1, rank._replace(s_pc=(S_DRAIN_WAIT, 0, 0)), (DRAIN_TAG, sizes))]

    def aborted(self, rank, q: int):
        """release_aborted_request(rid): no host memory yet -> terminate and revoke; else terminate,
        drop it from ongoing_prefetch and queue [0, completed_tokens) for release (the tail is
        given back when its completed_req is drained)."""
        req = rank.reqs[q]
        done = req.ready and req.gen + 1 >= self.config.requests[q].generations
        rank = set_req(rank, q, req._replace(aborted=True, ready=True, cut=not done))
        i = req.ongoing
        if i == NO_OP:
            return rank
        op = rank.ops[i]._replace(terminated=True)
        rank = set_op(rank, i, op)
        if op.stage != LOADING:
            return self.revoke_pending(rank, q)
        head = min(op.completed, len(op.slots)) if self.abort_releases_completed() else 0
        rank = set_op(rank, i, op._replace(slots=give_back(op.slots, 0, head, RELEASED)), release_queue=rank.release_queue + head)
        return set_req(rank, q, rank.reqs[q]._replace(ongoing=NO_OP))

    def abort_releases_completed(self) -> bool:
        """release_aborted_request queues the slots [0, completed_tokens) for release."""
        return True

    @formats("S.abort")
    def format_abort(self, before, after, a):
        i = before.reqs[a.q].ongoing
        if i == NO_OP:
            return f"release_aborted_request(q{a.q}): not in ongoing_prefetch, nothing to do"
        op = before.ops[i]
        if op.stage != LOADING:
            return f"release_aborted_request(q{a.q}): #{i} has no host memory yet -> terminate, revoke"
        return (
            f"release_aborted_request(q{a.q}): terminate #{i}, drop it from ongoing_prefetch, queue host slots "
            f"[0, {op.completed}) on host_mem_release_queue (the rest when its completed_req is drained)"
        )

    @formats("S.drain_arrive")
    def format_drain_arrive(self, before, after, a):
        return (
            f"check_hicache_events: hit queue {len(before.hit_queue)}, ACK queue {len(before.ack_queue)}, "
            f"release queue {before.release_queue} -> all_reduce(MIN) arrive{arrival(after.s_coll)}"
        )

    def s_drain(self, r, rank):
        agreed = result(rank, "s_coll", DRAIN_TAG)
        if agreed is None:
            return []
        return [Step(S, "drain", -1, self.drained(r, rank._replace(s_coll=()), agreed))]

    def drained(self, r, rank, agreed):
        """Pop exactly the agreed numbers of hits, ACKs and releases, in upstream's order; the round's walk follows."""
        n_hit, n_ack, n_release = agreed
        hits, rank = rank.hit_queue[:n_hit], rank._replace(hit_queue=rank.hit_queue[n_hit:])
        for i in hits:
            rank = self.drain_hit(r, rank, i)
        acks, rank = rank.ack_queue[:n_ack], rank._replace(ack_queue=rank.ack_queue[n_ack:])
        for ack in acks:
            rank = self.drain_ack(rank, ack)
            if rank.s_pc[0] == S_CRASHED:
                return rank
        rank = rank._replace(release_queue=rank.release_queue - n_release)
        if rank.round <= self.config.last_abort_round:
            rank = rank._replace(round=rank.round + 1)
        return rank._replace(s_pc=self.next_in_walk(rank, -1, 0))

    def drain_hit(self, r: int, rank, i: int):
        """One operation off prefetch_hit_queue: its request gone -> skip; terminated or below the
        threshold -> revoke; else allocate its hits (or the prefix the pool can give) and put it on
        prefetch_buffer, or revoke when nothing can be allocated."""
        q = self.request_of[i]
        op = rank.ops[i]
        if rank.reqs[q].ongoing == NO_OP:
            return set_op(rank, i, op._replace(stage=REVOKED))
        if op.terminated or op.hash_value * self.config.page_size < self.config.prefetch_threshold:
            return self.revoke_pending(set_op(rank, i, op._replace(stage=REVOKED)), q, by=i)
        pages = self.config.alloc_pages(r, op.hash_value)
        if pages == 0:
            return self.revoke_pending(set_op(rank, i, op._replace(stage=REVOKED)), q, by=i)
        op = op._replace(stage=LOADING, hash_value=pages, slots=(HELD,) * pages)
        return set_op(rank, i, op, prefetch_buffer=rank.prefetch_buffer + (i,))

    def drain_ack(self, rank, ack):
        """One ACK off ack_prefetch_queue: a progress ACK sets completed_tokens; completed_req
        inserts the result (if the operation is still current) and gives back the tail."""
        i, kind, pages = ack
        current = self.is_current(rank, i)
        if kind == PROGRESS:
            if current:
                rank = set_op(rank, i, rank.ops[i]._replace(completed=pages))
            return rank
        if current:
            rank = self.handle_result(rank, i)
            if rank.s_pc[0] == S_CRASHED:
                return rank
        return self.release_tail(rank, i)

    @formats("S.drain")
    def format_drain(self, before, after, a):
        if not before.s_coll:  # a variant that drains without the collective
            agreed = (len(before.hit_queue), len(before.ack_queue), before.release_queue)
            head = f"drain without all_reduce, this rank's own sizes {list(agreed)}: "
        else:
            agreed = before.s_coll[2]
            head = f"drain: all_reduce(MIN) -> {list(agreed)}: "
        n_hit, n_ack, n_release = agreed
        parts = []
        for i in before.hit_queue[:n_hit]:
            op = after.ops[i]
            if op.stage == LOADING:
                parts.append(f"#{i}: allocate {op.hash_value} page(s), on prefetch_buffer")
            elif before.reqs[self.request_of[i]].ongoing == NO_OP:
                parts.append(f"#{i}: its request is gone, skipped")
            else:
                ongoing = before.reqs[self.request_of[i]].ongoing
                whose = "" if ongoing == i else f" -> _revoke_pending_prefetch drops ongoing_prefetch's #{ongoing}"
                parts.append(f"#{i}: revoked (terminated, below the threshold or no host memory){whose}")
        for i, kind, pages in before.ack_queue[:n_ack]:
            q = self.request_of[i]
            if kind == PROGRESS:
                applied = "completed_tokens := " + str(pages * self.config.page_size) if self.is_current(before, i) else "ignored (not current)"
                parts.append(f"ACK #{i} progress {pages} page(s): {applied}")
            else:
                handled = "insert the result" if self.is_current(before, i) else "not current: no insert"
                parts.append(f"ACK #{i} completed_req: {handled}, give back [completed, L)")
                if after.s_pc[0] == S_CRASHED:
                    parts.append(f"_handle_prefetch_result on ongoing_prefetch[q{q}] without host memory: the scheduler thread dies")
        if n_release:
            parts.append(f"free {n_release} released slot(s)")
        return head + ("; ".join(parts) or "nothing to pop")

    # ---- the walk over the waiting requests ----

    def next_in_walk(self, rank, after: int, checked: int) -> tuple[int, int, int]:
        """The next request the admission loop reaches this round, or the next round."""
        limit = self.config.admission_limit
        if limit and checked >= limit:
            return (S_ROUND, 0, 0)
        for q in range(after + 1, self.config.num_requests):
            req = rank.reqs[q]
            if req.aborted:
                continue
            if not req.ready or req.gen + 1 < self.config.requests[q].generations:
                return (S_CHECK, q, checked)
        return (S_ROUND, 0, 0)

    def s_walk(self, r, rank, q, checked):
        req = rank.reqs[q]
        if req.ready:  # admitted before, preempted since: admitted again
            return [Step(S, "readmit", q, self._readmit(rank, q, checked))]
        return self.s_check(r, rank, q, checked)

    def _readmit(self, rank, q, checked):
        gen = rank.reqs[q].gen + 1
        if self.config.is_issued_by_threshold(q):
            rank = self._issue(rank, q, gen)
        else:
            rank = set_req(rank, q, rank.reqs[q]._replace(gen=gen, ready=False))
        return rank._replace(s_pc=self.next_in_walk(rank, q, checked))

    @formats("S.readmit")
    def format_readmit(self, before, after, a):
        i = after.reqs[a.q].ongoing
        if i == NO_OP:
            return f"q{a.q} preempted and admitted again: prefetch_from_storage skipped (below the threshold)"
        return f"q{a.q} preempted and admitted again: prefetch_from_storage issues #{i} under the same request id"

    def s_check(self, r, rank, q, checked):
        """check_prefetch_progress(q)."""
        req = rank.reqs[q]
        checked += 1
        if req.ongoing == NO_OP:
            done = set_req(rank, q, req._replace(ready=True))
            return [Step(S, "ready", q, done._replace(s_pc=self.next_in_walk(done, q, checked)))]
        op = rank.ops[req.ongoing]
        if self.votes_at_check(op):
            vote = int(op.terminated or self.decide_op(op))
            moved = rank._replace(s_pc=(S_VOTE_WAIT, q, checked))
            return [Step(S, "vote", q, moved, ((C_VOTE, q), (vote,)))]
        if op.terminated or self.decide_op(op):
            return [Step(S, "accept", q, self._terminated(rank, q, checked))]
        return [Step(S, "wait", q, self._waiting(rank, q, checked))]

    def votes_at_check(self, op) -> bool:
        """HiRadixCache votes at every check (PP rank 0 decides, MAX over the ranks); the unified
        cache only under the timeout policy, and not at all once its own operation is terminated."""
        if self.config.cache == "hiradix":
            return True
        return self.config.policy == "timeout" and not op.terminated

    def _terminated(self, rank, q, checked):
        """terminate_prefetch, then revoke (no host memory yet) or insert the result; the request is done."""
        i = rank.reqs[q].ongoing
        op = rank.ops[i]._replace(terminated=True)
        rank = set_op(rank, i, op)
        rank = self.revoke_pending(rank, q) if op.stage != LOADING else self.handle_result(rank, i)
        if rank.s_pc[0] == S_CRASHED:
            return rank
        rank = set_req(rank, q, rank.reqs[q]._replace(ready=True))
        return rank._replace(s_coll=(), s_pc=self.next_in_walk(rank, q, checked))

    def _waiting(self, rank, q, checked):
        i = rank.reqs[q].ongoing
        op = rank.ops[i]
        if self.config.deadline == "admission" and not op.wait_started:
            rank = set_op(rank, i, op._replace(wait_started=True))
        return rank._replace(s_coll=(), s_pc=self.next_in_walk(rank, q, checked))

    def s_decide(self, r, rank, q, checked):
        agreed = result(rank, "s_coll", (C_VOTE, q))
        if agreed is None:
            return []
        if agreed[0]:
            return [Step(S, "terminate", q, self._terminated(rank, q, checked))]
        return [Step(S, "keep_waiting", q, self._waiting(rank, q, checked))]

    def _outcome(self, before, after, q) -> str:
        i = before.reqs[q].ongoing
        if after.s_pc[0] == S_CRASHED:
            return f"terminate_prefetch(#{i}); _handle_prefetch_result without host memory: the scheduler thread dies"
        if before.ops[i].stage != LOADING:
            return f"terminate_prefetch(#{i}): no host memory yet -> revoke; q{q} ready"
        return (
            f"terminate_prefetch(#{i}); _handle_prefetch_result: insert {after.reqs[q].tree} page(s) of q{q} "
            f"into the host tree; q{q} ready"
        )

    @formats("S.ready")
    def format_ready(self, before, after, a):
        return f"check_prefetch_progress(q{a.q}): not in ongoing_prefetch -> done, q{a.q} ready ({after.reqs[a.q].tree} page(s) in the tree)"

    @formats("S.vote")
    def format_vote(self, before, after, a):
        op = before.ops[before.reqs[a.q].ongoing]
        return (
            f"check_prefetch_progress(q{a.q}): is_terminated()={op.terminated}, {self.explain_predicate(op)}; "
            f"all_reduce(MAX) arrive [{after.s_coll[2][0]}]{arrival(after.s_coll)}"
        )

    @formats("S.accept")
    def format_accept(self, before, after, a):
        op = before.ops[before.reqs[a.q].ongoing]
        why = "is_terminated()" if op.terminated else self.explain_predicate(op)
        return f"check_prefetch_progress(q{a.q}): {why} -> {self._outcome(before, after, a.q)}"

    @formats("S.wait")
    def format_wait(self, before, after, a):
        op = before.ops[before.reqs[a.q].ongoing]
        clock = "; the admission deadline starts" if after.ops[before.reqs[a.q].ongoing].wait_started and not op.wait_started else ""
        return f"check_prefetch_progress(q{a.q}): {self.explain_predicate(op)} (no collective) -> wait{clock}"

    @formats("S.terminate")
    def format_terminate(self, before, after, a):
        return f"all_reduce(MAX) -> [1]: {self._outcome(before, after, a.q)}"

    @formats("S.keep_waiting")
    def format_keep_waiting(self, before, after, a):
        return f"all_reduce(MAX) -> [0]: no rank votes to terminate q{a.q} -> keep waiting"
