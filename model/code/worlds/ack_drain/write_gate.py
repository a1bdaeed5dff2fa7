"""The round gate of a run with the write path (CodeConfig.backup): besides the world's own reasons,
a D2H write ack, a storage write ack or (with a load-back) a ready H2D ack on every rank opens a
round (their MIN > 0: writing_check, loading_check and the backup drain pop what the ranks agree
on, `_sync_hicache_ready_counts`)."""

from __future__ import annotations

from prefetch_check.model.code.worlds.ack_drain.buffer.device_pool import ack_queue_name, write_ack_queue_name


class WriteAcksGate:
    """A run mix-in over a world's gate; `_write_round_due` is what opens it beyond the world's."""

    def round_enabled(self, rank) -> bool:
        if super().round_enabled(rank):
            return True
        most = max(r.rounds for r in self.ranks)
        if any(r.rounds < most or not self._at_gate(r) for r in self.ranks):
            return False
        return self._write_round_due()

    def _write_round_due(self) -> bool:
        return (min(len(r.cc.ack_write_queue) for r in self.ranks) > 0
                or min(r.cc.ack_backup_queue.peek_size() for r in self.ranks) > 0
                or (self._loads() and min(_ready(r.cc.ack_load_queue) for r in self.ranks) > 0))

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
