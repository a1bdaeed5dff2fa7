"""threading.Thread for the code under test where it stops and starts the storage threads itself
(the cache's reset: `_stop_storage_threads`, then new threads started). A Thread names a baton
slot, the thread of its role on its rank (P, IO, Y, B: `ROLES`); `start` runs its target in that
slot once the thread there ended (rt/baton.py `restart`: same name, so the search's choices and
vector clocks stay valid), `join` waits until it ends, `is_alive` says whether it still runs.

A join with a timeout returns with the thread alive only where nothing else can move (rt/baton.py
Point.timeout): a thread blocked forever (a collective whose peer left) is what a real
`join(timeout=10)` gives up on, and one that could still move is taken to finish within the
timeout. The join's guard is the slot its thread writes when it ends; the timeout's wider read
(every thread) needs no footprint of its own, since at that state only timeouts are left to order."""

from __future__ import annotations

from prefetch_check.model.code.rt.baton import slot
from prefetch_check.model.code.stand_ins.errors import NotModelled, caller_site

# the controller's thread functions -> the role letter of the executor's thread running them
ROLES = {"prefetch_thread_func": "P", "prefetch_io_aux_func": "IO", "prefetch_sync_thread_func": "Y",
         "backup_thread_func": "B"}
ENDED = ("done", "dead")


class Thread:
    """One thread object of the code under test: a baton slot and the generation it started."""

    def __init__(self, world, group=None, target=None, name=None, args=(), kwargs=None, *, daemon=None):
        self.world, self.target, self.daemon = world, target, daemon
        self._name = name
        self.managed, self.generation = None, None  # the slot and its generation once started

    @classmethod
    def adopt(cls, world, managed) -> "Thread":
        """The thread object of a thread the executor started itself (`_start_storage_threads`'s)."""
        t = cls(world, target=managed.target, name=managed.name)
        t.managed, t.generation = managed, managed.generation
        return t

    @property
    def name(self) -> str:
        return self.managed.name if self.managed is not None else (self._name or "Thread")

    def start(self) -> None:
        baton = self.world.baton
        me = baton.current()
        role = ROLES.get(getattr(self.target, "__name__", ""))
        m = next((t for t in baton.threads if me is not None and role and t.name == f"{role}{me.rank}"), None)
        if m is None:
            raise NotModelled(f"threading.Thread({getattr(self.target, '__name__', self.target)}).start",
                              caller_site(baton.roots))
        baton.point(f"start thread {m.name}")
        baton.touch(slot(m.name))
        if m.status not in ENDED:
            raise NotModelled(f"a second {m.name} started while the first runs", caller_site(baton.roots))
        self.managed = m
        if m.status == "dead":  # its death stays the run's no_crash finding: the slot is not reused
            self.generation = m.generation
            baton.observe(f"{m.name} not started again: it died")
            return
        m.generation += 1
        self.generation = m.generation
        baton.restart(m, self.target, caller_site(baton.roots))
        baton.observe(f"started {m.name} again")

    def is_alive(self) -> bool:
        m = self.managed
        if m is None:
            return False
        self.world.baton.touch(slot(m.name), write=False)
        return m.generation == self.generation and m.status not in ENDED

    def _alive(self) -> bool:
        m = self.managed
        return m is not None and m.generation == self.generation and m.status not in ENDED

    def join(self, timeout=None) -> None:
        m, baton = self.managed, self.world.baton
        if m is None:
            raise NotModelled("join of a thread never started", caller_site(baton.roots))
        timed = timeout is not None
        label = f"join {m.name}" + (f" (timeout {timeout})" if timed else "")
        baton.point(label, lambda: not self._alive(), (slot(m.name),), timeout=(lambda: True) if timed else None)
        baton.touch(slot(m.name), write=False)
        baton.observe(f"joined {m.name}" if not self._alive() else f"join of {m.name} timed out: it still runs")

