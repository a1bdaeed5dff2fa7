"""IO thread I[r] (prefetch_io_aux_func / _page_transfer): load batch by batch, an ACK per batch.

For every batch of `storage_batch_size` pages of hash_value: while all went well, read the
batch page by page (a page is written into its host slots; a missing page, or the operation
found terminated, ends the reading: the batch is short); whatever happened, send a progress
ACK with the pages loaded so far (upstream keeps sending them so that every rank sends as
many as the others: the sync thread pairs them by position). After the last batch, send
completed_req. The IO thread never marks an operation terminated. A batch whose read
raises ends the thread (0.5.19-0.5.21) or counts 0 pages (0.5.22+).
"""

from __future__ import annotations

from prefetch_check.model.interface import Step, formats
from prefetch_check.model.protocols.ack_drain.state import COMPLETED_REQ, DEAD, IO_ACK, IO_DONE, IO_READ, PROGRESS, set_op

I = "I"  # noqa: E741  (the thread's letter)


class IOThreadSteps:
    """i_pc = (operation, batch, next page, pages counted, all_success, phase)."""

    def io_steps(self, r: int, rank) -> list[Step]:
        if rank.i_pc == (DEAD,):
            return []
        if not rank.i_pc:
            if not rank.prefetch_buffer:
                return []
            return self.i_take(rank, rank.prefetch_buffer[0])
        i, batch, page, counted, ok, phase = rank.i_pc
        if phase == IO_READ:
            return self.i_read(r, rank, i, batch, page, counted)
        if phase == IO_ACK:
            return self.i_ack(rank, i, batch, counted, ok)
        return self.i_done(rank, i)

    def i_take(self, rank, i):
        op = rank.ops[i]
        pc = (i, 0, 0, 0, True, IO_READ) if op.hash_value else (i, 0, 0, 0, True, IO_DONE)
        return [Step(I, "take", self.request_of[i], rank._replace(prefetch_buffer=rank.prefetch_buffer[1:], i_pc=pc))]

    @formats("I.take")
    def format_i_take(self, before, after, a):
        i = before.prefetch_buffer[0]
        return f"take #{i} from prefetch_buffer: {before.ops[i].hash_value} page(s) to load"

    def i_read(self, r, rank, i, batch, page, counted):
        q = self.request_of[i]
        op = rank.ops[i]
        short = (i, batch, 0, counted, False, IO_ACK)  # the batch ends here; its ACK is still sent
        if page == batch * self.config.storage_batch_size and batch in self.config.requests[q].batch_raises[r]:
            if self.config.exceptions == "end_thread":
                return [Step(I, "batch_raises", q, set_op(rank, i, op._replace(disturbed=True), i_pc=(DEAD,)))]
            return [Step(I, "batch_raises", q, set_op(rank, i, op._replace(disturbed=True), i_pc=short))]
        if op.terminated:
            return [Step(I, "stop", q, rank._replace(i_pc=short))]
        if page in self.config.requests[q].failing[r]:
            return [Step(I, "read_short", q, set_op(rank, i, op._replace(disturbed=True), i_pc=short))]
        nxt = page + 1
        end = min((batch + 1) * self.config.storage_batch_size, op.hash_value)
        pc = (i, batch, 0, counted + 1, True, IO_ACK) if nxt == end else (i, batch, nxt, counted + 1, True, IO_READ)
        return [Step(I, "write", q, set_op(rank, i, op._replace(written=page + 1), i_pc=pc))]

    def _batch_words(self, before) -> str:
        return f"batch {before.i_pc[1]}"

    @formats("I.write")
    def format_i_write(self, before, after, a):
        i, _, page = before.i_pc[:3]
        return f"{self._batch_words(before)}: read page {page} of #{i}, write it into its host slot"

    @formats("I.read_short")
    def format_i_read_short(self, before, after, a):
        i, _, page = before.i_pc[:3]
        return f"{self._batch_words(before)}: page {page} of #{i} is missing: the batch is short, no more reads"

    @formats("I.stop")
    def format_i_stop(self, before, after, a):
        return f"{self._batch_words(before)}: #{before.i_pc[0]} is terminated: no more reads"

    @formats("I.batch_raises")
    def format_i_batch_raises(self, before, after, a):
        if after.i_pc == (DEAD,):
            return f"{self._batch_words(before)}: the read raises: only queue.Empty is caught, the IO thread ends"
        return f"{self._batch_words(before)}: the read raises: caught, the batch counts 0 pages"

    def i_ack(self, rank, i, batch, counted, ok):
        nxt = batch + 1
        if nxt * self.config.storage_batch_size >= rank.ops[i].hash_value:
            pc = (i, 0, 0, counted, ok, IO_DONE)
        elif ok:
            pc = (i, nxt, nxt * self.config.storage_batch_size, counted, True, IO_READ)
        elif self.acks_after_short_batch():
            pc = (i, nxt, 0, counted, False, IO_ACK)  # no more reads, but an ACK per batch all the same
        else:
            pc = (i, 0, 0, counted, False, IO_DONE)
        moved = rank._replace(sync_queue=rank.sync_queue + ((i, PROGRESS, counted),), i_pc=pc)
        return [Step(I, "ack", self.request_of[i], moved)]

    def acks_after_short_batch(self) -> bool:
        """After a short batch the IO thread keeps sending a progress ACK per remaining batch
        (upstream: so that every rank sends as many as the others)."""
        return True

    @formats("I.ack")
    def format_i_ack(self, before, after, a):
        i, batch, _, counted = before.i_pc[:4]
        return f"batch {batch} over: progress ACK of #{i} ({counted} page(s) loaded so far) on prefetch_sync_queue"

    def i_done(self, rank, i):
        moved = rank._replace(sync_queue=rank.sync_queue + ((i, COMPLETED_REQ, 0),), i_pc=())
        return [Step(I, "done", self.request_of[i], moved)]

    @formats("I.done")
    def format_i_done(self, before, after, a):
        return f"completed_req ACK of #{before.i_pc[0]} on prefetch_sync_queue"
