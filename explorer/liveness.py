"""Progress under weak fairness, judged on the explored state graph.

A behaviour violates "eventually not pending" iff it ends in a cycle of pending
states that is weakly fair: every actor that is enabled in every state of the cycle
takes a step in it. Such a cycle exists iff some strongly connected component of the
pending subgraph is fair in that sense (a cycle may visit a whole component, and no
smaller cycle can be fairer). A pending state without successors (a deadlock) also
violates progress: the pending work is never done.

The answer is a lasso: a shortest prefix to the component and a shortest fair cycle
through its entry, where every actor steps or is disabled somewhere (see `fair_cycle.py`:
never two rounds where one returns to its start, and never a cycle that holds a
shorter fair one).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable, Optional

from array import array

from prefetch_check.explorer.bfs import Exploration
from prefetch_check.explorer.fair_cycle import fair_cycle, inside as _inside


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


class AnalysisTimeout(Exception):
    """The progress analysis passed its deadline: progress is then BOUNDED, not decided."""


def _ticker(deadline: Optional[float], beat: Optional[Callable] = None, every: int = 4096):
    """A callable counting units of work: every `every` of them it calls `beat` (to report
    progress) and raises AnalysisTimeout once `deadline` (perf_counter) has passed."""
    count = 0

    def tick():
        nonlocal count
        count += 1
        if count % every == 0:
            if beat is not None:
                beat()
            if deadline is not None and time.perf_counter() > deadline:
                raise AnalysisTimeout()

    return tick


def find_progress_violation(
    ex: Exploration, pending, deadline: Optional[float] = None, bit: int = 0, beat: Optional[Callable] = None
) -> Optional[Lasso]:
    """The shortest-prefix fair lasso (or deadlock) that stays pending, or None.

    `bit` is the property's bit in the edges' `Label.pending` (its index among the
    progress properties, `ex.progress_bits`). Raises AnalysisTimeout when `deadline`
    (a time.perf_counter value) passes; `beat()` is called now and then while it works.
    """
    assert ex.edges is not None, "progress needs the explored graph (a GraphRecorder)"
    tick = _ticker(deadline, beat)
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
            best = (entry, comp)
    if best is not None:
        entry, comp = best
        lead, cycle = fair_cycle(ex, entry, comp, bit)
        start = lead[-1] if lead else entry
        candidates.append(Lasso(_path_from_root(ex, entry) + lead, cycle, pending(ex.states[start])))
    if not candidates:
        return None
    return min(candidates, key=lambda l: len(l.prefix) + len(l.cycle))


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

