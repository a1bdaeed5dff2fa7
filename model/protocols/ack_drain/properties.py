"""The properties of the ack-drain protocol, each with its own verdict, adapted where the words of
the predicate-poll protocol do not fit (docs/model.md says how):

- no_early_acceptance: a check never accepts while the operation's hash_value is still empty
  and it is not terminated (the race of the seed fix, for a predicate that would bring it back);
- wait_complete_delivers: once every thread is idle, a request nothing disturbed (no short read,
  no storage exception, no abort, no timeout) holds its agreed hits in the host tree on every rank;
- tp_agreement: no rank waits in a collective the others are not in; ACKs reduced together
  belong to one operation; once every thread is idle, every rank holds as many pages of each
  request in its host tree;
- host_memory: every allocated slot is given back (freed, queued) or handed to the tree exactly
  once, and once every thread is idle nothing is held and nothing stays queued that drains can
  never free (a drain frees the MIN over the ranks);
- data_integrity: every page handed to the tree was written;
- no_crash: no thread dies (a storage exception that is not caught, the scheduler handling an
  operation that has no host memory);
- progress, deadlock_freedom as in the predicate-poll protocol.
"""

from __future__ import annotations

from functools import partial
from typing import NamedTuple, Optional

from prefetch_check.model.interface import deadlock_freedom, invariant, progress, step_invariant
from prefetch_check.model.protocols.ack_drain.state import C_DRAIN, DEAD, NO_OP, S_CRASHED, WAITING
from prefetch_check.model.protocols import shared_checks as checks
from prefetch_check.model.protocols.host_slot_status import slot_faults

NAMES = checks.SAFETY + ("no_crash", "operation_identity") + checks.LIVENESS


class RankView(NamedTuple):
    """What the state properties read of one rank (computed once per distinct rank state)."""

    quiet: bool  # every thread idle, every queue empty, every request done
    double: Optional[tuple]  # (operation, page) of a slot given back twice
    held: Optional[tuple]  # (operation, page) of a slot still held
    unwritten: Optional[tuple]  # (operation, page) in the tree but never written
    waits: tuple  # (group, tag) of each collective the rank waits in
    acks_mixed: bool
    tree: tuple  # per request: pages in the host tree
    disturbed: tuple  # per request: a short read, an exception, a timeout or an abort here
    issued: tuple  # per request: a prefetch was issued here
    unresolved: tuple  # requests not done here
    queued: int  # release-queue entries still to free, after a drain this rank agreed on
    dead: tuple  # the threads that died here
    stale: tuple  # () or (operation, the newer operation of its request it acted on)


def summarize(protocol, rank) -> RankView:
    double, held, unwritten = slot_faults(rank.ops)
    requests = protocol.config.requests
    done = tuple(req.aborted or (req.ready and req.gen + 1 >= requests[q].generations) for q, req in enumerate(rank.reqs))
    disturbed = []
    for q, req in enumerate(rank.reqs):
        ops = [rank.ops[i] for i in protocol.ops_of[q]]
        disturbed.append(req.cut or any(op.disturbed or op.timed_out for op in ops))
    dead = tuple(
        name for name, gone in (("scheduler", rank.s_pc[0] == S_CRASHED), ("prefetch", rank.p_pc == DEAD), ("io", rank.i_pc == (DEAD,)))
        if gone
    )
    waits = tuple((g, reg[0]) for g, reg in (("scheduler", rank.s_coll), ("prefetch", rank.p_coll), ("sync", rank.y_coll))
                  if reg and reg[1] == WAITING)
    return RankView(
        quiet=rank.p_pc == -1 and not rank.i_pc and not rank.y_pc and not rank.prefetch_queue and not rank.hit_queue
        and not rank.prefetch_buffer and not rank.sync_queue and not rank.ack_queue and all(done),
        double=double,
        held=held,
        unwritten=unwritten,
        waits=waits,
        acks_mixed=rank.acks_mixed,
        tree=tuple(req.tree for req in rank.reqs),
        disturbed=tuple(disturbed),
        issued=tuple(any(rank.ops[i].issued for i in protocol.ops_of[q]) for q in range(len(rank.reqs))),
        unresolved=tuple(q for q, d in enumerate(done) if not d),
        queued=rank.release_queue - checks.agreed_release(rank, C_DRAIN, 2),
        dead=dead,
        stale=rank.stale,
    )


def build_properties(protocol) -> list:
    cfg = protocol.config
    waits = cfg.policy != "best_effort"
    best_effort_na = "best_effort never waits: terminating early is its contract"
    # what every rank can load: the agreed hits, cut to the smallest allocation of any rank (the ACKs' MIN)
    expected = [min(cfg.alloc_pages(r, cfg.agreed_hit_pages(q)) for r in range(cfg.ranks)) if cfg.is_issued_by_threshold(q) else 0
                for q in range(cfg.num_requests)]
    expected = [e if e * cfg.page_size >= cfg.prefetch_threshold else 0 for e in expected]
    delivered = [q for q in range(cfg.num_requests) if expected[q] > 0]
    delivers_na = None if waits else best_effort_na
    if waits and not delivered:
        delivers_na = "every request is below the threshold or finds nothing to load: nothing is to be delivered"

    def no_early_acceptance(rank, action):
        if not waits:
            return None
        i = rank.reqs[action.q].ongoing
        if i == NO_OP:
            return None
        op = rank.ops[i]
        if op.hash_value > 0 or op.terminated or op.timed_out:
            return None
        if protocol.decide_op(op):
            return (
                f"rank {action.rank} accepted request {action.q} (#{i}) while its hash_value was still empty "
                f"(the hit count not yet published)"
            )
        return None

    def wait_complete_delivers(views):
        short = checks.short_delivery(views, delivered, expected, lambda v, q: v.tree[q])
        if short is None:
            return None
        r, q = short
        return (
            f"rank {r} resolved request {q} with {views[r].tree[q]} page(s) in the host tree, but storage held "
            f"{expected[q]} that every rank could load, and nothing failed, timed out or was aborted"
        )

    def tp_agreement(views):
        for group in ("scheduler", "prefetch", "sync"):
            waiting = [(r, tag) for r, v in enumerate(views) for g, tag in v.waits if g == group]
            mismatch = checks.collective_mismatch(protocol, f"{group} threads", waiting)
            if mismatch:
                return mismatch
        for r, v in enumerate(views):
            if v.acks_mixed:
                return f"rank {r}'s sync thread reduced a progress ACK together with another operation's ACK (ACKs pair by position)"
        if all(v.quiet for v in views):
            for q in range(cfg.num_requests):
                counts = {r: v.tree[q] for r, v in enumerate(views)}
                if len(set(counts.values())) > 1:
                    return f"the ranks hold different numbers of pages of request {q} in their host trees: {counts}"
        return None

    def no_crash(views):
        for r, v in enumerate(views):
            if v.dead:
                return f"rank {r}: the {', '.join(v.dead)} thread died"
        return None

    def operation_identity(views):
        for r, v in enumerate(views):
            if v.stale:
                old, new = v.stale
                return (
                    f"rank {r}: operation #{old} acted on ongoing_prefetch's #{new}, a newer prefetch of the same "
                    f"request id (it revoked it or put its result in the tree)"
                )
        return None

    return [
        step_invariant(
            "no_early_acceptance", no_early_acceptance,
            "a check never accepts while the operation's hash_value is still empty and it is not terminated",
            None if waits else best_effort_na,
            concerns=lambda action: action.thread == "S" and action.step in ("accept", "vote"),
        ),
        invariant(
            "wait_complete_delivers", wait_complete_delivers,
            "once every thread is idle, a request nothing disturbed holds its agreed hits in the host tree on every rank",
            delivers_na,
        ),
        invariant(
            "tp_agreement", tp_agreement,
            "no rank waits in a collective the others are not in; ACKs reduced together belong to one operation; "
            "every rank holds as many pages of each request in its host tree",
        ),
        invariant(
            "host_memory", partial(checks.host_memory_violation, owner="operation #"),
            "every host slot is given back or handed to the tree exactly once, and none is held or left queued for good",
        ),
        invariant(
            "data_integrity", partial(checks.unwritten_page, owner="operation #"),
            "every page handed to the host tree has had its data written",
        ),
        invariant("no_crash", no_crash, "no thread of any rank dies"),
        invariant(
            "operation_identity", operation_identity,
            "the drain acts on a prefetch only through its own operation: an operation of an earlier prefetch of "
            "the same request id never revokes or resolves a newer one",
        ),
        progress("progress", checks.unresolved, "every request is eventually done (checked and admitted), under weak fairness"),
        deadlock_freedom("deadlock_freedom", "every reachable state has a successor"),
    ]
