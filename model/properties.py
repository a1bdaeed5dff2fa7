"""The properties of PROTOCOL.md, each a plain explorer property with its own verdict.

Each check returns None when the property holds, or one sentence saying why not.
"""

from __future__ import annotations

from typing import NamedTuple, Optional

from prefetch_check.explorer.interface import always, always_step, deadlock_free, eventually
from prefetch_check.model.actions import SCHEDULER
from prefetch_check.model.state import DOUBLE, HELD, IN_TREE, NOT_INSERTED, REVOKED, WAITING

NAMES = (
    "no_early_acceptance",
    "wait_complete_delivers",
    "tp_agreement",
    "host_memory",
    "data_integrity",
    "progress",
    "deadlock_freedom",
)


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


def summarize(rank) -> RankView:
    double = held = unwritten = None
    for q, op in enumerate(rank.ops):
        for p, status in enumerate(op.slots):
            if status == DOUBLE and double is None:
                double = (q, p)
            elif status == HELD and held is None:
                held = (q, p)
            elif status == IN_TREE and p >= op.written and unwritten is None:
                unwritten = (q, p)
    return RankView(
        quiet=rank.p_pc < 0
        and not rank.i_pc
        and not rank.prefetch_queue
        and not rank.prefetch_buffer
        and all(op.ready for op in rank.ops),
        double=double,
        held=held,
        unwritten=unwritten,
        s_wait=rank.s_coll[0] if rank.s_coll and rank.s_coll[1] == WAITING else None,
        p_wait=rank.p_coll[0] if rank.p_coll and rank.p_coll[1] == WAITING else None,
        inserted=tuple(op.inserted for op in rank.ops),
        disturbed=tuple(op.io_failed or op.timed_out for op in rank.ops),
        issued=tuple(op.issued for op in rank.ops),
        unresolved=tuple(q for q, op in enumerate(rank.ops) if op.issued and not op.ready),
    )


def build_properties(protocol) -> list:
    """The properties; state properties are also registered in `protocol.view_checks`, as
    functions of the per-rank `RankView`s, and step properties in `protocol.rank_step_checks`,
    as functions of the acting rank, so a compiled search can cache their answers."""
    cfg = protocol.config
    waits = cfg.policy != "best_effort"
    best_effort_na = "best_effort never waits: terminating early is its contract"
    delivers_na = None if waits else best_effort_na
    if waits and all(cfg.is_revoked(q) or not cfg.is_issued_by_threshold(q) for q in range(cfg.num_requests)):
        delivers_na = "every request is revoked or below the threshold: nothing is to be delivered"

    def early_acceptance(rank, action):
        """no_early_acceptance on the acting rank's tuple before the step (all it reads)."""
        if action.thread != SCHEDULER or action.step != "check" or cfg.policy == "best_effort":
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

    def no_early_acceptance(state, action, next_state):
        return early_acceptance(state[action.rank], action)

    def wait_complete_delivers(views):
        # judged once every thread is idle: then io_failed/timed_out are final, so the verdict
        # does not depend on how far other ranks had got when one rank inserted
        if not all(v.quiet for v in views):
            return None
        for q in delivered:
            if any(v.disturbed[q] for v in views):
                continue
            for r, v in enumerate(views):
                if v.issued[q] and v.inserted[q] != expected[q]:
                    got = "nothing" if v.inserted[q] == NOT_INSERTED else f"{v.inserted[q]} tokens"
                    return (
                        f"rank {r} resolved request {q} with {got} inserted, but the ranks agreed on "
                        f"{expected[q]} hit tokens and no load failed or timed out"
                    )
        return None

    def tp_agreement(views):
        for attr, who in (("s_wait", "schedulers"), ("p_wait", "prefetch threads")):
            waiting = [(r, getattr(v, attr)) for r, v in enumerate(views) if getattr(v, attr) is not None]
            for (r1, t1), (r2, t2) in zip(waiting, waiting[1:]):
                if t1 != t2:
                    return (
                        f"{who} wait in different collectives: rank {r1} in {protocol.collective_name(t1)}, "
                        f"rank {r2} in {protocol.collective_name(t2)} (a deadlock)"
                    )
        for q in range(cfg.num_requests):
            counts = {r: v.inserted[q] for r, v in enumerate(views) if v.inserted[q] != NOT_INSERTED}
            if len(set(counts.values())) > 1:
                return f"ranks inserted different token counts for request {q}: {counts}"
        return None

    def host_memory(views):
        for r, v in enumerate(views):
            if v.double is not None:
                return f"rank {r}, request {v.double[0]}: host slot of page {v.double[1]} given back twice"
        if all(v.quiet for v in views):
            for r, v in enumerate(views):
                if v.held is not None:
                    return (
                        f"rank {r}, request {v.held[0]}: host slot of page {v.held[1]} never released "
                        f"although every thread is idle (leak)"
                    )
        return None

    def data_integrity(views):
        for r, v in enumerate(views):
            if v.unwritten is not None:
                q, p = v.unwritten
                return f"rank {r}, request {q}: page {p} handed to the tree before its data was written"
        return None

    def pending(views):
        left = [(r, q) for r, v in enumerate(views) for q in v.unresolved]
        if not left:
            return None
        return "unresolved: " + ", ".join(f"request {q} on rank {r}" for r, q in left)

    delivered = [q for q in range(cfg.num_requests) if not cfg.is_revoked(q) and cfg.is_issued_by_threshold(q)]
    expected = [cfg.agreed_hit_pages(q) * cfg.page_size for q in range(cfg.num_requests)]
    protocol.view_checks = {
        "wait_complete_delivers": wait_complete_delivers,
        "tp_agreement": tp_agreement,
        "host_memory": host_memory,
        "data_integrity": data_integrity,
        "progress": pending,
    }
    # step properties that read only the acting rank before the step: (rank tuple, action) -> reason
    protocol.rank_step_checks = {"no_early_acceptance": early_acceptance}

    def on_state(view_check):
        return lambda state: view_check([summarize(rank) for rank in state])

    return [
        always_step(
            "no_early_acceptance",
            no_early_acceptance,
            "the predicate never accepts while hash_value is empty and the operation is not revoked",
            None if waits else best_effort_na,
            concerns=lambda action: action.thread == SCHEDULER and action.step == "check",
        ),
        always(
            "wait_complete_delivers",
            on_state(wait_complete_delivers),
            "with no IO failure, no revoke and no timeout, the tokens inserted equal the agreed hit count",
            delivers_na,
        ),
        always(
            "tp_agreement",
            on_state(tp_agreement),
            "every rank inserts the same number of tokens; ranks never wait in different collectives",
        ),
        always(
            "host_memory",
            on_state(host_memory),
            "every host slot is released or handed to the tree exactly once once all threads are idle",
        ),
        always(
            "data_integrity",
            on_state(data_integrity),
            "every page handed to the tree has had its data written into host memory",
        ),
        eventually(
            "progress",
            on_state(pending),
            "every issued prefetch is eventually resolved, under weak fairness of the threads",
        ),
        deadlock_free("deadlock_freedom", "every reachable state has a successor"),
    ]
