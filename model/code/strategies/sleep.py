"""Depth-first search with sleep sets over step footprints and the state cache: the executor's
exhaustive search (dfs.py) that skips schedules which only reorder independent steps.

Each step records its footprint (rt/baton.py: the shared objects it read and wrote, and what its
point's `enabled` reads). Two steps are dependent when one writes an object the other touches;
a step that can enable or disable another touches what that one's guard reads (a put and a
blocked get both write the queue, an arrival writes what a peer's leave reads, a scheduler's step
that reaches or leaves its round gate writes what the other ranks' gates read), so independence
means each leaves the other enabled and unchanged, and running them in either order reaches the
same state.

Sleep sets (Godefroid, "Partial-Order Methods for the Verification of Concurrent Systems", 1996,
ch. 5): when a state's alternatives are explored one after another, the alternatives already
explored sleep in the later ones' subtrees until a dependent step runs; a sleeping thread is not
chosen, since each schedule that would choose it reorders one explored already. A run whose every
enabled thread sleeps stops as `seen` (not judged as an end: its futures are explored elsewhere).
Sleep sets prune transitions, never states: every state the unreduced search reaches is still
reached (the checks compare the state counts, tests/test_code_sleep_sets.py).

With the state cache (ch. 6): a state is kept with the sleep set it was expanded under, and a
later visit prunes it only if that set is a subset of the current one (everything explored now
was explored then). Otherwise the visit explores just the threads asleep then and awake now, under
the intersection of both sleep sets, which becomes the state's set. That stays sound because a
state's key determines its future (dfs.py): the union of both visits explores every enabled
thread outside the intersection, and the intersection's threads are covered by both paths' sleep
claims. The world's persistent set (reduce.py, `ample`) still narrows the enabled threads first:
persistent sets and sleep sets combine soundly (ch. 5: every class of equivalent schedules the
persistent-set search runs keeps one representative, with the same steps, so the same faults
and the same end state), but the states between may differ: with the persistent set on, the
sleep sets may expand fewer states than it alone (0.5.23 2x1: 1,135 against 1,983).

Footprints are trusted only where the world says every object its threads share records one
(`WorldRun.FOOTPRINTS`); elsewhere no thread ever sleeps and this is dfs.py's search, run for run.
What a footprint cannot see (an object kept in a local across a point) is said in rt/hooks.py.
dpor.py pushes an alternative only where a race was seen, instead of every enabled thread not
asleep (the default at one rank; here, under the persistent set, at more)."""

from __future__ import annotations

from prefetch_check.model.code.rt.decision import DEPTH, SEEN, TERMINAL, Stop
from prefetch_check.model.code.strategies.ends import replayed


def conflict(a: tuple, b: tuple) -> bool:
    """Two footprints (reads, writes) are dependent: one writes what the other reads or writes."""
    ra, wa = a
    rb, wb = b
    return not (wa.isdisjoint(wb) and wa.isdisjoint(rb) and ra.isdisjoint(wb))


class Branch:
    """A state where a run chose among several threads: the sleep set it was reached with, and the
    footprint of each thread explored from it so far (in order: the later ones sleep on them)."""

    __slots__ = ("depth", "asleep", "explored")

    def __init__(self, depth: int, asleep: dict):
        self.depth, self.asleep, self.explored = depth, asleep, {}


class SleepSets:
    exhaustive = True

    def __init__(self, max_depth: int):
        self.max_depth = max_depth
        self.stack: list[tuple[list[str], Branch | None]] = [([], None)]  # (prefix, the branch its last choice leaves)
        self.seen: dict[bytes, frozenset] = {}  # state key -> the sleep set it was expanded under
        self.prefix: list[str] = []
        self.branch: Branch | None = None
        self.asleep: dict[str, tuple] = {}  # thread -> the footprint of its next step
        self.expanded: list[tuple[Branch, list[str]]] = []  # past the prefix: (branch, the threads to explore)
        self.sleeping = False  # the world records footprints (WorldRun.FOOTPRINTS), asked at a run's start

    @property
    def states(self) -> int:
        return len(self.seen)

    def describe(self) -> str:
        return "depth-first search with sleep sets"

    def more(self) -> bool:
        return bool(self.stack)

    def start(self) -> None:
        (self.prefix, self.branch), self.expanded, self.asleep = self.stack.pop(), [], {}

    def choose(self, decision):
        depth = decision.depth
        if depth < len(self.prefix):
            return replayed(decision, self.prefix[depth])
        self.sleeping = getattr(decision.run, "FOOTPRINTS", False)
        if self.sleeping:
            self._wake(decision, depth)
        if not decision.enabled():
            return Stop(TERMINAL)
        if decision.closes_cycle():  # only the schedulers move and nothing changes: judged as an end
            return Stop(TERMINAL)
        asleep = self.asleep
        key = decision.key()
        before = self.seen.get(key)
        if before is None:
            self.seen[key] = frozenset(asleep)
            todo = [t for t in decision.enabled() if t not in asleep]
        elif before <= asleep.keys():
            return Stop(SEEN)
        else:  # explored before under a sleep set this one does not contain: only what slept then
            todo = [t for t in decision.enabled() if t in before and t not in asleep]
            asleep = {t: f for t, f in asleep.items() if t in before}
            self.seen[key] = frozenset(asleep)
        if not todo:  # every enabled thread sleeps: its schedules reorder explored ones
            return Stop(SEEN)
        if depth >= self.max_depth:
            return Stop(DEPTH)
        branch = Branch(depth, asleep)
        self.expanded.append((branch, todo))
        self.asleep = branch.asleep
        self.branch = branch
        return todo[0]

    def _wake(self, decision, depth: int) -> None:
        """Update the sleep set with the step just taken (at depth - 1): on the step that leaves a
        branch, its explored siblings fall asleep; every step wakes the sleepers it depends on."""
        if depth == 0:
            return
        baton = decision.run.baton
        choice, done = baton.steps[depth - 1].choice, baton.footprints[depth - 1]
        branch = self.branch
        if branch is not None and branch.depth == depth - 1:
            sleepers = dict(branch.asleep)
            sleepers.update(branch.explored)
            branch.explored[choice] = done  # every step is followed by a choice: each branch learns its own
        else:
            sleepers = self.asleep
        self.asleep = {t: f for t, f in sleepers.items() if t != choice and not conflict(f, done)}

    def finish(self, outcome) -> None:
        schedule = outcome.schedule
        for branch, todo in self.expanded:
            for alt in reversed(todo[1:]):
                self.stack.append((schedule[: branch.depth] + [alt], branch))
