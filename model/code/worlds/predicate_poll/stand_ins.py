"""The stand-ins only the predicate-poll world needs (HiRadixCache and HiCacheController of
0.5.1-0.5.18): the host radix node a prefetch hangs off, the thread the prefetch thread starts
itself (its IO thread), write-through and load-back ack queues that stay empty, the host pool's
extra calls of those releases, and the page hash as those releases call it."""

from __future__ import annotations

from queue import Empty

from prefetch_check.model.code.stand_ins.collectives import Group, left
from prefetch_check.model.code.stand_ins.context import Strict
from prefetch_check.model.code.stand_ins.host_pool import HostPool
from prefetch_check.model.code.stand_ins.queues import Queue
from prefetch_check.model.code.stand_ins.radix import RadixKey, storage_hashes
from prefetch_check.model.code.stand_ins.sync import Event, Lock, make_threading


class HostNode(Strict):
    """The `last_host_node` a prefetch is issued under (the root: nothing of the request is cached):
    protect_host/release_host count its host lock, which host_memory reads at the end."""

    _pc_what = "last_host_node"
    _pc_footprint = True  # its calls enter a step's footprint (rt/hooks.py as_value)

    def __init__(self, world, rank: int):
        self.world, self.rank, self.host_ref_counter = world, rank, 0
        self.key = RadixKey([])
        self.priority = 0
        self._pc_name = f"r{rank}.host_node"  # its name in a step's footprint (rt/baton.py)
        world.register(self)

    def protect_host(self) -> None:
        self.world.baton.touch(self._pc_name)
        self.host_ref_counter += 1

    def release_host(self) -> None:
        self.world.baton.touch(self._pc_name)
        self.host_ref_counter -= 1

    def snapshot(self) -> tuple:
        return ("host node", self.rank, self.host_ref_counter)


class Started:
    """Threads the code under test starts itself (0.5.1-0.5.18's prefetch thread starts its IO
    thread): per rank the targets, in order; the executor's IO thread of that rank runs the first."""

    def __init__(self, world):
        self.world, self.targets = world, {}
        world.register(self)

    @staticmethod
    def name(rank: int) -> str:
        """Rank `rank`'s started targets in a step's footprint (a start writes them, the IO
        thread's first point waits on them)."""
        return f"r{rank}.started"

    def snapshot(self) -> tuple:
        return ("started", tuple(sorted((r, len(t)) for r, t in self.targets.items())))


def rank_name(world, kind: str) -> str:
    """The name of a queue, lock or event the code under test makes while it runs: per rank, in
    that rank's creation order (`r0.lock1`). A count over all ranks would name rank 0's lock
    `lock1` or `lock0` as rank 1's thread ran first or not: the same state under two keys (and the
    threads' digests, which hold the names they saw, apart for good)."""
    me = world.baton.current()
    return world.name_object(object(), f"r{me.rank if me is not None else 0}.{kind}")


class RankQueueFactory:
    """queue.Queue for the code under test in this world: named per rank (rank_name)."""

    def __init__(self, world):
        self.world = world

    def __call__(self, maxsize: int = 0, name: str = "") -> Queue:
        return Queue(self.world, name or rank_name(self.world, "queue"))


def make_poll_threading(world, started: Started, not_modelled):
    """threading as in sync.make_threading (its locks and events named per rank: rank_name), plus
    a Thread whose start() hands its target to the executor's thread of the calling rank (the
    executor spawned it, waiting for this start)."""
    mod = make_threading(world, not_modelled)
    mod.Lock = lambda: Lock(world, rank_name(world, "lock"))
    mod.RLock = mod.Lock
    mod.Event = lambda: Event(world, rank_name(world, "event"))
    from prefetch_check.model.code.stand_ins.errors import NotModelled, caller_site

    class Thread:
        def __init__(self, target=None, daemon=None, name=None, args=(), kwargs=None):
            self.target, self.args, self.kwargs = target, args, kwargs or {}

        def start(self) -> None:
            me = world.baton.current()
            rank = me.rank if me is not None else 0
            world.baton.touch(started.name(rank))
            mine = started.targets.setdefault(rank, [])
            if mine:
                raise NotModelled("threading.Thread: a second thread started by the code", caller_site(world.baton.roots))
            mine.append(lambda: self.target(*self.args, **self.kwargs))

        def is_alive(self) -> bool:
            return True

    mod.Thread = Thread
    return mod


class EmptyAcks(list):
    """ack_write_queue / ack_load_queue (and the write and load queues): no write-through or
    load-back runs in this world, so they stay empty. A Queue in the old releases, a list in the
    later ones: an empty list with a Queue's reading calls has both faces."""

    def qsize(self) -> int:
        return 0

    def empty(self) -> bool:
        return True

    def get_nowait(self):
        raise Empty()


class PollHostPool(HostPool):
    """The host pool with the calls 0.5.1-0.5.18 add on the prefetch path."""

    def update_prefetch(self, indices) -> None:
        """Marks the slots as prefetched (a state bit the path never reads back)."""

    def set_from_flat_data_page(self, index, data) -> None:
        if data is None:  # a failed read the code writes anyway: what real torch does is not ours to say
            from prefetch_check.model.code.stand_ins.errors import NotModelled, caller_site

            raise NotModelled("mem_pool_host.set_from_flat_data_page with no page data (a failed read)",
                              caller_site(self.world.baton.roots))
        super().set_from_flat_data_page(index, data)


def page_hashes(page_size: int):
    """get_hash_str: up to 0.5.14 called per page (tokens of one page, prior hash) -> one hash;
    from 0.5.15 with page_size= -> one hash per page of the key."""

    def get_hash_str(tokens, prior=None, **kwargs):
        if "page_size" in kwargs:
            return storage_hashes(tokens, prior, page_size)
        hashes = storage_hashes(tokens, prior, page_size)
        return hashes[0] if hashes else None

    return get_hash_str


class RelativeGroup(Group):
    """A collective group whose state is its calls relative to the rank furthest behind: the
    scheduler polls in rounds, each with collectives, so a round that changes nothing else must
    lead back to the same state (the absolute count would make every poll a new state)."""

    def rebase(self) -> None:
        """Count the calls from the rank furthest behind, while no rank is inside a call (nothing
        arrived, so no waiting leave holds a call number). The threads observe the call number
        they arrive at ("arrive S-tp#4"): an absolute count put every round's steps in new states,
        since the scheduler observes it mid-round, and two rounds alike never met. The code under
        test never sees the number; the pairing of calls is the same relative to any base."""
        base = min(self.calls.values())
        moved = bool(base) and not self.arrived
        for r in self.ranks:  # an arriving thread reads every rank's call number (a move writes them)
            self.world.baton.touch(left(self, r), write=moved)
        if moved:
            self.calls = {r: c - base for r, c in self.calls.items()}

    def snapshot(self) -> tuple:
        base = min(self.calls.values())
        return (self.name, tuple(sorted((r, c - base) for r, c in self.calls.items())),
                tuple((n - base, tuple(sorted(a.items()))) for n, a in sorted(self.arrived.items())))
