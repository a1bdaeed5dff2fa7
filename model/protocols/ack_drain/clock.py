"""The timeout clock C[r] (model/protocols/timeout_clock.py): it may fire for the request's
current operation.

The clocks of the ranks fire independently, which is why PP rank 0's verdicts are reduced with
MAX. From issue on (0.5.19-0.5.22), or, under the admission deadline of 0.5.23, only once a
check had to wait and never once the pages have landed (host memory allocated and
completed_tokens >= len(hash_value) * page_size).
"""

from __future__ import annotations

from prefetch_check.model.interface import formats
from prefetch_check.model.protocols.ack_drain.state import LOADING, NO_OP, set_op
from prefetch_check.model.protocols.timeout_clock import TimeoutClock


class ClockSteps(TimeoutClock):
    def decide_op(self, op) -> bool:
        """The predicate's answer, with 0.5.23's admission deadline read as its code reads it at
        every check (unified_radix_cache.py:2274 `_prefetch_deadline_expired`): once the pages
        have landed the deadline has not expired, even when the clock fired before they did."""
        if self.config.deadline == "admission" and op.timed_out and _landed(op):
            op = op._replace(timed_out=False)
        return super().decide_op(op)

    def timeouts(self, rank):
        for q, req in enumerate(rank.reqs):
            i = req.ongoing
            if i == NO_OP:
                continue
            op = rank.ops[i]
            if op.timed_out or op.terminated:
                continue
            if self.config.deadline == "admission":
                if not op.wait_started or _landed(op):
                    continue
            yield q, set_op(rank, i, op._replace(timed_out=True))

    @formats("C.timeout")
    def format_timeout(self, before, after, a):
        return f"the prefetch timeout of #{before.reqs[a.q].ongoing} (q{a.q}) expires on rank {a.rank}"


def _landed(op) -> bool:
    """Host memory allocated and every published page loaded (the admission deadline's end)."""
    return op.stage == LOADING and op.completed >= op.hash_value
