"""The judgements of the ranks' views that both SGLang prefetch protocols share: host memory,
data integrity, collectives waited in, requests left unresolved. Each returns None when the
property holds, or one sentence saying why not.

Host memory is judged on what is actually given back: a slot put on host_mem_release_queue
is freed only by a drain, and a drain frees the count all ranks agree on (MIN over ranks).
Once every thread is idle nothing is queued any more, so entries beyond the smallest queue of
all ranks can never be freed: a leak, although every slot was "released". A slot given back
twice, queued or freed, is a violation the moment it happens.
"""

from __future__ import annotations

from typing import Optional

from prefetch_check.model.interface import DONE

# the properties both protocols declare (a protocol may add its own between them), in the
# order reports list them
SAFETY = ("no_early_acceptance", "wait_complete_delivers", "tp_agreement", "host_memory", "data_integrity")
LIVENESS = ("progress", "deadlock_freedom")


def agreed_release(rank, drain: int, release_at: Optional[int]) -> int:
    """Release-queue entries the drain (collective kind `drain`, whose reduced value holds the
    release queue's size at `release_at`; None: there is no release queue) all ranks agreed on
    will free, before this rank has popped them."""
    reg = rank.s_coll
    if release_at is not None and reg and reg[1] == DONE and reg[0][0] == drain:
        return reg[2][release_at]
    return 0


def host_memory_violation(views, owner: str) -> Optional[str]:
    """Why the ranks' views break host_memory, or None. A view has `double` and `held`
    ((owner index, page) or None), `quiet` and `queued` (release-queue entries still to free);
    `owner` names what the index counts ("request " or "operation #")."""
    for r, v in enumerate(views):
        if v.double is not None:
            return f"rank {r}, {owner}{v.double[0]}: host slot of page {v.double[1]} given back twice"
    if all(v.quiet for v in views):
        for r, v in enumerate(views):
            if v.held is not None:
                return (
                    f"rank {r}, {owner}{v.held[0]}: host slot of page {v.held[1]} never given back "
                    f"although every thread is idle (leak)"
                )
        fewest = min(v.queued for v in views)
        for r, v in enumerate(views):
            if v.queued > fewest:
                return (
                    f"rank {r}: {v.queued - fewest} released host slot(s) stay on host_mem_release_queue for good: "
                    f"every thread is idle and drain frees only the MIN over ranks ({fewest}) (leak)"
                )
    return None


def collective_mismatch(protocol, who: str, waiting: list) -> Optional[str]:
    """`waiting`: (rank, tag) of each rank whose `who` waits in a collective; why they deadlock, or None."""
    for (r1, t1), (r2, t2) in zip(waiting, waiting[1:]):
        if t1 != t2:
            return (
                f"{who} wait in different collectives: rank {r1} in {protocol.collective_name(t1)}, "
                f"rank {r2} in {protocol.collective_name(t2)} (a deadlock)"
            )
    return None


def short_delivery(views, delivered, expected, got) -> Optional[tuple[int, int]]:
    """(rank, request) of the first rank that resolved a request of `delivered` with `got(view,
    q)` != `expected[q]`, judged once every thread is idle (then what disturbed a request, a
    failed load, a timeout, an abort, is final, so the verdict does not depend on how far other
    ranks had got) and only for requests nothing disturbed on any rank; None if there is none."""
    if not all(v.quiet for v in views):
        return None
    for q in delivered:
        if any(v.disturbed[q] for v in views):
            continue
        for r, v in enumerate(views):
            if v.issued[q] and got(v, q) != expected[q]:
                return r, q
    return None


def unwritten_page(views, owner: str) -> Optional[str]:
    """A page handed to the tree before its data was written (a view's `unwritten`: (owner index, page))."""
    for r, v in enumerate(views):
        if v.unwritten is not None:
            i, p = v.unwritten
            return f"rank {r}, {owner}{i}: page {p} handed to the host tree before its data was written"
    return None


def unresolved(views) -> Optional[str]:
    """The requests a rank has not resolved yet (a view's `unresolved`), for progress."""
    left = [(r, q) for r, v in enumerate(views) for q in v.unresolved]
    if not left:
        return None
    return "unresolved: " + ", ".join(f"request {q} on rank {r}" for r, q in left)
