"""Rank symmetry: ranks with identical parameters are interchangeable.

Two ranks are in the same class when storage looks the same to them (hits and failing
pages of every request) and their host allocation may fail alike. Permuting ranks of
one class maps behaviours to behaviours and leaves every property's answer unchanged
(each property quantifies over all ranks), so the search stores one representative
per orbit: the state with the ranks of each class sorted.

Requests are NOT interchangeable even with identical parameters: the scheduler visits
waiting requests in order and both thread queues are FIFO, so swapping two requests
does not map behaviours to behaviours.

Fairness under the reduction (see `explorer/liveness.py`): `Rank` lists the
scheduler's fields last, so sorting orders ranks by what their prefetch thread, IO
thread and clock see. Those threads only take irreversible steps (a stage advances,
a page is loaded, a clock fires), so every cycle of the state graph consists of
scheduler steps, which permute only ranks whose other threads look alike: the actor
at a canonical position keeps its enabledness along a cycle and the weak-fairness
judgement on representatives equals the one on concrete states. A test compares the
verdicts with and without the reduction.
"""

from __future__ import annotations

from prefetch_check.model.config import Config


def rank_classes(config: Config) -> tuple[tuple[int, ...], ...]:
    """Groups of rank indices with identical parameters, in rank order."""
    groups: dict = {}
    for r in range(config.ranks):
        signature = (
            tuple(q.hits[r] for q in config.requests),
            tuple(tuple(sorted(q.failing[r])) for q in config.requests),
            config.alloc_may_fail[r],
        )
        groups.setdefault(signature, []).append(r)
    return tuple(tuple(g) for g in groups.values())


def canonicalizer(config: Config):
    """A function state -> representative of its orbit, or None when no two ranks are alike."""
    classes = [c for c in rank_classes(config) if len(c) > 1]
    if not classes:
        return None
    if len(classes) == 1 and len(classes[0]) == config.ranks:
        return _sort_all
    def canonical(state):
        ranks = list(state)
        for positions in classes:
            for pos, rank in zip(positions, sorted(state[p] for p in positions)):
                ranks[pos] = rank
        return tuple(ranks)

    return canonical


def _sort_all(state):
    return tuple(sorted(state))
