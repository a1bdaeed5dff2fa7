"""The predicate-poll protocol (SGLang 0.5.1 to 0.5.18): the scheduler polls a completion predicate.

Per rank a scheduler `S`, a prefetch thread `P`, an IO thread `I` and, under the timeout
policy, a clock `C` (PROTOCOL.md); the shapes of the releases it covers are options of the
configuration (`Config`: `shape`, `alloc_at`, `threshold_test`, `count_before_write`,
`count_whole_batch`, `round_collectives`, `direct_release`, `tail_releases`, `completed_min`, `queue_unallocated`; `releases.py`
maps each release family to them). The steps live in one module per thread, each with its
description beside it; this class puts them together and says what the reductions may
assume:

- Rank symmetry: ranks with identical parameters (hits, failing pages, allocation failure)
  are interchangeable. `Rank` lists the scheduler's fields last, and only the scheduler
  can loop forever: the prefetch and IO threads and the clock take irreversible steps.
- Steps that are persistent sets on their own (`solo_steps`):
    S.drain, S.keep_waiting, S.round_leave
                             leave a collective: only this scheduler's own pc and register
                             (drain pops queue heads and subtracts counts: commutes with appends;
                             with alloc_at = "hit" it also fills in operations that no other
                             thread touches while they sit on prefetch_hit_queue, and appends
                             them to prefetch_buffer, whose head is all the IO thread reads)
    I.take                   pops the head of prefetch_buffer (publish appends at the tail)
    I.write                  sets `written`, read by no thread; the tree only takes pages below
                             completed_tokens, and the IO thread counts a page only after writing
                             it, so no insert can overtake a pending write. Not with
                             `count_before_write`: there the insert of a counted page may come
                             before its write, so the write is no persistent set on its own
    P.take                   pops the head of prefetch_queue (issue appends at the tail) and
                             arrives in all_reduce(MIN hits); no other thread reads the stage
                             it sets or the prefetch thread's register. Its hits read whether
                             the operation has host slots, fixed at issue. Not with
                             `alloc_at = "hit"`: there it reads `terminated`, which the
                             scheduler's terminate_unallocated may set first (0 hits, then a
                             revoke instead of record_hits), so the take is no persistent set
                             on its own
    I.increment_refused      reads `terminated`, which is already set and stays set; writes only
                             the IO thread's own pc
    S.insert                 after terminate: `completed_tokens` is frozen (increments are refused)
                             and the clock is off; the slots it gives back, [0, completed), are
                             disjoint from the IO thread's final [completed, hits) and from a late
                             publish's tail; the prefetch thread reads nothing it writes
  and, where the protocol can tell from the rank that nothing depends on the order
  (`solo_priority`): an `I.increment` that cannot change any answer (`increment_commutes`),
  an `I.release` that gives nothing back, a `P.publish` the scheduler's check cannot tell
  from no publish yet (`publish_commutes`), an `S.issue` that cannot fail.
- Every property is rank-local (early acceptance, data integrity, a double release) or stable
  once violated (different inserts, ranks stuck in different collectives, a leak or a short
  delivery at quiescence, a deadlock), as the partial-order reduction needs.
"""

from __future__ import annotations

from prefetch_check.model.interface import Collective, RankProtocol, Thread
from prefetch_check.model.protocols.completion import CompletionPredicate
from prefetch_check.model.protocols.poll.clock import ClockSteps
from prefetch_check.model.protocols.poll.config import Config
from prefetch_check.model.protocols.poll.host_slots import HostSlots
from prefetch_check.model.protocols.poll.io_thread import IOThreadSteps
from prefetch_check.model.protocols.poll.predicates import Predicate
from prefetch_check.model.protocols.poll.prefetch_thread import PrefetchThreadSteps
from prefetch_check.model.protocols.poll.properties import NAMES, RankView, build_properties, summarize
from prefetch_check.model.protocols.poll.scheduler import SchedulerSteps
from prefetch_check.model.protocols.state_words import pc_words
from prefetch_check.model.protocols.poll.state import (
    C_COMPLETED,
    C_DRAIN,
    C_HITS,
    C_ROUND,
    C_TERMINATE,
    IO_COUNT,
    IO_READ,
    initial_rank,
)


class PollProtocol(
    SchedulerSteps, PrefetchThreadSteps, IOThreadSteps, ClockSteps, HostSlots, CompletionPredicate, RankProtocol
):
    """The protocol of PROTOCOL.md for one configuration and one completion predicate."""

    threads = (Thread("S", "scheduler"), Thread("P", "prefetch"), Thread("I", "io"), Thread("C", "clock"))
    # the scheduler's group first: the partial-order reduction visits a rank's waits in this order
    collectives = {
        C_ROUND: Collective("s_coll", min, "all_reduce(MIN finished acks) of writing_check/loading_check"),
        C_DRAIN: Collective("s_coll", min, "all_reduce(MIN queue sizes) of drain"),
        C_TERMINATE: Collective("s_coll", max, "all_reduce(MAX [not can_terminate, terminated])"),
        C_COMPLETED: Collective("s_coll", min, "all_reduce(MIN completed_tokens)"),
        C_HITS: Collective("p_coll", min, "all_reduce(MIN hits)"),
    }
    solo_steps = {
        "S.drain": 0, "S.keep_waiting": 1, "S.round_leave": 1, "I.take": 2, "I.write": 3,
        "P.take": 5, "I.increment_refused": 6, "S.insert": 7,
    }
    INCREMENT_PRIORITY = 4
    RELEASE_PRIORITY = 8
    PUBLISH_PRIORITY = 9
    ISSUE_PRIORITY = 10
    reductions_vouched = True
    builtin_predicates = ("buggy", "fixed")
    property_names = NAMES
    shape_options = ("shape", "clamp_threshold", "count_before_write", "count_whole_batch", "direct_release", "tail_releases",
                     "completed_min", "queue_unallocated", "alloc_at", "threshold_test", "round_collectives")

    def __init__(self, config: Config, predicate: Predicate | str = "fixed", name: str | None = None):
        self.config = config
        self.use_predicate(config, predicate, name)
        self._steady = self._requests_without_interrupts()
        queues = config.drain_queues()
        self._release_at = queues.index("release") if "release" in queues else None
        self._properties = build_properties(self)

    # ---- the protocol ----

    def initial_rank(self, r: int):
        return initial_rank(self.config.num_requests)

    def rank_steps(self, r: int, rank) -> list:
        return self.scheduler_steps(r, rank) + self.prefetch_steps(r, rank) + self.io_steps(r, rank) + self.clock_steps(r, rank)

    def rank_view(self, rank) -> RankView:
        return summarize(rank, self._release_at, self.config.alloc_at == "issue")

    def properties(self):
        return self._properties

    def quiescent(self, state) -> bool:
        """Every request resolved and every thread idle with nothing queued for it, on every rank.
        The scheduler then only drains, round after round; where it is in that loop does not
        matter (and must not: the reduced search visits only some loop positions)."""
        return all(self.rank_view(rank).quiet for rank in state)

    def rank_settled(self, rank) -> bool:
        """Every thread idle, every request resolved, nothing left on the revoke, hit or release queue:
        from here only the scheduler drains empty queues, round after round."""
        return self.rank_view(rank).quiet and not rank.revoke_queue and not rank.release_queue

    def possible_kinds(self) -> tuple[str, ...]:
        """Leaves out what this configuration rules out: allocation failure where none may fail,
        the clock without the timeout policy, waiting under best_effort, skips, revokes, publishes
        and loads that no request's parameters allow, load failures where no page fails, and the
        steps of the other release shapes."""
        cfg = self.config
        ranks, requests = range(cfg.ranks), range(cfg.num_requests)
        hit_alloc = cfg.alloc_at == "hit"
        issued = [q for q in requests if cfg.is_issued_by_threshold(q)]
        passes = [q for q in issued if not cfg.below_threshold(cfg.agreed_hit_pages(q))]
        if hit_alloc:  # the pages each rank's drain reserves (None: revoked there)
            got = {q: [cfg.hit_alloc_pages(q, r, cfg.agreed_hit_pages(q)) for r in ranks] for q in passes}
        else:
            got = {q: [cfg.agreed_hit_pages(q)] for q in passes}
        published = [q for q in passes if any(p is not None for p in got[q])]
        loaded = [q for q in published if any(p for p in got[q])]
        alloc_fails = any(cfg.alloc_may_fail)
        # an operation the prefetch thread counts 0 hits for, whatever storage holds
        zero_hits = hit_alloc or (cfg.queue_unallocated and alloc_fails)
        out = set()
        if not alloc_fails:
            out.add("S.issue_alloc_failed")
        if not (cfg.queue_unallocated and alloc_fails):
            out.add("S.ready_unallocated")
        if not hit_alloc:
            out |= {"S.terminate_unallocated", "P.record_hits"}
        else:
            out.add("P.publish")
        if cfg.policy != "timeout" or not cfg.timeout_clock:
            out.add("C.timeout")
        if cfg.policy == "best_effort":
            out |= {"S.keep_waiting", "S.terminate"}
        if len(issued) == cfg.num_requests:
            out.add("S.issue_skipped")
        if not cfg.revoke_queue_exists or (len(passes) == len(issued) and not zero_hits):
            out.add("P.revoke")
        # a revoke that drops a request from ongoing_prefetch before its scheduler resolved it (with
        # hit-time allocation, the scheduler resolves a terminated operation itself, before the
        # prefetch thread's revoke of it is drained)
        static_revoke = passes != issued or (hit_alloc and any(None in got[q] for q in passes))
        if "S.issue_alloc_failed" in out and "S.issue_skipped" in out and not static_revoke and (hit_alloc or "P.revoke" in out):
            out.add("S.ready_without_prefetch")  # every request stays in ongoing_prefetch until checked
        if not self.round_collectives():
            out |= {"S.round_arrive", "S.round_leave"}
        if not issued:
            out |= {k for k in self.action_kinds() if not k.startswith(("S.issue_skipped", "S.drain", "S.ready", "S.round"))}
        if not published:
            out |= {k for k in self.action_kinds() if k.startswith("I.")} | {"P.publish"}
        if hit_alloc and not any(None not in got[q] for q in passes):
            # terminate and insert need host slots on every rank: before they have them it is
            # terminate_unallocated, and a rank that revoked in its drain never joins the vote again
            out |= {"S.terminate", "S.insert"}
        if not loaded:
            out |= {"I.write", "I.increment", "I.increment_refused"}
        if hit_alloc and cfg.policy == "wait_complete" and not any(any(spec.failing) for spec in cfg.requests):
            # hash_value is set before the IO thread gets the operation, so neither built-in predicate
            # accepts a load before it completes: nothing terminates an operation while it loads
            out.add("I.increment_refused")
        if not any(any(spec.failing) for spec in cfg.requests):
            out.add("I.load_failed")
        return tuple(k for k in self.action_kinds() if k not in out)

    # ---- what the reductions may assume ----

    def rank_classes(self) -> tuple[tuple[int, ...], ...]:
        """Ranks to whom storage looks the same (hits and failing pages of every request) and
        whose host allocation may fail alike (at issue) or finds the same room (at hit)."""
        cfg, groups = self.config, {}
        for r in range(cfg.ranks):
            signature = (
                tuple(q.hits[r] for q in cfg.requests),
                tuple(tuple(sorted(q.failing[r])) for q in cfg.requests),
                cfg.alloc_may_fail[r],
                tuple(q.alloc_pages[r] for q in cfg.requests),
            )
            groups.setdefault(signature, []).append(r)
        return tuple(tuple(g) for g in groups.values())

    def solo_priority(self, rank, action):
        kind = action.kind
        if kind == "I.write" and not self.write_then_count():
            return None  # the page is counted already: an insert may take it before this write
        if kind == "P.take" and self.config.alloc_at == "hit":
            return None  # reads `terminated`: the scheduler may terminate the operation before the take
        declared = self.solo_steps.get(kind)  # unconditional (a variant may declare more)
        if declared is not None:
            return declared
        if kind == "I.increment":
            return self.INCREMENT_PRIORITY if self.increment_commutes(rank, action.q) else None
        if kind == "I.release":
            return self.RELEASE_PRIORITY if self.release_is_empty(rank, action.q) else None
        if kind == "P.publish":
            return self.PUBLISH_PRIORITY if self.publish_commutes(rank, action.rank, action.q) else None
        if kind == "S.issue":
            # the only scheduler step where allocation cannot fail: appends to prefetch_queue (the
            # prefetch thread pops its head, commutes) and creates the operation, which no other
            # thread reads before it is taken; the clock of q starts only after it
            return None if self.config.alloc_may_fail[action.rank] else self.ISSUE_PRIORITY
        return None

    @classmethod
    def harness_configs(cls) -> tuple:
        from prefetch_check.model.protocols.poll.config import RequestSpec, uniform_config
        from prefetch_check.model.protocols.poll.releases import options

        uneven = RequestSpec(pages=2, hits=(2, 1), failing=(frozenset(), frozenset()))
        room_differs = RequestSpec(pages=2, hits=(2, 2), failing=(frozenset(), frozenset()), alloc_pages=(2, 1))
        return (
            uniform_config(ranks=1, pages=2),
            uniform_config(ranks=2, pages=2),
            uniform_config(ranks=1, requests=2, pages=2),
            uniform_config(ranks=2, requests=2, pages=1, hits=0),
            uniform_config(ranks=2, pages=2, failing={1: {0}}),
            uniform_config(ranks=2, pages=2, hits=0),
            uniform_config(ranks=2, pages=1, policy="timeout"),
            uniform_config(ranks=2, pages=1, policy="best_effort"),
            uniform_config(ranks=2, pages=1, alloc_may_fail=(True, False)),
            uniform_config(ranks=1, pages=2, page_size=2, hits=1),
            uniform_config(ranks=1, pages=2, prefetch_threshold=0, clamp_threshold=False, hits=0),
            uniform_config(ranks=2, pages=2, shape="seed", failing={0: {1}}),
            Config(ranks=2, requests=(uneven,)),
            # the release shapes (releases.py), each where its options change a step
            uniform_config(ranks=2, pages=2, failing={1: {1}}, **options("seed")),
            uniform_config(ranks=2, pages=1, alloc_may_fail=(True, False), **options("seed")),
            uniform_config(ranks=1, requests=2, pages=2, hits=1, **options("seed-guarded")),
            uniform_config(ranks=2, pages=2, failing={0: {0}}, **options("late2025-tail-twice")),
            uniform_config(ranks=2, pages=2, count_before_write=True),
            uniform_config(ranks=2, pages=3, storage_batch_size=2, **options("seed")),  # two batches, counted whole
            uniform_config(ranks=2, pages=2, failing={1: {1}}, round_collectives=1),
            uniform_config(ranks=2, requests=2, pages=1, round_collectives=2),
            uniform_config(ranks=2, pages=1, policy="best_effort", round_collectives=2, **options("staged")),
            uniform_config(ranks=2, pages=2, alloc_pages=1, prefetch_threshold=1, **options("staged")),
            uniform_config(ranks=2, requests=2, pages=1, hits=0, policy="timeout", **options("staged")),
            uniform_config(ranks=2, pages=2, failing={1: {0}}, **options("staged")),
            uniform_config(ranks=2, pages=1, policy="best_effort", **options("staged-drain-threshold")),
            uniform_config(ranks=1, pages=2, hits=0, prefetch_threshold=0, **options("staged-drain-threshold")),
            Config(ranks=2, requests=(room_differs,), alloc_deterministic=False, **options("staged")),
        )

    def _requests_without_interrupts(self) -> frozenset:
        """Requests whose wait can only end by completion: policy wait_complete (no clock) and no
        page of theirs fails to load on any rank (nobody marks them terminated before insert)."""
        if self.config.policy != "wait_complete":
            return frozenset()
        return frozenset(q for q, spec in enumerate(self.config.requests) if not any(spec.failing))

    def increment_commutes(self, rank, q: int) -> bool:
        """Whether this I.increment is a persistent set on its own: it commutes with every step
        any thread can take before it. Only the scheduler of its rank reads `completed_tokens`:
        - `check` reads it through the predicate: here the predicate says "wait" both before
          and after the increment, so the vote, and the state after both steps, are the same;
        - `terminate` (and `insert` after it) read it, but cannot come first: this rank votes
          "wait", no clock can fire (wait_complete), and no load of this request fails on any
          rank, so no rank can be terminated and the MAX collective cannot say "accept".
        The counter is read by no property. Steps of other ranks touch nothing of this rank."""
        if q not in self._steady:
            return False
        op = rank.ops[q]
        return not op.terminated and not self.decide_op(op) and not self.decide_op(op._replace(completed=self.counted_to(op, rank.i_pc[1])))

    def release_is_empty(self, rank, q: int) -> bool:
        """The IO thread's final release gives nothing back (it loaded every page it was given):
        the step then changes only the IO thread's own pc, and commutes with every step."""
        first, last = self.io_release_range(rank.ops[q], q)
        return last <= first

    def publish_commutes(self, rank, r: int, q: int) -> bool:
        """Whether this P.publish is a persistent set on its own. It writes `hash_value` (read by
        the scheduler's check and the no_early_acceptance property at a check), the stage, the
        tail of the host slots and the release queue, appends to prefetch_buffer (the IO thread
        pops its head) and leaves its collective. It commutes with every step any other thread
        can take before it when
        - it gives no host slot back (all pages hit: the release queue, which drain reads, and
          the slots are unchanged), and
        - the scheduler's check cannot tell it happened: until publish the IO thread has not
          seen q, so completed_tokens is 0 at every check before or after it; for every
          `terminated` and `timed_out` a check can then see, the predicate gives the same
          answer with and without the page list, and that answer is "wait" (or "accept" only
          with the timeout fired, which excuses it), so no_early_acceptance says the same too.
          Under best_effort the check does not ask the predicate at all."""
        op = rank.ops[q]
        after = self.published(rank, q, op, len(op.slots), self.decision_hits(rank.p_coll[2], r, q))
        if after.release_queue != rank.release_queue or after.ops[q].slots != op.slots:
            return False
        cfg = self.config
        if cfg.policy == "best_effort":
            return True
        published = after.ops[q].hash_value
        clock = cfg.policy == "timeout" and cfg.timeout_clock
        for terminated in {op.terminated, True}:
            for timed_out in {op.timed_out, True} if clock else {op.timed_out}:
                seen = op._replace(terminated=terminated, timed_out=timed_out)
                answer = self.decide_op(seen)
                if answer != self.decide_op(seen._replace(hash_value=published)):
                    return False
                if answer and not (cfg.policy == "timeout" and timed_out):
                    return False
        return True

    def collective_name(self, tag: tuple) -> str:
        """A round collective's subject is its place in the round (writing_check's, loading_check's),
        not a request."""
        kind, k = tag
        if kind == C_ROUND:
            return f"{self.collectives[kind].name} (the round's #{k} before the drain)"
        return super().collective_name(tag)

    # ---- for viewers ----

    def fields(self, state) -> dict:
        """A flat, readable view of the state (`r0.q0.hash_value` -> 2), for trace viewers and diffs."""
        out = {}
        ps = self.config.page_size
        for r, rank in enumerate(state):
            out[f"r{r}.scheduler"] = pc_words(self.scheduler_states, rank.s_pc)
            out[f"r{r}.prefetch"] = "idle" if rank.p_pc < 0 else f"q{rank.p_pc}: waiting in all_reduce(MIN hits)"
            out[f"r{r}.io"] = _io_pc(rank.i_pc)
            out[f"r{r}.prefetch_queue"] = list(rank.prefetch_queue)
            out[f"r{r}.prefetch_buffer"] = list(rank.prefetch_buffer)
            out[f"r{r}.revoke_queue"] = list(rank.revoke_queue)
            if self.config.alloc_at == "hit":
                out[f"r{r}.prefetch_hit_queue"] = list(rank.hit_queue)
            out[f"r{r}.host_mem_release_queue"] = rank.release_queue
            out[f"r{r}.scheduler_collective"] = self._register(rank.s_coll)
            out[f"r{r}.prefetch_collective"] = self._register(rank.p_coll)
            for q, op in enumerate(rank.ops):
                p = f"r{r}.q{q}."
                out[p + "issued"] = op.issued
                out[p + "stage"] = STAGE_NAMES.get(op.stage, str(op.stage))
                out[p + "in_ongoing_prefetch"] = op.ongoing
                out[p + "ready"] = op.ready
                out[p + "hash_value"] = f"{op.hash_value} page(s)"
                out[p + "pages_written"] = op.written
                out[p + "completed_tokens"] = op.completed * ps
                out[p + "terminated"] = op.terminated
                out[p + "io_failed"] = op.io_failed
                if self.config.policy == "timeout":
                    out[p + "timed_out"] = op.timed_out
                out[p + "host_slots"] = "".join(".RTX"[s] for s in op.slots) or ("-" if op.allocated or not op.issued else "none (host_indices is None)")
                out[p + "inserted_tokens"] = "-" if op.inserted < 0 else op.inserted
        return out

    def _register(self, reg) -> str:
        if not reg:
            return "-"
        name = self.collective_name(reg[0])
        if reg[1] == 0:  # WAITING
            return f"arrived in {name} with {list(reg[2])}"
        return f"{name} done: {list(reg[2])}"


STAGE_NAMES = {0: "queued", 1: "queried", 2: "revoked", 3: "published", 4: "on prefetch_hit_queue", 5: "dropped at the drain"}


def _io_pc(pc) -> str:
    if not pc:
        return "idle"
    q, page, phase = pc
    if phase == IO_READ:
        return f"q{q}: read page {page}"
    if phase == IO_COUNT:
        return f"q{q}: increment page {page}"
    return f"q{q}: release"
