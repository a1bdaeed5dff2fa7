"""Exhaustive breadth-first search with a visited set.

States get ids in the order BFS discovers them, so the frontier is simply the id
range not yet expanded, and the first violation found of a safety property lies at
minimal depth: its trace is a shortest counterexample. With `record_graph` the
search keeps every edge (successor id and label, see `Label`) for the progress analysis.

Chain fusion (`fuse=True`, with a reduced `expand`): a state whose reduced expansion is a
single step has exactly one way on in the reduced graph, so the search walks through it
without storing it. The stored graph is the reduced graph with such states contracted
into the edges that pass through them, and every contracted state still counts: its
safety properties are judged (a state or step that violates one stops the walk and is
stored, so findings keep their trace), its step is counted, and the edge's `Label` keeps
what the progress analysis needs of it (the actors that stepped, the actors enabled in
every state passed, whether every state passed was pending). Any cycle of the reduced
graph maps to a cycle of the stored graph with the same states, steps and enabledness.
"""

from __future__ import annotations

import gc
import time
from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Optional

from prefetch_check.explorer.interface import ALWAYS, ALWAYS_STEP, DEADLOCK_FREE, EVENTUALLY, Model
from prefetch_check.explorer.limits import Limits, peak_memory_mb

# how often (in expanded states) limits are checked and progress is reported
CHECK_EVERY = 2048

EVERY = -1  # a bitmask with every bit set (the identity of &)
_LABEL_BITS = 24  # an edge is succ_id << _LABEL_BITS | label index
_LABEL_MASK = (1 << _LABEL_BITS) - 1


class Label(NamedTuple):
    """What an edge of the stored graph passes through (one step, or a fused chain of steps).

    fired:    bitmask of the actors (their indices) that take a step on the edge
    enabled:  bitmask of the actors enabled in every state passed inside the edge (EVERY for one step)
    pending:  bit i set when every state passed inside the edge is pending for the i-th
              progress property (EVERY for one step)
    """

    fired: int
    enabled: int = EVERY
    pending: int = EVERY


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
    depth: array = field(default_factory=lambda: array("i"))  # id -> steps from an initial state
    findings: dict = field(default_factory=dict)  # property name -> Finding
    deadlocks: list = field(default_factory=list)  # ids without successors, in BFS order
    edges: Optional[list] = None  # id -> array of succ_id * LABEL_SLOTS + label index
    enabled: Optional[list] = None  # id -> bitmask of actors with an enabled action
    pending_bits: Optional[array] = None  # id -> bit i set when pending for the i-th progress property
    labels: list = field(default_factory=list)  # label index -> Label
    progress_bits: dict = field(default_factory=dict)  # progress property name -> its bit in Label.pending
    actors: dict = field(default_factory=dict)  # actor -> index
    transitions: int = 0
    expanded: int = 0
    fused: int = 0  # distinct states walked through without being stored (chain fusion)
    complete: bool = False
    stop_reason: Optional[str] = None
    seconds: float = 0.0
    action_counts: Counter = field(default_factory=Counter)
    peak_memory_mb: float = 0.0
    expand: Optional[Callable] = None  # the reduced expansion the search used (to re-walk fused edges)
    canonical: Optional[Callable] = None

    LABEL_SLOTS = 1 << _LABEL_BITS  # edge encoding: succ_id * LABEL_SLOTS + label index

    @property
    def max_depth(self) -> int:
        return max(self.depth) if self.depth else 0

    @property
    def visited(self) -> int:
        """Distinct states visited: stored plus fused through."""
        return len(self.states) + self.fused

    def successors_of(self, sid: int):
        """(successor id, Label) of every stored edge leaving `sid`."""
        slots, labels = self.LABEL_SLOTS, self.labels
        for code in self.edges[sid]:
            yield code // slots, labels[code % slots]

    def state_path(self, ids: list[int]) -> list:
        """The (canonical) states along a path of stored ids, fused states included, so that
        consecutive states are one model step apart."""
        if self.expand is None:
            return [self.states[i] for i in ids]
        canon = self.canonical or (lambda s: s)
        out = [self.states[ids[0]]]
        for u, v in zip(ids, ids[1:]):
            out += self._walk_to(canon, self.states[u], self.states[v])
        return out

    def _walk_to(self, canon, start, target) -> list:
        """The states after `start` up to `target` along one fused edge of the stored graph."""
        for _, nxt in self.expand(start)[0]:
            walked = [canon(nxt)]
            while walked[-1] != target and len(walked) <= len(self.states) + self.fused:
                chosen = self.expand(walked[-1])[0]
                if len(chosen) != 1:
                    break
                walked.append(canon(chosen[0][1]))
            if walked[-1] == target:
                return walked
        raise AssertionError("search graph and model disagree: no fused edge reaches the next state")


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
    stop_when_found: bool = False,
    expand: Optional[Callable] = None,
    fuse: bool = False,
) -> Exploration:
    """Breadth-first search.

    `canonical` maps a state to its orbit's representative (symmetry reduction).
    `stop_when_found` ends the search once every safety property has a finding.
    `expand(state) -> (chosen successors, the enabled actions or a bitmask of their actors)`
    replaces `model.successors` with a reduced expansion (partial-order reduction); the
    enabled actors, not only the chosen ones, decide fairness. `fuse` then walks through
    states with a single chosen step (see the module docstring).
    """
    if fuse and expand is None:
        raise ValueError("chain fusion needs a reduced expansion (expand=...)")
    props = [p for p in model.properties() if p.not_applicable is None]
    state_props = [p for p in props if p.kind == ALWAYS]
    step_props = [p for p in props if p.kind == ALWAYS_STEP]
    progress_props = [p for p in props if p.kind == EVENTUALLY]
    ex = Exploration(model=model, expand=expand if fuse else None, canonical=canonical)
    ex.progress_bits = {p.name: i for i, p in enumerate(progress_props)}
    if record_graph:
        ex.edges, ex.enabled = [], []
        if progress_props:
            ex.pending_bits = array("q")
    pending_bits = ex.pending_bits
    index: dict = {}
    through: dict = {}  # fused state -> end id << _LABEL_BITS | label index of the rest of its chain
    stash: dict = {}  # id -> its expansion, computed when a walk stopped there
    states, parent, depth, findings = ex.states, ex.parent, ex.depth, ex.findings
    successors, actor_of = model.successors, model.actor
    actors, labels = ex.actors, ex.labels
    label_index: dict = {}
    slots = Exploration.LABEL_SLOTS
    counts: dict = {}
    step_judges: dict = {}  # action -> the step properties that judge it
    one_step: dict = {}  # action -> (label index of an edge that is that step alone, actor bit)
    actor_bit: dict = {}  # action -> 1 << index of its actor (actions are few, states many)
    canon = canonical or (lambda s: s)

    # properties without a finding yet (a property is judged until its first, shortest, finding)
    live_state = list(state_props)
    live_step = list(step_props)
    wants_deadlock = any(p.kind == DEADLOCK_FREE for p in props)

    model_actors = getattr(model, "actors", None)
    for actor in model_actors() if model_actors is not None else ():
        actors[actor] = len(actors)

    def bit_of(action) -> int:
        bit = actor_bit.get(action)
        if bit is None:
            actor = actor_of(action)
            a = actors.get(actor)
            if a is None:
                a = actors[actor] = len(actors)
            bit = actor_bit[action] = 1 << a
        return bit

    def mask_of(enabled) -> int:
        """The actors of `enabled` (a list of actions, or already a bitmask) as a bitmask."""
        if enabled.__class__ is int:
            return enabled
        mask = 0
        for action in enabled:
            bit = actor_bit.get(action)
            mask |= bit if bit is not None else bit_of(action)
        return mask

    def label_id(label: tuple) -> int:
        i = label_index.get(label)
        if i is None:
            i = label_index[label] = len(labels)
            labels.append(Label(*label))
            assert i < slots, "too many distinct edge labels for the edge encoding"
        return i

    key_of = getattr(model, "property_key", None)
    verdicts: dict = {}  # property_key -> verdict (when the model has one)
    wants_bits = record_graph and bool(progress_props)

    def verdict(state) -> tuple:
        """(((property, reason) of each failing state property), bit i set when pending for the
        i-th progress property); judged once per property_key when the model has one."""
        if key_of is not None:
            key = key_of(state)
            known = verdicts.get(key)
            if known is not None:
                return known
        bad = []
        for p in state_props if key_of is not None else live_state:
            reason = p.check(state)
            if reason:
                bad.append((p, reason))
        bits = 0
        if wants_bits:
            for i, p in enumerate(progress_props):
                if p.check(state):
                    bits |= 1 << i
        known = (tuple(bad), bits)
        if key_of is not None:
            verdicts[key] = known
        return known

    def record(sid: int, bad: tuple) -> None:
        """Findings for the live properties among the failing ones of state sid."""
        for p, reason in bad:
            if p in live_state:
                findings[p.name] = Finding(sid, reason)
                live_state.remove(p)

    def judges(action) -> list:
        judged = step_judges.get(action)
        if judged is None:
            judged = step_judges[action] = [p for p in step_props if p.concerns is None or p.concerns(action)]
        return judged

    def single_step(action) -> tuple:
        """(label index, actor bit) of an edge that is this step alone."""
        bit = bit_of(action)
        known = one_step[action] = (label_id((bit, EVERY, EVERY)), bit)
        return known

    def violates_step(state, action, nxt) -> bool:
        """Whether a live step property fails on this step."""
        judged = step_judges.get(action)
        for p in judged if judged is not None else judges(action):
            if p in live_step and p.check(state, action, nxt):
                return True
        return False

    def store(key, from_sid: int, d: int) -> int:
        """A new stored state, or -1 when the state limit forbids it."""
        if max_states is not None and len(states) + ex.fused >= max_states:  # visited, fused included
            ex.stop_reason = f"state limit of {max_states} reached"
            return -1
        tid = len(states)
        index[key] = tid
        states.append(key)
        parent.append(from_sid)
        depth.append(d)
        if live_state or wants_bits:
            bad, bits = verdict(key)
            if bad:
                record(tid, bad)
            if wants_bits:
                pending_bits.append(bits)
        return tid

    def walk(key, from_sid: int, d: int) -> tuple[int, tuple]:
        """Follow single-step expansions from `key` (depth d, not yet seen) to a state that is
        stored; returns (its id or -1 at the state limit, the Label tuple of the states passed)."""
        chain = []  # (state, actor bit of its step, enabled mask, pending bits)
        on_chain = {}
        cur = key
        end = None
        rest = (0, EVERY, EVERY)  # label of what lies beyond the chain (a memoised chain's rest)
        while True:
            expansion = None  # of `cur`, kept for its expansion if the walk stores it
            if max_depth is not None and d + len(chain) >= max_depth:
                break
            bad, pbits = verdicts.get(key_of(cur)) or verdict(cur) if key_of is not None else verdict(cur)
            if bad and any(p in live_state for p, _ in bad):
                break
            expansion = expand(cur)
            chosen, enabled_actions = expansion
            if len(chosen) != 1:
                break
            action, nxt = chosen[0]
            if live_step and violates_step(cur, action, nxt):
                break
            on_chain[cur] = len(chain)
            if record_graph:
                chain.append((
                    cur, action, actor_bit.get(action) or bit_of(action),
                    enabled_actions if enabled_actions.__class__ is int else mask_of(enabled_actions), pbits,
                ))
            else:
                chain.append((cur, action, 0, EVERY, EVERY))
            nkey = canon(nxt)
            end = index.get(nkey)
            if end is not None:
                break
            memo = through.get(nkey)
            if memo is not None:
                end, rest = memo >> _LABEL_BITS, labels[memo & _LABEL_MASK]
                break
            if nkey in on_chain:  # a cycle of single steps: store the state that closes it
                del chain[on_chain[nkey]:]
                end = store(nkey, from_sid, d + len(chain))
                break
            cur = nkey
        if end is None:  # the walk stopped at `cur`: store it, with its expansion if computed
            end = store(cur, from_sid, d + len(chain))
            if end >= 0 and expansion is not None:
                stash[end] = expansion
        fired, enabled, pending = rest
        for state, action, bit, mask, pbits in reversed(chain):
            fired, enabled, pending = fired | bit, enabled & mask, pending & pbits
            if end >= 0:
                through[state] = end << _LABEL_BITS | label_id((fired, enabled, pending))
            counts[action] = counts.get(action, 0) + 1
        # each fused state's one step counts once, here (a state cut off a cycle above is walked again)
        ex.transitions += len(chain)
        ex.fused += len(chain)
        return end, (fired, enabled, pending)

    for init in model.initial_states():
        key = canon(init)
        if key not in index:
            index[key] = len(states)
            states.append(key)
            parent.append(-1)
            depth.append(0)
            bad, bits = verdict(key)
            record(index[key], bad)
            if wants_bits:
                pending_bits.append(bits)

    start = time.perf_counter()
    max_states = limits.max_states
    max_depth = limits.max_depth
    head = 0
    truncated_depth = False
    try:  # out of memory ends the search like a limit: BOUNDED with the figures reached
        while head < len(states):
            if head % CHECK_EVERY == 0 and head:
                elapsed = time.perf_counter() - start
                if on_progress is not None:
                    on_progress(
                        {"states": len(states) + ex.fused, "expanded": head, "transitions": ex.transitions,
                         "frontier": len(states) - head, "depth": depth[head], "seconds": elapsed}
                    )
                if limits.time_limit is not None and elapsed > limits.time_limit:
                    ex.stop_reason = f"time limit of {limits.time_limit}s reached"
                    break
                if limits.max_memory_mb is not None and peak_memory_mb() > limits.max_memory_mb:
                    ex.stop_reason = f"memory limit of {limits.max_memory_mb} MB reached (peak {peak_memory_mb():.0f} MB)"
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
                expansion = stash.pop(sid, None)
                succ, enabled_actions = expansion if expansion is not None else expand(state)
                if not enabled_actions:
                    ex.deadlocks.append(sid)
                if record_graph:
                    mask = enabled_actions if enabled_actions.__class__ is int else mask_of(enabled_actions)
            else:
                succ = successors(state)
                if not succ:
                    ex.deadlocks.append(sid)
                mask = 0  # every successor is explored: the actors of the steps below are the enabled ones
            if record_graph:
                out = array("q")
            ex.transitions += len(succ)
            for action, nxt in succ:
                counts[action] = counts.get(action, 0) + 1
                if live_step:
                    judged = step_judges.get(action)
                    for p in judged if judged is not None else judges(action):
                        if p in live_step:
                            reason = p.check(state, action, nxt)
                            if reason:
                                findings[p.name] = Finding(sid, reason, action, nxt)
                                live_step.remove(p)
                key = nxt if canonical is None else canonical(nxt)
                tid = index.get(key)
                inside = None
                if tid is None:
                    if not fuse:
                        tid = store(key, sid, d + 1)
                    else:
                        memo = through.get(key)
                        if memo is not None:
                            tid, inside = memo >> _LABEL_BITS, labels[memo & _LABEL_MASK]
                        else:
                            tid, inside = walk(key, sid, d + 1)
                    if tid < 0:
                        break  # state limit reached
                if record_graph:
                    if inside is None:
                        label, bit = one_step.get(action) or single_step(action)
                    else:
                        bit = actor_bit.get(action) or bit_of(action)
                        label = label_id((bit | inside[0], inside[1], inside[2]))
                    if expand is None:
                        mask |= bit
                    elif not bit & mask:
                        raise AssertionError(f"expand() chose {action!r} but did not report its actor enabled")
                    out.append(tid * slots + label)
            else:
                if record_graph:
                    ex.edges.append(out)
                    ex.enabled.append(mask)
                continue
            break  # state limit reached inside the successor loop
    except MemoryError:
        # free what only the search needs, and cut the lists back to the states stored whole
        for cache in (index, through, stash, verdicts):
            cache.clear()
        whole = min(len(states), len(parent), len(depth))
        del states[whole:], parent[whole:], depth[whole:]
        if pending_bits is not None:
            del pending_bits[whole:]
        ex.stop_reason = f"memory ran out (MemoryError) after {len(states) + ex.fused} states"
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
            {"states": len(states) + ex.fused, "expanded": head, "transitions": ex.transitions,
             "frontier": len(states) - head, "depth": ex.max_depth, "seconds": ex.seconds, "done": True}
        )
    return ex
