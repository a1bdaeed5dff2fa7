"""Partial-order reduction: explore the steps of one rank at a time where that is sound.

Ranks share nothing but collectives. A rank that waits in no collective cannot be
touched by any other rank's step (another rank can only complete a collective its own
registers wait in), and every step of another rank leaves it alone. If a rank waits in a
collective, the ranks that have not yet arrived there are the only ones that can touch
it, so a closure is taken: add one missing rank per awaited collective, until closed. The
enabled steps of the ranks of a closure form a persistent set. Exploring only that set,
with all interleavings of those ranks' own threads (where races live), keeps every
history of every rank, and so every violation of the properties, as long as each
property is rank-local or stable once violated (the protocol's properties say which).

A step that the protocol declares a persistent set on its own (`RankProtocol.solo_priority`:
it commutes with every step of every other thread and changes nothing a property reads in
a way that matters) is taken alone; the argument for each is the protocol's.

No cycle can ignore a rank as long as a rank alone cannot loop (a scheduler's loop passes
through collectives of all ranks): every cycle of the reduced graph then takes a step of
every rank, and at the states where a rank is chosen all its enabled steps are explored.
Progress is judged with every enabled actor of a state (not only the chosen ones), so a
cycle that starves a thread stays unfair.

The reduction does not keep counterexamples shortest (symmetry alone does); the explorer
re-searches each one without it. The soundness harness (`vouch.py`) compares verdicts
with and without the reductions.
"""

from __future__ import annotations

def closure_ranks(counts: list, waiting: list) -> set | None:
    """The ranks whose enabled steps to explore in a state without a solo step: the cheapest
    rank closure (see the module docstring), or None for every rank.

    counts[r] is the number of rank r's enabled steps, waiting[r] the collectives it waits
    in (`waits_of`). The choice depends on these only, never on the order steps are listed in."""
    n = len(counts)
    total = sum(counts)
    if n == 1 or not total:
        return None

    def closure(start: int) -> set:
        members = {start}
        todo = [start]
        while todo:
            for key in waiting[todo.pop()]:
                missing = [x for x in range(n) if key not in waiting[x]]
                if any(x in members for x in missing):
                    continue
                pick = min(missing, key=lambda x: (counts[x], x))
                members.add(pick)
                todo.append(pick)
        return members

    # a free rank (waiting in nothing) is a closure by itself; rank order breaks ties
    best, best_size = None, total
    for r in range(n):
        if counts[r] and not waiting[r] and counts[r] < best_size:
            best, best_size = {r}, counts[r]
    for r in range(n):
        if counts[r] and waiting[r] and counts[r] < best_size:  # a closure is at least as big as its start
            members = closure(r)
            size = sum(counts[x] for x in members)
            if size < best_size:
                best, best_size = members, size
    return best
