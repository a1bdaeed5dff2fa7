"""all_reduce as a rendezvous, completed in this one place for every protocol.

A step that arrives in a collective (`Step.arrive = (tag, value)`) leaves its rank's
register of the collective's group as `(tag, WAITING, value)`. When every rank of the
group waits under the same tag, each register becomes `(tag, DONE, reduced value)`,
where the reduction is the one the protocol declares for the tag's kind; each rank then
departs in a step of its own (`model.interface.result`). With a single rank there is
nobody to wait for: the arrival completes at once.
"""

from __future__ import annotations

from prefetch_check.model.interface import DONE, WAITING


def groups_of(protocol) -> tuple[str, ...]:
    """The register fields of the protocol's collective groups, in order of first declaration."""
    return tuple(dict.fromkeys(c.group for c in protocol.collectives.values()))


def group_of(protocol, tag: tuple) -> str:
    return protocol.collectives[tag[0]].group


def arrived(protocol, rank: tuple, tag: tuple, value: tuple) -> tuple:
    """The rank after arriving in collective `tag` with `value` (completed at once if alone)."""
    if protocol.ranks == 1:
        return rank._replace(**{group_of(protocol, tag): (tag, DONE, value)})
    return rank._replace(**{group_of(protocol, tag): (tag, WAITING, value)})


def completion(protocol, regs) -> tuple | None:
    """The DONE register every rank gets if all these registers wait under one tag, else None."""
    first = regs[0]
    if not first or first[1] != WAITING:
        return None
    tag = first[0]
    for reg in regs:
        if not reg or reg[0] != tag or reg[1] != WAITING:
            return None
    reduce = protocol.collectives[tag[0]].reduce
    return (tag, DONE, tuple(reduce(column) for column in zip(*[reg[2] for reg in regs])))


def complete(protocol, state: tuple, group: str) -> tuple:
    """The global state with the collective of `group` completed, if every rank has arrived."""
    done = completion(protocol, [getattr(rank, group) for rank in state])
    if done is None:
        return state
    return tuple(rank._replace(**{group: done}) for rank in state)


def waits_of(registers: tuple) -> tuple:
    """The collectives a rank waits in, as (group index, tag) pairs (for the reduction)."""
    return tuple((g, reg[0]) for g, reg in enumerate(registers) if reg and reg[1] == WAITING)
