"""Partial-order reduction: explore the steps of one rank at a time where that is sound.

Ranks share nothing but collectives. A rank whose scheduler and prefetch thread are
not WAITING in a collective cannot be touched by any other rank's step (another
rank can only complete a collective its own registers wait in), and every step of
another rank leaves it alone: the enabled steps of such a rank form a persistent
set. Exploring only that set, with all interleavings of the rank's own threads
(where the race lives), keeps every history of every rank, and so every violation
of the properties, which are rank-local (early acceptance, data integrity, double
release) or stable once violated (different inserts, ranks stuck in different
collectives, a leak or a short delivery at quiescence, a deadlock).

No cycle can ignore a rank: a rank alone cannot loop (its scheduler's loop passes
through collectives of all ranks), so every cycle of the reduced graph takes a step
of every rank, and at the states where a rank is chosen all its enabled steps are
explored. Progress is judged with every enabled actor of a state (not only the
chosen ones), so a cycle that starves a thread stays unfair.

A test compares verdicts with and without the reduction on every shipped scenario
small enough for the plain search, and on random small configurations.
"""

from __future__ import annotations

from model.state import WAITING


def _waits_for(state, r: int):
    """The ranks that have not yet arrived in a collective rank r waits in (empty if r waits in none)."""
    missing = []
    for group in ("s_coll", "p_coll"):
        reg = getattr(state[r], group)
        if reg and reg[1] == WAITING:
            tag = reg[0]
            missing.append([x for x in range(len(state)) if getattr(state[x], group)[:2] != (tag, WAITING)])
    return missing


def _closure(state, start: int, by_rank: dict) -> set:
    """Ranks whose steps form a persistent set with `start`'s: for each collective a member waits
    in, add one rank that has not arrived (the one with fewest enabled steps), until closed."""
    members = {start}
    todo = [start]
    while todo:
        r = todo.pop()
        for missing in _waits_for(state, r):
            if any(x in members for x in missing):
                continue
            pick = min(missing, key=lambda x: (len(by_rank.get(x, ())), x))
            members.add(pick)
            todo.append(pick)
    return members


def persistent_set(state, successors: list) -> list:
    """The smallest rank closure's steps (see the module doc), or all steps."""
    if len(state) == 1 or not successors:
        return successors
    by_rank: dict = {}
    for pair in successors:
        by_rank.setdefault(pair[0].rank, []).append(pair)
    best, best_size = None, len(successors)
    for r in sorted(by_rank):  # rank order, not enumeration order: counts must not depend on it
        members = _closure(state, r, by_rank)
        size = sum(len(by_rank.get(x, ())) for x in members)
        if size < best_size:
            best, best_size = members, size
            if size == 1:
                break
    if best is None:
        return successors
    return [pair for pair in successors if pair[0].rank in best]
