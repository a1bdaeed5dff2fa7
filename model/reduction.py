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

from model.state import WAITING


def rank_waits(state, r: int) -> tuple:
    """The collectives rank r waits in, as (group index, tag) pairs, in a plain state."""
    rank = state[r]
    return waits_of(rank.s_coll, rank.p_coll)


def waits_of(s_coll, p_coll) -> tuple:
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


def make_chooser(waits=rank_waits, commutes=None):
    """choose(state, actions) -> the actions to explore, for the enabled `actions` of a state
    whose `waits(state, r)` is known; `commutes(state, action)` may name further steps that
    are persistent sets on their own in that state (see `CompiledProtocol.increment_commutes`).
    The choice depends on the actions' ranks and kinds only, never on their listed order."""

    def closure(state, start: int, counts: dict, waiting: list) -> set:
        members = {start}
        todo = [start]
        while todo:
            for key in waiting[todo.pop()]:
                missing = [x for x in range(len(state)) if key not in waiting[x]]
                if any(x in members for x in missing):
                    continue
                pick = min(missing, key=lambda x: (counts.get(x, 0), x))
                members.add(pick)
                todo.append(pick)
        return members

    def choose(state, actions: list) -> list:
        if not actions:
            return actions
        lone = None
        for action in actions:
            rank_key = INDEPENDENT_STEPS.get((action.thread, action.step))
            if rank_key is None and action.step == "increment" and commutes is not None and commutes(state, action):
                rank_key = len(INDEPENDENT_STEPS)
            if rank_key is not None and (lone is None or (action.rank, rank_key) < lone[0]):
                lone = ((action.rank, rank_key), action)
        if lone is not None:
            return [lone[1]]
        if len(state) == 1:
            return actions
        counts: dict = {}
        for action in actions:
            counts[action.rank] = counts.get(action.rank, 0) + 1
        waiting = [waits(state, x) for x in range(len(state))]
        # a free rank (waiting in nothing) is a closure by itself; rank order breaks ties
        best, best_size = None, len(actions)
        for r in sorted(counts):
            if not waiting[r] and counts[r] < best_size:
                best, best_size = {r}, counts[r]
        for r in sorted(counts):
            if waiting[r] and counts[r] < best_size:  # a closure is at least as big as its start
                members = closure(state, r, counts, waiting)
                size = sum(counts.get(x, 0) for x in members)
                if size < best_size:
                    best, best_size = members, size
        if best is None:
            return actions
        return [action for action in actions if action.rank in best]

    return choose


def make_persistent_set(waits=rank_waits, commutes=None):
    """persistent_set(state, successors): the (action, next state) pairs `make_chooser` keeps."""
    choose = make_chooser(waits, commutes)

    def persistent_set(state, successors: list) -> list:
        kept = choose(state, [action for action, _ in successors])
        if len(kept) == len(successors):
            return successors
        keep = set(kept)
        return [pair for pair in successors if pair[0] in keep]

    return persistent_set


persistent_set = make_persistent_set()
