"""The round gate of a run with the write path (CodeConfig.backup): besides the world's own reasons,
a D2H write ack, a storage write ack or (with a load-back) a ready H2D ack on every rank opens a
round (their MIN > 0: writing_check, loading_check and the backup drain pop what the ranks agree
on, `_sync_hicache_ready_counts`). Under the gate "any" (CodeConfig.round_gate) an H2D copy finished
on some rank since the last round started opens one too, as a queued item does on the drained
queues (harness.py): a drain that reaps more than the MIN runs its divergent round, and the rank
behind reaps its ack at a later one."""

from __future__ import annotations

from prefetch_check.model.code.worlds.ack_drain.buffer.device_pool import ack_queue_name, write_ack_queue_name


class WriteAcksGate:
    """A run mix-in over a world's gate; `_write_round_due` is what opens it beyond the world's."""

    def round_enabled(self, rank) -> bool:
        if super().round_enabled(rank):
            return True
        if not self._all_at_round_start():
            return False
        return self._write_round_due()

    def _write_round_due(self) -> bool:
        return (min(len(r.cc.ack_write_queue) for r in self.ranks) > 0
                or min(r.cc.ack_backup_queue.peek_size() for r in self.ranks) > 0
                or (self._loads() and min(_ready(r.cc.ack_load_queue) for r in self.ranks) > 0)
                or (self._loads_any() and any(_ready(r.cc.ack_load_queue) for r in self.ranks)
                    and self._copied_since_round_start()))

    def _loads_any(self) -> bool:
        """Load-backs under the gate "any": a copy done on one rank opens a round."""
        return self._loads() and self.any_gate()

    def _copies(self) -> tuple:
        return tuple(r.tree.device.copies_done for r in self.ranks)

    def _copied_since_round_start(self) -> bool:
        start = self.__dict__.get("copies_start")
        return start is None or self._copies() != start

    def remember_round_start(self) -> None:
        super().remember_round_start()
        if self._loads_any():
            self.copies_start = self._copies()

    def _gate_key(self) -> tuple:
        """The gate's memory of the copies, as whether one finished since the last round started."""
        return super()._gate_key() + ((self._copied_since_round_start(),) if self._loads_any() else ())

    def _loads(self) -> bool:
        """Whether the run loads host hits back (CodeConfig.load_back): the H2D acks open a round too,
        once their copies are done (the acks loading_check counts ready)."""
        return getattr(self.config, "load_back", False)

    def _write_guard(self, rank) -> tuple:
        """What the gate reads of a rank for the write path, as footprint names."""
        loads = (ack_queue_name(rank.index),) if self._loads() else ()
        return (write_ack_queue_name(rank.index), f"r{rank.index}.ack_backup_queue") + loads

    def gate_guard(self) -> tuple:
        guard = self.__dict__.get("_write_gate_guard")
        if guard is None:
            guard = self._write_gate_guard = super().gate_guard() + tuple(
                name for r in self.ranks for name in self._write_guard(r))
        return guard

    def _gate_may_open(self, rank) -> bool:
        return (super()._gate_may_open(rank) or bool(rank.cc.ack_write_queue)
                or rank.cc.ack_backup_queue.peek_size() > 0 or (self._loads() and bool(rank.cc.ack_load_queue)))


def _ready(acks) -> int:
    """The leading acks whose H2D copy is done (what `_count_ready_acks` counts)."""
    n = 0
    for ack in acks:
        if not ack.finish_event.done:
            break
        n += 1
    return n
