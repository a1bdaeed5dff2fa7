"""One breadth-first search over several processes (`SearchOptions.workers`).

Shape, and why it suits Python on a few cores:
- Shared nothing. Worker w owns the states whose stable key (`state_codec().key`, the same
  number in every process) falls in its slice of the key space, and keeps their visited
  set, parents, pending bits and graph edges. Only successors cross: per BFS level each
  worker expands its frontier and sends every successor to its owner in one batch per
  owner (flat arrays of ints, pickled once per batch, plus the values new since the last
  level); pickling state by state would cost as much as the search.
- Level-synchronous, so deterministic: the new states of a level get their ids in the
  order of their stable key (then content), the key-space slices follow the worker order,
  so every id, and with them parents (the smallest id among a state's predecessors), the
  first finding of each property (the smallest id) and every counterexample, are the same
  whatever the number of workers. Per level the main process only routes batches and
  hands out id ranges; a level costs three exchanges.
- The graph for the progress analysis: each owner answers every successor asked about with
  the successor's id once ids are handed out, so the expanding worker writes its edges
  complete; at the end the main process gathers the edges as flat arrays and runs the
  progress analysis on the whole graph, exactly as after a search in one process.
- No chain fusion (a chain crosses owners): every visited state is stored. The counts
  (visited states, transitions, steps per action) are those of the one-process search,
  which fuses without changing them; only the stored count differs.
A state limit keeps the first states in id order, so a bounded search is deterministic
too; a time limit is checked by each worker as it expands, so where it cuts is not.
"""

from __future__ import annotations

import multiprocessing
import os
import time
from array import array
from bisect import bisect_right
from collections import Counter
from itertools import accumulate

from prefetch_check.explorer.exploration import CHECK_EVERY, Exploration
from prefetch_check.explorer.graph import EVERY, LABEL_SLOTS, Labels
from prefetch_check.explorer.interface import hooks
from prefetch_check.explorer.judge import Finding, Judge
from prefetch_check.explorer.limits import peak_memory_mb

MASK32 = (1 << 32) - 1
MASK64 = (1 << 64) - 1


def can_run_parallel(model) -> bool:
    """A model that can cross processes (a state codec and a fixed actor order), in a process
    allowed to start workers (a daemonic one, e.g. a worker of `run --jobs`, is not)."""
    h = hooks(model)
    return h.state_codec is not None and h.actors is not None and not multiprocessing.current_process().daemon


def owner_of(key: int, workers: int) -> int:
    return ((key & MASK32) * workers) >> 32


def explore_parallel(model, options, graph, workers: int) -> Exploration:
    """The search of `bfs.explore` on `workers` processes (see the module docstring)."""
    ctx = multiprocessing.get_context("fork")  # workers inherit the model as built
    start = time.perf_counter()
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


# ---- the main process: routes batches, hands out ids, gathers the result ----


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
            counts = [m[1] for m in self._gather()]  # ("count", new states)
            offsets = [visited + x for x in accumulate(counts, initial=0)]
            room = None if limits.max_states is None else max(0, limits.max_states - visited)
            keep = [c if room is None else max(0, min(c, room - (o - visited))) for c, o in zip(counts, offsets)]
            if room is not None and sum(counts) > room:
                stop_reason = stop_reason or f"state limit of {limits.max_states} reached"
            for c, o, k in zip(conns, offsets, keep):
                c.send(("ids", o, k))
            replies = [m[1] for m in self._gather()]  # ("replies", {sender: gids})
            visited += sum(keep)
            self.visited = visited
            level += 1
            elapsed = time.perf_counter() - self.start
            self._report(visited, expanded, transitions, level, elapsed)
            if stop_reason is None and limits.time_limit is not None and elapsed > limits.time_limit:
                stop_reason = f"time limit of {limits.time_limit}s reached"
            go = stop_reason is None and sum(keep) > 0
            for s, c in enumerate(conns):
                c.send(("replies", [(d, replies[d].get(s)) for d in range(n) if d != s], go))
            if not go:
                break
        parts = [f[1] for f in self._gather()]
        for w, part in enumerate(parts):
            self.news[w].extend(part["news"])
        return self._merge(parts, stop_reason)

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
    """One owner of a slice of the key space: its visited set, its frontier, its edges."""

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
        self.sortkey: list = []  # local index -> the key states are put in id order by
        self.index: dict = {}  # state -> local index
        self.states: list = []  # local index -> state
        self.keys: list = []  # local index -> stable key
        self.parent = array("q")  # local index -> parent id
        self.pending = array("q")  # local index -> pending bits
        self.gid = array("q")  # local index -> id (-1: not yet, or dropped at the state limit)
        self.order: list = []  # per level: local indices of the level's new states, in id order
        self.candidates: dict = {}  # property -> [(local index, reason)] at the level of its first finding
        self.found_level: dict = {}  # property -> level of its first finding here
        self.findings: dict = {}  # property -> (id, reason, action)
        self.deadlocks: list = []
        self.counts: dict = {}
        self.transitions = self.expanded = 0
        self.edge_counts, self.edges, self.enabled = array("q"), array("q"), []
        self.edge_index: list = []  # per level: where the level's states start in edge_counts
        self.truncated = False
        self.stop = None

    def actor_bit(self, action) -> int:
        a = self.actor_of.get(action)
        if a is None:
            a = self.actor_of[action] = self.actor_index[self.model.actor(action)]
        return a

    # ---- one level ----

    def _new_state(self, state, k: int, parent_id: int) -> int:
        """Store a state first met in this level; judge it (its findings wait for its id)."""
        idx = self.index[state] = len(self.states)
        self.states.append(state)
        self.sortkey.append((k & MASK32) << 64 | (k & MASK64))
        self.parent.append(parent_id)
        self.gid.append(-1)
        self._new.append(idx)
        bad, bits = self.judge.verdict(state)
        if self.recording:
            self.pending.append(bits)
        level = self.level
        for prop, reason in bad:
            if self.found_level.get(prop.name, level) == level:
                self.found_level[prop.name] = level
                self.candidates.setdefault(prop.name, []).append((idx, reason))
        return idx

    def _begin_level(self) -> None:
        self.level += 1
        self._first_new = len(self.states)
        self._new = []
        self._out = [(array("i"), array("q"), array("q")) for _ in range(self.n)]  # codes, parents, keys

    def _send_or_store(self, state, parent_id: int, refs: array) -> None:
        """A successor not stored here: stored now if this worker owns it, else queued for its owner;
        `refs` gets how to find its id once ids are out (local index * n + me, or ask number *
        n + owner). The frontier is expanded in id order, so the first parent met is the smallest
        of this worker's; smaller ones from other workers come in `receive`."""
        n, me = self.n, self.me
        k = self.codec.key(state)
        d = ((k & MASK32) * n) >> 32
        if d == me:
            idx = self.index.get(state)
            if idx is None:
                idx = self._new_state(state, k, parent_id)
            elif idx >= self._first_new and parent_id < self.parent[idx]:
                self.parent[idx] = parent_id
            refs.append(idx * n + me)
        else:
            box = self._out[d]
            refs.append(len(box[1]) * n + d)
            box[0].extend(state)
            box[1].append(parent_id)
            box[2].append(k)

    def expand(self, frontier: list, level: int):
        """Expand the frontier (local indices in id order): successors stored or queued, edges'
        references, judged steps."""
        model, options, judge = self.model, self.options, self.judge
        expand, successors, canon = options.expand, model.successors, self.canon
        counts, actor_bit, send_or_store = self.counts, self.actor_bit, self._send_or_store
        index_get, me, n, actor_of = self.index.get, self.me, self.n, self.actor_of
        edge_counts, enabled_of = self.edge_counts, self.enabled
        limits = options.limits
        max_depth = limits.max_depth
        budget_mb = None if limits.max_memory_mb is None else limits.max_memory_mb / self.n
        self._begin_level()
        refs, labels = array("q"), array("q")
        live_step = judge.live_step
        self.edge_index.append(len(self.edge_counts))
        done = 0
        gids, states = self.gid, self.states
        for idx in frontier:
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
            gid = gids[idx]
            state = states[idx]
            if max_depth is not None and level >= max_depth:
                self.truncated = True
                self.edge_counts.append(0)
                self.enabled.append(0)
                continue
            if expand is not None:
                succ, enabled = expand(state)
                if not enabled:
                    self.deadlocks.append(gid)
                if enabled.__class__ is not int:
                    mask = 0
                    for action in enabled:
                        mask |= 1 << actor_bit(action)
                    enabled = mask
            else:
                succ = successors(state)
                if not succ:
                    self.deadlocks.append(gid)
                enabled = 0
            self.transitions += len(succ)
            for action, nxt in succ:
                counts[action] = counts.get(action, 0) + 1
                if live_step:
                    judge.judge_step(gid, state, action, nxt)
                a = actor_of.get(action)
                if a is None:
                    a = actor_bit(action)
                if expand is None:
                    enabled |= 1 << a
                labels.append(a)
                key = canon(nxt)
                known = index_get(key)
                if known is not None:  # stored here already: ours, and its parent has a smaller id
                    refs.append(known * n + me)
                else:
                    send_or_store(key, gid, refs)
            edge_counts.append(len(succ))
            enabled_of.append(enabled)
        self.expanded += done
        self._pending_edges = (refs, labels)
        return {"transitions": self.transitions, "expanded": self.expanded, "stop": self.stop}

    def seed(self):
        """The initial states, routed to their owners like successors (parent -1, no edges)."""
        self._begin_level()
        self.edge_index.append(len(self.edge_counts))
        if self.me == 0:
            for state in self.model.initial_states():
                self._send_or_store(self.canon(state), -1, array("q"))
        self._pending_edges = (array("q"), array("q"))
        return {"transitions": 0, "expanded": 0, "stop": None}

    def receive(self, inbound: list) -> list:
        """Store the successors other workers sent (in worker order), then put the level's new
        states in id order; keeps, per sender, the local index of each state it asked about."""
        index, parent, first_new = self.index, self.parent, self._first_new
        answers = {}
        width = self.codec.width
        for s, news, batch in sorted(inbound, key=lambda x: x[0]):
            table = self.codec.learn(s, news)
            local = answers[s] = array("q")
            if batch is None:
                continue
            flat, parents, ks = batch
            lookup = table.__getitem__
            for i, p, k in zip(range(0, len(flat), width), parents, ks):
                state = tuple(map(lookup, flat[i : i + width]))
                idx = index.get(state)
                if idx is None:
                    idx = self._new_state(state, k, p)
                elif idx >= first_new and p < parent[idx]:
                    parent[idx] = p
                local.append(idx)
        new, sortkey, states, content = self._new, self.sortkey, self.states, self.codec.content
        new.sort(key=sortkey.__getitem__)
        i = 1
        while i < len(new):  # equal keys (all but never): by content, which every process agrees on
            if sortkey[new[i]] != sortkey[new[i - 1]]:
                i += 1
                continue
            j = i - 1
            while i < len(new) and sortkey[new[i]] == sortkey[new[j]]:
                i += 1
            new[j:i] = sorted(new[j:i], key=lambda x: content(states[x]))
        self._answers = answers
        return new

    def assign(self, first_id: int, keep: int) -> dict:
        """Ids for the level's new states (the first `keep` of them; the rest fall to the state
        limit); returns per sender the id of each state it asked about (-1: dropped)."""
        new, gid = self._new, self.gid
        for i, idx in enumerate(new[:keep]):
            gid[idx] = first_id + i
        for idx in new[keep:]:
            del self.index[self.states[idx]]
        self.order.append(new[:keep])
        for name, found in list(self.candidates.items()):
            kept = [(gid[idx], reason) for idx, reason in found if gid[idx] >= 0]
            if kept and name not in self.findings:
                self.findings[name] = (*min(kept, key=lambda x: x[0]), None)
            del self.candidates[name]
            if not kept:
                self.found_level.pop(name, None)
        lookup = gid.__getitem__
        return {s: array("q", map(lookup, local)) for s, local in self._answers.items()}

    def resolve(self, replies: list) -> None:
        """The level's edges, now that every successor has its id."""
        refs, labels = self._pending_edges
        n, me, gid = self.n, self.me, self.gid
        ids = dict(replies)
        edges = self.edges
        for ref, label in zip(refs, labels):
            d = ref % n
            sid = gid[ref // n] if d == me else ids[d][ref // n]
            edges.append(sid * LABEL_SLOTS + label)  # sid -1: dropped at the state limit (the graph goes unused)

    def run(self) -> None:
        conn = self.conn
        info = self.seed()
        level = 0
        while True:
            batches = {d: b for d, b in enumerate(self._out) if d != self.me and len(b[1])}
            conn.send(("out", self.codec.news(), batches, info))
            new = self.receive(conn.recv()[1])
            conn.send(("count", len(new)))
            _, first_id, keep = conn.recv()
            conn.send(("replies", self.assign(first_id, keep)))
            _, replies, go = conn.recv()
            self.resolve(replies)
            if not go:
                break
            info = self.expand(self.order[-1], level)
            level += 1
        self.finish()

    def finish(self) -> None:
        """Everything the main process merges: per level the block of states, in id order."""
        codes = array("i")
        parents, pending = array("q"), array("q")
        for block in self.order:
            for idx in block:
                codes.extend(self.states[idx])
                parents.append(self.parent[idx])
                if self.recording:
                    pending.append(self.pending[idx])
        self.conn.send(("final", {
            "blocks": [len(b) for b in self.order],
            "codes": codes,
            "news": self.codec.news(),  # the values made since the last level's
            "parent": parents,
            "pending": pending,
            "edge_counts": self.edge_counts,
            "edge_index": self.edge_index[1:] + [len(self.edge_counts)],
            "edges": self.edges,
            "enabled": self.enabled,
            "findings": self._all_findings(),
            "deadlocks": self.deadlocks,
            "counts": self.counts,
            "transitions": self.transitions,
            "expanded": self.expanded,
            "truncated": self.truncated,
            "progress_bits": self.judge.progress_bits,
            "peak_mb": peak_memory_mb(),
        }))

    def _all_findings(self) -> dict:
        out = dict(self.findings)
        for name, f in self.judge.findings.items():  # step invariants, judged as this worker expanded
            out[name] = (f.state_id, f.reason, f.action)
        return out
