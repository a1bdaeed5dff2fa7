"""The D2H copies a cache reset leaves in flight (buffer_only's write path, cache_reset.py). The
controller's reset clears `ack_write_queue` without synchronising the finish events of the copies
still in it, and a D2H copy is the GPU write stream's work: nothing after the reset waits for it.
Each such copy lands at a moment the search chooses, on one more thread per rank, G (the write
stream), through its event's `land_late` (buffer/device_pool.py): it harms a host slot the pool
handed out again after the reset and its new owner already wrote."""

from __future__ import annotations

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

    def _flush(self, rank: Rank) -> None:
        pending = [ack.finish_event for ack in rank.cc.ack_write_queue if not ack.finish_event.done]
        super()._flush(rank)
        if pending and not rank.cc.ack_write_queue:  # the reset cleared their acks: nobody waits for them
            self.baton.touch(late_copies(rank.index))
            self.in_flight.setdefault(rank.index, []).extend(pending)
            self.baton.observe(f"{len(pending)} D2H cop{'y' if len(pending) == 1 else 'ies'} left in flight")

    def key(self) -> tuple:
        """The run's key, and how many copies each rank's write stream has still to land."""
        late = tuple(sorted((i, len(c)) for i, c in self.in_flight.items() if c))
        return super().key() + ((("late D2H",) + late,) if late else ())


def late_copies(rank: int) -> str:
    """The D2H copies a rank's reset left in flight, in a step's footprint."""
    return f"r{rank}.late_d2h"
