"""all_reduce as a rendezvous: every rank arrives with a value, then departs with the reduction.

A rank's register for a thread group is `()` outside a collective, `(tag, WAITING, value,
op)` after it arrived (op is "min" or "max"), and `(tag, DONE, result)` once the last rank
arrived. The last arrival
completes the collective for everybody; each rank then departs in a step of its own.
Two ranks WAITING under different tags can never meet again: that is a mismatch.
"""

from __future__ import annotations

from prefetch_check.model.state import DONE, WAITING, Rank, State

SCHEDULER = "s_coll"
PREFETCH = "p_coll"


def elementwise(op, values):
    """Reduce a list of equal-length int tuples element by element (MIN or MAX)."""
    return tuple(op(column) for column in zip(*values))


_OP_NAMES = {min: "min", max: "max"}
_OPS = {"min": min, "max": max}


def arrive(state: State, group: str, r: int, rank: Rank, tag: tuple, value: tuple, op) -> State:
    """Rank r (already updated to `rank`) enters collective `tag` with `value`.

    Returns the new global state; when r is the last to arrive every register of the
    group switches to DONE with the reduced value.
    """
    ranks = list(state)
    ranks[r] = register_arrival(rank, group, tag, value, op)
    return tuple(complete_if_all_arrived(ranks, group))


def register_arrival(rank: Rank, group: str, tag: tuple, value: tuple, op) -> Rank:
    """The rank's own half of an arrival: its register now holds (tag, WAITING, value, op name)."""
    return rank._replace(**{group: (tag, WAITING, value, _OP_NAMES[op])})


def complete_if_all_arrived(ranks: list, group: str) -> list:
    """If every rank waits under the same tag, switch all registers to DONE with the reduction."""
    done = completion([getattr(x, group) for x in ranks])
    if done is None:
        return ranks
    return [x._replace(**{group: done}) for x in ranks]


def completion(regs: list):
    """The DONE register every rank gets if all these registers wait under one tag, else None."""
    first = regs[0]
    if not first or first[1] != WAITING:
        return None
    tag = first[0]
    if all(reg and reg[0] == tag and reg[1] == WAITING for reg in regs):
        return (tag, DONE, elementwise(_OPS[first[3]], [reg[2] for reg in regs]))
    return None


def result_for(rank: Rank, group: str, tag: tuple):
    """The reduced value if this rank may depart collective `tag`, else None."""
    reg = getattr(rank, group)
    if reg and reg[1] == DONE and reg[0] == tag:
        return reg[2]
    return None


def mismatch(state: State, group: str):
    """Two ranks waiting in different collectives of the same group, or None."""
    waiting = [(r, getattr(x, group)[0]) for r, x in enumerate(state) if getattr(x, group) and getattr(x, group)[1] == WAITING]
    for (r1, t1), (r2, t2) in zip(waiting, waiting[1:]):
        if t1 != t2:
            return (r1, t1), (r2, t2)
    return None
