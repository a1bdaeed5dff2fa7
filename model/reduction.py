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


def rank_registers(state, r: int) -> tuple:
    """The (scheduler, prefetch-thread) collective registers of rank r in a plain state."""
    rank = state[r]
    return rank.s_coll, rank.p_coll


def make_persistent_set(registers=rank_registers):
    """persistent_set(state, successors) for states whose registers `registers(state, r)` reads."""

    def waits_for(state, r: int) -> list:
        missing = []
        for g, reg in enumerate(registers(state, r)):
            if reg and reg[1] == WAITING:
                key = reg[:2]
                missing.append([x for x in range(len(state)) if registers(state, x)[g][:2] != key])
        return missing

    def closure(state, start: int, by_rank: dict) -> set:
        members = {start}
        todo = [start]
        while todo:
            for missing in waits_for(state, todo.pop()):
                if any(x in members for x in missing):
                    continue
                pick = min(missing, key=lambda x: (len(by_rank.get(x, ())), x))
                members.add(pick)
                todo.append(pick)
        return members

    def persistent_set(state, successors: list) -> list:
        if len(state) == 1 or not successors:
            return successors
        by_rank: dict = {}
        for pair in successors:
            by_rank.setdefault(pair[0].rank, []).append(pair)
        best, best_size = None, len(successors)
        for r in sorted(by_rank):  # rank order, not enumeration order: counts must not depend on it
            members = closure(state, r, by_rank)
            size = sum(len(by_rank.get(x, ())) for x in members)
            if size < best_size:
                best, best_size = members, size
                if size == 1:
                    break
        if best is None:
            return successors
        return [pair for pair in successors if pair[0].rank in best]

    return persistent_set


persistent_set = make_persistent_set()
