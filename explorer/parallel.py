"""One breadth-first search over several processes (`SearchOptions.workers`).

Shape, and why it suits Python on a few cores:
- Shared nothing. Worker w owns the states whose group key (`state_codec().group_key`, a hash
  of what the properties read, the same number in every process) falls in its slice of the
  64-bit key space, and keeps their visited set, parents, pending bits and graph edges. States
  with equal property keys have equal answers, so each property key is judged by one worker
  only: owning by the state's own key made each worker judge most of them again (a judgement
  costs some 20 us, a stored state some 5). Only successors cross: per BFS level each
  worker expands its frontier and sends every successor it does not own to its owner in one
  batch per owner (flat arrays of ints, pickled once per batch, plus the values new since
  the last level), each state once per level; pickling state by state would cost as much as
  the search.
- Level-synchronous, so deterministic: a level's states are ordered by their group key, then
  by how they were first reached (`via`: the smallest of their parents, then which of that
  parent's successors they are; no two states share both), and the key-space slices follow
  the worker order, so a state's id is its level's first id + the sizes of the lower workers'
  blocks of that level + its place in its owner's block: every id, and with them parents
  (the smallest id among a state's predecessors, which all lie in the level before), the
  first finding of each property (the smallest id) and every counterexample, are the same
  whatever the number of workers. While searching a worker only needs where a state stands
  in its own block (a parent is "worker w, place p", which orders like the ids), so ids are
  worked out once, at the end. A level costs two exchanges with the main process: the
  batches, then how many new states each worker got (for the state limit and the end).
- The graph for the progress analysis: an edge to a state owned elsewhere is written as
  "the i-th state sent to worker d"; at the end each owner turns what it was sent into ids,
  so every worker writes its edges complete, and the main process gathers them as flat
  arrays and runs the progress analysis on the whole graph, exactly as after a search in
  one process.
- No chain fusion (a chain crosses owners): every visited state is stored. The counts
  (visited states, transitions, steps per action) are those of the one-process search,
  which fuses without changing them; only the stored count differs.
A state limit keeps the first states in id order, so a bounded search is deterministic
too; a time limit is checked by each worker as it expands, so where it cuts is not.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import time
from array import array
from bisect import bisect_right
from collections import Counter
from itertools import accumulate, chain, repeat
from operator import add, and_, mul, rshift, sub

from prefetch_check.explorer.exploration import CHECK_EVERY, Exploration
from prefetch_check.explorer.graph import EVERY, LABEL_SLOTS, Labels
from prefetch_check.explorer.interface import hooks
from prefetch_check.explorer.judge import Finding, Judge
from prefetch_check.explorer.limits import peak_memory_mb

MASK64 = (1 << 64) - 1
# How a state was first reached, while searching (`via`, ordered like its parent's id, then the
# successor's index): ((worker << PLACE_BITS | place in its block) + 1) << STEP_BITS | index,
# 0 << STEP_BITS | index for an initial state. It fits in 63 bits (array "q").
PLACE_BITS = 36
STEP_BITS = 20
MAX_WORKERS = (1 << (63 - PLACE_BITS - STEP_BITS)) - 1  # 127


def can_run_parallel(model) -> bool:
    """A model that can cross processes (a state codec and a fixed actor order), in a process
    allowed to start workers (a daemonic one, e.g. a worker of `run --jobs`, is not)."""
    h = hooks(model)
    return h.state_codec is not None and h.actors is not None and not multiprocessing.current_process().daemon


def explore_parallel(model, options, graph, workers: int) -> Exploration:
    """The search of `bfs.explore` on `workers` processes (see the module docstring)."""
    ctx = multiprocessing.get_context("fork")  # workers inherit the model as built
    start = time.perf_counter()
    # Garbage left by an earlier search in this process (its exploration holds reference cycles)
    # would be inherited, and the workers' allocations would then land in pages they share with
    # this process, each first write copying a page: R=4 q=2 p=2 timeout after a one-process
    # search of the same size, 17.4 s without this collection, 15.2 s with it.
    gc.collect()
    conns, procs = [], []
    try:
        for w in range(workers):
            mine, theirs = ctx.Pipe()
            proc = ctx.Process(target=_work, args=(w, workers, model, options, graph is not None, theirs, start), daemon=True)
            proc.start()
            theirs.close()
            conns.append(mine)
            procs.append(proc)
        coordinator = _Coordinator(model, options, graph is not None, conns, start)
        try:
            return coordinator.run()
        except MemoryError:  # in a worker or here: ends the search like a limit, BOUNDED
            return coordinator.out_of_memory()
    finally:
        for c in conns:
            c.close()
        for proc in procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
                proc.join()


# ---- the main process: routes batches, applies the limits, numbers the states, gathers the result ----


class _Coordinator:
    def __init__(self, model, options, recording: bool, conns: list, start: float):
        self.model, self.options, self.recording, self.conns, self.start = model, options, recording, conns, start
        self.n = len(conns)
        self.visited = 0

    def _gather(self) -> list:
        out = []
        for c in self.conns:
            msg = c.recv()
            if msg[0] == "error":
                raise msg[1]
            out.append(msg)
        return out

    def run(self) -> Exploration:
        n, conns, limits = self.n, self.conns, self.options.limits
        visited = 0
        level = 0
        stop_reason = None
        self.news = [[] for _ in range(n)]  # every value behind each worker's ints, in its numbering
        while True:
            outs = self._gather()  # ("out", news, {dest: batch}, info) after expanding a level
            for w, out in enumerate(outs):
                self.news[w].extend(out[1])
                stop_reason = stop_reason or out[3]["stop"]
            transitions = sum(o[3]["transitions"] for o in outs)  # cumulative per worker
            expanded = sum(o[3]["expanded"] for o in outs)
            for d, c in enumerate(conns):
                c.send(("in", [(s, outs[s][1], outs[s][2].get(d)) for s in range(n) if s != d]))
            counts = [m[1] for m in self._gather()]  # ("count", new states): each worker's block of the level
            room = None if limits.max_states is None else max(0, limits.max_states - visited)
            keep = counts
            if room is not None and sum(counts) > room:  # the first states in id order: lower workers' blocks first
                keep = [max(0, min(c, room - before)) for c, before in zip(counts, accumulate(counts, initial=0))]
                stop_reason = stop_reason or f"state limit of {limits.max_states} reached"
            visited += sum(keep)
            self.visited = visited
            level += 1
            elapsed = time.perf_counter() - self.start
            self._report(visited, expanded, transitions, level, elapsed)
            if stop_reason is None and limits.time_limit is not None and elapsed > limits.time_limit:
                stop_reason = f"time limit of {limits.time_limit}s reached"
            go = stop_reason is None and sum(keep) > 0
            for c, k in zip(conns, keep):
                c.send(("keep", k, go))
            if not go:
                break
        self._number()
        parts = [f[1] for f in self._gather()]
        for w, part in enumerate(parts):
            self.news[w].extend(part["news"])
        return self._merge(parts, stop_reason)

    def _number(self) -> None:
        """Ids, once the search is over: every worker says its block sizes per level, learns where
        each worker's blocks start, and sends each other worker the ids of the states it was sent."""
        n, conns = self.n, self.conns
        sizes = [m[1] for m in self._gather()]  # ("sizes", [block size per level])
        levels = max(len(s) for s in sizes)
        starts, gid = [], 0  # starts[level][worker]: the id of the worker's first state of that level
        for level in range(levels):
            row = []
            for w in range(n):
                row.append(gid)
                gid += sizes[w][level] if level < len(sizes[w]) else 0
            starts.append(row)
        for c in conns:
            c.send(("starts", starts))
        answers = [m[1] for m in self._gather()]  # ("answers", {sender: ids of the states it sent})
        for d, c in enumerate(conns):
            c.send(("answers", {s: answers[s].get(d) for s in range(n) if s != d}))

    def out_of_memory(self) -> Exploration:
        ex = Exploration(model=self.model, canonical=self.options.canonical)
        ex.states = _Counted(self.visited)
        ex.stop_reason = f"memory ran out (MemoryError) after {self.visited:,} states"
        ex.seconds = time.perf_counter() - self.start
        ex.peak_memory_mb = peak_memory_mb()
        return ex

    def _report(self, visited, expanded, transitions, depth, elapsed, done=False) -> None:
        info = {"phase": "search", "states": visited, "expanded": expanded, "transitions": transitions,
                "frontier": visited - expanded, "depth": depth, "seconds": elapsed}
        if done:
            info["done"] = True
        for observer in self.options.observers:
            observer.on_progress(info)

    def _merge(self, parts: list, stop_reason) -> Exploration:
        """One Exploration, ids in order, from the workers' parts."""
        model, n = self.model, self.n
        ex = Exploration(model=model, canonical=self.options.canonical)
        actors = hooks(model).actors()
        ex.actors = {a: i for i, a in enumerate(actors)}
        labels = Labels()
        for i in range(len(actors)):
            labels.index((1 << i, EVERY, EVERY))  # label i: a step of actor i alone
        ex.labels = labels.labels
        codec = hooks(model).state_codec()
        tables = [codec.learn(("merge", w), news) for w, news in enumerate(self.news)]
        levels = max(len(p["blocks"]) for p in parts)
        blocks = []  # (first id, worker, first position in the worker's part)
        parent, depth = array("q"), array("i")
        pending = array("q") if self.recording else None
        counts_per_state, edge_chunks, enabled = array("q"), [], []
        at = [0] * n  # next position in each worker's part
        edge_at = [0] * n
        gid = 0
        for level in range(levels):
            for w, part in enumerate(parts):
                if level >= len(part["blocks"]):
                    continue
                size = part["blocks"][level]
                if not size:
                    continue
                pos = at[w]
                blocks.append((gid, w, pos))
                parent.extend(part["parent"][pos : pos + size])
                depth.extend(array("i", [level]) * size)
                if pending is not None:
                    pending.extend(part["pending"][pos : pos + size])
                gid += size
                at[w] = pos + size
        complete = stop_reason is None and all(p["truncated"] is False for p in parts)
        truncated = any(p["truncated"] for p in parts)
        ex.states = PackedStates(blocks, [p["codes"] for p in parts], tables, codec.width, gid)
        ex.parent, ex.depth = parent, depth
        if self.recording and complete:
            for level in range(levels):
                for w, part in enumerate(parts):
                    size = part["blocks"][level] if level < len(part["blocks"]) else 0
                    if not size:
                        continue
                    first = part["edge_index"][level]  # position of the level's first state in the edge arrays
                    span = part["edge_counts"][first : first + size]
                    counts_per_state.extend(span)
                    total = sum(span)
                    edge_chunks.append(part["edges"][edge_at[w] : edge_at[w] + total])
                    edge_at[w] += total
                    enabled.extend(part["enabled"][first : first + size])
            flat = array("q")
            for chunk in edge_chunks:
                flat.extend(chunk)
            ex.graph = PackedGraph(FlatEdges(flat, array("q", accumulate(counts_per_state, initial=0))), enabled, pending)
        findings: dict = {}
        for part in parts:
            for name, (sid, reason, action) in part["findings"].items():
                if name not in findings or sid < findings[name].state_id:
                    findings[name] = Finding(sid, reason, action)
        ex.findings = findings
        ex.deadlocks = sorted(d for p in parts for d in p["deadlocks"])
        ex.progress_bits = parts[0]["progress_bits"]
        ex.transitions = sum(p["transitions"] for p in parts)
        ex.expanded = sum(p["expanded"] for p in parts)
        kinds: Counter = Counter()
        for part in parts:
            for action, k in part["counts"].items():
                kinds[model.action_kind(action)] += k
        ex.action_counts = kinds
        if stop_reason is None and truncated:
            stop_reason = f"depth limit of {self.options.limits.max_depth} reached"
        ex.stop_reason = stop_reason
        ex.complete = stop_reason is None
        ex.seconds = time.perf_counter() - self.start
        ex.peak_memory_mb = peak_memory_mb() + sum(p["peak_mb"] for p in parts)
        ex.workers = n
        self._report(len(ex.states), ex.expanded, ex.transitions, ex.max_depth, ex.seconds, done=True)
        return ex


class PackedStates:
    """The states of a parallel search, by id, kept as the workers' flat code arrays and decoded
    into this process's codes on demand (traces need a few; nobody needs all at once)."""

    def __init__(self, blocks: list, codes: list, tables: list, width: int, size: int):
        self._starts = [b[0] for b in blocks]
        self._blocks, self._codes, self._tables, self._width, self._size = blocks, codes, tables, width, size

    def __len__(self) -> int:
        return self._size

    def __getitem__(self, sid: int) -> tuple:
        if sid < 0:
            sid += self._size
        if not 0 <= sid < self._size:
            raise IndexError(sid)
        first, w, pos = self._blocks[bisect_right(self._starts, sid) - 1]
        at = (pos + sid - first) * self._width
        table = self._tables[w]
        return tuple(table[c] for c in self._codes[w][at : at + self._width])

    def __iter__(self):
        return (self[i] for i in range(self._size))


class _Counted:
    """The states of a search that ran out of memory: only how many there were."""

    def __init__(self, n: int):
        self.n = n

    def __len__(self) -> int:
        return self.n


class FlatEdges:
    """Every state's edges in one flat array: state i's are flat[offsets[i]:offsets[i + 1]]."""

    def __init__(self, flat: array, offsets: array):
        self._flat, self._offsets = flat, offsets

    def __len__(self) -> int:
        return len(self._offsets) - 1

    def __getitem__(self, sid: int) -> array:
        return self._flat[self._offsets[sid] : self._offsets[sid + 1]]


class PackedGraph:
    """What `graph.GraphRecorder` holds, gathered from the workers."""

    def __init__(self, edges: FlatEdges, enabled: list, pending_bits):
        self.edges, self.enabled, self.pending_bits = edges, enabled, pending_bits


# ---- a worker ----


def _work(me, n, model, options, recording, conn, start) -> None:
    try:
        _Worker(me, n, model, options, recording, conn, start).run()
    except (EOFError, BrokenPipeError, KeyboardInterrupt):
        pass  # the main process ended the search
    except BaseException as exc:  # noqa: BLE001 - reported to the main process, which re-raises it
        try:
            conn.send(("error", exc if isinstance(exc, MemoryError) else RuntimeError(f"search worker {me}: {exc!r}")))
        except Exception:  # noqa: BLE001
            pass


class _Worker:
    """One owner of a slice of the key space: its visited set, its blocks, its edges.

    Local indices number this worker's states in the order it stored them; a level's new
    states are a contiguous range of them, and `blocks[level]` lists them in id order. An
    edge's successor is the x-th entry of table d (`dests`, `targets[d]`): local index x when
    d is this worker, else the x-th state sent to worker d. The per-state work at the end is
    done by C-level maps over arrays: a loop in Python per state would cost as much as a
    third of the search."""

    def __init__(self, me, n, model, options, recording, conn, start):
        self.me, self.n, self.model, self.options, self.conn, self.start = me, n, model, options, conn, start
        self.parent_pid = os.getppid()
        self.recording = recording
        self.codec = hooks(model).state_codec()
        self.canon = options.canonical or (lambda s: s)
        self.judge = Judge(model, {}, wants_bits=recording)
        self.actor_index = {a: i for i, a in enumerate(hooks(model).actors())}
        self.actor_of: dict = {}  # action -> its actor's index
        self.level = -1  # of the states being stored
        self.index: dict = {}  # state -> local index
        self.states: list = []  # local index -> state
        self.via = array("q")  # local index -> how it was first reached (see PLACE_BITS)
        self.pending = array("q")  # local index -> pending bits
        self.level_keys: list = []  # the level's states' order (group key, via), from its first local index on
        self.blocks: list = []  # per level: local indices of its states, in id order
        self.firsts: list = []  # per level: the local index of its first state
        self.found: list = []  # per level: how many states it has (the block keeps fewer at the state limit)
        self.sent_to = [0] * n  # states sent to each worker so far
        self.received: dict = {}  # sender -> local index of every state it sent, in its order
        self.candidates: dict = {}  # property -> [(local index, reason)] at the level of its first finding here
        self.found_level: dict = {}  # property -> level of its first finding here
        self.deadlocks: list = []  # local indices
        self.counts: dict = {}
        self.transitions = self.expanded = 0
        self.edge_counts, self.enabled = array("q"), []
        self.dests, self.labels = array("b"), array("q")  # per edge: its table (n <= MAX_WORKERS), its label
        self.targets = [array("q") for _ in range(n)]  # per table: the x of each edge that uses it
        self.truncated = False
        self.stop = None

    def actor_bit(self, action) -> int:
        a = self.actor_of.get(action)
        if a is None:
            a = self.actor_of[action] = self.actor_index[self.model.actor(action)]
        return a

    # ---- one level ----

    def _new_state(self, state, group: int, via: int) -> int:
        """Store a state first met in this level; judge it (its findings wait for its id)."""
        idx = self.index[state] = len(self.states)
        self.states.append(state)
        self.level_keys.append(group << 64 | via)
        self.via.append(via)
        bad, bits = self.judge.verdict(state)
        if self.recording:
            self.pending.append(bits)
        if bad:
            level = self.level
            for prop, reason in bad:
                if self.found_level.get(prop.name, level) == level:
                    self.found_level[prop.name] = level
                    self.candidates.setdefault(prop.name, []).append((idx, reason))
        return idx

    def _begin_level(self) -> None:
        self.level += 1
        self._first_new = len(self.states)
        self.level_keys = []
        self._out = [(array("i"), array("q"), array("Q")) for _ in range(self.n)]  # codes, vias, group keys
        self._sent: dict = {}  # state -> x * n + d: the x-th state sent to worker d, for those sent in this level

    def _route(self, state, via: int) -> tuple[int, int]:
        """A successor neither stored here nor sent yet in this level: stored now if this worker
        owns it, else queued for its owner (each state once per level, as first reached: the
        frontier is expanded in id order, so that is the smallest `via` of this worker's;
        smaller ones from other workers come in `receive`). Returns its edge's reference: table
        d, entry x."""
        n, me = self.n, self.me
        group = self.codec.group_key(state) & MASK64
        d = (group * n) >> 64  # the owner: slices of the key space in worker order
        if d == me:
            x = self._new_state(state, group, via)
        else:
            x = self.sent_to[d]
            self.sent_to[d] = x + 1
            self._sent[state] = x * n + d
            box = self._out[d]
            box[0].extend(state)
            box[1].append(via)
            box[2].append(group)
        return d, x

    def expand(self, block: list):
        """Expand a level's block (local indices in id order): successors stored or queued, edges'
        references, judged steps."""
        model, options, judge = self.model, self.options, self.judge
        expand, successors, canon = options.expand, model.successors, self.canon
        counts, actor_bit, route = self.counts, self.actor_bit, self._route
        index_get, me, n, actor_of = self.index.get, self.me, self.n, self.actor_of
        edge_counts, enabled_of, labels, dests = self.edge_counts, self.enabled, self.labels, self.dests
        mine, targets = self.targets[me], self.targets
        limits = options.limits
        max_depth = limits.max_depth
        budget_mb = None if limits.max_memory_mb is None else limits.max_memory_mb / self.n
        at_max_depth = max_depth is not None and self.level >= max_depth
        self._begin_level()
        sent_get = self._sent.get
        live_step = judge.live_step
        states = self.states
        done = 0
        here = me << PLACE_BITS
        most = 1 << STEP_BITS
        for place, idx in enumerate(block):
            if done % CHECK_EVERY == 0 and done:
                if os.getppid() != self.parent_pid:
                    raise EOFError  # the main process is gone: nobody waits for this level
                elapsed = time.perf_counter() - self.start
                if limits.time_limit is not None and elapsed > limits.time_limit:
                    self.stop = f"time limit of {limits.time_limit}s reached"
                elif budget_mb is not None and peak_memory_mb() > budget_mb:
                    self.stop = f"memory limit of {limits.max_memory_mb} MB reached (peak {peak_memory_mb():.0f} MB in one of {self.n} workers)"
                if self.stop:
                    break
            done += 1
            state = states[idx]
            if at_max_depth:
                self.truncated = True
                edge_counts.append(0)
                enabled_of.append(0)
                continue
            if expand is not None:
                succ, enabled = expand(state)
                if not enabled:
                    self.deadlocks.append(idx)
                if enabled.__class__ is not int:
                    mask = 0
                    for action in enabled:
                        mask |= 1 << actor_bit(action)
                    enabled = mask
            else:
                succ = successors(state)
                if not succ:
                    self.deadlocks.append(idx)
                enabled = 0
            self.transitions += len(succ)
            if len(succ) > most:
                raise ValueError(f"a state with {len(succ)} successors: the parallel search numbers at most {most}")
            via = ((here | place) + 1 << STEP_BITS) - 1
            for action, nxt in succ:
                via += 1  # this successor's index among the state's successors
                counts[action] = counts.get(action, 0) + 1
                if live_step:
                    judge.judge_step(idx, state, action, nxt)  # a local index: made an id at the end
                a = actor_of.get(action)
                if a is None:
                    a = actor_bit(action)
                if expand is None:
                    enabled |= 1 << a
                labels.append(a)
                key = canon(nxt)
                known = index_get(key)
                if known is not None:  # stored here already: its parent has a smaller id
                    dests.append(me)
                    mine.append(known)
                    continue
                sent = sent_get(key)
                if sent is None:
                    d, x = route(key, via)
                else:
                    x, d = divmod(sent, n)
                dests.append(d)
                targets[d].append(x)
            edge_counts.append(len(succ))
            enabled_of.append(enabled)
        self.expanded += done
        return {"transitions": self.transitions, "expanded": self.expanded, "stop": self.stop}

    def seed(self):
        """The initial states, routed to their owners like successors (no parent, no edges)."""
        self._begin_level()
        if self.me == 0:
            for via, state in enumerate(self.model.initial_states()):
                key = self.canon(state)
                if key not in self.index and key not in self._sent:
                    self._route(key, via)
        return {"transitions": 0, "expanded": 0, "stop": None}

    def receive(self, inbound: list) -> list:
        """Store the successors other workers sent (in worker order), then put the level's new
        states in id order (group key, then via); keeps, per sender, the local index of each
        state it sent."""
        index, vias, first_new, width = self.index, self.via, self._first_new, self.codec.width
        new_state, keys = self._new_state, self.level_keys
        for s, news, batch in sorted(inbound, key=lambda x: x[0]):
            table = self.codec.learn(s, news)
            if batch is None:
                continue
            flat, sent_vias, groups = batch
            local = self.received.setdefault(s, array("q"))
            codes = iter(list(map(table.__getitem__, flat)))
            for state, v, g in zip(zip(*[codes] * width), sent_vias, groups):
                idx = index.get(state)
                if idx is None:
                    idx = new_state(state, g, v)
                elif idx >= first_new and v < vias[idx]:
                    vias[idx] = v
                    keys[idx - first_new] = g << 64 | v
                local.append(idx)
        order = sorted(range(len(keys)), key=keys.__getitem__)  # no two keys are equal
        self.firsts.append(first_new)
        return list(map(first_new.__add__, order))

    def run(self) -> None:
        conn = self.conn
        info = self.seed()
        while True:
            batches = {d: b for d, b in enumerate(self._out) if d != self.me and len(b[1])}
            conn.send(("out", self.codec.news(), batches, info))
            block = self.receive(conn.recv()[1])
            conn.send(("count", len(block)))
            _, keep, go = conn.recv()
            self.found.append(len(block))
            self.blocks.append(block[:keep])
            if not go:
                break
            info = self.expand(self.blocks[-1])
        self.finish()

    def _ids(self, starts: list) -> array:
        """local index -> id (-1: dropped at the state limit)."""
        gid = array("q", [-1]) * len(self.states)
        for level, (block, lo, found) in enumerate(zip(self.blocks, self.firsts, self.found)):
            first = starts[level][self.me]
            if len(block) == found:  # a whole level: its local indices are lo, lo + 1, ...; the place of each by one sort
                places = sorted(range(len(block)), key=block.__getitem__)
                gid[lo : lo + len(block)] = array("q", map(first.__add__, places))
            else:  # the level cut at the state limit
                for place, idx in enumerate(block):
                    gid[idx] = first + place
        return gid

    def finish(self) -> None:
        """Ids for every state (with the main process), then everything it merges: per level the
        block of states in id order, parents and edges as ids."""
        conn, n, me = self.conn, self.n, self.me
        conn.send(("sizes", [len(b) for b in self.blocks]))
        _, starts = conn.recv()
        gid = self._ids(starts)
        conn.send(("answers", {s: array("q", map(gid.__getitem__, local)) for s, local in self.received.items()}))
        _, answers = conn.recv()
        tables = [gid if d == me else (answers.get(d) or array("q")) for d in range(n)]
        streams = [map(table.__getitem__, xs) for table, xs in zip(tables, self.targets)]
        sids = map(next, map(streams.__getitem__, self.dests))  # each edge's successor id, in edge order
        edges = array("q", map(add, map(mul, sids, repeat(LABEL_SLOTS)), self.labels))  # id -1: dropped at the state limit (the graph goes unused)
        codes, parents, pending = array("i"), array("q"), array("q")
        place_mask = (1 << PLACE_BITS) - 1
        for level, block in enumerate(self.blocks):
            codes.extend(chain.from_iterable(map(self.states.__getitem__, block)))
            if level == 0:
                parents.extend(array("q", [-1]) * len(block))
            else:  # via -> the parent's worker and place -> its id
                ps = array("q", map(sub, map(rshift, map(self.via.__getitem__, block), repeat(STEP_BITS)), repeat(1)))
                row = starts[level - 1]
                parents.extend(map(add, map(row.__getitem__, map(rshift, ps, repeat(PLACE_BITS))), map(and_, ps, repeat(place_mask))))
            if self.recording:
                pending.extend(map(self.pending.__getitem__, block))
        sizes = [len(b) for b in self.blocks]
        conn.send(("final", {
            "blocks": sizes,
            "codes": codes,
            "news": self.codec.news(),  # the values made since the last level's
            "parent": parents,
            "pending": pending,
            "edge_counts": self.edge_counts,
            "edge_index": list(accumulate(sizes[:-1], initial=0)) + [len(self.edge_counts)],
            "edges": edges,
            "enabled": self.enabled,
            "findings": self._all_findings(gid),
            "deadlocks": [gid[i] for i in self.deadlocks],
            "counts": self.counts,
            "transitions": self.transitions,
            "expanded": self.expanded,
            "truncated": self.truncated,
            "progress_bits": self.judge.progress_bits,
            "peak_mb": peak_memory_mb(),
        }))

    def _all_findings(self, gid: array) -> dict:
        """property -> (id, reason, action) of its first finding here: state properties at the level
        they were first found (the smallest kept id), step properties as expanded (in id order)."""
        out = {}
        for name, found in self.candidates.items():
            kept = [(gid[idx], reason) for idx, reason in found if gid[idx] >= 0]
            if kept:
                out[name] = (*min(kept, key=lambda x: x[0]), None)
        for name, f in self.judge.findings.items():
            out[name] = (gid[f.state_id], f.reason, f.action)
        return out
