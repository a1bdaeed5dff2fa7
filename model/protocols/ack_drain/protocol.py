"""The ack-drain protocol (SGLang 0.5.19 and later): completion through ACKs drained by the scheduler.

Per rank a scheduler `S`, a prefetch thread `P`, an IO thread `I`, a sync thread `Y` and, under
the timeout policy, a clock `C` (PROTOCOL-2026.md). Host memory is allocated when the
scheduler drains the hit count, the IO thread sends a progress ACK per batch and then
completed_req, the sync thread agrees on each progress ACK with a MIN over the ranks, and
the scheduler applies them in its drain. The released shapes (UnifiedRadixCache, what the
server builds, and HiRadixCache 0.5.19-0.5.20; ACK matching, the timeout deadline,
exception handling) are options of the configuration (config.py, releases.py).

What the reductions may assume:
- Rank symmetry: ranks with identical parameters (hits, failing pages, exceptions, host
  memory) are interchangeable. `Rank` lists the scheduler's fields last, and only the
  scheduler loops forever: P, I and Y take irreversible steps (every queue item is taken
  once), and the clock fires once per operation.
- The partial-order reduction at rank granularity (model/engine/reduction.py): every
  property is rank-local (data integrity, a double release, a death, early acceptance) or
  stable once true of an idle system (delivery, agreement of the trees, leaks) or of a
  collective mismatch.
- Steps that are persistent sets on their own (`solo_steps`): each commutes with every step
  of every other thread, no other step disables it, and it changes nothing a property reads
  in a way that matters:
    S.keep_waiting  leaves the vote collective: only this scheduler's pc and register (and,
                    under the admission deadline, starts the clock: that only enables C.timeout)
    I.take          pops the head of prefetch_buffer (the drain appends at the tail)
    I.ack, I.done   append an ACK to prefetch_sync_queue (the sync thread pops the head; nobody
                    reads its length); they read only the IO thread's own counter and the
                    operation's allocated length, which nobody changes once allocated
    Y.take          (issue 23) pops the head of prefetch_sync_queue, a progress ACK, and arrives
                    in the sync threads' all_reduce(MIN). Only the sync thread pops the queue or
                    sets y_pc, and the IO thread only appends (the head, already there, is not
                    changed), so no step of another thread disables it or is changed by it. No
                    other thread reads y_pc or y_coll. Of another rank, only its sync thread
                    touches this collective: the two arrivals commute (whichever comes last
                    completes it, to the same registers), and no rank can leave it before this
                    one arrives. What the properties read: `quiet` stays False (the ACK moves
                    from the queue to y_pc), and the new wait is in the sync group, whose one
                    tag (the ACKs pair by position) can never mismatch another rank's. It
                    consumes one of the finitely many ACKs the IO threads send, so it is on no
                    cycle, and postponing the other steps for it starves nobody. Measured:
                    R3 x Q1 x 2 pages, timeout, storage batch 1: 173,177 -> 97,799 states.
    I.stop          (issue 23) the IO thread finds its operation terminated: no more reads. It
                    reads `terminated`, which nobody resets, and writes only i_pc, which no
                    other thread reads; only the IO thread's own steps can disable it. The
                    views do not change (`quiet` reads i_pc only as "idle or not", and it stays
                    busy). The IO thread only moves forward: on no cycle.
                    R3 x Q1: 97,799 -> 68,348 states.
  and, where the rank tells that nothing depends on the order (`solo_priority`):
    S.drain         (issue 23) leaving the drain's all_reduce(MIN) and popping the agreed counts,
                    when it changes nothing another thread of the rank reads (`drain_commutes`):
                    it pops the first n of prefetch_hit_queue and ack_prefetch_queue, where n is
                    at most this rank's length at its arrival, and the prefetch and sync threads
                    only append behind them (an append and a pop of an earlier item commute);
                    it appends to prefetch_buffer, whose head the IO thread pops; it terminates
                    nothing and changes neither hash_value nor the page list of an operation
                    another thread still holds, and the clock can fire after it for every
                    operation it could fire for before (C.timeout reads ongoing_prefetch and the
                    operation's fields: a drain that completes or revokes an operation whose
                    clock could still fire races with that clock and is not taken alone).
                    Nothing of the other ranks can touch this rank before it moves on. States
                    skipped this way (another thread's step first, then the drain) violate
                    nothing the explored order does not: a write only shrinks the unwritten
                    set, a forward's mixed ACKs stay mixed, a timeout only matters to the
                    delivery check at quiescence, which a rank with a drain due is not in. The
                    drain is part of the scheduler's loop, but every round also takes
                    drain_arrive and the vote's arrival, which are never solo: there the rank's
                    every enabled step is explored, so no cycle ignores one.
                    R3 x Q1: 68,348 -> 44,610 states.
- Postponed (`postponable`, issue 23): C.timeout of request q's operation on rank r, except
  where r's scheduler is about to check q (S_CHECK q), under the timeout deadline of issue
  (`deadline = "issue"`) and with every waiting request checked each round
  (`admission_limit = 0`). The timeout only sets that operation's `timed_out`, which exactly
  two things read: the check of q (the vote or the local answer, in S_CHECK q: there the clock
  is explored in both orders with it) and the views' `disturbed`, an excuse of the delivery
  property. Its other dependences disable it: terminating the operation (the vote's
  terminate, an abort) or ending it (its completed_req or a revoke in the drain), after which
  `timed_out` is read by no step. So every order the reduction drops ("the clock fires, then
  steps that do not read it, then the check of q") is matched, step for step, by the order
  "those steps, then the clock, then the check", and every order in which the operation ends
  first is matched by one that differs only in that operation's `timed_out` being False: the
  same steps follow, and it violates whatever the dropped one violates (a False flag excuses
  nothing more). No cycle postpones it forever: every cycle runs each scheduler's round, and
  every round with admission_limit 0 checks q while its operation is ongoing; where nothing
  else is left to explore, it is explored (model/engine/compiled.py). Not under the admission
  deadline: there a drain can end the clock's chance (`landed`) while the operation goes on.
  Measured: R3 x Q1: 44,610 -> 39,106 states.
  Not solo: P.publish and C.timeout change what the predicate reads; I.write races with a
  termination (the IO thread checks the flag per page); Y.pass and Y.forward append to
  ack_prefetch_queue, whose length the drain's all_reduce reads (when an ACK reaches the drain
  decides whether it is still current: a late completed_req is how a stale one finds a newer
  prefetch); the drain reads and writes what every thread shares.
"""

from __future__ import annotations

from prefetch_check.model.interface import Collective, RankProtocol, Thread, result
from prefetch_check.model.protocols.ack_drain import predicates
from prefetch_check.model.protocols.ack_drain.cache import CacheOperations
from prefetch_check.model.protocols.ack_drain.clock import ClockSteps
from prefetch_check.model.protocols.ack_drain.config import AckConfig, Request, uniform_ack_config
from prefetch_check.model.protocols.ack_drain.io_thread import IOThreadSteps
from prefetch_check.model.protocols.ack_drain.prefetch_thread import PrefetchThreadSteps
from prefetch_check.model.protocols.ack_drain.properties import NAMES, RankView, build_properties, summarize
from prefetch_check.model.protocols.ack_drain.scheduler import DRAIN_TAG, SchedulerSteps
from prefetch_check.model.protocols.state_words import pc_words
from prefetch_check.model.protocols.ack_drain.state import (
    C_ACK,
    C_DRAIN,
    C_HITS,
    C_VOTE,
    DEAD,
    IO_ACK,
    IO_READ,
    NO_OP,
    S_CHECK,
    S_CRASHED,
    initial_rank,
)
from prefetch_check.model.protocols.ack_drain.sync_thread import SyncThreadSteps
from prefetch_check.model.protocols.completion import CompletionPredicate

STAGES = ("queued", "querying", "hit queue", "loading", "revoked")


class AckDrainProtocol(
    SchedulerSteps, PrefetchThreadSteps, IOThreadSteps, SyncThreadSteps, ClockSteps, CacheOperations,
    CompletionPredicate, RankProtocol,
):
    """The protocol of PROTOCOL-2026.md for one configuration and one completion predicate."""

    threads = (
        Thread("S", "scheduler"), Thread("P", "prefetch"), Thread("I", "io"), Thread("Y", "sync"), Thread("C", "clock"),
    )
    # the scheduler's group first: the partial-order reduction visits a rank's waits in this order
    collectives = {
        C_DRAIN: Collective("s_coll", min, "all_reduce(MIN [hits, ACKs, releases]) of the drain"),
        C_VOTE: Collective("s_coll", max, "all_reduce(MAX should_terminate) of the check"),
        C_HITS: Collective("p_coll", min, "all_reduce(MIN hits)"),
        C_ACK: Collective("y_coll", min, "all_reduce(MIN completed_tokens) of a progress ACK"),
    }
    solo_steps = {"S.keep_waiting": 0, "I.take": 1, "I.ack": 2, "I.done": 3, "Y.take": 4, "I.stop": 5}
    DRAIN_PRIORITY = 6  # S.drain where `drain_commutes`
    reductions_vouched = True
    builtin_predicates = ("buggy", "fixed")
    property_names = NAMES
    shape_options = ("cache", "ack_match", "deadline", "exceptions")

    def __init__(self, config: AckConfig, predicate="fixed", name: str | None = None):
        self.config = config
        self.use_predicate(config, predicate, name, predicates.BUILTIN)
        bases, ops_of, request_of = [], [], []
        for q, spec in enumerate(config.requests):
            bases.append(len(request_of))
            ops_of.append(tuple(range(len(request_of), len(request_of) + spec.generations)))
            request_of += [q] * spec.generations
        self.bases, self.ops_of, self.request_of = tuple(bases), tuple(ops_of), tuple(request_of)
        self._properties = build_properties(self)

    def op_index(self, q: int, gen: int) -> int:
        return self.bases[q] + gen

    # ---- the protocol ----

    def initial_rank(self, r: int):
        return initial_rank(len(self.request_of), self.config.num_requests)

    def rank_steps(self, r: int, rank) -> list:
        return (
            self.scheduler_steps(r, rank) + self.prefetch_steps(r, rank) + self.io_steps(r, rank)
            + self.sync_steps(r, rank) + self.clock_steps(r, rank)
        )

    def rank_view(self, rank) -> RankView:
        return summarize(self, rank)

    def properties(self):
        return self._properties

    def quiescent(self, state) -> bool:
        return all(summarize(self, rank).quiet for rank in state)

    def rank_settled(self, rank) -> bool:
        """Every thread idle, every queue empty, every request done, nothing queued for release:
        from here the scheduler only drains empty queues, round after round."""
        return summarize(self, rank).quiet and not rank.release_queue and rank.round > self.config.last_abort_round

    def possible_kinds(self) -> tuple[str, ...]:
        """Leaves out the steps of what this configuration does not have: skips below the
        threshold, aborts, readmissions, the vote (only HiRadixCache, or the timeout policy),
        failing or raising storage calls, the clock."""
        cfg = self.config
        specs = cfg.requests
        out = set()
        if all(cfg.is_issued_by_threshold(q) for q in range(cfg.num_requests)):
            out.add("S.issue_skipped")
        if all(s.abort_round < 0 for s in specs):
            out.add("S.abort")
        if all(s.readmits == 0 for s in specs):
            out.add("S.readmit")
        if cfg.cache == "unified" and cfg.policy != "timeout":
            out |= {"S.vote", "S.terminate", "S.keep_waiting"}
        if cfg.cache == "hiradix":
            out |= {"S.accept", "S.wait"}
        if cfg.exceptions == "caught" or not any(any(s.query_raises) for s in specs):
            out.add("P.query_raises")
        if not any(any(s.batch_raises) for s in specs):
            out.add("I.batch_raises")
        if not any(any(s.failing) for s in specs):
            out.add("I.read_short")
        if cfg.policy == "wait_complete" and all(s.abort_round < 0 for s in specs):
            out.add("I.stop")  # nothing terminates an operation with host memory before its last ACK
        if cfg.policy != "timeout" or not cfg.timeout_clock:
            out.add("C.timeout")
        return tuple(k for k in self.action_kinds() if k not in out)

    # ---- what the reductions may assume ----

    def rank_classes(self) -> tuple[tuple[int, ...], ...]:
        cfg, groups = self.config, {}
        for r in range(cfg.ranks):
            signature = tuple(
                (q.hits[r], tuple(sorted(q.failing[r])), q.query_raises[r], tuple(sorted(q.batch_raises[r])))
                for q in cfg.requests
            ) + (cfg.host_pages[r],)
            groups.setdefault(signature, []).append(r)
        return tuple(tuple(g) for g in groups.values())

    def solo_priority(self, rank, action):
        declared = self.solo_steps.get(action.kind)
        if declared is not None or action.kind != "S.drain":
            return declared
        return self.DRAIN_PRIORITY if self.drain_commutes(action.rank, rank) else None

    def postponable(self, rank, action) -> bool:
        """C.timeout away from the check that reads it (the argument is in the module docstring)."""
        if action.kind != "C.timeout":
            return False
        cfg = self.config
        if cfg.deadline != "issue" or cfg.admission_limit:
            return False
        kind, q, _ = rank.s_pc
        return not (kind == S_CHECK and q == action.q)

    def drain_commutes(self, r: int, rank) -> bool:
        """Whether this rank's S.drain (its collective done) commutes with every step of the
        rank's other threads (the argument is in the module docstring): checked on the drain's
        own outcome, so a variant whose drain does more is not taken alone where it matters."""
        agreed = result(rank, "s_coll", DRAIN_TAG)
        if agreed is None:
            return False
        after = self.drained(r, rank._replace(s_coll=()), agreed)
        if after.s_pc[0] == S_CRASHED:
            return False
        if (after.p_pc, after.i_pc, after.y_pc, after.p_coll, after.y_coll, after.prefetch_queue, after.sync_queue) != (
                rank.p_pc, rank.i_pc, rank.y_pc, rank.p_coll, rank.y_coll, rank.prefetch_queue, rank.sync_queue):
            return False
        n_hit, n_ack = agreed[0], agreed[1]
        if after.hit_queue != rank.hit_queue[n_hit:] or after.ack_queue != rank.ack_queue[n_ack:]:
            return False
        if after.prefetch_buffer[: len(rank.prefetch_buffer)] != rank.prefetch_buffer:
            return False
        held = set(rank.prefetch_queue) | set(rank.hit_queue[n_hit:]) | set(rank.prefetch_buffer)
        if rank.p_pc >= 0:
            held.add(rank.p_pc)
        if rank.i_pc and rank.i_pc != (DEAD,):
            held.add(rank.i_pc[0])
        for i, (old, new) in enumerate(zip(rank.ops, after.ops)):
            if new.terminated != old.terminated or new.timed_out != old.timed_out or new.written != old.written:
                return False
            if i in held and (new.hash_value, new.stage, new.slots) != (old.hash_value, old.stage, old.slots):
                return False
        if self.config.policy == "timeout" and self.config.timeout_clock:
            # each timeout the clock could fire now, it can still fire after the drain, to the same state
            later = dict(self.timeouts(after))
            for q, fired in self.timeouts(rank):
                if later.get(q) != self.drained(r, fired._replace(s_coll=()), agreed):
                    return False
        return True

    @classmethod
    def harness_configs(cls) -> tuple:
        one = Request(pages=2, hits=(2, 1), failing=(frozenset(), frozenset()))
        return (
            uniform_ack_config(ranks=1, pages=2),
            uniform_ack_config(ranks=2, pages=2, storage_batch_size=1),
            uniform_ack_config(ranks=2, pages=1, requests=2),
            uniform_ack_config(ranks=2, pages=2, failing={1: {0}}, storage_batch_size=1),
            uniform_ack_config(ranks=2, pages=1, policy="timeout"),
            uniform_ack_config(ranks=2, pages=1, policy="timeout", cache="hiradix"),
            uniform_ack_config(ranks=2, pages=1, policy="best_effort"),
            uniform_ack_config(ranks=1, pages=1, policy="best_effort", requests=1).with_(
                requests=(Request(pages=1, hits=(1,), failing=(frozenset(),), readmits=1),), ack_match="rid"),
            AckConfig(ranks=2, requests=(one,), storage_batch_size=1),
            AckConfig(ranks=2, requests=(Request(pages=1, hits=(1, 1), failing=(frozenset(), frozenset()), abort_round=1),)),
        )

    # ---- for viewers ----

    def fields(self, state) -> dict:
        out = {}
        ps = self.config.page_size
        for r, rank in enumerate(state):
            out[f"r{r}.scheduler"] = pc_words(self.scheduler_states, rank.s_pc)
            out[f"r{r}.prefetch"] = _thread_pc(rank.p_pc, "waiting in all_reduce(MIN hits)")
            out[f"r{r}.io"] = _io_pc(rank.i_pc)
            out[f"r{r}.sync"] = "idle" if not rank.y_pc else f"#{rank.y_pc[0]}: waiting in all_reduce(MIN) of an ACK"
            out[f"r{r}.prefetch_queue"] = [f"#{i}" for i in rank.prefetch_queue]
            out[f"r{r}.prefetch_hit_queue"] = [f"#{i}" for i in rank.hit_queue]
            out[f"r{r}.prefetch_buffer"] = [f"#{i}" for i in rank.prefetch_buffer]
            out[f"r{r}.prefetch_sync_queue"] = [_ack(a, ps) for a in rank.sync_queue]
            out[f"r{r}.ack_prefetch_queue"] = [_ack(a, ps) for a in rank.ack_queue]
            out[f"r{r}.host_mem_release_queue"] = rank.release_queue
            for q, req in enumerate(rank.reqs):
                p = f"r{r}.q{q}."
                out[p + "ongoing_prefetch"] = "-" if req.ongoing == NO_OP else f"#{req.ongoing}"
                out[p + "done"] = req.ready and req.gen + 1 >= self.config.requests[q].generations
                out[p + "tree_tokens"] = req.tree * ps
                if req.aborted:
                    out[p + "aborted"] = True
            for i, op in enumerate(rank.ops):
                if not op.issued:
                    continue
                p = f"r{r}.#{i}."
                out[p + "stage"] = STAGES[op.stage]
                out[p + "hash_value"] = f"{op.hash_value} page(s)"
                out[p + "host_slots"] = "".join(".RTX"[s] for s in op.slots) or "None"
                out[p + "pages_written"] = op.written
                out[p + "completed_tokens"] = op.completed * ps
                out[p + "terminated"] = op.terminated
                if self.config.policy == "timeout":
                    out[p + "timed_out"] = op.timed_out
        return out


def _thread_pc(pc: int, waiting: str) -> str:
    if pc == DEAD:
        return "dead"
    return "idle" if pc < 0 else f"#{pc}: {waiting}"


def _ack(ack, page_size: int) -> str:
    i, kind, pages = ack
    return f"#{i} progress {pages * page_size}" if kind == 0 else f"#{i} completed_req"


def _io_pc(pc) -> str:
    if not pc:
        return "idle"
    if pc == (DEAD,):
        return "dead"
    i, batch, page, counted, ok, phase = pc
    if phase == IO_READ:
        return f"#{i}: batch {batch}, read page {page}"
    if phase == IO_ACK:
        return f"#{i}: batch {batch} over ({counted} page(s)), send its ACK"
    return f"#{i}: send completed_req"
