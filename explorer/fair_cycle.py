"""A shortest weakly fair cycle in a component of the pending graph, for a progress lasso.

`liveness` finds a strongly connected component of pending states in which a fair cycle
exists; this module picks the cycle to show: the shortest one through the component's
entry (the state nearest an initial state), so a reader sees one round, not two.
"""

from __future__ import annotations

from collections import deque

from prefetch_check.explorer.bfs import Exploration


def inside(ex: Exploration, u: int, comp, bit: int):
    """(v, Label) of the edges from u that stay in `comp` and in the pending subgraph
    (an edge fused through a state that is not pending leaves it)."""
    for v, label in ex.successors_of(u):
        if v in comp and label.pending >> bit & 1:
            yield v, label


def _walk(ex: Exploration, start: int, comp: set, bit: int, goal) -> list[tuple[int, object]]:
    """Shortest path inside the component to an edge matching goal(v, label): the (state id,
    Label) of each edge after `start`."""
    seen = {start: None}
    todo = deque([start])
    while todo:
        u = todo.popleft()
        for v, label in inside(ex, u, comp, bit):
            if goal(v, label):
                path = [(v, label)]
                while u != start:
                    path.append((u, seen[u][1]))
                    u = seen[u][0]
                return path[::-1]
            if v not in seen:
                seen[v] = (u, label)
                todo.append(v)
    raise AssertionError("component is not strongly connected")


# (state, obligations met) pairs the exact shortest-cycle search may visit; past it, a greedy
# cycle made minimal (see fair_cycle). A count, not a time: the same input, the same lasso.
CYCLE_SEARCH_BUDGET = 100_000


def fair_cycle(ex: Exploration, entry: int, comp: set, bit: int) -> tuple[list[int], list[int]]:
    """A shortest weakly fair cycle of the component, reached from `entry`: (lead, cycle), where
    `lead` is the path (state ids after `entry`) to the cycle's start and `cycle` the state ids
    after that start, ending back at it. Usually `lead` is empty and the cycle passes `entry`.

    Why this is shortest. Repeated forever, a cycle is weakly fair iff for every actor one of
    its edges fires the actor or passes a state where the actor is disabled (its target state,
    or a state fused inside the edge): an actor enabled all along must step. That depends only
    on the SET of edges used, so of a walk's past all that matters is which actors'
    obligations it has met. Breadth-first search over (state, obligations met), from
    (entry, none), therefore reaches (entry, all) first along a shortest fair cycle through
    `entry`. A pair whose obligations are a subset of those of a pair at the same state that
    was reached no later is dropped: whatever completes it completes the other as soon.
    A cycle found that way holds no shorter fair cycle through `entry` (BFS would have found
    that one first); it may still hold a fair cycle that bypasses `entry` (A S B, with S
    fair): then that one is reported, after the lead A, which is a shorter lasso with a
    shorter cycle (`_tighten`).

    Past CYCLE_SEARCH_BUDGET pairs (many actors, a large component) the cycle is built
    greedily, always to the nearest edge meeting an obligation still open, then back to
    `entry`, and tightened: a closed part whose removal keeps the cycle fair is removed,
    and a closed part that is fair on its own replaces the cycle. Either way the reported
    cycle never contains a shorter complete fair cycle.
    """
    sat = _obligations_met(ex, comp, bit)
    common = ~0
    for u in comp:
        for v, label in inside(ex, u, comp, bit):
            common &= sat(v, label)
    need = sat.all & ~common  # obligations some edge of the component does not meet by itself
    walk = _shortest_fair_walk(ex, entry, comp, bit, sat, need, CYCLE_SEARCH_BUDGET)
    if walk is None:
        walk = _greedy_fair_walk(ex, entry, comp, bit, sat, need)
    return _tighten(walk, need)


def _obligations_met(ex: Exploration, comp: set, bit: int):
    """sat(v, label): the actors whose fairness obligation an edge into v meets: it fires them,
    or they are disabled in v or inside the edge. `sat.all` is every actor."""
    every = (1 << len(ex.actors)) - 1
    enabled = ex.enabled

    def sat(v: int, label) -> int:
        return (label.fired | ~(enabled[v] & label.enabled)) & every

    sat.all = every
    return sat


def _shortest_fair_walk(ex, entry: int, comp: set, bit: int, sat, need: int, budget: int):
    """[(state id, obligations its edge meets)] of a shortest fair closed walk from `entry`
    (breadth-first over (state, obligations met), dominated pairs dropped), or None past
    `budget` pairs."""
    parent = {(entry, 0): None}
    kept = {entry: [0]}  # state -> obligation sets reached there, each no later than any newer one
    layer = [(entry, 0)]
    while layer:
        following = []
        for u, met in layer:
            for v, label in inside(ex, u, comp, bit):
                s = sat(v, label)
                now = (met | s) & need
                if v == entry and now == need:
                    walk, node = [(v, s)], (u, met)
                    while parent[node] is not None:
                        (state, _), (node, s_in) = node, parent[node]
                        walk.append((state, s_in))
                    return walk[::-1]
                if any(now & k == now for k in kept.get(v, ())):
                    continue  # dominated
                kept.setdefault(v, []).append(now)
                parent[(v, now)] = ((u, met), s)
                following.append((v, now))
                if len(parent) > budget:
                    return None
        layer = following
    raise AssertionError("the component has no fair cycle through its entry")


def _greedy_fair_walk(ex, entry: int, comp: set, bit: int, sat, need: int) -> list[tuple[int, int]]:
    """A fair closed walk from `entry`: to the nearest edge meeting an open obligation, again
    and again, then back to `entry`; [(state id, obligations its edge meets)]."""
    walk: list[tuple[int, int]] = []
    here, met = entry, 0
    while met != need:
        still_open = need & ~met
        hop = [(v, sat(v, label)) for v, label in _walk(ex, here, comp, bit, lambda v, label: sat(v, label) & still_open)]
        for _, s in hop:
            met |= s & need
        walk += hop
        here = hop[-1][0]
    if here != entry or not walk:
        walk += [(v, sat(v, label)) for v, label in _walk(ex, here, comp, bit, lambda v, label: v == entry)]
    return walk


def _tighten(walk: list[tuple[int, int]], need: int) -> tuple[list[int], list[int]]:
    """(lead, cycle) from a fair closed walk [(state, obligations met by the edge into it)]:
    remove closed parts the walk stays fair without, and move to a closed part that is fair
    on its own (the shortest, first found), until neither applies."""
    entry = walk[-1][0]
    lead: list[int] = []
    while True:
        states = [entry] + [v for v, _ in walk]
        masks = [s for _, s in walk]  # masks[k]: the edge from states[k] to states[k + 1]
        n = len(masks)
        before = [0] * (n + 1)  # before[i]: obligations of the edges before position i
        for k in range(n):
            before[k + 1] = before[k] | masks[k]
        after = [0] * (n + 1)  # after[j]: obligations of the edges from position j on
        for k in range(n - 1, -1, -1):
            after[k] = after[k + 1] | masks[k]
        best = None  # (length, i, j) of the shortest closed part that is fair by itself
        cut = None
        for i in range(n):
            part = 0  # obligations of the edges from position i to j
            for j in range(i + 1, n + 1):
                part |= masks[j - 1]
                if states[j] != states[i] or (i, j) == (0, n):
                    continue
                if (before[i] | after[j]) & need == need:
                    cut = (i, j)
                    break
                if part & need == need and (best is None or j - i < best[0]):
                    best = (j - i, i, j)
            if cut:
                break
        if cut:
            i, j = cut
            walk = walk[:i] + walk[j:]
        elif best:
            _, i, j = best
            lead += [v for v, _ in walk[:i]]
            entry = states[i]
            walk = walk[i:j]
        else:
            return lead, [v for v, _ in walk]
