"""Progress under weak fairness, judged on the explored state graph.

A behaviour violates "eventually not pending" iff it ends in a cycle of pending
states that is weakly fair: every actor that is enabled in every state of the cycle
takes a step in it. Such a cycle exists iff some strongly connected component of the
pending subgraph is fair in that sense (a cycle may visit a whole component, and no
smaller cycle can be fairer). A pending state without successors (a deadlock) also
violates progress: the pending work is never done.

The answer is a lasso: a shortest prefix to the component and a cycle that visits
a step of every always-enabled actor and a state where each other actor is disabled.
"""

from __future__ import annotations

import time
from collections import deque
from dataclasses import dataclass
from typing import Optional

import networkx as nx

from explorer.bfs import Exploration


@dataclass
class Lasso:
    prefix: list[int]  # state ids from an initial state to the cycle entry (inclusive)
    cycle: list[int]  # state ids after the entry, ending back at the entry ([] for a deadlock)
    reason: str


def _path_from_root(ex: Exploration, sid: int) -> list[int]:
    path = [sid]
    while ex.parent[path[-1]] >= 0:
        path.append(ex.parent[path[-1]])
    return path[::-1]


def _succ(ex: Exploration, sid: int):
    slots = Exploration.ACTOR_SLOTS
    for code in ex.edges[sid]:
        yield code // slots, code % slots


def _walk(ex: Exploration, start: int, inside: set, goal) -> list[int]:
    """Shortest path (state ids after `start`) inside the component to a state/edge matching goal."""
    seen = {start: None}
    todo = deque([start])
    while todo:
        u = todo.popleft()
        for v, a in _succ(ex, u):
            if v not in inside:
                continue
            if goal(u, v, a):
                path = [v]
                while u != start:
                    path.append(u)
                    u = seen[u]
                return path[::-1]
            if v not in seen:
                seen[v] = u
                todo.append(v)
    raise AssertionError("component is not strongly connected")


class AnalysisTimeout(Exception):
    """The progress analysis passed its deadline: progress is then BOUNDED, not decided."""


def _ticker(deadline: Optional[float], every: int = 4096):
    """A callable that raises AnalysisTimeout once `deadline` (perf_counter) has passed."""
    count = 0

    def tick():
        nonlocal count
        count += 1
        if deadline is not None and count % every == 0 and time.perf_counter() > deadline:
            raise AnalysisTimeout()

    return tick


def find_progress_violation(ex: Exploration, pending, deadline: Optional[float] = None) -> Optional[Lasso]:
    """The shortest-prefix fair lasso (or deadlock) that stays pending, or None.

    Raises AnalysisTimeout when `deadline` (a time.perf_counter value) passes.
    """
    assert ex.edges is not None, "progress needs the explored graph (record_graph=True)"
    tick = _ticker(deadline)
    is_pending = bytearray(len(ex.states))  # one byte a state: the reasons are built only when reported
    for sid, state in enumerate(ex.states):
        tick()
        if pending(state):
            is_pending[sid] = 1
    candidates: list[Lasso] = []
    stuck = [sid for sid in ex.deadlocks if is_pending[sid]]
    if stuck:
        sid = min(stuck, key=lambda s: (ex.depth[s], s))
        why = pending(ex.states[sid])
        candidates.append(Lasso(_path_from_root(ex, sid), [], f"deadlock with work left: {why}"))

    def pending_edges():
        for u in range(len(ex.states)):
            if is_pending[u]:
                tick()
                for v, _ in _succ(ex, u):
                    if is_pending[v]:
                        yield u, v

    graph = nx.DiGraph()
    graph.add_nodes_from(u for u in range(len(ex.states)) if is_pending[u])
    graph.add_edges_from(pending_edges())
    best = None
    for comp in nx.strongly_connected_components(graph):
        tick()
        if len(comp) == 1:
            (u,) = comp
            if not graph.has_edge(u, u):
                continue
        always_enabled = ~0
        fired = 0
        for u in comp:
            always_enabled &= ex.enabled[u]
            for v, a in _succ(ex, u):
                if v in comp:
                    fired |= 1 << a
        if always_enabled & ~fired:
            continue  # some actor is enabled throughout yet never steps: unfair
        entry = min(comp, key=lambda s: (ex.depth[s], s))
        if best is None or (ex.depth[entry], entry) < (ex.depth[best[0]], best[0]):
            best = (entry, comp, always_enabled)
    if best is not None:
        entry, comp, always_enabled = best
        candidates.append(
            Lasso(_path_from_root(ex, entry), _fair_cycle(ex, entry, comp, always_enabled), pending(ex.states[entry]))
        )
    if not candidates:
        return None
    return min(candidates, key=lambda l: len(l.prefix) + len(l.cycle))


def _fair_cycle(ex: Exploration, entry: int, comp: set, always_enabled: int) -> list[int]:
    """A cycle through `entry` with a step of each always-enabled actor and a disabling state of each other."""
    cycle: list[int] = []
    here = entry
    n_actors = len(ex.actors)
    for a in range(n_actors):
        if always_enabled >> a & 1:
            if any(v in comp and b == a for v, b in _succ(ex, here)):
                target = next(v for v, b in _succ(ex, here) if v in comp and b == a)
                cycle.append(target)
                here = target
            else:
                hop = _walk(ex, here, comp, lambda u, v, b, a=a: b == a)
                cycle += hop
                here = hop[-1]
        elif any(ex.enabled[u] >> a & 1 == 0 for u in comp) and ex.enabled[here] >> a & 1:
            hop = _walk(ex, here, comp, lambda u, v, b, a=a: ex.enabled[v] >> a & 1 == 0)
            cycle += hop
            here = hop[-1]
    if here != entry or not cycle:
        cycle += _walk(ex, here, comp, lambda u, v, b: v == entry)
    return cycle
