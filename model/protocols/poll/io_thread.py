"""IO thread I[r]: load published pages one by one, write then increment, release the rest.

Per page two steps, in this order: `write` the data into the host slots, then
`increment(page_size)` under the op lock (refused once the operation is terminated);
0.5.1.x counts first and writes after (`Config.count_before_write`), page by page in
0.5.1.post3; 0.5.1-0.5.1.post2 count a whole storage batch with one `increment(page_size *
len(batch))` and then write its pages one by one (`Config.count_whole_batch`: the batch's
first page is one `increment` step for the batch, then each page a `write` step; a batch
holding a page that fails to load fails whole, before any count, which is the code's
`page_data is None` break; see `i_read`).
A failing page or a refused increment ends the batch short: the late2025 shape then
calls `mark_terminate`; the seed shape just stops. Otherwise storage batches do not change
what a thread can observe (every page is still written, then counted, in order), so the
batch size shows in descriptions only. When it stops, the thread gives back the tail
[completed_tokens, hits): once, or twice where a release did it in two places
(`Config.tail_releases`: 0.5.1.post3 and 0.5.2-0.5.5).
"""

from __future__ import annotations

from prefetch_check.model.interface import Step, formats
from prefetch_check.model.protocols.poll.state import IO_COUNT, IO_READ, IO_RELEASE, set_op

I = "I"  # noqa: E741  (the thread's letter)


class IOThreadSteps:
    def io_steps(self, r: int, rank) -> list[Step]:
        if not rank.i_pc:
            if not rank.prefetch_buffer:
                return []
            return self.i_take(rank, rank.prefetch_buffer[0])
        q, page, phase = rank.i_pc
        if phase == IO_RELEASE:
            return self.i_release(rank, q)
        if phase == IO_READ:
            return self.i_read(r, rank, q, page)
        return self.i_second(rank, q, page)

    def _page_or_release(self, op, q, page):
        return (q, page, IO_READ) if page < op.hash_value else (q, 0, IO_RELEASE)

    def i_take(self, rank, q):
        moved = rank._replace(prefetch_buffer=rank.prefetch_buffer[1:], i_pc=self._page_or_release(rank.ops[q], q, 0))
        return [Step(I, "take", q, moved)]

    @formats("I.take")
    def format_i_take(self, before, after, a):
        return f"take q{a.q} from prefetch_buffer: {after.ops[a.q].hash_value} page(s) to load"

    # ---- one page: read it, then write and count it (in the order `write_then_count` says) ----

    def write_then_count(self) -> bool:
        """The page's data is written into host memory before `increment` counts it (what makes
        a counted page safe to read); `count_before_write` turns it round."""
        return not self.config.count_before_write

    def refuses_increment(self, op) -> bool:
        """`increment` returns False once the operation is terminated."""
        return op.terminated

    @property
    def short_batch_terminates(self) -> bool:
        """After a batch that loaded fewer pages than asked: mark_terminate (late2025) or just stop (seed)."""
        return self.config.shape == "late2025"

    def batch_end(self, op, page: int) -> int:
        """The page after the storage batch that holds `page` (the last batch may be short)."""
        size = self.config.storage_batch_size
        return min((page // size + 1) * size, op.hash_value)

    def counted_to(self, op, page: int) -> int:
        """completed_tokens // page_size after the increment at `page`: the page itself, or with
        `count_whole_batch` every page of its batch (0.5.1: one increment for the batch)."""
        return self.batch_end(op, page) if self.config.count_whole_batch else page + 1

    def _fails(self, r: int, q: int, op, page: int) -> bool:
        """Whether the read at `page` fails: the page itself, or with `count_whole_batch` any page
        of its batch (the model's reading of 0.5.1's `if page_data is None: break`, before the
        count; 0.5.1 does not test the pages one by one, so a backend that answers None for one
        page only gets it counted and None written into its slot: not modelled)."""
        failing = self.config.requests[q].failing[r]
        if self.config.count_whole_batch:
            return any(p in failing for p in range(page, self.batch_end(op, page)))
        return page in failing

    def i_read(self, r, rank, q, page):
        op = rank.ops[q]
        if self._fails(r, q, op, page):
            failed = op._replace(io_failed=True, terminated=op.terminated or self.short_batch_terminates)
            return [Step(I, "load_failed", q, set_op(rank, q, failed, i_pc=(q, 0, IO_RELEASE)))]
        if self.write_then_count():
            return [self._write(rank, q, page, (q, page, IO_COUNT))]
        return [self._count(rank, q, page, (q, page, IO_COUNT))]

    def i_second(self, rank, q, page):
        """The page's second step: count it after its write, or write it after its count (with
        `count_whole_batch`, the next page of a batch counted already is written next)."""
        op = rank.ops[q]
        if self.config.count_whole_batch and page + 1 < op.completed:
            after = (q, page + 1, IO_COUNT)
        else:
            after = self._page_or_release(op, q, page + 1)
        if self.write_then_count():
            return [self._count(rank, q, page, after)]
        return [self._write(rank, q, page, after)]

    def _write(self, rank, q, page, pc) -> Step:
        return Step(I, "write", q, set_op(rank, q, rank.ops[q]._replace(written=page + 1), i_pc=pc))

    def _count(self, rank, q, page, pc) -> Step:
        op = rank.ops[q]
        if self.refuses_increment(op):
            return Step(I, "increment_refused", q, rank._replace(i_pc=(q, 0, IO_RELEASE)))
        op = op._replace(completed=self.counted_to(op, page))
        return Step(I, "increment", q, set_op(rank, q, op, i_pc=pc))

    def _batch(self, before) -> str:
        page = before.i_pc[1]
        return f"batch {page // self.config.storage_batch_size}"

    @formats("I.write")
    def format_i_write(self, before, after, a):
        page = before.i_pc[1]
        if not self.write_then_count():
            return f"{self._batch(before)}: write page {page} of q{a.q} into its host slots (counted already)"
        return f"{self._batch(before)}: read page {page} of q{a.q} from storage, write it into its host slots"

    @formats("I.load_failed")
    def format_i_load_failed(self, before, after, a):
        marked = after.ops[a.q].terminated and not before.ops[a.q].terminated
        tail = " -> short batch -> mark_terminate" if marked else " -> stop (no mark_terminate)"
        if self.config.count_whole_batch:
            first = before.i_pc[1]
            pages = f"pages {first}-{self.batch_end(before.ops[a.q], first) - 1}"
            return f"{self._batch(before)}: batch_get of {pages} of q{a.q} fails (page_data is None), nothing counted{tail}"
        return f"{self._batch(before)}: page {before.i_pc[1]} of q{a.q} fails to load{tail}"

    @formats("I.increment")
    def format_i_increment(self, before, after, a):
        ps = self.config.page_size
        old, new = before.ops[a.q], after.ops[a.q]
        ignored = " (terminated, counted anyway)" if old.terminated else ""
        n = new.completed - old.completed
        amount = f"page_size * {n}" if self.config.count_whole_batch else "page_size"
        text = f"increment({amount}) on q{a.q}: completed_tokens {old.completed * ps} -> {new.completed * ps}{ignored}"
        if self.config.count_whole_batch:
            page = before.i_pc[1]
            return (f"{self._batch(before)}: batch_get pages {page}-{new.completed - 1} of q{a.q} from storage; "
                    f"{text}, before any of their data is written")
        if not self.write_then_count():
            page = before.i_pc[1]
            return f"{self._batch(before)}: read page {page} of q{a.q} from storage; {text}, before its data is written"
        return text

    @formats("I.increment_refused")
    def format_i_increment_refused(self, before, after, a):
        return f"increment on q{a.q} refused: operation terminated -> stop loading"

    # ---- after the last page ----

    def io_release_range(self, op, q: int) -> tuple[int, int]:
        """The host slots the IO thread gives back when it stops: [completed_tokens, hits), in pages
        (host_indices was truncated to the hits at publish)."""
        return op.completed, op.hash_value

    def i_release(self, rank, q):
        first, last = self.io_release_range(rank.ops[q], q)
        op, queued = self.released(rank.ops[q], first, last, self.config.tail_releases)
        moved = set_op(rank, q, op, i_pc=(), release_queue=rank.release_queue + queued)
        return [Step(I, "release", q, moved)]

    @formats("I.release")
    def format_i_release(self, before, after, a):
        ps = self.config.page_size
        first, last = self.io_release_range(before.ops[a.q], a.q)
        text = f"{self.release_words} host_indices[completed_tokens:] = [{first * ps}, {last * ps}) of q{a.q}"
        if self.config.tail_releases == 2:
            text += " in the page transfer, and the same range again after it"
        return text
