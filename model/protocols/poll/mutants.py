"""Protocol mutants: small, named changes a developer of the real system could plausibly make.

Each mutant is a subclass of `PollProtocol` that overrides one hook of a step (or, where
the change reorders a step, the step itself) and says, in the developer's words, what
changed and where upstream the change would be made. The step descriptions read what a
step did off the rank before and after it, so a mutated step is described truthfully by
the usual description; the mutation run marks the steps a mutant touches. The mutation
run (`prefetch_check/mutation.py`) checks every mutant with the fixed predicate: a mutant
that no scenario kills means either the mutant is equivalent (it carries an `equivalent`
explanation) or a scenario or property is missing.

A mutant runs the same code on every rank and keeps the prefetch, IO and clock steps
irreversible: the rank-symmetry reduction the mutation run uses relies on both.
"""

from __future__ import annotations

from prefetch_check.model.interface import Collective, Step, formats, result
from prefetch_check.model.protocols.mutant import MutantInfo, answers_no
from prefetch_check.model.protocols.poll.config import Config, RequestSpec, uniform_config
from prefetch_check.model.protocols.poll.protocol import PollProtocol
from prefetch_check.model.protocols.poll.state import C_HITS, C_TERMINATE, DROPPED, PUBLISHED, RELEASED, give_back, set_op


class Mutant(MutantInfo, PollProtocol):
    """A predicate-poll protocol with one deliberate change; its class line and docstring document it."""


# ---- IO thread ----


class IncrementIgnoresTerminated(
    Mutant, name="increment_ignores_terminated", touches=("I.increment",), expected="host_memory"
):
    """increment() adds page_size to completed_tokens without checking the terminated flag"""

    upstream = "cache_controller.py, PrefetchOperation.increment: the early `return False` when the operation is terminated"
    refuses_increment = answers_no


class CountBeforeWrite(
    Mutant, name="count_before_write", touches=("I.write", "I.increment", "I.increment_refused"), expected="data_integrity"
):
    """the IO thread calls increment() for a page before copying the page's data into host memory"""

    upstream = "cache_controller.py, the page get loop: `operation.increment(page_size)` moved above the host-memory write"
    write_then_count = answers_no


class ReleaseUntruncated(Mutant, name="release_untruncated", touches=("I.release",), expected="host_memory"):
    """publish no longer truncates host_indices to the hit count, so the IO thread's final release covers
    [completed_tokens, L) instead of [completed_tokens, hits)"""

    upstream = "cache_controller.py, prefetch_thread_func: `operation.host_indices = operation.host_indices[:hits]` dropped"

    def io_release_range(self, op, q: int) -> tuple[int, int]:
        return op.completed, len(op.slots)


class NoMarkTerminateAfterShortBatch(
    Mutant, name="no_mark_terminate_after_short_batch", touches=("I.load_failed",), expected="progress"
):
    """when a batch loads fewer pages than asked, the IO thread just stops, without mark_terminate()"""

    upstream = "cache_controller.py, the batch loop of the IO thread: `operation.mark_terminate()` before `break` removed"

    short_batch_terminates = False  # the protocol's own is a property, always true


# ---- prefetch thread ----

ENQUEUED = 6  # stage of this mutant only: on prefetch_buffer, hash_value not yet set


class PublishBeforeHashValue(
    Mutant, name="publish_before_hash_value", touches=("P.publish", "P.set_hash_value", "I.release"), expected="progress"
):
    """publish puts the operation on prefetch_buffer first and sets hash_value afterwards (host slots released and
    truncated before both)"""

    upstream = "cache_controller.py, prefetch_thread_func: `self.prefetch_buffer.put(operation)` moved above `operation.hash_value = ...`"

    def p_decide(self, r, rank, q):
        op = rank.ops[q]
        if op.stage != ENQUEUED:
            return super().p_decide(r, rank, q)
        hit_pages = self.decision_hits(result(rank, "p_coll", (C_HITS, q)), r, q)
        done = set_op(rank, q, op._replace(stage=PUBLISHED, hash_value=hit_pages), p_pc=-1, p_coll=())
        return [Step("P", "set_hash_value", q, done)]

    def published(self, rank, q, op, pages, hit_pages):
        op = op._replace(stage=ENQUEUED, slots=give_back(op.slots, hit_pages, pages, RELEASED))
        # p_pc and the collective register stay: the thread's next step sets hash_value
        return set_op(
            rank, q, op, prefetch_buffer=rank.prefetch_buffer + (q,), release_queue=rank.release_queue + pages - hit_pages
        )

    def io_release_range(self, op, q: int) -> tuple[int, int]:
        """host_indices is already truncated to the agreed hits, whatever hash_value says yet."""
        return op.completed, self.config.agreed_hit_pages(q)

    @formats("P.set_hash_value")
    def format_set_hash_value(self, before, after, a):
        return f"publish q{a.q} (second half): hash_value = {after.ops[a.q].hash_value} page(s)"


class PublishReleasesPrefix(Mutant, name="publish_releases_prefix", touches=("P.publish",), expected="host_memory"):
    """publish releases the first L-hits host slots instead of the tail [hits, L) beyond the hit count"""

    upstream = "cache_controller.py, prefetch_thread_func: `host_indices[hits:]` written as `host_indices[:L - hits]`"

    def unused_slots(self, hit_pages: int, pages: int) -> tuple[int, int]:
        return 0, pages - hit_pages  # the head, not the tail


class RevokeKeepsSlots(Mutant, name="revoke_keeps_slots", touches=("P.revoke",), expected="host_memory"):
    """revoke puts the request on the revoke queue but forgets to release its host slots"""

    upstream = "cache_controller.py, prefetch_thread_func, revoke branch: `append_host_mem_release(operation.host_indices)` removed"
    revoke_releases = answers_no


class RevokeNotQueued(Mutant, name="revoke_not_queued", touches=("P.revoke",), expected="progress"):
    """revoke releases the host slots but never puts the request id on the revoke queue"""

    upstream = "cache_controller.py, prefetch_thread_func, revoke branch: `prefetch_revoke_queue.put(request_id)` removed"
    revoke_queues = answers_no


class DecideOnLocalHits(Mutant, name="decide_on_local_hits", touches=("P.revoke", "P.publish"), expected="progress"):
    """the prefetch thread decides revoke-or-publish on its own storage hit count, not the all_reduce(MIN) result"""

    upstream = "cache_controller.py, prefetch_thread_func: `storage_hit_count = tensor.item()` after the all_reduce dropped"

    def decision_hits(self, agreed, r, q):
        return self.config.requests[q].hits[r]


class ThresholdInPages(
    Mutant, name="threshold_in_pages", touches=("P.revoke", "P.publish"), expected="wait_complete_delivers"
):
    """the prefetch thread compares the hit count in pages, not tokens, against the token threshold"""

    upstream = "cache_controller.py, prefetch_thread_func: `storage_hit_count < self.prefetch_threshold` with the count in pages"

    def revokes(self, hit_pages: int) -> bool:
        return hit_pages < self.config.effective_threshold  # pages against tokens

    def _decision_text(self, before, a) -> str:
        (agreed,) = before.p_coll[2]
        verb = "<" if a.step == "revoke" else ">="
        return f"all_reduce(MIN) -> {agreed} hit page(s), compared as if tokens: {agreed} {verb} threshold"

    @formats("P.revoke", "P.publish")
    def format_p_decision_in_pages(self, before, after, a):
        """Both outcomes of the decision read alike: the comparison, then the step taken (revoke or publish)."""
        return f"{self._decision_text(before, a)} {self.config.effective_threshold}: {a.step} q{a.q}"


# ---- scheduler ----


class DrainWithoutAgreement(Mutant, name="drain_without_agreement", touches=("S.drain",), expected="tp_agreement"):
    """drain pops each rank's own revoke and release queue sizes, without the all_reduce(MIN) over ranks"""

    upstream = "hiradix_cache.py, drain_storage_control_queues: the all_reduce(MIN) of the queue sizes removed"

    def s_drain_arrive(self, r, rank):
        own = self.drained(r, rank, len(rank.revoke_queue), rank.release_queue, len(rank.hit_queue))
        return [Step("S", "drain", -1, own)]


class DrainReleaseUnagreed(Mutant, name="drain_release_unagreed", touches=("S.drain",), expected="host_memory"):
    """drain agrees on the revoke queue size but frees each rank's whole host_mem_release_queue"""

    upstream = "hiradix_cache.py, drain_storage_control_queues: `n_release` taken from the local qsize, not the reduced one"
    # Once thought equivalent (a slot on the release queue counted as released). Judged on what
    # drains actually free, it leaks: the rank that freed its whole queue brings 0 to the next
    # MIN, so the other ranks' queued slots are never freed.

    def release_count(self, agreed: int, rank) -> int:
        return rank.release_queue  # this rank's whole queue, not the agreed count


class TerminationMin(
    Mutant, name="termination_min", touches=("S.check", "S.keep_waiting", "S.terminate"), expected="wait_complete_delivers"
):
    """the termination collective reduces [not can_terminate, terminated] with MIN instead of MAX"""

    upstream = "hiradix_cache.py, can_terminate_prefetch: `ReduceOp.MAX` written as `ReduceOp.MIN`"
    collectives = {
        **PollProtocol.collectives,
        C_TERMINATE: Collective("s_coll", min, "all_reduce(MIN, was MAX, [not can_terminate, terminated])"),
    }


class CheckIgnoresTerminated(Mutant, name="check_ignores_terminated", touches=("S.check",), expected="progress"):
    """check_prefetch_progress reduces only [not can_terminate]: the terminated flag is not shared"""

    upstream = "hiradix_cache.py, can_terminate_prefetch: `int(operation.is_terminated())` left out of the reduced tensor"

    def termination_vote(self, op, can):
        return (1 - int(can), 0)


class TerminateWithoutMark(Mutant, name="terminate_without_mark", touches=("S.terminate",), expected="host_memory"):
    """terminate_prefetch reads completed_tokens and hash_value but no longer calls mark_terminate()"""

    # it touches S.check too under best_effort, which terminates at once
    upstream = "cache_controller.py, terminate_prefetch: `operation.mark_terminate()` removed"
    terminate_marks = answers_no


class InsertLocalCompleted(Mutant, name="insert_local_completed", touches=("S.insert",), expected="tp_agreement"):
    """insert uses this rank's completed_tokens instead of the all_reduce(MIN) min_completed_tokens"""

    upstream = "hiradix_cache.py, check_prefetch_progress: `completed_tokens` used where `min_completed_tokens` belongs"

    def insert_tokens(self, agreed, op):
        return op.completed * self.config.page_size


# ---- the staged shapes (alloc_at = "hit", 0.5.16-0.5.18) ----
# Their changes touch steps only the staged shapes take, so they are caught only in staged
# configurations: they form a catalogue of their own, run on STAGED_CONFIGS (or on staged
# scenario files with `prefetch-check mutants --mutant NAME FILE`).


class CheckUnallocatedFirst(
    Mutant, name="check_unallocated_first", touches=("S.terminate_unallocated",), expected="wait_complete_delivers"
):
    """check_prefetch_progress resolves an operation without host slots before it asks the predicate (0.5.1's early
    return for host_indices None, kept in the staged design)"""

    upstream = "hiradix_cache.py, check_prefetch_progress: the `host_indices is None` branch moved above `can_terminate_prefetch`"

    def s_check(self, r, rank, q):
        op = rank.ops[q]
        if op.ongoing and not op.allocated:
            return [self._terminate_unallocated(rank, q)]
        return super().s_check(r, rank, q)


class HitDrainUnagreed(Mutant, name="hit_drain_unagreed", touches=("S.drain",), expected="tp_agreement"):
    """drain pops this rank's whole prefetch_hit_queue, not the count all ranks agreed on"""

    upstream = "hiradix_cache.py, drain_storage_control_queues: `n_storage_hit` taken from the local qsize, not the reduced one"

    def drained(self, r, rank, n_revoke, n_release, n_hit=0):
        return super().drained(r, rank, n_revoke, n_release, len(rank.hit_queue))


class DrainRevokeKeepsOngoing(Mutant, name="drain_revoke_keeps_ongoing", touches=("S.drain",), expected="progress"):
    """the drain skips an operation whose hits are below the threshold without revoking it (it stays in
    ongoing_prefetch)"""

    upstream = "hiradix_cache.py, _drain_and_alloc_storage_hit: `_revoke_pending_prefetch(req_id)` missing before `continue` in the threshold branch"

    def hit_drained(self, r, q, op):
        cfg = self.config
        if op.ongoing and not op.terminated and cfg.threshold_test == "drain" and cfg.below_threshold(op.hash_value):
            return op._replace(stage=DROPPED)
        return super().hit_drained(r, q, op)


STAGED_CATALOGUE: tuple[type[Mutant], ...] = (CheckUnallocatedFirst, HitDrainUnagreed, DrainRevokeKeepsOngoing)


def _staged_configs():
    from prefetch_check.model.protocols.poll.config import uniform_config
    from prefetch_check.model.protocols.poll.releases import options

    staged, drain = options("staged"), options("staged-drain-threshold")
    return (
        ("staged-two-ranks", uniform_config(ranks=2, pages=2, **staged)),
        ("staged-timeout", uniform_config(ranks=2, pages=1, policy="timeout", **staged)),
        ("drain-threshold-one-page-short", uniform_config(ranks=1, pages=2, hits=1, prefetch_threshold=2, **drain)),
    )


# (name, Config) pairs in which the staged catalogue is killed (mutation.run_mutants takes them)
STAGED_CONFIGS = _staged_configs()

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
) + STAGED_CATALOGUE

BY_NAME: dict[str, type[Mutant]] = {m.name: m for m in CATALOGUE}

_NONE = (frozenset(), frozenset())

# Small configurations, each exercising one part of the protocol; together they kill the whole
# catalogue in a few seconds (the mutation run's default when no scenario files are given).
CONFIGS: tuple[tuple[str, Config], ...] = (
    ("one-rank", uniform_config(ranks=1, requests=1, pages=2)),
    ("two-ranks", uniform_config(ranks=2, requests=1, pages=2)),
    ("partial-hits", uniform_config(ranks=1, requests=1, pages=2, hits=1)),
    ("revoke-two-ranks", uniform_config(ranks=2, requests=2, pages=1, hits=0)),
    ("load-failure-two-ranks", uniform_config(ranks=2, requests=1, pages=2, failing={1: {0}})),
    ("timeout", uniform_config(ranks=1, requests=1, pages=2, policy="timeout")),
    ("uneven-hits", Config(ranks=2, requests=(RequestSpec(pages=1, hits=(1, 0), failing=_NONE),))),
    ("two-token-pages", uniform_config(ranks=1, requests=1, pages=2, page_size=2, hits=1)),
) + STAGED_CONFIGS

# Configurations that drop an upstream assumption: the protocol violates a property there, so no
# mutant is killed by it, but a variant that fixes the bug shows its repair (`mutants --protocol`).
ASSUMPTION_CONFIGS: tuple[tuple[str, Config], ...] = (
    # host allocation may fail at issue on rank 1 only: the ranks wait in different collectives
    ("alloc-fails-on-rank-1", uniform_config(ranks=2, requests=1, pages=2, alloc_may_fail=(False, True))),
)
