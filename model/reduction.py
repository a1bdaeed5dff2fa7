"""Partial-order reduction: explore the steps of one rank at a time where that is sound.

Ranks share nothing but collectives. A rank whose scheduler and prefetch thread are
not WAITING in a collective cannot be touched by any other rank's step (another
rank can only complete a collective its own registers wait in), and every step of
another rank leaves it alone. If a rank waits in a collective, the ranks that have
not yet arrived there are the only ones that can touch it, so a closure is taken:
add one missing rank per awaited collective, until closed. The enabled steps of the
ranks of a closure form a persistent set. Exploring only that set, with all
interleavings of those ranks' own threads (where the race lives), keeps every
history of every rank, and so every violation of the properties, which are
rank-local (early acceptance, data integrity, double release) or stable once
violated (different inserts, ranks stuck in different collectives, a leak or a short
delivery at quiescence, a deadlock).

No cycle can ignore a rank: a rank alone cannot loop (its scheduler's loop passes
through collectives of all ranks), so every cycle of the reduced graph takes a step
of every rank, and at the states where a rank is chosen all its enabled steps are
explored. Progress is judged with every enabled actor of a state (not only the
chosen ones), so a cycle that starves a thread stays unfair.

The reduction does not keep counterexamples shortest (symmetry alone does); the
plain search (`reductions=False`) does. A test compares verdicts with and without
the reduction on the shipped scenarios and on random small configurations.
"""

from __future__ import annotations

from prefetch_check.model.state import WAITING


def waits_of(s_coll, p_coll) -> tuple:
    """The collectives a rank waits in, as (group index, tag) pairs."""
    return tuple((g, reg[0]) for g, reg in enumerate((s_coll, p_coll)) if reg and reg[1] == WAITING)


# Steps that commute with every step of every other thread and change nothing a property
# reads in a way that matters, so each is a persistent set on its own:
#   S.drain, S.keep_waiting  leave a collective: only this scheduler's own pc and register
#                            (drain pops queue heads and subtracts counts: commutes with appends)
#   I.take                   pops the head of prefetch_buffer (publish appends at the tail)
#   I.write                  sets `written`, read by no thread; the tree only takes pages below
#                            completed_tokens, and the IO thread counts a page only after
#                            writing it, so no insert can overtake a pending write
# (Mutants may break these facts: the mutation runner does not use this reduction.)
INDEPENDENT_STEPS = {("S", "drain"): 0, ("S", "keep_waiting"): 1, ("I", "take"): 2, ("I", "write"): 3}


def solo_priority(action, commutes: bool = False):
    """The priority (lower first) of `action` as a persistent set on its own, or None if it is not
    one: the steps of INDEPENDENT_STEPS, and an increment that `commutes` here."""
    key = INDEPENDENT_STEPS.get((action.thread, action.step))
    if key is None and commutes and action.step == "increment":
        key = len(INDEPENDENT_STEPS)
    return key


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
