"""Mutants of the ack-drain protocol: plausible upstream mistakes, each one hook of a step changed.

Checked like the predicate-poll catalogue (`prefetch-check mutants`), with the fixed predicate,
in the small configurations below (each exercising one part of the protocol) or in scenario
files of this protocol.
"""

from __future__ import annotations

from prefetch_check.model.interface import Collective, Step
from prefetch_check.model.protocols.ack_drain.config import AckConfig, Request, uniform_ack_config
from prefetch_check.model.protocols.ack_drain.protocol import AckDrainProtocol
from prefetch_check.model.protocols.ack_drain.state import C_ACK, NO_OP
from prefetch_check.model.protocols.mutant import MutantInfo, answers_no


class Mutant(MutantInfo, AckDrainProtocol):
    """An ack-drain protocol with one deliberate change; its class line and docstring document it."""


# ---- the scheduler's drain ----


class AckAppliedToAnyOperation(
    Mutant, name="ack_applied_to_any_operation", touches=("S.drain",), expected="data_integrity"
):
    """the ACK drain applies an ACK whenever the request id is in ongoing_prefetch, whichever operation it belongs to"""

    upstream = "unified_radix_cache.py, _drain_ack_prefetch: `is_current = info.operation is operation` reduced to `info is not None`"

    def is_current(self, rank, i: int) -> bool:
        return rank.reqs[self.request_of[i]].ongoing != NO_OP


class TailKeptAtCompletedReq(Mutant, name="tail_kept_at_completed_req", touches=("S.drain",), expected="host_memory"):
    """draining completed_req no longer gives back the host slots beyond completed_tokens"""

    upstream = "unified_radix_cache.py, _drain_ack_prefetch: `append_host_mem_release(host_indices[completed_tokens:])` removed"

    def release_tail(self, rank, i: int):
        return rank


class ResultFreesInsertedPages(
    Mutant, name="result_frees_inserted_pages", touches=("S.drain", "S.accept", "S.terminate"), expected="host_memory"
):
    """_handle_prefetch_result frees every loaded slot, not only the prefix the tree already held"""

    upstream = "unified_radix_cache.py, _handle_prefetch_result: `free(host_indices[:matched_length])` written as `[:completed_tokens]`"

    def freed_at_insert(self, matched: int, pages: int) -> tuple[int, int]:
        return 0, pages


class RevokeKeepsEntry(
    Mutant, name="revoke_keeps_entry", touches=("S.drain", "S.accept", "S.terminate", "S.abort"), expected="progress"
):
    """_revoke_pending_prefetch releases the anchor but leaves the request in ongoing_prefetch"""

    upstream = "unified_radix_cache.py, revoke_pending_prefetch: `self.ongoing_prefetch.pop(request)` removed"
    revoke_drops_entry = answers_no


class DrainOwnSizes(Mutant, name="drain_own_sizes", touches=("S.drain",), expected="tp_agreement"):
    """check_hicache_events pops each rank's own queue sizes, without the all_reduce(MIN) over ranks"""

    upstream = "unified_radix_cache.py, drain_storage_control_queues: the `_all_reduce(..., MIN)` of the queue sizes removed"

    def drain_start(self, r, rank):
        sizes = (len(rank.hit_queue), len(rank.ack_queue), rank.release_queue)
        return [Step("S", "drain", -1, self.drained(r, rank, sizes))]


class AbortKeepsCompletedPrefix(
    Mutant, name="abort_keeps_completed_prefix", touches=("S.abort",), expected="host_memory"
):
    """release_aborted_request terminates and forgets the operation without queuing its loaded slots for release"""

    upstream = "unified_radix_cache.py, release_aborted_request: `append_host_mem_release(host_indices[:completed_tokens])` removed"
    abort_releases_completed = answers_no


# ---- the storage threads ----


class HitsPublishedWithoutAgreement(
    Mutant, name="hits_published_without_agreement", touches=("P.publish",), expected="progress"
):
    """the prefetch thread publishes its own storage hit count, not the all_reduce(MIN) result"""

    upstream = "cache_controller.py, prefetch_thread_func: `storage_hit_count = storage_hit_count_tensor.item()` dropped"

    def published_hits(self, agreed, r, i):
        return self.config.requests[self.request_of[i]].hits[r]


class AcksStopAfterShortBatch(
    Mutant, name="acks_stop_after_short_batch", touches=("I.ack", "I.done"), expected="progress"
):
    """after a short batch the IO thread sends completed_req at once, without a progress ACK for each batch left"""

    upstream = "cache_controller.py, _page_transfer: `break` after a short batch instead of looping on to emit the ACKs"
    acks_after_short_batch = answers_no


class SyncReducesWithMax(Mutant, name="sync_reduces_with_max", touches=("Y.forward",), expected="data_integrity"):
    """the sync thread reduces a progress ACK with MAX instead of MIN"""

    upstream = "cache_controller.py, _reduce_prefetch_ack: `ReduceOp.MIN` written as `ReduceOp.MAX`"
    collectives = {
        **AckDrainProtocol.collectives,
        C_ACK: Collective("y_coll", max, "all_reduce(MAX, was MIN, completed_tokens) of a progress ACK"),
    }


CATALOGUE: tuple[type[Mutant], ...] = (
    AckAppliedToAnyOperation,
    TailKeptAtCompletedReq,
    ResultFreesInsertedPages,
    RevokeKeepsEntry,
    DrainOwnSizes,
    AbortKeepsCompletedPrefix,
    HitsPublishedWithoutAgreement,
    AcksStopAfterShortBatch,
    SyncReducesWithMax,
)

BY_NAME: dict[str, type[Mutant]] = {m.name: m for m in CATALOGUE}

_TWO = (frozenset(), frozenset())

# Small configurations, each exercising one part of the protocol; together they kill the catalogue.
CONFIGS: tuple[tuple[str, AckConfig], ...] = (
    ("one-rank", uniform_ack_config(ranks=1, pages=2)),
    ("two-ranks", uniform_ack_config(ranks=2, pages=2)),
    ("missing-page", uniform_ack_config(ranks=2, pages=2, storage_batch_size=1, failing={1: {0}})),
    ("uneven-hits", AckConfig(ranks=2, requests=(Request(pages=2, hits=(2, 1), failing=_TWO),), storage_batch_size=1)),
    ("below-threshold", uniform_ack_config(ranks=1, pages=2, hits=1, prefetch_threshold=2)),
    ("hiradix-timeout", uniform_ack_config(ranks=2, pages=1, policy="timeout", cache="hiradix")),
    ("abort", AckConfig(ranks=1, requests=(Request(pages=2, hits=(2,), failing=(frozenset(),), abort_round=2),),
                        storage_batch_size=1)),
    ("readmit", AckConfig(ranks=1, requests=(Request(pages=1, hits=(1,), failing=(frozenset(),), readmits=1),),
                          policy="best_effort")),
)

# Configurations that drop an upstream assumption: the protocol violates a property there, so no
# mutant is killed by it, but a variant that fixes the bug shows its repair (`mutants --protocol`).
ASSUMPTION_CONFIGS: tuple[tuple[str, AckConfig], ...] = (
    # host allocation fails on rank 1 only: the ranks' drains diverge (progress violated)
    ("alloc-fails-on-rank-1", uniform_ack_config(ranks=2, pages=2, host_pages=(None, 0), alloc_deterministic=False)),
)
