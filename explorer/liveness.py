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

from array import array

from prefetch_check.explorer.bfs import Exploration


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


def _inside(ex: Exploration, u: int, comp, bit: int):
    """(v, Label) of the edges from u that stay in `comp` and in the pending subgraph
    (an edge fused through a state that is not pending leaves it)."""
    for v, label in ex.successors_of(u):
        if v in comp and label.pending >> bit & 1:
            yield v, label


def _walk(ex: Exploration, start: int, inside: set, bit: int, goal) -> list[int]:
    """Shortest path (state ids after `start`) inside the component to an edge matching goal(v, label)."""
    seen = {start: None}
    todo = deque([start])
    while todo:
        u = todo.popleft()
        for v, label in _inside(ex, u, inside, bit):
            if goal(v, label):
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


def find_progress_violation(
    ex: Exploration, pending, deadline: Optional[float] = None, bit: int = 0
) -> Optional[Lasso]:
    """The shortest-prefix fair lasso (or deadlock) that stays pending, or None.

    `bit` is the property's bit in the edges' `Label.pending` (its index among the
    progress properties, `ex.progress_bits`). Raises AnalysisTimeout when `deadline`
    (a time.perf_counter value) passes.
    """
    assert ex.edges is not None, "progress needs the explored graph (record_graph=True)"
    tick = _ticker(deadline)
    n = len(ex.states)
    if ex.pending_bits is not None:  # judged during the search
        is_pending = bytearray(bits >> bit & 1 for bits in ex.pending_bits)
    else:
        is_pending = bytearray(n)  # one byte a state: the reasons are built only when reported
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

    shift, mask = ex.LABEL_SLOTS.bit_length() - 1, ex.LABEL_SLOTS - 1
    stays = bytearray(label.pending >> bit & 1 for label in ex.labels)  # label index -> edge stays pending
    edges = ex.edges

    def pending_successors(u: int) -> list:
        return [code >> shift for code in edges[u] if stays[code & mask] and is_pending[code >> shift]]

    best = None
    for comp in _components(n, is_pending, pending_successors, tick):
        if len(comp) == 1:
            (u,) = comp
            if u not in pending_successors(u):
                continue
        comp = set(comp)
        always_enabled = ~0
        fired = 0
        for u in comp:
            always_enabled &= ex.enabled[u]
            for _, label in _inside(ex, u, comp, bit):
                fired |= label.fired
                always_enabled &= label.enabled
        if always_enabled & ~fired:
            continue  # some actor is enabled throughout yet never steps: unfair
        entry = min(comp, key=lambda s: (ex.depth[s], s))
        if best is None or (ex.depth[entry], entry) < (ex.depth[best[0]], best[0]):
            best = (entry, comp, always_enabled)
    if best is not None:
        entry, comp, always_enabled = best
        candidates.append(
            Lasso(_path_from_root(ex, entry), _fair_cycle(ex, entry, comp, always_enabled, bit), pending(ex.states[entry]))
        )
    if not candidates:
        return None
    return min(candidates, key=lambda l: len(l.prefix) + len(l.cycle))


def _fair_cycle(ex: Exploration, entry: int, comp: set, always_enabled: int, bit: int) -> list[int]:
    """A cycle through `entry` with a step of each always-enabled actor and a disabling state of each
    other (a state of the component, or one passed inside an edge of it)."""
    cycle: list[int] = []
    here = entry
    n_actors = len(ex.actors)
    for a in range(n_actors):
        if always_enabled >> a & 1:
            hop = _walk(ex, here, comp, bit, lambda v, label, a=a: label.fired >> a & 1)
        elif ex.enabled[here] >> a & 1:
            hop = _walk(
                ex, here, comp, bit,
                lambda v, label, a=a: not (ex.enabled[v] >> a & 1 and label.enabled >> a & 1),
            )
        else:
            continue
        cycle += hop
        here = hop[-1]
    if here != entry or not cycle:
        cycle += _walk(ex, here, comp, bit, lambda v, label: v == entry)
    return cycle


def _components(n: int, member: bytearray, successors, tick):
    """The strongly connected components (lists of ids) of the subgraph of the ids with
    `member[id]`, whose edges `successors(id)` lists: Tarjan's algorithm, iterative, over
    flat arrays (a few bytes a state: the graph has millions of states)."""
    index = array("i", [-1]) * n
    low = array("i", [0]) * n
    on_stack = bytearray(n)
    stack: list[int] = []
    counter = 0
    for root in range(n):
        if not member[root] or index[root] >= 0:
            continue
        tick()
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack[root] = 1
        work = [(root, iter(successors(root)))]
        while work:
            u, todo = work[-1]
            for v in todo:
                if index[v] < 0:
                    tick()
                    index[v] = low[v] = counter
                    counter += 1
                    stack.append(v)
                    on_stack[v] = 1
                    work.append((v, iter(successors(v))))
                    break
                if on_stack[v] and index[v] < low[u]:
                    low[u] = index[v]
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    if low[u] < low[parent]:
                        low[parent] = low[u]
                if low[u] == index[u]:
                    comp = []
                    while True:
                        v = stack.pop()
                        on_stack[v] = 0
                        comp.append(v)
                        if v == u:
                            break
                    yield comp

