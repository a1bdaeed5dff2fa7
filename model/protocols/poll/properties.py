"""The properties of PROTOCOL.md, each declared with what it reads and with its own verdict.

State properties read the ranks' `RankView`s (computed once per distinct rank state);
`no_early_acceptance` reads the acting rank before a `check`. Each check returns None
when the property holds, or one sentence saying why not.

Host memory is judged on what is actually given back (model/protocols/shared_checks.py says
how); a slot freed directly (`direct_release`, 0.5.1.x) is free at once.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple, Optional

from prefetch_check.model.interface import deadlock_freedom, invariant, progress, step_invariant
from prefetch_check.model.protocols import shared_checks as checks
from prefetch_check.model.protocols.host_slot_status import slot_faults
from prefetch_check.model.protocols.poll.state import C_DRAIN, NOT_INSERTED, REVOKED, WAITING

NAMES = checks.SAFETY + checks.LIVENESS


class RankView(NamedTuple):
    """What the state properties need of one rank; computed once per distinct rank tuple."""

    quiet: bool  # prefetch and IO threads idle with nothing queued, every request resolved
    double: Optional[tuple]  # (request, page) of a slot given back twice
    held: Optional[tuple]  # (request, page) of a slot still held
    unwritten: Optional[tuple]  # (request, page) in the tree but never written
    s_wait: Optional[tuple]  # tag of the scheduler collective this rank waits in
    p_wait: Optional[tuple]  # tag of the prefetch-thread collective this rank waits in
    inserted: tuple  # per request: tokens inserted, or NOT_INSERTED
    disturbed: tuple  # per request: a load failed or the timeout fired here
    issued: tuple  # per request: an operation exists here
    unresolved: tuple  # requests issued here and not yet resolved by the scheduler
    queued: int  # release-queue entries still to be freed, after a drain this rank has agreed on


def summarize(rank, release_at: Optional[int] = 1, alloc_at_issue: bool = True) -> RankView:
    """The view of one rank. `release_at`: where the release queue's size sits in the drain's
    all_reduce (None: there is no release queue); `alloc_at_issue`: host slots are reserved at
    issue, so an operation without them is one whose allocation failed (and delivers nothing)."""
    double, held, unwritten = slot_faults(rank.ops)
    return RankView(
        quiet=rank.p_pc < 0
        and not rank.i_pc
        and not rank.prefetch_queue
        and not rank.prefetch_buffer
        and not rank.hit_queue
        and all(op.ready for op in rank.ops),
        double=double,
        held=held,
        unwritten=unwritten,
        s_wait=rank.s_coll[0] if rank.s_coll and rank.s_coll[1] == WAITING else None,
        p_wait=rank.p_coll[0] if rank.p_coll and rank.p_coll[1] == WAITING else None,
        inserted=tuple(op.inserted for op in rank.ops),
        disturbed=tuple(op.io_failed or op.timed_out or (alloc_at_issue and op.issued and not op.allocated) for op in rank.ops),
        issued=tuple(op.issued for op in rank.ops),
        unresolved=tuple(q for q, op in enumerate(rank.ops) if op.issued and not op.ready),
        queued=rank.release_queue - checks.agreed_release(rank, C_DRAIN, release_at),
    )


DELIVERS = {
    "issue": "with no IO failure, no revoke and no timeout, the tokens inserted equal the agreed hit count",
    "hit": "with no IO failure, no revoke and no timeout, the tokens inserted equal the agreed hit count, "
    "as far as the host slots the drain allocated hold",
}


def build_properties(protocol) -> list:
    """The declared properties for the protocol's configuration."""
    cfg = protocol.config
    waits = cfg.policy != "best_effort"
    best_effort_na = "best_effort never waits: terminating early is its contract"
    delivers_na = None if waits else best_effort_na
    if waits and all(cfg.delivered_pages(q) is None for q in range(cfg.num_requests)):
        where = "" if cfg.alloc_at == "issue" else " (on some rank, by the threshold or for want of host slots)"
        delivers_na = f"every request is revoked{where} or below the threshold: nothing is to be delivered"

    def no_early_acceptance(rank, action):
        if cfg.policy == "best_effort":
            return None
        op = rank.ops[action.q]
        if not op.ongoing or op.hash_value > 0 or op.stage == REVOKED:
            return None
        if cfg.policy == "timeout" and op.timed_out:
            return None
        if protocol.decide_op(op):
            return (
                f"rank {action.rank} accepted request {action.q} as complete while its hash_value "
                f"was still empty (not yet published, not revoked)"
            )
        return None

    def wait_complete_delivers(views):
        # nothing inserted counts as 0 tokens
        short = checks.short_delivery(views, delivered, expected, lambda v, q: max(v.inserted[q], 0))
        if short is None:
            return None
        r, q = short
        got = "nothing" if views[r].inserted[q] == NOT_INSERTED else f"{views[r].inserted[q]} tokens"
        if cfg.alloc_at == "issue":
            agreed = f"the ranks agreed on {expected[q]} hit tokens"
        else:
            agreed = f"{expected[q]} tokens were to be delivered (the agreed hits, as far as the host slots allocated hold)"
        return f"rank {r} resolved request {q} with {got} inserted, but {agreed} and no load failed or timed out"

    def tp_agreement(views):
        for attr, who in (("s_wait", "schedulers"), ("p_wait", "prefetch threads")):
            waiting = [(r, getattr(v, attr)) for r, v in enumerate(views) if getattr(v, attr) is not None]
            mismatch = checks.collective_mismatch(protocol, who, waiting)
            if mismatch:
                return mismatch
        for q in range(cfg.num_requests):
            counts = {r: v.inserted[q] for r, v in enumerate(views) if v.inserted[q] != NOT_INSERTED}
            if len(set(counts.values())) > 1:
                return f"ranks inserted different token counts for request {q}: {counts}"
        return None

    delivered = [q for q in range(cfg.num_requests) if cfg.delivered_pages(q) is not None]
    expected = [(cfg.delivered_pages(q) or 0) * cfg.page_size for q in range(cfg.num_requests)]
    return [
        step_invariant(
            "no_early_acceptance",
            no_early_acceptance,
            "the predicate never accepts while hash_value is empty and the operation is not revoked",
            None if waits else best_effort_na,
            concerns=lambda action: action.thread == "S" and action.step == "check",
        ),
        invariant(
            "wait_complete_delivers",
            wait_complete_delivers,
            DELIVERS[cfg.alloc_at],
            delivers_na,
        ),
        invariant(
            "tp_agreement",
            tp_agreement,
            "every rank inserts the same number of tokens; ranks never wait in different collectives",
        ),
        invariant(
            "host_memory",
            partial(checks.host_memory_violation, owner="request "),
            "every host slot is freed or handed to the tree exactly once once all threads are idle",
        ),
        invariant(
            "data_integrity",
            partial(checks.unwritten_page, owner="request "),
            "every page handed to the tree has had its data written into host memory",
        ),
        progress(
            "progress",
            checks.unresolved,
            "every issued prefetch is eventually resolved, under weak fairness of the threads",
        ),
        deadlock_freedom("deadlock_freedom", "every reachable state has a successor"),
    ]
