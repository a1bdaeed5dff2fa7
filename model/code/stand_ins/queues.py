"""queue.Queue and queue.Empty for the code under test: every call is a scheduling point, and a
`get` is enabled only when the queue holds an item (with or without a timeout: the threads poll
`get(timeout=1)` in a loop, so an empty timed get only loops back to the same place: the same as
waiting). Where the cache's reset stops the threads (`World.stop_events`), a timed get on an empty
queue times out once the rank's stop event is set and nothing else can move (rt/baton.py
Point.timeout): its loop then sees the event, as upstream's does within its second; a None the
reset puts on the queue ends the wait first."""

from __future__ import annotations

from collections import deque
from queue import Empty  # the real class: the code catches it by name


class QueueFactory:
    """Makes the run's queues; a queue made by the code itself is named by its creation order."""

    def __init__(self, world):
        self.world = world

    def __call__(self, maxsize: int = 0, name: str = "") -> "Queue":
        return Queue(self.world, name or self.world.name_object(object(), "queue"))


DRAIN_WAITS = ("the scheduler stalls in its drain until its storage threads catch up with the fastest rank: "
               "every request on the rank, running ones included, waits on storage IO, and a rank whose threads "
               "never deliver hangs")


class Queue:
    def __init__(self, world, name: str):
        self.world, self.name, self.items = world, name, deque()
        self.puts = 0  # items ever put (the ack-drain round gate asks whether any came since a round started)
        world.register(self)

    def _point(self, what: str, enabled=None, write: bool = True, also: tuple = (), timeout=None) -> None:
        """A scheduling point on this queue; the step's footprint writes (or reads) the queue, and a
        blocking get's guard reads it (a put enables it), and `also` (a stop event that ends a
        timed wait)."""
        baton = self.world.baton
        baton.point(f"{what} {self.name}", enabled, ((self.name,) + also) if enabled is not None else (), timeout)
        baton.touch(self.name, write)

    def put(self, item, block: bool = True, timeout=None) -> None:
        self._point("put")
        self.items.append(item)
        self.puts += 1
        self.world.baton.observe(f"put {self.world.label(item)}")

    def put_nowait(self, item) -> None:
        self.put(item)

    def get(self, block: bool = True, timeout=None):
        me = self.world.baton.current()
        stop = self.world.stop_events.get(me.rank) if block and timeout is not None and me is not None else None
        if stop is not None:  # a timed wait the thread's loop ends once its stop event is set
            self._point("get", lambda: bool(self.items), also=(stop.name,), timeout=lambda: stop.flag)
            if not self.items:
                self.world.baton.observe("timed out")
                raise Empty()
        elif block:
            self._judge_drain_wait()
            self._point("get", lambda: bool(self.items))
        else:
            self._point("get_nowait")
            if not self.items:
                self.world.baton.observe("empty")
                raise Empty()
        item = self.items.popleft()
        self.world.baton.observe(f"got {self.world.label(item)}")
        if me is not None and self.name.endswith(".prefetch_hit_queue"):
            self.world.draining[me.rank] = item
        elif me is not None and self.name.endswith(".ack_prefetch_queue"):
            self.world.draining[me.rank] = getattr(item, "operation", None)
        return item

    def _judge_drain_wait(self) -> None:
        """The ack-drain scheduler pops from its queues exactly the count its ranks agreed (the
        MIN of their sizes, _sync_hicache_ready_counts), which each rank holds: its drain never
        waits. A scheduler of the first PP stage about to wait in a get on an empty queue drains
        more than it holds: it stalls until its own storage threads catch up with another rank."""
        world, me = self.world, self.world.baton.current()
        if (self.items or world.drain_may_block is None or me is None or me.role != "scheduler"
                or world.drain_may_block(me.rank)):
            return
        from prefetch_check.model.code.stand_ins.errors import caller_site

        world.fault("progress", f"rank {me.rank}: the scheduler waits in a blocking get on its empty {self.name}: "
                    "its drain pops more than the ranks agreed it holds", DRAIN_WAITS, caller_site(world.baton.roots))

    def task_done(self) -> None:
        """Nothing joins a queue in the worlds (the PP ticket thread marks each ticket done)."""

    def get_nowait(self):
        return self.get(block=False)

    def qsize(self) -> int:
        self._point("qsize", write=False)
        self.world.baton.observe(f"qsize {len(self.items)}")
        return len(self.items)

    def empty(self) -> bool:
        self._point("empty", write=False)
        self.world.baton.observe(f"empty {not self.items}")
        return not self.items

    @property
    def queue(self) -> "_Contents":
        """The deque behind the queue, as the cache's reset empties it (`q.queue.clear()`)."""
        return _Contents(self)

    def peek_size(self) -> int:
        """The size without a scheduling point (the scheduler's own look)."""
        return len(self.items)

    def snapshot(self) -> tuple:
        return (self.name, tuple(self.world.label(x) for x in self.items))


class _Contents:
    """`Queue.queue`: only `clear`, which writes the queue (no point: the caller's step goes on)."""

    def __init__(self, queue: Queue):
        self._queue = queue

    def clear(self) -> None:
        q = self._queue
        q.world.baton.touch(q.name)
        q.items.clear()

    def __len__(self) -> int:
        self._queue.world.baton.touch(self._queue.name, write=False)
        return len(self._queue.items)


__all__ = ["Empty", "Queue", "QueueFactory"]
