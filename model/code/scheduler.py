"""The baton: every thread of every rank is a real Python thread, but exactly one runs at a time.

A thread that reaches a scheduling point (a stand-in call another thread can observe) parks on
its own semaphore with a description of what it is about to do and when that is enabled; the
driver (`Baton.step`) picks one enabled parked thread and lets it run to its next point. So a
run is a sequence of choices (thread names), replayable exactly, and the state a choice leads to
is identified by what the threads observed (a digest per thread) plus the stand-ins' contents.
"""

from __future__ import annotations

import hashlib
import threading
import traceback
from dataclasses import dataclass, field
from typing import Callable, Optional

from prefetch_check.model.code.world.errors import Abandon, NotModelled, caller_site

HANDOFF_SECONDS = 10.0  # a thread that neither parks nor ends in this long runs outside the stand-ins


@dataclass
class Point:
    """What a parked thread will do next, and when it may."""

    label: str
    site: str
    enabled: Callable[[], bool]


@dataclass
class Managed:
    """One thread of one rank under the baton."""

    name: str  # e.g. S0, P1: the choice that runs it
    rank: int
    role: str
    target: Callable[[], None]
    sem: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))
    status: str = "new"  # new, parked, running, done, dead
    point: Optional[Point] = None
    digest: bytes = b""
    error: Optional[tuple[str, str, str]] = None  # (exception, site, traceback) when it died
    thread: Optional[threading.Thread] = None


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
        self.by_ident: dict[int, Managed] = {}
        self._main = threading.Semaphore(0)
        self.abandoning = False
        self.steps: list[StepRecord] = []
        self.fatal: Optional[str] = None

    # ---- the world's side
    def current(self) -> Optional[Managed]:
        return self.by_ident.get(threading.get_ident())

    def point(self, label: str, enabled: Optional[Callable[[], bool]] = None) -> None:
        """Park the calling managed thread until the scheduler picks it (no-op for other threads)."""
        me = self.current()
        if me is None:
            return
        if self.abandoning:
            raise Abandon()
        me.point = Point(label, caller_site(self.roots), enabled or _always)
        me.status = "parked"
        self._main.release()
        me.sem.acquire()
        if self.abandoning:
            raise Abandon()
        me.status = "running"

    def observe(self, value: str) -> None:
        """Fold what the running thread just saw into its digest (and the step's record)."""
        me = self.current()
        if me is None:
            return
        me.digest = hashlib.blake2b(me.digest + value.encode(), digest_size=16).digest()
        if self.steps and self.steps[-1].choice == me.name:
            self.steps[-1].observed = (self.steps[-1].observed + "; " + value).lstrip("; ")

    # ---- the driver's side
    def spawn(self, name: str, rank: int, role: str, target: Callable[[], None]) -> None:
        self.threads.append(Managed(name, rank, role, target))

    def start(self) -> None:
        """Start every thread; each parks at its first point (its start) before the next starts."""
        for m in self.threads:
            m.thread = threading.Thread(target=self._body, args=(m,), name=m.name, daemon=True)
            m.thread.start()
            self._wait_handoff(m)

    def _body(self, m: Managed) -> None:
        self.by_ident[threading.get_ident()] = m
        try:
            self.point("start")
            m.target()
            m.status = "done"
        except Abandon:
            m.status = "done"
        except NotModelled as exc:
            m.status, m.error = "dead", (str(exc), exc.site, traceback.format_exc(limit=-8))
        except BaseException as exc:  # the thread dies: that is what no_crash judges
            m.status = "dead"
            m.error = (f"{type(exc).__name__}: {exc}", _raise_site(exc, self.roots), traceback.format_exc(limit=-8))
        finally:
            self._main.release()

    def _wait_handoff(self, m: Managed) -> None:
        if not self._main.acquire(timeout=HANDOFF_SECONDS):
            self.fatal = (f"not modelled: thread {m.name} neither reached a stand-in nor ended within "
                          f"{HANDOFF_SECONDS:.0f} s (it blocks or loops outside the model) near {m.point.site if m.point else '?'}")
            raise RuntimeError(self.fatal)

    def enabled(self) -> list[Managed]:
        return [m for m in self.threads if m.status == "parked" and m.point.enabled()]

    def step(self, m: Managed) -> None:
        """Let the parked thread `m` run until it parks again, ends or dies."""
        assert m.status == "parked" and m.point is not None
        self.steps.append(StepRecord(m.name, m.rank, m.point.label, m.point.site))
        m.status = "running"
        m.sem.release()
        self._wait_handoff(m)
        if m.status == "dead" and m.error:
            self.steps[-1].observed = (self.steps[-1].observed + "; died: " + m.error[0]).lstrip("; ")

    def abandon(self) -> None:
        """End the run: every parked thread unwinds with Abandon; wait until they are gone."""
        self.abandoning = True
        for m in self.threads:
            if m.status == "parked":
                m.sem.release()
        for m in self.threads:
            if m.thread is not None:
                m.thread.join(timeout=HANDOFF_SECONDS)

    def threads_key(self) -> tuple:
        return tuple((m.name, m.status, m.point.label if m.point and m.status == "parked" else "", m.digest)
                     for m in self.threads)


def _always() -> bool:
    return True


def _raise_site(exc: BaseException, roots: tuple[str, ...]) -> str:
    """file:line where the exception was raised, innermost frame of the code under test."""
    site = "?"
    for frame, line in traceback.walk_tb(exc.__traceback__):
        name = frame.f_code.co_filename
        for root in roots:
            if name.startswith(root):
                site = f"{name[len(root):].lstrip('/')}:{line}"
    return site
