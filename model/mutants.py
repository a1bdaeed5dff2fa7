"""Protocol mutants: small, named changes a developer of the real system could plausibly make.

Each mutant is a subclass of `PrefetchProtocol` that overrides one step (or one hook
of a step) and says, in the developer's words, what changed and where upstream the
change would be made. The mutation run (`prefetch_check/mutation.py`) checks every
mutant with the fixed predicate: a mutant that no scenario kills means either the
mutant is equivalent (it carries an `equivalent` explanation) or a scenario or
property is missing. Steps a mutant changed are marked in its traces.

A mutant runs the same code on every rank and keeps the prefetch, IO and clock steps
irreversible: the rank-symmetry reduction the mutation run uses relies on both.
"""

from __future__ import annotations

from typing import Optional

from prefetch_check.model.actions import ACTION_KINDS, IO, PREFETCH, SCHEDULER, Action
from prefetch_check.model.collectives import PREFETCH as PREFETCH_GROUP
from prefetch_check.model.collectives import SCHEDULER as SCHEDULER_GROUP
from prefetch_check.model.collectives import arrive, result_for
from prefetch_check.model.protocol import PrefetchProtocol
from prefetch_check.model.state import (
    C_COMPLETED,
    C_HITS,
    IO_COUNT,
    IO_RELEASE,
    PUBLISHED,
    RELEASED,
    REVOKED,
    S_MIN_WAIT,
    give_back,
    set_op,
    set_rank,
)


class Mutant(PrefetchProtocol):
    """A protocol with one deliberate change; class attributes document it."""

    name: str = ""
    description: str = ""  # what the developer changed, in their words
    upstream: str = ""  # where the change would be made upstream
    touches: tuple[str, ...] = ()  # step kinds the change affects (marked in traces)
    expected: str = ""  # the property that should catch it
    equivalent: Optional[str] = None  # why no property can catch it, for an equivalent mutant
    extra_kinds: tuple[str, ...] = ()  # step kinds the mutant adds

    def describe(self, state, action: Action, next_state) -> str:
        text = self.describe_mutated(state, action, next_state) or self.usual(state, action, next_state)
        if action.kind in self.touches:
            text += f"   <- mutated ({self.name})"
        return text

    def describe_mutated(self, state, action: Action, next_state) -> Optional[str]:
        """The mutant's own words for a step it changed (None: the usual description is still true)."""
        return None

    def usual(self, state, action: Action, next_state) -> str:
        """The unmutated protocol's description of the step."""
        return super().describe(state, action, next_state)

    def action_kinds(self):
        return ACTION_KINDS + self.extra_kinds


# ---- IO thread ----


class IncrementIgnoresTerminated(Mutant):
    name = "increment_ignores_terminated"
    description = "increment() adds page_size to completed_tokens without checking the terminated flag"
    upstream = "cache_controller.py, PrefetchOperation.increment: the early `return False` when the operation is terminated"
    touches = ("I.increment",)
    expected = "host_memory"

    def i_increment(self, state, r, q, page):
        rank = state[r]
        op = rank.ops[q]._replace(completed=page + 1)
        moved = set_op(rank, q, op, i_pc=self._page_or_release(op, q, page + 1))
        return [(Action(r, IO, "increment", q), set_rank(state, r, moved))]


class CountBeforeWrite(Mutant):
    name = "count_before_write"
    description = "the IO thread calls increment() for a page before copying the page's data into host memory"
    upstream = "cache_controller.py, the page get loop: `operation.increment(page_size)` moved above the host-memory write"
    touches = ("I.write", "I.increment", "I.increment_refused")
    expected = "data_integrity"

    def i_read(self, state, r, q, page):
        if page in self.config.requests[q].failing[r]:
            return super().i_read(state, r, q, page)
        rank = state[r]
        op = rank.ops[q]
        if op.terminated:
            moved = rank._replace(i_pc=(q, 0, IO_RELEASE))
            return [(Action(r, IO, "increment_refused", q), set_rank(state, r, moved))]
        moved = set_op(rank, q, op._replace(completed=page + 1), i_pc=(q, page, IO_COUNT))
        return [(Action(r, IO, "increment", q), set_rank(state, r, moved))]

    def i_increment(self, state, r, q, page):
        """Now the second step of a page: write its data."""
        rank = state[r]
        op = rank.ops[q]._replace(written=page + 1)
        moved = set_op(rank, q, op, i_pc=self._page_or_release(op, q, page + 1))
        return [(Action(r, IO, "write", q), set_rank(state, r, moved))]


class ReleaseUntruncated(Mutant):
    name = "release_untruncated"
    description = (
        "publish no longer truncates host_indices to the hit count, so the IO thread's final release "
        "covers [completed_tokens, L) instead of [completed_tokens, hits)"
    )
    upstream = "cache_controller.py, prefetch_thread_func: `operation.host_indices = operation.host_indices[:hits]` dropped"
    touches = ("I.release",)
    expected = "host_memory"

    def i_release(self, state, r, q):
        rank = state[r]
        op = rank.ops[q]
        pages = len(op.slots)
        slots = give_back(op.slots, op.completed, pages, RELEASED)
        extra = max(0, pages - op.completed)
        moved = set_op(rank, q, op._replace(slots=slots), i_pc=(), release_queue=rank.release_queue + extra)
        return [(Action(r, IO, "release", q), set_rank(state, r, moved))]

    def describe_mutated(self, state, action, next_state):
        if action.kind == "I.release":
            op, ps = state[action.rank].ops[action.q], self.config.page_size
            return f"release host_indices[completed_tokens:] (not truncated) = [{op.completed * ps}, {len(op.slots) * ps}) of q{action.q}"
        return None


class NoMarkTerminateAfterShortBatch(Mutant):
    name = "no_mark_terminate_after_short_batch"
    description = "when a batch loads fewer pages than asked, the IO thread just stops, without mark_terminate()"
    upstream = "cache_controller.py, the batch loop of the IO thread: `operation.mark_terminate()` before `break` removed"
    touches = ("I.load_failed",)
    expected = "progress"

    @property
    def short_batch_terminates(self) -> bool:
        return False

    def describe_mutated(self, state, action, next_state):
        if action.kind == "I.load_failed":
            return self.usual(state, action, next_state).replace("-> short batch -> mark_terminate", "-> stop (no mark_terminate)")
        return None


# ---- prefetch thread ----

ENQUEUED = 4  # stage of this mutant only: on prefetch_buffer, hash_value not yet set


class PublishBeforeHashValue(Mutant):
    name = "publish_before_hash_value"
    description = (
        "publish puts the operation on prefetch_buffer first and sets hash_value afterwards "
        "(host slots released and truncated before both)"
    )
    upstream = "cache_controller.py, prefetch_thread_func: `self.prefetch_buffer.put(operation)` moved above `operation.hash_value = ...`"
    touches = ("P.publish", "P.set_hash_value", "I.release")
    expected = "progress"
    extra_kinds = ("P.set_hash_value",)

    def p_decide(self, state, r, q):
        rank = state[r]
        op = rank.ops[q]
        if op.stage != ENQUEUED:
            return super().p_decide(state, r, q)
        hit_pages = self.decision_hits(result_for(rank, PREFETCH_GROUP, (C_HITS, q)), r, q)
        op = op._replace(stage=PUBLISHED, hash_value=hit_pages)
        done = set_op(rank, q, op, p_pc=-1, p_coll=())
        return [(Action(r, PREFETCH, "set_hash_value", q), set_rank(state, r, done))]

    def published(self, rank, q, op, pages, hit_pages):
        op = op._replace(stage=ENQUEUED, slots=give_back(op.slots, hit_pages, pages, RELEASED))
        # p_pc and the collective register stay: the thread's next step sets hash_value
        return set_op(
            rank, q, op, prefetch_buffer=rank.prefetch_buffer + (q,), release_queue=rank.release_queue + pages - hit_pages
        )

    def i_release(self, state, r, q):
        """The IO thread releases host_indices[completed:], and host_indices is already truncated."""
        rank = state[r]
        op = rank.ops[q]
        hits = self.config.agreed_hit_pages(q)
        slots = give_back(op.slots, op.completed, hits, RELEASED)
        extra = max(0, hits - op.completed)
        moved = set_op(rank, q, op._replace(slots=slots), i_pc=(), release_queue=rank.release_queue + extra)
        return [(Action(r, IO, "release", q), set_rank(state, r, moved))]

    def describe_mutated(self, state, action, next_state):
        q, ps = action.q, self.config.page_size
        op = state[action.rank].ops[q]
        if action.kind == "P.publish":
            (h,) = state[action.rank].p_coll[2]
            return (
                f"publish q{q} (first half): release host slots [{h * ps}, {len(op.slots) * ps}), truncate "
                f"host_indices, put on prefetch_buffer; hash_value still empty"
            )
        if action.kind == "P.set_hash_value":
            return f"publish q{q} (second half): hash_value = {next_state[action.rank].ops[q].hash_value} page(s)"
        if action.kind == "I.release":
            hits = self.config.agreed_hit_pages(q)
            return f"release host_indices[completed_tokens:] = [{op.completed * ps}, {hits * ps}) of q{q}"
        return None


class PublishReleasesPrefix(Mutant):
    name = "publish_releases_prefix"
    description = "publish releases the first L-hits host slots instead of the tail [hits, L) beyond the hit count"
    upstream = "cache_controller.py, prefetch_thread_func: `host_indices[hits:]` written as `host_indices[:L - hits]`"
    touches = ("P.publish",)
    expected = "host_memory"

    def unused_slots(self, hit_pages: int, pages: int) -> tuple[int, int]:
        return 0, pages - hit_pages  # the head, not the tail

    def describe_mutated(self, state, action, next_state):
        if action.kind == "P.publish":
            (h,) = state[action.rank].p_coll[2]
            pages, ps = len(state[action.rank].ops[action.q].slots), self.config.page_size
            usual = self.usual(state, action, next_state)
            return usual.replace(f"release host slots [{h * ps}, {pages * ps})", f"release host slots [0, {(pages - h) * ps})")
        return None


class RevokeKeepsSlots(Mutant):
    name = "revoke_keeps_slots"
    description = "revoke puts the request on the revoke queue but forgets to release its host slots"
    upstream = "cache_controller.py, prefetch_thread_func, revoke branch: `append_host_mem_release(operation.host_indices)` removed"
    touches = ("P.revoke",)
    expected = "host_memory"

    def revoked(self, rank, q, op, pages):
        return set_op(rank, q, op._replace(stage=REVOKED), p_pc=-1, p_coll=(), revoke_queue=rank.revoke_queue + (q,))

    def describe_mutated(self, state, action, next_state):
        if action.kind == "P.revoke":
            text = self.usual(state, action, next_state)
            return text[: text.index(", release all")] + ", host slots kept"
        return None


class RevokeNotQueued(Mutant):
    name = "revoke_not_queued"
    description = "revoke releases the host slots but never puts the request id on the revoke queue"
    upstream = "cache_controller.py, prefetch_thread_func, revoke branch: `prefetch_revoke_queue.put(request_id)` removed"
    touches = ("P.revoke",)
    expected = "progress"

    def revoked(self, rank, q, op, pages):
        op = op._replace(stage=REVOKED, slots=give_back(op.slots, 0, pages, RELEASED))
        return set_op(rank, q, op, p_pc=-1, p_coll=(), release_queue=rank.release_queue + pages)

    def describe_mutated(self, state, action, next_state):
        if action.kind == "P.revoke":
            return self.usual(state, action, next_state).replace(f"revoke queue += q{action.q}, ", "revoke queue untouched, ")
        return None


class DecideOnLocalHits(Mutant):
    name = "decide_on_local_hits"
    description = "the prefetch thread decides revoke-or-publish on its own storage hit count, not the all_reduce(MIN) result"
    upstream = "cache_controller.py, prefetch_thread_func: `storage_hit_count = tensor.item()` after the all_reduce dropped"
    touches = ("P.revoke", "P.publish")
    expected = "progress"

    def decision_hits(self, agreed, r, q):
        return self.config.requests[q].hits[r]

    def describe_mutated(self, state, action, next_state):
        if action.kind in ("P.revoke", "P.publish"):
            r, q, ps = action.rank, action.q, self.config.page_size
            (agreed,) = state[r].p_coll[2]
            local = self.decision_hits(None, r, q)
            op = next_state[r].ops[q]
            if action.step == "revoke":
                return f"all_reduce(MIN) -> {agreed * ps} hit tokens, ignored; own {local * ps} hit tokens < threshold: revoke q{q}"
            return f"all_reduce(MIN) -> {agreed * ps} hit tokens, ignored; own {local * ps} hit tokens: publish q{q}: hash_value = {op.hash_value} page(s)"
        return None


class ThresholdInPages(Mutant):
    name = "threshold_in_pages"
    description = "the prefetch thread compares the hit count in pages, not tokens, against the token threshold"
    upstream = "cache_controller.py, prefetch_thread_func: `storage_hit_count < self.prefetch_threshold` with the count in pages"
    touches = ("P.revoke", "P.publish")
    expected = "wait_complete_delivers"

    def revokes(self, hit_pages: int) -> bool:
        return hit_pages < self.config.effective_threshold  # pages against tokens

    def describe_mutated(self, state, action, next_state):
        if action.kind in ("P.revoke", "P.publish"):
            (agreed,) = state[action.rank].p_coll[2]
            verb = "<" if action.step == "revoke" else ">="
            return (
                f"all_reduce(MIN) -> {agreed} hit page(s), compared as if tokens: {agreed} {verb} threshold "
                f"{self.config.effective_threshold}: {action.step} q{action.q}"
            )
        return None


# ---- scheduler ----


class DrainWithoutAgreement(Mutant):
    name = "drain_without_agreement"
    description = "drain pops each rank's own revoke and release queue sizes, without the all_reduce(MIN) over ranks"
    upstream = "hiradix_cache.py, drain_storage_control_queues: the all_reduce(MIN) of the queue sizes removed"
    touches = ("S.drain",)
    expected = "tp_agreement"

    def s_drain_arrive(self, state, r):
        rank = state[r]
        rank = self.drained(rank, len(rank.revoke_queue), rank.release_queue)
        return [(Action(r, SCHEDULER, "drain"), set_rank(state, r, rank))]

    def describe_mutated(self, state, action, next_state):
        if action.kind == "S.drain":
            before = state[action.rank]
            popped = ", ".join(f"q{x}" for x in before.revoke_queue) or "none"
            return (
                f"drain without all_reduce: pop this rank's own {len(before.revoke_queue)} revoked "
                f"(dropped from ongoing_prefetch: {popped}), free {before.release_queue} released slots"
            )
        return None


class DrainReleaseUnagreed(Mutant):
    name = "drain_release_unagreed"
    description = "drain agrees on the revoke queue size but frees each rank's whole host_mem_release_queue"
    upstream = "hiradix_cache.py, drain_storage_control_queues: `n_release` taken from the local qsize, not the reduced one"
    touches = ("S.drain",)
    expected = ""
    equivalent = (
        "freeing released slots earlier on one rank only changes when host allocation can fail there, "
        "and the model already lets allocation fail on any rank independently (alloc_may_fail); no "
        "property reads the size of the free pool, and a slot on the release queue is already released"
    )

    def release_count(self, agreed: int, rank) -> int:
        return rank.release_queue  # this rank's whole queue, not the agreed count

    def describe_mutated(self, state, action, next_state):
        if action.kind == "S.drain":
            text = self.usual(state, action, next_state)
            return text[: text.rindex(", free ")] + f", free this rank's whole release queue ({state[action.rank].release_queue} slots)"
        return None


class TerminationMin(Mutant):
    name = "termination_min"
    description = "the termination collective reduces [not can_terminate, terminated] with MIN instead of MAX"
    upstream = "hiradix_cache.py, can_terminate_prefetch: `ReduceOp.MAX` written as `ReduceOp.MIN`"
    touches = ("S.check", "S.keep_waiting", "S.terminate")
    expected = "wait_complete_delivers"
    termination_reduce = staticmethod(min)

    def describe_mutated(self, state, action, next_state):
        if action.kind in self.touches:
            return self.usual(state, action, next_state).replace("all_reduce(MAX)", "all_reduce(MIN, was MAX)", 1)
        return None


class CheckIgnoresTerminated(Mutant):
    name = "check_ignores_terminated"
    description = "check_prefetch_progress reduces only [not can_terminate]: the terminated flag is not shared"
    upstream = "hiradix_cache.py, can_terminate_prefetch: `int(operation.is_terminated())` left out of the reduced tensor"
    touches = ("S.check",)
    expected = "progress"

    def termination_vote(self, op, can):
        return (1 - int(can), 0)

    def describe_mutated(self, state, action, next_state):
        if action.kind == "S.check" and self.config.policy != "best_effort":
            text = self.usual(state, action, next_state)
            return text.replace("terminated=1]", "terminated left out=0]")
        return None


class TerminateWithoutMark(Mutant):
    name = "terminate_without_mark"
    description = "terminate_prefetch reads completed_tokens and hash_value but no longer calls mark_terminate()"
    upstream = "cache_controller.py, terminate_prefetch: `operation.mark_terminate()` removed"
    touches = ("S.terminate",)  # and S.check under best_effort, which terminates at once
    expected = "host_memory"

    def _terminate(self, state, r, q, rank):
        op = rank.ops[q]
        moved = rank._replace(s_pc=(S_MIN_WAIT, q))
        tokens = op.completed * self.config.page_size
        return arrive(state, SCHEDULER_GROUP, r, moved, (C_COMPLETED, q), (tokens,), min)

    def describe_mutated(self, state, action, next_state):
        text = self.usual(state, action, next_state)
        return text.replace("mark_terminate, ", "no mark_terminate, ") if action.kind in ("S.check", "S.terminate") else None


class InsertLocalCompleted(Mutant):
    name = "insert_local_completed"
    description = "insert uses this rank's completed_tokens instead of the all_reduce(MIN) min_completed_tokens"
    upstream = "hiradix_cache.py, check_prefetch_progress: `completed_tokens` used where `min_completed_tokens` belongs"
    touches = ("S.insert",)
    expected = "tp_agreement"

    def insert_tokens(self, agreed, op):
        return op.completed * self.config.page_size

    def describe_mutated(self, state, action, next_state):
        if action.kind == "S.insert":
            (m,) = state[action.rank].s_coll[2]
            op, ps = state[action.rank].ops[action.q], self.config.page_size
            c = op.completed * ps
            return (
                f"all_reduce(MIN) -> min_completed={m}, ignored: insert this rank's hash_value[:{c // ps}] "
                f"({c} tokens) into the tree, q{action.q} ready"
            )
        return None


CATALOGUE: tuple[type[Mutant], ...] = (
    IncrementIgnoresTerminated,
    CountBeforeWrite,
    ReleaseUntruncated,
    NoMarkTerminateAfterShortBatch,
    PublishBeforeHashValue,
    PublishReleasesPrefix,
    RevokeKeepsSlots,
    RevokeNotQueued,
    DecideOnLocalHits,
    ThresholdInPages,
    DrainWithoutAgreement,
    DrainReleaseUnagreed,
    TerminationMin,
    CheckIgnoresTerminated,
    TerminateWithoutMark,
    InsertLocalCompleted,
)

BY_NAME: dict[str, type[Mutant]] = {m.name: m for m in CATALOGUE}
