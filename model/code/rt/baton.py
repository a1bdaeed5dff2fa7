"""The baton: every thread of every rank runs in its own greenlet, and exactly one runs at a time.

A thread that reaches a scheduling point (a stand-in call another thread can observe) parks
with a description of what it is about to do and when that is enabled, and switches back to
the driver, which picks one enabled parked thread and switches into it until its next point.
Greenlets rather than OS threads (the recommended design): on the shared 2-core machine a
thread handoff measured 13 us in isolation and far more under load, a greenlet switch 0.8 us;
the code under test reaches `threading` only through our stand-ins, so it cannot tell.
A run is a sequence of choices (thread names), replayable exactly, and the state a choice leads to
is identified by what the threads observed (a digest per thread) plus the stand-ins' contents.

Each step also records its footprint (`touch`): the shared objects it read and wrote (stand-in
queues, locks, events, collective groups, host pool, host tree, clock, the operations' fields
through rt/hooks.py), plus what the point's `enabled` reads (its guard: a get waits on its queue,
a leave on its group). Two steps conflict when one writes what the other touches
(strategies/sleep.py, the search's partial-order reduction, uses it). Recording is two set adds
per access, and only while a managed thread runs (never for the driver's own reads).
"""

from __future__ import annotations

import hashlib
import traceback
from dataclasses import dataclass, field
from typing import Callable, Optional

import greenlet

from prefetch_check.model.code.stand_ins.errors import Abandon, NotModelled, WorldFault, caller_site


@dataclass
class Point:
    """What a parked thread will do next, and when it may."""

    label: str
    site: str
    enabled: Callable[[], bool]
    guard: tuple = ()  # the shared objects `enabled` reads: part of the step's footprint
    # a wait with a timeout (a timed queue get, a timed join): also enabled where `timeout()` holds and
    # no thread can move otherwise (the timeout is taken to expire only then: it ends a wait nothing
    # else would end, and nothing else moves meanwhile)
    timeout: Optional[Callable[[], bool]] = None


@dataclass
class Managed:
    """One thread of one rank under the baton."""

    name: str  # e.g. S0, P1: the choice that runs it
    rank: int
    role: str
    target: Callable[[], None]
    status: str = "new"  # new, parked, running, done, dead
    point: Optional[Point] = None
    digest: bytes = b""
    # points parked at since the digest last changed: with the digest, where the thread is in its
    # own code (it is deterministic given what it observed), loops that observe nothing included
    unobserved: int = 0
    error: Optional[tuple[str, str, str]] = None  # (exception, site, traceback) when it died
    died_at: int = 0  # the steps taken when it died (its counterexample ends there, not at the run's end)
    generation: int = 0  # times the code under test started it again in its slot (restart)
    thread: Optional[greenlet.greenlet] = None
    starts: bool = True  # parks at "start" before its target (False: its target's first point is its first choice)
    touches: tuple = ()  # objects every step of this thread writes (the scheduler: its loop's own state)
    # objects a step writes only when it leaves or reaches a point labelled in `edge_labels`, or
    # ends the thread (the ack-drain scheduler: the round gate's inputs, which change only there)
    edge_touches: tuple = ()
    edge_labels: frozenset = frozenset()


@dataclass
class StepRecord:
    """One scheduling step: who ran, from where, and what it did."""

    choice: str
    rank: int
    label: str
    site: str
    observed: str = ""


class Baton:
    """Runs managed threads one at a time; the world calls `point` and `observe`."""

    def __init__(self, roots: tuple[str, ...]):
        self.roots = roots
        self.threads: list[Managed] = []
        self.named: dict[str, Managed] = {}  # name -> thread, built on first use (can_run)
        self.by_glet: dict = {}
        self.abandoning = False
        self.ends: list[Callable[[], None]] = []  # what abandon() runs last (at_end)
        self.steps: list[StepRecord] = []
        self.footprints: list[tuple[frozenset, frozenset]] = []  # per step: (read, written), Baton.touch
        self.recording = False  # footprints wanted (the world declares them complete: WorldRun.FOOTPRINTS)
        self.stepping = False  # a managed thread runs and footprints are wanted: `touch` records
        self.reads: set = set()
        self.writes: set = set()
        # what the world adds to a step's footprint at its end, (reads, writes) as footprint names:
        # what no stand-in sees (the predicate-poll world: a step after which only the schedulers
        # can move reads what its cycle end reads; buffer_only: a step that numbered an operation)
        self.settled: Optional[Callable[[], tuple[tuple, tuple]]] = None

    # ---- the world's side
    def current(self) -> Optional[Managed]:
        return self.by_glet.get(greenlet.getcurrent())

    def point(self, label: str, enabled: Optional[Callable[[], bool]] = None, guard: tuple = (),
              timeout: Optional[Callable[[], bool]] = None) -> None:
        """Park the calling managed thread until the scheduler picks it (no-op for other code).
        `guard`: the shared objects `enabled` reads (a step that writes one may enable or disable it);
        `timeout`: see Point."""
        me = self.current()
        if me is None:
            return
        if self.abandoning:
            raise Abandon()
        me.point = Point(label, caller_site(self.roots), enabled or _always, guard, timeout)
        me.unobserved += 1
        me.status = "parked"
        self.hub.switch()
        if self.abandoning:
            raise Abandon()
        me.status = "running"

    def touch(self, obj: str, write: bool = True) -> None:
        """The running step read (write=False) or wrote `obj` (a shared object's stable name)."""
        if self.stepping:
            (self.writes if write else self.reads).add(obj)

    def observe(self, value: str) -> None:
        """Fold what the running thread just saw into its digest (and the step's record)."""
        me = self.current()
        if me is None:
            return
        me.digest = hashlib.blake2b(me.digest + value.encode(), digest_size=16).digest()
        me.unobserved = 0
        if self.steps and self.steps[-1].choice == me.name:
            self.steps[-1].observed = (self.steps[-1].observed + "; " + value).lstrip("; ")

    # ---- the driver's side
    def spawn(self, name: str, rank: int, role: str, target: Callable[[], None], starts: bool = True,
              touches: tuple = (), edge_touches: tuple = (), edge_labels: frozenset = frozenset()) -> None:
        self.threads.append(Managed(name, rank, role, target, starts=starts, touches=touches,
                                    edge_touches=edge_touches, edge_labels=edge_labels))

    def run(self, decide: Callable[[], Optional[Managed]]) -> None:
        """Start every thread (each parks at its start), then run the steps `decide` picks until it
        returns None."""
        self.hub = greenlet.getcurrent()
        for m in self.threads:
            m.thread = greenlet.greenlet(lambda m=m: self._body(m), parent=self.hub)
            self.by_glet[m.thread] = m
            m.thread.switch()
        while True:
            m = decide()
            if m is None:
                return
            record = StepRecord(m.name, m.rank, m.point.label, m.point.site)
            self.steps.append(record)
            m.status = "running"
            if self.recording:
                self.reads, self.writes = set(m.point.guard), set(m.touches)
                self.stepping = True
                m.thread.switch()
                self.stepping = False
                if m.edge_touches and (record.label in m.edge_labels or m.status != "parked"
                                       or m.point.label in m.edge_labels):
                    self.writes.update(m.edge_touches)
                if self.settled is not None:
                    reads, writes = self.settled()
                    self.reads.update(reads)
                    self.writes.update(writes)
                self.footprints.append((frozenset(self.reads - self.writes), frozenset(self.writes)))
            else:
                m.thread.switch()
            if m.status == "dead" and m.error:
                self.steps[-1].observed = (self.steps[-1].observed + "; died: " + m.error[0]).lstrip("; ")
                m.died_at = len(self.steps)

    def restart(self, m: Managed, target: Callable[[], None], site: str) -> None:
        """Start a thread again in the slot of one that ended (the code under test made and started a
        new thread of the same role: the cache's reset, stand_ins/threads.py): it keeps its name, so
        choices and the search's vector clocks stay valid, and parks at its start, whose guard is the
        slot (the step that restarts it writes that)."""
        m.target, m.starts, m.digest, m.unobserved = target, False, b"", 0
        m.thread = greenlet.greenlet(lambda: self._body(m), parent=self.hub)
        self.by_glet[m.thread] = m
        m.point = Point("start", site, _always, (slot(m.name),))
        m.status = "parked"

    def _body(self, m: Managed) -> None:
        try:
            if m.starts:
                self.point("start")
            m.target()
            m.status = "done"
        except Abandon:
            m.status = "done"
        except NotModelled as exc:
            m.status, m.error = "dead", (str(exc), exc.site, traceback.format_exc(limit=-8))
        except BaseException as exc:  # the thread dies: that is what no_crash judges
            m.status = "dead"
            message = f"{type(exc).__name__}: {exc}"
            if _raised_in_stand_in(exc):  # our fault, not the code's: never a no_crash verdict
                message = f"not modelled: a stand-in failed ({message})"
            m.error = (message, _raise_site(exc, self.roots), traceback.format_exc(limit=-8))

    def enabled(self) -> list[Managed]:
        ready = [m for m in self.threads if m.status == "parked" and m.point.enabled()]
        if ready:
            return ready
        return [m for m in self.threads if m.status == "parked" and m.point.timeout is not None and m.point.timeout()]

    def can_run(self, name: str) -> bool:
        """Whether the thread called `name` is parked and enabled (a replay's one check)."""
        m = self.named.get(name)
        if m is None:
            self.named = {t.name: t for t in self.threads}
            m = self.named.get(name)
        if m is None or m.status != "parked":
            return False
        if m.point.enabled():
            return True
        return m.point.timeout is not None and m.point.timeout() and not any(
            t.status == "parked" and t.point.enabled() for t in self.threads)

    def abandon(self) -> None:
        """End the run: every parked thread unwinds with Abandon (its `finally` blocks run), then
        what the run's world asked to be done at its end (`at_end`: a directory removed)."""
        self.abandoning = True
        try:
            for m in self.threads:
                if m.status == "parked" and m.thread is not None and not m.thread.dead:
                    m.thread.switch()
        finally:
            while self.ends:
                self.ends.pop()()

    def at_end(self, fn: Callable[[], None]) -> None:
        """Run `fn` when the run is abandoned (every run is, where it ends)."""
        self.ends.append(fn)

    def forget(self) -> None:
        """The running thread's past is all in the world's state from here (a loop's start): what it
        observed before is dropped from the key, so a round that changes nothing comes back to the
        same state."""
        me = self.current()
        me.digest, me.unobserved = b"", 0

    def threads_key(self) -> tuple:
        """Per thread its status, where it is parked (the point's label and its site in the code under
        test), what it observed and how many points it passed since. The site: a thread can pass two
        points of one label without observing anything between them (bind_prefetch_ticket's lock,
        then release_pp_prefetch's). The count: it can pass one site twice so (a loop that frees an
        empty slice, takes a lock per key); without it the second is the first state again and cuts
        the run short. A thread is deterministic given what it observed, so digest and count together
        say where it is in its own code, and split no two states that are the same."""
        return tuple((m.name, m.status, (m.point.label, m.point.site) if m.point and m.status == "parked" else "",
                      m.digest, m.unobserved) for m in self.threads)


def _always() -> bool:
    return True


def slot(name: str) -> str:
    """A thread's slot in a step's footprint: written where it ends or is started again (restart),
    read by a join or an is_alive on it (stand_ins/threads.py)."""
    return f"thread {name}"


def _raised_in_stand_in(exc: BaseException) -> bool:
    if isinstance(exc, WorldFault) or getattr(exc, "_pc_tree_own", False):
        return False
    frames = list(traceback.walk_tb(exc.__traceback__))
    return bool(frames) and _HERE in frames[-1][0].f_code.co_filename


_HERE = __file__.rsplit("/", 2)[0] + "/"  # model/code/: the stand-ins, the worlds and the engine


def _raise_site(exc: BaseException, roots: tuple[str, ...]) -> str:
    """file:line where the exception was raised, innermost frame of the code under test."""
    site = "?"
    for frame, line in traceback.walk_tb(exc.__traceback__):
        name = frame.f_code.co_filename
        for root in roots:
            if name.startswith(root):
                site = f"{name[len(root):].lstrip('/')}:{line}"
    return site
