"""How a thread gives host slots back: queued for the scheduler's drain, or freed at once.

From 0.5.2 a thread puts released slots on the rank's `host_mem_release_queue` (one entry
per page), and the scheduler frees them in its drain, the count all ranks agree on. In
0.5.1.x every thread calls `mem_pool_host.free` itself (`Config.direct_release`): the slot
is free at once. Either way a slot given back twice is marked DOUBLE (a violation).
"""

from __future__ import annotations

from prefetch_check.model.protocols.poll.state import RELEASED, give_back


class HostSlots:
    def released(self, op, first: int, last: int, times: int = 1):
        """(op with pages [first, last) given back `times` times, release-queue entries added)."""
        op = op._replace(slots=give_back(op.slots, first, last, RELEASED, times))
        queued = 0 if self.config.direct_release else max(0, last - first) * times
        return op, queued

    @property
    def release_words(self) -> str:
        """How this configuration gives slots back, for step descriptions."""
        return "free at once" if self.config.direct_release else "release"
