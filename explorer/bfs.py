"""Exhaustive breadth-first search with a visited set.

States get ids in the order BFS discovers them, so the frontier is simply the id range
not yet expanded, and the first violation found of a safety property lies at minimal
depth: its trace is a shortest counterexample. A `GraphRecorder` observing the search
keeps every edge for the progress analysis (`graph.py`); the safety properties are judged
as states are stored (`judge.py`).

Chain fusion (`SearchOptions.fuse`, with a reduced `expand`): a state whose reduced
expansion is a single step has exactly one way on in the reduced graph, so the search
walks through it without storing it (`_walk`). The stored graph is the reduced graph with
such states contracted into the edges that pass through them, and every contracted state
still counts: its safety properties are judged (a state or step that violates one stops
the walk and is stored, so findings keep their trace), its step is counted, and the edge's
`Label` keeps what the progress analysis needs of it (the actors that stepped, the actors
enabled in every state passed, whether every state passed was pending). Any cycle of the
reduced graph maps to a cycle of the stored graph with the same states, steps and
enabledness.
"""

from __future__ import annotations

import gc
import time
from array import array
from collections import Counter
from typing import Optional

from prefetch_check.explorer.exploration import CHECK_EVERY, Exploration
from prefetch_check.explorer.graph import EVERY, LABEL_BITS, LABEL_MASK, LABEL_SLOTS, GraphRecorder, Label, Labels
from prefetch_check.explorer.interface import Model, hooks
from prefetch_check.explorer.judge import Finding, Judge
from prefetch_check.explorer.limits import peak_memory_mb
from prefetch_check.explorer.options import SearchOptions
from prefetch_check.explorer.parallel import MAX_WORKERS, can_run_parallel, explore_parallel

__all__ = ["CHECK_EVERY", "Exploration", "Finding", "Label", "explore"]


def explore(model: Model, options: SearchOptions = SearchOptions(), graph: Optional[GraphRecorder] = None) -> Exploration:
    """Visit every reachable state (up to the limits), judging the safety properties; `graph`
    (when given) records the state graph for the progress analysis.

    With `options.workers` > 1 (and a model that can cross processes) the search runs on that
    many processes (`parallel.py`, at most MAX_WORKERS); `stop_when_found` searches always run here.

    The search allocates millions of acyclic tuples: the cycle collector would scan them
    again and again and find nothing, so it is off during the search, on again after.
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        if options.workers > 1 and not options.stop_when_found:
            if can_run_parallel(model):
                return explore_parallel(model, options, graph, min(options.workers, MAX_WORKERS))
        return _Search(model, options, graph).run()
    finally:
        if collecting:
            gc.enable()


class _Search:
    """One breadth-first search: the stored states and their bookkeeping, the main loop
    (`run`), storing a state (`_store`) and walking a fused chain (`_walk`)."""

    def __init__(self, model: Model, options: SearchOptions, graph: Optional[GraphRecorder]):
        self.model, self.options, self.graph = model, options, graph
        self.ex = ex = Exploration(model=model, expand=options.expand if options.fuse else None, canonical=options.canonical)
        ex.graph = graph
        self.judge = Judge(model, ex.findings, wants_bits=graph is not None)
        ex.progress_bits = self.judge.progress_bits
        self.labels = Labels()
        ex.labels = self.labels.labels
        self.index: dict = {}  # (canonical) state -> id
        self.through: dict = {}  # fused state -> end id << LABEL_BITS | label index of the rest of its chain
        self.stash: dict = {}  # id -> its expansion, computed when a walk stopped there
        self.counts: dict = {}  # action -> steps taken
        self.actor_bit: dict = {}  # action -> 1 << index of its actor (actions are few, states many)
        self.one_step: dict = {}  # action -> (label index of an edge that is that step alone, actor bit)
        self.canon = options.canonical or (lambda s: s)
        self.max_states = options.limits.max_states
        self.max_depth = options.limits.max_depth
        actors = hooks(model).actors
        for actor in actors() if actors is not None else ():
            ex.actors[actor] = len(ex.actors)

    # ---- actors and labels ----

    def bit_of(self, action) -> int:
        bit = self.actor_bit.get(action)
        if bit is None:
            actors = self.ex.actors
            actor = self.model.actor(action)
            a = actors.get(actor)
            if a is None:
                a = actors[actor] = len(actors)
            bit = self.actor_bit[action] = 1 << a
        return bit

    def mask_of(self, enabled) -> int:
        """The actors of `enabled` (a list of actions, or already a bitmask) as a bitmask."""
        if enabled.__class__ is int:
            return enabled
        mask = 0
        for action in enabled:
            mask |= self.bit_of(action)
        return mask

    def single_step(self, action) -> tuple:
        """(label index, actor bit) of an edge that is this step alone."""
        bit = self.bit_of(action)
        known = self.one_step[action] = (self.labels.index((bit, EVERY, EVERY)), bit)
        return known

    # ---- storing states ----

    def _store(self, key, from_sid: int, d: int) -> int:
        """A new stored state, or -1 when the state limit forbids it."""
        ex = self.ex
        if self.max_states is not None and len(ex.states) + ex.fused >= self.max_states:  # visited, fused included
            ex.stop_reason = f"state limit of {self.max_states} reached"
            return -1
        tid = len(ex.states)
        self.index[key] = tid
        ex.states.append(key)
        ex.parent.append(from_sid)
        ex.depth.append(d)
        judge = self.judge
        if judge.live_state or judge.wants_bits:
            bad, bits = judge.verdict(key)
            if bad:
                judge.record(tid, bad)
            if judge.wants_bits:
                self.graph.pending_bits.append(bits)
        return tid

    def _walk(self, key, from_sid: int, d: int) -> tuple[int, tuple]:
        """Follow single-step expansions from `key` (depth d, not yet seen) to a state that is
        stored; returns (its id or -1 at the state limit, the Label tuple of the states passed)."""
        ex, judge, expand, index, through = self.ex, self.judge, self.options.expand, self.index, self.through
        labels, canon, max_depth, recording = self.labels, self.canon, self.max_depth, self.graph is not None
        key_of, verdicts = judge.key_of, judge.verdicts
        chain = []  # (state, action, actor bit of its step, enabled mask, pending bits)
        on_chain = {}
        cur = key
        end = None
        rest = (0, EVERY, EVERY)  # label of what lies beyond the chain (a memoised chain's rest)
        while True:
            expansion = None  # of `cur`, kept for its expansion if the walk stores it
            if max_depth is not None and d + len(chain) >= max_depth:
                break
            bad, pbits = verdicts.get(key_of(cur)) or judge.verdict(cur) if key_of is not None else judge.verdict(cur)
            if bad and any(p in judge.live_state for p, _ in bad):
                break
            expansion = expand(cur)
            chosen, enabled_actions = expansion
            if len(chosen) != 1:
                break
            action, nxt = chosen[0]
            if judge.live_step and judge.violates_step(cur, action, nxt):
                break
            on_chain[cur] = len(chain)
            if recording:
                chain.append((cur, action, self.actor_bit.get(action) or self.bit_of(action), self.mask_of(enabled_actions), pbits))
            else:
                chain.append((cur, action, 0, EVERY, EVERY))
            nkey = canon(nxt)
            end = index.get(nkey)
            if end is not None:
                break
            memo = through.get(nkey)
            if memo is not None:
                end, rest = memo >> LABEL_BITS, labels.labels[memo & LABEL_MASK]
                break
            if nkey in on_chain:  # a cycle of single steps: store the state that closes it
                del chain[on_chain[nkey]:]
                end = self._store(nkey, from_sid, d + len(chain))
                break
            cur = nkey
        if end is None:  # the walk stopped at `cur`: store it, with its expansion if computed
            end = self._store(cur, from_sid, d + len(chain))
            if end >= 0 and expansion is not None:
                self.stash[end] = expansion
        fired, enabled, pending = rest
        counts = self.counts
        for state, action, bit, mask, pbits in reversed(chain):
            fired, enabled, pending = fired | bit, enabled & mask, pending & pbits
            if end >= 0:
                through[state] = end << LABEL_BITS | labels.index((fired, enabled, pending))
            counts[action] = counts.get(action, 0) + 1
        # each fused state's one step counts once, here (a state cut off a cycle above is walked again)
        ex.transitions += len(chain)
        ex.fused += len(chain)
        return end, (fired, enabled, pending)

    # ---- the main loop ----

    def _start(self) -> None:
        ex, judge = self.ex, self.judge
        for init in self.model.initial_states():
            key = self.canon(init)
            if key not in self.index:
                self.index[key] = len(ex.states)
                ex.states.append(key)
                ex.parent.append(-1)
                ex.depth.append(0)
                bad, bits = judge.verdict(key)
                judge.record(self.index[key], bad)
                if judge.wants_bits:
                    self.graph.pending_bits.append(bits)

    def _report(self, head: int, elapsed: float, depth: int, done: bool = False) -> None:
        ex = self.ex
        info = {"phase": "search", "states": len(ex.states) + ex.fused, "expanded": head, "transitions": ex.transitions,
                "frontier": len(ex.states) - head, "depth": depth, "seconds": elapsed}
        if done:
            info["done"] = True
        for observer in self.options.observers:
            observer.on_progress(info)

    def _out_of_budget(self, elapsed: float) -> bool:
        limits, ex = self.options.limits, self.ex
        if limits.time_limit is not None and elapsed > limits.time_limit:
            ex.stop_reason = f"time limit of {limits.time_limit}s reached"
        elif limits.max_memory_mb is not None and peak_memory_mb() > limits.max_memory_mb:
            ex.stop_reason = f"memory limit of {limits.max_memory_mb} MB reached (peak {peak_memory_mb():.0f} MB)"
        return ex.stop_reason is not None

    def _out_of_memory(self) -> None:
        """Free what only the search itself needs and say why it stopped."""
        ex = self.ex
        self.index.clear()
        self.through.clear()
        self.stash.clear()
        self.judge.verdicts.clear()
        ex.stop_reason = f"memory ran out (MemoryError) after {ex.visited:,} states"

    def run(self) -> Exploration:
        ex, judge, options, graph = self.ex, self.judge, self.options, self.graph
        self._start()
        states, depth, index, through, stash, counts = ex.states, ex.depth, self.index, self.through, self.stash, self.counts
        expand, canonical, fuse = options.expand, options.canonical, options.fuse
        successors = self.model.successors
        one_step, actor_bit, single_step, bit_of = self.one_step, self.actor_bit, self.single_step, self.bit_of
        label_index, label_list, mask_of, store, walk = self.labels.index, self.labels.labels, self.mask_of, self._store, self._walk
        judge_step = judge.judge_step
        live_step = judge.live_step
        recording = graph is not None
        max_depth = self.max_depth
        start = time.perf_counter()
        head = 0
        truncated_depth = False
        try:  # memory running out ends the search like a limit: BOUNDED with the figures reached
            while head < len(states):
                if head % CHECK_EVERY == 0 and head:
                    elapsed = time.perf_counter() - start
                    self._report(head, elapsed, depth[head])
                    if self._out_of_budget(elapsed):
                        break
                if options.stop_when_found and judge.all_found(ex.deadlocks):
                    ex.stop_reason = "every property has a counterexample"
                    break
                sid = head
                head += 1
                state = states[sid]
                d = depth[sid]
                if max_depth is not None and d >= max_depth:
                    truncated_depth = True
                    if recording:
                        graph.expanded(array("q"), 0)
                    continue
                if expand is not None:
                    expansion = stash.pop(sid, None)
                    succ, enabled_actions = expansion if expansion is not None else expand(state)
                    if not enabled_actions:
                        ex.deadlocks.append(sid)
                    if recording:
                        mask = mask_of(enabled_actions)
                else:
                    succ = successors(state)
                    if not succ:
                        ex.deadlocks.append(sid)
                    mask = 0  # every successor is explored: the actors of the steps below are the enabled ones
                if recording:
                    out = array("q")
                ex.transitions += len(succ)
                for action, nxt in succ:
                    counts[action] = counts.get(action, 0) + 1
                    if live_step:
                        judge_step(sid, state, action, nxt)
                    key = nxt if canonical is None else canonical(nxt)
                    tid = index.get(key)
                    inside = None
                    if tid is None:
                        if not fuse:
                            tid = store(key, sid, d + 1)
                        else:
                            memo = through.get(key)
                            if memo is not None:
                                tid, inside = memo >> LABEL_BITS, label_list[memo & LABEL_MASK]
                            else:
                                tid, inside = walk(key, sid, d + 1)
                        if tid < 0:
                            break  # state limit reached
                    if recording:
                        if inside is None:
                            label, bit = one_step.get(action) or single_step(action)
                        else:
                            bit = actor_bit.get(action) or bit_of(action)
                            label = label_index((bit | inside[0], inside[1], inside[2]))
                        if expand is None:
                            mask |= bit
                        elif not bit & mask:
                            raise AssertionError(f"expand() chose {action!r} but did not report its actor enabled")
                        out.append(tid * LABEL_SLOTS + label)
                else:
                    if recording:
                        graph.expanded(out, mask)
                    continue
                break  # state limit reached inside the successor loop
        except MemoryError:
            self._out_of_memory()
        ex.expanded = head
        ex.seconds = time.perf_counter() - start
        if ex.stop_reason is None and truncated_depth:
            ex.stop_reason = f"depth limit of {max_depth} reached"
        ex.complete = ex.stop_reason is None
        kinds: Counter = Counter()
        for action, n in counts.items():
            kinds[self.model.action_kind(action)] += n
        ex.action_counts = kinds
        ex.peak_memory_mb = peak_memory_mb()
        self._report(head, ex.seconds, ex.max_depth, done=True)
        return ex
