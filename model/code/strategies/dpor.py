"""Stateful dynamic partial-order reduction with sleep sets over the steps' footprints: the
search of sleep.py that pushes an alternative only where a race between two steps was seen,
instead of every enabled thread not asleep.

Races (Flanagan and Godefroid, "Dynamic partial-order reduction for model checking software",
POPL 2005). Each step's footprint is what it read and wrote (rt/baton.py); two steps conflict
when one writes what the other touches (sleep.py `conflict`); happens-before is program order
plus conflict, kept as a vector clock per step. After a step j of thread p, the latest earlier
step i of another thread that conflicts with j and does not happen before p's previous step is
a race: p is added to the threads to explore at the state before i (all of that state's
enabled threads when p was not enabled there). Every state starts with one thread to explore; a
run that ends makes the search go back to the deepest state with a thread still to explore.
A thread parked at a closed guard at the end of a run (a `get` on an empty queue, a collective's
leave) takes part as a step that reads and writes its guard: the step that disabled it, or took
what it waits for, races with it. The clock is a thread of its own where the world explores it
(worlds/deadlines.py), so firing a deadline is a step like any other.

Sleep sets as in sleep.py (Godefroid 1996, ch. 5): a thread explored at a state sleeps in its
later siblings' subtrees until a conflicting step runs; a thread added by a race while asleep is
not explored (its schedules reorder explored ones).

The state cache, kept sound the way Yang, Chen, Gopalakrishnan and Kirby, "Efficient stateful
dynamic partial order reduction" (SPIN 2008) keep it: DPOR with a cache is unsound as such,
because a run that stops at a state explored before does not see the steps after it, which may
race with the steps that led there this time. So each state keeps a summary of its explored
subtree, per thread the union of the footprints of every step that thread took there (the
summaries of states its runs stopped at included), folded in when the search leaves the state
for good. A run that stops at a cached state treats that summary as steps after its end: each
earlier step i that conflicts with a thread p's summary and does not happen before p's clock at
the stop is a race, and p (or every enabled thread) is added before i, for every such i, not
only the latest (a summary cannot say which of its steps comes first, and more alternatives
only explore more). A stop at a state whose summary is not known yet (its subtree is still
being explored: a state on the run's own path) explores every enabled thread at every state of
the run: the sleep sets' search, there. The sleep sets the cache keeps are those of sleep.py: a
state is a stop only when it was expanded under a subset of the present sleep set; otherwise it
is expanded again (with the summary of the earlier visit applied first, as for a stop), and
the intersection becomes its set.

Why the summary is enough: the subtree explored from a state depends on the state and its sleep
set, not on how the run got there (the races inside it are between its own steps), so exploring
it again after another prefix would run the same steps; their races with the new prefix are
those the summary finds, or fewer (a summary ignores the happens-before its own steps add).
A race inside the subtree goes to the latest conflicting step, which is inside it when there is
one, whatever came before; the prefix only lengthens the indices. The argument leans on the
states forming a graph without cycles below the cached one, as the ack-drain world's keys make
them (each thread's digest holds all it observed); a cycle (a state met again below itself: the
predicate-poll world's polling, once it records footprints) hits a state still on the path and
takes the fallback above. The checks: tests/test_code_dpor.py.

Under the reduction (reduce.py, on by default) the world's persistent set at a state stands in
for its enabled threads everywhere above: the first thread is taken from the set, a race adds its
thread where the set holds it and the whole set otherwise, and the fallbacks add the set. Why that
stays sound: Flanagan and Godefroid show, from the leaves up, that the threads explored at a state
form a persistent set there; a race whose thread is outside what was explored adds it, and their
rule adds every enabled thread only where that thread cannot be added, because all of them are a
persistent set. Any persistent set does as well, and their induction needs no more than that the
threads explored at each state contain a persistent set (exploring one from every state reaches
every end and runs every step of every execution up to the order of independent steps: Godefroid
1996, ch. 4). The world's set is persistent in the whole program, not only in the search that
chooses within it (common.py `ample`: its rank shares nothing but collectives, channels and the
gate with the other ranks, and no step of theirs can enable a thread of it), so a thread left out
of the set at a later state is not lost: a race with it there adds that state's whole set, whose
orders cover it. The set is a function of the state, so a cached state's subtree is still the
same whatever led to it. Footprints are trusted only where the world records them all
(`WorldRun.FOOTPRINTS`); elsewhere every thread of the set is explored at every state and nobody
sleeps: the DFS, run for run. What a footprint cannot see is said in rt/hooks.py."""

from __future__ import annotations

from prefetch_check.model.code.rt.decision import DEPTH, SEEN, TERMINAL, Stop
from prefetch_check.model.code.strategies.ends import replayed
from prefetch_check.model.code.strategies.sleep import conflict

_NONE = frozenset()


class Node:
    """A state of the current path and the step the run took from it."""

    __slots__ = ("thread", "foot", "clock", "enabled", "key", "sleep", "done", "todo", "summary")

    def __init__(self, thread: str, enabled: list[str], key: bytes, sleep: dict):
        self.thread = thread  # the step taken from here on the current path
        self.foot: tuple = (_NONE, _NONE)  # its footprint (read, written), known once it ran
        self.clock: tuple = ()  # its vector clock: per thread, the latest step that happens before
        self.enabled, self.key, self.sleep = enabled, key, sleep
        self.done: dict[str, tuple] = {}  # threads explored from here already -> their step's footprint
        self.todo: set[str] = {thread}  # threads to explore from here (races add to it)
        self.summary: dict[str, tuple] = {}  # per thread, the footprints of its steps in the explored subtree


class StatefulDPOR:
    exhaustive = True

    def __init__(self, max_depth: int):
        self.max_depth = max_depth
        self.path: list[Node] = []
        self.replay = 0  # the first depth this run chooses itself (below it: the path's choices)
        self.seen: dict[bytes, frozenset] = {}  # state key -> the sleep set it was expanded under
        self.summaries: dict[bytes, dict] = {}  # state key -> its explored subtree's summary (when left)
        self.open: dict[bytes, int] = {}  # keys of the path's states (their subtrees are being explored)
        self.index: dict[str, int] = {}  # thread -> its place in a vector clock
        self.leaf: dict[str, tuple] = {}  # what the run's last state adds to its parent's summary
        self.footprints = True
        self.pending = True
        self.interned: dict = {}  # one object per distinct footprint or sleep set (_intern)
        self.interned_summaries: dict = {}  # one dict per distinct summary (_summary)

    @property
    def states(self) -> int:
        return len(self.seen)

    def describe(self) -> str:
        return "stateful DPOR with sleep sets"

    def more(self) -> bool:
        return self.pending

    def start(self) -> None:
        self.leaf = {}

    # ---- one decision
    def choose(self, decision):
        depth = decision.depth
        if depth < self.replay:
            return replayed(decision, self.path[depth].thread)
        run = decision.run
        if not self.index:
            self.index = {m.name: i for i, m in enumerate(run.baton.threads)}
            self.footprints = getattr(run, "FOOTPRINTS", False)
        sleep: dict = {}
        if depth > 0:
            self._ran(depth - 1, run.baton)
            if self.footprints:
                sleep = self._asleep_after(depth - 1)
        enabled = decision.enabled()  # the world's persistent set under the reduction (reduce.py)
        if not enabled or decision.closes_cycle():
            return self._stop(TERMINAL, run, depth)
        key = decision.key()
        before = self.seen.get(key)
        prefer: frozenset = _NONE
        explored: dict = {}
        if before is not None:
            explored = self._after(key, depth)  # the earlier visit's steps race with this path as if run here
            if before <= sleep.keys():
                self.leaf = _merged(self.leaf, explored)
                return self._stop(SEEN, run, depth)
            prefer = before - sleep.keys()  # asleep then, awake now: explored here first
            self.seen[key] = self._intern(frozenset(before & sleep.keys()))
        else:
            self.seen[key] = self._intern(frozenset(sleep))
        todo = [t for t in enabled if t not in sleep]
        if not todo:  # every enabled thread sleeps: its schedules reorder explored ones
            self.summaries.setdefault(key, {})
            return self._stop(SEEN, run, depth)
        if depth >= self.max_depth:
            return self._stop(DEPTH, run, depth)
        first = next((t for t in todo if t in prefer), todo[0])
        node = Node(first, enabled, key, sleep)
        node.summary = explored
        if not self.footprints:
            node.todo = set(todo)
        self.path.append(node)
        self.open[key] = self.open.get(key, 0) + 1
        self.replay = depth + 1
        return first

    def _ran(self, j: int, baton) -> None:
        """Step j just ran (the first past the replayed prefix, or a later one): its footprint and
        vector clock, and its race with the latest earlier step it conflicts with (Flanagan-Godefroid)."""
        node = self.path[j]
        if not self.footprints:
            return
        node.foot = foot = self._intern(baton.footprints[j])
        p, path, index = node.thread, self.path, self.index
        last = next((i for i in range(j - 1, -1, -1) if path[i].thread == p), None)
        base = path[last].clock if last is not None else (-1,) * len(index)
        clock = list(base)
        raced = False
        reads, writes = foot
        for i in range(j - 1, -1, -1):  # conflict() inlined: this loop is the search's hottest
            other = path[i]
            if other.thread == p:
                continue
            r, w = other.foot
            if writes.isdisjoint(w) and writes.isdisjoint(r) and reads.isdisjoint(w):
                continue
            if not raced and i > base[index[other.thread]]:
                self._add(i, p)
                raced = True
            clock = [a if a >= b else b for a, b in zip(clock, other.clock)]
        clock[index[p]] = j
        node.clock = tuple(clock)

    def _asleep_after(self, j: int) -> dict:
        """The sleep set of the state after step j (sleep.py's rule: the step's explored siblings
        fall asleep; a step wakes the sleepers it conflicts with)."""
        node = self.path[j]
        foot, me = node.foot, node.thread
        out = {t: f for t, f in node.sleep.items() if t != me and not conflict(f, foot)}
        for t, f in node.done.items():
            if t != me and not conflict(f, foot):
                out[t] = f
        return out

    def _add(self, i: int, p: str) -> None:
        node = self.path[i]
        if p in node.enabled:
            node.todo.add(p)
        else:
            node.todo.update(node.enabled)

    def _races_with(self, p: str, foot: tuple, n: int) -> None:
        """`foot`: what thread p does after the path's first n steps (its blocked step, or every step
        of its in a cached state's subtree): every earlier step of another thread that conflicts
        with it and does not happen before p is a race."""
        path, index = self.path, self.index
        last = next((i for i in range(n - 1, -1, -1) if path[i].thread == p), None)
        base = path[last].clock if last is not None else None
        reads, writes = foot
        for i in range(n - 1, -1, -1):
            other = path[i]
            if other.thread == p or (base is not None and i <= base[index[other.thread]]):
                continue  # the same thread, or a step that happens before p's
            r, w = other.foot
            if not (writes.isdisjoint(w) and writes.isdisjoint(r) and reads.isdisjoint(w)):
                self._add(i, p)

    def _after(self, key: bytes, n: int) -> dict:
        """The run reached, after n steps, a state explored before: its subtree's steps race with the
        path (every enabled thread at every state when the subtree is still being explored); the
        subtree's summary."""
        if not self.footprints:
            return {}
        summary = self.summaries.get(key)
        if summary is None or key in self.open:  # its subtree is being explored: not known yet
            for node in self.path[:n]:
                node.todo.update(node.enabled)
            return {}
        for p, foot in summary.items():
            self._races_with(p, foot, n)
        return summary

    def _stop(self, end: str, run, n: int) -> Stop:
        """The run ends after n steps: the threads parked at a closed guard race as steps on it."""
        if self.footprints:
            blocked = {}
            for m in run.baton.threads:
                if m.status == "parked" and m.point.guard and not m.point.enabled():
                    guard = frozenset(m.point.guard)
                    blocked[m.name] = (guard, guard)
                    self._races_with(m.name, (guard, guard), n)
            self.leaf = _merged(self.leaf, blocked)
        return Stop(end)

    def _intern(self, value):
        """The one stored object equal to `value` (a footprint, a sleep set). Memory, not speed: a
        search keeps a sleep set and a summary per state, and a two-rank search's states share a few
        hundred distinct footprints and a few thousand distinct summaries (2x1 best_effort: 263
        footprint sets and 1,349 summaries over 69,406 states, each state's its own objects before)."""
        return self.interned.setdefault(value, value)

    def _summary(self, summary: dict) -> dict:
        """The one stored summary equal to `summary`, its footprints interned. Never mutated: every
        merge copies (`_merged`)."""
        key = frozenset(summary.items())
        found = self.interned_summaries.get(key)
        if found is None:
            found = {t: (self._intern(r), self._intern(w)) for t, (r, w) in summary.items()}
            self.interned_summaries[key] = found
        return found

    # ---- between runs
    def finish(self, outcome) -> None:
        """Go back to the deepest state with a thread still to explore; the states left for good
        fold their subtree's summary into their parent and keep it for the cache."""
        path, carry = self.path, self.leaf
        while path:
            node = path[-1]
            node.summary = _merged(node.summary, carry)
            node.summary = _merged(node.summary, {node.thread: node.foot})
            node.done[node.thread] = node.foot
            nxt = next((t for t in node.enabled if t in node.todo and t not in node.done and t not in node.sleep),
                       None)
            if nxt is not None:
                node.thread, node.foot, node.clock = nxt, (_NONE, _NONE), ()
                self.replay = len(path)
                return
            path.pop()
            if self.open[node.key] == 1:
                del self.open[node.key]
            else:
                self.open[node.key] -= 1
            self.summaries[node.key] = self._summary(_merged(self.summaries.get(node.key, {}), node.summary))
            carry = node.summary
        self.pending = False


def _merged(a: dict, b: dict) -> dict:
    """Per-thread footprint unions: `a` with `b` folded in (`a` itself when nothing is new)."""
    if not b:
        return a
    out = None
    for t, (rb, wb) in b.items():
        old = a.get(t)
        if old is None:
            new = (rb, wb)
        else:
            ra, wa = old
            if rb <= ra and wb <= wa:
                continue
            new = (ra | rb, wa | wb)
        if out is None:
            out = dict(a)
        out[t] = new
    return a if out is None else out
