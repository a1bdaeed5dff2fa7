"""IO thread I[r]: load published pages one by one, write then increment, release the rest.

Per page two steps, in this order: `write` the data into the host slots, then
`increment(page_size)` under the op lock (refused once the operation is terminated).
A failing page or a refused increment ends the batch short: the late2025 shape then
calls `mark_terminate`; the seed shape just stops. Storage batches do not change what
a thread can observe (every page is still written, then counted, in order), so the
batch size shows in labels only.
"""

from __future__ import annotations

from prefetch_check.model.actions import IO, Action
from prefetch_check.model.state import IO_COUNT, IO_READ, IO_RELEASE, RELEASED, give_back, set_op, set_rank


class IOThreadSteps:
    def io_steps(self, state, r: int) -> list:
        rank = state[r]
        if not rank.i_pc:
            if not rank.prefetch_buffer:
                return []
            return self.i_take(state, r, rank.prefetch_buffer[0])
        q, page, phase = rank.i_pc
        if phase == IO_RELEASE:
            return self.i_release(state, r, q)
        if phase == IO_READ:
            return self.i_read(state, r, q, page)
        return self.i_increment(state, r, q, page)

    def _page_or_release(self, op, q, page):
        return (q, page, IO_READ) if page < op.hash_value else (q, 0, IO_RELEASE)

    def i_take(self, state, r, q):
        rank = state[r]
        moved = rank._replace(prefetch_buffer=rank.prefetch_buffer[1:], i_pc=self._page_or_release(rank.ops[q], q, 0))
        return [(Action(r, IO, "take", q), set_rank(state, r, moved))]

    def i_read(self, state, r, q, page):
        rank = state[r]
        op = rank.ops[q]
        if page in self.config.requests[q].failing[r]:
            failed = op._replace(io_failed=True, terminated=op.terminated or self.short_batch_terminates)
            moved = set_op(rank, q, failed, i_pc=(q, 0, IO_RELEASE))
            return [(Action(r, IO, "load_failed", q), set_rank(state, r, moved))]
        moved = set_op(rank, q, op._replace(written=page + 1), i_pc=(q, page, IO_COUNT))
        return [(Action(r, IO, "write", q), set_rank(state, r, moved))]

    def i_increment(self, state, r, q, page):
        rank = state[r]
        op = rank.ops[q]
        if op.terminated:
            moved = rank._replace(i_pc=(q, 0, IO_RELEASE))
            return [(Action(r, IO, "increment_refused", q), set_rank(state, r, moved))]
        op = op._replace(completed=page + 1)
        moved = set_op(rank, q, op, i_pc=self._page_or_release(op, q, page + 1))
        return [(Action(r, IO, "increment", q), set_rank(state, r, moved))]

    def i_release(self, state, r, q):
        rank = state[r]
        op = rank.ops[q]
        slots = give_back(op.slots, op.completed, op.hash_value, RELEASED)
        extra = max(0, op.hash_value - op.completed)
        moved = set_op(rank, q, op._replace(slots=slots), i_pc=(), release_queue=rank.release_queue + extra)
        return [(Action(r, IO, "release", q), set_rank(state, r, moved))]

    @property
    def short_batch_terminates(self) -> bool:
        return self.config.shape == "late2025"
