"""The D2H copies a cache reset leaves in flight (buffer_only's write path, cache_reset.py). The
controller's reset clears `ack_write_queue` without synchronising the finish events of the copies
still in it, and a D2H copy is the GPU write stream's work: nothing after the reset waits for it.
Each such copy lands at a moment the search chooses, on one more thread per rank, G (the write
stream), through its event's `land_late` (buffer/device_pool.py): it harms a host slot the pool
handed out again after the reset and its new owner already wrote.

In cache mode's write path the copy is submitted inside the drain (`flush_pending_backups`) just
before `writing_check` asks whether it is done, so a copy that lands only at its synchronize is
never in flight at a flush. There G runs every D2H copy (`StreamedWrites`): `query` answers whether
it ran, and a copy the drain found not done keeps its ack for the next round, which a flush may
come before."""

from __future__ import annotations

from prefetch_check.model.code.worlds.ack_drain.buffer.device_pool import write_ack_queue_name
from prefetch_check.model.code.worlds.common import Rank


class LateCopies:
    """A run mix-in over a reset world with a write path: the write stream G per rank."""

    PER_RANK = 6  # S, P, IO, Y, B, G

    def __init__(self, modules: dict, config, holder, roots: tuple[str, ...]):
        self.in_flight: dict[int, list] = {}  # rank -> the D2H copies its reset left in flight
        super().__init__(modules, config, holder, roots)

    def _spawn(self, rank: Rank) -> None:
        super()._spawn(rank)
        self.baton.spawn(f"G{rank.index}", rank.index, "device", lambda: self._write_stream(rank.index))

    def _write_stream(self, i: int) -> None:
        name = late_copies(i)
        while True:
            self.baton.point(f"a D2H copy the reset left in flight lands (rank {i})",
                             lambda: bool(self.in_flight.get(i)), (name,))
            self.baton.touch(name)
            self.in_flight[i].pop(0).land_late()
            self.baton.observe("the D2H copy landed")

    def _flush(self, rank: Rank) -> bool:
        pending = [ack.finish_event for ack in rank.cc.ack_write_queue if not ack.finish_event.done]
        if not super()._flush(rank):
            return False
        pending = [event for event in pending if not event.done]  # a reset may synchronise them first
        if pending and not rank.cc.ack_write_queue:  # the reset cleared their acks: nobody waits for them
            self.baton.touch(late_copies(rank.index))
            self.in_flight.setdefault(rank.index, []).extend(pending)
            self.baton.observe(f"{len(pending)} D2H cop{'y' if len(pending) == 1 else 'ies'} left in flight")
        return True

    def key(self) -> tuple:
        """The run's key, and how many copies each rank's write stream has still to land."""
        late = tuple(sorted((i, len(c)) for i, c in self.in_flight.items() if c))
        return super().key() + ((("late D2H",) + late,) if late else ())


class StreamedWrites(LateCopies):
    """LateCopies whose G is the write stream for every D2H copy (cache mode's write path): it runs
    the first queued copy not yet done, or one the reset left in flight, when the search chooses."""

    def _build(self, i: int) -> Rank:
        rank = super()._build(i)
        rank.tree.device.d2h_on_stream = True
        return rank

    def _write_stream(self, i: int) -> None:
        cc, name = self.ranks[i].cc, late_copies(i)

        def queued() -> list:
            return [a.finish_event for a in cc.ack_write_queue if not a.finish_event.done]

        while True:
            self.baton.point(f"D2H copy (rank {i})", lambda: bool(self.in_flight.get(i) or queued()),
                             (name, write_ack_queue_name(i)))
            if self.in_flight.get(i):
                self.baton.touch(name)
                self.in_flight[i].pop(0).land_late()
                self.baton.observe("the D2H copy the reset left in flight landed")
            else:
                self.baton.touch(write_ack_queue_name(i))
                queued()[0].run()
                self.baton.observe("the D2H copy ran")


def late_copies(rank: int) -> str:
    """The D2H copies a rank's reset left in flight, in a step's footprint."""
    return f"r{rank}.late_d2h"
