"""The properties of PROTOCOL.md, each a plain explorer property with its own verdict.

Each check returns None when the property holds, or one sentence saying why not.
"""

from __future__ import annotations

from explorer.interface import always, always_step, deadlock_free, eventually
from model.actions import SCHEDULER
from model.collectives import PREFETCH, SCHEDULER as SCHED_GROUP, mismatch
from model.state import DOUBLE, HELD, IN_TREE, NOT_INSERTED, REVOKED

NAMES = (
    "no_early_acceptance",
    "wait_complete_delivers",
    "tp_agreement",
    "host_memory",
    "data_integrity",
    "progress",
    "deadlock_freedom",
)


def build_properties(protocol) -> list:
    cfg = protocol.config
    waits = cfg.policy != "best_effort"
    best_effort_na = "best_effort never waits: terminating early is its contract"
    delivers_na = None if waits else best_effort_na
    if waits and all(cfg.is_revoked(q) or not cfg.is_issued_by_threshold(q) for q in range(cfg.num_requests)):
        delivers_na = "every request is revoked or below the threshold: nothing is to be delivered"

    def no_early_acceptance(state, action, next_state):
        if action.thread != SCHEDULER or action.step != "check" or cfg.policy == "best_effort":
            return None
        op = state[action.rank].ops[action.q]
        if not op.ongoing or op.hash_value > 0 or op.stage == REVOKED:
            return None
        if cfg.policy == "timeout" and op.timed_out:
            return None
        if protocol.decide(state, action.rank, action.q):
            return (
                f"rank {action.rank} accepted request {action.q} as complete while its hash_value "
                f"was still empty (not yet published, not revoked)"
            )
        return None

    def wait_complete_delivers(state):
        # judged once every thread is idle: then io_failed/timed_out are final, so the verdict
        # does not depend on how far other ranks had got when one rank inserted
        if not protocol.quiescent(state):
            return None
        for q in range(cfg.num_requests):
            if cfg.is_revoked(q) or not cfg.is_issued_by_threshold(q):
                continue
            ops = [rank.ops[q] for rank in state]
            if any(op.io_failed or op.timed_out for op in ops):
                continue
            expected = cfg.agreed_hit_pages(q) * cfg.page_size
            for r, op in enumerate(ops):
                if op.issued and op.inserted != expected:
                    got = "nothing" if op.inserted == NOT_INSERTED else f"{op.inserted} tokens"
                    return (
                        f"rank {r} resolved request {q} with {got} inserted, but the ranks agreed on "
                        f"{expected} hit tokens and no load failed or timed out"
                    )
        return None

    def tp_agreement(state):
        for group, who in ((SCHED_GROUP, "schedulers"), (PREFETCH, "prefetch threads")):
            bad = mismatch(state, group)
            if bad:
                (r1, t1), (r2, t2) = bad
                return (
                    f"{who} wait in different collectives: rank {r1} in {protocol.collective_name(t1)}, "
                    f"rank {r2} in {protocol.collective_name(t2)} (a deadlock)"
                )
        for q in range(cfg.num_requests):
            counts = {r: rank.ops[q].inserted for r, rank in enumerate(state) if rank.ops[q].inserted != NOT_INSERTED}
            if len(set(counts.values())) > 1:
                return f"ranks inserted different token counts for request {q}: {counts}"
        return None

    def host_memory(state):
        for r, rank in enumerate(state):
            for q, op in enumerate(rank.ops):
                if DOUBLE in op.slots:
                    return f"rank {r}, request {q}: host slot of page {op.slots.index(DOUBLE)} given back twice"
        if protocol.quiescent(state):
            for r, rank in enumerate(state):
                for q, op in enumerate(rank.ops):
                    if HELD in op.slots:
                        return (
                            f"rank {r}, request {q}: host slot of page {op.slots.index(HELD)} never released "
                            f"although every thread is idle (leak)"
                        )
        return None

    def data_integrity(state):
        for r, rank in enumerate(state):
            for q, op in enumerate(rank.ops):
                for p, status in enumerate(op.slots):
                    if status == IN_TREE and p >= op.written:
                        return f"rank {r}, request {q}: page {p} handed to the tree before its data was written"
        return None

    def pending(state):
        left = [(r, q) for r, rank in enumerate(state) for q, op in enumerate(rank.ops) if op.issued and not op.ready]
        if not left:
            return None
        return "unresolved: " + ", ".join(f"request {q} on rank {r}" for r, q in left)

    return [
        always_step(
            "no_early_acceptance",
            no_early_acceptance,
            "the predicate never accepts while hash_value is empty and the operation is not revoked",
            None if waits else best_effort_na,
        ),
        always(
            "wait_complete_delivers",
            wait_complete_delivers,
            "with no IO failure, no revoke and no timeout, the tokens inserted equal the agreed hit count",
            delivers_na,
        ),
        always(
            "tp_agreement",
            tp_agreement,
            "every rank inserts the same number of tokens; ranks never wait in different collectives",
        ),
        always(
            "host_memory",
            host_memory,
            "every host slot is released or handed to the tree exactly once once all threads are idle",
        ),
        always(
            "data_integrity",
            data_integrity,
            "every page handed to the tree has had its data written into host memory",
        ),
        eventually(
            "progress",
            pending,
            "every issued prefetch is eventually resolved, under weak fairness of the threads",
        ),
        deadlock_free("deadlock_freedom", "every reachable state has a successor"),
    ]
