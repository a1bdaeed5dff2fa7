"""The timeout clock C[r] (model/protocols/timeout_clock.py): it may fire any time after issue,
until the request is resolved; that is why the scheduler reduces `can_terminate` over ranks.
"""

from __future__ import annotations

from prefetch_check.model.interface import formats
from prefetch_check.model.protocols.poll.state import set_op
from prefetch_check.model.protocols.timeout_clock import TimeoutClock


class ClockSteps(TimeoutClock):
    def timeouts(self, rank):
        for q, op in enumerate(rank.ops):
            if op.issued and not op.ready and not op.timed_out and not op.terminated:
                yield q, set_op(rank, q, op._replace(timed_out=True))

    @formats("C.timeout")
    def format_timeout(self, before, after, a):
        return f"the prefetch timeout of q{a.q} expires on rank {a.rank}"
