"""Exhaustive breadth-first search with a visited set.

States get ids in the order BFS discovers them, so the frontier is simply the id
range not yet expanded, and the first violation found of a safety property lies at
minimal depth: its trace is a shortest counterexample. With `record_graph` the
search keeps every edge (successor id and actor) for the progress analysis.
"""

from __future__ import annotations

import gc
import time
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Optional

from explorer.interface import ALWAYS, ALWAYS_STEP, DEADLOCK_FREE, Model
from explorer.limits import Limits, peak_memory_mb

# how often (in expanded states) limits are checked and progress is reported
CHECK_EVERY = 2048


@dataclass
class Finding:
    """Where a safety property first failed: a state, or an edge from `state_id` by `action`."""

    state_id: int
    reason: str
    action: object = None  # for a step invariant: the action leaving state_id
    next_state: object = None


@dataclass
class Exploration:
    model: Model
    states: list = field(default_factory=list)  # id -> (canonical) state
    parent: list = field(default_factory=list)  # id -> parent id (-1 for initial states)
    depth: array = field(default_factory=lambda: array("i"))
    findings: dict = field(default_factory=dict)  # property name -> Finding
    deadlocks: list = field(default_factory=list)  # ids without successors, in BFS order
    edges: Optional[list] = None  # id -> array of succ_id * n_actor_slots + actor index
    enabled: Optional[list] = None  # id -> bitmask of actors with an enabled action
    actors: dict = field(default_factory=dict)  # actor -> index
    transitions: int = 0
    expanded: int = 0
    complete: bool = False
    stop_reason: Optional[str] = None
    seconds: float = 0.0
    action_counts: Counter = field(default_factory=Counter)
    peak_memory_mb: float = 0.0

    ACTOR_SLOTS = 64  # edge encoding: actor index < 64

    @property
    def max_depth(self) -> int:
        return max(self.depth) if self.depth else 0


ProgressCallback = Callable[[dict], None]


def explore(model: Model, *args, **kwargs) -> Exploration:
    """Visit every reachable state (up to the limits), judging the safety properties; see `_explore`.

    The search allocates millions of acyclic tuples: the cycle collector would scan them
    again and again and find nothing, so it is off during the search, on again after.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _explore(model, *args, **kwargs)
    finally:
        if collecting:
            gc.enable()


def _explore(
    model: Model,
    limits: Limits = Limits(),
    record_graph: bool = False,
    canonical: Optional[Callable] = None,
    on_progress: Optional[ProgressCallback] = None,
    persistent: Optional[Callable] = None,
    stop_when_found: bool = False,
    expand: Optional[Callable] = None,
) -> Exploration:
    """Breadth-first search.

    `canonical` maps a state to its orbit's representative (symmetry reduction);
    `persistent(state, successors)` picks the successors to explore (partial-order
    reduction). Enabledness for fairness is always taken from all successors.
    `stop_when_found` ends the search once every safety property has a finding.
    `expand(state) -> (chosen successors, actors with an enabled step)` replaces
    successors + persistent for a model that can choose without building every successor.
    """
    props = [p for p in model.properties() if p.not_applicable is None]
    state_props = [p for p in props if p.kind == ALWAYS]
    step_props = [p for p in props if p.kind == ALWAYS_STEP]
    ex = Exploration(model=model)
    if record_graph:
        ex.edges, ex.enabled = [], []
    index: dict = {}
    states, parent, depth, findings = ex.states, ex.parent, ex.depth, ex.findings
    successors, actor_of = model.successors, model.actor
    actors = ex.actors
    slots = Exploration.ACTOR_SLOTS
    counts: dict = {}
    step_judges: dict = {}  # action -> the step properties that judge it
    actor_index: dict = {}  # action -> index of its actor (actions are few, states many)
    canon = canonical or (lambda s: s)

    # properties without a finding yet (a property is judged until its first, shortest, finding)
    live_state = list(state_props)
    live_step = list(step_props)
    wants_deadlock = any(p.kind == DEADLOCK_FREE for p in props)

    def judge_state(sid: int, state) -> None:
        for p in live_state:
            reason = p.check(state)
            if reason:
                findings[p.name] = Finding(sid, reason)
                live_state.remove(p)

    for init in model.initial_states():
        key = canon(init)
        if key not in index:
            index[key] = len(states)
            states.append(key)
            parent.append(-1)
            depth.append(0)
            judge_state(index[key], key)

    start = time.perf_counter()
    max_states = limits.max_states
    max_depth = limits.max_depth
    head = 0
    truncated_depth = False
    while head < len(states):
        if head % CHECK_EVERY == 0 and head:
            elapsed = time.perf_counter() - start
            if on_progress is not None:
                on_progress(
                    {"states": len(states), "expanded": head, "transitions": ex.transitions,
                     "frontier": len(states) - head, "depth": depth[head], "seconds": elapsed}
                )
            if limits.time_limit is not None and elapsed > limits.time_limit:
                ex.stop_reason = f"time limit of {limits.time_limit}s reached"
                break
            if limits.max_memory_mb is not None and peak_memory_mb() > limits.max_memory_mb:
                ex.stop_reason = f"memory limit of {limits.max_memory_mb} MB reached"
                break
        if stop_when_found and not live_state and not live_step and (ex.deadlocks or not wants_deadlock):
            ex.stop_reason = "every property has a counterexample"
            break
        sid = head
        head += 1
        state = states[sid]
        d = depth[sid]
        if max_depth is not None and d >= max_depth:
            truncated_depth = True
            if record_graph:
                ex.edges.append(array("q"))
                ex.enabled.append(0)
            continue
        if expand is not None:
            succ, enabled_actions = expand(state)
        else:
            succ = successors(state)
            enabled_actions = [action for action, _ in succ]
        if not enabled_actions:
            ex.deadlocks.append(sid)
        if record_graph:
            out = array("q")
            mask = 0
            for action in enabled_actions:
                a = actor_index.get(action)
                if a is None:
                    actor = actor_of(action)
                    a = actors.get(actor)
                    if a is None:
                        a = actors[actor] = len(actors)
                    actor_index[action] = a
                mask |= 1 << a
        if persistent is not None:
            succ = persistent(state, succ)
        ex.transitions += len(succ)
        for action, nxt in succ:
            counts[action] = counts.get(action, 0) + 1
            if live_step:
                judged = step_judges.get(action)
                if judged is None:
                    judged = step_judges[action] = [p for p in step_props if p.concerns is None or p.concerns(action)]
                for p in judged:
                    if p in live_step:
                        reason = p.check(state, action, nxt)
                        if reason:
                            findings[p.name] = Finding(sid, reason, action, nxt)
                            live_step.remove(p)
            key = nxt if canonical is None else canonical(nxt)
            tid = index.get(key)
            if tid is None:
                if max_states is not None and len(states) >= max_states:
                    ex.stop_reason = f"state limit of {max_states} reached"
                    break
                tid = len(states)
                index[key] = tid
                states.append(key)
                parent.append(sid)
                depth.append(d + 1)
                if live_state:
                    judge_state(tid, key)
            if record_graph:
                a = actor_index.get(action)
                if a is None:  # an enabled action the expansion did not list (it should have)
                    raise AssertionError(f"expand() chose {action!r} but did not report it enabled")
                out.append(tid * slots + a)
        else:
            if record_graph:
                ex.edges.append(out)
                ex.enabled.append(mask)
            continue
        break  # state limit reached inside the successor loop
    ex.expanded = head
    ex.seconds = time.perf_counter() - start
    if ex.stop_reason is None and truncated_depth:
        ex.stop_reason = f"depth limit of {max_depth} reached"
    ex.complete = ex.stop_reason is None
    kinds: Counter = Counter()
    for action, n in counts.items():
        kinds[model.action_kind(action)] += n
    ex.action_counts = kinds
    ex.peak_memory_mb = peak_memory_mb()
    if on_progress is not None:
        on_progress(
            {"states": len(states), "expanded": head, "transitions": ex.transitions,
             "frontier": len(states) - head, "depth": ex.max_depth, "seconds": ex.seconds, "done": True}
        )
    return ex
